"""Finding the rules between the columns of a table (:mod:`relanon.engine.column_rules`) in the original.

:func:`find_rules` searches the dates for the whole-number columns that are their parts (and the dates that
are the date of their parts), the columns named as the year, month and day of one thing, and the numeric
columns that are a whole combination of one or two others.

Guards against rules that hold by chance: at least :data:`MIN_ROWS` rows where every column of the
rule is present, and :data:`MIN_DISTINCT` distinct values in each column of a linear rule (two for a
date part: never a constant). A candidate is screened on at most :data:`SCREEN_ROWS` evenly spaced rows,
then checked exactly on every row; the linear search looks at :data:`MAX_CANDIDATES` columns at most.
"""

from __future__ import annotations

import re
from itertools import combinations

import numpy as np
import pandas as pd

from relanon.common.zones import zone_names
from relanon.engine.column_rules import (
    PARTS,
    CalendarDate,
    ColumnRule,
    DateFromParts,
    DatePart,
    LinearRule,
    as_floats,
    dates_of_parts,
    epoch_seconds,
    month_days,
    nearly_equal,
    part_of_dates,
)

MIN_ROWS = 50  # rows where every column of a rule is present
MIN_DISTINCT = 5  # distinct values of each column of a linear rule
TARGET_MIN_DISTINCT = 10  # a column of fewer values is no linear rule's result (it is copied whole from J)
MAX_COEFFICIENT = 1000  # |whole coefficient| of a linear rule
MAX_CANDIDATES = 30  # numeric columns searched for linear rules (cubic cost)
SCREEN_ROWS = 2000  # rows a candidate is screened on before the exact check on every row
ZONE_SCREEN_ROWS = 200  # rows each zone is screened on
_COMMON_ZONES = ("UTC", "Europe/London", "Europe/Paris", "Europe/Berlin", "America/New_York", "America/Chicago",
                 "America/Denver", "America/Los_Angeles", "America/Sao_Paulo", "Asia/Kolkata", "Asia/Shanghai",
                 "Asia/Tokyo", "Australia/Sydney")
_PART_RANGES = {"year": (1, 9999), "month": (1, 12), "day": (1, 31), "hour": (0, 23), "minute": (0, 59)}
_CALENDAR_WORDS = {"year": "year", "month": "month", "day": "day"}


def find_rules(frame: pd.DataFrame, types) -> tuple[ColumnRule, ...]:
    """The columns of ``frame`` that are exact functions of others, in the order they are recomputed.

    Parameters
    ----------
    frame : pandas.DataFrame
        The original table, its columns in their checked dtypes (dates as datetimes).
    types : Mapping[str, str]
        Schema type of the columns to search (``integer``, ``continuous``, ``datetime``, and
        ``categorical`` columns holding whole numbers); others are ignored.

    Returns
    -------
    tuple of DatePart, CalendarDate, DateFromParts and LinearRule
        In the order they are recomputed: parts from dates, days within their month, dates from their
        parts, then linear rules, which may read any of these. A column is derived by one rule at most, and
        a linear rule never reads another linear rule's derived column.

    Examples
    --------
    >>> a = np.arange(100) % 24
    >>> b = (np.arange(100) * 7) % 60
    >>> frame = pd.DataFrame({"a": a, "b": b, "c": 100 * a + b})
    >>> [str(rule) for rule in find_rules(frame, dict.fromkeys(frame, "integer"))]
    ['c = 100 * a + b']
    """
    if len(frame) < MIN_ROWS:
        return ()
    whole = [c for c in frame.columns if c in types and _whole_column(frame[c], types[c])]
    dates = [c for c in frame.columns if types.get(c) == "datetime"
             and pd.api.types.is_datetime64_any_dtype(frame[c].dtype)]
    found = _date_part_rules(frame, dates, whole)
    parts = tuple(rule for rule in found if isinstance(rule, DatePart))
    dated = tuple(rule for rule in found if isinstance(rule, DateFromParts))
    derived = {rule.target for rule in parts}
    calendars = _calendar_rules(frame, [c for c in whole if c not in derived])
    derived |= {c for rule in (*calendars, *dated) for c in rule.columns}
    numeric = [c for c in frame.columns if c in types and c not in derived and (
        types[c] in ("integer", "continuous") or c in whole)
        and pd.api.types.is_numeric_dtype(frame[c].dtype) and not pd.api.types.is_bool_dtype(frame[c].dtype)]
    sources = [c for c in frame.columns if c in derived and c in whole]
    # a day clipped to its month before the date made of it; the linear rules may read every part
    return parts + calendars + dated + _linear_rules(frame, numeric, sources)


