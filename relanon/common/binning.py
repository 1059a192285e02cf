"""The one binning of a column's values, shared by every comparison of distributions.

The Hellinger metric, the report's pictures and the link-fidelity metric compare an original column
with a released one on bins fixed on the *original*:

- a column with few distinct values (a categorical, a boolean, or numbers from a small set: doses,
  counts, years) gets one bin per original value; a released value that the original never holds
  falls in an ``other`` bin of its own, so a dose of 35.294 mg where the original has 30 and 40 is
  seen as the loss it is;
- any other numeric column (dates as seconds) gets quantile bins of the original: about as many
  original rows in each bin, so a long tail or a cluster of small values is not swallowed by one
  equal-width bin; released values beyond the original range fall in the end bins;
- a missing value is a bin of its own.

Quantiles are read off the sorted values (no interpolation), so values near +-1e308 never overflow;
a constant column is one bin.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

MAX_DISTINCT_VALUES = 50
"""A numeric column with at most this many distinct values may be a small set (see :func:`few_values`)."""

MIN_ROWS_PER_VALUE = 10
"""...provided its values repeat: on average at least this many rows per distinct value."""

MAX_QUANTILE_BINS = 20

OTHER, MISSING = "other", "missing"


def few_values(n_distinct: int, n_present: int) -> bool:
    """Whether a numeric column with ``n_distinct`` values over ``n_present`` rows is a small set of values.

    At most :data:`MAX_DISTINCT_VALUES` distinct values, each held by :data:`MIN_ROWS_PER_VALUE` rows
    on average: doses, counts, a year. Twenty hospitals with twenty different numbers of beds are not.

    Examples
    --------
    >>> few_values(20, 50_000), few_values(20, 20), few_values(34, 200), few_values(300, 100_000)
    (True, False, False, False)
    """
    return 0 < n_distinct <= MAX_DISTINCT_VALUES and n_present >= MIN_ROWS_PER_VALUE * n_distinct


def quantile_bin_count(n_present: int) -> int:
    """Sturges' number of bins, ``ceil(log2 n) + 1``, at most :data:`MAX_QUANTILE_BINS`.

    Examples
    --------
    >>> quantile_bin_count(20), quantile_bin_count(10_000), quantile_bin_count(10**6)
    (6, 15, 20)
    """
    if n_present <= 1:
        return 1
    return min(MAX_QUANTILE_BINS, math.ceil(math.log2(n_present)) + 1)


@dataclass(frozen=True)
class Bins:
    """Bins fixed on an original column; :meth:`codes` places any values in them.

    The bins are, in order: one per original value (``values``) or one per quantile interval
    (``cuts``, the interior cut points), then ``other`` (values the original never holds; value
    bins only), then ``missing``.

    Attributes
    ----------
    values : pandas.Index or None
        The original's distinct values, sorted when they can be, for value bins.
    cuts : numpy.ndarray or None
        Interior cut points of quantile bins: bin ``b`` holds ``cuts[b-1] < x <= cuts[b]``.
    low, high : float
        The original's smallest and largest present values (numeric bins; NaN otherwise), the
        outer edges of a histogram.
    """

    values: pd.Index | None = None
    cuts: np.ndarray | None = None
    low: float = math.nan
    high: float = math.nan

    @property
    def by_value(self) -> bool:
        return self.values is not None

    @property
    def n_bins(self) -> int:
        """Number of bins, ``other`` and ``missing`` included."""
        if self.by_value:
            return len(self.values) + 2
        return len(self.cuts) + 2

    @property
    def edges(self) -> np.ndarray:
        """Histogram edges of quantile bins: ``low``, the cuts, ``high``."""
        if self.by_value:
            raise ValueError("value bins have no edges")
        return np.concatenate([[self.low], self.cuts, [self.high]])

    @property
    def labels(self) -> list[str]:
        """A label per bin (values, or intervals ``[a, b)``), ``other`` and ``missing`` last."""
        if self.by_value:
            return [str(v) for v in self.values] + [OTHER, MISSING]
        edges = self.edges
        return [f"({edges[i]:.4g}, {edges[i + 1]:.4g}]" for i in range(len(edges) - 1)] + [MISSING]

    def codes(self, values) -> np.ndarray:
        """The bin of every value: an int64 array, ``n_bins - 1`` for a missing value.

        ``values`` are what :func:`fit_bins` was given: labels (any hashable values) for value
        bins of a categorical column, floats (NaN missing) otherwise.
        """
        missing = np.asarray(pd.isna(values), dtype=bool).reshape(-1)
        if self.by_value:
            # the distinct values looked up, not every value: the same codes (values equal as labels share their
            # distinct value), without hashing a million labels as Python objects
            distinct_codes, distinct = pd.factorize(_flat(values))
            found = np.asarray(self.values.get_indexer(_as_index(distinct)), dtype=np.int64)
            found[found < 0] = len(self.values)  # never held by the original: "other"
            codes = np.append(found, len(self.values))[distinct_codes]  # missing (-1): set below
        else:
            numbers = np.asarray(values, dtype=np.float64)
            codes = np.searchsorted(self.cuts, numbers, side="left").astype(np.int64)
        codes[missing] = self.n_bins - 1
        return codes

    def shares(self, values) -> np.ndarray:
        """Share of ``values`` in each bin (summing to 1; zeros for no value)."""
        return code_shares(self.codes(values), self.n_bins)


def code_shares(codes: np.ndarray, n_bins: int) -> np.ndarray:
    """Share of the ``codes`` in each of ``n_bins`` bins (summing to 1; zeros for no code)."""
    return np.bincount(codes, minlength=n_bins).astype(np.float64) / max(len(codes), 1)


def fit_bins(values, *, numeric: bool) -> Bins:
    """The bins of an original column.

    Parameters
    ----------
    values : array-like
        The original values: floats with NaN for missing when ``numeric`` (dates as seconds), any
        hashable labels otherwise (None, NaN, NaT and pandas.NA are missing).
    numeric : bool
        Whether the values are numbers. Non-numeric values always get one bin per value; numbers
        too when they are a small set (:func:`few_values`), quantile bins otherwise.

    Examples
    --------
    >>> bins = fit_bins(np.array([1.0, 1.0, 2.0, 2.0, 2.0, np.nan] * 5), numeric=True)
    >>> bins.labels, bins.codes(np.array([2.0, 3.0, np.nan])).tolist()
    (['1.0', '2.0', 'other', 'missing'], [1, 2, 3])
    >>> bins = fit_bins(np.arange(100.0), numeric=True)
    >>> len(bins.cuts), bins.codes(np.array([-5.0, 50.0, 1e308])).tolist()
    (7, [0, 4, 7])
    """
    if not numeric:
        # the distinct labels in their order of appearance, those of the whole column's labels as objects
        labels = _as_index(pd.unique(_flat(values)))
        distinct = labels[~np.asarray(pd.isna(labels), dtype=bool)]
        try:
            distinct = distinct.sort_values()
        except TypeError:  # labels that cannot be ordered: keep their order of appearance
            pass
        return Bins(values=distinct)
    numbers = np.asarray(values, dtype=np.float64).reshape(-1)
    present = np.sort(numbers[np.isfinite(numbers)])  # infinite values (never in a typed column) go to the end bins
    if present.size == 0:
        return Bins(values=pd.Index(np.unique(numbers[~np.isnan(numbers)]), dtype=np.float64))
    return _sorted_bins(present)


def _sorted_bins(present: np.ndarray, distinct: np.ndarray | None = None) -> Bins:
    """The bins of numbers whose finite values, sorted, are ``present`` (at least one); ``distinct``, their distinct
    values when known."""
    distinct = np.unique(present) if distinct is None else distinct
    low, high = float(present[0]), float(present[-1])
    if few_values(len(distinct), len(present)) or len(distinct) == 1:
        return Bins(values=pd.Index(distinct), low=low, high=high)
    count = quantile_bin_count(len(present))
    # the quantiles at 1/count, 2/count...: the smallest values x with F(x) >= q (inverted CDF)
    positions = np.ceil(np.arange(1, count) * len(present) / count).astype(np.int64) - 1
    cuts = np.unique(present[positions])
    cuts = cuts[cuts < high]  # a cut at the maximum would leave the last bin empty
    return Bins(cuts=cuts, low=low, high=high)


class RowBins:
    """Bins of one column fitted on any of its rows and applied to others, the column read once.

    ``codes(a, b)`` gives what ``fit_bins(values[a])`` would give to ``values[a]`` and ``released[b]`` (and the
    number of bins), without fitting labels again: their codes in the bins of every original row are
    renumbered among the values rows ``a`` hold (sorted labels: those of any rows keep the same order). Numbers
    are binned anew on rows ``a`` (their quantiles are theirs). The noise floors compare many pairs of halves of
    an original column this way.

    Examples
    --------
    >>> labels = RowBins(np.array(["b", "a", "c", None], dtype=object), numeric=False)
    >>> [c.tolist() for c in labels.codes(np.array([0, 2]), np.array([1, 2, 3]))[:2]]
    [[0, 1], [2, 1, 3]]
    >>> fit_bins(np.array(["b", "c"], dtype=object), numeric=False).codes(np.array(["a", "c", None], dtype=object)).tolist()
    [2, 1, 3]
    """

    def __init__(self, original, released=None, *, numeric: bool):
        if numeric:
            self.original = np.asarray(original, dtype=np.float64).reshape(-1)
            self.released = self.original if released is None else np.asarray(released, dtype=np.float64).reshape(-1)
            self.labels = None
            # the positions of the finite values, in the order of their values: any rows' values come sorted
            # from it, without sorting them again for each pair of halves
            finite = np.flatnonzero(np.isfinite(self.original))
            self.order = finite[np.argsort(self.original[finite], kind="stable")]
            self.infinite = np.flatnonzero(np.isinf(self.original))
            return
        bins = fit_bins(original, numeric=False)
        self.sorted = bins.values.is_monotonic_increasing
        if self.sorted:  # the bins of any rows are a subset of these, in the same order
            self.original = bins.codes(original)
            self.released = self.original if released is None else bins.codes(released)
        else:  # labels that cannot be ordered keep their order of appearance, which differs from rows to rows
            self.original = np.asarray(_as_index(original), dtype=object)
            self.released = self.original if released is None else np.asarray(_as_index(released), dtype=object)
        self.labels = len(bins.values)

    def halves(self) -> RowBins:
        """The same bins with the original column on both sides (two halves of the original compared)."""
        twin = copy.copy(self)
        twin.released = self.original
        return twin

    def codes(self, original_rows=None, released_rows=None) -> tuple[np.ndarray, np.ndarray, int]:
        """Bin codes of the original's rows ``original_rows`` and the released rows ``released_rows`` (None:
        every row), bins fitted on the former, and the number of bins."""
        o = self.original if original_rows is None else self.original[original_rows]
        r = self.released if released_rows is None else self.released[released_rows]
        if self.labels is None:
            return self._number_codes(o, r, original_rows, released_rows)
        if not self.sorted:
            bins = fit_bins(o, numeric=False)
            return bins.codes(o), bins.codes(r), bins.n_bins
        if original_rows is None:
            return o, r, self.labels + 2
        held = np.flatnonzero(np.bincount(o, minlength=self.labels + 2)[:self.labels])
        return self._renumbered(o, held), self._renumbered(r, held), len(held) + 2

    def _number_codes(self, o: np.ndarray, r: np.ndarray, original_rows,
                      released_rows=None) -> tuple[np.ndarray, np.ndarray, int]:
        """Numbers binned on rows ``original_rows`` (values ``o``) as :func:`fit_bins` bins them: the rows'
        sorted values read off :attr:`order`, a value placed by its position among the distinct ones."""
        rows = None if original_rows is None else np.asarray(original_rows)
        if rows is not None and (rows.dtype == bool or (rows.size > 1 and not (np.diff(rows) > 0).all())):
            bins = fit_bins(o, numeric=True)  # rows repeated or unordered: count them as given
            return bins.codes(o), bins.codes(r), bins.n_bins
        if rows is None:
            present = self.original[self.order]
        else:
            taken = np.zeros(len(self.original), dtype=bool)
            taken[rows] = True
            present = self.original[self.order[taken[self.order]]]
        if present.size == 0:
            bins = fit_bins(o, numeric=True)
            return bins.codes(o), bins.codes(r), bins.n_bins
        # sorted: the distinct values are those unlike the previous one (which of -0.0 and 0.0 stands for both
        # changes no code)
        bins = _sorted_bins(present, present[np.concatenate([[True], present[1:] != present[:-1]])])
        distinct = bins.values.to_numpy(dtype=np.float64) if bins.by_value else None

        def code(numbers: np.ndarray) -> np.ndarray:
            return bins.codes(numbers) if distinct is None else _value_codes(distinct, numbers)

        # every row of the column coded at once, its finite values in their sorted order (a search of sorted
        # numbers among the bins is several times faster than of numbers in any order), then read off by row
        every = np.full(len(self.original), bins.n_bins - 1, dtype=np.int64)  # missing
        every[self.order] = code(self.original[self.order])
        every[self.infinite] = code(self.original[self.infinite])
        if self.released is self.original:  # two halves of the original: both sides read off the same codes
            return _rows(every, rows), _rows(every, released_rows), bins.n_bins
        return _rows(every, rows), code(r), bins.n_bins

    def _renumbered(self, codes: np.ndarray, held: np.ndarray) -> np.ndarray:
        """Codes among the ``held`` values (sorted codes of the whole column's bins), then ``other``, then
        ``missing``."""
        renumbered = np.full(self.labels + 2, len(held), dtype=np.int64)
        renumbered[held] = np.arange(len(held))
        renumbered[self.labels + 1] = len(held) + 1
        return renumbered[codes]


def _rows(values: np.ndarray, rows) -> np.ndarray:
    return values if rows is None else values[rows]


def _value_codes(distinct: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """:meth:`Bins.codes` of numbers in value bins (sorted ``distinct`` floats): a number's position among them,
    ``other`` for a number they do not hold, ``missing`` for NaN."""
    found = np.minimum(np.searchsorted(distinct, numbers), len(distinct) - 1)
    codes = np.where(distinct[found] == numbers, found, len(distinct))
    codes[np.isnan(numbers)] = len(distinct) + 1
    return codes.astype(np.int64)


def _flat(values):
    """Labels as a one-dimensional array-like that :func:`pandas.factorize` takes: a Series, Index or pandas
    array as it is, other values as :func:`_as_index` reads them (a list as objects, not coerced to one type)."""
    if isinstance(values, pd.Series | pd.Index | pd.api.extensions.ExtensionArray):
        return values
    if isinstance(values, np.ndarray):
        return values.reshape(-1)
    return np.asarray(values, dtype=object).reshape(-1)


def _as_index(values) -> pd.Index:
    """Labels as an object Index: categorical, boolean and text columns compare by value."""
    if isinstance(values, pd.Series | pd.Index):
        values = values.array
    return pd.Index(np.asarray(values, dtype=object), dtype=object)


def hellinger(p: np.ndarray, q: np.ndarray) -> float:
    """Hellinger distance ``sqrt(sum_b (sqrt(p_b) - sqrt(q_b))^2 / 2)`` between two share vectors.

    0 for equal shares, 1 for disjoint ones.

    Examples
    --------
    >>> hellinger(np.array([0.5, 0.5]), np.array([1.0, 0.0])).__round__(4)
    0.5412
    """
    return float(np.sqrt(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2) / 2))
