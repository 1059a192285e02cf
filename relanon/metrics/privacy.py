"""Privacy metrics of a single table's release (docs/guide/metrics.md).

Distances are measured in a :class:`~relanon.engine.factor_space.FactorSpace` fitted on the *original*
table (its first ``ncp`` axes), where the avatars are placed with the statistics of the originals.

On large tables the distance metrics are computed for a seeded random sample of ``sample_size``
originals (hidden rate, local cloaking, inference) or avatars (distance to closest, closest
distances ratio), each compared with *all* the rows of the other side, so the figures estimate the
full-table ones without their cost. Row direct match protection always uses every row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.common.options import check_integer
from relanon.engine.columns import check_columns_present, column_types
from relanon.engine.factor_space import FactorSpace
from relanon.engine.neighbours import count_closer_and_tied, nearest_distances, tie_tolerance
from relanon.metrics.base import HIGHER, TARGETS, Metric
from relanon.metrics.inference import SPACE_SEED, inference

DEFAULT_SAMPLE_SIZE = 10_000


# --------------------------------------------------------------------------- the space


def metric_space(original: pd.DataFrame, columns, *, ncp=None, weights=None, name="table") -> FactorSpace:
    """The factor space of the distance metrics: fitted on the original table, with its ``ncp``.

    Examples
    --------
    >>> frame = pd.DataFrame({"x": [1.0, 2.0, 4.0], "c": ["a", "b", "a"]})
    >>> metric_space(frame, {"x": "continuous", "c": "categorical"}).n_components_
    2
    """
    return FactorSpace(columns, n_components=ncp, weights=weights, random_state=SPACE_SEED, name=name).fit(original)


def _avatar_of(pairing, n_originals: int, n_avatars: int) -> np.ndarray:
    """Position of each original's avatar, from ``pairing`` (original of each avatar)."""
    pairing = np.asarray(pairing)
    if pairing.shape != (n_avatars,) or n_avatars != n_originals:
        raise ParameterError(
            f"pairing must hold one original position per avatar ({n_avatars} avatars, {n_originals} originals), "
            f"got shape {pairing.shape}"
        )
    if not np.array_equal(np.sort(pairing), np.arange(n_originals)):
        raise ParameterError("pairing must be a permutation of the original positions (each original has one avatar)")
    avatar_of = np.empty(n_originals, dtype=np.int64)
    avatar_of[pairing] = np.arange(n_avatars)
    return avatar_of


def _rows(rows, n: int) -> np.ndarray:
    return np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)


# --------------------------------------------------------------------------- distance metrics


def closer_avatar_counts(original_coords, avatar_coords, pairing, *, rows=None) -> np.ndarray:
    """For each original, the number of avatars strictly closer to it than its own avatar.

    Parameters
    ----------
    original_coords, avatar_coords : array of shape (n, ncp)
        Originals and avatars in the same factor space.
    pairing : array of int
        ``pairing[a]`` is the original position of avatar ``a`` (as returned by ``avatarize``).
    rows : array of int, optional
        Original positions to evaluate (default: all).

    Examples
    --------
    >>> closer_avatar_counts([[0.0], [10.0]], [[1.0], [9.5]], pairing=[1, 0]).tolist()
    [1, 1]
    """
    return _closer_and_tied(original_coords, avatar_coords, pairing, rows)[0]


