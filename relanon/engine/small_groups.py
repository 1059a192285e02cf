"""Numbers of avatars spread like their group's, not pinned among its members.

The categorical part of an avatar is that of one drawn neighbour ``J`` and its numbers are a mix of
``J``'s neighbours moved half-way to ``J`` (:mod:`relanon.engine.avatar`): the avatar sits among
real records, inside their range. In a group that few records form (a zip code and a blood type
held by five people) this lets an attacker single one out: the oldest avatar of the group is
younger than the group's oldest person (a mix lies within its values) and older than the others,
so ``zip_code == z & blood_type == b & age >= 81``, read off that avatar, holds for exactly one
person of the data far more often than for one person outside it (multivariate singling-out risk
0.07 on the demo's patients and on a long-tailed table).

Each avatar therefore gets a random shift that makes its numbers look like a draw from its group
rather than a point inside its members' hull: ``z * (x_R - x_S)``, with ``R`` and ``S`` two members
of the smallest group the avatar belongs to (one of its categorical values, or a pair of them, held
by at least two records; the whole table when there is none) and ``z`` normal with variance
``SHIFT_SCALE ** 2 / 2``. The shift has the group's own spread and the group's own relations
between numbers (a difference of two members), weights that sum to zero (a rule ``age = year -
birth year`` that every record obeys still holds) and mean zero (each group's mean is kept). It
gives back the spread that mixing neighbours takes away.
"""

from __future__ import annotations

from itertools import combinations
from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.common.binning import hellinger
from relanon.engine.private_values import tuple_codes, value_codes

# The shift's standard deviation, in standard deviations of the group: a difference of two members
# has twice the group's variance, so ``z`` has variance ``SHIFT_SCALE ** 2 / 2``.
SHIFT_SCALE = 1.0
# Fewest records that must hold the whole tuple of an avatar's categorical values, and each pair of
# them, for the tuple to be released.
COMBINATION_HOLDERS = 2
# The tuple rule keeps a column out of its count when counting it would leave fewer than this share of the
# records that the rule of rare values allows to give their categories, or would bend the shares of the other
# counted columns among those left by more than TUPLE_RULE_BIAS (Hellinger distance): turning down a column's
# rare combinations is the rule, leaning the release towards a kind of people is not. In a wide table of birth
# and death cities, days and heights, nearly every record holds a pair of its own: counting every column left
# 0.5 % of the Lahman people to give their categories, and the release had 95 % right-handed batters, 14 %
# born in Tulsa and 98 % alive (the living share their empty death columns). Measured there and on a table of
# towns of six (benchmarks/wide_people.py, benchmarks/combination_holders.py; README, How it works).
TUPLE_RULE_FLOOR = 0.1
TUPLE_RULE_BIAS = 0.05
# Records read to rule out most pairs of columns before an order is checked on every record.
ORDER_SAMPLE = 10_000


class Shifts(NamedTuple):
    """The shift ``z * (x[first] - x[second])`` of each avatar (``first = -1``: none)."""

    first: np.ndarray
    second: np.ndarray
    z: np.ndarray


def group_codes(table: pd.DataFrame, columns) -> list[np.ndarray]:
    """The groups a record belongs to, as codes per record: the whole table, each column's values,
    each pair's."""
    return [np.zeros(len(table), dtype=np.int64), *(value_codes(table[c]) for c in columns),
            *(tuple_codes(table, pair) for pair in combinations(columns, 2))]


