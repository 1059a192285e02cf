"""Read and write a whole database: a folder of CSV files, a folder of Parquet files, a SQLite file.

A database in memory is a ``dict`` of table name -> :class:`pandas.DataFrame`. In a data store each
table is found under its schema ``source`` name (its table name by default): ``<source>.csv`` or
``<source>.parquet`` in a folder, or the table ``<source>`` of a SQLite file. A SQLAlchemy URL
(``postgresql://user@host/db``) is read and written the same way when SQLAlchemy is installed.

:func:`read_database` applies the schema's types (see :mod:`relanon.schema.validation`) and reports every
problem at once. :func:`write_database` writes everything under a temporary name and renames it
into place when complete, and refuses to write over or inside its input. What is written reads
back identically through the same schema:

- CSV: UTF-8, comma-separated, dates in ISO 8601 (``2024-01-31``, ``2024-01-31 13:45:00``, with
  the offset for time-zone aware columns), whole numbers without ``.0``, booleans as
  ``true``/``false``, missing values as empty cells.
- Parquet: pyarrow, every dtype kept as it is (time zones included).
- SQLite: dates as ISO 8601 text, booleans as 0/1, whole numbers as INTEGER, missing as NULL.

Text storage keeps the instant and offset of an aware date, not the name of its zone, and reads a
column of integer-looking strings back as integers (see :mod:`relanon.schema.validation`): use Parquet
to keep such details exactly.
"""

from __future__ import annotations

import contextlib
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from relanon.common.atomic import atomic_directory, atomic_file, write_text_atomically
from relanon.common.errors import DataError, ParameterError, Problem, StorageError
from relanon.schema.model import Schema
from relanon.schema.shapes import companion_name
from relanon.schema.validation import MISSING_MARKERS, closest_name, coerce_database
from relanon.stores.outputs import (
    FILES_TABLE,
    NOTES_FILE,
    RELEASE_FILES,
    SQLITE_HEADER,
    SQLITE_SUFFIXES,
    check_outputs,
    output_for_database,
    starts_like_sqlite,
)

__all__ = [
    "FILES_TABLE",
    "FORMATS",
    "RELEASE_FILES",
    "detect_format",
    "read_database",
    "read_tables",
    "write_database",
    "write_text_atomically",
]

FORMATS = ("csv", "parquet", "sqlite", "sql")
_SQLITE_SUFFIXES = SQLITE_SUFFIXES
_SQLITE_HEADER = SQLITE_HEADER
_FOLDER_SUFFIX = {"csv": ".csv", "parquet": ".parquet"}
_SEPARATORS = (",", ";", "\t", "|")
_TEXT_STORAGE = ("csv", "sqlite", "sql")
_STR_DTYPES = {pa.string(): pd.StringDtype("pyarrow", na_value=np.nan)}
_MARKER_SPELLINGS = sorted({form for marker in MISSING_MARKERS for form in (marker, marker.lower(), marker.upper())})


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
    if _is_url(location):
        return "sql"
    path = Path(location)
    if path.suffix.lower() in _SQLITE_SUFFIXES or (path.is_file() and starts_like_sqlite(path)):
        return "sqlite"
    if path.is_file():
        raise StorageError(
            f"{str(path)!r} is a single file; give the folder that holds one CSV or Parquet file per "
            "table, or a SQLite file (.sqlite, .sqlite3, .db)"
        )
    if not path.is_dir():
        raise StorageError(f"nothing found at {str(path)!r}: give a folder of CSV or Parquet files, or a SQLite file")
    kinds = [fmt for fmt, suffix in _FOLDER_SUFFIX.items() if _files_with(path, suffix)]
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


