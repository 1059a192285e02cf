"""Values an avatar must not carry as they are: rare values.

A rule of the avatar decoding (:func:`relanon.engine.avatar.avatarize`), measured by the attacks of
``relanon assess`` (README, Privacy attacks):

- **Rare values.** A value held by fewer than ``min_count`` records of the table never reaches the
  release verbatim. The categorical-like part of an avatar is that of one neighbour drawn with the
  avatar weights: the draw is made among the neighbours whose values are all held by at least
  ``min_count`` records (:func:`frequent_records`, :func:`among_eligible`), so the whole tuple
  released is still one an original holds (no impossible combination), and a town held by one
  person is never copied. Numbers, weighted means of neighbours, are kept between the
  ``min_count``-th smallest and largest values of their column (:func:`bound_extremes`): the
  largest income released is one that ``min_count`` people reach. A table avatarized in batches
  (the Dask engine) counts in the whole table, not in the batch: its value counts and order
  statistics are given (``value_counts``, ``extremes`` of :func:`relanon.engine.avatar.avatarize`).

The second rule, the sensitive columns' donors, is :mod:`relanon.engine.donors`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.engine.neighbours import cross_neighbours


def min_count_thresholds(min_counts, types, k: int, name: str) -> dict[str, int]:
    """Per avatarized column, the fewest records that must hold a value for an avatar to carry it.

    ``min_counts`` is None (no rule: every value may be released), one positive integer for every
    column, or a mapping of some columns to positive integers (the others take ``k``).

    Examples
    --------
    >>> min_count_thresholds({"town": 5}, {"town": "categorical", "age": "integer"}, 10, "people")
    {'town': 5, 'age': 10}
    >>> min_count_thresholds(None, {"town": "categorical"}, 10, "people")
    {}
    """
    if min_counts is None:
        return {}
    if isinstance(min_counts, Mapping):
        unknown = sorted(set(min_counts) - set(types))
        if unknown:
            raise ParameterError(f"table {name!r}: min_counts names columns that are not avatarized: {unknown}")
        given, default = dict(min_counts), k
    else:
        given, default = {}, min_counts
    out = {c: given.get(c, default) for c in types}
    bad = {c: v for c, v in out.items() if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1}
    if bad:
        raise ParameterError(f"table {name!r}: min_count must be a positive integer (1 releases every value), "
                             f"got {bad}")
    return {c: int(v) for c, v in out.items()}


def value_codes(series: pd.Series) -> np.ndarray:
    """One integer per distinct value of ``series`` (missing is a value of its own)."""
    return pd.factorize(series, use_na_sentinel=False)[0].astype(np.int64)


def parent_codes(frame: pd.DataFrame, columns) -> np.ndarray | None:
    """Each row's parents as codes, one column per foreign key of ``columns`` present in ``frame``
    (-1 for none): the ``groups`` of :func:`sensitive_donors`; None without such a column."""
    columns = [c for c in columns if c in frame.columns]
    if not columns:
        return None
    return np.column_stack([pd.factorize(frame[c])[0] for c in columns]).astype(np.int64)


def tuple_codes(table: pd.DataFrame, columns) -> np.ndarray:
    """One integer per distinct combination of the values of ``columns`` (zeros without columns),
    numbered in the lexicographic order of the columns' :func:`value_codes`.

    Examples
    --------
    >>> tuple_codes(pd.DataFrame({"sex": ["F", "M", "F"], "town": ["B", "A", "A"]}), ["sex", "town"]).tolist()
    [0, 2, 1]
    """
    codes = np.zeros(len(table), dtype=np.int64)
    for column in columns:
        # the combination so far and one more column, renumbered: the codes stay below the rows' number
        values = value_codes(table[column])
        codes = np.unique(codes * (values.max(initial=0) + 1) + values, return_inverse=True)[1].astype(np.int64)
    return codes


def extended_keys(keys: np.ndarray, formed: np.ndarray, codes: np.ndarray, at: np.ndarray) -> tuple:
    """The records' tuples ``keys`` with one more column coded ``codes``, renumbered; tuples ``formed`` (keys of
    the records' tuples, -1 for none) with that column's codes ``at``, as keys of the new tuples (-1 for none a
    record holds); and how many records hold each new key."""
    base = codes.max(initial=0) + 1
    held, renumbered, counts = np.unique(keys * base + codes, return_inverse=True, return_counts=True)
    wanted = formed * base + at
    found = np.minimum(np.searchsorted(held, wanted), max(len(held) - 1, 0))
    hit = (formed >= 0) & (held[found] == wanted) if len(held) else np.zeros(wanted.shape, dtype=bool)
    return renumbered.astype(np.int64).reshape(-1), np.where(hit, found, -1), counts


def carried_tuple(table: pd.DataFrame, columns, chosen: np.ndarray, taken: Mapping | None = None) -> tuple:
    """The records' tuples of ``columns`` (:func:`tuple_codes`), the key among them of the tuple each avatar
    carries (record ``chosen[r]``'s values, or for a column of ``taken`` record ``taken[column][r]``'s; -1 when
    no record holds it), and per column the code of the value each avatar carries.

    Examples
    --------
    >>> people = pd.DataFrame({"sex": ["F", "M", "F"], "town": ["B", "A", "A"]})
    >>> records, at, _ = carried_tuple(people, ["sex", "town"], np.array([0, 1, 2]), {"town": np.array([1, 0, 0])})
    >>> records.tolist(), at.tolist()
    ([0, 2, 1], [1, -1, 0])
    """
    taken = taken or {}
    records = np.zeros(len(table), dtype=np.int64)
    at = np.zeros(len(chosen), dtype=np.int64)
    codes_at = []
    for column in columns:
        codes = value_codes(table[column])
        codes_at.append(codes[taken.get(column, chosen)])
        records, at, _ = extended_keys(records, at, codes, codes_at[-1])
    return records, at, codes_at


def frequent_records(table: pd.DataFrame, columns, thresholds: Mapping[str, int],
                     value_counts: Mapping[str, pd.Series] | None = None) -> np.ndarray:
    """Whether each record's values of ``columns`` are all held by at least their column's threshold.

    Records holding a value are counted among the rows of ``table``, or, for a column of
    ``value_counts``, read there: the count of each value in the whole table of which ``table`` is a
    batch (:func:`held_counts`), so that a value rare in the table is rare in every batch, and a value
    frequent in the table is frequent in a batch that holds it once.

    Examples
    --------
    >>> people = pd.DataFrame({"town": ["A", "A", "A", "B"], "sex": ["F", "M", "F", "F"]})
    >>> frequent_records(people, ["town", "sex"], {"town": 2, "sex": 1}).tolist()
    [True, True, True, False]
    >>> frequent_records(people, ["town"], {"town": 2}, {"town": pd.Series({"A": 1, "B": 40})}).tolist()
    [False, False, False, True]
    """
    eligible = np.ones(len(table), dtype=bool)
    for column in columns:
        threshold = thresholds.get(column, 1)
        if threshold > 1:
            eligible &= holder_counts(table[column], (value_counts or {}).get(column)) >= threshold
    return eligible


def holder_counts(series: pd.Series, counts: pd.Series | None = None) -> np.ndarray:
    """How many records hold each value of ``series``: among the values of ``series`` itself or, when
    ``counts`` is given, in the whole table (:func:`held_counts`)."""
    if counts is not None:
        return held_counts(series, counts)
    codes = value_codes(series)
    return np.bincount(codes)[codes]


def rare_values(released: pd.Series, original: pd.Series, threshold: int, counts: pd.Series | None = None) -> np.ndarray:
    """Whether each value of ``released`` (missing ones aside) is held by fewer than ``threshold`` records of
    ``original``, or of the whole table (``counts``).

    Examples
    --------
    >>> towns = pd.Series(["A", "A", "A", "B", None])
    >>> rare_values(pd.Series(["A", "B", None]), towns, 2).tolist()
    [False, True, False]
    """
    table_counts = original.value_counts(dropna=False) if counts is None else counts
    return (held_counts(released, table_counts) < threshold) & released.notna().to_numpy()


def held_counts(series: pd.Series, counts: pd.Series) -> np.ndarray:
    """How many records of the whole table hold each value of ``series``, read from ``counts``.

    ``counts`` maps each value of the table's column to its number of records; missing is a value of
    its own (:func:`value_codes`), counted under a missing key (NaN, None or NA: they are one value).
    A value ``counts`` does not hold counts 0 (it is rare).

    Examples
    --------
    >>> held_counts(pd.Series(["A", None, "C"]), pd.Series([7, 2], index=["A", None])).tolist()
    [7, 2, 0]
    """
    index = pd.Index(counts.index)
    number = np.asarray(counts, dtype=np.int64)
    missing = np.asarray(index.isna())
    known = index[~missing]
    if not known.is_unique:
        raise ParameterError(f"column {series.name!r}: value_counts holds a value twice: "
                             f"{known[known.duplicated()].tolist()[:5]}")
    out = np.full(len(series), int(number[missing].sum()), dtype=np.int64)
    present = series.notna().to_numpy()
    found = known.get_indexer(series[present])
    out[present] = np.where(found >= 0, number[~missing][np.maximum(found, 0)], 0)
    return out


def among_eligible(eligible: np.ndarray, indices: np.ndarray, weights: np.ndarray, coords: np.ndarray,
                   rng: np.random.Generator, weigh) -> tuple[np.ndarray, np.ndarray]:
    """Neighbours and weights restricted to eligible records, rows summing to 1.

    A record none of whose neighbours is eligible gets its nearest eligible *other* records instead,
    weighted by ``weigh(distances, rng)`` (the avatar weights). Nothing changes when no record is
    eligible (every record holds a rare value): the caller warns.
    """
    if eligible.all() or not eligible.any():
        return indices, weights
    weights = weights * eligible[indices]
    none = np.flatnonzero(weights.sum(axis=1) == 0)
    if len(none):
        pool = np.flatnonzero(eligible)
        k = indices.shape[1]
        found = cross_neighbours(coords[pool], coords[none], min(k + 1, len(pool)))
        chosen, distances = pool[found.indices], found.distances
        others = chosen != none[:, None]
        order = np.argsort(~others, axis=1, kind="stable")  # the record itself, if found, goes last
        chosen, distances = np.take_along_axis(chosen, order, 1), np.take_along_axis(distances, order, 1)
        width = min(k, chosen.shape[1] - (~others).any(axis=1).max(initial=0))
        width = max(width, 1)
        replacement_i = np.repeat(chosen[:, :1], k, axis=1)
        replacement_d = np.repeat(distances[:, :1], k, axis=1)
        replacement_i[:, :width], replacement_d[:, :width] = chosen[:, :width], distances[:, :width]
        replacement_w = np.zeros((len(none), k))
        replacement_w[:, :width] = weigh(replacement_d[:, :width], rng)
        indices, weights = indices.copy(), weights.copy()
        indices[none], weights[none] = replacement_i, replacement_w
    return indices, weights / weights.sum(axis=1, keepdims=True)


def bound_extremes(avatars: pd.Series, original: pd.Series, min_count: int, bounds: tuple | None = None) -> pd.Series:
    """``avatars`` kept between the ``min_count``-th smallest and largest present values of ``original``,
    or between ``bounds``: those of the whole table of which ``original`` is a batch
    (:func:`extreme_bounds` of its values).

    Examples
    --------
    >>> bound_extremes(pd.Series([1, 50, 99]), pd.Series(range(1, 101)), 5).tolist()
    [5, 50, 96]
    >>> bound_extremes(pd.Series([1, 50, 99]), pd.Series(range(1, 101)), 5, bounds=(20, 60)).tolist()
    [20, 50, 60]
    """
    if bounds is None:
        present = original.dropna().sort_values(kind="stable")
        bounds = extreme_bounds(present, present, len(present), min_count)
    if bounds is None:
        return avatars
    return avatars.clip(*bounds)


def extreme_bounds(smallest: pd.Series, largest: pd.Series, n: int, min_count: int) -> tuple | None:
    """The ``min_count``-th smallest and largest of ``n`` present values (at most their middle ones), from
    sorted ``smallest`` and ``largest`` holding at least the ``min_count`` smallest and largest of them
    (each part's, gathered, hold the whole table's); None when ``min_count`` is 1 (no bound).

    Examples
    --------
    >>> [int(v) for v in extreme_bounds(pd.Series([1, 2, 3]), pd.Series([7, 8, 9]), 100, 2)]
    [2, 8]
    """
    t = min(int(min_count), (n + 1) // 2)
    if t <= 1:
        return None
    return smallest.iloc[t - 1], largest.iloc[len(largest) - t]