def small_group_shifts(table: pd.DataFrame, columns, chosen: np.ndarray, rng: np.random.Generator,
                       scale: float = SHIFT_SCALE) -> Shifts:
    """For each avatar (record ``r`` carrying the categorical values of ``chosen[r]``): two members
    ``R`` and ``S`` of its smallest group and the weight ``z`` of its shift ``z * (x_R - x_S)``.

    The group is the smallest held by at least two records among the whole table, the values of
    ``columns`` that ``chosen[r]`` holds and their pairs. An avatar gets no shift (``R = S = -1``,
    ``z = 0``) only in a table of fewer than two records. The random numbers are drawn for every
    avatar, whatever the groups: the result depends only on the table, ``chosen`` and the generator.

    Examples
    --------
    >>> people = pd.DataFrame({"town": ["A"] * 3 + ["B"] * 30})
    >>> shifts = small_group_shifts(people, ["town"], np.arange(33), np.random.default_rng(0))
    >>> bool((shifts.first[:3] < 3).all() and (shifts.second[:3] < 3).all()), bool((shifts.first[3:] >= 3).all())
    (True, True)
    """
    n = len(chosen)
    u_first, u_second = rng.random(n), rng.random(n)
    z = rng.normal(0.0, scale / np.sqrt(2.0), n)
    first, second = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    if len(table) < 2 or not n:
        return Shifts(first, second, np.zeros(n))
    codes = group_codes(table, columns)
    best_size = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    best = np.full(n, -1, dtype=np.int64)
    for d, code in enumerate(codes):
        size = np.bincount(code)[code[chosen]]
        better = (size >= 2) & (size < best_size)
        best_size[better], best[better] = size[better], d
    for d in np.unique(best):
        rows = np.flatnonzero(best == d)
        code = codes[d]
        order = np.argsort(code, kind="stable")
        starts = np.concatenate([[0], np.cumsum(np.bincount(code))])
        group, size = code[chosen[rows]], best_size[rows]
        p1 = np.minimum((u_first[rows] * size).astype(np.int64), size - 1)
        p2 = np.minimum((u_second[rows] * (size - 1)).astype(np.int64), size - 2)
        p2 = p2 + (p2 >= p1)  # two distinct members
        first[rows], second[rows] = order[starts[group] + p1], order[starts[group] + p2]
    return Shifts(first, second, z)


def shifted(values: np.ndarray, mix: np.ndarray, shifts: Shifts) -> tuple[np.ndarray, np.ndarray]:
    """``mix`` (the avatars' values of a column whose records hold ``values``) plus their shifts, and
    which avatars moved (both members' values present)."""
    first, second, z = shifts
    moved = (first >= 0) & ~np.isnan(values[first]) & ~np.isnan(values[second])
    return mix + np.where(moved, z * (values[first] - values[second]), 0.0), moved


def least_held(table: pd.DataFrame, columns) -> np.ndarray:
    """For each record, the fewest records that hold its tuple of ``columns`` or a pair of its values of them
    (the table's length without columns).

    Examples
    --------
    >>> people = pd.DataFrame({"zip": ["a", "a", "b", "b", "b"], "blood": ["O", "AB", "O", "O", "O"]})
    >>> least_held(people, ["zip", "blood"]).tolist()
    [1, 1, 3, 3, 3]
    """
    least = np.full(len(table), len(table), dtype=np.int64)
    sets = [list(columns)] + ([] if len(columns) <= 2 else [list(p) for p in combinations(columns, 2)])
    for subset in sets if len(columns) else []:
        codes = tuple_codes(table, subset)
        least = np.minimum(least, np.bincount(codes)[codes])
    return least


def counted_columns(table: pd.DataFrame, columns, allowed: np.ndarray, holders: int = COMBINATION_HOLDERS,
                    bias: float = TUPLE_RULE_BIAS) -> list:
    """The columns the tuple rule counts: taken from the fewest distinct values up, each kept when the records of
    ``allowed`` whose tuple of the kept columns, and each pair of them, ``holders`` records hold stay at least
    :data:`TUPLE_RULE_FLOOR` of ``allowed`` and hold the other columns' values in the same shares as ``allowed``
    (Hellinger distance at most ``bias`` for each, beyond what chance moves in so many records). Returned in
    the order of ``columns``.

    Examples
    --------
    >>> people = pd.DataFrame({"sex": ["F", "M"] * 4, "blood": ["O", "O", "A", "A"] * 2,
    ...                        "city": list("abcdefgh")})
    >>> counted_columns(people, ["city", "sex", "blood"], np.ones(8, dtype=bool))
    ['sex', 'blood']
    """
    columns = list(columns)
    codes = {c: value_codes(table[c]) for c in columns}
    shares = {c: _shares(codes[c][allowed]) for c in columns}
    kept: list = []
    pairs = np.full(len(table), len(table), dtype=np.int64)  # the fewest holders of a pair of kept columns
    for column in sorted(columns, key=lambda c: (len(shares[c]), columns.index(c))):
        with_pairs = pairs.copy()
        for other in kept:
            pair = tuple_codes(table, [other, column])
            with_pairs = np.minimum(with_pairs, np.bincount(pair)[pair])
        whole = tuple_codes(table, [*kept, column])
        left = allowed & (np.minimum(with_pairs, np.bincount(whole)[whole]) >= holders)
        if left.sum() < TUPLE_RULE_FLOOR * allowed.sum():
            continue
        if any(hellinger(shares[c], _shares(codes[c][left], len(shares[c]))) > bias + _noise(shares[c], left, allowed)
               for c in columns if c != column):
            continue
        kept.append(column)
        pairs = with_pairs
    return [c for c in columns if c in kept]


