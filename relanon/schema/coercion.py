"""Give a column its declared type: parse numbers, booleans and dates stored as text, normalize keys.

Each coercer takes a column and whether it came from text storage (CSV, SQLite TEXT), and returns
the coerced column with the values that do not fit (an :class:`Issue`), never raising: the problems
of every column are collected by :mod:`relanon.schema.validation` and reported at once. The rules
(dtypes, missing markers, date spellings) are documented there.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

MISSING_MARKERS = ("", "NA", "N/A", "NaN", "null", "None")
"""Text read as a missing value (case-insensitive, surrounding spaces ignored)."""

INTEGER, STRING = "integer", "string"  # the two kinds of key

_MARKERS = frozenset(marker.lower() for marker in MISSING_MARKERS)
_BOOLEAN_WORDS = {
    **dict.fromkeys(("true", "t", "yes", "y", "1", "1.0"), True),
    **dict.fromkeys(("false", "f", "no", "n", "0", "0.0"), False),
}
# 18 digits at most: longer numbers may not fit int64 and are identifiers rather than quantities.
_CANONICAL_INTEGER = r"0|-?[1-9][0-9]{0,17}"
_DATE_TRIPLE = r"\d{1,4}[-/. ]\d{1,2}[-/. ]\d{1,4}"
_MONTH_NAME = r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
_DAY_MONTH = r"^\s*(\d{1,2})[/.-](\d{1,2})[/.-]\d{2,4}"
_TIMES = ("", " %H:%M", " %H:%M:%S")
DATETIME_UNIT = "us"

_TODO = {
    "continuous": "fix or remove these rows, or declare the column categorical if these are codes",
    "integer": "fix or remove these rows, or declare the column categorical if these are codes",
    "boolean": "write true/false, 1/0 or yes/no, or declare the column categorical",
    "datetime": "write dates as ISO 8601 (2024-01-31 or 2024-01-31 13:45:00), "
    "or declare the column categorical",
    "key": "fix or remove these rows",
}


class Issue(NamedTuple):
    """Values of one column that do not fit, and what the message says about them."""

    values: pd.Series
    what: str  # "is not a number|are not numbers": the verb for one value, then for several
    todo: str




def _is_number(dtype) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _is_bool(dtype) -> bool:
    return pd.api.types.is_bool_dtype(dtype)


def _is_datetime(dtype) -> bool:
    return isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype)


def _normalize(series: pd.Series) -> pd.Series:
    """The values as numbers, booleans, dates, or ``str`` text: nothing else is left to handle."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        series = pd.Series(np.asarray(series, dtype=object), index=series.index, name=series.name)
        dtype = series.dtype
    if _is_number(dtype) or _is_bool(dtype) or _is_datetime(dtype):
        return series
    if dtype == object:
        kind = pd.api.types.infer_dtype(series, skipna=True)
        if kind in ("integer", "floating", "mixed-integer-float", "decimal"):
            return pd.to_numeric(series, dtype_backend="numpy_nullable")
        if kind == "boolean":
            return series.astype("boolean")
    # Everything else (strings, dates as objects, mixed values) is read through its text,
    # which the parsers below understand; missing values stay missing.
    return series.astype("str")


def _narrow(values: pd.Series) -> pd.Series:
    """A nullable column without missing values becomes its plain numpy dtype."""
    if values.isna().any():
        return values
    if isinstance(values.dtype, pd.Int64Dtype):
        return values.astype("int64")
    if isinstance(values.dtype, pd.BooleanDtype):
        return values.astype("bool")
    return values


def _nonmissing(values: pd.Series) -> pd.Series:
    return values[values.notna()]


class _Text(NamedTuple):
    """A text column factorized once: every parser works on the distinct values only."""

    codes: np.ndarray
    uniques: pd.Series
    missing: np.ndarray  # per unique: empty or a missing marker

    @classmethod
    def of(cls, text: pd.Series) -> _Text:
        codes, uniques = pd.factorize(text)
        uniques = pd.Series(uniques, dtype="str")
        return cls(codes, uniques, _is_marker(uniques).to_numpy())

    def take(self, per_unique, index) -> pd.Series:
        """Spread values computed per unique back to every row (missing where the row is)."""
        return pd.Series(pd.array(per_unique).take(self.codes, allow_fill=True), index=index)

    def rows(self, unique_mask: np.ndarray) -> np.ndarray:
        """Row mask of the rows whose value is one of the masked uniques."""
        return np.append(unique_mask, False)[self.codes]


