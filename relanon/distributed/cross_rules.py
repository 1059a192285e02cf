"""Rules across tables on the cluster: the release obeys the rules its schema declares under ``foreign_keys[].rules``.

The same rules as the local engine's :func:`relanon.multitable.cross_rules.obey_cross_rules`, in the same order,
once every table is linked, on the released rows in the work folder, batch by batch:

1. top-down, ``copy`` and ``within``: each batch of children receives, through a Dask join on the parents' new
   keys, the columns of the parents it links to, and applies the local engine's own
   :func:`~relanon.multitable.cross_rules.from_parent` to its rows;
2. bottom-up, ``sum`` and ``count``: each batch of children sums its column (or counts its rows) per parent
   (:func:`~relanon.schema.cross_rules.totals_of_children`), Dask adds these up per parent and joins them to the
   parents' batches, which take them as their column (0 for a parent without children).

No worker holds more than a batch and the columns it is joined with. With one batch per table, every sum is added
in the local engine's order, and the release is the local engine's, byte for byte. Only tables made by the avatar
method are rewritten (:func:`~relanon.multitable.cross_rules.made`).
"""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from relanon.distributed.avatars import POS
from relanon.distributed.links import part
from relanon.distributed.state import Released
from relanon.distributed.work import folder, gather_rows, read_parts, split_rows, write
from relanon.multitable.cross_rules import from_parent, made, typed_totals
from relanon.schema.cross_rules import totals_of_children
from relanon.schema.graph import topological_order
from relanon.schema.model import Schema

__all__ = ["obey_cross_rules_in_batches"]

KEY, VALUE = "__key", "__value"
PARENT = "__parent::"  # a parent's column, joined to its children


def obey_cross_rules_in_batches(client, schema: Schema, work, released: dict[str, Released], progress=None) -> list[str]:
    """Make the released rows in ``work`` obey every rule across tables of ``schema``; one line per rule applied.

    ``progress(done, total)`` is called as each link's copies and bounds, or each sum or count, is applied."""
    order = topological_order(schema)
    report = progress or (lambda done, total: None)
    total = sum(1 for table in schema for fk in table.foreign_keys
                for rule in fk.rules if rule.kind in ("sum", "count") and made(schema, fk.references))
    total += sum(1 for table in schema for fk in table.foreign_keys
                 if made(schema, table.name) and any(rule.kind in ("copy", "within") for rule in fk.rules))
    steps = 0
    done = []
    for name in order:  # copies and bounds: a parent's values are final before its children take them
        for fk in schema[name].foreign_keys:
            rules = [rule for rule in fk.rules if rule.kind in ("copy", "within")]
            if rules and made(schema, name):
                _from_parents(client, schema, work, released, name, fk, rules)
                done += [f"{name}.{fk.column} -> {fk.references}: {rule}" for rule in rules]
                steps += 1
                report(steps, total)
    for name in reversed(order):  # aggregates: the children's values are final before their parent sums them
        for fk in schema[name].foreign_keys:
            for rule in fk.rules:
                if rule.kind in ("sum", "count") and made(schema, fk.references):
                    _totals_to_parents(client, schema, work, released, name, fk, rule)
                    done.append(f"{name}.{fk.column} -> {fk.references}: {rule}")
                    steps += 1
                    report(steps, total)
    return done


# --------------------------------------------------------------------------- copy, within


def _from_parents(client, schema, work, released, name, fk, rules) -> None:
    child = released[name]
    pk = schema[fk.references].primary_key
    columns = list(dict.fromkeys(bound for rule in rules for bound in rule.parent))
    base = folder(work, "cross", name, fk.column)
    keys = folder(base, "keys")
    client.gather([client.submit(_child_keys, str(work), child, fk.column, str(keys), b, pure=False)
                   for b in range(child.n_batches)])
    children = dd.read_parquet(str(keys))
    parents = dd.read_parquet(str(folder(work, "avatars", fk.references)), columns=[pk, *columns])
    parents = parents.rename(columns={pk: KEY, **{c: PARENT + c for c in columns}})
    joined = children.merge(parents, how="inner", on=KEY)
    routed = str(folder(base, "routed"))
    sent = [dask.delayed(_route)(piece, child, routed, i) for i, piece in enumerate(joined.to_delayed())]
    client.gather(client.compute(sent))
    client.gather([client.submit(_apply_from_parent, str(work), child, fk.column, pk, columns, rules, routed, b,
                                 pure=False) for b in range(child.n_batches)])


