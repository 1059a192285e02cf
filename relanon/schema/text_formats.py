"""How a text store wrote each column, so that a CSV release writes its values the same way.

When a column declared boolean, datetime, continuous or integer is read from text (CSV, SQLite
TEXT), :func:`learn_format` finds how its values were written: the words for true and false
(``Y``/``N``, ``yes``/``no``, ``1``/``0``), the date format when one format held for every value
(``31/12/2020``, ``12/31/2020``, ``31.12.2020``, ``2013-01-01T11:00:00Z``), and whether numbers
had a decimal point (``7.0``) or never used scientific notation. The formats travel with the table
in ``frame.attrs`` (:data:`FORMATS_KEY`, a :class:`TextFormats`), through coercion and anonymization
to the released table, and the CSV writer applies them (:func:`as_text`). Columns written the way
relanon writes by default (ISO dates, ``true``/``false``) learn nothing, and Parquet and database
servers keep their native types. Formats hold no value of the data, only spellings. A column whose
texts carry different UTC offsets (a zone with daylight saving) is read on UTC and written back with a
zone rule that fits every offset, else with the offset it used most (:func:`offset_rule`).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from relanon.common.zones import zone_names
from relanon.schema.coercion import MISSING_MARKERS

FORMATS_KEY = "relanon.text_formats"

_TRUE_WORDS = ("true", "t", "yes", "y", "1", "1.0")
_FALSE_WORDS = ("false", "f", "no", "n", "0", "0.0")
_WORDS = {**dict.fromkeys(_TRUE_WORDS, True), **dict.fromkeys(_FALSE_WORDS, False)}
_OTHER_WORD = {**dict(zip(_TRUE_WORDS, _FALSE_WORDS, strict=True)), **dict(zip(_FALSE_WORDS, _TRUE_WORDS, strict=True))}
_MARKERS = frozenset(marker.lower() for marker in MISSING_MARKERS)

_DATES = ("%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y/%m/%d", "%d-%m-%Y", "%m-%d-%Y",
          "%d/%m/%y", "%m/%d/%y", "%d.%m.%y", "%b %d, %Y", "%B %d, %Y", "%d %b %Y", "%d %B %Y")
_TIMES = ("", " %H:%M", " %H:%M:%S", " %H:%M:%S.%f", " %H:%M:%S.%3f",
          "T%H:%M", "T%H:%M:%S", "T%H:%M:%S.%f", "T%H:%M:%S.%3f")
_MILLISECONDS = "%3f"  # milliseconds (2021-06-03T20:45:17.000Z, as JavaScript writes): always a format's end
_ZONE_SUFFIX = r"(Z|[+-]\d\d:\d\d|[+-]\d\d\d\d)$"
_ZONE_STYLES = {"Z": r"Z", "+HH:MM": r"[+-]\d\d:\d\d", "+HHMM": r"[+-]\d\d\d\d"}
# what relanon writes anyway (pandas' ISO 8601): nothing to remember, but for a column of midnights written
# with their time (2007-01-01 00:00:00), which pandas would write without it (2007-01-01)
_DEFAULT_DATES = {("%Y-%m-%d", None), ("%Y-%m-%d %H:%M:%S", None), ("%Y-%m-%d %H:%M:%S", "+HH:MM")}
_SAMPLE = 200
_RULE_ZONES = ("CET", "EET", "MET", "WET", "EST5EDT", "CST6CDT", "MST7MDT", "PST8PDT")
_EXPONENT = re.compile(r"\d[eE][+-]?\d")
_PLAIN_RANGE = (1e-12, 1e21)  # beyond, plain digits would be absurdly long: scientific notation stays


class TextFormats(Mapping):
    """Column -> format spec, immutable (copying a frame shares it instead of copying it).

    A spec is a tuple: ``("boolean", true_word, false_word)``, ``("datetime", strftime_format,
    zone)`` with zone ``None``, ``"Z"``, ``"+HH:MM"`` or ``"+HHMM"``, or ``("number", point,
    plain)``: every value had a decimal point; no value was written in scientific notation. A
    date column whose offsets differ gets a fourth item, the rule its values are written with
    (:func:`offset_rule`): a time zone whose offsets fit every value (``"Europe/Paris"``), else the
    offset the column used most (``"+01:00"``).
    """

    def __init__(self, specs=()):
        self._specs = {column: spec for column, spec in dict(specs).items() if spec is not None}

    def __getitem__(self, column):
        return self._specs[column]

    def __iter__(self):
        return iter(self._specs)

    def __len__(self):
        return len(self._specs)

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        return f"TextFormats({self._specs!r})"


def formats_of(frame: pd.DataFrame) -> TextFormats:
    found = frame.attrs.get(FORMATS_KEY)
    return found if isinstance(found, TextFormats) else TextFormats()


def with_formats(frame: pd.DataFrame, formats: Mapping) -> pd.DataFrame:
    """``frame`` (itself, changed in place) holding the formats of its columns among ``formats``."""
    kept = TextFormats({column: spec for column, spec in formats.items() if column in frame.columns})
    if kept:
        frame.attrs[FORMATS_KEY] = kept
    else:
        frame.attrs.pop(FORMATS_KEY, None)
    return frame


def without_formats(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``, or a shallow copy of it without formats: for stores that keep native types and
    would serialize ``attrs`` (pandas writes them into Parquet metadata)."""
    if FORMATS_KEY not in frame.attrs:
        return frame
    copy = frame.copy(deep=False)
    copy.attrs.pop(FORMATS_KEY, None)
    return copy


