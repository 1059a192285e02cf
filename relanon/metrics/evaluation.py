"""What an evaluation returns: the measures a user reads, apart from the data they were measured on."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from relanon.common.plain import matrix_dict, plain
from relanon.schema.model import Schema

PRIVACY_HEADLINES = ("hidden_rate", "distance_to_closest")  # the second when the pairing is unknown


@dataclass(frozen=True, eq=False)
class EvaluatedData:
    """The two databases an evaluation measured, held in memory for the report's pictures only.

    Attributes
    ----------
    original, anonymized : dict of str to DataFrame
    """

    original: Mapping[str, pd.DataFrame]
    anonymized: Mapping[str, pd.DataFrame]


@dataclass
class Evaluation:
    """Every metric of a release, per table and scenario, and the summary matrices.

    Terminal text of the matrices: :func:`relanon.present.verdict.privacy_matrix_text` and
    :func:`~relanon.present.verdict.signal_matrix_text`.

    Attributes
    ----------
    details : DataFrame
        One row per (kind, table, scenario, reference) with one column per metric.
    metrics : list of (kind, View name, Metric)
        The metric objects behind ``details`` (targets, directions, descriptions, breakdowns).
    relations : DataFrame
        One row per link: children-per-parent distribution and referential integrity.
    privacy_matrix, privacy_passed : DataFrame
        Rows: individual tables; columns: all tables. The cell holds the hidden rate (%) of the
        scenario pairing the two tables (diagonal: STANDALONE); ``privacy_passed`` tells whether
        every privacy metric of that scenario meets its target.
    signal_matrix, signal_passed : DataFrame
        Rows and columns: tables. Diagonal: Hellinger mean of the table; (parent, child):
        Hellinger mean of TO_TOP_ENRICHED(parent, child); (child, parent): link fidelity of
        TO_BOTTOM_PROPAGATED(child, parent) (higher is better; passes above its target or within
        its noise floor).
    targets : dict
        Metric name -> target.
    notes : list of str
        What could not be computed and why.
    links : list
        How each link was matched (when the run's result was given).
    sensitive_choices : list of str
        Choices of the run that weaken privacy.
    descriptions : dict
        Metric name -> one sentence a release reviewer understands.
    schema : Schema
        The schema evaluated.
    data : EvaluatedData or None
        The two databases, kept in memory for the report's pictures only: apart from what a user reads.
        :meth:`without_data` drops them; ``original`` and ``anonymized`` read them.
    """

    details: pd.DataFrame
    metrics: list
    relations: pd.DataFrame
    privacy_matrix: pd.DataFrame
    privacy_passed: pd.DataFrame
    signal_matrix: pd.DataFrame
    signal_passed: pd.DataFrame
    targets: dict
    notes: list[str] = field(default_factory=list)
    links: list = field(default_factory=list)
    sensitive_choices: list[str] = field(default_factory=list)
    descriptions: dict = field(default_factory=dict)
    schema: Schema | None = field(default=None, repr=False)
    data: EvaluatedData | None = field(default=None, repr=False, compare=False)

    @property
    def original(self) -> dict | None:
        """The original database evaluated (``None`` once :meth:`without_data`)."""
        return None if self.data is None else self.data.original

    @property
    def anonymized(self) -> dict | None:
        """The anonymized database evaluated (``None`` once :meth:`without_data`)."""
        return None if self.data is None else self.data.anonymized

    def without_data(self) -> Evaluation:
        """The same measures without the two databases (the report then draws no picture)."""
        return dataclasses.replace(self, data=None)

    @property
    def passed(self) -> bool:
        """True when every metric with a target meets it."""
        return all(m.passed is not False for _, _, m in self.metrics) and bool(
            self.relations.get("passed", pd.Series(dtype=bool)).all()
        )

    @property
    def privacy_headline(self) -> str:
        """The metric in the privacy matrix: the hidden rate, or the DCR when the pairing is unknown."""
        return self.privacy_matrix.attrs.get("headline", PRIVACY_HEADLINES[0])

    def to_dict(self) -> dict:
        """Plain, JSON-ready data."""
        return plain({
            "targets": self.targets,
            "notes": self.notes,
            "sensitive_choices": self.sensitive_choices,
            "links": [_link_dict(link) for link in self.links],
            "privacy_matrix": matrix_dict(self.privacy_matrix),
            "privacy_passed": matrix_dict(self.privacy_passed),
            "signal_matrix": matrix_dict(self.signal_matrix),
            "signal_passed": matrix_dict(self.signal_passed),
            "metrics": [
                {"kind": kind, "view": view, **metric.to_dict()} for kind, view, metric in self.metrics
            ],
            "relations": self.relations.to_dict("records"),
        })

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str) + "\n"


def _link_dict(link) -> dict:
    return {name: getattr(link, name) for name in ("parent", "child", "column", "method", "n_children", "n_linked")}
