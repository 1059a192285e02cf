"""Reading a partitioned database on the workers: typed and checked part by part, keys checked across parts.

Each part of each table is read by a worker, given the schema's types (the checks of
:func:`relanon.schema.validation.coerce_table`) and written to the working folder with two more columns:
``_row``, its position in the table (parts in order), and ``_batch``, the random batch it is avatarized
in (:func:`relanon.engine.batches.assign_batches`). A column whose parts came out with different dtypes
(``int64`` in one, ``Int64`` in a part with missing values) gets the one the whole column would have.
Primary keys (missing, repeated) and foreign keys (values without a parent) are checked with Dask
group-bys and joins over all the parts. Every problem is reported at once, as for the local engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa

from relanon.common.errors import DataError, Problem, StorageError
from relanon.distributed.work import folder, parts_of, write
from relanon.engine.batches import assign_batches, batch_count, partition_generator
from relanon.schema.graph import topological_order
from relanon.schema.model import Schema, Table
from relanon.schema.validation import coerce_table
from relanon.stores.partitioned import Part, arrow_schema, list_parts, read_part, table_location, table_names

ROW, BATCH = "_row", "_batch"
EXAMPLES = 5


@dataclass
class TableInput:
    """Where a table's parts are, and what the run knows of it."""

    name: str
    location: Path
    parts: list[Part]
    arrow: pa.Schema
    rows: int
    n_batches: int = 1
    dtypes: dict = field(default_factory=dict)
    nulls: dict = field(default_factory=dict)  # foreign key -> rows without a parent

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([p.rows for p in self.parts])[:-1]]).astype(np.int64)


def locate(schema: Schema, data) -> dict[str, TableInput]:
    """The parts of every table of ``schema`` in the folder ``data``; every missing table reported at once."""
    base = Path(data)
    if not base.is_dir():
        raise StorageError(f"nothing found at {str(base)!r}: the Dask engine reads a folder holding one directory of "
                           "Parquet files per table (as Dask and Spark write them)")
    found, problems, tables = table_names(base), [], {}
    for table in schema:
        location = table_location(base, table.source_name)
        if location is None:
            there = ", ".join(repr(n) for n in found) or "no table at all"
            problems.append(Problem(f"no directory of Parquet files (nor {table.source_name}.parquet) named "
                                    f"{table.source_name!r} in {str(base)!r}; found: {there}", table.name))
            continue
        parts = list_parts(location)
        tables[table.name] = TableInput(table.name, location, parts, arrow_schema(location), sum(p.rows for p in parts))
    if problems:
        raise DataError(f"the database at {str(base)!r} does not fit its schema", problems)
    return tables


def load(client, schema: Schema, tables: dict[str, TableInput], work, seeds: dict, batch_size: int) -> None:
    """Read, type and check every part; write them to ``work/orig/<table>``; check the keys.

    ``seeds`` holds each table's avatar seed sequence (the batches are drawn from it).
    """
    problems: list[Problem] = []
    kinds: dict[str, str] = {}
    for name in topological_order(schema):
        table, source = schema[name], tables[name]
        avatar = table.anonymize.method == "avatar"
        source.n_batches = batch_count(source.rows, batch_size) if avatar else 1
        parent_kinds = {fk.column: kinds[fk.references] for fk in table.foreign_keys if fk.references in kinds}
        batches = seeds[name]
        futures = [client.submit(_load_part, part, source.arrow, table, parent_kinds, int(start), source.n_batches,
                                 partition_generator(batches, "batches", i), str(folder(work, "orig", name)), i,
                                 pure=False)
                   for i, (part, start) in enumerate(zip(source.parts, source.offsets, strict=True))]
        results = client.gather(futures)
        problems += _grouped([p for r in results for p in r["problems"]])
        source.dtypes = _unified(table.name, [r["dtypes"] for r in results], problems)
        differing = [i for i, r in enumerate(results) if r["dtypes"] != source.dtypes]
        client.gather([client.submit(_cast_part, str(folder(work, "orig", name)), i, source.dtypes, pure=False)
                       for i in differing])
        source.nulls = {fk.column: sum(r["nulls"].get(fk.column, 0) for r in results) for fk in table.foreign_keys}
        missing = sum(r["missing_keys"] for r in results)
        if missing:
            problems.append(Problem(f"{missing} row{'s have' if missing > 1 else ' has'} no primary key (empty or a "
                                    "missing marker); every row needs a unique key: fill in these keys or remove these rows",
                                    name, table.primary_key))
        if table.primary_key in source.dtypes:
            kinds[name] = "integer" if pd.api.types.is_integer_dtype(pd.Series(dtype=source.dtypes[table.primary_key])) \
                else "string"
    if not problems:
        problems += key_problems(schema, tables, work)
    if problems:
        raise DataError("the database does not fit its schema", problems)


