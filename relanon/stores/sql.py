"""Databases in a server, through SQLAlchemy: PostgreSQL (tested against a real server), and the other
databases SQLAlchemy reaches (MySQL/MariaDB, SQL Server, Oracle...) through the same code.

A location is a SQLAlchemy URL: ``postgresql://user@host:5432/clinic?schema=release``. The option
``schema`` names the schema read or written (PostgreSQL: a schema; by default the connection's own,
``public``); every other option goes to the driver. ``postgresql://`` uses psycopg 3 when it is
installed (the ``postgres`` extra: ``pip install -e ".[postgres]"``). The password is the driver's business as usual: in
the URL, or for PostgreSQL ``PGPASSWORD`` or a ``~/.pgpass`` file; relanon masks it in every message.

Reading, a block at a time so that memory stays close to the size of the data frame: PostgreSQL with
psycopg sends each table through ``COPY (SELECT ...) TO STDOUT`` as CSV, which pyarrow parses with
each column's type as it streams in (blocks of :data:`CHUNK_BYTES`); other databases go through a
server-side cursor, :data:`CHUNK_ROWS` rows at a time, each chunk turned at once into Arrow columns.
The connection is read-only on PostgreSQL.
Types come from the server: integers (``Int64`` with NULLs), floating numbers, ``numeric`` (as
floating numbers, or integers when it has no decimals), booleans, dates and timestamps (with or
without time zone) as ``datetime64``, text, ``varchar`` and enums as text (categories), anything
else (``uuid``, ``json``, ``interval``...) as its text. The relanon schema then applies its types.

Writing is :mod:`relanon.stores.sql_write`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from relanon.common.errors import StorageError
from relanon.schema.proposal import DeclaredKeys
from relanon.stores.base import Store, scrubbed, shown

__all__ = ["CHUNK_BYTES", "CHUNK_ROWS", "FILES_TABLE", "SCHEMA_OPTION", "SchemaContents", "SqlDatabase",
           "contents_of", "database_label", "driver_failure", "engine_for", "has_copy", "resolved_place", "same_place",
           "schema_contents", "sqlalchemy", "url_schema"]

FILES_TABLE = "relanon_files"  # notes stored with a database in SQL (folders hold them as files)
SCHEMA_OPTION = "schema"
CHUNK_ROWS = 50_000
CHUNK_BYTES = 8 << 20  # COPY text parsed per block: memory stays close to the data frame's
CONNECT_TIMEOUT = 15  # seconds: an unreachable server is an error, not a hang
INSTALL = ('reading or writing a database URL needs SQLAlchemy and the driver of your database: '
           'pip install -e ".[postgres]" (from relanon\'s clone) for PostgreSQL (SQLAlchemy and psycopg), or sqlalchemy plus '
           'your driver for another database; or export the tables to CSV, Parquet or SQLite')
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306, "mssql": 1433, "oracle": 1521}
_DEFAULT_SCHEMAS = {"postgresql": "public"}
_LOCAL_HOSTS = {"", "localhost", "127.0.0.1", "::1"}
_STR = pd.StringDtype("pyarrow", na_value=np.nan)
_TO_PANDAS = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(), pa.string(): _STR}.get


@dataclass(frozen=True)
class SchemaContents:
    """What a schema of a database holds, for the output rule: its tables and views, and the notes
    relanon stores with a release (``None`` when there is no readable notes table)."""

    exists: bool
    tables: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    files: Mapping[str, str] | None = field(default=None)


# --------------------------------------------------------------------------- URLs


def database_label(location) -> str:
    """A short name for the database at a URL (its database name, or the file of a SQLite URL).

    Examples
    --------
    >>> database_label("postgresql://me:secret@db.example.org/clinic?schema=release")
    'clinic'
    """
    parts = urlsplit(str(location))
    name = parts.path.rstrip("/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if parts.scheme.startswith("sqlite") and "." in name else (name or parts.hostname or "database")


def url_schema(location) -> str | None:
    """The schema a URL names (its ``schema`` option), or None for the connection's default one."""
    return dict(parse_qsl(urlsplit(str(location)).query)).get(SCHEMA_OPTION) or None


