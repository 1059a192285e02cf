"""Rare values released: the cells of a release equal to a value that fewer than ``min_count`` people hold.

The avatar method never copies such a value into the release (docs/guide/small-groups.md): it is
generalized (:mod:`relanon.engine.generalize`) or mixed. This measure checks it on the release itself,
per individual table and column, the way a reviewer would: for each released cell, how many original
records hold the same value. Its target is 0 for every column of a table released by the avatar method
(a table released with ``method: keep`` or with a de-associative method publishes its records by design
and is not measured).

A column of many distinct values released as mixed numbers (an income in cents, a date of birth) can
land on a value one person holds by chance, the way any number near the data would: such a cell is
counted too, and the breakdown says which columns are mixed, so that a reviewer reads it against the
chance of a coincidence (:func:`chance_share`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from relanon.common.binning import few_values
from relanon.metrics.base import LOWER, Metric

NAME = "rare_values_released"
DESCRIPTION = ("Share (%) of released cells, in the worst column, equal to a value that fewer than min_count original "
               "people hold (target: none). The breakdown gives each column's share, and for columns of mixed numbers "
               "the share a coincidence would give.")


def rare_values_released(original: pd.DataFrame, released: pd.DataFrame, types: Mapping[str, str],
                         min_counts: Mapping[str, int]) -> Metric:
    """The :data:`NAME` metric of one table: worst column's share (%) of released cells equal to a value fewer
    than its ``min_count`` originals hold.

    Examples
    --------
    >>> people = pd.DataFrame({"town": ["A"] * 5 + ["B"], "age": [30, 31, 32, 33, 34, 35]})
    >>> released = pd.DataFrame({"town": ["A"] * 5 + ["B"], "age": [32] * 6})
    >>> metric = rare_values_released(people, released, {"town": "categorical", "age": "integer"}, {"town": 5, "age": 5})
    >>> round(metric.value, 1), metric.passed, metric.breakdown["town"]["share"], metric.breakdown["age"]["mixed"]
    (16.7, False, 16.67, True)
    """
    breakdown = {}
    for column, kind in types.items():
        threshold = int(min_counts.get(column, 1))
        if threshold <= 1 or column not in original.columns or column not in released.columns:
            continue
        share, mixed = rare_share(original[column], released[column], threshold, kind)
        entry = {"share": round(100.0 * share, 2), "min_count": threshold, "mixed": mixed}
        if mixed:
            entry["chance"] = round(100.0 * chance_share(original[column], threshold), 2)
        breakdown[column] = entry
    copied = [e["share"] for e in breakdown.values() if not e["mixed"]]
    # the target judges the columns whose values are copied from a record; mixed numbers are shown
    return Metric(NAME, float(max(copied, default=0.0)), 0.0 if copied else None, LOWER, DESCRIPTION,
                  breakdown=breakdown)


def rare_share(original: pd.Series, released: pd.Series, threshold: int, kind: str) -> tuple[float, bool]:
    """The share of ``released``'s present cells equal to a value fewer than ``threshold`` cells of ``original``
    hold, and whether the column is one of mixed numbers (many distinct values, not copied from a record)."""
    present = _plain(released.dropna())
    observed = _plain(original.dropna())
    if present.empty:
        return 0.0, False
    held = present.map(observed.value_counts()).fillna(0).to_numpy()
    rare = (held > 0) & (held < threshold)
    mixed = kind in ("continuous", "integer", "datetime") and not few_values(observed.nunique(), len(observed))
    return float(rare.mean()), mixed


def chance_share(original: pd.Series, threshold: int) -> float:
    """The share of the distinct values on the original's grid that fewer than ``threshold`` people hold, among
    the values between the original's smallest and largest on its step: what a number landing anywhere
    in the range on that grid would meet by chance (a date of birth among 30,000 days)."""
    present = _plain(original.dropna())
    if present.empty:
        return 0.0
    counts = present.value_counts()
    rare = int((counts < threshold).sum())
    values = np.sort(_numbers(pd.Series(counts.index)))
    if len(values) < 2:
        return float(rare > 0)
    step = float(np.min(np.diff(values)))
    slots = (values[-1] - values[0]) / step + 1 if step > 0 else len(values)
    return float(min(1.0, rare / slots))


def _plain(series: pd.Series) -> pd.Series:
    """Values compared across the original's and the release's dtypes: categories as their labels, whole and
    decimal numbers as floats, dates as instants."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.astype(object)
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        return series.astype("float64")
    return series


def _numbers(values: pd.Series) -> np.ndarray:
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return values.astype("int64").to_numpy(dtype=np.float64)
    return pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=np.float64)