def read_database(location, schema: Schema, *, format=None) -> dict[str, pd.DataFrame]:
    """Read every table of ``schema`` from ``location``, checked and with its declared types.

    Parameters
    ----------
    location : str or Path
        A folder of CSV or Parquet files, a SQLite file, or a SQLAlchemy URL.
    schema : Schema
        Each table is read under its ``source`` name.
    format : {"csv", "parquet", "sqlite", "sql"}, optional
        Detected from ``location`` when not given.

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
    with _open_store(location, format) as store:
        found = store.names()
        raw, problems = {}, []
        for table in schema:
            if table.source_name in found:
                raw[table.name] = store.read(table.source_name, typed=True)
            else:
                problems.append(_missing_table_problem(table.name, table.source_name, store, found))
            companion = f"{table.source_name}_sensitive"
            if table.anonymize.method == "anatomize" and companion in found:
                raw[companion_name(table)] = store.read(companion, typed=True)  # an anatomized release
        text = store.format in _TEXT_STORAGE
    coerced, data_problems = coerce_database(schema, raw, from_text=text, report_missing=False)
    problems += data_problems
    if problems:
        raise DataError(f"the database at {_shown(location)} does not fit its schema", problems)
    return coerced


def write_database(database, location, schema: Schema | None = None, *, format=None, inputs=(),
                   files=None, overwrite: bool = False) -> Path | str:
    """Write every table of ``database`` to ``location``, atomically.

    Parameters
    ----------
    database : mapping of str to pandas.DataFrame
        Tables keyed by name; never modified.
    location : str or Path
        A folder (CSV, Parquet), a SQLite file, or a SQLAlchemy URL.
    schema : Schema, optional
        When given, tables are written under their ``source`` names, so that the same schema
        reads the output back. Tables not in the schema keep their own names.
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
        :mod:`relanon.stores.outputs`): a folder is replaced whole; in an existing SQLite file only
        the tables written here are replaced, in one transaction, and its other tables are kept.

    Returns
    -------
    pathlib.Path
        Where the database was written (the URL itself for ``"sql"``).

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
        return _write_sql(tables, str(location))
    path = Path(location)
    if fmt == "sqlite":
        _write_sqlite(tables, path)
    else:
        _write_folder(tables, path, fmt, files)
    return path


# --------------------------------------------------------------------------- stores


class _Store:
    """What a reader needs from a data store: the names of its tables and each table."""

    format = ""

    def __init__(self, location):
        self.location = location

    def names(self) -> list[str]:
        raise NotImplementedError

    def read(self, name: str, *, typed: bool) -> pd.DataFrame:
        """Table ``name``: raw text when ``typed`` (the schema will type it), else pandas' inference."""
        raise NotImplementedError

    def looked_for(self, name: str) -> str:
        return f"table {name!r}"

    def close(self) -> None:
        pass


class _Folder(_Store):
    """A folder holding one ``<name>.csv`` (or ``<name>.parquet``) file per table."""

    def __init__(self, location, fmt: str):
        super().__init__(location)
        self.format, self.suffix = fmt, _FOLDER_SUFFIX[fmt]
        path = Path(location)
        if not path.is_dir():
            what = "nothing" if not path.exists() else "a file"
            raise StorageError(
                f"cannot read {fmt.upper()} tables from {str(path)!r}: {what} is there, "
                f"a folder holding one {self.suffix} file per table is expected"
            )
        self.files = {file.name[: -len(self.suffix)]: file for file in _files_with(path, self.suffix)}

    def names(self) -> list[str]:
        return sorted(self.files)

    def looked_for(self, name: str) -> str:
        return f"file {name + self.suffix!r}"

    def read(self, name: str, *, typed: bool) -> pd.DataFrame:
        path = self.files[name]
        try:
            if self.format == "parquet":
                return pd.read_parquet(path, engine="pyarrow")
            return _read_csv(path, typed=typed)
        except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            raise StorageError(f"cannot read {str(path)!r}: {_reason(exc)}") from exc


class _SqliteFile(_Store):
    format = "sqlite"

    def __init__(self, location):
        super().__init__(location)
        path = Path(location)
        if not path.is_file():
            raise StorageError(f"no SQLite file at {str(path)!r}")
        if not starts_like_sqlite(path):
            raise StorageError(f"{str(path)!r} is not a SQLite database file")
        # read-only: reading must never change the input, not even its journal
        try:
            self.connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the SQLite file {str(path)!r}: {_reason(exc)}") from None

    def names(self) -> list[str]:
        try:
            rows = self.connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            ).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(
                f"cannot read the SQLite file {str(self.location)!r}: {_reason(exc)}; repair it (sqlite3 "
                "'.recover') or export the tables again"
            ) from None
        return sorted(row[0] for row in rows if row[0] != FILES_TABLE)

    def read(self, name: str, *, typed: bool) -> pd.DataFrame:
        try:
            frame = pd.read_sql_query(
                f"SELECT * FROM {_quoted(name)}", self.connection, dtype_backend="numpy_nullable"
            )
        except (sqlite3.Error, pd.errors.DatabaseError) as exc:
            raise StorageError(f"cannot read table {name!r} of {str(self.location)!r}: {_reason(exc)}") from exc
        return _plain_strings(frame)

    def close(self) -> None:
        self.connection.close()