def _closer_and_tied(original_coords, avatar_coords, pairing, rows, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """Avatars strictly closer to each original than its own, and avatars as close as its own (itself included)."""
    original_coords = np.asarray(original_coords, dtype=np.float64)
    avatar_coords = np.asarray(avatar_coords, dtype=np.float64)
    rows = _rows(rows, len(original_coords))
    own = avatar_coords[_avatar_of(pairing, len(original_coords), len(avatar_coords))[rows]]
    queries = original_coords[rows]
    distances = np.sqrt(((queries - own) ** 2).sum(axis=1))
    closer, tied = count_closer_and_tied(avatar_coords, queries, distances, progress=progress)
    return closer, np.maximum(tied, 1)  # its own avatar ties with itself, whatever the last bits say


def hidden_rate(original_coords, avatar_coords, pairing, *, rows=None) -> Metric:
    """Share (%) of originals whose nearest avatar is not their own avatar.

    An attacker links each original to its closest avatar, breaking ties at random. An original
    is found when no avatar is strictly closer to it than its own and, if ``t`` avatars (its own
    included) are equally close, with probability ``1 / t``: the metric is the expected share of
    wrong links. On distinct records ``t`` is 1 and the identity release scores 0; where ``m``
    originals share the same values, their copies are ``m`` equally close avatars and each is
    found with probability ``1 / m``.

    Examples
    --------
    >>> hidden_rate([[0.0], [10.0]], [[1.0], [9.5]], pairing=[1, 0]).value
    100.0

    Two originals at the same place, each avatar on it: the attacker picks the right one half the time.

    >>> hidden_rate([[0.0], [0.0]], [[0.0], [0.0]], pairing=[1, 0]).value
    50.0
    """
    return _hidden_rate(*_closer_and_tied(original_coords, avatar_coords, pairing, rows))


def local_cloaking(original_coords, avatar_coords, pairing, *, rows=None) -> Metric:
    """Median number of avatars ranked before an original's own avatar by its distance to them.

    Avatars strictly closer count in full; of the ``t - 1`` others as close as its own avatar, an
    attacker breaking ties at random ranks half before it on average: ``closer + (t - 1) / 2``.

    Examples
    --------
    >>> local_cloaking([[0.0], [10.0]], [[1.0], [9.5]], pairing=[1, 0]).value
    1.0
    >>> local_cloaking([[0.0]] * 3, [[0.0]] * 3, pairing=[1, 2, 0]).value
    1.0
    """
    return _local_cloaking(*_closer_and_tied(original_coords, avatar_coords, pairing, rows))


def _hidden_rate(closer: np.ndarray, tied: np.ndarray) -> Metric:
    found = np.where(closer == 0, 1.0 / tied, 0.0)
    value = float(100.0 * np.mean(1.0 - found)) if len(closer) else float("nan")
    return Metric(
        "hidden_rate", value, TARGETS["hidden_rate"], HIGHER,
        "Share of original records whose closest avatar is not their own: an attacker linking each "
        "record to its closest avatar (equally close ones drawn at random) is wrong this often.",
        {"records": int(len(closer)), "records_tied": int(np.sum((closer == 0) & (tied > 1)))},
    )


def _local_cloaking(closer: np.ndarray, tied: np.ndarray) -> Metric:
    ranked_before = closer + (tied - 1) / 2
    value = float(np.median(ranked_before)) if len(closer) else float("nan")
    return Metric(
        "local_cloaking", value, TARGETS["local_cloaking"], HIGHER,
        "Median number of avatars closer to an original record than its own avatar (half of those as "
        "close): the crowd each record hides in.",
        {"records": int(len(closer)), "records_with_no_closer_avatar": int(np.sum(closer == 0))},
    )


def _closest_original_distances(original_coords, avatar_coords, rows, progress=None) -> tuple[np.ndarray, float]:
    """Each avatar's distances to its two closest originals, and the distance under which they are a tie."""
    original_coords = np.asarray(original_coords, dtype=np.float64)
    avatar_coords = np.asarray(avatar_coords, dtype=np.float64)
    queries = avatar_coords[_rows(rows, len(avatar_coords))]
    distances = nearest_distances(original_coords, queries, min(2, len(original_coords)), progress=progress)
    return distances, tie_tolerance(original_coords, queries)


def distance_to_closest(original_coords, avatar_coords, *, rows=None) -> Metric:
    """Median over avatars of the distance to the closest original (DCR).

    A distance of 0 is an avatar on an original record's values. Where several originals share
    those values (duplicated records), it singles none of them out: ``breakdown`` counts the
    avatars on an original (``avatars_on_an_original``) and, of them, those on values two or more
    originals hold (``avatars_on_shared_values``); the closest distances ratio scores them 1.

    Parameters
    ----------
    rows : array of int, optional
        Avatar positions to evaluate (default: all).

    Examples
    --------
    >>> distance_to_closest([[0.0], [4.0]], [[1.0], [4.0], [7.0]]).value
    1.0
    >>> distance_to_closest([[0.0], [0.0], [4.0]], [[0.0], [4.0], [0.0]]).breakdown
    {'avatars': 3, 'avatars_on_an_original': 3, 'avatars_on_shared_values': 2}
    """
    return _distance_to_closest(*_closest_original_distances(original_coords, avatar_coords, rows))


def closest_distances_ratio(original_coords, avatar_coords, *, rows=None) -> Metric:
    """Median over avatars of d1 / d2, the distances to the two closest originals (NNDR).

    A ratio near 0 means the avatar points at one original; 0 / 0 (two identical originals at
    the avatar's place, up to the last bits of the arithmetic) counts as 1, since the avatar
    singles out neither.

    Examples
    --------
    >>> closest_distances_ratio([[0.0], [4.0]], [[1.0], [2.0], [4.0]]).value
    0.3333333333333333
    """
    distances, tolerance = _closest_original_distances(original_coords, avatar_coords, rows)
    if distances.shape[1] < 2:
        raise ParameterError("the closest distances ratio needs at least two original records")
    return _closest_distances_ratio(distances, tolerance)


def _distance_to_closest(distances: np.ndarray, tolerance: float) -> Metric:
    nearest = distances[:, 0]
    on_original = nearest <= tolerance
    shared = on_original & (distances[:, -1] <= tolerance) if distances.shape[1] > 1 else np.zeros_like(on_original)
    return Metric(
        "distance_to_closest", float(np.median(nearest)) if len(nearest) else float("nan"),
        TARGETS["distance_to_closest"], HIGHER,
        "Median distance from an avatar to the closest original record, in the factor space of the "
        "originals: 0 means avatars sit on real records (on values one record holds, or several share).",
        {"avatars": int(len(nearest)), "avatars_on_an_original": int(on_original.sum()),
         "avatars_on_shared_values": int(shared.sum())},
    )


def _closest_distances_ratio(distances: np.ndarray, tolerance: float) -> Metric:
    d1, d2 = distances[:, 0], distances[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(d2 > tolerance, d1 / d2, 1.0)
    return Metric(
        "closest_distances_ratio", float(np.median(ratio)) if len(ratio) else float("nan"),
        TARGETS["closest_distances_ratio"], HIGHER,
        "Median ratio of an avatar's distances to its closest and second closest original records: "
        "near 0, an avatar points at a single record.",
        {"avatars": int(len(ratio))},
    )


# --------------------------------------------------------------------------- exact matches


def row_direct_match_protection(original: pd.DataFrame, avatars: pd.DataFrame, columns=None) -> Metric:
    """Share (%) of original rows not found verbatim (every column equal) among the avatars.

    Missing values match missing values. Every row is compared (hashing, no sampling).

    Examples
    --------
    >>> o = pd.DataFrame({"a": [1, 2, 3, 4]})
    >>> row_direct_match_protection(o, pd.DataFrame({"a": [2, 2, 9, 9]})).value
    75.0
    """
    names = _compared_columns(original, avatars, columns)
    released = _as_original_dtypes(original, avatars, names)
    original_hashes = pd.util.hash_pandas_object(original[names], index=False).to_numpy()
    avatar_hashes = pd.util.hash_pandas_object(released, index=False).to_numpy()
    found = np.isin(original_hashes, avatar_hashes)
    value = float(100.0 * (1.0 - found.mean())) if len(found) else float("nan")
    return Metric(
        "row_direct_match_protection", value, TARGETS["row_direct_match_protection"], HIGHER,
        "Share of original records that do not appear identically, all columns equal, among the avatars.",
        {"records": int(len(found)), "records_found": int(found.sum())},
    )


def column_direct_match_protection(original: pd.DataFrame, avatars: pd.DataFrame, columns=None) -> Metric:
    """Share (%) of the values that single a record out in one column which the avatars do not repeat.

    For each column, the values held by exactly one original record (the only 104-year-old, the
    only patient of a rare blood type) are looked up among the avatars' values of that column,
    compared exactly as stored; the column's protection is the share of them not found (100 when
    the column has no such value). The metric is the weakest column; ``breakdown`` has them all.
    Missing values are never singling. The metric has no target: it is shown for information.

    Examples
    --------
    >>> o = pd.DataFrame({"age": [30, 30, 41, 104], "blood": ["A", "A", "B", "AB-"]})
    >>> a = pd.DataFrame({"age": [30, 33, 41, 40], "blood": ["A", "B", "A", "A"]})
    >>> m = column_direct_match_protection(o, a)
    >>> m.value, m.breakdown["per_column"]
    (50.0, {'age': 50.0, 'blood': 50.0})
    """
    names = _compared_columns(original, avatars, columns)
    released = _as_original_dtypes(original, avatars, names)
    per_column, singles = {}, {}
    for column in names:
        counts = original[column].value_counts(dropna=True)
        unique_values = counts.index[counts.to_numpy() == 1]
        found = pd.Index(unique_values).isin(released[column].dropna().unique())
        singles[column] = int(len(unique_values))
        per_column[column] = float(100.0 * (1.0 - found.mean())) if len(unique_values) else 100.0
    value = min(per_column.values()) if per_column else float("nan")
    # shown for information (no target): a single coincidence in a small column moves it from
    # 100 to 0, and on a dense domain (dates by day) values reappear by chance
    return Metric(
        "column_direct_match_protection", value, None, HIGHER,
        "Share of the values held by a single original record (in one column) that no avatar repeats "
        "(weakest column).",
        {"per_column": per_column, "singling_values": singles},
    )


def _compared_columns(original: pd.DataFrame, avatars: pd.DataFrame, columns) -> list:
    """The declared columns (all of the original's when none are declared), present on both sides."""
    names = list(column_types(columns)[0]) if columns is not None else list(original.columns)
    check_columns_present(original, names, "original")
    check_columns_present(avatars, names, "avatars")
    return names


def _as_original_dtypes(original: pd.DataFrame, avatars: pd.DataFrame, names) -> pd.DataFrame:
    """The avatars' ``names`` columns in the original dtypes, so that equal values compare equal."""
    released = avatars[names]
    mismatched = [c for c in names if released[c].dtype != original[c].dtype]
    return released.astype({c: _holding_missing(original[c].dtype, released[c]) for c in mismatched}) \
        if mismatched else released


def _holding_missing(dtype, released: pd.Series):
    """``dtype``, or its nullable kind when ``released`` has missing values it cannot hold (values that fewer
    than ``min_count`` records hold are released missing, in whole-number and boolean columns too)."""
    if not released.isna().any() or pd.api.types.is_extension_array_dtype(dtype):
        return dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype):
        return "Int64"
    return dtype


# --------------------------------------------------------------------------- all at once


def privacy(original: pd.DataFrame, avatars: pd.DataFrame, columns, *, pairing=None, ncp=None, weights=None,
            sample_size: int = DEFAULT_SAMPLE_SIZE, random_state=None, known=None, sensitive=None,
            name: str = "table", progress=None) -> list[Metric]:
    """The privacy metrics of a single table's release.

    Parameters
    ----------
    original, avatars : pandas.DataFrame
        The original records and the released ones (same declared columns).
    columns : Mapping[str, str] or sequence of relanon.schema.Column
        The released columns and their types (``drop`` ignored).
    pairing : array of int, optional
        ``pairing[a]`` is the original position of avatar ``a`` (``AvatarResult.pairing``). The
        hidden rate and local cloaking need it and are computed only when it is given.
    ncp : int or "auto", optional
        Axes of the factor space of the originals (default ``"auto"``; use the table's
        avatarization ``ncp``).
    weights : Mapping[str, float], optional
        Column weights of the factor space.
    sample_size : int, default 10,000
        Maximum number of originals (avatars) whose distances are evaluated, drawn at random with
        ``random_state``; every row is used when the table is smaller.
    random_state : int, numpy.random.Generator or None
        Seed of the samples.
    known, sensitive : sequence of str, optional
        When both are given, the inference metrics are added (see :func:`inference`).
    name : str
        The table's name, used in error messages.
    progress : callable, optional
        ``progress(done, total)`` is called as the distance searches advance (the number of
        queries answered, then one unit per remaining measure), so that a long view moves a bar.

    Returns
    -------
    list of Metric
        hidden_rate and local_cloaking (with ``pairing``), distance_to_closest,
        closest_distances_ratio, row_direct_match_protection, column_direct_match_protection,
        then inference_categorical and/or
        inference_continuous (with ``known`` and ``sensitive``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"x": rng.normal(size=30), "g": rng.choice(["a", "b"], 30)})
    >>> [m.name for m in privacy(people, people, {"x": "continuous", "g": "categorical"})]
    ['distance_to_closest', 'closest_distances_ratio', 'row_direct_match_protection', 'column_direct_match_protection']
    """
    check_integer(sample_size, "sample_size", minimum=1)
    types, column_weights = column_types(columns, weights)
    check_columns_present(avatars, types, f"{name} (avatars)")
    space = FactorSpace(types, n_components=ncp, weights=column_weights, random_state=SPACE_SEED, name=name)
    original_coords = space.fit_transform(original)  # the space of metric_space(), coding the originals once
    avatar_coords = space.transform(avatars)
    rng = np.random.default_rng(random_state)
    original_rows = _sample(len(original), sample_size, rng)
    avatar_rows = _sample(len(avatars), sample_size, rng)
    # the bar's units: each search's queries (the hidden rate searches twice), then one per other measure
    searched = 2 * len(original_rows) if pairing is not None else 0
    total = searched + len(avatar_rows) + 2 + bool(known or sensitive)
    report = _Report(progress, total)
    metrics = []
    if pairing is not None:
        closer, tied = _closer_and_tied(original_coords, avatar_coords, pairing, original_rows,
                                        report.part(0, searched))
        metrics += [_hidden_rate(closer, tied), _local_cloaking(closer, tied)]
    distances, tolerance = _closest_original_distances(original_coords, avatar_coords, avatar_rows,
                                                       report.part(searched, len(avatar_rows)))
    metrics.append(_distance_to_closest(distances, tolerance))
    if distances.shape[1] == 2:
        metrics.append(_closest_distances_ratio(distances, tolerance))
    metrics.append(row_direct_match_protection(original, avatars, types))
    report(searched + len(avatar_rows) + 1)
    metrics.append(column_direct_match_protection(original, avatars, types))
    report(searched + len(avatar_rows) + 2)
    if known or sensitive:
        metrics += inference(original, avatars, types, known=known, sensitive=sensitive, ncp=ncp, rows=original_rows)
    report(total)
    return metrics


class _Report:
    """Calls ``progress(done, total)``, if given; :meth:`part` makes the hook of a search whose own
    ``(done, of)`` covers ``size`` units from ``offset``."""

    def __init__(self, progress, total: int):
        self.progress, self.total = progress, total

    def __call__(self, done: int) -> None:
        if self.progress is not None:
            self.progress(done, self.total)

    def part(self, offset: int, size: int):
        if self.progress is None:
            return None
        return lambda done, of: self(offset + size * done // max(of, 1))


def _sample(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    if n <= size:
        return np.arange(n)
    return np.sort(rng.choice(n, size=size, replace=False))
