"""An avatar's numbers: the weighted mean of its neighbours' values, moved towards the drawn neighbour's,
given back the spread the mix takes (or shifted like its small group where the rule of small groups applies),
and put back on the column's support and type."""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.engine.columns import NUMERIC_KINDS, numeric_values, restore_numeric
from relanon.engine.mixing import mixed_numbers, restored_spread, spread_factors
from relanon.engine.small_groups import Shifts, ordered_columns, shifted


def stretched_numbers(table, types, space, drawn, spread, indices, weights, chosen, name: str) -> dict:
    """Column -> mixed numbers given back their spread (:func:`relanon.engine.mixing.restored_spread`), for the
    mixed numeric columns that are not shifted like their small group (``spread``, already as wide as it). A row
    where the stretch would reverse an order that every original record obeys between two of them (a birth date
    before a visit date, broadcast from the parent) keeps its plain mix in those columns, which keeps the order."""
    columns = [c for c in types if types[c] in NUMERIC_KINDS and c not in drawn and c not in spread
               and not space.statistics_[c].categorical_like]
    values = {c: numeric_values(table[c], space.statistics_[c].kind, table=name) for c in columns}
    plain = {c: mixed_numbers(values[c], indices, weights, values[c][chosen]) for c in columns}
    stretch = spread_factors(weights) if columns and indices.shape[1] > 1 else None  # the same for every column
    out = {c: restored_spread(plain[c], values[c], indices, weights, space.statistics_[c].low,
                              space.statistics_[c].high, stretch) for c in columns}
    ordered = sorted(ordered_columns(values)) if len(columns) > 1 else []
    for a in ordered:
        for b in ordered:
            with np.errstate(invalid="ignore"):
                if a == b or (values[a] > values[b]).any():
                    continue
                reversed_ = out[a] > out[b]
            if reversed_.any():
                for column in (a, b):
                    out[column] = np.where(reversed_, plain[column], out[column])
    return out


def numeric_avatar(series, indices, weights, chosen, stats, table, shifts: Shifts | None = None,
                   stretched: np.ndarray | None = None) -> pd.Series:
    """Weighted mean of the neighbours' present values moved half-way to the drawn neighbour's value,
    on the column's support; missing where the drawn neighbour's value is; with ``shifts``, shifted like
    the avatar's small group (:mod:`relanon.engine.small_groups`).

    The weighted mean alone shrinks the column's spread (standard deviations 0.56 to 0.70 of the
    original's on the demo's hospital beds, doctors' ages and visit dates): a mean of ``k`` values
    lies towards their middle. ``(1 - SPREAD) * mean + SPREAD * x_J``, with ``J`` the neighbour whose
    categories the avatar carries, is still a mix of the neighbours with weights summing to 1 (so the
    value stays within theirs), the same mix for every column of the row (so a linear rule that every
    original row obeys, ``start <= end``, still holds), and on average over the draw of ``J`` the same
    as the weighted mean; but it keeps more of the spread (0.78 for the demo's doctors' ages and visit
    dates at ``SPREAD = 0.5``) and ties the numbers to the categories they come with. ``stretched``, when
    given, replaces that mix: the same given back its spread (:func:`stretched_numbers`).
    """
    values = numeric_values(series, stats.kind, table=table)
    mean = mixed_numbers(values, indices, weights, values[chosen]) if stretched is None else stretched
    if shifts is not None:
        mean = spread_like_group(values, mean, shifts)
    return finished_numbers(mean, np.isnan(values[chosen]), stats)


def spread_like_group(values: np.ndarray, mean: np.ndarray, shifts: Shifts) -> np.ndarray:
    """Mixed numbers with their small group's shifts (:mod:`relanon.engine.small_groups`), the moved ones
    kept within the column's range (the others stay between their neighbours' values)."""
    mean, moved = shifted(values, mean, shifts)
    present = values[~np.isnan(values)]
    if len(present):
        with np.errstate(invalid="ignore"):
            mean = np.where(moved, np.clip(mean, present.min(), present.max()), mean)
    return mean


def finished_numbers(mean: np.ndarray, missing: np.ndarray, stats) -> pd.Series:
    """Mixed numbers put on the column's support and back in its type, missing where ``missing``."""
    if stats.support is not None:
        mean = nearest_value(mean, stats.support)
    return restore_numeric(mean, missing, stats)


def nearest_value(values: np.ndarray, support: np.ndarray) -> np.ndarray:
    """Each value replaced by the nearest value of the sorted ``support`` (the lower one on a tie).

    Examples
    --------
    >>> nearest_value(np.array([12.0, 16.0, 34.0, np.nan]), np.array([10.0, 20.0, 50.0])).tolist()
    [10.0, 20.0, 20.0, nan]
    """
    out = np.full(values.shape, np.nan)
    present = ~np.isnan(values)
    x = values[present]
    upper = np.clip(np.searchsorted(support, x, side="left"), 0, len(support) - 1)
    lower = np.clip(upper - 1, 0, len(support) - 1)
    out[present] = np.where(np.abs(x - support[lower]) <= np.abs(support[upper] - x), support[lower], support[upper])
    return out