def same_place(a, b) -> bool:
    """Whether two URLs name the same schema of the same database (users and drivers aside; every
    spelling of this machine is one host, and a missing schema is the default one).

    Examples
    --------
    >>> same_place("postgresql://a@localhost/clinic", "postgresql+psycopg://b:pw@127.0.0.1:5432/clinic?schema=public")
    True
    >>> same_place("postgresql://a@localhost/clinic", "postgresql://a@localhost/clinic?schema=release")
    False
    """
    return _place(a) == _place(b)


def _place(location) -> tuple:
    parts = urlsplit(str(location))
    family = parts.scheme.split("+", 1)[0].lower()
    family = "postgresql" if family == "postgres" else family
    options = dict(parse_qsl(parts.query))
    host = (parts.hostname or "").lower()
    host = "local" if host in _LOCAL_HOSTS or host.startswith("/") or options.get("host", "").startswith("/") else host
    try:
        port = parts.port or _DEFAULT_PORTS.get(family)
    except ValueError:
        port = None
    schema = url_schema(location) or _DEFAULT_SCHEMAS.get(family)
    return family, host, port, parts.path.strip("/"), schema


def resolved_place(location) -> tuple:
    """Where a URL leads, as the server says: for PostgreSQL, the cluster (its system identifier, else
    its address and port), the database (its oid) and the schema (the ``schema`` option, else the
    connection's ``current_schema()``, which follows ``search_path`` set by ``options=-csearch_path=...``
    in the URL, ``PGOPTIONS`` or the role's settings); other databases: as :func:`same_place` reads
    the URL. Two URLs of the same place have the same resolved place, however they are spelled.
    """
    text_place = _place(location)
    if text_place[0] != "postgresql":
        return text_place
    sa = sqlalchemy()
    engine, schema = engine_for(location)
    try:
        with engine.connect() as connection:
            database, current, address, port, oid = connection.exec_driver_sql(
                "SELECT current_database(), current_schema(), host(inet_server_addr()), inet_server_port(), "
                "(SELECT oid FROM pg_database WHERE datname = current_database())").one()
            try:
                with connection.begin_nested():  # pg_control_system() may be denied to the role
                    cluster = connection.exec_driver_sql("SELECT system_identifier FROM pg_control_system()").scalar()
            except sa.exc.SQLAlchemyError:
                cluster = None
    except Exception as exc:  # noqa: BLE001 - drivers raise their own errors
        raise driver_failure("cannot connect to", location, exc) from None
    finally:
        engine.dispose()
    server = f"cluster {cluster}" if cluster is not None else (
        f"{address}:{port}" if address is not None else f"{text_place[1]}:{text_place[2]}")
    return "postgresql", server, oid if oid is not None else database, schema or current or text_place[4]


def sqlalchemy():
    """The ``sqlalchemy`` module, or a :class:`StorageError` saying what to install."""
    try:
        import sqlalchemy
    except ImportError:
        raise StorageError(INSTALL) from None
    return sqlalchemy


def engine_for(location):
    """(engine, schema) for a URL: the ``schema`` option taken out, psycopg 3 for ``postgresql://``."""
    sa = sqlalchemy()
    try:
        url = sa.engine.make_url(str(location))
    except (sa.exc.ArgumentError, ValueError) as exc:
        raise StorageError(f"{shown(location)} is not a database URL ({scrubbed(str(exc), location)}); "
                           "write it as dialect://user@host:port/database?schema=name") from None
    schema = url.query.get(SCHEMA_OPTION)
    schema = schema[-1] if isinstance(schema, tuple) else schema
    url = url.difference_update_query([SCHEMA_OPTION])
    options = {}
    if url.get_backend_name() == "postgresql":
        if url.drivername == "postgresql" and importlib.util.find_spec("psycopg") is not None:
            url = url.set(drivername="postgresql+psycopg")
        options["connect_args"] = {"application_name": "relanon"}
        if "connect_timeout" not in url.query:
            options["connect_args"]["connect_timeout"] = CONNECT_TIMEOUT
    try:
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool, **options)
    except Exception as exc:  # noqa: BLE001 - a missing driver raises ImportError, others their own
        hint = ""
        if isinstance(exc, ImportError):
            hint = ' (pip install -e ".[postgres]" from relanon\'s clone)' if url.get_backend_name() == "postgresql" else " (install its driver)"
        raise driver_failure(f"cannot use the database URL{hint}", location, exc) from None
    return engine, schema or None