def _whole_column(series: pd.Series, kind: str) -> bool:
    """A numeric column of whole numbers, declared integer (or categorical, or continuous holding whole numbers)."""
    dtype = series.dtype
    if kind not in ("integer", "continuous", "categorical") or pd.api.types.is_bool_dtype(dtype) \
            or not pd.api.types.is_numeric_dtype(dtype):
        return False
    values = as_floats(series)
    values = values[~np.isnan(values)]
    return len(values) > 0 and bool(np.all(values == np.round(values)))


def _screen(n: int) -> np.ndarray:
    """Evenly spaced row positions (no draw: the search is the same on every run)."""
    return np.unique(np.linspace(0, n - 1, min(n, SCREEN_ROWS)).astype(np.int64))


def _distinct(values: np.ndarray) -> int:
    return len(np.unique(values[~np.isnan(values)]))


def _date_part_rules(frame: pd.DataFrame, dates: list[str], whole: list[str]) -> tuple[DatePart, ...]:
    """Whole-number columns equal on every row to a part of a date column, read on one clock."""
    rules: list[DatePart] = []
    taken: set[str] = set()
    screen = _screen(len(frame))
    for date in dates:
        stamps = frame[date]
        if stamps.nunique() < 2:
            continue
        candidates = {c: as_floats(frame[c]) for c in whole if c not in taken}
        candidates = {c: (v, _fitting_parts(v)) for c, v in candidates.items() if _distinct(v) >= 2}
        candidates = {c: found for c, found in candidates.items() if found[1]}
        if not candidates:
            continue
        sample = stamps.iloc[screen]
        found = _parts_on_clock(frame, date, sample, screen, None, candidates)
        left = {c: v for c, v in candidates.items() if c not in {rule.target for rule in found}}
        if stamps.dt.tz is not None and left and _could_be_parts(left):
            # parts read on a local clock from dates stored in UTC (flights' hour, New York's, of time_hour): the
            # zone that explains the most columns, the first of them in _zones() on a tie
            best: list[DatePart] = []
            few = screen[::max(1, len(screen) // ZONE_SCREEN_ROWS)]
            for zone in _zones():
                on_clock = _parts_on_clock(frame, date, pd.DatetimeIndex(stamps.iloc[few]), few, zone, left, full_check=False)
                if len(on_clock) > len(best):
                    best = on_clock
            best = _parts_on_clock(frame, date, sample, screen, best[0].zone, left) if best else []
            found += best
        composed = _date_of_parts(frame, date, found)
        if composed is not None:
            # the date is a function of its parts: recomputed from them (the parts, copied together from one
            # neighbour, keep their shares and their relations with the other columns; parts read off a mixed
            # date lose them, the flights' hour of day at Hellinger 0.39)
            rules.append(composed)
        else:
            rules += found
        taken.update(rule.target for rule in found)
    return tuple(rules)


def _date_of_parts(frame: pd.DataFrame, date: str, found: list[DatePart]) -> DateFromParts | None:
    """The date as a function of its part columns ``found``, when every other part down to the minute is the same
    on every row (a year 2013, a minute 0) and the date holds no seconds: checked on every row."""
    zones = {rule.zone for rule in found}
    if not found or len(zones) != 1:
        return None
    zone = zones.pop()
    given = {rule.part: rule.target for rule in found}
    if len(given) != len(found):
        return None
    constants = []
    for part in PARTS:
        if part in given:
            continue
        values = part_of_dates(frame[date], part, zone)
        values = values[~np.isnan(values)]
        if len(values) == 0 or np.any(values != values[0]):
            return None
        constants.append((part, int(values[0])))
    rule = DateFromParts(date, tuple((p, given[p]) for p in PARTS if p in given), tuple(constants), zone)
    values, present = dates_of_parts(frame, rule)
    stored = epoch_seconds(frame[date])
    both = present & ~np.isnan(stored)
    if both.sum() < MIN_ROWS or not np.array_equal(values[both], stored[both]):
        return None
    return rule


def _could_be_parts(candidates: dict) -> bool:
    """Whether some candidate holds values within an hour's, a day's or a month's range (worth a zone search)."""
    return any(set(fits) & {"month", "day", "hour"} for _, fits in candidates.values())


def _fitting_parts(values: np.ndarray) -> tuple[str, ...]:
    """The parts within whose range every present value lies."""
    present = values[~np.isnan(values)]
    if not len(present):
        return ()
    low, high = present.min(), present.max()
    return tuple(p for p in PARTS if _PART_RANGES[p][0] <= low and high <= _PART_RANGES[p][1])


def _parts_on_clock(frame, date, sample, screen, zone, candidates, full_check: bool = True) -> list[DatePart]:
    """The candidates (column -> (values, the parts within whose range they lie)) equal to a part of ``date``
    read in ``zone`` on the screened rows and, with ``full_check``, on every row."""
    needed = {p for _, fits in candidates.values() for p in fits}
    try:
        parts = {p: part_of_dates(sample, p, zone) for p in PARTS if p in needed}
    except (TypeError, AttributeError):  # a naive column has no zone to convert
        return []
    found = []
    for column, (values, fits) in candidates.items():
        on_screen = values[screen]
        for part in fits:
            both = ~np.isnan(on_screen) & ~np.isnan(parts[part])
            if not both.any() or not np.array_equal(on_screen[both], parts[part][both]):
                continue
            if not full_check:
                found.append(DatePart(column, date, part, zone))
                break
            full = part_of_dates(frame[date], part, zone)
            both = ~np.isnan(values) & ~np.isnan(full)
            if both.sum() >= MIN_ROWS and np.array_equal(values[both], full[both]) and _distinct(values[both]) >= 2:
                found.append(DatePart(column, date, part, zone))
                break
    return found


def _zones() -> tuple[str, ...]:
    """The zones tried for dates stored in UTC whose parts were read on a local clock: UTC and a few common
    ones first, then the canonical zones of the tz database (an area's zones agree on most dates: the first
    that explains the parts is named)."""
    return zone_names(_COMMON_ZONES, aliases=False)


def _calendar_word(name: str) -> tuple[str, str] | None:
    """``("year" | "month" | "day", the rest of the name lowered)`` when the name holds one such word."""
    found = [(word, m) for word in _CALENDAR_WORDS for m in re.finditer(word, name, flags=re.IGNORECASE)]
    if len(found) != 1:
        return None
    word, match = found[0]
    rest = (name[:match.start()] + name[match.end():]).lower().strip("_- .")
    return word, rest


def _calendar_rules(frame: pd.DataFrame, whole: list[str]) -> tuple[CalendarDate, ...]:
    """Triples of whole-number columns named year, month and day of one thing (``birthYear``, ``birth_month``)
    whose values form a valid date on every row where all three are present."""
    named: dict[str, dict[str, str]] = {}
    for column in whole:
        found = _calendar_word(str(column))
        if found is not None:
            named.setdefault(found[1], {}).setdefault(found[0], column)
    rules = []
    for stem in sorted(named):
        words = named[stem]
        if set(words) != set(_CALENDAR_WORDS):
            continue
        year, month, day = (as_floats(frame[words[w]]) for w in ("year", "month", "day"))
        present = ~(np.isnan(year) | np.isnan(month) | np.isnan(day))
        if present.sum() < MIN_ROWS:
            continue
        year, month, day = year[present], month[present], day[present]
        if (_distinct(month) < 2 or _distinct(day) < MIN_DISTINCT or year.min() < 1 or year.max() > 9999
                or month.min() < 1 or month.max() > 12 or day.min() < 1 or np.any(day > month_days(year, month))):
            continue
        rules.append(CalendarDate(words["year"], words["month"], words["day"]))
    return tuple(rules)


def _linear_rules(frame: pd.DataFrame, numeric: list[str], parts: list[str]) -> tuple[LinearRule, ...]:
    """Numeric columns equal on every row to ``a * x`` or ``a * x + b * y``, whole ``a`` and ``b``.

    Least squares on the screened rows gives the coefficients, rounded; the rule is kept when it holds exactly
    on every row. Targets are tried from the most distinct values down, so that of ``c = 100 * a + b`` and
    ``b = c - 100 * a`` the column that combines the others is the derived one."""
    values = {c: as_floats(frame[c]) for c in [*numeric, *parts]}
    distinct = {c: _distinct(v) for c, v in values.items()}
    columns = [c for c in [*numeric, *parts] if distinct[c] >= MIN_DISTINCT]
    columns = sorted(columns, key=lambda c: -distinct[c])[:MAX_CANDIDATES]
    screen = _screen(len(frame))
    targets = [c for c in columns if c in numeric and distinct[c] >= TARGET_MIN_DISTINCT]
    rules: list[LinearRule] = []
    used: set[str] = set()
    for target in targets:
        if target in used:
            continue
        others = [c for c in columns if c != target and c not in {r.target for r in rules}]
        rule = _fitted(target, others, values, screen)
        if rule is not None:
            rule = _derived_column(rule, distinct, list(frame.columns), set(numeric) - {r.target for r in rules})
            rules.append(rule)
            used.update(rule.columns)
    return tuple(rules)


def _derived_column(rule: LinearRule, distinct: dict, order: list, targets: set) -> LinearRule:
    """The same relation solved for the column that is the function of the others: the most distinct values,
    then a sum rather than a difference (``total = cost + fee``, not ``cost = total - fee``), then the later
    column of the table; sources in the table's order."""
    terms = {rule.target: 1, **{s: -c for s, c in zip(rule.sources, rule.coefficients, strict=True)}}
    options = []
    for target, own in terms.items():
        if abs(own) != 1 or target not in targets:
            continue
        sources = sorted((c for c in terms if c != target), key=order.index)
        coefficients = tuple(-terms[c] * own for c in sources)
        options.append(((distinct[target], all(c > 0 for c in coefficients), order.index(target)),
                        LinearRule(target, tuple(sources), coefficients)))
    return max(options, key=lambda option: option[0])[1]


def _candidate_sources(target: str, others: list[str], values: dict, screen: np.ndarray):
    """The one or two source columns worth a least-squares fit for ``target``, singles first: on the screened
    rows where every column is present, those whose closed-form least-squares coefficients (normal equations,
    every pair at once) are near whole numbers; every combination when too few rows are complete."""
    matrix = np.column_stack([values[c][screen] for c in (target, *others)])
    complete = ~np.isnan(matrix).any(axis=1)
    if complete.sum() < MIN_ROWS:
        yield from ((c,) for c in others)
        yield from combinations(others, 2)
        return
    x = matrix[complete]
    gram = x.T @ x
    t = gram[0, 1:]
    diagonal = np.diag(gram)[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        single = t / diagonal
        for i in np.flatnonzero(_near_whole(single)):
            yield (others[i],)
        first, second = np.triu_indices(len(others), k=1)
        aa, bb, ab = diagonal[first], diagonal[second], gram[1 + first, 1 + second]
        det = aa * bb - ab * ab
        alpha = (bb * t[first] - ab * t[second]) / det
        beta = (aa * t[second] - ab * t[first]) / det
        usable = np.abs(det) > 1e-12 * aa * bb
    for i in np.flatnonzero(usable & _near_whole(alpha) & _near_whole(beta)):
        yield (others[first[i]], others[second[i]])


def _near_whole(values: np.ndarray) -> np.ndarray:
    """Non-zero, within the coefficient cap, and near a whole number (the exact check comes after)."""
    rounded = np.rint(values)
    with np.errstate(invalid="ignore"):
        return (np.isfinite(values) & (rounded != 0) & (np.abs(rounded) <= MAX_COEFFICIENT)
                & (np.abs(values - rounded) <= 1e-3))


def _fitted(target: str, others: list[str], values: dict, screen: np.ndarray) -> LinearRule | None:
    """The first linear rule giving ``target`` from one or two of ``others``: least squares on the screened rows,
    coefficients rounded, checked exactly there and then on every row."""
    y_all = values[target]
    y = y_all[screen]
    for sources in _candidate_sources(target, others, values, screen):
        x = np.column_stack([values[c][screen] for c in sources])
        rows = ~np.isnan(y) & ~np.isnan(x).any(axis=1)
        if rows.sum() < min(MIN_ROWS, len(screen)):
            continue
        solution = np.linalg.lstsq(x[rows], y[rows], rcond=None)[0]
        coefficients = np.rint(solution)
        if np.any(coefficients == 0) or np.any(np.abs(coefficients) > MAX_COEFFICIENT):
            continue
        if not nearly_equal(y[rows], x[rows] @ coefficients).all():
            continue
        full = np.column_stack([values[c] for c in sources])
        rows = ~np.isnan(y_all) & ~np.isnan(full).any(axis=1)
        if rows.sum() < MIN_ROWS or any(_distinct(v[rows]) < MIN_DISTINCT for v in (y_all, *full.T)):
            continue
        if nearly_equal(y_all[rows], full[rows] @ coefficients).all():
            return LinearRule(target, sources, tuple(int(c) for c in coefficients))
    return None
