"""Every column judged on its own: its distance, its spread and its tails, each against its own noise floor.

A table's mean Hellinger distance hides a broken column (one date column at 0.2 among seven at 0.01
averages 0.035). Three measures look at the columns one by one, each carrying the worst column as its
value and every failing column in its breakdown (``failing``), so that the verdict names them all:

- ``hellinger_column``: each column's Hellinger distance against the target of the table's mean,
  within that column's own noise floor plus the quadrature margin (as for the table);
- ``std_ratio_gap``: ``|released std / original std - 1|`` of each number or date column drawn from many
  values (those not binned by value), target :data:`STD_RATIO_TARGET` (a ratio within [0.85, 1.15]);
- ``tail_quantile_shift``: how far the 1 % and 99 % quantiles moved, in original standard deviations,
  target :data:`TAIL_SHIFT_TARGET`; both within their floor (two halves of the original) plus margin.

A column whose noise floor alone exceeds :data:`TOO_SMALL_FLOOR` cannot be judged: two random halves
of the original already differ more than any target allows (20 hospitals, 59 customers of 22
countries). It is listed under ``too_small`` rather than passed; a table all of whose columns are
too small gets no target (``passed`` None) and its reason.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from relanon.common.binning import fit_bins
from relanon.engine.columns import NUMERIC_KINDS, column_types, numeric_values
from relanon.metrics.base import LOWER, TARGETS, Metric
from relanon.metrics.noise_floor import NOISE_FLOOR_SEED, noise_floor, quadrature_margin

__all__ = ["STD_RATIO_TARGET", "TAIL_SHIFT_TARGET", "TOO_SMALL_FLOOR", "column_metrics", "spread_figures"]

STD_RATIO_TARGET = 0.15
"""Largest ``|released std / original std - 1|`` that passes on a large table."""

TAIL_SHIFT_TARGET = 0.1
"""Largest move of the 1 % or 99 % quantile, in original standard deviations, that passes on a large table."""

TOO_SMALL_FLOOR = 0.25
"""A Hellinger noise floor above this (2.5 times the target) says the rows are too few to judge the column."""

QUANTILES = (0.01, 0.99)


def spread_figures(original: pd.Series | np.ndarray, released: pd.Series | np.ndarray) -> tuple[float, float]:
    """``(std ratio, tail shift)`` of one numeric column: released over original standard deviation, and the
    largest move of its 1 % and 99 % quantiles in original standard deviations (missing values left out).

    Examples
    --------
    >>> x = np.arange(100.0)
    >>> spread_figures(x, x), [round(v, 3) for v in spread_figures(x, x / 2 + 25)]
    ((1.0, 0.0), [0.5, 0.849])
    """
    o = np.asarray(original, dtype=np.float64)
    r = np.asarray(released, dtype=np.float64)
    o, r = o[~np.isnan(o)], r[~np.isnan(r)]
    if len(o) < 2 or len(r) < 2:
        return math.nan, math.nan
    scale = float(o.std())
    if scale == 0:
        return math.nan, math.nan
    shift = np.abs(np.quantile(r, QUANTILES) - np.quantile(o, QUANTILES)).max() / scale
    return float(r.std() / scale), float(shift)


def column_metrics(original: pd.DataFrame, released: pd.DataFrame, columns, hellinger_mean: Metric, *,
                   random_state=NOISE_FLOOR_SEED) -> list[Metric]:
    """``hellinger_column``, ``std_ratio_gap`` and ``tail_quantile_shift`` of one table's release.

    ``hellinger_mean`` is the table's :func:`relanon.metrics.signal.hellinger_metric`, whose breakdown holds
    the per-column distances and floors; ``columns`` the types of the columns. Empty when nothing applies.

    Examples
    --------
    >>> from relanon.metrics.signal import hellinger_metric
    >>> rng = np.random.default_rng(0)
    >>> o = pd.DataFrame({"x": rng.normal(size=2000), "g": rng.choice(["a", "b"], 2000)})
    >>> r = o.assign(x=o["x"] * 0.6)
    >>> h = hellinger_metric(o, r, {"x": "continuous", "g": "categorical"})
    >>> [(m.name, m.breakdown["column"], m.passed) for m in column_metrics(o, r, {"x": "continuous", "g": "categorical"}, h)]
    [('hellinger_column', 'x', False), ('std_ratio_gap', 'x', False), ('tail_quantile_shift', 'x', False)]
    """
    per_column = hellinger_mean.breakdown.get("per_column", {})
    floors = hellinger_mean.breakdown.get("floor_per_column", {})
    metrics = []
    if per_column and floors:
        metrics.append(_judged("hellinger_column", per_column, floors, TARGETS["hellinger_mean"],
                               "Hellinger distance of the column furthest beyond its own noise floor (every "
                               "column is judged against the target of the table's mean, within its floor)."))
    o_values = _spread_values(original, columns)
    numbers = list(o_values)
    if numbers and min(len(original), len(released)) >= 4:
        types, _ = column_types(columns)
        r_values = {c: numeric_values(released[c], types[c]) for c in numbers}
        figures = {c: spread_figures(o_values[c], r_values[c]) for c in numbers}
        halves = noise_floor(lambda a, b: {(c, i): v for c in numbers
                                           for i, v in enumerate(spread_figures(o_values[c][a], o_values[c][b]))},
                             len(original), random_state=random_state).value
        halves = halves if isinstance(halves, dict) else {}
        gaps = {c: abs(f[0] - 1.0) for c, f in figures.items() if not math.isnan(f[0])}
        gap_floors = {c: abs(halves.get((c, 0), math.nan) - 1.0) for c in gaps}
        shifts = {c: f[1] for c, f in figures.items() if not math.isnan(f[1])}
        shift_floors = {c: halves.get((c, 1), math.nan) for c in shifts}
        if gaps:
            metrics.append(_judged(
                "std_ratio_gap", gaps, gap_floors, STD_RATIO_TARGET,
                "|released / original standard deviation - 1| of the number or date column whose spread changed "
                "most beyond its noise floor (0.15: a ratio within [0.85, 1.15]); below 1 the release is narrower.",
                extra={"std_ratio": {c: figures[c][0] for c in gaps}}, judge_small=False))
        if shifts:
            metrics.append(_judged(
                "tail_quantile_shift", shifts, shift_floors, TAIL_SHIFT_TARGET,
                "Largest move of the 1 % or 99 % quantile of a number or date column, in original standard "
                "deviations, for the column furthest beyond its noise floor: tails emptied or stretched.",
                judge_small=False))
    return metrics


def _spread_values(original: pd.DataFrame, columns) -> dict[str, np.ndarray]:
    """The number and date columns drawn from many values, as floats (dates in seconds): those the shared bins
    (:func:`relanon.common.binning.fit_bins`) do not take value by value, whose shares judge them instead."""
    types, _ = column_types(columns)
    out = {}
    for column, kind in types.items():
        if kind in NUMERIC_KINDS and column in original.columns:
            values = numeric_values(original[column], kind)
            if not fit_bins(values, numeric=True).by_value:
                out[column] = values
    return out


def _judged(name: str, values: dict, floors: dict, target: float, description: str, *, extra=None,
            judge_small: bool = True) -> Metric:
    """One metric for many columns: the worst column's value and floor, every column judged in the breakdown."""
    entries, too_small = {}, []
    for column, value in values.items():
        floor = floors.get(column, math.nan)
        if judge_small and not math.isnan(floor) and floor > TOO_SMALL_FLOOR:
            too_small.append(column)
            continue
        metric = Metric(name, value, target, LOWER, description, floor=None if math.isnan(floor) else floor,
                        margin=None if math.isnan(floor) else quadrature_margin(floor, target))
        bound = target if metric.margin is None else max(target, metric.floor + metric.margin)
        entries[column] = {"value": float(value), "floor": floor, "bound": float(bound), "passed": bool(metric.passed)}
    breakdown = {"per_column": entries, "too_small": too_small, **(extra or {})}
    breakdown["failing"] = {c: e for c, e in entries.items() if not e["passed"]}
    if not entries:
        breakdown["column"] = too_small[0] if too_small else None
        breakdown["reason"] = (f"too few rows to judge: two halves of the original differ by more than "
                               f"{TOO_SMALL_FLOOR} in every column")
        return Metric(name, math.nan, None, LOWER, description, breakdown)
    worst = max(entries, key=lambda c: (entries[c]["value"] - entries[c]["bound"], c))
    breakdown["column"] = worst
    floor = entries[worst]["floor"]
    has_floor = not math.isnan(floor)
    return Metric(name, entries[worst]["value"], target, LOWER, description, breakdown,
                  floor=floor if has_floor else None, margin=quadrature_margin(floor, target) if has_floor else None)
