"""What failed in an evaluation: one list, read by the terminal verdict and by the report alike.

A measure fails when its value is on the wrong side of its target and beyond its noise floor plus
margin (:attr:`relanon.metrics.base.Metric.passed`); a measure taken column by column names each failing
column; a link fails on its children-per-parent similarity
(:func:`relanon.metrics.scenarios.similarity_passed`), its referential integrity, or a declared rule across
it that the release breaks on more rows than the original (one failure per rule).
Every decision is taken here, on the values as computed: presentation rounds afterwards, never before.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pandas as pd

from relanon.metrics.base import HIGHER, LOWER, REFERENTIAL_INTEGRITY_TARGET
from relanon.metrics.noise_floor import quadrature_margin
from relanon.metrics.scenarios import TARGETS, similarity_passed

__all__ = ["Failure", "failures"]


class Failure(NamedTuple):
    """One measure that misses its target.

    Attributes
    ----------
    kind : {"privacy", "signal", "link"}
    view : str
        The scenario (``TO_TOP_ENRICHED(doctors, visits)``) or, for a link, ``child.column -> parent``.
    table, reference : str
        The tables of the scenario (the same table for ``STANDALONE``); child and parent of a link.
    metric : str
        The metric's name (``distance_to_closest``, ``children_per_parent``...).
    value, target : float
        The value as computed and the target it misses.
    direction : {"higher", "lower"}
        Which side of the target is good.
    bound : float or None
        The value that would still pass thanks to the noise floor (the floor plus its margin), when
        it is more lenient than the target; None when the target alone decides.
    floor : float or None
        The noise floor: what two random halves of the original give each other.
    column : str or None
        The column, for a measure taken column by column (:mod:`relanon.metrics.columns`).
    """

    kind: str
    view: str
    table: str
    reference: str
    metric: str
    value: float
    target: float
    direction: str
    bound: float | None = None
    floor: float | None = None
    column: str | None = None


def failures(evaluation) -> list[Failure]:
    """Every measure of ``evaluation`` that misses its target: metrics of every scenario, then links.

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.metrics.scenarios import evaluate
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "individual": True, "columns": {"age": "integer", "sex": "categorical"}}}})
    >>> people = {"people": pd.DataFrame({"id": range(30), "age": range(30), "sex": ["F", "M", "M"] * 10})}
    >>> [(f.view, f.metric, f.value) for f in failures(evaluate(schema, people, people, progress=False))]
    [('STANDALONE(people)', 'row_direct_match_protection', 0.0)]
    """
    tables = _view_tables(evaluation.details)
    found = []
    for kind, view, metric in evaluation.metrics:
        if metric.passed is not False:
            continue
        table, reference = tables.get((kind, view), (view, view))
        failing = metric.breakdown.get("failing")
        if failing:  # a measure taken column by column: every failing column named
            found += [Failure(kind, view, table, reference, metric.name, entry["value"], float(metric.target),
                              metric.direction, entry["bound"] if entry["bound"] > metric.target else None,
                              None if math.isnan(entry["floor"]) else entry["floor"], column)
                      for column, entry in failing.items()]
            continue
        found.append(Failure(kind, view, table, reference, metric.name, float(metric.value), float(metric.target),
                             metric.direction, _metric_bound(metric), metric.floor))
    return found + _link_failures(evaluation.relations)


def _metric_bound(metric) -> float | None:
    """The floor plus its margin, where it lets more values pass than the target does."""
    if metric.floor is None or metric.margin is None or math.isnan(metric.floor) or math.isnan(metric.margin):
        return None
    if metric.direction == HIGHER:
        bound = metric.floor - metric.margin
        return bound if bound < metric.target else None
    bound = metric.floor + metric.margin
    return bound if bound > metric.target else None


def _link_failures(relations: pd.DataFrame) -> list[Failure]:
    found = []
    if relations is None or relations.empty:
        return found
    target = TARGETS["children_per_parent"]
    for row in relations.itertuples():
        view = f"{row.child}.{row.column} -> {row.parent}"
        similarity = float(row.children_per_parent)
        floor = float(getattr(row, "children_per_parent_floor", float("nan")))
        if not similarity_passed(similarity, floor):
            found.append(Failure("link", view, row.child, row.parent, "children_per_parent", similarity, target, HIGHER,
                                 _similarity_bound(floor, target), None if math.isnan(floor) else floor))
        for rule, (before, released) in (getattr(row, "rules", None) or {}).items():
            if released > before:  # the release breaks a declared rule more often than the original
                found.append(Failure("link", f"{view}: rule {rule}", row.child, row.parent, "rows_breaking_rule",
                                     float(released), float(before), LOWER))
        if float(row.referential_integrity) < REFERENTIAL_INTEGRITY_TARGET:
            found.append(Failure("link", view, row.child, row.parent, "referential_integrity",
                                 float(row.referential_integrity), REFERENTIAL_INTEGRITY_TARGET, HIGHER))
    return found


def _similarity_bound(floor: float, target: float) -> float | None:
    """The lowest similarity that passes within the floor (the rule of :func:`similarity_passed`)."""
    if math.isnan(floor):
        return None
    distance = 1.0 - floor
    bound = 1.0 - (distance + quadrature_margin(distance, 1.0 - target))
    return bound if bound < target else None


def _view_tables(details: pd.DataFrame) -> dict:
    """(kind, view name) -> (table, reference), read from the details' index."""
    if details is None or details.empty:
        return {}
    names = list(details.index.names)
    out = {}
    for index in details.index:
        entry = dict(zip(names, index, strict=True))
        out[(entry["kind"], entry["view"])] = (entry["table"], entry["reference"])
    return out

