"""The factor space: a FAMD projection of a mixed table that keeps no rows.

Every released column is *coded* into numbers, then the coded table is projected on its principal
axes (DESIGN section 2.1-2.2):

- continuous, integer and datetime columns (datetimes as seconds since the epoch, UTC) are
  standardized with the mean and the population standard deviation frozen at fit;
- categorical and boolean columns are one-hot encoded, each indicator recoded ``(d - p) / sqrt(p)``
  with ``p`` the modality's share frozen at fit (FAMD coding). A missing value of a categorical
  column is a modality of its own;
- a numeric column with missing values at fit gets a temporary two-modality indicator
  ``is_missing(col)`` coded like a categorical, and its missing cells are imputed with the median
  frozen at fit.

With only continuous columns this is a standardized PCA; with only categorical columns it is an
MCA (the coordinates are the MCA's multiplied by the square root of the number of columns). The
column weight ``w`` multiplies every coded column of that column by ``sqrt(w)``, so the column's
share of the total inertia (and its pull on the axes) is multiplied by ``w``.

The indicator block is a scipy sparse matrix and the coded table is never formed. Up to
``DENSE_LIMIT`` coded columns the axes are the exact eigenvectors of the coded covariance matrix,
built from sparse products; beyond (a categorical column with thousands of levels, a city), ARPACK
finds the leading ones from products with the implicit table, so memory stays linear in the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh
from sklearn.base import BaseEstimator

from relanon.common.binning import MAX_DISTINCT_VALUES, few_values
from relanon.common.errors import DataError, ParameterError, Problem, format_examples

logger = logging.getLogger(__name__)

NUMERIC_KINDS = ("continuous", "integer", "datetime")
CATEGORICAL_KINDS = ("categorical", "boolean")
AUTO = "auto"
DEFAULT_NCP = AUTO

# ncp = "auto": the fewest axes whose eigenvalues reach this share of the total inertia, never
# ending inside a group of eigenvalues equal up to TIE_TOLERANCE (relative): the axes of such a
# group are one arbitrary basis of its eigenspace, and neighbours found in part of it would depend
# on the solver. The share comes from measurements (benchmarks/fidelity.py, README "How it works"):
# the axes left out are those of least inertia, and among them is the difference of two correlated
# columns; neighbours that do not agree on it average it away and the avatars' correlations
# inflate (age and BMI at r = 0.66 became 0.82 with 2, 3 or 4 of 5 axes, 0.69 with all 5; the
# correlation difference of the generated twelve-column table is 6.4 at 50 %, 5.5 at 95 %; of the
# demo doctors 6.7 and 3.0), for hidden rates within a few points.
AUTO_INERTIA_SHARE = 0.95
TIE_TOLERANCE = 1e-6
# ...and at most as many axes as the exact neighbour search (a k-d tree) affords on the table:
# without structure, its cost grows steeply with the axes (measured on this project's 2-core
# machine, benchmarks/avatar_speed.py table: 100,000 rows take 1.4 s in 5 axes, 22 s in 10,
# 130 s in 15; 10,000 rows 7 s in 41). rows * axes is kept under NEIGHBOUR_BUDGET: 10,000 rows
# get up to 30 axes, 30,000 rows 10, 60,000 rows and more MIN_AUTO_AXES. An explicit ncp is not capped.
MIN_AUTO_AXES = 5
MAX_AUTO_AXES = 100
NEIGHBOUR_BUDGET = 300_000

# Above this many coded columns the covariance matrix is not formed: its leading eigenvectors are
# found by Lanczos iterations (ARPACK) on the implicit, sparse coded table instead.
DENSE_LIMIT = 1500
_ARPACK_TOL = 1e-10
_SIGN_TIE = 1e-6
_RANK_TOL = 1e-10
_NS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
# Candidate time steps (in nanoseconds) of datetime columns, coarsest first: a column of dates
# stays a column of dates (midnight) after combination.
_TIME_STEPS_NS = (86400 * 10**9, 3600 * 10**9, 60 * 10**9, 10**9, 10**6, 10**3, 1)


# --------------------------------------------------------------------------- column declarations


def column_types(columns, weights=None) -> tuple[dict[str, str], dict[str, float]]:
    """Normalize a column declaration to ``({name: type}, {name: weight})``, ``drop`` removed.

    Parameters
    ----------
    columns : Mapping[str, str] or sequence of relanon.schema.Column
        Column name -> schema type, or the schema's columns (their ``weight`` is used).
    weights : Mapping[str, float], optional
        Column weights; override the weights carried by ``Column`` objects. Default 1.0.

    Examples
    --------
    >>> column_types({"age": "integer", "name": "drop"}, {"age": 2})
    ({'age': 'integer'}, {'age': 2.0})
    """
    if isinstance(columns, Mapping):
        declared = [(name, str(kind), 1.0) for name, kind in columns.items()]
    elif isinstance(columns, Sequence) and not isinstance(columns, str):
        declared = []
        for column in columns:
            if not all(hasattr(column, attr) for attr in ("name", "type")):
                raise ParameterError(
                    "columns must be a mapping {name: type} or a sequence of relanon.schema.Column, "
                    f"got an item {column!r}"
                )
            declared.append((column.name, column.type, float(getattr(column, "weight", 1.0))))
    else:
        raise ParameterError(f"columns must be a mapping {{name: type}} or a sequence of Column, got {type(columns).__name__}")
    allowed = (*NUMERIC_KINDS, *CATEGORICAL_KINDS, "drop")
    bad = [(name, kind) for name, kind, _ in declared if kind not in allowed]
    if bad:
        raise ParameterError(
            f"unknown column type(s): {', '.join(f'{n}: {k!r}' for n, k in bad)}; expected one of: {', '.join(allowed)}"
        )
    types = {name: kind for name, kind, _ in declared if kind != "drop"}
    column_weights = {name: weight for name, kind, weight in declared if kind != "drop"}
    for name, weight in dict(weights or {}).items():
        if name not in types:
            raise ParameterError(f"a weight is given for {name!r}, which is not a released column; columns: {', '.join(types)}")
        column_weights[name] = weight
    for name, weight in column_weights.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float | np.number) or not np.isfinite(weight) or weight <= 0:
            raise ParameterError(f"the weight of column {name!r} must be a positive number, got {weight!r}")
        column_weights[name] = float(weight)
    return types, column_weights


def check_columns_present(frame, names, table: str) -> None:
    """Raise :class:`DataError` when ``frame`` is not a DataFrame holding every column of ``names``."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"table {table!r} cannot be read", [Problem(f"expected a pandas DataFrame, got {type(frame).__name__}", table)])
    missing = [name for name in names if name not in frame.columns]
    if missing:
        raise DataError(
            f"table {table!r} lacks declared columns",
            [Problem(f"declared but absent from the data; present columns: {format_examples(frame.columns, 10)}", table, m) for m in missing],
        )
    duplicated = sorted({c for c in frame.columns[frame.columns.duplicated()] if c in names})
    if duplicated:
        raise DataError(
            f"table {table!r} has duplicated column names",
            [Problem("the column name appears more than once; rename one", table, c) for c in duplicated],
        )