def key_problems(schema: Schema, tables: dict[str, TableInput], work) -> list[Problem]:
    """Repeated primary keys and foreign keys without a parent, found with Dask group-bys and joins."""
    problems = []
    for table in schema:
        keys = dd.read_parquet(str(folder(work, "orig", table.name)), columns=[table.primary_key])[table.primary_key]
        counts = keys.value_counts()
        repeated = counts[counts > 1].compute()
        if len(repeated):
            problems.append(Problem(
                f"the primary key has {len(repeated)} duplicated value{'s' if len(repeated) > 1 else ''} on "
                f"{int(repeated.sum())} rows; keys must be unique: remove the duplicates or renumber them",
                table.name, table.primary_key, tuple(repeated.sort_index().index[:EXAMPLES])))
        for fk in table.foreign_keys:
            parent = schema[fk.references]
            values = dd.read_parquet(str(folder(work, "orig", table.name)), columns=[fk.column])[fk.column].dropna()
            parent_keys = dd.read_parquet(str(folder(work, "orig", parent.name)), columns=[parent.primary_key])
            joined = values.to_frame("value").merge(parent_keys, how="left", left_on="value",
                                                    right_on=parent.primary_key, indicator=True)
            orphans = joined[joined["_merge"] == "left_only"]["value"].compute()
            if len(orphans):
                distinct = orphans.drop_duplicates().sort_values()
                problems.append(Problem(
                    f"{len(orphans)} row{'s refer' if len(orphans) > 1 else ' refers'} to {len(distinct)} "
                    f"value{'s' if len(distinct) > 1 else ''} not found in the parent key {parent.name}."
                    f"{parent.primary_key}; fix or remove these rows, or leave the key empty for a row without a parent",
                    table.name, fk.column, tuple(distinct.iloc[:EXAMPLES])))
    return problems


# --------------------------------------------------------------------------- on the workers


def _load_part(part: Part, arrow, table: Table, parent_kinds, start: int, n_batches: int, rng, directory, index):
    frame = read_part(part, schema=arrow)
    coerced, problems = coerce_table(table, frame, parent_kinds, from_text=False)
    where = Path(part.path).name
    problems = [Problem(f"{p.message} (in {where})", p.table, p.column, p.examples) for p in problems]
    missing = int(coerced[table.primary_key].isna().sum()) if table.primary_key in coerced else 0
    coerced[ROW] = np.arange(start, start + len(coerced), dtype=np.int64)
    coerced[BATCH] = assign_batches(start, len(coerced), n_batches, rng)
    write(coerced, directory, index)
    nulls = {fk: int(coerced[fk].isna().sum()) for fk in table.foreign_key_columns if fk in coerced}
    return {"problems": problems, "dtypes": {c: str(t) for c, t in coerced.dtypes.items()}, "missing_keys": missing,
            "nulls": nulls}


def _cast_part(directory, index: int, dtypes: dict) -> None:
    path = parts_of(directory)[index]
    frame = pd.read_parquet(path)
    write(frame.astype({c: t for c, t in dtypes.items() if c in frame.columns}), directory, index)


# --------------------------------------------------------------------------- on the client

_WIDER = {frozenset({"int64", "Int64"}): "Int64", frozenset({"bool", "boolean"}): "boolean",
          frozenset({"float64", "Float64"}): "Float64", frozenset({"int64", "float64"}): "float64",
          frozenset({"bool", "object"}): "object", frozenset({"str", "object"}): "object"}


def _unified(name: str, per_part: list[dict], problems: list) -> dict:
    """One dtype per column, the one the whole column would have (a part with missing values makes
    ``int64`` into ``Int64``); a column whose parts hold kinds that do not mix is a problem."""
    if not per_part:
        return {}
    out = {}
    for column in per_part[0]:
        seen = {d[column] for d in per_part if column in d}
        if len(seen) == 1:
            out[column] = seen.pop()
        elif frozenset(seen) in _WIDER:
            out[column] = _WIDER[frozenset(seen)]
        else:
            problems.append(Problem(f"its parts hold values of different kinds ({', '.join(sorted(seen))}); write "
                                    "every part with the same column type", name, column))
            out[column] = sorted(seen)[0]
    return out


def _grouped(problems: list[Problem]) -> list[Problem]:
    """One problem per table and column: the first part's, with the number of other parts affected."""
    first: dict[tuple, Problem] = {}
    others: dict[tuple, int] = {}
    for problem in problems:
        key = (problem.table, problem.column)
        if key in first:
            others[key] = others.get(key, 0) + 1
        else:
            first[key] = problem
    return [Problem(f"{p.message}{f' and in {others[k]} more part(s)' if k in others else ''}", p.table, p.column,
                    p.examples) for k, p in first.items()]