# --------------------------------------------------------------------------- learning


def learn_format(kind: str, text: pd.Series, values: pd.Series):
    """The spec of a column of declared type ``kind`` read as ``text`` and coerced to ``values``,
    or ``None`` when it was written the default way, inconsistently, or is not text."""
    if not pd.api.types.is_string_dtype(text.dtype) or pd.api.types.infer_dtype(text, skipna=True) != "string":
        return None
    cells = text.str.strip()
    present = cells.notna() & ~cells.str.lower().isin(_MARKERS) & values.notna().to_numpy()
    if not present.any():
        return None
    if kind == "boolean":
        return _boolean_spec(cells[present])
    if kind == "datetime":
        pairs = pd.DataFrame({"text": cells[present], "value": values[present]}).drop_duplicates("text")
        return _date_spec(pairs["text"], pairs["value"])
    if kind in ("continuous", "integer"):
        return _number_spec(kind, pd.Series(cells[present].unique()))
    return None


def _boolean_spec(cells: pd.Series):
    counts = cells.value_counts()
    words = {}
    for flag in (True, False):
        spellings = [w for w in counts.index if _WORDS.get(w.lower()) is flag]
        if spellings:  # the most frequent spelling, ties broken by the text itself
            words[flag] = min(spellings, key=lambda w: (-counts[w], w))
    if not words:
        return None
    for flag, other in ((True, False), (False, True)):
        if flag not in words:
            words[flag] = _same_case(_OTHER_WORD[words[other].lower()], words[other])
    spec = ("boolean", words[True], words[False])
    return None if spec == ("boolean", "true", "false") else spec


def _same_case(word: str, like: str) -> str:
    if like.isupper():
        return word.upper()
    return word.capitalize() if like[:1].isupper() else word