def driver_failure(what: str, location, exc: BaseException) -> StorageError:
    """A one-line error of relanon's own from a driver's error: no SQL, no parameters, no password."""
    original = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(original).strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("(Background on this error", "[SQL:", "[parameters:"))]
    text = "; ".join(lines[:3]) or type(original).__name__
    if text.startswith("(") and ") " in text:  # "(psycopg.OperationalError) connection failed: ..."
        text = text.split(") ", 1)[1]
    if "password authentication failed" in text or "no password supplied" in text:
        text += ("; check the user and password (in the URL, in PGPASSWORD or in ~/.pgpass; "
                 "relanon never prints it)")
    return StorageError(f"{what} {shown(location)}: {scrubbed(text, location)}")


# --------------------------------------------------------------------------- reading


class SqlDatabase(Store):
    """One schema of a database reached through SQLAlchemy, open for reading."""

    format = "sql"

    def __init__(self, location):
        super().__init__(location)
        sa = self.sa = sqlalchemy()
        self.engine, self.schema = engine_for(location)
        try:
            self.connection = self.engine.connect()
            if self.engine.dialect.name == "postgresql":  # the input is only read: the server holds us to it
                self.connection = self.connection.execution_options(postgresql_readonly=True)
            self.inspector = sa.inspect(self.connection)
        except Exception as exc:  # noqa: BLE001 - drivers raise their own errors; say which database failed
            self.engine.dispose()
            raise driver_failure("cannot connect to", location, exc) from None
        self.text_storage = self.engine.dialect.name == "sqlite"  # SQLite keeps dates as text
        if self.schema is not None and not self._guarded(lambda: self.inspector.has_schema(self.schema)):
            found = ", ".join(repr(s) for s in self._guarded(self.inspector.get_schema_names))
            self.close()
            raise StorageError(f"no schema {self.schema!r} in {shown(location)}; found: {found}")

    def names(self) -> list[str]:
        names = self._guarded(lambda: [*self.inspector.get_table_names(schema=self.schema),
                                       *self.inspector.get_view_names(schema=self.schema)])
        return sorted(name for name in names if name != FILES_TABLE)

    def read(self, name: str, *, typed: bool) -> pd.DataFrame:
        table = self.read_arrow(name)
        return table.to_pandas(types_mapper=_TO_PANDAS, self_destruct=True, split_blocks=True)

    def read_arrow(self, name: str) -> pa.Table:
        """Table ``name`` as Arrow columns, in the chunks it was read in."""
        columns = self._guarded(lambda: self.inspector.get_columns(name, schema=self.schema), f"table {name!r} of")
        kinds = [_read_kind(self.sa, column["type"], self.text_storage) for column in columns]
        names = [column["name"] for column in columns]
        table = self._copied(name, names, kinds) if has_copy(self.connection) else None
        return table if table is not None else self._fetched(name, names, kinds)

    def _copied(self, name: str, names: list[str], kinds: list[str]) -> pa.Table | None:
        """PostgreSQL with psycopg: ``COPY (SELECT ...) TO STDOUT`` as CSV, parsed by pyarrow as it
        streams in, each column with its type. None when a value is beyond what the CSV types parse
        (a date before year 1): the table is then fetched row by row."""
        preparer = self.connection.dialect.identifier_preparer
        table = preparer.quote(name) if self.schema is None else f"{preparer.quote_schema(self.schema)}.{preparer.quote(name)}"
        selected = ", ".join(_copy_expression(preparer.quote(column), kind) for column, kind in zip(names, kinds, strict=True))
        statement = f"COPY (SELECT {selected} FROM {table}) TO STDOUT (FORMAT csv)"
        types = {column: _COPY_TYPES[kind] for column, kind in zip(names, kinds, strict=True)}
        driver = self.connection.connection.driver_connection
        try:
            with driver.transaction(), driver.cursor() as cursor:
                cursor.execute("SET LOCAL DateStyle = 'ISO'; SET LOCAL extra_float_digits = 3")
                with cursor.copy(statement) as copy:
                    reader = pa_csv.open_csv(
                        io.BufferedReader(_CopyStream(copy), buffer_size=1 << 20),
                        read_options=pa_csv.ReadOptions(column_names=names, block_size=CHUNK_BYTES, use_threads=False),
                        parse_options=pa_csv.ParseOptions(newlines_in_values=True),
                        convert_options=pa_csv.ConvertOptions(
                            column_types=types, null_values=[""], true_values=["t"], false_values=["f"],
                            strings_can_be_null=True, quoted_strings_can_be_null=False),
                    )
                    table = reader.read_all()
        except pa.ArrowInvalid:
            return None
        except Exception as exc:  # noqa: BLE001 - any driver error means the table cannot be read
            raise driver_failure(f"cannot read table {name!r} of", self.location, exc) from None
        for position, kind in enumerate(kinds):
            if kind in ("date", "timestamptz"):  # dates in memory are datetime64; UTC instants get their zone
                target = pa.timestamp("us", tz="UTC" if kind == "timestamptz" else None)
                table = table.set_column(position, names[position], pc.cast(table.column(position), target))
        return table

    def _fetched(self, name: str, names: list[str], kinds: list[str]) -> pa.Table:
        """Any database: rows from a server-side cursor, a chunk at a time, into typed Arrow columns."""
        sa = self.sa
        selected = [_selected(sa, column, kind) for column, kind in zip(names, kinds, strict=True)]
        query = sa.select(*selected).select_from(sa.table(name, schema=self.schema))
        chunks: list[list[pa.Array]] = [[] for _ in names]
        try:
            result = self.connection.execution_options(stream_results=True, yield_per=CHUNK_ROWS).execute(query)
            for rows in result.partitions(CHUNK_ROWS):
                for position, values in enumerate(zip(*rows, strict=True)):
                    kinds[position] = _append(chunks[position], values, kinds[position])
        except Exception as exc:  # noqa: BLE001 - any driver error means the table cannot be read
            raise driver_failure(f"cannot read table {name!r} of", self.location, exc) from None
        finally:
            with contextlib.suppress(Exception):  # end the read-only transaction of the server-side cursor
                self.connection.rollback()
        arrays = [_finished(pieces, kind) for pieces, kind in zip(chunks, kinds, strict=True)]
        return pa.Table.from_arrays(arrays, names=names)

    def files(self) -> dict[str, str] | None:
        """The notes stored with a release (``relanon_files``), or None."""
        return _files(self.sa, self.connection, self.schema)

    def declared_keys(self) -> DeclaredKeys:
        """The primary keys and the foreign keys (within the schema) that the database declares."""
        primary, foreign = {}, {}
        for name in self.names():
            key = self._guarded(lambda n=name: self.inspector.get_pk_constraint(n, schema=self.schema), "keys of")
            if key and key.get("constrained_columns"):
                primary[name] = tuple(key["constrained_columns"])
            links = self._guarded(lambda n=name: self.inspector.get_foreign_keys(n, schema=self.schema), "keys of")
            links = tuple((tuple(link["constrained_columns"]), link["referred_table"], tuple(link["referred_columns"]))
                          for link in links if link.get("referred_schema") in (None, self.schema))
            if links:
                foreign[name] = links
        return DeclaredKeys(primary, foreign)

    def close(self) -> None:
        try:
            self.connection.close()
        finally:
            self.engine.dispose()

    def _guarded(self, call, what: str = ""):
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - driver and reflection errors alike
            raise driver_failure(f"cannot read the {what + ' ' if what else ''}database", self.location, exc) from None