# --------------------------------------------------------------------------- per-column statistics


@dataclass(frozen=True)
class NumericStatistics:
    """What a continuous, integer or datetime column needs to be coded and decoded.

    ``mean``/``std`` standardize (population std; a constant column codes to 0), ``fill`` (the median)
    imputes missing cells, ``missing_share`` is the share of missing cells at fit (0: no indicator).
    ``dtype`` and ``step`` (datetimes: the coarsest time step dividing every value, in seconds) let
    decoded values come back in the original dtype; ``decimals`` (continuous columns: the fewest
    decimals, up to 6, that write every value exactly, or None) lets them keep their precision.
    ``low`` and ``high`` are the range of the present values. ``support`` holds the sorted distinct
    values when they are a small set (:func:`small_support`): avatars are released on them.
    ``categorical_like`` columns (few values, each held by several rows:
    :func:`relanon.common.binning.few_values`) are decoded with the categorical ones.
    """

    name: str
    kind: str
    weight: float
    mean: float
    std: float
    fill: float
    missing_share: float
    dtype: object
    step: float | None = None
    decimals: int | None = None
    low: float = np.nan
    high: float = np.nan
    support: np.ndarray | None = None
    categorical_like: bool = False

    @property
    def has_indicator(self) -> bool:
        return self.missing_share > 0

    @property
    def shares(self) -> np.ndarray:
        """Shares of the indicator's modalities (present, missing)."""
        return np.array([1.0 - self.missing_share, self.missing_share])


@dataclass(frozen=True)
class CategoricalStatistics:
    """The modalities of a categorical or boolean column and their shares at fit.

    ``categories`` lists the observed values; when ``has_missing`` the last share is that of the
    missing-value modality.
    """

    name: str
    kind: str
    weight: float
    categories: pd.Index
    shares: np.ndarray
    has_missing: bool
    dtype: object = None


def numeric_values(series: pd.Series, kind: str, *, table: str = "table") -> np.ndarray:
    """The values of a numeric column as float64, NaN for missing; datetimes in seconds since epoch.

    Raises
    ------
    DataError
        When values are not numbers (not dates for ``datetime``) or are infinite.

    Examples
    --------
    >>> numeric_values(pd.Series(pd.to_datetime(["1970-01-02", None])), "datetime")
    array([86400.,    nan])
    """
    name = str(series.name)
    dtype = series.dtype
    if kind == "datetime":
        if not pd.api.types.is_datetime64_any_dtype(dtype):
            raise DataError(
                f"table {table!r} has a datetime column that does not hold dates",
                [Problem(
                    f"declared datetime but holds {dtype} values; parse it first (pandas.to_datetime, "
                    "or relanon.schema.validation.check_database which applies the schema's types)",
                    table, name, tuple(series.dropna().unique()[:5]),
                )],
            )
        ticks = series.array.asi8.astype(np.float64)
        ticks[series.isna().to_numpy()] = np.nan
        return ticks / _NS_PER_SECOND[_time_unit(dtype)]
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.isnan(values) & series.notna().to_numpy()
        if bad.any():
            raise DataError(
                f"table {table!r} has a {kind} column holding values that are not numbers",
                [Problem(
                    f"{int(bad.sum())} value(s) are not numbers; fix them, or declare the column categorical",
                    table, name, tuple(pd.unique(series[bad])[:5]),
                )],
            )
    infinite = np.isinf(values)
    if infinite.any():
        raise DataError(
            f"table {table!r} has infinite values",
            [Problem(
                f"{int(infinite.sum())} infinite value(s); replace them with a finite value or a missing value",
                table, name, tuple(np.unique(values[infinite])),
            )],
        )
    return values


