"""What a multi-table run returns: the release of each table, the report of each link, and the
whole result (:func:`relanon.anonymize`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from relanon.schema.model import Schema


@dataclass(frozen=True)
class LinkReport:
    """How one foreign key was re-created in the release."""

    parent: str
    child: str
    column: str
    method: str
    n_children: int
    n_linked: int
    seconds: float

    @property
    def sensitive(self) -> bool:
        return self.method == "original_order"


@dataclass
class TableRelease:
    """One released table, with what only the metrics may see (kept in memory, never written).

    ``original_position[r]`` is the position, in the checked original table, of the record that
    released row ``r`` comes from (its avatar's original for the avatar method; -1 for none).
    """

    name: str
    method: str
    frame: pd.DataFrame
    original_position: np.ndarray
    enriched_original: pd.DataFrame | None = None
    enriched_avatars: pd.DataFrame | None = None
    enriched_types: dict | None = None
    enriched_weights: dict | None = None
    k: int | None = None
    ncp: int | None = None
    companion: pd.DataFrame | None = None  # the sensitive table of an anatomized table
    internal_names: dict = field(default_factory=dict)  # of the enriched tables (see enrichment_names)
    column_rules: tuple = ()  # rules between columns the release obeys (relanon.engine.column_rules)
    generalized: tuple = ()  # rare values generalized, per column (relanon.engine.generalize)


@dataclass
class AnonymizationResult:
    """The released database, and, in memory only, what the evaluation needs.

    Attributes
    ----------
    tables : dict of DataFrame
        The anonymized database, keyed by table name: what is written and released.
    schema : Schema
        The schema of the released database.
    links : list of LinkReport
        How each foreign key was re-created.
    sensitive_choices : list of str
        Choices that weaken privacy (``original_order`` links), to be stated in every output.
    original : dict of DataFrame
        The checked original database (private).
    releases : dict of TableRelease
        Per table, the avatar <-> original pairing and the enriched tables (private).
    """

    tables: dict[str, pd.DataFrame]
    schema: Schema
    links: list[LinkReport]
    sensitive_choices: list[str]
    original: dict[str, pd.DataFrame] = field(repr=False)
    releases: dict[str, TableRelease] = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{name}: {len(frame)} rows" for name, frame in self.tables.items())
        return f"AnonymizationResult({sizes})"
