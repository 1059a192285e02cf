"""Writing a database into a server through SQLAlchemy (see :mod:`relanon.stores.sql` for URLs).

One transaction creates the schema when missing, drops what the output rule allows
replacing (:class:`relanon.stores.outputs.DatabaseUrl`), creates each table with types matching its
data (integers stay integers, dates stay dates: a date-time column whose values are all at
midnight is a ``date``, categories are text), loads the rows (PostgreSQL with psycopg: ``COPY``, fed
CSV by pyarrow; other databases: batched ``INSERT``), then declares the primary keys and foreign keys.
A failure anywhere rolls everything back: nothing is left.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from relanon.common.errors import StorageError
from relanon.schema.text_formats import as_text, formats_of
from relanon.stores.fingerprints import fingerprinted_notes, sql_fingerprint
from relanon.stores.sql import (
    CHUNK_ROWS,
    FILES_TABLE,
    SchemaContents,
    contents_of,
    driver_failure,
    engine_for,
    sqlalchemy,
)

__all__ = ["TableKeys", "as_text_values", "declared_keys", "parents_first", "write_tables"]


@dataclass(frozen=True)
class TableKeys:
    """The keys declared with a written table: its primary key (a column, or the columns of an association
    table's combination of parents) and its foreign keys (``(column, parent table, parent column)``, the
    parent as written)."""

    primary_key: str | tuple[str, ...] | None = None
    foreign_keys: tuple[tuple[str, str, str], ...] = ()

    @property
    def key_columns(self) -> tuple[str, ...]:
        if self.primary_key is None:
            return ()
        return (self.primary_key,) if isinstance(self.primary_key, str) else tuple(self.primary_key)


def write_tables(location, tables: Mapping[str, pd.DataFrame], keys: Mapping[str, TableKeys],
                 replaced: Callable[[SchemaContents], Iterable[str]]) -> None:
    """Write ``tables`` into the schema of ``location`` in one transaction.

    Parameters
    ----------
    location : str
        A SQLAlchemy URL (``?schema=name`` for a schema other than the default one).
    tables : mapping of str to pandas.DataFrame
        Tables keyed by the name written, parents before children or in any order.
    keys : mapping of str to TableKeys
        The keys declared with each table; a foreign key whose parent is not written (or has no
        primary key) is left out.
    replaced : callable
        Given what the schema holds (read inside the transaction), the tables to drop first; it
        raises :class:`StorageError` to refuse (see :class:`relanon.stores.outputs.DatabaseUrl`).
    """
    sa = sqlalchemy()
    engine, schema = engine_for(location)
    try:
        with engine.begin() as connection:
            contents = contents_of(sa, connection, schema)
            dropped = sorted(set(replaced(contents)))
            if schema is not None and not contents.exists:
                connection.execute(sa.schema.CreateSchema(schema))
            if dropped:
                old = sa.MetaData(schema=schema)
                old.reflect(connection, only=dropped)
                old.drop_all(connection)  # children first
            data = {name: frame for name, frame in tables.items() if name != FILES_TABLE}
            _create_and_load(sa, connection, schema, data, keys)
            if FILES_TABLE in tables:  # the notes last, with the fingerprints of the tables as the server holds them
                fingerprints = {name: sql_fingerprint(sa, connection, name, schema) for name in data}
                notes = fingerprinted_notes(tables[FILES_TABLE], fingerprints)
                _create_and_load(sa, connection, schema, {FILES_TABLE: notes}, keys)
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 - driver, conversion and constraint errors alike: all rolled back
        raise driver_failure("nothing was written (the transaction was rolled back) to", location, exc) from None
    finally:
        engine.dispose()


def _create_and_load(sa, connection, schema, tables, keys) -> None:
    dialect = connection.dialect.name
    fast = dialect == "postgresql" and connection.dialect.driver == "psycopg"
    metadata = sa.MetaData(schema=schema)
    frames = {name: as_text_values(frame) if dialect == "sqlite" else frame for name, frame in tables.items()}
    declared = declared_keys(frames, keys)
    built = {}
    for name in parents_first(frames, declared):
        frame = frames[name]
        key, links = declared[name]
        written = formats_of(tables[name])
        columns = [sa.Column(c, _column_type(sa, frame[c], dialect, c in key or c in links, written.get(c)),
                             nullable=c not in key)
                   for c in frame.columns]
        constraints = [] if fast else _constraints(sa, schema, key, links)
        built[name] = sa.Table(name, metadata, *columns, *constraints)
    metadata.create_all(connection)  # parents before children when constraints come with the tables
    for name, table in built.items():
        if fast:
            _copy(connection, table, frames[name])
        else:
            _insert(connection, table, frames[name])
    if fast:  # constraints after the rows: each is checked once, on the whole table
        for name, (key, _) in declared.items():
            if key:
                connection.execute(sa.schema.AddConstraint(sa.PrimaryKeyConstraint(*(built[name].c[c] for c in key))))
        for name, (_, links) in declared.items():
            for column, (parent, parent_column) in links.items():
                constraint = sa.ForeignKeyConstraint([built[name].c[column]], [built[parent].c[parent_column]])
                built[name].append_constraint(constraint)
                connection.execute(sa.schema.AddConstraint(constraint))


def declared_keys(frames, keys) -> dict[str, tuple[tuple[str, ...], dict[str, tuple[str, str]]]]:
    """Per table: the primary key columns (empty for none) and the foreign keys that can be declared with the
    data: a key unique and never missing, a foreign key to a parent whose declared key is its one column."""
    primary = {}
    for name, frame in frames.items():
        columns = keys.get(name, TableKeys()).key_columns
        fits = bool(columns) and all(c in frame.columns for c in columns) and bool(frame[list(columns)].notna().all().all()) \
            and not frame.duplicated(list(columns)).any()
        primary[name] = columns if fits else ()
    declared = {}
    for name, frame in frames.items():
        links = {}
        for column, parent, parent_column in keys.get(name, TableKeys()).foreign_keys:
            if column in frame.columns and primary.get(parent) == (parent_column,):
                links[column] = (parent, parent_column)
        declared[name] = (primary[name], links)
    return declared


def parents_first(names, declared) -> list[str]:
    """``names`` with each table after the tables its declared foreign keys refer to (file order kept
    otherwise; a self-reference is no constraint on the order)."""
    done: list[str] = []
    todo = list(names)
    while todo:
        ready = [n for n in todo if all(p in done or p == n or p not in todo
                                        for p, _ in declared.get(n, ((), {}))[1].values())]
        ready = ready or todo[:1]  # a cycle of foreign keys (never in a schema relanon accepted): file order
        done += ready
        todo = [n for n in todo if n not in ready]
    return done


def _constraints(sa, schema, key, links) -> list:
    found = [sa.PrimaryKeyConstraint(*key)] if key else []
    prefix = f"{schema}." if schema is not None else ""
    for column, (parent, parent_column) in links.items():
        found.append(sa.ForeignKeyConstraint([column], [f"{prefix}{parent}.{parent_column}"]))
    return found


def _column_type(sa, values: pd.Series, dialect: str, key: bool, spec=None):
    """The SQL type of a column, from its data: integers stay integers, dates stay dates (a date-time
    whose input showed a time, ``2007-01-01 00:00:00``, stays a date-time, even at midnight)."""
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return sa.Boolean()
    if pd.api.types.is_integer_dtype(dtype):
        numpy_dtype = np.dtype(getattr(dtype, "numpy_dtype", dtype))
        bits = 8 * numpy_dtype.itemsize + (numpy_dtype.kind == "u")  # an unsigned one needs a bit more
        if bits <= 16:
            return sa.SmallInteger()
        return sa.Integer() if bits <= 32 else sa.BigInteger() if bits <= 64 else sa.Numeric(20, 0)
    if pd.api.types.is_float_dtype(dtype):
        return sa.REAL() if np.dtype(getattr(dtype, "numpy_dtype", dtype)).itemsize == 4 else sa.Double()
    if isinstance(dtype, pd.DatetimeTZDtype):
        return sa.DateTime(timezone=True)
    if pd.api.types.is_datetime64_dtype(dtype):
        with_time = spec is not None and spec[0] == "datetime" and "%H" in spec[1]
        return sa.Date() if _all_midnight(values) and not with_time else sa.DateTime()
    if key and dialect not in ("postgresql", "sqlite"):  # MySQL and others index only bounded text
        longest = values.dropna().astype("str").str.len().max()
        return sa.String(int(max(1, 0 if pd.isna(longest) else longest)))
    return sa.Text()


def _all_midnight(values: pd.Series) -> bool:
    present = values.dropna()
    return bool(len(present)) and bool((present == present.dt.normalize()).all())


def _copy(connection, table, frame: pd.DataFrame) -> None:
    """``COPY ... FROM STDIN`` through psycopg, fed CSV written by pyarrow, a batch at a time."""
    if not len(frame.columns) or not len(frame):
        return
    preparer = connection.dialect.identifier_preparer
    columns = ", ".join(preparer.quote(c) for c in frame.columns)
    statement = f"COPY {preparer.format_table(table)} ({columns}) FROM STDIN (FORMAT csv)"
    arrow = _arrow_table(table, frame)
    options = pa_csv.WriteOptions(include_header=False, quoting_style="needed")
    driver = connection.connection.driver_connection
    with driver.cursor() as cursor, cursor.copy(statement) as copy:
        for batch in arrow.to_batches(max_chunksize=CHUNK_ROWS):
            buffer = io.BytesIO()
            pa_csv.write_csv(batch, buffer, options)
            copy.write(buffer.getbuffer())


def _arrow_table(table, frame: pd.DataFrame) -> pa.Table:
    """The frame as Arrow columns of the types the CSV text of ``COPY`` needs (missing as null)."""
    sa = sqlalchemy()
    arrays = []
    for column in frame.columns:
        values, sql_type = frame[column], table.c[column].type
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.astype(values.cat.categories.dtype if len(values.cat.categories) else "str")
        if isinstance(sql_type, sa.Date):
            array = pa.array(values.dt.floor("D"), from_pandas=True).cast(pa.date32())
        elif isinstance(sql_type, sa.DateTime):
            array = pa.array(values.dt.floor("us"), from_pandas=True).cast(
                pa.timestamp("us", tz=str(values.dt.tz) if values.dt.tz is not None else None))
        elif isinstance(sql_type, sa.Text | sa.String):
            array = pa.array(_as_text_column(values), type=pa.string(), from_pandas=True)
        else:
            array = pa.array(values, from_pandas=True)
        arrays.append(array)
    return pa.Table.from_arrays(arrays, names=list(frame.columns))


def _as_text_column(values: pd.Series) -> pd.Series:
    if pd.api.types.is_string_dtype(values.dtype) and pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):
        return values
    return values.astype("str").where(values.notna())


def _insert(connection, table, frame: pd.DataFrame) -> None:
    """Batched ``INSERT`` (``executemany``) of Python values, missing as NULL."""
    if not len(frame) or not len(frame.columns):
        return
    for start in range(0, len(frame), CHUNK_ROWS):
        part = frame.iloc[start:start + CHUNK_ROWS]
        values = part.astype(object).where(part.notna(), None)
        records = [dict(zip(part.columns, (_python(v) for v in row), strict=True))
                   for row in values.itertuples(index=False, name=None)]
        connection.execute(table.insert(), records)


def _python(value):
    """numpy and pandas scalars as the plain Python values every driver knows."""
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, str | bytes) else value


def as_text_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Dates as ISO 8601 text and booleans as 0/1, as SQLite stores them; dates and booleans read from text
    in another format (``2007-01-01 00:00:00``, ``Y``/``N``: :mod:`relanon.schema.text_formats`) in that
    format."""
    changes = {}
    formats = formats_of(frame)
    for column, dtype in frame.dtypes.items():
        values = frame[column]
        spec = formats.get(column)
        text = as_text(values, spec) if spec is not None and spec[0] in ("datetime", "boolean") else None
        if text is not None:
            changes[column] = text
        elif isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype):
            changes[column] = values.astype("str").where(values.notna())
        elif pd.api.types.is_bool_dtype(dtype):
            changes[column] = values.astype("Int64")
    return frame.assign(**changes) if changes else frame