class _SqlUrl(_Store):
    format = "sql"

    def __init__(self, location):
        super().__init__(location)
        sqlalchemy = _sqlalchemy()
        try:
            self.engine = sqlalchemy.create_engine(str(location))
            self.connection = self.engine.connect()
        except Exception as exc:  # drivers raise their own errors; say which database failed
            raise StorageError(f"cannot connect to {_shown(location)}: {_reason(exc)}") from exc
        self.sqlalchemy = sqlalchemy

    def names(self) -> list[str]:
        inspector = self.sqlalchemy.inspect(self.connection)
        names = [*inspector.get_table_names(), *inspector.get_view_names()]
        return sorted(name for name in names if name != FILES_TABLE)

    def read(self, name: str, *, typed: bool) -> pd.DataFrame:
        try:
            frame = pd.read_sql_table(name, self.connection, dtype_backend="numpy_nullable")
        except Exception as exc:  # noqa: BLE001 - any driver error means the table cannot be read
            raise StorageError(f"cannot read table {name!r} of {_shown(self.location)}: {_reason(exc)}") from exc
        return _plain_strings(frame)

    def close(self) -> None:
        self.connection.close()
        self.engine.dispose()


@contextlib.contextmanager
def _open_store(location, format):
    fmt = _checked_format(format) if format is not None else detect_format(location)
    if fmt in _FOLDER_SUFFIX:
        store = _Folder(location, fmt)
    elif fmt == "sqlite":
        store = _SqliteFile(location)
    else:
        store = _SqlUrl(location)
    try:
        yield store
    finally:
        store.close()


def _read_csv(path: Path, *, typed: bool) -> pd.DataFrame:
    # index_col=False: a row longer than the header must not silently turn the first column
    # into an index and shift every value; pandas warns instead, and the warning is an error here
    options = dict(sep=_separator(path), encoding="utf-8-sig", index_col=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            if typed:
                # every cell as text: the schema, not pandas, decides what a value is
                return pd.read_csv(path, dtype="str", keep_default_na=False, na_filter=False, **options)
            return pd.read_csv(path, keep_default_na=False, na_values=_MARKER_SPELLINGS, **options)
        except pd.errors.ParserWarning:
            raise ValueError("a row has more fields than the header line") from None


def _separator(path: Path) -> str:
    """The separator of a CSV file, guessed from its header line (commas unless clearly not)."""
    with open(path, encoding="utf-8-sig", errors="replace") as file:
        header = file.readline()
    counts = {sep: header.count(sep) for sep in _SEPARATORS}
    best = max(counts, key=counts.get)
    return best if counts[best] > counts[","] else ","


def _plain_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """pandas' usual dtypes where nothing is missing (SQL readers give nullable ones throughout)."""
    plain = {}
    for column, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.Float64Dtype | pd.Float32Dtype):
            plain[column] = "float64"
        elif isinstance(dtype, pd.api.extensions.ExtensionDtype) and dtype.kind in "iub" and not frame[column].hasnans:
            plain[column] = "bool" if dtype.kind == "b" else "int64"
    return frame.astype(plain) if plain else frame


def _plain_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """SQL readers give ``string[python]`` text; use pandas' default ``str`` like every other reader."""
    text = [c for c, dtype in frame.dtypes.items() if isinstance(dtype, pd.StringDtype) and dtype != "str"]
    return frame.astype(dict.fromkeys(text, "str")) if text else frame