def _read_kind(sa, sql_type, text_storage: bool) -> str:
    """How a column is read: ``int``, ``float``, ``bool``, ``date``, ``timestamp``, ``timestamptz``,
    ``text``; ``numeric`` and ``numeric0`` are cast on the server; ``other`` is read as its text."""
    if isinstance(sql_type, sa.Boolean):
        return "bool"
    if isinstance(sql_type, sa.Integer):
        return "int"
    if isinstance(sql_type, sa.Float):  # before Numeric: a Float is a Numeric in SQLAlchemy 2.0
        return "float"
    if isinstance(sql_type, sa.Numeric):
        if text_storage:
            return "float"
        return "numeric0" if sql_type.scale == 0 and (sql_type.precision or 99) <= 18 else "numeric"
    if isinstance(sql_type, sa.DateTime):
        return "timestamptz" if getattr(sql_type, "timezone", False) else "timestamp"
    if isinstance(sql_type, sa.Date):
        return "date"
    if isinstance(sql_type, sa.String | sa.Enum) or text_storage:
        return "text"  # SQLite: whatever a column holds, it comes as Python values, read below
    return "other"


def _selected(sa, name: str, kind: str):
    column = sa.column(name)
    if kind == "numeric":
        return sa.cast(column, sa.Float(53)).label(name)
    if kind == "numeric0":
        return sa.cast(column, sa.BigInteger).label(name)
    if kind == "other":
        return sa.cast(column, sa.Text).label(name)
    return column


