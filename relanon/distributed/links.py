"""Foreign keys re-created on the cluster: every link of a table to its released parents.

- Both tables in one batch: the local engine's own code (:func:`relanon.multitable.linking.foreign_keys.relink`) runs
  on a worker, with the run's generator: the same links as a local run.
- ``minimum_distance``: the parents' coordinates in the link's factor space (``d`` numbers per parent)
  go to every worker; each batch of children finds its nearest parents.
- ``linear_sum``: spatial blocks as partitions (:mod:`relanon.distributed.blocked`).
- ``original_order``: Dask joins from each avatar's original record to its original parent, then to
  that parent's avatar.

:func:`relanon.distributed.run` chooses among them. The link space is fitted on the parent's original columns, from the statistics of its batches (or on the
whole parent when it is one batch, as the local engine does). A child's new foreign key is its parent's
new primary key, looked up where the parent's batch lies (:func:`lookup_keys`); the result is written per
batch of children, in release order, to ``work/links/<child>/<fk>``.
"""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from relanon.distributed.avatars import POS, SOURCE, SOURCE_FK
from relanon.distributed.cluster import gather_counted
from relanon.distributed.read import BATCH, ROW
from relanon.distributed.space import fit_space
from relanon.distributed.state import Released
from relanon.distributed.work import folder, gather_rows, parts_of, read_parts, split_rows, write
from relanon.engine.batches import partition_generator
from relanon.engine.factor_space import FactorSpace
from relanon.engine.neighbours import cross_neighbours
from relanon.multitable.linking.counts import settle_counts
from relanon.multitable.linking.foreign_keys import relink
from relanon.multitable.results import TableRelease
from relanon.schema.graph import Link
from relanon.schema.model import Schema

PARENT = "_ppos"


def part(directory, batch: int):
    return folder(directory, f"part.{batch:05d}.parquet")


def link_columns(schema: Schema, link: Link, parent: Released) -> dict:
    """The parent's columns the link is matched on: those it releases."""
    return {c.name: c.type for c in schema[link.parent].released_columns if c.name in parent.columns}


def link_space(client, schema: Schema, link: Link, work, parent: Released, rng):
    """The factor space of the parent's original columns (None when it releases none)."""
    columns = link_columns(schema, link, parent)
    if not columns:
        return None
    weights = {c.name: c.weight for c in schema[link.parent].released_columns if c.name in columns}
    if parent.single or parent.statistics is None:
        return client.submit(_fit_on_original, str(folder(work, "orig", link.parent)), columns, weights, rng,
                             pure=False).result()
    paths = [str(part(folder(work, "batches", link.parent), b)) for b in range(parent.n_batches)]
    return fit_space(client, paths, columns, parent.statistics, ncp=None, weights=weights, random_state=rng,
                     name=link.parent, rows_searched=parent.rows, rng=rng)


def project(space, frame: pd.DataFrame, columns) -> np.ndarray:
    return np.empty((len(frame), 0)) if space is None else space.transform(frame[list(columns)])


def child_side(avatars: pd.DataFrame, link: Link, child: Released, columns) -> tuple[pd.DataFrame, np.ndarray]:
    """The parent's columns as the avatar children carry them, and which children have a parent."""
    names = child.internal
    side = pd.DataFrame({c: avatars[names[("parent", link.column, c)]] for c in columns}, index=avatars.index)
    present = names.get(("present", link.column))
    has_parent = avatars[present].to_numpy(dtype=bool) if present in avatars else np.ones(len(avatars), dtype=bool)
    return side, has_parent


# --------------------------------------------------------------------------- both tables in one batch


def one_piece(schema: Schema, link: Link, work, child: Released, parent: Released, rng):
    """The link made by the local engine's code, for a child and a parent of one batch each."""
    original = {name: read_parts(parts_of(folder(work, "orig", name))).drop(columns=[ROW, BATCH])
                for name in {link.child, link.parent}}
    releases = {state.name: table_release(work, state) for state in (child, parent)}
    linked = relink(schema, link, original, releases, rng)
    return linked.reset_index(drop=True), rng