def numeric_statistics(series: pd.Series, kind: str, weight: float, *, table: str) -> NumericStatistics:
    """Freeze what coding and decoding ``series`` needs (see :class:`NumericStatistics`)."""
    values = numeric_values(series, kind, table=table)
    observed = values[~np.isnan(values)]
    if observed.size:
        mean, std, fill = float(observed.mean()), float(observed.std()), float(np.median(observed))
    else:
        mean, std, fill = 0.0, 0.0, 0.0
    step = time_step(series) if kind == "datetime" else None
    decimals = decimals_needed(observed) if kind == "continuous" else None
    distinct = np.unique(observed)
    return NumericStatistics(
        name=series.name, kind=kind, weight=weight, mean=mean, std=std, fill=fill,
        missing_share=1.0 - observed.size / len(values) if len(values) else 0.0, dtype=series.dtype, step=step,
        decimals=decimals, low=float(distinct[0]) if distinct.size else np.nan,
        high=float(distinct[-1]) if distinct.size else np.nan,
        support=distinct if small_support(distinct.size, observed.size) else None,
        categorical_like=few_values(distinct.size, observed.size),
    )


SHARED_ROWS_PER_VALUE = 20


def small_support(n_distinct: int, n_present: int) -> bool:
    """Whether a numeric column's values come from a small set that avatars must keep to.

    At most ``MAX_DISTINCT_VALUES`` (50) distinct values, or each held by ``SHARED_ROWS_PER_VALUE``
    rows on average (ages of 10,000 people, prices in cents of a million sales).

    Examples
    --------
    >>> small_support(20, 20), small_support(300, 10_000), small_support(3_000, 10_000)
    (True, True, False)
    """
    return 0 < n_distinct and (n_distinct <= MAX_DISTINCT_VALUES or n_present >= SHARED_ROWS_PER_VALUE * n_distinct)


MAX_DECIMALS = 6


def decimals_needed(observed: np.ndarray) -> int | None:
    """The fewest decimals (0 to MAX_DECIMALS) that write every value exactly, or None.

    Examples
    --------
    >>> decimals_needed(np.array([12.5, 3.25, 7.0])), decimals_needed(np.array([1 / 3, 0.1 + 0.2])), decimals_needed(np.array([]))
    (2, None, None)
    """
    if not observed.size:
        return None
    for decimals in range(MAX_DECIMALS + 1):
        # exact: 0.1 + 0.2 (0.30000000000000004) is not 0.3, and must not become it
        if (np.round(observed, decimals) == observed).all():
            return decimals
    return None


def categorical_statistics(series: pd.Series, kind: str, weight: float) -> CategoricalStatistics:
    """Freeze the modalities of ``series`` and their shares (missing is a modality of its own)."""
    codes, categories = factorize(series)
    counts = np.bincount(codes[codes >= 0], minlength=len(categories)).astype(np.float64)
    n_missing = int((codes < 0).sum())
    if n_missing:
        counts = np.append(counts, n_missing)
    return CategoricalStatistics(
        name=series.name, kind=kind, weight=weight, categories=pd.Index(categories),
        shares=counts / max(len(series), 1), has_missing=bool(n_missing), dtype=series.dtype,
    )


def factorize(series: pd.Series):
    try:
        return pd.factorize(series, sort=True)
    except TypeError:  # values that cannot be ordered: keep their order of appearance
        return pd.factorize(series, sort=False)


def category_codes(series: pd.Series, stats: CategoricalStatistics) -> np.ndarray:
    """Position of each value among the fitted modalities; -1 for values never seen at fit.

    Missing values get the missing modality (the last one) when there was one at fit.
    """
    codes = np.asarray(stats.categories.get_indexer(series), dtype=np.int64)
    if stats.has_missing:
        codes[series.isna().to_numpy()] = len(stats.shares) - 1
    return codes


def restore_numeric(values: np.ndarray, missing: np.ndarray, stats: NumericStatistics) -> pd.Series:
    """Float values (and a missing mask) back to the column's original dtype.

    Integers are rounded, continuous values to the column's precision (``decimals``); datetimes
    are rounded to the column's time step and converted back to their unit and time zone;
    nullable dtypes get ``pd.NA``. A numeric column that was stored as text comes back as float64
    (continuous) or Int64 (integer).

    Examples
    --------
    >>> stats = numeric_statistics(pd.Series([1, 2, 3], name="n"), "integer", 1.0, table="t")
    >>> restore_numeric(np.array([1.4, 2.6]), np.array([False, False]), stats).tolist()
    [1, 3]
    """
    values = np.asarray(values, dtype=np.float64).copy()
    missing = np.asarray(missing, dtype=bool) | np.isnan(values)
    dtype = stats.dtype
    if stats.kind == "datetime":
        return _restore_datetime(values, missing, stats)
    if stats.kind == "integer" or pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
        values = np.rint(values)
    elif stats.decimals is not None:  # amounts in cents stay in cents
        values = np.round(values, stats.decimals)
    values[missing] = np.nan
    if isinstance(dtype, np.dtype) and dtype.kind in "iub":
        if missing.any():  # the column had no missing value at fit; keep its kind, allow NA
            return pd.Series(pd.array(values, dtype="Int64" if dtype.kind != "b" else "boolean"))
        return pd.Series(values.astype(dtype))
    if isinstance(dtype, np.dtype) and dtype.kind == "f":
        return pd.Series(values.astype(dtype))
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_numeric_dtype(dtype):
        return pd.Series(pd.array(values, dtype=dtype))
    if pd.api.types.is_object_dtype(dtype):
        exact = pd.array(values, dtype="Int64" if stats.kind == "integer" else "Float64")
        return pd.Series(exact).astype(object).where(~missing, None)
    return pd.Series(pd.array(values, dtype="Int64" if stats.kind == "integer" else "float64"))


