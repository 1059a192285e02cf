"""What the Dask run knows of a table once it is released (kept on the client: sizes, never rows)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Released:
    """A released table: how it was made, and how its rows are cut in batches (release order)."""

    name: str
    method: str
    rows: int
    sizes: list[int]  # rows of each batch (one part of the release each)
    types: dict = field(default_factory=dict)  # of the enriched table (avatar method)
    weights: dict = field(default_factory=dict)
    internal: dict = field(default_factory=dict)
    k: int | None = None
    ncp: int | None = None
    statistics: dict | None = None  # of the enriched original table, when fitted from its batches
    columns: tuple = ()  # the released table's columns, in order
    fk_dtypes: dict = field(default_factory=dict)
    companion: object = None  # the sensitive table of an anatomized table
    column_rules: tuple = ()  # the rules between columns every batch obeys (relanon.engine.column_rules)
    retired: bool = False  # its original rows and its avatars' links to them are gone from the work folder
    generalized: tuple = ()  # rare values generalized, per column, over the batches (relanon.engine.generalize)

    @property
    def n_batches(self) -> int:
        return len(self.sizes)

    @property
    def offsets(self) -> np.ndarray:
        """Release position of the first row of each batch."""
        return np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)

    @property
    def single(self) -> bool:
        return self.n_batches == 1

    def batch_of(self, positions: np.ndarray) -> np.ndarray:
        """The batch holding each release position."""
        return np.searchsorted(self.offsets, positions, side="right") - 1
