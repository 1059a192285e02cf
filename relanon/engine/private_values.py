"""Values an avatar must not carry as they are: rare values.

A rule of the avatar decoding (:func:`relanon.engine.avatar.avatarize`), measured by the attacks of
``relanon assess`` (docs/guide/attacks.md; the method in docs/method.md, small groups in
docs/guide/small-groups.md):

- **Rare values.** A value held by fewer than ``min_count`` records of the table never reaches the
  release verbatim. It is first generalized (:mod:`relanon.engine.generalize`: a coarser column's
  level, a merged "other", the nearest value held often enough); the categorical-like part of an
  avatar is then that of one neighbour drawn with the avatar weights, among the neighbours whose
  (generalized) values are all held by at least ``min_count`` records (:func:`frequent_records`,
  :func:`among_eligible`), so the whole tuple released is still one the records hold, and a town held
  by one person is never copied. Numbers, weighted means of neighbours, are kept between bounds that
  ``min_count`` values lie beyond (:func:`bound_extremes`, half-way between order statistics: never one
  person's own value), and put only on values of their support that ``min_count`` records hold
  (:func:`held_supports`). A table avatarized in batches (the Dask engine) counts in the whole table,
  not in the batch: its value counts and order statistics are given (``value_counts``, ``extremes`` of
  :class:`relanon.engine.avatar.RunHooks`).

The second rule, the sensitive columns' donors, is :mod:`relanon.engine.donors`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.engine.columns import NUMERIC_KINDS, numeric_values, time_grid
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
    """``avatars`` kept between the bounds of :func:`extreme_bounds` of the present values of ``original``,
    or between ``bounds``: those of the whole table of which ``original`` is a batch. A whole-number column
    keeps whole bounds, and a column of dates (or of times on a grid: whole hours...) bounds on its grid, both
    rounded inwards: a half-way bound is no value of the column's kind (a birth date at noon).

    Examples
    --------
    >>> bound_extremes(pd.Series([1.0, 50.0, 99.0]), pd.Series(np.arange(1.0, 101.0)), 5).tolist()
    [5.5, 50.0, 95.5]
    >>> bound_extremes(pd.Series([1, 50, 99]), pd.Series(range(1, 101)), 5).tolist()
    [6, 50, 95]
    >>> bound_extremes(pd.Series([1, 50, 99]), pd.Series(range(1, 101)), 5, bounds=(20, 60)).tolist()
    [20, 50, 60]
    >>> days = pd.Series(pd.date_range("2020-01-01", periods=40, freq="3D"))
    >>> [str(d) for d in bound_extremes(days, days, 5).iloc[[0, -1]]]
    ['2020-01-15 00:00:00', '2020-04-13 00:00:00']
    """
    if bounds is None:
        present = original.dropna().sort_values(kind="stable")
        bounds = extreme_bounds(present, present, len(present), min_count)
    if bounds is None:
        return avatars
    low, high = bounds
    if pd.api.types.is_integer_dtype(avatars.dtype):
        low, high = int(np.ceil(float(low))), int(np.floor(float(high)))
        low, high = min(low, high), max(low, high)
    elif pd.api.types.is_datetime64_dtype(avatars.dtype):  # a zone's wall clock is left as it is
        low, high = _on_grid_inwards(low, high, time_grid(original))
    return avatars.clip(low, high)


def _on_grid_inwards(low: pd.Timestamp, high: pd.Timestamp, grid) -> tuple:
    """``low`` and ``high`` moved inwards onto the grid ``(step, offset)`` (seconds) of :func:`time_grid`."""
    if grid is None:
        return low, high
    step, offset = (pd.Timedelta(seconds=x) for x in grid)
    origin = pd.Timestamp(0) + offset
    up = origin + step * int(np.ceil((low - origin) / step))
    down = origin + step * int(np.floor((high - origin) / step))
    return min(up, down), max(up, down)


def extreme_bounds(smallest: pd.Series, largest: pd.Series, n: int, min_count: int) -> tuple | None:
    """The bounds of ``n`` present values below and above which ``min_count`` of them lie: half-way between
    the ``min_count``-th and the next smallest (largest) values, at most the middle ones; from sorted
    ``smallest`` and ``largest`` holding at least the ``min_count + 1`` smallest and largest of them (each
    part's, gathered, hold the whole table's); None when ``min_count`` is 1 (no bound).

    Half-way, not the ``min_count``-th value itself: every avatar beyond it takes the bound, which would
    otherwise be one person's own value (eight people's birth dates released as two of them).

    Examples
    --------
    >>> [float(v) for v in extreme_bounds(pd.Series([1, 2, 3]), pd.Series([6, 8, 9]), 100, 2)]
    [2.5, 7.0]
    """
    t = min(int(min_count), (n + 1) // 2)
    if t <= 1:
        return None
    return _half_way(smallest, t - 1, t), _half_way(largest, len(largest) - t, len(largest) - t - 1)


def _half_way(values: pd.Series, at: int, then: int):
    """Half-way between ``values.iloc[at]`` and ``values.iloc[then]`` (the first alone when there is no such)."""
    first = values.iloc[at]
    if not 0 <= then < len(values):
        return first
    return first + (values.iloc[then] - first) / 2


def held_supports(table, types, space, thresholds, name: str) -> dict:
    """The columns' frozen statistics, each mixed number's support (the small set of values its avatars are
    put on) kept to the values that the column's ``min_count`` records of ``table`` hold: a value one person
    holds is never a value avatars are snapped to (eight people's birth dates released as two of them).

    A support whose kept values hold fewer than half of the records (or none) is dropped instead: the mix
    stays between its bounds (whole numbers rounded) rather than piling the column onto its few common
    values (the ages of 200 doctors, 34 values of which 4 are held by 10, would be released as those 4).
    """
    out = {}
    for column in types:
        stats = space.statistics_[column]
        threshold = thresholds.get(column, 1)
        if types[column] in NUMERIC_KINDS and threshold > 1 and getattr(stats, "support", None) is not None:
            values = numeric_values(table[column], stats.kind, table=name)
            held, counts = np.unique(values[~np.isnan(values)], return_counts=True)
            frequent = counts >= threshold
            enough = frequent.any() and 2 * counts[frequent].sum() >= counts.sum()
            stats = dataclasses.replace(stats, support=held[frequent] if enough else None)
        out[column] = stats
    return out


def unreleasable_columns(table, categorical, thresholds, value_counts) -> dict:
    """The categorical columns of which no value is held by the column's ``min_count`` records (a free text, a
    town that no more than three people share where ``min_count`` is 10), with the most records any value has:
    none of their values may be released."""
    found = {}
    for c in categorical:
        present = table[c].notna().to_numpy()
        if thresholds.get(c, 1) > 1 and holds_missing(table[c]) and present.any():
            most = int(holder_counts(table[c], (value_counts or {}).get(c))[present].max())
            if most < thresholds[c]:
                found[c] = most
    return found


def holds_missing(series: pd.Series) -> bool:
    """Whether a value of ``series`` can be made missing without changing its dtype (text, categories, decimal
    numbers): whole-number and boolean columns without missing values keep the rule's lowered counts instead."""
    dtype = series.dtype
    return not ((pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype))
                and not pd.api.types.is_extension_array_dtype(dtype))


