"""Enrichment on the cluster: a table joined with its parents' columns and its numbers of children,
then cut into its random batches.

The enriched table is the one :func:`relanon.multitable.pipeline.enrich` makes in memory (same columns,
same order, same dtypes): each parent's released columns broadcast through the foreign key (a Dask
join), ``<fk>::present`` for a foreign key with missing values, and, for each ``linear_sum`` child
link, the number of children of each row (a Dask group-by on the child's foreign key, joined on the
primary key). Its rows are then sent to their batches (:func:`relanon.distributed.work.split_rows`);
each batch is gathered on a worker, sorted by table position, written as one part, and summarized
for the factor space (:mod:`relanon.engine.space_statistics`); the summaries are merged on the workers.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from relanon.distributed.read import BATCH, ROW, TableInput
from relanon.distributed.work import folded, folder, gather_rows, split_rows, write
from relanon.engine.space_statistics import merge_summaries, summarize
from relanon.multitable.keys import key_shape
from relanon.multitable.policy import enrichment_names
from relanon.schema.graph import child_links, parent_links
from relanon.schema.model import Schema

_KEY = "__parent_key"


@dataclass(frozen=True)
class Layout:
    """The enriched table of a table: its columns in order, their types and weights, and where each
    comes from: ``("own", column)``, ``("parent", fk, column)``, ``("present", fk)`` or ``("count", child, fk)``."""

    types: dict
    weights: dict
    sources: dict
    internal: dict  # enrichment_names of the table

    @property
    def counts(self) -> list[str]:
        return [name for name, source in self.sources.items() if source[0] == "count"]


def layout(schema: Schema, name: str, allowed: dict[str, set], nulls: dict[str, int]) -> Layout:
    """The columns :func:`relanon.multitable.pipeline.enrich` gives ``name``, in its order.

    ``allowed`` holds the columns each parent releases; ``nulls`` the rows without parent per foreign key.
    """
    table = schema[name]
    internal = enrichment_names(schema, name)
    types = {c.name: c.type for c in table.released_columns}
    weights = {c.name: c.weight for c in table.released_columns}
    sources = {c.name: ("own", c.name) for c in table.released_columns}
    for link in parent_links(schema, name):
        for column in schema[link.parent].released_columns:
            if column.name not in allowed[link.parent]:
                continue
            target = internal[("parent", link.column, column.name)]
            types[target], weights[target], sources[target] = column.type, column.weight, ("parent", link.column, column.name)
        if nulls.get(link.column, 0):
            target = internal[("present", link.column)]
            types[target], weights[target], sources[target] = "boolean", 1.0, ("present", link.column)
    for link in child_links(schema, name):
        if link.method == "linear_sum":
            target = internal[("count", link.child, link.column)]
            types[target], weights[target], sources[target] = "integer", 1.0, ("count", link.child, link.column)
    return Layout(types, weights, sources, internal)


def enrich(client, schema: Schema, name: str, spec: Layout, tables: dict[str, TableInput], work) -> list[int]:
    """Enrich table ``name`` (Dask joins and group-bys) and send its rows to their batches in
    ``work/pieces/<name>``; returns the rows sent to each batch."""
    table = schema[name]
    keys = [table.primary_key, *table.foreign_key_columns]
    own = [s[1] for s in spec.sources.values() if s[0] == "own"]
    frame = dd.read_parquet(str(folder(work, "orig", name)), columns=[*keys, *own, ROW, BATCH])
    dtypes = {}
    for link in parent_links(schema, name):
        parent = schema[link.parent]
        wanted = {c: target for target, s in spec.sources.items() if s[0] == "parent" and s[1] == link.column
                  for c in [s[2]]}
        if wanted:
            columns = dd.read_parquet(str(folder(work, "orig", link.parent)), columns=[parent.primary_key, *wanted])
            columns = columns.rename(columns={parent.primary_key: _KEY, **wanted})
            frame = frame.merge(columns, how="left", left_on=link.column, right_on=_KEY).drop(columns=_KEY)
            dtypes.update(_broadcast_dtypes(tables[link.parent], wanted, tables[name].nulls.get(link.column, 0) > 0))
        present = spec.internal[("present", link.column)]
        if present in spec.types:
            frame[present] = frame[link.column].notnull()
    for link in child_links(schema, name):
        target = spec.internal[("count", link.child, link.column)]
        if target not in spec.types:
            continue
        children = dd.read_parquet(str(folder(work, "orig", link.child)), columns=[link.column])
        counts = children.groupby(link.column).size().rename(target).to_frame()
        frame = frame.merge(counts, how="left", left_on=table.primary_key, right_index=True)
        dtypes[target] = "count"
    directory = str(folder(work, "pieces", name))
    pieces = [dask.delayed(_send)(part, list(spec.types), keys, dtypes, directory, i)
              for i, part in enumerate(frame.to_delayed())]
    sent = client.gather(client.compute(pieces))
    totals = np.zeros(tables[name].n_batches, dtype=np.int64)
    for piece in sent:
        for batch, rows in piece.items():
            totals[batch] += rows
    return totals.tolist()


def gather_batches(client, schema: Schema, name: str, spec: Layout, tables: dict[str, TableInput], work, cap: int,
                   summaries: bool) -> tuple[list[dict], dict | None]:
    """Each batch gathered, sorted, written to ``work/batches/<name>``; returns, per batch, its rows and the
    shape of its original keys, and (when ``summaries``) the summary of the whole table, its batches'
    summaries merged in batch order on the workers (:func:`relanon.distributed.work.folded`)."""
    table = schema[name]
    columns = [*spec.types, table.primary_key, *table.foreign_key_columns, ROW]
    futures = [client.submit(_gather, str(folder(work, "pieces", name)), str(folder(work, "batches", name)), b,
                             columns, spec.types, spec.weights, cap, summaries, table.primary_key, name, pure=False)
               for b in range(tables[name].n_batches)]
    batches = client.gather([client.submit(_without_summary, f, pure=False) for f in futures])
    if not summaries or not spec.types:
        return batches, None
    parts = [client.submit(operator.itemgetter("summary"), f, pure=False) for f in futures]
    return batches, folded(client, parts, merge_summaries, cap=cap).result()


def _broadcast_dtypes(parent: TableInput, wanted: dict, missing: bool) -> dict:
    """The dtype of each broadcast column: the parent's, or what reindexing it with a missing key makes."""
    out = {}
    for column, target in wanted.items():
        dtype = parent.dtypes[column]
        if missing:
            dtype = str(pd.Series([], dtype=dtype).reindex([0]).dtype)
        out[target] = dtype
    return out


# --------------------------------------------------------------------------- on the workers


def _send(part: pd.DataFrame, enriched: list[str], keys: list[str], dtypes: dict, directory, index: int) -> dict:
    part = part.reset_index(drop=True)
    for column, dtype in dtypes.items():
        if dtype == "count":
            part[column] = part[column].fillna(0).astype("int64")
        else:
            part[column] = part[column].astype(dtype)
    return split_rows(part[[*enriched, *keys, ROW, BATCH]], part[BATCH].to_numpy(), directory, index)


def _without_summary(gathered: dict) -> dict:
    return {key: value for key, value in gathered.items() if key != "summary"}


def _gather(pieces, directory, batch: int, columns, types, weights, cap: int, summaries: bool, primary_key, name):
    frame = gather_rows(pieces, batch, columns)
    frame = frame.sort_values(ROW, kind="stable").reset_index(drop=True)[columns]
    write(frame, directory, batch)
    summary = summarize(frame, types, weights, cap=cap, table=name) if summaries and types else None
    return {"rows": len(frame), "summary": summary, "keys": key_shape(frame[primary_key])}