def settle_one_piece(schema: Schema, name: str, work, state: Released, children: list[str], rng) -> int:
    """The local engine's :func:`~relanon.multitable.linking.counts.settle_counts` on a table of one batch: its rows
    of drawn numbers of children, on its several ``linear_sum`` child links, brought to their totals together
    and written back to its avatars (which its children's links read). Returns the rows changed."""
    original = {table: read_parts(parts_of(folder(work, "orig", table))).drop(columns=[ROW, BATCH])
                for table in {name, *children}}
    release = table_release(work, state)
    changed = settle_counts(schema, name, original, release, rng)
    if changed:
        write_enriched_avatars(work, name, release.enriched_avatars)
    return changed


def write_enriched_avatars(work, name: str, enriched: pd.DataFrame) -> None:
    """Write the enriched avatars of a table of one batch, changed in memory, back to its avatars part."""
    avatars = read_parts([part(folder(work, "avatars", name), 0)])
    for column in enriched.columns:
        avatars[column] = enriched[column].to_numpy()
    write(avatars, folder(work, "avatars", name), 0)


def table_release(work, state: Released) -> TableRelease:
    """A one-batch released table as the local engine holds it in memory."""
    avatars = read_parts([part(folder(work, "avatars", state.name), 0)])
    frame = pd.DataFrame({c: (avatars[c] if c in avatars and c not in state.fk_dtypes else
                              pd.Series(None, index=avatars.index, dtype=object)) for c in state.columns})
    positions = avatars[SOURCE].to_numpy()
    if state.method != "avatar":
        return TableRelease(state.name, state.method, frame, positions, k=state.k)
    enriched = read_parts([part(folder(work, "batches", state.name), 0)])[list(state.types)]
    return TableRelease(state.name, "avatar", frame, positions, enriched_original=enriched,
                        enriched_avatars=avatars[list(state.types)], enriched_types=state.types,
                        enriched_weights=state.weights, k=state.k, ncp=state.ncp, internal_names=state.internal)


def _fit_on_original(directory, columns, weights, rng):
    return FactorSpace(columns, weights=weights, random_state=rng).fit(read_parts(parts_of(directory), list(columns)))


# --------------------------------------------------------------------------- minimum distance


def minimum_distance(client, schema, link, work, child: Released, parent: Released, space, seed, progress=None) -> int:
    """Link each batch of children to its nearest parents; ``progress(done, total)`` counts the batches done."""
    columns = link_columns(schema, link, parent)
    pk = schema[link.parent].primary_key
    pieces = client.gather([client.submit(_parent_points, str(part(folder(work, "avatars", link.parent), b)), space,
                                          columns, pk, pure=False) for b in range(parent.n_batches)])
    coords = np.vstack([p[0] for p in pieces])
    keys = pd.concat([p[1] for p in pieces], ignore_index=True)
    shared = client.scatter((coords, keys), broadcast=True)
    out = str(folder(work, "links", link.child, link.column))
    futures = [client.submit(_nearest, str(part(folder(work, "avatars", link.child), b)), shared, space, columns, link,
                             child, out, b, partition_generator(seed, "nearest", b), pure=False)
               for b in range(child.n_batches)]
    return int(sum(gather_counted(client, futures, progress, 0, child.n_batches)))


def _parent_points(path, space, columns, pk):
    avatars = read_parts([path])
    return project(space, avatars, columns), avatars[pk]


def _nearest(path, shared, space, columns, link: Link, child: Released, out, batch: int, rng) -> int:
    coords, keys = shared
    avatars = read_parts([path])
    side, has_parent = child_side(avatars, link, child, columns)
    target = np.full(len(avatars), -1)
    if has_parent.any() and len(coords):
        if coords.shape[1] == 0:
            target[has_parent] = rng.integers(len(coords), size=int(has_parent.sum()))
        else:
            found = cross_neighbours(coords, project(space, side[has_parent], columns), k=1)
            target[has_parent] = found.indices[:, 0]
    values = pd.Series(pd.api.extensions.take(keys.array, target, allow_fill=True))
    write(values.to_frame(link.column), out, batch)
    return int((target >= 0).sum())


# --------------------------------------------------------------------------- original order