def _restore_datetime(seconds: np.ndarray, missing: np.ndarray, stats: NumericStatistics) -> pd.Series:
    dtype = stats.dtype
    unit = _time_unit(dtype)
    step = stats.step or 1.0 / _NS_PER_SECOND[unit]
    seconds = np.rint(np.where(missing, 0.0, seconds) / step) * step
    ticks = np.rint(seconds * _NS_PER_SECOND[unit]).astype(np.int64)
    stamps = ticks.astype(f"datetime64[{unit}]")
    stamps[missing] = np.datetime64("NaT")
    out = pd.Series(stamps)
    tz = getattr(dtype, "tz", None)
    if tz is not None:
        out = out.dt.tz_localize("UTC").dt.tz_convert(tz)
    return out


def _time_unit(dtype) -> str:
    unit = getattr(dtype, "unit", None)
    return unit if unit is not None else np.datetime_data(dtype)[0]


def time_step(series: pd.Series) -> float | None:
    """The coarsest step (seconds) among day, hour, ... dividing every value, or None if all missing."""
    ticks = series.array.asi8[series.notna().to_numpy()]
    if ticks.size == 0:
        return None
    ns_per_tick = 10**9 // _NS_PER_SECOND[_time_unit(series.dtype)]
    for step_ns in _TIME_STEPS_NS:
        if step_ns % ns_per_tick == 0 and not (ticks % (step_ns // ns_per_tick)).any():
            return step_ns / 10**9
    return ns_per_tick / 10**9


# --------------------------------------------------------------------------- the coded table


@dataclass(frozen=True)
class _Coded:
    """A frame coded for the projection: standardized numbers and sparse modality indicators.

    The FAMD-coded table is ``Z = [numeric, (indicators - shares) * scale]``; it is never formed.
    """

    numeric: np.ndarray  # (n, q) standardized, weighted
    indicators: sp.csr_matrix  # (n, m) 0/1
    shares: np.ndarray  # (m,)
    scale: np.ndarray  # (m,) sqrt(weight / share), 0 for a share of 0 or 1

    @property
    def n_rows(self) -> int:
        return self.numeric.shape[0]

    def times(self, vectors: np.ndarray) -> np.ndarray:
        """``Z @ vectors`` for ``vectors`` of shape (q + m, b)."""
        q = self.numeric.shape[1]
        head, tail = vectors[:q], vectors[q:] * self.scale[:, None]
        return self.numeric @ head + self.indicators @ tail - (self.shares @ tail)[None, :]

    def transposed_times(self, rows: np.ndarray) -> np.ndarray:
        """``Z.T @ rows`` for ``rows`` of shape (n, b)."""
        top = self.numeric.T @ rows
        bottom = (self.indicators.T @ rows - np.outer(self.shares, rows.sum(axis=0))) * self.scale[:, None]
        return np.vstack([top, bottom])

    def covariance(self) -> np.ndarray:
        """``Z.T @ Z / n`` formed from sparse products (dense, (q + m) squared)."""
        n = self.n_rows
        numeric, ind, p, s = self.numeric, self.indicators, self.shares, self.scale
        means = numeric.mean(axis=0)
        nn = numeric.T @ numeric / n
        nd = (np.asarray((ind.T @ numeric).T) / n - np.outer(means, p)) * s[None, :]
        dd = (ind.T @ ind).toarray() / n
        dd = (dd - np.outer(p, p)) * np.outer(s, s)
        return np.block([[nn, nd], [nd.T, dd]])


# --------------------------------------------------------------------------- the estimator


class FactorSpace(BaseEstimator):
    """FAMD projection of a mixed table, with every statistic frozen at fit and no row kept.

    Parameters
    ----------
    columns : Mapping[str, str] or sequence of relanon.schema.Column
        Column name -> schema type (continuous, integer, datetime, categorical, boolean; ``drop``
        columns are ignored). Other columns of the frames are ignored.
    n_components : int or "auto", default "auto"
        Number of axes kept. ``"auto"`` (or None): the fewest axes reaching ``AUTO_INERTIA_SHARE`` of
        the total inertia, never ending inside a group of equal eigenvalues, at most
        :func:`max_auto_axes` (see :func:`auto_axes`). An integer is capped at the number of
        informative dimensions of the data (``n_components_`` tells the number kept).
    weights : Mapping[str, float], optional
        Column weights (default 1.0, or the ``Column.weight``): a column of weight ``w`` has its coded
        columns multiplied by ``sqrt(w)``, hence its share of the total inertia multiplied by ``w``.
    random_state : int, numpy.random.Generator or None
        Only used above ``DENSE_LIMIT`` coded columns (start vector of the Lanczos iterations);
        below, the covariance matrix is decomposed exactly. ``None`` uses a fixed start vector:
        the same data always give the same axes.
    name : str
        The table's name, used in error messages.

    Attributes
    ----------
    columns_ : tuple of str
        The projected columns, in declaration order.
    statistics_ : dict
        Column name -> :class:`NumericStatistics` or :class:`CategoricalStatistics`.
    feature_names_ : tuple of str
        Names of the coded columns (``age``, ``sex=F``, ``is_missing(bmi)=True``...).
    n_dims_ : int
        Number of informative dimensions: non-constant numeric columns plus, per categorical block,
        its number of modalities minus one.
    n_components_ : int
        Number of axes kept.
    components_ : ndarray of shape (n_components_, len(feature_names_))
        The axes in the coded space; each axis' largest loading is positive (fixed signs).
    eigenvalues_, explained_inertia_ : ndarray of shape (n_components_,)
        Inertia along each axis, and its share of ``total_inertia_``.
    total_inertia_ : float
        Sum of the variances of the coded columns.

    Notes
    -----
    ``transform`` accepts missing values (imputed with the fitted medians, or sent to the fitted
    missing modality) and values never seen at fit: such a value simply matches no fitted modality
    (all its indicators are 0). A row projected alone gets exactly the coordinates it gets in any
    batch.

    Examples
    --------
    >>> frame = pd.DataFrame({"age": [20, 35, 50, 65], "sex": ["F", "M", "F", "M"]})
    >>> space = FactorSpace({"age": "integer", "sex": "categorical"}).fit(frame)
    >>> space.n_components_, space.explained_inertia_.round(3)   # ncp auto: 95 % of the inertia needs both
    (2, array([0.724, 0.276]))
    >>> FactorSpace({"age": "integer", "sex": "categorical"}, n_components=2).fit(frame).transform(frame.iloc[[0]]).round(3)
    array([[-1.656, -0.242]])
    """

    def __init__(self, columns, n_components=None, weights=None, random_state=None, name="table"):
        self.columns = columns
        self.n_components = n_components
        self.weights = weights
        self.random_state = random_state
        self.name = name

    # ------------------------------------------------------------------ fit / transform

    def fit(self, frame: pd.DataFrame, y=None) -> FactorSpace:
        """Freeze the column statistics and the axes of ``frame``."""
        self._fit_and_code(frame)
        return self

    def fit_transform(self, frame: pd.DataFrame, y=None) -> np.ndarray:
        """Fit, then return the coordinates of ``frame`` (coded once)."""
        coded = self._fit_and_code(frame)
        return coded.times(self.components_.T)

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """Coordinates of the rows of ``frame``, shape (n_rows, n_components_)."""
        self._check_fitted()
        check_columns_present(frame, self.columns_, self.name)
        return self._code(frame).times(self.components_.T)

    def inverse_transform(self, coords) -> pd.DataFrame:
        """Rows whose coordinates are ``coords``, in the original units and dtypes.

        Numeric values are read from the reconstructed coded table; a categorical gets the modality
        whose reconstructed indicator is the largest, and a numeric column is missing when its
        missing indicator wins. With all components kept, the original rows come back exactly.
        """
        self._check_fitted()
        coords = np.asarray(coords, dtype=np.float64)
        if coords.ndim != 2 or coords.shape[1] != self.n_components_:
            raise ParameterError(f"coords must have shape (n, {self.n_components_}), got {coords.shape}")
        out = {}
        position = 0
        offset = sum(isinstance(s, NumericStatistics) for s in self.statistics_.values())
        for name in self.columns_:
            stats = self.statistics_[name]
            if isinstance(stats, NumericStatistics):
                z = coords @ self.components_[:, position]
                position += 1
                values = z / np.sqrt(stats.weight) * stats.std + stats.mean
                missing = np.zeros(len(coords), dtype=bool)
                if stats.has_indicator:
                    missing = self._winning_modality(coords, offset, stats.shares, stats.weight) == 1
                    offset += 2
                out[name] = restore_numeric(values, missing, stats)
            else:
                winner = self._winning_modality(coords, offset, stats.shares, stats.weight)
                offset += len(stats.shares)
                out[name] = _restore_categories(winner, stats)
        return pd.DataFrame(out)

    # ------------------------------------------------------------------ internals

    def _check_fitted(self) -> None:
        if not hasattr(self, "components_"):
            raise ParameterError("this FactorSpace is not fitted yet; call fit(frame) first")

    def _fit_and_code(self, frame) -> _Coded:
        types, weights, auto = self._declared()
        check_columns_present(frame, types, self.name)
        if len(frame) == 0:
            raise DataError(f"table {self.name!r} is empty", [Problem("a factor space cannot be fitted on zero rows", self.name)])
        stats = {}
        for name in (c for c in types if types[c] in NUMERIC_KINDS):
            stats[name] = numeric_statistics(frame[name], types[name], weights[name], table=self.name)
        for name in (c for c in types if types[c] in CATEGORICAL_KINDS):
            stats[name] = categorical_statistics(frame[name], types[name], weights[name])
        self._freeze(stats)
        coded = self._code(frame)
        cap = max_auto_axes(len(frame)) if auto else int(self.n_components)
        # one eigenvalue beyond the cap tells whether the last axis kept ends a group of equal ones
        eigenvalues, vectors = self._principal_axes(coded, min(cap + 1, self.n_dims_))
        total_inertia = float(np.sum(coded.numeric.var(axis=0)) + np.sum(coded.scale**2 * coded.shares * (1 - coded.shares)))
        self._keep_axes(eigenvalues, vectors, total_inertia, auto, cap)
        return coded

    @classmethod
    def from_statistics(cls, columns, statistics, covariance, numeric_variance, *, n_components=None, weights=None,
                        random_state=None, name="table", rows_searched: int) -> FactorSpace:
        """A fitted space from statistics reduced over the partitions of a table, without its rows.

        The batch engine (:mod:`relanon.engine.space_statistics`) accumulates, over partitions, what
        :meth:`fit` computes from the whole table: the column statistics and the covariance of the
        coded table. The axes are then the same (up to floating-point rounding) as a fit on all rows.

        Parameters
        ----------
        statistics : dict
            Column name -> :class:`NumericStatistics` or :class:`CategoricalStatistics`.
        covariance : ndarray of shape (width, width)
            ``Z.T @ Z / n`` of the coded table, in the order of ``feature_names_``.
        numeric_variance : ndarray
            Variance of each coded numeric column (they start the coded table).
        rows_searched : int
            Rows searched together for neighbours (a batch): ``ncp: auto`` keeps at most
            :func:`max_auto_axes` of them.
        """
        space = cls(columns, n_components=n_components, weights=weights, random_state=random_state, name=name)
        types, _, auto = space._declared()
        missing = [c for c in types if c not in statistics]
        if missing:
            raise ParameterError(f"table {name!r}: no statistics for column(s) {', '.join(map(repr, missing))}")
        space._freeze({c: statistics[c] for c in types})
        covariance = np.asarray(covariance, dtype=np.float64)
        width = len(space.feature_names_)
        if covariance.shape != (width, width):
            raise ParameterError(f"table {name!r}: covariance must have shape {(width, width)}, got {covariance.shape}")
        cap = max_auto_axes(rows_searched) if auto else int(space.n_components)
        eigenvalues, vectors = _covariance_axes(covariance, min(cap + 1, space.n_dims_))
        scale, shares = space._indicator_scale()
        total_inertia = float(np.sum(numeric_variance) + np.sum(scale**2 * shares * (1 - shares)))
        space._keep_axes(eigenvalues, vectors, total_inertia, auto, cap)
        return space

    def _declared(self):
        """The declared columns, their weights, and whether ``ncp`` is automatic (validated)."""
        types, weights = column_types(self.columns, self.weights)
        if not types:
            raise ParameterError(f"table {self.name!r}: no column to project (all are dropped or none declared)")
        auto = self.n_components is None or (isinstance(self.n_components, str) and self.n_components == AUTO)
        if not auto and (
            isinstance(self.n_components, bool) or not isinstance(self.n_components, int | np.integer) or self.n_components < 1
        ):
            raise ParameterError(f"n_components (ncp) must be a positive integer or 'auto', got {self.n_components!r}")
        return types, weights, auto

    def _freeze(self, stats: dict) -> None:
        """Set the column statistics (numeric columns first, as the coded table orders them)."""
        numeric = [c for c, s in stats.items() if isinstance(s, NumericStatistics)]
        categorical = [c for c, s in stats.items() if not isinstance(s, NumericStatistics)]
        self.columns_ = tuple(numeric + categorical)
        self.statistics_ = {c: stats[c] for c in self.columns_}
        self.feature_names_ = tuple(self._feature_names())
        self.n_dims_ = sum(_informative_dimensions(s) for s in self.statistics_.values())

    def _indicator_scale(self):
        """FAMD scales and shares of the coded indicator columns (as :func:`_indicator_block` sets them)."""
        blocks = []
        for name in self.columns_:
            stats = self.statistics_[name]
            if isinstance(stats, NumericStatistics):
                if stats.has_indicator:
                    blocks.append((np.zeros(0, dtype=np.int64), stats.shares, stats.weight))
            else:
                blocks.append((np.zeros(0, dtype=np.int64), stats.shares, stats.weight))
        _, shares, scale = _indicator_block(blocks, 0)
        return scale, shares

    def _keep_axes(self, eigenvalues, vectors, total_inertia: float, auto: bool, cap: int) -> None:
        self.total_inertia_ = total_inertia
        if auto:
            kept = auto_axes(eigenvalues, self.total_inertia_, cap=cap, complete=len(eigenvalues) >= self.n_dims_)
        else:
            kept = min(cap, len(eigenvalues))
            if 0 < kept < len(eigenvalues) and _tied(eigenvalues[kept - 1], eigenvalues[kept]):
                logger.warning(
                    "table %r: ncp=%d ends inside a group of equal eigenvalues (%.6g): the neighbours depend on which "
                    "basis of that eigenspace the solver returns; ncp: auto avoids it", self.name, kept, eigenvalues[kept],
                )
        eigenvalues, vectors = eigenvalues[:kept], vectors[:, :kept]
        self.eigenvalues_ = eigenvalues
        self.explained_inertia_ = eigenvalues / self.total_inertia_ if self.total_inertia_ > 0 else eigenvalues
        self.components_ = vectors.T
        self.n_components_ = len(eigenvalues)
        self.n_features_in_ = len(self.columns_)

    def _feature_names(self):
        for name in self.columns_:
            if isinstance(self.statistics_[name], NumericStatistics):
                yield name
        for name in self.columns_:
            stats = self.statistics_[name]
            if isinstance(stats, NumericStatistics):
                if stats.has_indicator:
                    yield from (f"is_missing({name})=False", f"is_missing({name})=True")
            else:
                yield from (f"{name}={value}" for value in stats.categories)
                if stats.has_missing:
                    yield f"{name}=<missing>"

    def _code(self, frame: pd.DataFrame) -> _Coded:
        n = len(frame)
        numeric_cols, blocks = [], []
        for name in self.columns_:
            stats = self.statistics_[name]
            if isinstance(stats, NumericStatistics):
                values = numeric_values(frame[name], stats.kind, table=self.name)
                missing = np.isnan(values)
                values = np.where(missing, stats.fill, values)
                z = (values - stats.mean) / stats.std if stats.std > 0 else np.zeros(n)
                numeric_cols.append(z * np.sqrt(stats.weight))
                if stats.has_indicator:
                    blocks.append((missing.astype(np.int64), stats.shares, stats.weight))
            else:
                blocks.append((category_codes(frame[name], stats), stats.shares, stats.weight))
        # columns_ lists numeric columns first, so their missing indicators precede the
        # categorical blocks, in the order of feature_names_
        numeric = np.column_stack(numeric_cols) if numeric_cols else np.zeros((n, 0))
        return _Coded(numeric, *_indicator_block(blocks, n))

    def _principal_axes(self, coded: _Coded, wanted: int):
        width = coded.numeric.shape[1] + coded.indicators.shape[1]
        if wanted == 0:
            return np.zeros(0), np.zeros((width, 0))
        if width <= DENSE_LIMIT or wanted >= width // 2:
            return _covariance_axes(coded.covariance(), wanted)
        # no seed given: a fixed start vector all the same, so that the same data give the same axes
        seed = 0 if self.random_state is None else self.random_state
        eigenvalues, vectors = _lanczos(coded, wanted, np.random.default_rng(seed))
        return _kept_axes(eigenvalues, vectors)

    def _winning_modality(self, coords, offset, shares, weight) -> np.ndarray:
        width = len(shares)
        z = coords @ self.components_[:, offset:offset + width]
        with np.errstate(divide="ignore", invalid="ignore"):
            indicators = z * np.sqrt(shares) / np.sqrt(weight) + shares
        return np.argmax(indicators, axis=1) if width else np.full(len(coords), -1)


def _covariance_axes(covariance: np.ndarray, wanted: int):
    """The ``wanted`` leading eigenpairs of a coded covariance matrix, signs fixed."""
    width = covariance.shape[0]
    if wanted == 0:
        return np.zeros(0), np.zeros((width, 0))
    # the whole decomposition: LAPACK's subset drivers may return nothing when the subset
    # boundary falls inside a large group of equal eigenvalues (an unrelated many-level column)
    eigenvalues, vectors = scipy.linalg.eigh(covariance)
    return _kept_axes(eigenvalues[::-1][:wanted], vectors[:, ::-1][:, :wanted])


def _kept_axes(eigenvalues, vectors):
    keep = eigenvalues > _RANK_TOL * max(float(eigenvalues[0]), 1.0)
    return eigenvalues[keep], _fix_signs(vectors[:, keep])


def max_auto_axes(n_rows: int) -> int:
    """The most axes ``ncp: auto`` keeps on a table of ``n_rows`` rows (see ``NEIGHBOUR_BUDGET``).

    Examples
    --------
    >>> max_auto_axes(1_000), max_auto_axes(10_000), max_auto_axes(30_000), max_auto_axes(1_000_000)
    (100, 30, 10, 5)
    """
    return int(min(MAX_AUTO_AXES, max(MIN_AUTO_AXES, NEIGHBOUR_BUDGET // max(n_rows, 1))))


def _tied(a: float, b: float) -> bool:
    return abs(a - b) <= TIE_TOLERANCE * max(abs(a), abs(b))


def auto_axes(eigenvalues, total_inertia: float, *, share: float | None = None, cap: int = MAX_AUTO_AXES,
              complete: bool = True) -> int:
    """The number of axes ``ncp: auto`` keeps.

    The fewest leading axes whose eigenvalues reach ``share`` (default ``AUTO_INERTIA_SHARE``) of
    ``total_inertia``, at most ``cap``. When the last of them belongs to a group of equal
    eigenvalues (relative ``TIE_TOLERANCE``), the whole group is kept if it fits under ``cap``,
    and none of it otherwise, so that the axes kept span the same space whichever basis of the
    group the solver returned. ``eigenvalues`` are the leading ones, decreasing, one beyond
    ``cap`` when there are more; ``complete`` says they are all of them.

    Examples
    --------
    Three equal eigenvalues after a first one: reaching 50 % needs two axes, which would cut the
    group; the group fits under the cap, so all four are kept; under a cap of 3, only the first:

    >>> auto_axes([4.0, 1.0, 1.0, 1.0, 0.5], 10.0, share=0.5)
    4
    >>> auto_axes([4.0, 1.0, 1.0, 1.0, 0.5], 10.0, share=0.5, cap=3, complete=False)
    1
    """
    eigenvalues = np.asarray(eigenvalues, dtype=np.float64)
    if eigenvalues.size == 0:
        return 0
    share = AUTO_INERTIA_SHARE if share is None else share
    reached = np.cumsum(eigenvalues) >= share * total_inertia * (1 - 1e-12)
    kept = int(np.argmax(reached)) + 1 if reached.any() else len(eigenvalues)
    kept = min(kept, cap, len(eigenvalues))
    if kept == len(eigenvalues) or not _tied(eigenvalues[kept - 1], eigenvalues[kept]):
        return kept
    start = kept - 1
    while start > 0 and _tied(eigenvalues[start - 1], eigenvalues[start]):
        start -= 1
    end = kept  # one past the group's last known axis
    while end < len(eigenvalues) and _tied(eigenvalues[end - 1], eigenvalues[end]):
        end += 1
    group_known_to_end = end < len(eigenvalues) or complete
    if group_known_to_end and end <= cap:
        return end
    if start > 0:
        return start
    logger.warning(
        "the leading %d+ eigenvalues are equal (%.6g): more axes than the %d allowed would be needed to keep "
        "them all; the %d kept are one basis of that eigenspace", end, eigenvalues[0], cap, cap,
    )
    return cap


def _informative_dimensions(stats) -> int:
    """A non-constant number counts 1; a block of modalities held by some row counts their number - 1."""
    numeric = int(stats.std > 0) if isinstance(stats, NumericStatistics) else 0
    if isinstance(stats, NumericStatistics) and not stats.has_indicator:
        return numeric
    return numeric + max(int(np.count_nonzero(stats.shares)) - 1, 0)


def _indicator_block(blocks, n):
    """Sparse 0/1 indicators, shares and FAMD scales of the categorical blocks."""
    rows, cols, shares, scales = [], [], [], []
    offset = 0
    for codes, block_shares, weight in blocks:
        seen = codes >= 0
        rows.append(np.flatnonzero(seen))
        cols.append(codes[seen] + offset)
        shares.append(block_shares)
        with np.errstate(divide="ignore"):
            scale = np.sqrt(weight / block_shares)
        # a modality held by every row (or none) carries no information: code it 0
        scale[(block_shares <= 0) | (block_shares >= 1)] = 0.0
        scales.append(scale)
        offset += len(block_shares)
    if not blocks:
        return sp.csr_matrix((n, 0)), np.zeros(0), np.zeros(0)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    matrix = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, offset))
    return matrix, np.concatenate(shares), np.concatenate(scales)


def _lanczos(coded: _Coded, wanted: int, rng: np.random.Generator):
    """Leading eigenpairs of ``Z.T Z / n`` without forming it (ARPACK, seeded start vector).

    Axes inside a cluster of equal eigenvalues (the modalities of an unrelated high-cardinality
    column all have inertia 1) are one basis of that cluster: deterministic under the seed, not
    unique.
    """
    width = coded.numeric.shape[1] + coded.indicators.shape[1]
    n = coded.n_rows

    def covariance_times(vectors):
        return coded.transposed_times(coded.times(vectors.reshape(width, -1))) / n

    operator = LinearOperator((width, width), matvec=covariance_times, matmat=covariance_times, dtype=np.float64)
    try:
        eigenvalues, vectors = eigsh(operator, k=wanted, v0=rng.standard_normal(width), tol=_ARPACK_TOL)
    except ArpackNoConvergence as partial:  # keep the axes that converged
        logger.warning("only %d of %d axes converged", len(partial.eigenvalues), wanted)
        eigenvalues, vectors = partial.eigenvalues, partial.eigenvectors
    order = np.argsort(eigenvalues)[::-1]
    return eigenvalues[order], vectors[:, order]


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Make each axis' largest loading positive (the first one, among near-ties), as svd_flip does."""
    vectors = vectors.copy()
    for j in range(vectors.shape[1]):
        magnitude = np.abs(vectors[:, j])
        lead = int(np.argmax(magnitude >= magnitude.max() * (1 - _SIGN_TIE)))
        if vectors[lead, j] < 0:
            vectors[:, j] = -vectors[:, j]
    return vectors


def _restore_categories(winner: np.ndarray, stats: CategoricalStatistics) -> pd.Series:
    missing = winner >= len(stats.categories)
    values = pd.Series(stats.categories.take(np.where(missing, -1, winner), allow_fill=True, fill_value=None))
    try:
        return values.astype(stats.dtype)
    except (TypeError, ValueError):  # e.g. int64 codes with a missing value: keep pandas' choice
        return values