def _bad(original: pd.Series, mask) -> pd.Series:
    return original[np.asarray(mask, dtype=bool)]


# --------------------------------------------------------------------------- continuous, integer


def _to_continuous(series: pd.Series, from_text: bool):
    values = _normalize(series)
    if _is_datetime(values.dtype):
        return _all_missing(series, "float64"), [_dates_issue(series)]
    if _is_number(values.dtype) or _is_bool(values.dtype):
        return pd.Series(values.to_numpy(dtype="float64", na_value=np.nan), index=series.index), []
    numbers, unparsed = _parse_numbers(values)
    bad = _bad(series, unparsed)
    issue = Issue(bad, "is not a number|are not numbers", _number_todo(bad, "continuous"))
    return numbers, _nonempty([issue])


def _to_integer(series: pd.Series, from_text: bool):
    values = _normalize(series)
    if _is_datetime(values.dtype):
        return _all_missing(series, "Int64"), [_dates_issue(series)]
    issues = []
    if _is_bool(values.dtype):
        values = values.astype("Int64")
    elif not _is_number(values.dtype):
        values, unparsed = _parse_numbers(values, integer=True)
        bad = _bad(series, unparsed)
        issues.append(Issue(bad, "is not a number|are not numbers", _number_todo(bad, "integer")))
    whole, not_whole = _whole_numbers(values)
    issues.append(
        Issue(_bad(series, not_whole), "is not a whole number|are not whole numbers", _TODO["integer"])
    )
    return _narrow(whole), _nonempty(issues)


