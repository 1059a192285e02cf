"""A SQLite file: read read-only, written whole under a temporary name (or, in an existing file the
output check allowed, only the written tables replaced in one transaction).

Dates are stored as ISO 8601 text (with the offset of an aware date), booleans as 0/1, whole numbers
as INTEGER, missing values as NULL.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd

from relanon.common.atomic import atomic_file
from relanon.common.errors import StorageError
from relanon.schema.proposal import DeclaredKeys
from relanon.stores.base import Store, plain_strings, quoted, reason
from relanon.stores.fingerprints import fingerprinted_notes, sqlite_fingerprint
from relanon.stores.outputs import starts_like_sqlite
from relanon.stores.sql import FILES_TABLE
from relanon.stores.sql_write import TableKeys, as_text_values, declared_keys, parents_first


class SqliteFile(Store):
    """A SQLite file opened read-only: reading never changes the input, not even its journal."""

    format = "sqlite"

    def __init__(self, location):
        super().__init__(location)
        path = Path(location)
        if not path.is_file():
            raise StorageError(f"no SQLite file at {str(path)!r}")
        if not starts_like_sqlite(path):
            raise StorageError(f"{str(path)!r} is not a SQLite database file")
        try:
            self.connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the SQLite file {str(path)!r}: {reason(exc)}") from None

    def names(self) -> list[str]:
        try:
            rows = self.connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            ).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(
                f"cannot read the SQLite file {str(self.location)!r}: {reason(exc)}; repair it (sqlite3 "
                "'.recover') or export the tables again"
            ) from None
        return sorted(row[0] for row in rows if row[0] != FILES_TABLE)

    def read(self, name: str, *, typed: bool) -> pd.DataFrame:
        try:
            frame = pd.read_sql_query(f"SELECT * FROM {quoted(name)}", self.connection, dtype_backend="numpy_nullable")
        except (sqlite3.Error, pd.errors.DatabaseError) as exc:
            raise StorageError(f"cannot read table {name!r} of {str(self.location)!r}: {reason(exc)}") from exc
        return plain_strings(frame)

    def declared_keys(self) -> DeclaredKeys:
        """The primary and foreign keys declared in the file (``PRIMARY KEY``, ``REFERENCES``)."""
        primary, foreign = {}, {}
        try:
            for name in self.names():
                info = self.connection.execute(f"PRAGMA table_info({quoted(name)})").fetchall()
                key = tuple(row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5]))
                if key:
                    primary[name] = key
                links = {}
                for row in self.connection.execute(f"PRAGMA foreign_key_list({quoted(name)})").fetchall():
                    number, parent, column, parent_column = row[0], row[2], row[3], row[4]
                    links.setdefault(number, [parent, [], []])
                    links[number][1].append(column)
                    links[number][2].append(parent_column)  # None: the parent's primary key
                if links:
                    foreign[name] = tuple((tuple(cols), parent, tuple(parent_cols))
                                          for parent, cols, parent_cols in links.values())
        except sqlite3.Error as exc:
            raise StorageError(f"cannot read the keys of {str(self.location)!r}: {reason(exc)}") from None
        for name, links in foreign.items():  # a REFERENCES without columns means the parent's primary key
            foreign[name] = tuple((cols, parent, parent_cols if None not in parent_cols else primary.get(parent, ()))
                                  for cols, parent, parent_cols in links)
        return DeclaredKeys(primary, foreign)

    def close(self) -> None:
        self.connection.close()


def write_sqlite(tables: dict[str, pd.DataFrame], path: Path, keys: dict[str, TableKeys] | None = None) -> None:
    """A new SQLite file is written under a temporary name and renamed; in an existing one (the
    output check allowed it: ``overwrite``) only these tables are replaced, in one transaction.

    ``keys`` (written name -> :class:`~relanon.stores.sql_write.TableKeys`) are declared with the tables
    (``PRIMARY KEY``, ``FOREIGN KEY ... REFERENCES``), each table created after the tables it refers to; a
    key the data do not fit (repeated or missing values) is left out, as on a database server."""
    if path.is_file() and path.stat().st_size:
        _fill_sqlite(path, tables, keys or {}, replace=True)
        return
    with atomic_file(path) as tmp:
        _fill_sqlite(tmp, tables, keys or {}, replace=False)


def _fill_sqlite(path: Path, tables: dict[str, pd.DataFrame], keys: dict[str, TableKeys], *, replace: bool) -> None:
    connection = sqlite3.connect(path, isolation_level=None)  # transactions are ours
    data = {name: frame for name, frame in tables.items() if name != FILES_TABLE}
    declared = declared_keys(data, keys)
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            if replace:  # children first: a parent that a kept table refers to is replaced all the same
                for name in reversed(parents_first(tables, declared)):
                    _drop_sqlite_table(connection, name)
            for name in parents_first(data, declared):
                _create_sqlite_table(connection, name, data[name], *declared[name])
            if FILES_TABLE in tables:  # the notes last, with the fingerprints of the tables as stored
                fingerprints = {name: sqlite_fingerprint(connection, name) for name in tables if name != FILES_TABLE}
                _create_sqlite_table(connection, FILES_TABLE, fingerprinted_notes(tables[FILES_TABLE], fingerprints))
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    except (sqlite3.Error, ValueError, TypeError, OverflowError, OSError) as exc:
        raise StorageError(f"cannot write the SQLite database {str(path)!r}: {reason(exc)}") from exc
    finally:
        connection.close()


def _drop_sqlite_table(connection, name: str) -> None:
    row = connection.execute("SELECT type FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    if row is not None and row[0] not in ("table", "view"):
        raise StorageError(f"the SQLite file holds an {row[0]} named {name!r}; rename the table or choose another file")
    if row is not None:
        connection.execute(f"DROP {row[0].upper()} {quoted(name)}")


def _create_sqlite_table(connection, name: str, frame: pd.DataFrame, key=(), links=None) -> None:
    types = _sqlite_types(frame)
    if len(key) == 1 and types[key[0]] == "INTEGER":
        # an INTEGER PRIMARY KEY would be the rowid, and SQLite would return the rows in key order; INT has the
        # same (integer) affinity and keeps the rows in the order written
        types[key[0]] = "INT"
    parts = [f"{quoted(column)} {types[column]}{' NOT NULL' if column in key else ''}" for column in frame.columns]
    if key:
        parts.append(f"PRIMARY KEY ({', '.join(quoted(c) for c in key)})")
    parts += [f"FOREIGN KEY ({quoted(column)}) REFERENCES {quoted(parent)} ({quoted(parent_column)})"
              for column, (parent, parent_column) in (links or {}).items()]
    connection.execute(f"CREATE TABLE {quoted(name)} ({', '.join(parts)})")
    if not len(frame) or not len(frame.columns):
        return
    values = as_text_values(frame).astype(object)
    values = values.where(values.notna(), None)
    marks = ", ".join("?" for _ in frame.columns)
    connection.executemany(f"INSERT INTO {quoted(name)} VALUES ({marks})",
                           (tuple(_sql_scalar(v) for v in row) for row in values.itertuples(index=False, name=None)))


def _sql_scalar(value):
    """numpy scalars as the Python values sqlite3 stores."""
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, str | bytes) else value


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
