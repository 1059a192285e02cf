"""Check a database against its schema and give every column its declared type.

:func:`check_database` is the gate every database passes before anything else reads it: it reports
*every* problem at once (missing tables and columns, undeclared columns, values that do not fit
their type, duplicated or null primary keys, orphan foreign keys) and returns coerced copies whose
dtypes the rest of relanon relies on:

=============  ===========================================================================
declared type  dtype after coercion
=============  ===========================================================================
continuous     ``float64`` (numbers stored as text are parsed; ``inf`` is a value)
integer        ``int64``, or ``Int64`` when values are missing (``3.0`` is 3, ``3.5`` a problem)
boolean        ``bool``, or ``boolean`` when values are missing
datetime       dates parsed from text become ``datetime64[us]``; datetime columns keep their
               unit (and time zone)
categorical    as it came: strings stay ``str``, numbers stay numbers (``int64``/``Int64`` for
               whole numbers); from text storage, integer-looking codes become integers unless
               one has a leading zero (zip codes such as ``"01234"`` stay strings)
drop           as it came (the column is removed later, at anonymization)
keys           ``int64`` for whole-number keys (``Int64`` for a foreign key with missing values),
               ``str`` otherwise; a foreign key takes the kind of its parent's primary key
=============  ===========================================================================

Missing values. In text, the cells listed in :data:`MISSING_MARKERS` (compared without case
and surrounding spaces) are missing in continuous, integer, boolean, datetime and key columns,
where they cannot be real values. In a categorical column of text storage (CSV, SQLite TEXT)
only the empty cell is missing, because ``"NA"`` may well be a real code (Namibia, North America,
"not applicable"): such markers are kept as values, so that no category silently disappears and a
written database reads back the same. The one exception is a categorical column whose other values
are all integers, where a marker cannot be a code and is read as missing.

Dates in text. ISO 8601 is read first; then ``12/31/2020``-style dates, read month first unless a
value of the column shows the day comes first (``31/12/2020``), and ``31.12.2020``; then other
spellings with a full date (``Mar 5, 2021``). A time or a month alone is not a date. A column
mixing offsets, or aware and naive dates, is put on UTC (naive dates taken as UTC).
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from relanon.common.errors import DataError, ParameterError, Problem
from relanon.schema.graph import connected_groups, topological_order
from relanon.schema.model import Schema, Table
from relanon.schema.shapes import companion_name, companion_table, looks_released, released_table

__all__ = [
    "MISSING_MARKERS",
    "check_database",
    "coerce_database",
    "coerce_table",
    "database_problems",
    "unconnected_tables",
]

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


class _Issue(NamedTuple):
    """Values of one column that do not fit, and what the message says about them."""

    values: pd.Series
    what: str  # "is not a number|are not numbers": the verb for one value, then for several
    todo: str


# --------------------------------------------------------------------------- public API


def coerce_table(
    table: Table,
    frame: pd.DataFrame,
    parent_key_kinds=None,
    *,
    from_text: bool = False,
) -> tuple[pd.DataFrame, list[Problem]]:
    """Apply the declared types of ``table`` to ``frame``; report what does not fit.

    Parameters
    ----------
    table : Table
        The table as declared in the schema.
    frame : pandas.DataFrame
        Its data; never modified.
    parent_key_kinds : mapping, optional
        Foreign-key column -> ``"integer"`` or ``"string"``, the kind of the parent's primary
        key, so that ``"12"`` read from a CSV matches the parent key ``12``. A foreign key not
        listed gets the kind its own values suggest.
    from_text : bool, default False
        Whether the frame was read from text storage (CSV, SQLite), where integer-looking codes
        are integers and empty cells are missing (see the module documentation).

    Returns
    -------
    frame : pandas.DataFrame
        A new frame, same index and column order, declared columns coerced (values that do not
        fit become missing); undeclared columns are left as they came.
    problems : list of Problem
        Missing, duplicated and undeclared columns, and values that do not fit their type,
        each with a count and the first examples. Key uniqueness and foreign keys are checked by
        :func:`database_problems`, which sees the whole database.

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "columns": {"age": "integer", "smoker": "boolean"}}}})
    >>> raw = pd.DataFrame({"id": ["1", "2"], "age": ["41", ""], "smoker": ["yes", "no"]})
    >>> coerced, problems = coerce_table(schema["people"], raw, from_text=True)
    >>> coerced.dtypes.astype(str).to_dict()
    {'id': 'int64', 'age': 'Int64', 'smoker': 'bool'}
    >>> problems
    []
    """
    if not isinstance(frame, pd.DataFrame):
        raise ParameterError(
            f"table {table.name!r}: expected a pandas DataFrame, got {type(frame).__name__}"
        )
    parent_key_kinds = dict(parent_key_kinds or {})
    problems = _column_problems(table, frame)
    types = {c.name: c.type for c in table.columns}
    foreign_keys = set(table.foreign_key_columns)
    columns: dict = {}
    for position, name in enumerate(frame.columns):
        if name in columns:
            continue  # a repeated column name, already reported
        series = frame.iloc[:, position]
        if name == table.primary_key:
            values, issues = _coerce_key(series, None, from_text)
            role = "primary key"
        elif name in foreign_keys:
            values, issues = _coerce_key(series, parent_key_kinds.get(name), from_text)
            role = _foreign_key_role(table, name, parent_key_kinds.get(name))
        elif name in types:
            values, issues = _COERCERS[types[name]](series, from_text)
            role = f"declared {types[name]}"
        else:
            values, issues, role = series.copy(), [], "undeclared"
        columns[name] = values
        problems += [_issue_problem(table.name, name, role, issue) for issue in issues]
    return pd.DataFrame(columns, index=frame.index), problems


def coerce_database(
    schema: Schema,
    database,
    *,
    from_text: bool = False,
    report_missing: bool = True,
) -> tuple[dict[str, pd.DataFrame], list[Problem]]:
    """Coerce every table of ``database`` and find every problem, without raising.

    The building block of :func:`check_database` and :func:`database_problems`; readers of
    data stores call it with ``report_missing=False`` after describing missing tables themselves.

    Parameters
    ----------
    schema : Schema
    database : mapping of str to pandas.DataFrame
        Keyed by the schema's table names; tables not in the schema are ignored.
    from_text : bool, default False
        Whether the tables were read from text storage (see :func:`coerce_table`).
    report_missing : bool, default True
        Whether a schema table absent from ``database`` is a problem.

    Returns
    -------
    database : dict of str to pandas.DataFrame
        Coerced copies of the tables present, in schema order.
    problems : list of Problem
        Every problem, grouped by table in schema order.

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"p": {"primary_key": "id"}}})
    >>> coerced, problems = coerce_database(schema, {"p": pd.DataFrame({"id": ["7", "7"]})})
    >>> coerced["p"]["id"].tolist(), problems[0].location, problems[0].examples
    (['7', '7'], 'p.id', ('7',))
    """
    if not isinstance(database, Mapping):
        raise ParameterError(f"expected a dict of table name -> DataFrame, got {type(database).__name__}")
    coerced: dict[str, pd.DataFrame] = {}
    problems: list[Problem] = []
    key_kinds: dict[str, str] = {}
    # parents first, so that each foreign key can take the kind of its parent's key
    for name in topological_order(schema):
        table = schema[name]
        frame = database.get(name)
        if frame is None:
            if report_missing:
                problems.append(_missing_table_problem(name, database))
            continue
        if not isinstance(frame, pd.DataFrame):
            problems.append(Problem(f"expected a pandas DataFrame, got {type(frame).__name__}", name))
            continue
        parent_kinds = {
            fk.column: key_kinds[fk.references] for fk in table.foreign_keys if fk.references in key_kinds
        }
        if looks_released(table, frame):
            table = released_table(table)  # a de-associated release: its own shape
        coerced[name], found = coerce_table(table, frame, parent_kinds, from_text=from_text)
        problems += found
        if table.primary_key in coerced[name]:
            key_kinds[name] = _kind_of(coerced[name][table.primary_key])
    for name, frame in coerced.items():
        problems += _primary_key_problems(schema[name], frame)
        problems += _orphan_problems(schema, schema[name], frame, coerced)
    companions = {}
    for table in schema:
        name = companion_name(table)
        if table.anonymize.method == "anatomize" and name in database and name not in schema.tables:
            companions[name], found = coerce_table(companion_table(table), database[name], from_text=from_text)
            problems += found
    order = {name: i for i, name in enumerate(schema.tables)}
    problems.sort(key=lambda p: order.get(p.table, -1))
    return {**{name: coerced[name] for name in schema.tables if name in coerced}, **companions}, problems


def database_problems(schema: Schema, database, *, from_text: bool = False) -> list[Problem]:
    """Every problem of ``database`` against ``schema``, all at once (empty when it fits).

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"p": {"primary_key": "id",
    ...     "columns": {"height": "continuous"}}}})
    >>> for problem in database_problems(schema, {"p": pd.DataFrame({"id": [1, 2],
    ...         "height": ["1.82", "tall"], "name": ["Ann", "Bob"]})}):
    ...     print(problem)  # doctest: +NORMALIZE_WHITESPACE
    p: 1 column in the data is not declared in the schema: 'name'; declare it in columns,
    or give it type drop
    p.height: 1 value is not a number (declared continuous); fix or remove these rows,
    or declare the column categorical if these are codes (e.g. 'tall')
    """
    return coerce_database(schema, database, from_text=from_text)[1]


def check_database(schema: Schema, database, *, from_text: bool = False) -> dict[str, pd.DataFrame]:
    """Coerced copies of the tables of ``database``, or a :class:`DataError` listing every problem.

    Parameters
    ----------
    schema : Schema
    database : mapping of str to pandas.DataFrame
        Keyed by the schema's table names; never modified.
    from_text : bool, default False
        Whether the tables were read from text storage (see :func:`coerce_table`).

    Returns
    -------
    dict of str to pandas.DataFrame
        Every schema table with its declared dtypes, in schema order.

    Raises
    ------
    DataError
        Carrying every :class:`~relanon.common.errors.Problem` found.

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {
    ...     "p": {"primary_key": "id"},
    ...     "c": {"primary_key": "id", "foreign_keys": [{"column": "p_id", "references": "p"}]}}})
    >>> db = check_database(schema, {"p": pd.DataFrame({"id": [1, 2]}),
    ...                              "c": pd.DataFrame({"id": ["a", "b"], "p_id": ["2", None]})})
    >>> db["c"].dtypes.astype(str).to_dict()
    {'id': 'str', 'p_id': 'Int64'}
    """
    coerced, problems = coerce_database(schema, database, from_text=from_text)
    if problems:
        raise DataError("the database does not fit its schema", problems)
    return coerced


def unconnected_tables(schema: Schema) -> list[str]:
    """Tables linked to no other table; each is anonymized on its own (allowed, worth saying).

    Examples
    --------
    >>> from relanon.schema.model import load_schema
    >>> unconnected_tables(load_schema({"relanon": 1, "tables": {
    ...     "a": {"primary_key": "id"}, "b": {"primary_key": "id"}}}))
    ['a', 'b']
    """
    if len(schema) < 2:
        return []
    return [group[0] for group in connected_groups(schema) if len(group) == 1]


# --------------------------------------------------------------------------- columns and tables


def _column_problems(table: Table, frame: pd.DataFrame) -> list[Problem]:
    present = list(frame.columns)
    # a drop column is never released: it may be absent (an anonymized database has none)
    expected = [c for c in table.all_columns if c in present or c not in _dropped(table)]
    problems = []
    for name, count in pd.Series(present, dtype=object).value_counts(sort=False).items():
        if count > 1:
            problems.append(
                Problem(f"the column appears {count} times in the data; keep one", table.name, str(name))
            )
    undeclared = [c for c in dict.fromkeys(present) if c not in expected]
    for name in expected:
        if name not in present:
            what = _column_role(table, name)
            problems.append(
                Problem(
                    f"the {what} {name!r} is not in the data{_did_you_mean(name, undeclared)}; "
                    "add it to the data, or remove it from the schema",
                    table.name,
                    name,
                )
            )
    if undeclared:
        names = ", ".join(repr(str(c)) for c in undeclared)
        problems.append(
            Problem(
                f"{_count(len(undeclared), 'column')} in the data "
                f"{'is' if len(undeclared) == 1 else 'are'} not declared in the schema: {names}; "
                f"declare {'it' if len(undeclared) == 1 else 'them'} in columns, "
                f"or give {'it' if len(undeclared) == 1 else 'them'} type drop",
                table.name,
            )
        )
    return problems


def _dropped(table: Table) -> set[str]:
    return {c.name for c in table.columns if not c.released}


def _column_role(table: Table, name: str) -> str:
    if name == table.primary_key:
        return "primary key column"
    if name in table.foreign_key_columns:
        return "foreign key column"
    return "declared column"


def _missing_table_problem(name: str, database) -> Problem:
    given = [str(t) for t in database]
    listing = ", ".join(repr(t) for t in given) if given else "none"
    return Problem(
        f"the table is not in the database{_did_you_mean(name, given)} (tables given: {listing}); "
        "add it, or remove it from the schema",
        name,
    )


def _primary_key_problems(table: Table, frame: pd.DataFrame) -> list[Problem]:
    if table.primary_key not in frame:
        return []
    key = frame[table.primary_key]
    problems = []
    missing = key.isna().to_numpy()
    if missing.any():
        rows = np.flatnonzero(missing)[:5] + 1
        problems.append(
            Problem(
                f"{_count(int(missing.sum()), 'row')} {'has' if missing.sum() == 1 else 'have'} no primary "
                f"key (empty or a missing marker), first at data row{'s' if len(rows) > 1 else ''} "
                f"{', '.join(map(str, rows))} (counting from 1); every row needs a unique key: "
                "fill in these keys or remove these rows",
                table.name,
                table.primary_key,
            )
        )
    present = key[~missing]
    repeated = present[present.duplicated(keep=False)]
    if len(repeated):
        values = repeated.drop_duplicates()
        problems.append(
            Problem(
                f"the primary key has {_count(len(values), 'duplicated value')} on "
                f"{_count(len(repeated), 'row')}; keys must be unique: remove the duplicates or "
                "renumber them",
                table.name,
                table.primary_key,
                tuple(values.iloc[:5]),
            )
        )
    return problems


def _orphan_problems(schema: Schema, table: Table, frame: pd.DataFrame, coerced) -> list[Problem]:
    problems = []
    for fk in table.foreign_keys:
        parent = schema.tables.get(fk.references)
        if fk.column not in frame or parent is None or fk.references not in coerced:
            continue  # missing pieces are reported on their own
        parent_keys = coerced[fk.references].get(parent.primary_key)
        if parent_keys is None:
            continue
        values = frame[fk.column]
        orphans = values[values.notna() & ~values.isin(parent_keys.dropna())]
        if len(orphans):
            distinct = orphans.drop_duplicates()
            problems.append(
                Problem(
                    f"{_count(len(orphans), 'row')} refer{'s' if len(orphans) == 1 else ''} to "
                    f"{_count(len(distinct), 'value')} not found in the parent key "
                    f"{fk.references}.{parent.primary_key}; fix or remove these rows, or leave the "
                    "key empty for a row without a parent",
                    table.name,
                    fk.column,
                    tuple(distinct.iloc[:5]),
                )
            )
    return problems


def _issue_problem(table: str, column: str, role: str, issue: _Issue) -> Problem:
    n = len(issue.values)
    one, several = issue.what.split("|")
    examples = tuple(issue.values.drop_duplicates().iloc[:5])
    return Problem(
        f"{_count(n, 'value')} {one if n == 1 else several} ({role}); {issue.todo}", table, column, examples
    )


def _foreign_key_role(table: Table, column: str, kind: str | None) -> str:
    parent = next(fk.references for fk in table.foreign_keys if fk.column == column)
    return f"foreign key to {parent}" + (", whose keys are whole numbers" if kind == INTEGER else "")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _did_you_mean(word, candidates) -> str:
    close = closest_name(word, candidates)
    return f" (did you mean {close!r}?)" if close else ""


def closest_name(word, candidates) -> str | None:
    """The candidate closest to ``word`` ignoring case (``"BMI"`` for ``"bmi"``), if one is close."""
    by_lower = {str(c).lower(): str(c) for c in candidates}
    close = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


# --------------------------------------------------------------------------- dtypes


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
    issue = _Issue(_bad(series, unparsed), "is not a number|are not numbers", _TODO["continuous"])
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
        issues.append(_Issue(_bad(series, unparsed), "is not a number|are not numbers", _TODO["integer"]))
    whole, not_whole = _whole_numbers(values)
    issues.append(
        _Issue(_bad(series, not_whole), "is not a whole number|are not whole numbers", _TODO["integer"])
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
        issue = _Issue(_bad(series, ~fits), "is neither 1 nor 0|are neither 1 nor 0", _TODO["boolean"])
        return _narrow(result), _nonempty([issue])
    text = _Text.of(values)
    words = text.uniques.str.strip().str.lower().map(_BOOLEAN_WORDS)
    unknown = ~text.missing & words.isna().to_numpy()
    flags = pd.array(words.where(~text.missing).tolist(), dtype="boolean")
    issue = _Issue(
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
        issue = _Issue(
            _nonmissing(series),
            "is a number, not a date|are numbers, not dates",
            "store dates as text such as 2024-01-31, or declare the column continuous or integer",
        )
        return _all_missing(series, f"datetime64[{DATETIME_UNIT}]"), [issue]
    text = _Text.of(values)
    dates = _parse_dates(text.uniques.where(~text.missing))
    unparsed = ~text.missing & dates.isna().to_numpy()
    issue = _Issue(_bad(series, text.rows(unparsed)), "is not a date|are not dates", _TODO["datetime"])
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


def _coerce_key(series: pd.Series, kind: str | None, from_text: bool):
    """A key as ``int64``/``Int64`` (kind ``"integer"``) or ``str``; markers in text are missing."""
    values = _normalize(series)
    if _is_number(values.dtype):
        whole, not_whole = _whole_numbers(values)
        if kind == STRING or (kind is None and not_whole.any()):
            return _key_text(values), []
        issue = _Issue(_bad(series, not_whole), "is not a whole number|are not whole numbers", _TODO["key"])
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
    issue = _Issue(
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


def _kind_of(key: pd.Series) -> str:
    return INTEGER if pd.api.types.is_integer_dtype(key.dtype) else STRING


def _all_missing(series: pd.Series, dtype: str) -> pd.Series:
    return pd.Series(pd.array([None] * len(series), dtype=dtype), index=series.index)


def _dates_issue(series: pd.Series) -> _Issue:
    return _Issue(_nonmissing(series), "is a date|are dates", "declare the column datetime")


def _nonempty(issues: list[_Issue]) -> list[_Issue]:
    return [issue for issue in issues if len(issue.values)]


_COERCERS = {
    "continuous": _to_continuous,
    "integer": _to_integer,
    "boolean": _to_boolean,
    "datetime": _to_datetime,
    "categorical": _to_categorical,
    "drop": _as_it_came,
}
