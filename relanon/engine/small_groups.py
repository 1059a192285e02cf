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

The tuple rule: ``J`` is never a record whose tuple of categorical values, or a pair of them, fewer than
``COMBINATION_HOLDERS`` records hold, counting the columns :func:`counted_columns` chooses. Those it leaves
out (a wide table's days and cities, where nearly every record holds a pair of its own) are not taken from
``J``, whose tuple of them is often hers alone: each family of them (:func:`column_families`: a city and its
state) comes from another neighbour whose values form, with the avatar's, pairs that several records hold
(:func:`family_donors`). On the Lahman people this took the linkability of birth and death columns from 0.084
to 0.022 (benchmarks/wide_people.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from itertools import combinations
from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.common.binning import hellinger
from relanon.engine.private_values import extended_keys, tuple_codes, value_codes
from relanon.schema.options import default

# The shift's standard deviation, in standard deviations of the group: a difference of two members
# has twice the group's variance, so ``z`` has variance ``SHIFT_SCALE ** 2 / 2``.
SHIFT_SCALE = 1.0
# Fewest records that must hold the whole tuple of an avatar's categorical values, and each pair of
# them, for the tuple to be released (the schema's anonymize.combination_min_count by default).
COMBINATION_HOLDERS = default("anonymize", "combination_min_count")
# The tuple rule keeps a column out of its count when counting it would leave fewer than this share of the
# records that the rule of rare values allows to give their categories, or would bend the shares of the other
# counted columns among those left by more than TUPLE_RULE_BIAS (Hellinger distance): turning down a column's
# rare combinations is the rule, leaning the release towards a kind of people is not. In a wide table of birth
# and death cities, days and heights, nearly every record holds a pair of its own: counting every column leaves
# 0.5 % of the Lahman people to give their categories, and the release would have 95 % right-handed batters,
# 14 % born in Tulsa and 98 % alive (the living share their empty death columns). Measured there and on a table
# of towns of six (benchmarks/wide_people.py, benchmarks/combination_holders.py; docs/method.md, Small groups).
TUPLE_RULE_FLOOR = 0.1
TUPLE_RULE_BIAS = 0.05
# The columns left out of the tuple rule are taken from other neighbours than the drawn one, a family of columns
# at a time: columns are of one family when one tells the other (Goodman and Kruskal's lambda at least
# FAMILY_TIE, read on values FAMILY_HELD records hold), as a city and its state.
FAMILY_TIE = 0.8
FAMILY_HELD = 5
# Records read to rule out most pairs of columns before an order is checked on every record.
ORDER_SAMPLE = 10_000


class Shifts(NamedTuple):
    """The shift ``z * (x[first] - x[second])`` of each avatar (``first = -1``: none)."""

    first: np.ndarray
    second: np.ndarray
    z: np.ndarray


def group_keys(table: pd.DataFrame, columns, chosen: np.ndarray, taken: Mapping | None = None) -> list[tuple]:
    """The groups a record belongs to (the whole table, each column's values, each pair's), as
    ``(keys, at)``: one key per record of ``table``, and the key of the group of each avatar, which carries
    ``chosen[r]``'s values except for the columns of ``taken`` (column -> records), taken from others. An
    avatar's pair of values no record holds has a key no record has."""
    taken = taken or {}
    codes = {c: value_codes(table[c]) for c in columns}
    carried = {c: codes[c][taken.get(c, chosen)] for c in columns}
    out = [(np.zeros(len(table), dtype=np.int64), np.zeros(len(chosen), dtype=np.int64))]
    out += [(codes[c], carried[c]) for c in columns]
    for a, b in combinations(columns, 2):
        base = codes[b].max(initial=0) + 1
        out.append((codes[a] * base + codes[b], carried[a] * base + carried[b]))
    return out


def small_group_shifts(table: pd.DataFrame, columns, chosen: np.ndarray, rng: np.random.Generator,
                       scale: float = SHIFT_SCALE, *, taken: Mapping | None = None) -> Shifts:
    """For each avatar (record ``r`` carrying the categorical values of ``chosen[r]``, or for the columns of
    ``taken`` those of ``taken[column][r]``): two members ``R`` and ``S`` of its smallest group and the weight
    ``z`` of its shift ``z * (x_R - x_S)``.

    The group is the smallest held by at least two records among the whole table, the values of
    ``columns`` that the avatar carries and their pairs. An avatar gets no shift (``R = S = -1``,
    ``z = 0``) only in a table of fewer than two records. The random numbers are drawn for every
    avatar, whatever the groups: the result depends only on the table, the records carried and the generator.

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
    groups = group_keys(table, columns, chosen, taken)
    best_size = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    best = np.full(n, -1, dtype=np.int64)
    for d, (keys, at) in enumerate(groups):
        held, counts = np.unique(keys, return_counts=True)
        found = np.minimum(np.searchsorted(held, at), len(held) - 1)
        size = np.where(held[found] == at, counts[found], 0)
        better = (size >= 2) & (size < best_size)
        best_size[better], best[better] = size[better], d
    for d in np.unique(best):
        rows = np.flatnonzero(best == d)
        keys, at = groups[d]
        order = np.argsort(keys, kind="stable")  # each group's members in the order of the records
        held, starts = np.unique(keys[order], return_index=True)
        start, size = starts[np.searchsorted(held, at[rows])], best_size[rows]
        p1 = np.minimum((u_first[rows] * size).astype(np.int64), size - 1)
        p2 = np.minimum((u_second[rows] * (size - 1)).astype(np.int64), size - 2)
        p2 = p2 + (p2 >= p1)  # two distinct members
        first[rows], second[rows] = order[start + p1], order[start + p2]
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


def column_families(table: pd.DataFrame, columns, tie: float = FAMILY_TIE, held: int = FAMILY_HELD) -> list[list]:
    """``columns`` grouped into families of columns that go together: two columns are tied when the values of
    one tell the other's (Goodman and Kruskal's lambda at least ``tie``, read on the records whose value at
    least ``held`` records hold: a value one person holds tells everything by chance), as a city its state.
    Families are returned from the fewest distinct values up, each in the order of ``columns``.

    Examples
    --------
    >>> people = pd.DataFrame({"city": list("aabbccdd") * 2, "state": list("XXXXYYYY") * 2,
    ...                        "day": list("1234123412341234")})
    >>> column_families(people, ["day", "city", "state"], held=2)
    [['city', 'state'], ['day']]
    """
    columns = list(columns)
    codes = {c: value_codes(table[c]) for c in columns}
    parent = {c: c for c in columns}

    def root(c):
        while parent[c] != c:
            c = parent[c]
        return c

    for a in columns:
        counts = np.bincount(codes[a])
        read = counts[codes[a]] >= held
        if not read.any():
            continue
        for b in columns:
            if b == a or root(a) == root(b):
                continue
            if guess_gain(codes[a][read], codes[b][read]) >= tie:
                parent[root(b)] = root(a)
    families: dict = {}
    for c in columns:
        families.setdefault(root(c), []).append(c)
    distinct = {c: len(np.unique(codes[c])) for c in columns}
    return sorted(families.values(), key=lambda f: (min(distinct[c] for c in f), columns.index(f[0])))


def guess_gain(a: np.ndarray, b: np.ndarray) -> float:
    """Goodman and Kruskal's lambda: the share of the errors of guessing ``b`` by its modal value that knowing
    ``a`` (guessing each ``a``'s modal ``b``) avoids; 0 for a ``b`` of one value."""
    base = b.max(initial=0) + 1
    pairs = np.unique(a * base + b, return_counts=True)
    pair_a = pairs[0] // base
    best = np.zeros(a.max(initial=0) + 1, dtype=np.int64)
    np.maximum.at(best, pair_a, pairs[1])
    plain = np.bincount(b).max(initial=0)
    if plain >= len(b):
        return 0.0
    return float((best.sum() - plain) / (len(b) - plain))


def family_donors(table: pd.DataFrame, families, decided: Mapping, chosen: np.ndarray, indices: np.ndarray,
                  weights: np.ndarray, rng: np.random.Generator, holders: int = COMBINATION_HOLDERS) -> dict:
    """The record each family of ``families`` (columns left out of the tuple rule) is taken from, per avatar.

    Avatar ``r`` carries the values of ``decided`` (name -> series of the same records as ``table``: the
    categorical values that are not left out, whether each number is missing) of ``chosen[r]``. Each family, in
    turn, is taken from one of ``r``'s other neighbours ``indices[r]``, drawn with its ``weights[r]`` among those
    whose values form, with each value the avatar carries so far (the decided columns' and earlier families'), a
    pair that ``holders`` records hold, and a whole tuple that no record or at least ``holders`` hold: the
    avatar's pairs are held by several people, not the one record of the drawn neighbour, and hold together (no
    30th of February). An avatar none of whose neighbours qualify takes the family from ``chosen[r]``. Returns
    ``{column: donors}`` for every column of ``families``.

    Examples
    --------
    >>> people = pd.DataFrame({"month": ["Feb"] * 4 + ["Mar"] * 4, "day": ["1", "1", "2", "2", "30", "30", "1", "1"]})
    >>> indices = np.array([[1, 4, 6]] * 8)
    >>> donors = family_donors(people, [["day"]], {"month": people["month"]}, np.zeros(8, dtype=int), indices,
    ...                        np.full((8, 3), 1 / 3), np.random.default_rng(0))
    >>> sorted(set(people["day"].take(donors["day"])))
    ['1']
    """
    n = len(chosen)
    u = rng.random((n, len(families)))
    known = {c: value_codes(pd.Series(values)) for c, values in decided.items()}
    carried = {c: codes[chosen] for c, codes in known.items()}
    # the tuple of every value carried so far, as a key among the records' tuples (-1: no record holds it)
    record_key = np.zeros(len(table), dtype=np.int64)
    for codes in known.values():
        record_key, _, _ = extended_keys(record_key, record_key[:0], codes, codes[:0])
    avatar_key = record_key[chosen]
    out = {}
    for f, family in enumerate(families):
        allowed = indices != chosen[:, None]
        keys, formed = record_key, np.repeat(avatar_key[:, None], indices.shape[1], axis=1)
        codes = {column: value_codes(table[column]) for column in family}
        for column in family:
            for other, at in carried.items():
                allowed &= _held_pairs(codes[column], known[other], codes[column][indices], at[:, None], holders)
            keys, formed, counts = extended_keys(keys, formed, codes[column], codes[column][indices])
        # the whole tuple may be one no record holds, not one that fewer than ``holders`` hold
        held = _holding(formed, counts)
        allowed &= (held == 0) | (held >= holders)
        w = weights * allowed
        total = w.sum(axis=1)
        cumulative = np.cumsum(w, axis=1) / np.where(total > 0, total, 1.0)[:, None]
        pick = np.minimum((cumulative < u[:, [f]]).sum(axis=1), indices.shape[1] - 1)
        # a weight of 0 may still be landed on by rounding: the first neighbour that qualifies instead
        pick = np.where(allowed[np.arange(n), pick], pick, np.argmax(allowed, axis=1))
        donors = np.where(total > 0, indices[np.arange(n), pick], chosen)
        for column in family:
            out[column] = donors
            known[column] = codes[column]
            carried[column] = known[column][donors]
            record_key, avatar_key, _ = extended_keys(record_key, avatar_key, known[column], carried[column])
    return out


def _holding(formed: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """How many records hold each tuple ``formed`` (keys from :func:`extended_keys`, -1: none)."""
    return np.where(formed >= 0, counts[np.maximum(formed, 0)], 0)


def _held_pairs(a: np.ndarray, b: np.ndarray, at_a: np.ndarray, at_b: np.ndarray, holders: int) -> np.ndarray:
    """Whether the pairs of codes ``(at_a, at_b)`` (broadcast) are held by ``holders`` records of the columns
    coded ``a`` and ``b``."""
    _, pairs, counts = extended_keys(a, at_a, b, at_b)
    return _holding(pairs, counts) >= holders


def tuple_rule(table, columns, frequent: np.ndarray, holders: int, name: str) -> tuple[np.ndarray, list]:
    """``frequent`` without the records whose tuple of the counted ``columns``, or a pair of it, fewer than
    ``holders`` records hold. The columns counted leave at least a tenth of ``frequent`` to give their categories
    and, at the default ``holders``, records that hold the other columns' values in its shares
    (:func:`counted_columns`); more holders, asked by the schema, may bend the shares
    (the signal shows by how much). A warning names the columns left out, which are taken from other neighbours
    (:func:`family_donors`). Returns the records that may give their categories and
    the columns left out."""
    bias = TUPLE_RULE_BIAS if holders <= COMBINATION_HOLDERS else 1.0
    counted = counted_columns(table, columns, frequent, holders, bias) if frequent.any() else list(columns)
    left = [c for c in columns if c not in counted]
    if left:
        warnings.warn(f"table {name!r}: the rule of combinations (combination_min_count {holders}) leaves out "
                      f"{', '.join(map(str, left))}: counted with the others, they would keep most records, or "
                      "records of one kind, from giving their categories, and bend the release's shares. They are "
                      "taken from other neighbours than the rest, where some neighbour's values form pairs that "
                      "several records hold, and otherwise from the drawn one: fewer or coarser categories (a "
                      "region, a year) keep them in the rule; relanon assess measures what is left",
                      UserWarning, stacklevel=4)
    return frequent & ~rare_combination_records(table, counted, holders), left


def carried_columns(table, types, categorical, left, sensitive) -> dict:
    """What an avatar carries from its drawn neighbour that the columns left out of the tuple rule must go with:
    the other categorical values and whether each number is missing."""
    carried = {c: table[c] for c in categorical if c not in left and c not in sensitive}
    carried.update({("missing", c): table[c].isna() for c in types if c not in categorical and c not in sensitive
                    and table[c].isna().any()})
    return carried
