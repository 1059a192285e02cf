"""The factor space of a table fitted from its partitions: statistics accumulated, then reduced exactly.

A table too large for one machine is read partition by partition. What
:meth:`~relanon.engine.factor_space.FactorSpace.fit` computes from the whole table is accumulated over
the partitions and merged, so that the space is the one a fit on all rows gives, up to the rounding of
sums taken in another order:

1. :func:`summarize` reads, per column of a partition: row and present counts, mean and sum of squared
   deviations (merged with Chan's formula), range, decimals, time step, and the distinct values with
   their counts while they are few (at most :func:`distinct_cap`: enough to decide whether avatars keep
   to a column's small set of values); a categorical column's values and counts. :func:`merge_summaries`
   merges two partitions' summaries (associative: a tree of merges in a fixed order gives the same
   bytes whatever the number of workers).
2. The median of a numeric column (its imputation value) comes from the counts of its distinct values,
   or, for a column of many values, from :func:`select_ranks`: histograms over the partitions narrow
   down the values at the middle ranks, which are then read exactly.
3. :func:`finish_statistics` freezes the column statistics; :func:`coded_moments` sums, per partition,
   the cross-products of the coded table (``Z.T Z``), merged by :func:`merge_moments`;
   :func:`space_from_moments` builds the space from them. A table coded into more than
   :data:`~relanon.engine.factor_space.DENSE_LIMIT` columns (a column of thousands of categories)
   takes its axes from a seeded sample coded with the exact statistics (:func:`space_from_sample`).

Every function here is plain numpy and pandas: the Dask engine (:mod:`relanon.distributed`) runs them
on the partitions of its workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from relanon.common.binning import MAX_DISTINCT_VALUES, few_values
from relanon.common.errors import ParameterError
from relanon.engine.columns import (
    MAX_DECIMALS,
    NUMERIC_KINDS,
    SHARED_ROWS_PER_VALUE,
    CategoricalStatistics,
    NumericStatistics,
    column_types,
    decimals_needed,
    factorize,
    merge_time_grids,
    numeric_values,
    small_support,
    time_grid,
)
from relanon.engine.factor_space import FactorSpace, max_auto_axes, one_blas_thread

_NO_FIT = MAX_DECIMALS + 1  # no number of decimals writes every value
_NO_VALUE = -1  # no value seen yet


@dataclass(frozen=True)
class NumericSummary:
    """What a partition (or several, merged) says about a numeric column."""

    name: str
    kind: str
    weight: float
    dtype: object
    rows: int
    present: int
    mean: float
    m2: float  # sum of squared deviations from the mean
    low: float
    high: float
    decimals: int  # _NO_VALUE, 0..MAX_DECIMALS, or _NO_FIT
    step: float | None
    step_offset: float  # with step, the column's grid (relanon.engine.columns.time_grid)
    values: np.ndarray | None  # sorted distinct present values; None beyond the cap
    counts: np.ndarray | None


@dataclass(frozen=True)
class CategoricalSummary:
    """What a partition (or several, merged) says about a categorical or boolean column."""

    name: str
    kind: str
    weight: float
    dtype: object
    rows: int
    values: pd.Series  # distinct present values, in order of first appearance
    counts: np.ndarray
    missing: int


def distinct_cap(n_rows: int) -> int:
    """Distinct values of a numeric column counted exactly: beyond, the column has neither a small set of
    values nor few values (:func:`~relanon.engine.columns.small_support`, ``few_values``).

    Examples
    --------
    >>> distinct_cap(100), distinct_cap(1_000_000)
    (50, 50000)
    """
    return max(MAX_DISTINCT_VALUES, n_rows // SHARED_ROWS_PER_VALUE)


def summarize(frame: pd.DataFrame, columns, weights=None, *, cap: int, table: str = "table") -> dict:
    """Per column of ``frame``, its :class:`NumericSummary` or :class:`CategoricalSummary`.

    Examples
    --------
    >>> part = pd.DataFrame({"age": [30, 40, 40], "sex": ["F", "M", None]})
    >>> found = summarize(part, {"age": "integer", "sex": "categorical"}, cap=50)
    >>> found["age"].mean, found["age"].values.tolist(), found["sex"].missing
    (36.666666666666664, [30.0, 40.0], 1)
    """
    types, column_weights = column_types(columns, weights)
    out = {}
    for name, kind in types.items():
        series = frame[name]
        if kind in NUMERIC_KINDS:
            out[name] = _numeric_summary(series, kind, column_weights[name], cap, table)
        else:
            present = series.dropna()
            codes, uniques = pd.factorize(present, sort=False)
            out[name] = CategoricalSummary(
                name=name, kind=kind, weight=column_weights[name], dtype=series.dtype, rows=len(series),
                values=pd.Series(uniques, dtype=series.dtype),
                counts=np.bincount(codes, minlength=len(uniques)).astype(np.int64),
                missing=int(len(series) - len(present)),
            )
    return out


def _numeric_summary(series: pd.Series, kind: str, weight: float, cap: int, table: str) -> NumericSummary:
    values = numeric_values(series, kind, table=table)
    observed = values[~np.isnan(values)]
    distinct, counts = np.unique(observed, return_counts=True)
    if observed.size:
        mean = float(observed.mean())
        m2 = float(np.sum((observed - mean) ** 2))
        decimals = decimals_needed(observed) if kind == "continuous" else _NO_VALUE
        decimals = _NO_FIT if decimals is None else decimals
    else:
        mean, m2, decimals = 0.0, 0.0, _NO_VALUE
    step, step_offset = (time_grid(series) if kind == "datetime" else None) or (None, 0.0)
    return NumericSummary(
        name=series.name, kind=kind, weight=weight, dtype=series.dtype, rows=len(series), present=int(observed.size),
        mean=mean, m2=m2, low=float(distinct[0]) if distinct.size else np.nan,
        high=float(distinct[-1]) if distinct.size else np.nan, decimals=decimals,
        step=step, step_offset=step_offset,
        values=distinct if distinct.size <= cap else None, counts=counts.astype(np.int64) if distinct.size <= cap else None,
    )


def merge_summaries(first: dict, second: dict, *, cap: int) -> dict:
    """The summaries of two parts of a table, as if read at once (``first``'s rows come first)."""
    if set(first) != set(second):
        raise ParameterError(f"summaries of different columns: {sorted(first)} and {sorted(second)}")
    return {name: _merge(first[name], second[name], cap) for name in first}


def _merge(a, b, cap: int):
    if isinstance(a, CategoricalSummary):
        values = pd.concat([a.values, b.values], ignore_index=True)
        codes, uniques = pd.factorize(values, sort=False)  # first appearance: a's values, then b's new ones
        counts = np.bincount(codes, weights=np.concatenate([a.counts, b.counts]), minlength=len(uniques))
        return replace(a, rows=a.rows + b.rows, values=pd.Series(uniques, dtype=a.dtype),
                       counts=counts.astype(np.int64), missing=a.missing + b.missing)
    present = a.present + b.present
    if a.present == 0 or b.present == 0:
        mean, m2 = (b.mean, b.m2) if a.present == 0 else (a.mean, a.m2)
    else:
        delta = b.mean - a.mean
        mean = a.mean + delta * b.present / present
        m2 = a.m2 + b.m2 + delta * delta * a.present * b.present / present
    if _NO_FIT in (a.decimals, b.decimals):
        decimals = _NO_FIT
    else:
        decimals = max(a.decimals, b.decimals)
    grid = merge_time_grids(*((s.step, s.step_offset) if s.step is not None else None for s in (a, b)))
    values = counts = None
    if a.values is not None and b.values is not None:
        both = np.concatenate([a.values, b.values])
        distinct, inverse = np.unique(both, return_inverse=True)
        if distinct.size <= cap:
            values = distinct
            counts = np.bincount(inverse.reshape(-1), weights=np.concatenate([a.counts, b.counts]),
                                 minlength=distinct.size).astype(np.int64)
    return replace(
        a, rows=a.rows + b.rows, present=present, mean=mean, m2=m2, low=np.fmin(a.low, b.low),
        high=np.fmax(a.high, b.high), decimals=decimals, step=grid[0] if grid else None,
        step_offset=grid[1] if grid else 0.0, values=values,
        counts=counts,
    )


def median_ranks(summary: NumericSummary) -> tuple[int, ...]:
    """Ranks (0-based, among the sorted present values) whose values make the column's median."""
    n = summary.present
    if n == 0:
        return ()
    return ((n - 1) // 2, n // 2) if n % 2 == 0 else (n // 2,)


def median_of(summary: NumericSummary, at_ranks: dict[int, float] | None = None) -> float:
    """The median of the column's present values (as ``numpy.median``), from its distinct values and
    their counts, or from the values found at :func:`median_ranks` (``at_ranks``)."""
    ranks = median_ranks(summary)
    if not ranks:
        return 0.0
    if summary.values is not None:
        ends = np.cumsum(summary.counts)
        found = [float(summary.values[np.searchsorted(ends, r, side="right")]) for r in ranks]
    else:
        if at_ranks is None or any(r not in at_ranks for r in ranks):
            raise ParameterError(f"column {summary.name!r} has many values: its median needs the values at ranks {ranks}")
        found = [float(at_ranks[r]) for r in ranks]
    return float(np.mean(np.array(found)))


def finish_statistics(summaries: dict, medians: dict | None = None) -> dict:
    """The frozen column statistics (:class:`NumericStatistics`, :class:`CategoricalStatistics`) of the
    whole table, from its merged summaries and the medians of its many-valued numeric columns."""
    medians = dict(medians or {})
    out = {}
    for name, summary in summaries.items():
        if isinstance(summary, CategoricalSummary):
            out[name] = _categorical_statistics(summary)
            continue
        fill = medians[name] if name in medians else median_of(summary)
        n_distinct = len(summary.values) if summary.values is not None else None
        out[name] = NumericStatistics(
            name=name, kind=summary.kind, weight=summary.weight,
            mean=summary.mean if summary.present else 0.0,
            std=float(np.sqrt(summary.m2 / summary.present)) if summary.present else 0.0, fill=fill,
            missing_share=1.0 - summary.present / summary.rows if summary.rows else 0.0, dtype=summary.dtype,
            step=summary.step, step_offset=summary.step_offset,
            decimals=None if summary.decimals in (_NO_VALUE, _NO_FIT) else summary.decimals,
            low=summary.low, high=summary.high,
            support=summary.values if n_distinct is not None and small_support(n_distinct, summary.present) else None,
            categorical_like=n_distinct is not None and few_values(n_distinct, summary.present),
        )
    return out


def _categorical_statistics(summary: CategoricalSummary) -> CategoricalStatistics:
    # the order of the whole column's factorization: sorted, or of first appearance when unsortable
    codes, categories = factorize(summary.values)
    counts = np.zeros(len(categories), dtype=np.float64)
    np.add.at(counts, codes, summary.counts)
    if summary.missing:
        counts = np.append(counts, summary.missing)
    return CategoricalStatistics(
        name=summary.name, kind=summary.kind, weight=summary.weight, categories=pd.Index(categories),
        shares=counts / max(summary.rows, 1), has_missing=bool(summary.missing), dtype=summary.dtype,
    )


# --------------------------------------------------------------------------- exact ranks of many values


def select_ranks(histogram: Callable, gather: Callable, ranks, low: float, high: float, *, bins: int = 4096,
                 limit: int = 2_000_000, rounds: int = 16) -> dict[int, float]:
    """The values at ``ranks`` of the sorted present values of a column spread over partitions.

    ``histogram(lo, hi, bins)`` returns, for ``bins`` equal bins of ``[lo, hi]``, how many values fall
    in each and their smallest and largest (summed, and reduced, over the partitions: see
    :func:`bin_counts` and :func:`merge_bins`); ``gather(lo, hi)`` returns the values in ``[lo, hi]``
    of every partition. Each round narrows a rank to one bin, tightened to the values it holds; a bin
    of at most ``limit`` values, or of one repeated value, ends the search. Usually one histogram and
    one gather.

    Examples
    --------
    >>> values = np.array([5.0, 1.0, 3.0, 3.0, 9.0])
    >>> select_ranks(lambda lo, hi, b: bin_counts(values, lo, hi, b),
    ...              lambda lo, hi: values_between(values, lo, hi), [2], 1.0, 9.0, bins=2)
    {2: 3.0}
    """
    out = {}
    for rank in ranks:
        lo, hi, before = float(low), float(high), 0
        for _ in range(rounds):
            if lo == hi:
                out[rank] = lo
                break
            counts, smallest, largest = histogram(lo, hi, bins)
            position = int(np.searchsorted(np.cumsum(counts) + before, rank, side="right"))
            before += int(counts[:position].sum())
            lo, hi = float(smallest[position]), float(largest[position])
            if counts[position] <= limit and lo < hi:
                inside = np.sort(gather(lo, hi))
                out[rank] = float(inside[rank - before])
                break
        else:
            raise ParameterError(f"rank {rank} not found within {rounds} rounds")
    return out


def _edges(lo: float, hi: float, bins: int) -> np.ndarray:
    edges = np.linspace(lo, hi, bins + 1)
    edges[0], edges[-1] = lo, hi
    return edges


def bin_counts(values: np.ndarray, lo: float, hi: float, bins: int):
    """How many of the present ``values`` fall in each of ``bins`` equal bins of ``[lo, hi]``, and the
    smallest and largest of them (``inf`` and ``-inf`` in an empty bin): what :func:`select_ranks` reads."""
    values = values[(values >= lo) & (values <= hi)]
    index = np.clip(np.searchsorted(_edges(lo, hi, bins), values, side="right") - 1, 0, bins - 1)
    smallest, largest = np.full(bins, np.inf), np.full(bins, -np.inf)
    np.minimum.at(smallest, index, values)
    np.maximum.at(largest, index, values)
    return np.bincount(index, minlength=bins), smallest, largest


def merge_bins(first, second):
    """Two partitions' :func:`bin_counts`, as if counted at once."""
    return first[0] + second[0], np.fmin(first[1], second[1]), np.fmax(first[2], second[2])


def values_between(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The present ``values`` in ``[lo, hi]``."""
    return values[(values >= lo) & (values <= hi)]


# --------------------------------------------------------------------------- the coded table's moments


@dataclass(frozen=True)
class CodedMoments:
    """Sums over rows of the coded table of a partition (or several): enough for its covariance."""

    rows: int
    numeric_sum: np.ndarray  # (q,)
    numeric_products: np.ndarray  # (q, q)
    cross: np.ndarray  # (m, q) indicators.T @ numeric
    indicator_products: np.ndarray  # (m, m)


def coder(statistics: dict, name: str = "table") -> FactorSpace:
    """A space holding ``statistics`` only (no axes yet): it codes partitions for :func:`coded_moments`."""
    space = FactorSpace({c: s.kind for c, s in statistics.items()}, weights={c: s.weight for c, s in statistics.items()},
                        name=name)
    space._freeze(statistics)
    return space


def coded_width(statistics: dict) -> int:
    """Number of coded columns of a table with these statistics."""
    return len(coder(statistics).feature_names_)


def coded_moments(frame: pd.DataFrame, space: FactorSpace) -> CodedMoments:
    """The cross-products of ``frame`` coded with the frozen statistics of ``space`` (see :func:`coder`)."""
    coded = space._code(frame)
    numeric, indicators = coded.numeric, coded.indicators
    with one_blas_thread():  # sums over the rows in one order, as FactorSpace.fit makes them
        numeric_products = numeric.T @ numeric
    return CodedMoments(
        rows=coded.n_rows, numeric_sum=numeric.sum(axis=0), numeric_products=numeric_products,
        cross=np.asarray(indicators.T @ numeric), indicator_products=(indicators.T @ indicators).toarray(),
    )


def merge_moments(a: CodedMoments, b: CodedMoments) -> CodedMoments:
    return CodedMoments(a.rows + b.rows, a.numeric_sum + b.numeric_sum, a.numeric_products + b.numeric_products,
                        a.cross + b.cross, a.indicator_products + b.indicator_products)


def space_from_moments(columns, statistics: dict, moments: CodedMoments, *, n_components=None, weights=None,
                       random_state=None, name: str = "table", rows_searched: int) -> FactorSpace:
    """The factor space whose statistics and coded covariance are these (see the module documentation)."""
    scale, shares = coder(statistics, name)._indicator_scale()
    n = moments.rows
    means = moments.numeric_sum / n
    nn = moments.numeric_products / n
    nd = (moments.cross.T / n - np.outer(means, shares)) * scale[None, :]
    dd = (moments.indicator_products / n - np.outer(shares, shares)) * np.outer(scale, scale)
    covariance = np.block([[nn, nd], [nd.T, dd]])
    variance = np.diag(nn) - means**2
    return FactorSpace.from_statistics(columns, statistics, covariance, variance, n_components=n_components,
                                       weights=weights, random_state=random_state, name=name,
                                       rows_searched=rows_searched)


def space_from_sample(columns, statistics: dict, sample: pd.DataFrame, *, n_components=None, weights=None,
                      random_state=None, name: str = "table", rows_searched: int) -> FactorSpace:
    """A space with the table's exact statistics and axes fitted on a seeded ``sample`` of its rows.

    For tables coded into many columns (beyond ``DENSE_LIMIT``), whose covariance is too large to
    reduce: the axes come from Lanczos iterations on the coded sample.
    """
    space = FactorSpace(columns, n_components=n_components, weights=weights, random_state=random_state, name=name)
    types, _, auto = space._declared()
    space._freeze({c: statistics[c] for c in types})
    coded = space._code(sample)
    cap = max_auto_axes(rows_searched) if auto else int(space.n_components)
    eigenvalues, vectors = space._principal_axes(coded, min(cap + 1, space.n_dims_))
    scale, shares = space._indicator_scale()
    total = float(np.sum(coded.numeric.var(axis=0)) + np.sum(scale**2 * shares * (1 - shares)))
    space._keep_axes(eigenvalues, vectors, total, auto, cap)
    return space