_ARROW_TYPES = {
    "int": pa.int64(), "numeric0": pa.int64(), "float": pa.float64(), "numeric": pa.float64(),
    "bool": pa.bool_(), "date": pa.date32(), "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"), "text": pa.string(), "other": pa.string(),
}


def has_copy(connection) -> bool:
    return connection.dialect.name == "postgresql" and connection.dialect.driver == "psycopg"


def _copy_expression(column: str, kind: str) -> str:
    """A column as ``COPY`` sends it: ``numeric`` as a float (or a bigint without decimals), aware
    timestamps as UTC clock times, types pyarrow does not parse as their text."""
    return {"numeric": f"{column}::float8", "numeric0": f"{column}::int8", "other": f"{column}::text",
            "timestamptz": f"({column} AT TIME ZONE 'UTC')"}.get(kind, column)


_COPY_TYPES = {
    "int": pa.int64(), "numeric0": pa.int64(), "float": pa.float64(), "numeric": pa.float64(),
    "bool": pa.bool_(), "date": pa.date32(), "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us"), "text": pa.string(), "other": pa.string(),
}


class _CopyStream(io.RawIOBase):
    """The data of a ``COPY ... TO STDOUT`` as a file that pyarrow reads."""

    def __init__(self, copy):
        self._chunks = iter(copy)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not len(self._pending):
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk).cast("B")
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _append(pieces: list, values: tuple, kind: str) -> str:
    """Add one chunk of a column; a value that does not fit its kind turns the column into text
    (SQLite's loose typing), earlier chunks included. Returns the column's kind from now on."""
    if kind != "text":
        try:
            pieces.append(pa.array(values, type=_ARROW_TYPES[kind]))
            return kind
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            pieces[:] = [_as_text(piece) for piece in pieces]
    try:
        pieces.append(pa.array(values, type=pa.string()))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pieces.append(pa.array([None if v is None else str(v) for v in values], type=pa.string()))
    return "text"


def _as_text(array: pa.Array) -> pa.Array:
    return pc.cast(array, pa.string())


def _finished(pieces: list, kind: str) -> pa.ChunkedArray:
    arrow_type = pa.string() if kind in ("text", "other") else _ARROW_TYPES[kind]
    column = pa.chunked_array(pieces, type=arrow_type)
    if kind == "date":  # dates in memory are datetime64, as from every other store
        column = pc.cast(column, pa.timestamp("us"))
    return column


def _files(sa, connection, schema) -> dict[str, str] | None:
    inspector = sa.inspect(connection)
    if FILES_TABLE not in inspector.get_table_names(schema=schema):
        return None
    query = sa.select(sa.column("name"), sa.column("content")).select_from(sa.table(FILES_TABLE, schema=schema))
    try:
        with connection.begin_nested():  # a notes table of another shape must not spoil the transaction
            rows = connection.execute(query).fetchall()
    except sa.exc.SQLAlchemyError:
        return None
    return {str(name): str(content) for name, content in rows if name is not None and content is not None}


def schema_contents(location) -> SchemaContents:
    """Connect to ``location`` and say what its schema holds (a wrong password or an unreachable
    server is a :class:`StorageError` here, before any work)."""
    sa = sqlalchemy()
    engine, schema = engine_for(location)
    try:
        with engine.connect() as connection:
            return contents_of(sa, connection, schema)
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 - drivers raise their own errors
        raise driver_failure("cannot connect to", location, exc) from None
    finally:
        engine.dispose()


def contents_of(sa, connection, schema) -> SchemaContents:
    inspector = sa.inspect(connection)
    if schema is not None and not inspector.has_schema(schema):
        return SchemaContents(exists=False)
    return SchemaContents(
        exists=True,
        tables=tuple(sorted(inspector.get_table_names(schema=schema))),
        views=tuple(sorted(inspector.get_view_names(schema=schema))),
        files=_files(sa, connection, schema),
    )