def _missing_table_problem(name: str, source: str, store: _Store, found: list[str]) -> Problem:
    close = closest_name(source, found)
    hint = f" (did you mean {close!r}? If so, rename it or give the table source: {close})" if close else ""
    there = ", ".join(repr(n) for n in found) if found else "no table at all"
    return Problem(
        f"no {store.looked_for(source)} in {_shown(store.location)}{hint}; found: {there}",
        name,
    )


# --------------------------------------------------------------------------- writing


def _output_format(location, format) -> str:
    if format is not None:
        return _checked_format(format)
    if _is_url(location):
        return "sql"
    path = Path(location)
    if path.suffix.lower() in _SQLITE_SUFFIXES:
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
        elif not output or output.startswith(".") or Path(output).name != output:
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
            tables[output] = frame
    if problems:
        raise DataError("the database cannot be written", problems)
    return tables


def _write_folder(tables: dict[str, pd.DataFrame], path: Path, fmt: str, files: dict[str, str]) -> None:
    suffix = _FOLDER_SUFFIX[fmt]
    clashes = sorted(set(files) & {f"{name}{suffix}" for name in tables})
    if clashes or any(Path(name).name != name or name.startswith(".") for name in files):
        raise StorageError(f"cannot write the notes {sorted(files)} beside the tables; rename them")
    with atomic_directory(path) as tmp:
        for name, frame in tables.items():
            target = tmp / f"{name}{suffix}"
            try:
                if fmt == "parquet":
                    frame.to_parquet(target, engine="pyarrow", index=False)
                else:
                    _as_csv_text(frame).to_csv(target, index=False, encoding="utf-8", lineterminator="\n")
            except (ValueError, TypeError, OSError) as exc:
                raise StorageError(f"cannot write table {name!r} as {fmt.upper()}: {_reason(exc)}") from exc
        # the notes last, release.json the very last: a folder holding it is complete
        for name in sorted(files, key=lambda n: n == NOTES_FILE):
            try:
                (tmp / name).write_text(files[name], encoding="utf-8")
            except OSError as exc:
                raise StorageError(f"cannot write {name!r} in {str(path)!r}: {_reason(exc)}") from exc


def _write_sqlite(tables: dict[str, pd.DataFrame], path: Path) -> None:
    """A new SQLite file is written under a temporary name and renamed; in an existing one (the
    output check allowed it: ``overwrite``) only these tables are replaced, in one transaction."""
    if path.is_file() and path.stat().st_size:
        _fill_sqlite(path, tables, replace=True)
        return
    with atomic_file(path) as tmp:
        _fill_sqlite(tmp, tables, replace=False)


def _fill_sqlite(path: Path, tables: dict[str, pd.DataFrame], *, replace: bool) -> None:
    connection = sqlite3.connect(path, isolation_level=None)  # transactions are ours
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            for name, frame in tables.items():
                if replace:
                    _drop_sqlite_table(connection, name)
                _create_sqlite_table(connection, name, frame)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    except (sqlite3.Error, ValueError, TypeError, OverflowError, OSError) as exc:
        raise StorageError(f"cannot write the SQLite database {str(path)!r}: {_reason(exc)}") from exc
    finally:
        connection.close()


def _drop_sqlite_table(connection, name: str) -> None:
    row = connection.execute("SELECT type FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    if row is not None and row[0] not in ("table", "view"):
        raise StorageError(f"the SQLite file holds an {row[0]} named {name!r}; rename the table or choose another file")
    if row is not None:
        connection.execute(f"DROP {row[0].upper()} {_quoted(name)}")


def _create_sqlite_table(connection, name: str, frame: pd.DataFrame) -> None:
    types = _sqlite_types(frame)
    columns = ", ".join(f"{_quoted(column)} {types[column]}" for column in frame.columns)
    connection.execute(f"CREATE TABLE {_quoted(name)} ({columns})")
    if not len(frame) or not len(frame.columns):
        return
    values = _as_sql_values(frame).astype(object)
    values = values.where(values.notna(), None)
    marks = ", ".join("?" for _ in frame.columns)
    connection.executemany(f"INSERT INTO {_quoted(name)} VALUES ({marks})",
                           (tuple(_sql_scalar(v) for v in row) for row in values.itertuples(index=False, name=None)))


def _sql_scalar(value):
    """numpy scalars as the Python values sqlite3 stores."""
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, str | bytes) else value


