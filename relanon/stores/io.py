"""Read and write a whole database: a folder of CSV files, a folder of Parquet files, a SQLite file,
a database server (PostgreSQL and others, through SQLAlchemy).

A database in memory is a ``dict`` of table name -> :class:`pandas.DataFrame`. In a data store each
table is found under its schema ``source`` name (its table name by default): ``<source>.csv`` or
``<source>.parquet`` in a folder, or the table ``<source>`` of a SQLite file or of a database URL
(``postgresql://user@host/db?schema=name``, see :mod:`relanon.stores.sql`).

:func:`read_database` applies the schema's types (see :mod:`relanon.schema.validation`) and reports every
problem at once. :func:`write_database` writes everything under a temporary name and renames it
into place when complete, and refuses to write over or inside its input. What is written reads
back identically through the same schema:

- CSV: UTF-8, comma-separated, missing values as empty cells; each column in the format its input
  was written in when it was read from text (:mod:`relanon.schema.text_formats`: ``Y``/``N``,
  ``31/12/2020``, ``2013-01-01T11:00:00Z``, ``7.0``), else dates in ISO 8601 (``2024-01-31``,
  ``2024-01-31 13:45:00``, with the offset for time-zone aware columns), whole numbers without
  ``.0``, booleans as ``true``/``false``.
- Parquet: pyarrow, every dtype kept as it is (time zones included).
- SQLite: dates as ISO 8601 text, booleans as 0/1, whole numbers as INTEGER, missing as NULL.
- A database server: the server's own types (``bigint``, ``double precision``, ``boolean``, ``date``,
  ``timestamp`` with or without time zone, ``text``), primary and foreign keys declared.

Text storage keeps the instant and offset of an aware date, not the name of its zone, and reads a
column of integer-looking strings back as integers (see :mod:`relanon.schema.validation`): use Parquet
to keep such details exactly.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pandas as pd

from relanon.common.atomic import write_text_atomically
from relanon.common.errors import DataError, ParameterError, Problem, StorageError
from relanon.common.options import FORMATS, closest_name
from relanon.schema.associations import unnumbered
from relanon.schema.model import Schema
from relanon.schema.proposal import DeclaredKeys
from relanon.schema.shapes import companion_name
from relanon.schema.structure import is_writable_name
from relanon.schema.validation import coerce_database
from relanon.stores.base import Store, is_url, shown
from relanon.stores.folder import FOLDER_SUFFIX, FolderStore, files_with, write_folder
from relanon.stores.outputs import (
    FILES_TABLE,
    RELEASE_FILES,
    SQLITE_SUFFIXES,
    DatabaseUrl,
    check_outputs,
    output_for_database,
    starts_like_sqlite,
)
from relanon.stores.partitioned import is_partitioned
from relanon.stores.sql import SqlDatabase
from relanon.stores.sql_write import TableKeys, write_tables
from relanon.stores.sqlite import SqliteFile, write_sqlite

__all__ = [
    "FILES_TABLE",
    "FORMATS",
    "RELEASE_FILES",
    "declared_keys",
    "detect_format",
    "output_format",
    "read_database",
    "read_tables",
    "write_database",
    "write_text_atomically",
]



# --------------------------------------------------------------------------- public API


def detect_format(location) -> str:
    """The storage format of ``location``: ``"csv"``, ``"parquet"``, ``"sqlite"`` or ``"sql"``.

    A URL with ``://`` is a SQLAlchemy database (``"sql"``); a file ending in ``.sqlite``,
    ``.sqlite3`` or ``.db``, or starting with the SQLite header, is ``"sqlite"``; a folder is
    ``"csv"`` or ``"parquet"`` after the files it holds.

    Raises
    ------
    StorageError
        When nothing is at ``location``, or when it holds no table or both kinds of files.

    Examples
    --------
    >>> detect_format("postgresql://user@localhost/hospital")
    'sql'
    >>> detect_format("hospital.sqlite")
    'sqlite'
    """
    if is_url(location):
        return "sql"
    path = Path(location)
    if path.suffix.lower() in SQLITE_SUFFIXES or (path.is_file() and starts_like_sqlite(path)):
        return "sqlite"
    if path.is_file():
        raise StorageError(
            f"{str(path)!r} is a single file; give the folder that holds one CSV or Parquet file per "
            "table, or a SQLite file (.sqlite, .sqlite3, .db)"
        )
    if not path.is_dir():
        raise StorageError(f"nothing found at {str(path)!r}: give a folder of CSV or Parquet files, or a SQLite file")
    kinds = [fmt for fmt, suffix in FOLDER_SUFFIX.items() if files_with(path, suffix)]
    if "parquet" not in kinds and is_partitioned(path):
        kinds.append("parquet")  # tables as directories of Parquet files (Dask, Spark)
    if len(kinds) == 1:
        return kinds[0]
    if not kinds:
        raise StorageError(f"the folder {str(path)!r} holds no .csv or .parquet file: one file per table is expected")
    raise StorageError(
        f"the folder {str(path)!r} holds both .csv and .parquet files; say which to read with format='csv' "
        "or format='parquet'"
    )


def read_tables(location, *, format=None) -> dict[str, pd.DataFrame]:
    """Every table found at ``location``, with pandas' own type inference (no schema involved).

    Meant for proposing a schema: CSV cells listed in
    :data:`relanon.schema.validation.MISSING_MARKERS` are missing, numbers are inferred, dates stay text.

    Parameters
    ----------
    location : str or Path
        A folder of CSV or Parquet files, a SQLite file, or a SQLAlchemy URL.
    format : {"csv", "parquet", "sqlite", "sql"}, optional
        Detected from ``location`` when not given (see :func:`detect_format`).

    Returns
    -------
    dict of str to pandas.DataFrame
        Keyed by the name in the store (file name without its suffix, or table name), sorted.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> folder = Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"id": [1, 2], "city": ["Lyon", None]}).to_csv(folder / "people.csv", index=False)
    >>> read_tables(folder)["people"].dtypes.astype(str).to_dict()
    {'id': 'int64', 'city': 'str'}
    """
    with _open_store(location, format) as store:
        return {name: _plain_dtypes(store.read(name, typed=False)) for name in store.names()}


def read_database(location, schema: Schema, *, format=None, progress=None) -> dict[str, pd.DataFrame]:
    """Read every table of ``schema`` from ``location``, checked and with its declared types.

    Parameters
    ----------
    location : str or Path
        A folder of CSV or Parquet files, a SQLite file, or a SQLAlchemy URL.
    schema : Schema
        Each table is read under its ``source`` name.
    format : {"csv", "parquet", "sqlite", "sql"}, optional
        Detected from ``location`` when not given.
    progress : callable, optional
        Called as ``progress(done, total)`` as tables are read (the checks count as one more), so a
        :class:`relanon.common.progress.Progress` step draws a bar.

    Returns
    -------
    dict of str to pandas.DataFrame
        Keyed by schema table name, in schema order, with the dtypes described in
        :mod:`relanon.schema.validation`.

    Raises
    ------
    DataError
        Listing every problem: missing tables (with what is there), missing or undeclared
        columns, values that do not fit, duplicated or null keys, orphan foreign keys.
    StorageError
        When ``location`` cannot be read at all.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from relanon.schema.model import load_schema
    >>> folder = Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"id": [1, 2], "born": ["1980-02-29", ""]}).to_csv(folder / "people.csv", index=False)
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "columns": {"born": "datetime"}}}})
    >>> read_database(folder, schema)["people"].dtypes.astype(str).to_dict()
    {'id': 'int64', 'born': 'datetime64[us]'}
    """
    report = progress or (lambda done, total: None)
    with _open_store(location, format) as store:
        found = store.names()
        raw, problems = {}, []
        for done, table in enumerate(schema):
            report(done, len(schema) + 1)
            if table.source_name in found:
                raw[table.name] = store.read(table.source_name, typed=True)
            else:
                problems.append(_missing_table_problem(table.name, table.source_name, store, found))
            companion = f"{table.source_name}_sensitive"
            if table.anonymize.method == "anatomize" and companion in found:
                raw[companion_name(table)] = store.read(companion, typed=True)  # an anatomized release
        text = store.text_storage
    report(len(schema), len(schema) + 1)
    coerced, data_problems = coerce_database(schema, raw, from_text=text, report_missing=False)
    report(len(schema) + 1, len(schema) + 1)
    problems += data_problems
    if problems:
        raise DataError(f"the database at {shown(location)} does not fit its schema", problems)
    return coerced


def write_database(database, location, schema: Schema | None = None, *, format=None, inputs=(),
                   files=None, overwrite: bool = False) -> Path | str:
    """Write every table of ``database`` to ``location``, atomically.

    Parameters
    ----------
    database : mapping of str to pandas.DataFrame
        Tables keyed by name; never modified.
    location : str or Path
        A folder (CSV, Parquet), a SQLite file, or a SQLAlchemy URL (``?schema=name`` for a schema
        of its own; see :mod:`relanon.stores.sql`).
    schema : Schema, optional
        When given, tables are written under their ``source`` names, so that the same schema
        reads the output back, and a database server gets their primary and foreign keys
        declared. Tables not in the schema keep their own names.
    format : {"csv", "parquet", "sqlite", "sql"}, optional
        By default: ``"sql"`` for a URL, ``"sqlite"`` for a ``.sqlite``/``.sqlite3``/``.db`` path,
        the format of an existing folder, else ``"csv"``.
    inputs : iterable of paths
        Locations the data came from: writing over or inside them is refused.
    files : mapping of str to str, optional
        Text files that belong with the database (release notes, its schema), written in the same
        atomic step: inside the folder for CSV and Parquet (``release.json`` last), as rows of a
        ``relanon_files`` table (``name``, ``content``) in a SQL database.
    overwrite : bool, default False
        Replace what exists at ``location`` even when relanon did not write it (see
        :mod:`relanon.stores.outputs`): a folder is replaced whole; in an existing SQLite file or
        database schema only the tables written here are replaced, in one transaction, and its other
        tables are kept. A database schema holding a release relanon wrote is replaced without it.

    Returns
    -------
    pathlib.Path or str
        Where the database was written (the URL itself for ``"sql"``: print it with
        :func:`relanon.stores.base.masked`).

    Raises
    ------
    StorageError
        When the output would overwrite an input, when something relanon did not write exists at
        ``location`` (without ``overwrite``), or when writing fails (nothing is left half-written).

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> out = write_database({"people": pd.DataFrame({"id": [1, 2], "smoker": [True, False]})},
    ...                      Path(tempfile.mkdtemp()) / "release")
    >>> print((out / "people.csv").read_text())
    id,smoker
    1,true
    2,false
    <BLANKLINE>
    """
    fmt = _output_format(location, format)
    inputs = [inputs] if isinstance(inputs, str | Path) else [i for i in inputs if i is not None]
    tables = _named_for_output(database, schema)
    files = dict(files or {})
    if files and fmt in ("sqlite", "sql"):
        if FILES_TABLE in tables:
            raise StorageError(f"a table is named {FILES_TABLE!r}, which relanon uses for its notes; rename it")
        tables[FILES_TABLE] = pd.DataFrame({"name": list(files), "content": list(files.values())})
    check_outputs([output_for_database(location, fmt, overwrite=overwrite)], inputs)
    if fmt == "sql":
        output = DatabaseUrl(str(location), overwrite=overwrite)
        write_tables(str(location), tables, _keys_for_output(schema, tables), output.replaced_tables(tables))
        return str(location)
    path = Path(location)
    if fmt == "sqlite":
        write_sqlite(tables, path, _keys_for_output(schema, tables))
    else:
        write_folder(tables, path, fmt, files)
    return path


def declared_keys(location, *, format=None) -> DeclaredKeys:
    """The primary and foreign keys a database declares (a server's or a SQLite file's constraints);
    none for folders of files. :func:`relanon.schema.proposal.propose_schema` prefers them to guessing.

    Examples
    --------
    >>> import sqlite3, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "shop.sqlite"
    >>> with sqlite3.connect(path) as connection:
    ...     _ = connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, age INTEGER)")
    ...     _ = connection.execute("CREATE TABLE orders (ref TEXT PRIMARY KEY, buyer INTEGER REFERENCES customers(id))")
    >>> keys = declared_keys(path)
    >>> keys.primary_keys["orders"], keys.foreign_keys["orders"]
    (('ref',), ((('buyer',), 'customers', ('id',)),))
    """
    with _open_store(location, format) as store:
        found = getattr(store, "declared_keys", None)
        return found() if found is not None else DeclaredKeys()


def output_format(location, format=None, *, like=None) -> str:
    """The format a database is written in at ``location``: ``"sql"`` for a URL; else ``format``
    when given; else ``like`` (the input's format) unless that is a server, for which the path
    decides (``.sqlite``/``.sqlite3``/``.db``: SQLite; an existing folder: its format; else CSV).

    Examples
    --------
    >>> output_format("postgresql://me@localhost/clinic?schema=release", like="csv")
    'sql'
    >>> output_format("released/", like="sql"), output_format("released.sqlite", like="sql")
    ('csv', 'sqlite')
    """
    if is_url(location):
        if format not in (None, "sql"):
            raise ParameterError(f"a database URL is written as tables of that database, not as {format!r}: "
                                 "leave out the output format, or give a folder or a SQLite file")
        return "sql"
    if format is not None:
        return _checked_format(format)
    if like is not None and like != "sql":
        return _checked_format(like)
    return _output_format(location, None)


# --------------------------------------------------------------------------- stores


@contextlib.contextmanager
def _open_store(location, format):
    fmt = _checked_format(format) if format is not None else detect_format(location)
    if fmt in FOLDER_SUFFIX:
        store = FolderStore(location, fmt)
    elif fmt == "sqlite":
        store = SqliteFile(location)
    else:
        store = SqlDatabase(location)
    try:
        yield store
    finally:
        store.close()


def _plain_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """pandas' usual dtypes where nothing is missing (SQL readers give nullable ones throughout)."""
    plain = {}
    for column, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.Float64Dtype | pd.Float32Dtype):
            plain[column] = "float64"
        elif isinstance(dtype, pd.api.extensions.ExtensionDtype) and dtype.kind in "iub" and not frame[column].hasnans:
            plain[column] = "bool" if dtype.kind == "b" else "int64"
    return frame.astype(plain) if plain else frame