def _date_spec(text: pd.Series, dates: pd.Series):
    """The format every value was written in, tried on the wall-clock time each text shows (a
    column mixing offsets is kept on UTC, but its texts show local times)."""
    if not pd.api.types.is_datetime64_any_dtype(dates.dtype):
        return None
    zone, rule, wall_text, wall = None, None, text, dates
    if isinstance(dates.dtype, pd.DatetimeTZDtype):
        suffix = text.str.extract(_ZONE_SUFFIX, expand=False)
        if suffix.isna().any():
            return None
        styles = {style for style, pattern in _ZONE_STYLES.items() if suffix.str.fullmatch(pattern).all()}
        if len(styles) != 1:
            return None
        zone = styles.pop()
        wall_text = text.str.replace(_ZONE_SUFFIX, "", regex=True)
        offsets = _offsets(suffix)
        wall = dates.dt.tz_convert("UTC").dt.tz_localize(None) + offsets
        if offsets.nunique() > 1:
            # read on UTC (pandas has no dtype for several offsets); written back with a rule that fits
            rule = offset_rule(dates, offsets)
    first_text, first = wall_text.iloc[0], wall.iloc[:1]
    sample_text, sample = wall_text.iloc[:_SAMPLE].to_numpy(), wall.iloc[:_SAMPLE]
    for fmt in (date + time for date in _DATES for time in _TIMES):
        # the first value rules most candidates out cheaply; then a sample; then every value
        if _strftime(first, fmt).iloc[0] != first_text or not (_strftime(sample, fmt) == sample_text).all():
            continue
        if len(wall) > _SAMPLE and not (_strftime(wall, fmt) == wall_text.to_numpy()).all():
            continue
        if rule is not None:
            return ("datetime", fmt, zone, rule)
        midnights = "%H" in fmt and bool((wall == wall.dt.normalize()).all())
        return None if (fmt, zone) in _DEFAULT_DATES and not midnights else ("datetime", fmt, zone)
    return None