def _shares(codes: np.ndarray, size: int = 0) -> np.ndarray:
    counts = np.bincount(codes, minlength=size).astype(float)
    return counts / max(counts.sum(), 1.0)


def _noise(shares: np.ndarray, left: np.ndarray, allowed: np.ndarray) -> float:
    """Twice the Hellinger distance that ``left.sum()`` records drawn at random among ``allowed`` show on
    average, for a column of ``shares`` (its square is about ``(K - 1) (1 - m / n) / (8 m)`` for ``K`` values
    held, ``m`` records of ``n``): a small table's shares move by chance."""
    m, n = left.sum(), allowed.sum()
    held = max(int((shares > 0).sum()) - 1, 0)
    return 2.0 * float(np.sqrt(held * max(0.0, 1.0 - m / n) / (8.0 * m))) if m else 0.0


def rare_combination_records(table: pd.DataFrame, columns, holders: int = COMBINATION_HOLDERS) -> np.ndarray:
    """Whether each record's tuple of ``columns``, or a pair of its values of them, is held by fewer than
    ``holders`` records: such a record's categorical part is not released (it would single it out).

    Examples
    --------
    >>> people = pd.DataFrame({"zip": ["a", "a", "b", "b"], "blood": ["O", "AB", "O", "O"]})
    >>> rare_combination_records(people, ["zip", "blood"]).tolist()
    [True, True, False, False]
    """
    if holders <= 1 or not len(columns):
        return np.zeros(len(table), dtype=bool)
    return least_held(table, columns) < holders


def ordered_columns(records: dict) -> set:
    """The columns of ``records`` (column -> float values, NaN: missing) bound to another by an order that
    every record obeys (``a <= b`` wherever both are present, as ``first_year <= last_year``) and that their
    ranges do not imply (some value of ``a`` is above some value of ``b``).

    Such columns are not shifted: a difference of two records is not a convex mix, so a shift can reverse
    the order, and a span shifted away from its record's children (their years, their number) makes them
    contradict it. An order the ranges imply survives, since shifted values are kept within their column's.

    Examples
    --------
    >>> records = {"first": np.array([1.0, 5.0, 9.0]), "last": np.array([4.0, 6.0, 9.0]),
    ...            "age": np.array([30.0, 3.0, 7.0]), "year": np.array([2001.0, np.nan, 2003.0])}
    >>> sorted(ordered_columns(records))
    ['first', 'last']
    """
    names = list(records)
    n = len(records[names[0]]) if names else 0
    if not n:
        return set()
    # a pair reversed in an evenly spaced sample of the records is not an order: only the pairs the sample
    # keeps are read in full (a table of 100 numeric columns has 9,900 pairs)
    sample = np.column_stack([records[c][:: max(1, n // ORDER_SAMPLE)] for c in names])
    out = set()
    for i, a in enumerate(names):
        with np.errstate(invalid="ignore"):
            kept = ~(sample < sample[:, [i]]).any(axis=0)
        for j in np.flatnonzero(kept):
            b = names[j]
            if b == a:
                continue
            x, y = records[a], records[b]
            both = ~np.isnan(x) & ~np.isnan(y)
            if both.any() and (x[both] <= y[both]).all() and np.nanmax(x) > np.nanmin(y):
                out |= {a, b}
    return out