def _missing_table_problem(name: str, source: str, store: Store, found: list[str]) -> Problem:
    close = closest_name(source, found)
    hint = f" (did you mean {close!r}? If so, rename it or give the table source: {close})" if close else ""
    there = ", ".join(repr(n) for n in found) if found else "no table at all"
    return Problem(
        f"no {store.looked_for(source)} in {shown(store.location)}{hint}; found: {there}",
        name,
    )


# --------------------------------------------------------------------------- writing


def _output_format(location, format) -> str:
    if format is not None:
        return _checked_format(format)
    if is_url(location):
        return "sql"
    path = Path(location)
    if path.suffix.lower() in SQLITE_SUFFIXES:
        return "sqlite"
    if path.is_dir() and any(path.iterdir()):
        with contextlib.suppress(StorageError):
            return detect_format(path)
    return "csv"


def _named_for_output(database, schema: Schema | None) -> dict[str, pd.DataFrame]:
    """Output name -> frame: the schema ``source`` of each table, or its own name."""
    if not hasattr(database, "items"):
        raise ParameterError(f"expected a dict of table name -> DataFrame, got {type(database).__name__}")
    tables, problems = {}, []
    for name, frame in database.items():
        output = schema.tables[name].source_name if schema is not None and name in schema.tables else str(name)
        if not isinstance(frame, pd.DataFrame):
            problems.append(Problem(f"expected a pandas DataFrame, got {type(frame).__name__}", str(name)))
        elif not is_writable_name(output):
            problems.append(
                Problem(f"{output!r} cannot be used as a file or table name; rename the table", str(name))
            )
        elif output in tables:
            problems.append(Problem(f"two tables would be written as {output!r}; rename one", str(name)))
        elif any(not isinstance(c, str) for c in frame.columns):
            bad = [c for c in frame.columns if not isinstance(c, str)]
            problems.append(
                Problem("column names must be text to be written; rename them", str(name), None, tuple(bad))
            )
        else:
            tables[output] = unnumbered(schema.tables[name], frame) if schema is not None and name in schema.tables \
                else frame
    if problems:
        raise DataError("the database cannot be written", problems)
    return tables


def _keys_for_output(schema: Schema | None, tables) -> dict[str, TableKeys]:
    """The keys declared with each written table (a server declares its primary and foreign keys)."""
    if schema is None:
        return {}
    keys = {}
    for table in schema:
        if table.source_name not in tables:
            continue
        links = tuple((fk.column, schema[fk.references].source_name, schema[fk.references].primary_key)
                      for fk in table.foreign_keys if fk.references in schema.tables)
        # an association table's key is its combination of parents (declared when it is unique)
        key = table.foreign_key_columns if table.association else table.primary_key
        keys[table.source_name] = TableKeys(key, links)
    return keys


# --------------------------------------------------------------------------- small helpers


def _checked_format(format) -> str:
    if format not in FORMATS:
        raise ParameterError(f"unknown format {format!r}; expected one of: {', '.join(FORMATS)}")
    return format