def offset_rule(dates: pd.Series, offsets: pd.Series) -> str:
    """How to write the values of a column whose texts carried different UTC offsets.

    Offsets alone do not name a zone, but a zone's rule may fit them all: the first time zone
    (the zones named for a rule, ``CET``, ``EST5EDT``..., then the tz database's ``Area/City``
    names in alphabetical order, ``Etc/`` and legacy aliases last) that gives every
    value the offset it was written with; its offsets, never its name, are written. When no zone
    fits (people in several zones), the offset the column used most (ties: the smallest), which
    writes the same instants in one local time.

    Examples
    --------
    >>> dates = pd.Series(pd.to_datetime(["2020-03-28T10:00:00+01:00", "2020-03-30T10:00:00+02:00"], utc=True))
    >>> offsets = pd.Series(pd.to_timedelta([60, 120], unit="m"))
    >>> offset_rule(dates, offsets)
    'CET'
    >>> offset_rule(dates, pd.Series(pd.to_timedelta([60, -300], unit="m")))
    '-05:00'
    """
    instants = pd.DatetimeIndex(dates.dt.tz_convert("UTC"))
    pairs = pd.DataFrame({"utc": instants.tz_localize(None), "offset": offsets.to_numpy()}).drop_duplicates()
    utc, wanted = pd.DatetimeIndex(pairs["utc"]), pairs["offset"].to_numpy()
    first = slice(0, _SAMPLE)  # the first values rule most zones out cheaply
    for name in zone_names(_RULE_ZONES):  # empty without a tz database: the offset used most
        for part in (first, slice(None)):
            local = utc[part].tz_localize("UTC").tz_convert(name).tz_localize(None)
            if not ((local - utc[part]).to_numpy() == wanted[part]).all():
                break
        else:
            return name
    counts = offsets.value_counts()
    most = min(counts.index[counts == counts.max()])
    minutes = int(most.total_seconds() // 60)
    return f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _offsets(suffix: pd.Series) -> pd.Series:
    """The offsets written as ``Z``, ``+02:00`` or ``-0530``, as time deltas."""
    digits = suffix.str.replace(":", "", regex=False).str[1:].where(suffix != "Z", "0000")
    minutes = digits.str[:2].astype("int64") * 60 + digits.str[2:4].astype("int64")
    sign = np.where(suffix.str.startswith("-"), -1, 1)
    return pd.to_timedelta(minutes.to_numpy() * sign, unit="m").to_series(index=suffix.index)


def _number_spec(kind: str, cells: pd.Series):
    numeric = cells[cells.str.contains(r"\d", regex=True)]
    if not len(numeric):
        return None
    point = bool(numeric.str.contains(".", regex=False).all())
    plain = not numeric.str.contains(_EXPONENT).any()
    if kind == "integer":
        return ("number", True, True) if point else None
    return ("number", point, plain) if point or plain else None


# --------------------------------------------------------------------------- writing


def as_text(values: pd.Series, spec) -> pd.Series | None:
    """``values`` written in the format ``spec`` (missing values stay missing), or ``None`` when
    the format does not fit them (another dtype, or it would lose something): the default applies."""
    kind = spec[0]
    dtype = values.dtype
    if kind == "boolean" and pd.api.types.is_bool_dtype(dtype):
        words = np.where(values.fillna(False).to_numpy(dtype=bool), spec[1], spec[2])
        return pd.Series(words, index=values.index, dtype="str").where(values.notna())
    if kind == "datetime" and pd.api.types.is_datetime64_any_dtype(dtype):
        if len(spec) > 3 and isinstance(dtype, pd.DatetimeTZDtype):
            values = values.dt.tz_convert(_timezone(spec[3]))  # each value in the rule its column used
        return _dates_text(values, spec[1], spec[2])
    if kind == "number" and pd.api.types.is_integer_dtype(dtype) and spec[1]:
        return (values.astype("str") + ".0").where(values.notna())
    return None


def float_text(values: pd.Series, text: pd.Series, spec) -> pd.Series:
    """Floats already written shortest (``text``), in the column's number format: plain digits
    instead of scientific notation, a decimal point on whole numbers."""
    if spec is None or spec[0] != "number":
        return text
    _, point, plain = spec
    floats = values.to_numpy(dtype="float64", na_value=np.nan)
    finite = np.isfinite(floats)
    if plain:
        with np.errstate(invalid="ignore"):
            size = np.abs(floats)
        low, high = _PLAIN_RANGE
        change = finite & (size >= low) & (size < high) & text.str.contains("e", regex=False).fillna(False).to_numpy()
        if change.any():
            text = text.copy()
            text[change] = [np.format_float_positional(x, unique=True, trim="-") for x in floats[change]]
    if point:
        bare = finite & ~text.str.contains(r"[.e]", regex=True).fillna(True).to_numpy()
        if bare.any():
            text = text.copy()
            text[bare] = text[bare] + ".0"
    return text


def _dates_text(values: pd.Series, fmt: str, zone) -> pd.Series | None:
    aware = isinstance(values.dtype, pd.DatetimeTZDtype)
    if (zone is None) == aware:
        return None
    present = values.dropna()
    if len(present):
        if zone == "Z":
            present = present.dt.tz_convert("UTC")
        parts = present.dt
        lost = [
            ("%f" not in fmt and _MILLISECONDS not in fmt, (parts.microsecond != 0) | (parts.nanosecond != 0)),
            (_MILLISECONDS in fmt, (parts.microsecond % 1000 != 0) | (parts.nanosecond != 0)),
            ("%S" not in fmt, parts.second != 0),
            ("%M" not in fmt, parts.minute != 0),
            ("%H" not in fmt, parts.hour != 0),
            ("%y" in fmt, (parts.year < 1969) | (parts.year > 2068)),
        ]
        if any(applies and bool(np.asarray(mask).any()) for applies, mask in lost):
            return None
    return _formatted(values, fmt, zone)


def _timezone(rule: str):
    """A rule of :func:`offset_rule` as a time zone pandas converts to."""
    if re.fullmatch(r"[+-]\d\d:\d\d", rule):
        sign = -1 if rule[0] == "-" else 1
        return datetime.timezone(sign * datetime.timedelta(hours=int(rule[1:3]), minutes=int(rule[4:6])))
    return rule


def _formatted(dates: pd.Series, fmt: str, zone) -> pd.Series:
    if zone == "Z":
        dates = dates.dt.tz_convert("UTC")
        return _strftime(dates, fmt) + "Z"
    if zone is None:
        return _strftime(dates, fmt)
    offset = dates.dt.strftime("%z")
    if zone == "+HH:MM":
        offset = offset.str[:3] + ":" + offset.str[3:]
    return _strftime(dates, fmt) + offset


def _strftime(dates: pd.Series, fmt: str) -> pd.Series:
    """``dates.dt.strftime(fmt)``, where ``fmt`` may end in milliseconds (:data:`_MILLISECONDS`)."""
    if fmt.endswith(_MILLISECONDS):
        return dates.dt.strftime(fmt.replace(_MILLISECONDS, "%f")).str[:-3]
    return dates.dt.strftime(fmt)
