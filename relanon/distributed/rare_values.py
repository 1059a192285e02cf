"""The whole table's facts for the rare-value rule of a table avatarized in several batches.

A value that fewer than ``min_count`` records of a *table* hold never reaches its release verbatim
(:mod:`relanon.engine.private_values`). A batch is a sample of the table: a town held by one person
of the table is also rare in her batch, but a town held by 30 people may be held once in a batch,
and the ``min_count``-th largest income of a batch is not the table's. So each batch is avatarized
with the table's counts and order statistics (``value_counts`` and ``extremes`` of
:func:`relanon.engine.avatar.avatarize`), gathered here:

- the number of records holding each value of each categorical-like column with a threshold above 1:
  read from the table's merged summaries for categorical and boolean columns (they count every
  distinct value, without a cap), counted over the batch files for numeric columns of few values;
- the ``min_count``-th smallest and largest present values of each other numeric column with a
  threshold above 1: each batch sends its ``min_count`` smallest and largest, which hold the table's.

Per column, the counts take as many entries as the column has distinct values, the extremes
``2 * (min_count + 1)`` values per batch. Merges run on the client in batch order: the facts do not depend
on the number of workers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.distributed.work import read_parts
from relanon.engine.columns import NUMERIC_KINDS
from relanon.engine.private_values import extreme_bounds
from relanon.engine.space_statistics import CategoricalSummary


class TableFacts(NamedTuple):
    """What :func:`relanon.engine.avatar.avatarize` needs to count rare values in the whole table."""

    value_counts: dict  # column -> Series: records holding each value (missing under a NaN key)
    extremes: dict  # column -> (low, high): the min_count-th smallest and largest present values


def table_facts(client, paths: list[str], types: dict, thresholds: dict, summaries: dict, statistics: dict,
                drawn=()) -> TableFacts:
    """The value counts and extremes of the columns of ``types`` whose threshold is above 1, over the batch
    files ``paths``; ``summaries`` and ``statistics`` are the table's merged summaries and frozen
    statistics (:mod:`relanon.distributed.space`); ``drawn`` numbers (taken from one neighbour) are not bounded."""
    ruled = [c for c in types if thresholds.get(c, 1) > 1]
    # as avatarize decodes them: categorical-like columns are counted, other numbers bounded, drawn ones neither
    categorical = [c for c in ruled if types[c] not in NUMERIC_KINDS or statistics[c].categorical_like]
    counted = [c for c in categorical if not isinstance(summaries[c], CategoricalSummary)]
    bounded = {c: thresholds[c] for c in ruled if c not in categorical and c not in set(drawn)}
    value_counts = {c: summary_counts(summaries[c]) for c in categorical if c not in counted}
    if not counted and not bounded:
        return TableFacts(value_counts, {})
    parts = client.gather([client.submit(_part_facts, p, counted, bounded, pure=False) for p in paths])
    for column in counted:
        value_counts[column] = merge_counts([part[0][column] for part in parts])
    extremes = {}
    for column, min_count in bounded.items():
        found = merge_extremes([part[1][column] for part in parts], min_count)
        if found is not None:
            extremes[column] = found
    return TableFacts(value_counts, extremes)


def summary_counts(summary: CategoricalSummary) -> pd.Series:
    """A categorical column's value counts from its merged summary (exact: no cap on its values)."""
    counts = pd.Series(summary.counts, index=pd.Index(summary.values), dtype=np.int64)
    if summary.missing:
        counts = pd.concat([counts, pd.Series([summary.missing], index=[np.nan], dtype=np.int64)])
    return counts


def merge_counts(parts: list[pd.Series]) -> pd.Series:
    """The value counts of several parts, as if counted at once (missing values counted as one value).

    Examples
    --------
    >>> merge_counts([pd.Series({"A": 1, "B": 2}), pd.Series({"B": 3, "C": 1})]).to_dict()
    {'A': 1, 'B': 5, 'C': 1}
    """
    return pd.concat(parts).groupby(level=0, dropna=False, sort=False).sum().astype(np.int64)


def part_extremes(series: pd.Series, min_count: int) -> tuple[int, pd.Series, pd.Series]:
    """A part's present values: how many, and its ``min_count + 1`` smallest and largest (sorted): the bounds lie
    half-way between the ``min_count``-th and the next (:func:`~relanon.engine.private_values.extreme_bounds`)."""
    present = series.dropna().sort_values(kind="stable")
    return len(present), present.iloc[:min_count + 1], present.iloc[max(len(present) - min_count - 1, 0):]


def merge_extremes(parts: list[tuple[int, pd.Series, pd.Series]], min_count: int) -> tuple | None:
    """The ``min_count``-th smallest and largest present values of the table whose parts sent
    :func:`part_extremes`; None when there is no bound (as :func:`~relanon.engine.private_values.bound_extremes`).

    Examples
    --------
    >>> values = pd.Series(range(1, 101))
    >>> [float(v) for v in merge_extremes([part_extremes(values[:60], 5), part_extremes(values[60:], 5)], 5)]
    [5.5, 95.5]
    """
    n = sum(part[0] for part in parts)
    smallest = pd.concat([part[1] for part in parts]).sort_values(kind="stable")
    largest = pd.concat([part[2] for part in parts]).sort_values(kind="stable")
    return extreme_bounds(smallest, largest, n, min_count)


# --------------------------------------------------------------------------- on the workers


def _part_facts(path, counted: list[str], bounded: dict):
    frame = read_parts([path], [*counted, *bounded])
    counts = {c: frame[c].value_counts(dropna=False, sort=False).astype(np.int64) for c in counted}
    extremes = {c: part_extremes(frame[c], t) for c, t in bounded.items()}
    return counts, extremes