def rare_values_missing(table, out, categorical, thresholds, value_counts, unreleasable, name) -> dict:
    """The released categorical columns with every value that fewer than ``min_count`` records hold made
    missing, with a warning naming them. None is, unless no value of a column reaches ``min_count``
    (``unreleasable``) or every record held a rare value (the draw's counts were lowered)."""
    cleaned, notes, kept = {}, [], []
    for column in categorical:
        if thresholds.get(column, 1) <= 1 or column not in out:
            continue
        rare = rare_values(out[column], table[column], thresholds[column], (value_counts or {}).get(column))
        if not rare.any():
            continue
        counted = f"{int(rare.sum())} of {len(rare)} released values"
        if not holds_missing(table[column]):
            kept.append(f"{column} ({counted})")
            continue
        cleaned[column] = out[column].mask(rare)
        notes.append(f"{column} (min_count {thresholds[column]}; {counted} missing"
                     + (f": no value is held by that many records, the most held by {unreleasable[column]}"
                        if column in unreleasable else "") + ")")
    if notes:
        warnings.warn(f"table {name!r}: values that fewer than min_count records hold are released as missing in "
                      f"{'; '.join(notes)}. Coarsen such a column (a region instead of a town, a year instead of a "
                      "date), drop it (a free text, an identifier), or, if values that few people share may be "
                      "published, set its min_count lower in the schema",
                      UserWarning, stacklevel=4)
    if kept:
        warnings.warn(f"table {name!r}: every record held a value that fewer than min_count records hold, and the "
                      f"counts were lowered: values that fewer hold are released in {'; '.join(kept)}, whole-number or "
                      "yes/no columns without missing values. Coarsen or drop such a column, or lower its min_count "
                      "in the schema knowingly", UserWarning, stacklevel=4)
    return cleaned


def checked_facts(value_counts, extremes, types, name: str) -> tuple[dict, dict]:
    """The whole table's value counts and extremes as dicts, or a ParameterError naming unknown columns."""
    value_counts, extremes = dict(value_counts or {}), dict(extremes or {})
    for label, given in (("value_counts", value_counts), ("extremes", extremes)):
        unknown = sorted(set(given) - set(types))
        if unknown:
            raise ParameterError(f"table {name!r}: {label} names columns that are not avatarized: {unknown}")
    return value_counts, extremes