def _fk_values(work, child: Released, column: str, batch: int) -> pd.Series:
    """A batch's foreign key as the release writes it: from its link, or kept with its rows."""
    path = part(folder(work, "links", child.name, column), batch)
    if path.exists():
        values = read_parts([path])[column]
    else:
        values = read_parts([part(folder(work, "avatars", child.name), batch)], [column])[column]
    dtype = child.fk_dtypes.get(column)
    return values.astype(dtype) if dtype is not None else values


def _child_keys(work, child: Released, column: str, directory, batch: int) -> None:
    """The release position and the parent's key of each linked child of a batch."""
    keys = _fk_values(work, child, column, batch)
    positions = read_parts([part(folder(work, "avatars", child.name), batch)], [POS])[POS]
    frame = pd.DataFrame({POS: positions.to_numpy(), KEY: keys.to_numpy()})
    frame[KEY] = frame[KEY].astype(keys.dtype)
    write(frame[keys.notna().to_numpy()], directory, batch)


def _route(rows: pd.DataFrame, state: Released, directory, index: int):
    rows = rows.reset_index(drop=True)
    return split_rows(rows, state.batch_of(rows[POS].to_numpy()), directory, index)


def _apply_from_parent(work, child: Released, column, pk, columns, rules, routed, batch: int) -> None:
    rows = gather_rows(routed, batch)
    if not len(rows.columns) or not len(rows):
        return  # no child of the batch has a parent: nothing to take
    parents = pd.DataFrame({pk: rows[KEY], **{c: rows[PARENT + c] for c in columns}}).drop_duplicates(pk)
    path = part(folder(work, "avatars", child.name), batch)
    avatars = read_parts([path])
    frame = pd.DataFrame({column: _fk_values(work, child, column, batch)})
    for rule in rules:
        frame[rule.column] = avatars[rule.column]
        from_parent(rule, frame, parents.reset_index(drop=True), column, pk)
        avatars[rule.column] = frame[rule.column]
    write(avatars, path.parent, batch)


# --------------------------------------------------------------------------- sum, count


def _totals_to_parents(client, schema, work, released, name, fk, rule) -> None:
    child, parent = released[name], released[fk.references]
    pk = schema[fk.references].primary_key
    base = folder(work, "cross", name, fk.column, rule.parent[0])
    partials = folder(base, "partials")
    client.gather([client.submit(_partial_totals, str(work), child, fk.column, rule, str(partials), b, pure=False)
                   for b in range(child.n_batches)])
    totals = dd.read_parquet(str(partials)).groupby(KEY)[VALUE].sum().reset_index()
    parents = dd.read_parquet(str(folder(work, "avatars", fk.references)), columns=[POS, pk]).rename(columns={pk: KEY})
    joined = parents.merge(totals, how="left", on=KEY)[[POS, VALUE]]
    routed = str(folder(base, "routed"))
    sent = [dask.delayed(_route)(piece, parent, routed, i) for i, piece in enumerate(joined.to_delayed())]
    client.gather(client.compute(sent))
    client.gather([client.submit(_apply_totals, str(work), parent, rule.parent[0], routed, b, int(offset), size,
                                 pure=False)
                   for b, (offset, size) in enumerate(zip(parent.offsets, parent.sizes, strict=True))])


def _partial_totals(work, child: Released, column: str, rule, directory, batch: int) -> None:
    """Per parent key, the batch's number of children or sum of their column (missing when all are)."""
    frame = pd.DataFrame({column: _fk_values(work, child, column, batch)})
    if rule.column is not None:
        frame[rule.column] = read_parts([part(folder(work, "avatars", child.name), batch)], [rule.column])[rule.column]
    totals = totals_of_children(rule, frame, column)
    out = pd.DataFrame({KEY: totals.index.to_numpy(), VALUE: totals.to_numpy(dtype=np.float64)})
    out[KEY] = out[KEY].astype(frame[column].dtype)  # every part of one dtype, rows or none
    write(out, directory, batch)


def _apply_totals(work, parent: Released, target: str, routed, batch: int, offset: int, size: int) -> None:
    rows = gather_rows(routed, batch)
    values = np.zeros(size, dtype=np.float64)
    if len(rows.columns) and len(rows):
        values[rows[POS].to_numpy() - offset] = rows[VALUE].fillna(0).to_numpy(dtype=np.float64)
    path = part(folder(work, "avatars", parent.name), batch)
    avatars = read_parts([path])
    avatars[target] = typed_totals(values, avatars[target])
    write(avatars, path.parent, batch)