def _parse_numbers(text: pd.Series, *, integer: bool = False) -> tuple[pd.Series, np.ndarray]:
    """Numbers written as text, and the mask of the cells that are neither numbers nor missing.

    Integers come as ``Int64`` (no float detour that would lose digits beyond 2**53), other
    numbers as ``float64``. Clean columns take pyarrow's exact, fast cast; the others go
    through pandas, and only their failures are compared with the missing markers.
    """
    target = pa.int64() if integer else pa.float64()
    arrow = pa.array(text.array)
    arrow = pc.if_else(pc.equal(arrow, ""), pa.scalar(None, arrow.type), arrow)
    try:
        parsed = pc.cast(arrow, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    else:
        numbers = parsed.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        return pd.Series(numbers.array, index=text.index), np.zeros(len(text), dtype=bool)
    if integer:
        numbers = pd.to_numeric(text, errors="coerce", dtype_backend="numpy_nullable")
    else:
        numbers = pd.to_numeric(text, errors="coerce").astype("float64")
    failed = (numbers.isna() & text.notna()).to_numpy()
    unparsed = failed.copy()
    unparsed[failed] = ~_is_marker(text[failed]).to_numpy()
    return numbers, unparsed


NUMBER_WITH_COMMA = r"[-+]?(?:\d*,\d+|\d{1,3}(?:,\d{3})+(?:\.\d+)?)"
"""A number written with a decimal comma (``58,77``) or thousands separators (``1,234.50``): not read as one."""


def _number_todo(bad: pd.Series, kind: str) -> str:
    """What to do about values that are not numbers; numbers written with a comma are named as such."""
    if len(bad) and bool(bad.astype(str).str.strip().str.fullmatch(NUMBER_WITH_COMMA).all()):
        return ("these are numbers written with a comma, which relanon reads neither as a decimal comma nor as a "
                "thousands separator: write them with a decimal point and no separator (58.77, 1234.5)")
    return _TODO[kind]


def _is_marker(text: pd.Series) -> pd.Series:
    """Whether each cell is missing: absent, empty, or one of :data:`MISSING_MARKERS`."""
    return text.isna() | text.str.strip().str.lower().isin(_MARKERS)


def _whole_numbers(values: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """``Int64`` values, and the mask of numbers that are not whole or do not fit 64 bits."""
    dtype = values.dtype
    if pd.api.types.is_integer_dtype(dtype):
        if dtype.kind == "u" or str(dtype).startswith("UInt"):
            too_big = (values > np.iinfo("int64").max).fillna(False).to_numpy(dtype=bool)
            return values.where(~too_big).astype("Int64"), too_big
        return values.astype("Int64"), np.zeros(len(values), dtype=bool)
    floats = values.to_numpy(dtype="float64", na_value=np.nan)
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(floats) & (floats == np.round(floats)) & (np.abs(floats) < 2.0**63)
    not_whole = ~np.isnan(floats) & ~whole
    return pd.Series(np.where(whole, floats, np.nan), index=values.index).astype("Int64"), not_whole


# --------------------------------------------------------------------------- boolean


def _to_boolean(series: pd.Series, from_text: bool):
    values = _normalize(series)
    if _is_bool(values.dtype):
        return _narrow(values.astype("boolean")), []
    if _is_datetime(values.dtype):
        return _all_missing(series, "boolean"), [_dates_issue(series)]
    if _is_number(values.dtype):
        floats = values.to_numpy(dtype="float64", na_value=np.nan)
        fits = np.isnan(floats) | (floats == 0) | (floats == 1)
        result = pd.Series(pd.array(np.where(fits & ~np.isnan(floats), floats == 1, None), dtype="boolean"))
        result.index = series.index
        issue = Issue(_bad(series, ~fits), "is neither 1 nor 0|are neither 1 nor 0", _TODO["boolean"])
        return _narrow(result), _nonempty([issue])
    text = _Text.of(values)
    words = text.uniques.str.strip().str.lower().map(_BOOLEAN_WORDS)
    unknown = ~text.missing & words.isna().to_numpy()
    flags = pd.array(words.where(~text.missing).tolist(), dtype="boolean")
    issue = Issue(
        _bad(series, text.rows(unknown)), "is not a true/false value|are not true/false values", _TODO["boolean"]
    )
    return _narrow(text.take(flags, series.index)), _nonempty([issue])


# --------------------------------------------------------------------------- datetime


def _to_datetime(series: pd.Series, from_text: bool):
    values = _normalize(series)
    if _is_datetime(values.dtype):
        return values, []  # already dates: keep their unit (and every nanosecond)
    if values.isna().all():
        return _all_missing(series, f"datetime64[{DATETIME_UNIT}]"), []
    if _is_number(values.dtype) or _is_bool(values.dtype):
        issue = Issue(
            _nonmissing(series),
            "is a number, not a date|are numbers, not dates",
            "store dates as text such as 2024-01-31, or declare the column continuous or integer",
        )
        return _all_missing(series, f"datetime64[{DATETIME_UNIT}]"), [issue]
    text = _Text.of(values)
    dates = _parse_dates(text.uniques.where(~text.missing))
    unparsed = ~text.missing & dates.isna().to_numpy()
    issue = Issue(_bad(series, text.rows(unparsed)), "is not a date|are not dates", _TODO["datetime"])
    return text.take(dates, series.index), _nonempty([issue])


def _parse_dates(text: pd.Series) -> pd.Series:
    """Dates from distinct strings (NaT where a string is not a date), whatever their format.

    ISO 8601 first (fast, exact); then the common slash and dot formats, reading the day first
    when a value shows it (``31/12/2020``); then dateutil for the rest, limited to strings that
    hold a whole date so that ``"10:30"`` or ``"March"`` do not take today's date.
    """
    parsed = _parse_with(text, format="ISO8601")
    left = text[parsed.isna() & text.notna()]
    if len(left):
        day_first = _reads_day_first(left)
        for fmt in _slash_formats(day_first):
            parsed = _fill_dates(parsed, _parse_with(left, format=fmt))
            left = text[parsed.isna() & text.notna()]
            if not len(left):
                break
    if len(left):
        whole_date = left.str.contains(_DATE_TRIPLE) | (
            left.str.contains(_MONTH_NAME) & (left.str.count(r"\d+") >= 2)
        )
        left = left[whole_date]
        if len(left):
            parsed = _fill_dates(parsed, _parse_with(left, format="mixed", dayfirst=_reads_day_first(left)))
    return parsed


def _slash_formats(day_first: bool) -> list[str]:
    order = "%d/%m" if day_first else "%m/%d"
    dates = [f"{order}/%Y", f"{order}/%y", "%d.%m.%Y", "%d.%m.%y", "%Y/%m/%d"]
    return [date + time for date in dates for time in _TIMES]


def _reads_day_first(text: pd.Series) -> bool:
    parts = text.str.extract(_DAY_MONTH).apply(pd.to_numeric)
    return bool((parts[0] > 12).any() and not (parts[1] > 12).any())


def _parse_with(text: pd.Series, **options) -> pd.Series:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas warns about formats inferred element by element
        try:
            parsed = pd.to_datetime(text, errors="coerce", **options)
        except (ValueError, TypeError):
            # different offsets in one column: keep the instants, on the common UTC clock
            parsed = pd.to_datetime(text, errors="coerce", utc=True, **options)
    return parsed.dt.as_unit(DATETIME_UNIT)


def _fill_dates(parsed: pd.Series, more: pd.Series) -> pd.Series:
    """``parsed`` with its gaps filled from ``more``, on a common time zone when they differ."""
    if parsed.dt.tz != more.dt.tz:
        parsed, more = _utc(parsed), _utc(more)
    return parsed.where(parsed.notna(), more.reindex(parsed.index))


def _utc(dates: pd.Series) -> pd.Series:
    return dates.dt.tz_localize("UTC") if dates.dt.tz is None else dates.dt.tz_convert("UTC")


# --------------------------------------------------------------------------- categorical, drop, keys


def _to_categorical(series: pd.Series, from_text: bool):
    values = _normalize(series)
    if _is_number(values.dtype):
        whole, not_whole = _whole_numbers(values)
        if not_whole.any():
            return pd.Series(values.to_numpy(dtype="float64", na_value=np.nan), index=series.index), []
        return _narrow(whole), []
    if _is_bool(values.dtype) or _is_datetime(values.dtype) or not from_text:
        return values, []
    text = _Text.of(values)
    codes = ~text.missing & text.uniques.notna().to_numpy()
    if codes.any() and text.uniques[codes].str.fullmatch(_CANONICAL_INTEGER).all():
        numbers = pd.to_numeric(text.uniques.where(codes), dtype_backend="numpy_nullable")
        return _narrow(text.take(numbers.astype("Int64"), series.index)), []
    return values.where(values != ""), []


def _as_it_came(series: pd.Series, from_text: bool):
    if from_text and pd.api.types.is_string_dtype(series.dtype):
        return series.where(series != ""), []
    return series.copy(), []


def coerce_key(series: pd.Series, kind: str | None, from_text: bool):
    """A key as ``int64``/``Int64`` (kind ``"integer"``) or ``str``; markers in text are missing."""
    values = _normalize(series)
    if _is_number(values.dtype):
        whole, not_whole = _whole_numbers(values)
        if kind == STRING or (kind is None and not_whole.any()):
            return _key_text(values), []
        issue = Issue(_bad(series, not_whole), "is not a whole number|are not whole numbers", _TODO["key"])
        return _narrow(whole), _nonempty([issue])
    if _is_bool(values.dtype) or _is_datetime(values.dtype):
        values = values.astype("str")
    keys = values.where(~_is_marker(values))
    if kind is None:
        present = keys.dropna()
        integers = from_text and len(present) and present.str.fullmatch(_CANONICAL_INTEGER).all()
        kind = INTEGER if integers else STRING
    if kind == STRING:
        return keys, []
    numbers, unparsed = _parse_numbers(keys, integer=True)
    whole, not_whole = _whole_numbers(numbers)
    issue = Issue(
        _bad(series, unparsed | not_whole),
        "is not a whole number|are not whole numbers, so they match no parent key",
        _TODO["key"],
    )
    return _narrow(whole), _nonempty([issue])


def _key_text(values: pd.Series) -> pd.Series:
    """Numbers as key strings: ``12.0`` is ``"12"``, as the parent key would be written."""
    whole, not_whole = _whole_numbers(values)
    text = whole.astype("str")
    if not_whole.any():
        text = text.where(~not_whole, values.astype("str"))
    return text.where(values.notna())


def key_kind(key: pd.Series) -> str:
    return INTEGER if pd.api.types.is_integer_dtype(key.dtype) else STRING


def _all_missing(series: pd.Series, dtype: str) -> pd.Series:
    return pd.Series(pd.array([None] * len(series), dtype=dtype), index=series.index)


def _dates_issue(series: pd.Series) -> Issue:
    return Issue(_nonmissing(series), "is a date|are dates", "declare the column datetime")


def _nonempty(issues: list[Issue]) -> list[Issue]:
    return [issue for issue in issues if len(issue.values)]


COERCERS = {
    "continuous": _to_continuous,
    "integer": _to_integer,
    "boolean": _to_boolean,
    "datetime": _to_datetime,
    "categorical": _to_categorical,
    "drop": _as_it_came,
}