def _write_sql(tables: dict[str, pd.DataFrame], url: str) -> str:
    sqlalchemy = _sqlalchemy()
    engine = sqlalchemy.create_engine(url)
    try:
        existing = set(sqlalchemy.inspect(engine).get_table_names())
        clash = sorted(existing & set(tables))
        if clash:
            raise StorageError(
                f"{_shown(url)} already has the table(s) {', '.join(map(repr, clash))}; relanon does not "
                "overwrite database tables: drop them or write to another database"
            )
        # one transaction: the tables appear together or not at all
        with engine.begin() as connection:
            for name, frame in tables.items():
                _as_sql_values(frame).to_sql(name, connection, index=False)
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 - driver errors vary; name the database that failed
        raise StorageError(f"cannot write to {_shown(url)}: {_reason(exc)}") from exc
    finally:
        engine.dispose()
    return url


def _as_csv_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Booleans as ``true``/``false``, floats in their shortest exact form; pandas writes the rest well."""
    changes = {}
    for column, dtype in frame.dtypes.items():
        if pd.api.types.is_bool_dtype(dtype):
            changes[column] = _boolean_words(frame[column])
        elif pd.api.types.is_float_dtype(dtype):
            changes[column] = _shortest_text(frame[column])
    return frame.assign(**changes) if changes else frame


def _boolean_words(values: pd.Series) -> pd.Series:
    words = np.where(values.fillna(False).to_numpy(dtype=bool), "true", "false")
    return pd.Series(words, index=values.index, dtype="str").where(values.notna())


def _shortest_text(values: pd.Series) -> pd.Series:
    """Floats as the shortest text that reads back exactly (``0.1``, ``1e+20``, ``inf``).

    pyarrow formats them ten times faster than ``to_csv``; missing values stay missing.
    """
    text = pc.cast(pa.array(values, from_pandas=True, type=pa.float64()), pa.string())
    return pd.Series(text.to_pandas(types_mapper=_STR_DTYPES.get), index=values.index)


def _as_sql_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Dates as ISO 8601 text and booleans as 0/1, which every SQL database stores alike."""
    changes = {}
    for column, dtype in frame.dtypes.items():
        values = frame[column]
        if isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype):
            changes[column] = values.astype("str").where(values.notna())
        elif pd.api.types.is_bool_dtype(dtype):
            changes[column] = values.astype("Int64")
    return frame.assign(**changes) if changes else frame


def _sqlite_types(frame: pd.DataFrame) -> dict[str, str]:
    types = {}
    for column, dtype in frame.dtypes.items():
        if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
            types[column] = "INTEGER"
        elif pd.api.types.is_float_dtype(dtype):
            types[column] = "REAL"
        else:
            types[column] = "TEXT"
    return types


# --------------------------------------------------------------------------- small helpers


def _checked_format(format) -> str:
    if format not in FORMATS:
        raise ParameterError(f"unknown format {format!r}; expected one of: {', '.join(FORMATS)}")
    return format


def _is_url(location) -> bool:
    return isinstance(location, str) and "://" in location


def _files_with(folder: Path, suffix: str) -> list[Path]:
    try:
        return sorted(
            p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == suffix and not p.name.startswith(".")
        )
    except OSError as exc:
        raise StorageError(f"cannot list the folder {str(folder)!r}: {_reason(exc)}") from None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _shown(location) -> str:
    """A location for a message; a URL loses its password."""
    text = str(location)
    if _is_url(text) and "@" in text:
        scheme, rest = text.split("://", 1)
        credentials, host = rest.rsplit("@", 1)
        text = f"{scheme}://{credentials.split(':', 1)[0]}:***@{host}" if ":" in credentials else text
    return repr(text)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _sqlalchemy():
    try:
        import sqlalchemy
    except ImportError:
        raise StorageError(
            "reading or writing a database URL needs SQLAlchemy and the driver of your database: "
            "pip install sqlalchemy (plus e.g. psycopg for PostgreSQL), or export the tables to "
            "CSV, Parquet or SQLite"
        ) from None
    return sqlalchemy
