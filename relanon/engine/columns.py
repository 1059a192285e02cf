"""The columns of a factor space: their declared kinds, the statistics frozen at fit, and the way
back from numbers to each column's values (dates on their time step, integers, decimals as
observed, categories with their dtype).

:class:`~relanon.engine.factor_space.FactorSpace` codes columns with these statistics; the avatar
decoding and the batch statistics of the Dask engine use them too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relanon.common.binning import MAX_DISTINCT_VALUES, few_values
from relanon.common.errors import DataError, ParameterError, Problem, format_examples

NUMERIC_KINDS = ("continuous", "integer", "datetime")
CATEGORICAL_KINDS = ("categorical", "boolean")
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
    ``dtype``, ``step`` and ``step_offset`` (datetimes: the coarsest time step modulo which every
    value, on its wall-clock time, leaves the same remainder ``step_offset``, both in seconds:
    :func:`time_grid`) let decoded values come back in the original dtype and on the values' grid
    (dates at 12:00 stay at 12:00); ``decimals`` (continuous columns: the fewest
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
    step_offset: float = 0.0
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
    step, step_offset = (time_grid(series) if kind == "datetime" else None) or (None, 0.0)
    decimals = decimals_needed(observed) if kind == "continuous" else None
    distinct = np.unique(observed)
    return NumericStatistics(
        name=series.name, kind=kind, weight=weight, mean=mean, std=std, fill=fill,
        missing_share=1.0 - observed.size / len(values) if len(values) else 0.0, dtype=series.dtype, step=step,
        step_offset=step_offset, decimals=decimals, low=float(distinct[0]) if distinct.size else np.nan,
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
    per_second = _NS_PER_SECOND[unit]
    step = stats.step or 1.0 / per_second
    offset = stats.step_offset if stats.step else 0.0
    seconds = np.where(missing, 0.0, seconds)
    tz = getattr(dtype, "tz", None)
    utc_offsets = None
    if tz is not None:  # the grid is on the zone's wall-clock time: local midnights stay local midnights
        utc_offsets = _utc_offsets(np.rint(seconds * per_second).astype(np.int64), tz, unit)
        if not offset and not (utc_offsets % max(round(step * per_second), 1)).any():
            utc_offsets = None  # whole steps apart from UTC (UTC itself, seconds in Paris): the same grid
    if utc_offsets is None:
        ticks = np.rint(_on_grid(seconds, step, offset) * per_second).astype(np.int64)
    else:
        wall = np.rint(_on_grid(seconds + utc_offsets / per_second, step, offset) * per_second).astype(np.int64)
        ticks = _wall_clock_to_utc(wall, utc_offsets, tz, unit)
    stamps = ticks.astype(f"datetime64[{unit}]")
    stamps[missing] = np.datetime64("NaT")
    out = pd.Series(stamps)
    if tz is not None:
        out = out.dt.tz_localize("UTC").dt.tz_convert(tz)
    return out


def _on_grid(seconds: np.ndarray, step: float, offset: float) -> np.ndarray:
    """``seconds`` rounded to the nearest ``offset + n * step``."""
    if not offset:  # whole steps: computed as they always were (same bytes)
        return np.rint(seconds / step) * step
    return np.rint((seconds - offset) / step) * step + offset


def _utc_offsets(utc_ticks: np.ndarray, tz, unit: str) -> np.ndarray:
    """Wall-clock time minus UTC time in ``tz`` at each instant, in ticks of ``unit``."""
    stamps = pd.DatetimeIndex(utc_ticks.astype(f"datetime64[{unit}]")).tz_localize("UTC").tz_convert(tz)
    return stamps.tz_localize(None).as_unit(unit).asi8 - utc_ticks


def _wall_clock_to_utc(wall: np.ndarray, guess: np.ndarray, tz, unit: str) -> np.ndarray:
    """The instants (UTC ticks) that read ``wall`` on the clocks of ``tz``.

    A wall-clock time read twice (clocks set back) is taken with the UTC offset ``guess`` (the
    unrounded value's) when it fits; one never read (clocks set forward) is taken with the offset
    before the change, so it reads as much later as the clocks jumped.
    """
    utc = wall - guess
    first = _utc_offsets(utc, tz, unit)
    found = utc + first == wall
    if found.all():
        return utc
    retry = wall - first
    second = _utc_offsets(retry, tz, unit)
    return np.where(found, utc, np.where(retry + second == wall, retry, wall - np.minimum(first, second)))


def _time_unit(dtype) -> str:
    unit = getattr(dtype, "unit", None)
    return unit if unit is not None else np.datetime_data(dtype)[0]


def time_grid(series: pd.Series) -> tuple[float, float] | None:
    """The grid every value of a datetime column is on: ``(step, offset)`` in seconds, or None if all missing.

    ``step`` is the coarsest of day, hour, minute, second, ms, us, ns (down to the column's unit)
    modulo which every value leaves the same remainder, ``offset`` (``0 <= offset < step``). Values
    are read on their wall-clock time: a time-zone-aware column's in its own zone, so local midnights
    are on the day's grid whatever the daylight saving time.

    Examples
    --------
    >>> time_grid(pd.Series(pd.to_datetime(["2021-03-04", "2021-05-06"])))
    (86400.0, 0.0)
    >>> time_grid(pd.Series(pd.to_datetime(["2021-03-04 12:00", "2021-05-06 12:00"])))
    (86400.0, 43200.0)
    >>> time_grid(pd.Series(pd.to_datetime(["2021-03-04 12:30", "2021-03-04 15:30"])))
    (3600.0, 1800.0)
    >>> time_grid(pd.Series(pd.to_datetime(["2021-03-27", "2021-03-28"])).dt.tz_localize("Europe/Paris"))
    (86400.0, 0.0)
    """
    present = series.notna().to_numpy()
    if not present.any():
        return None
    if getattr(series.dtype, "tz", None) is not None:
        series = series.dt.tz_localize(None)  # wall-clock time in the column's zone
    ticks = series.array.asi8[present]
    ns_per_tick = 10**9 // _NS_PER_SECOND[_time_unit(series.dtype)]
    for step_ns in _TIME_STEPS_NS:
        if step_ns % ns_per_tick == 0:
            remainders = ticks % (step_ns // ns_per_tick)
            if (remainders == remainders[0]).all():
                return step_ns / 10**9, int(remainders[0]) * ns_per_tick / 10**9
    return ns_per_tick / 10**9, 0.0


def merge_time_grids(first: tuple[float, float] | None, second: tuple[float, float] | None) -> tuple[float, float] | None:
    """The grid (:func:`time_grid`) of two parts of a column read at once.

    Examples
    --------
    >>> merge_time_grids((86400.0, 43200.0), (86400.0, 46800.0)), merge_time_grids(None, (60.0, 0.0))
    ((3600.0, 0.0), (60.0, 0.0))
    """
    if first is None or second is None:
        return second if first is None else first
    (step_a, offset_a), (step_b, offset_b) = ((round(x * 10**9) for x in grid) for grid in (first, second))
    for step_ns in _TIME_STEPS_NS:  # each step divides the coarser ones
        if step_ns <= min(step_a, step_b) and offset_a % step_ns == offset_b % step_ns:
            return step_ns / 10**9, offset_a % step_ns / 10**9
    return 1e-9, 0.0