def original_order(client, schema, link, work, child: Released, parent: Released) -> int:
    pk = schema[link.parent].primary_key
    children = dd.read_parquet(str(folder(work, "avatars", link.child)), columns=[POS, SOURCE_FK + link.column])
    children = children.rename(columns={SOURCE_FK + link.column: "__fk"})
    original = dd.read_parquet(str(folder(work, "orig", link.parent)), columns=[pk, ROW])
    original = original.rename(columns={pk: "__fk", ROW: "__row"})
    avatars = dd.read_parquet(str(folder(work, "avatars", link.parent)), columns=[SOURCE, pk])
    avatars = avatars.rename(columns={SOURCE: "__row", pk: "__key"})
    joined = children.merge(original, how="left", on="__fk").merge(avatars, how="left", on="__row")
    routed = str(folder(work, "routed", link.child, link.column))
    sent = [dask.delayed(_route_back)(p, child, routed, i) for i, p in enumerate(joined.to_delayed())]
    client.gather(client.compute(sent))
    return finish_keys(client, work, link, child, routed)


def _route_back(rows: pd.DataFrame, child: Released, directory, index: int):
    rows = rows[[POS, "__key"]].reset_index(drop=True)
    return split_rows(rows, child.batch_of(rows[POS].to_numpy()), directory, index)


def finish_keys(client, work, link: Link, child: Released, routed) -> int:
    """Per batch of children: the keys routed to it (``_pos``, ``__key``), in release order, written as the
    foreign key (missing for children without a parent); returns the rows linked."""
    out = str(folder(work, "links", link.child, link.column))
    futures = [client.submit(_finish, routed, b, int(offset), size, link.column, out, pure=False)
               for b, (offset, size) in enumerate(zip(child.offsets, child.sizes, strict=True))]
    return int(sum(client.gather(futures)))


def _finish(routed, batch: int, offset: int, size: int, column: str, out) -> int:
    rows = gather_rows(routed, batch, [POS, "__key"])
    target = np.full(size, -1)
    target[rows[POS].to_numpy() - offset] = np.arange(len(rows))
    keys = rows["__key"]
    values = pd.Series(pd.api.extensions.take(keys.array, target, allow_fill=True)) if len(rows) else \
        pd.Series([None] * size, dtype=object)
    write(values.to_frame(column), out, batch)
    return int(values.notna().sum())


# --------------------------------------------------------------------------- parent keys by position


def lookup_keys(client, schema: Schema, link: Link, work, child: Released, parent: Released, pairs_dir, n_parts: int):
    """Turn ``(_pos, _ppos)`` pairs (``pairs_dir``, ``n_parts`` parts) into the children's foreign keys:
    each pair goes to its parent's batch, takes that parent's new key, and comes back to its child's batch."""
    pk = schema[link.parent].primary_key
    to_parents = str(folder(work, "to-parents", link.child, link.column))
    client.gather([client.submit(_to_parents, str(part(pairs_dir, i)), parent, to_parents, i, pure=False)
                   for i in range(n_parts)])
    routed = str(folder(work, "routed", link.child, link.column))
    client.gather([client.submit(_keys_of, to_parents, str(part(folder(work, "avatars", link.parent), b)), b,
                                 int(parent.offsets[b]), pk, child, routed, pure=False)
                   for b in range(parent.n_batches)])
    return finish_keys(client, work, link, child, routed)


def _to_parents(path, parent: Released, directory, index: int):
    pairs = read_parts([path], [POS, PARENT])
    return split_rows(pairs, parent.batch_of(pairs[PARENT].to_numpy()), directory, index)


def _keys_of(to_parents, path, batch: int, offset: int, pk, child: Released, routed):
    pairs = gather_rows(to_parents, batch, [POS, PARENT])
    keys = read_parts([path], [pk])[pk]
    rows = pd.DataFrame({POS: pairs[POS].to_numpy(), "__key": keys.take(pairs[PARENT].to_numpy() - offset).to_numpy()})
    rows["__key"] = rows["__key"].astype(keys.dtype)
    return split_rows(rows, child.batch_of(rows[POS].to_numpy()), routed, batch)
