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

from collections.abc import Mapping

import numpy as np
import pandas as pd

from relanon.common.errors import DataError, ParameterError, Problem
from relanon.common.options import Method, did_you_mean
from relanon.schema.associations import numbered
from relanon.schema.coercion import COERCERS, INTEGER, MISSING_MARKERS, Issue, coerce_key, key_kind
from relanon.schema.graph import connected_groups, topological_order
from relanon.schema.hierarchy import hierarchy_problems
from relanon.schema.model import Schema, Table
from relanon.schema.shapes import companion_name, companion_table, looks_released, released_table
from relanon.schema.text_formats import formats_of, learn_format, with_formats

__all__ = [
    "MISSING_MARKERS",
    "check_database",
    "coerce_database",
    "coerce_table",
    "database_problems",
    "unconnected_tables",
]


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
    # how each column was written: learned from text, else carried from the frame (see text_formats)
    formats = {} if from_text else dict(formats_of(frame))
    for position, name in enumerate(frame.columns):
        if name in columns:
            continue  # a repeated column name, already reported
        series = frame.iloc[:, position]
        if name == table.primary_key:
            values, issues = coerce_key(series, None, from_text)
            role = "primary key"
        elif name in foreign_keys:
            values, issues = coerce_key(series, parent_key_kinds.get(name), from_text)
            role = _foreign_key_role(table, name, parent_key_kinds.get(name))
        elif name in types:
            values, issues = COERCERS[types[name]](series, from_text)
            role = f"declared {types[name]}"
            if from_text:
                formats[name] = learn_format(types[name], series, values)
        else:
            values, issues, role = series.copy(), [], "undeclared"
        columns[name] = values
        problems += [_issue_problem(table.name, name, role, issue) for issue in issues]
    return with_formats(pd.DataFrame(columns, index=frame.index), formats), problems


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
        frame = numbered(table, frame)  # an association table's rows get their row numbers
        coerced[name], found = coerce_table(table, frame, parent_kinds, from_text=from_text)
        problems += found
        if table.primary_key in coerced[name]:
            key_kinds[name] = key_kind(coerced[name][table.primary_key])
    for name, frame in coerced.items():
        problems += _primary_key_problems(schema[name], frame)
        problems += _orphan_problems(schema, schema[name], frame, coerced)
        problems += hierarchy_problems(schema[name], frame)
    companions = {}
    for table in schema:
        name = companion_name(table)
        if table.anonymize.method == Method.ANATOMIZE and name in database and name not in schema.tables:
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
                    f"the {what} {name!r} is not in the data{did_you_mean(name, undeclared)}; "
                    "add it to the data, or remove it from the schema",
                    table.name,
                    name,
                )
            )
    if undeclared:
        names = ", ".join(repr(str(c)) for c in undeclared[:20]) + (f", ... ({len(undeclared) - 20} more)"
                                                                  if len(undeclared) > 20 else "")
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
        f"the table is not in the database{did_you_mean(name, given)} (tables given: {listing}); "
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


def _issue_problem(table: str, column: str, role: str, issue: Issue) -> Problem:
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


