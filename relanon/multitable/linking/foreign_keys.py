"""The foreign keys of a release: each released child row linked to a released parent, by the link's
method (``linear_sum``, ``minimum_distance``, ``original_order``), in a factor space of the parent's
columns fitted on the original parents.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.multitable.linking import assignment, nearest
from relanon.multitable.linking.candidates import child_side, parent_space, project
from relanon.multitable.linking.counts import (
    allocate_counts,
    count_bounds,
    count_holders,
    expected_counts,
    in_order_of,
    original_counts,
    plausible_counts,
)
from relanon.multitable.results import TableRelease
from relanon.schema.graph import Link, about_people
from relanon.schema.model import Schema, Table


def relink(schema: Schema, link: Link, original: dict, releases: dict, rng, progress=None) -> pd.Series:
    """The new foreign key of every released row of ``link.child``."""
    child, parent = releases[link.child], releases[link.parent]
    parent_table = schema[link.parent]
    parent_keys = parent.frame[parent_table.primary_key]
    fk_dtype = _foreign_key_dtype(original[link.child][link.column], parent_keys)
    if len(child.frame) == 0:
        return pd.Series([], index=child.frame.index, dtype=fk_dtype)
    if link.method == "original_order" or (child.method != "avatar" and parent.method != "avatar"):
        # exact links: asked for, or both sides released with their original rows and keys
        position = _original_parent_positions(link, original, child, parent_table)
        released_row = _released_row_of_original(parent, len(original[link.parent]))
        target = np.where(position >= 0, released_row[np.maximum(position, 0)], -1)
    else:
        has_parent = _has_parent(link, original, child)
        target = np.full(len(child.frame), -1)
        if has_parent.any() and len(parent.frame):
            target[has_parent] = _match(schema, link, original, child, parent, has_parent, rng, progress)
    linked = target >= 0
    values = np.full(len(target), None, dtype=object)
    values[linked] = parent_keys.to_numpy(dtype=object)[target[linked]]
    if fk_dtype == "int64" and not linked.all():
        fk_dtype = "Int64"  # some rows lost their parent (suppressed by anatomization)
    return pd.Series(values, index=child.frame.index).astype(fk_dtype)


def _foreign_key_dtype(original_fk: pd.Series, parent_keys: pd.Series):
    if pd.api.types.is_integer_dtype(parent_keys.dtype):
        return "Int64" if str(original_fk.dtype) == "Int64" or original_fk.isna().any() else "int64"
    return original_fk.dtype


def _original_parent_positions(link: Link, original: dict, child: TableRelease, parent_table: Table) -> np.ndarray:
    """For each released child row, the position of its original record's parent (-1 for none)."""
    parent_keys = original[link.parent][parent_table.primary_key]
    index = pd.Index(parent_keys.to_numpy())
    fk = original[link.child][link.column].to_numpy()[child.original_position]
    position = index.get_indexer(pd.Series(fk).to_numpy())
    return position


def _released_row_of_original(release: TableRelease, n_original: int) -> np.ndarray:
    """For each original row of a table, the released row coming from it (-1 when none)."""
    row = np.full(n_original, -1)
    valid = release.original_position >= 0
    row[release.original_position[valid]] = np.flatnonzero(valid)
    return row


def _has_parent(link: Link, original: dict, child: TableRelease) -> np.ndarray:
    present = child.internal_names.get(("present", link.column))
    if child.enriched_avatars is not None and present in child.enriched_avatars:
        return child.enriched_avatars[present].to_numpy(dtype=bool)
    fk = original[link.child][link.column].to_numpy()[child.original_position]
    return pd.notna(fk)


def _match(schema, link: Link, original, child: TableRelease, parent: TableRelease, has_parent, rng, progress=None):
    """Released parent row for each child row that has a parent, by the link's method."""
    parent_table = schema[link.parent]
    columns = {c.name: c.type for c in parent_table.released_columns if c.name in parent.frame.columns}
    children = child_side(link, original, child, parent_table, columns)[has_parent]
    space = parent_space(parent_table, original[link.parent], columns, rng)
    parent_coords, child_coords = (project(space, frame, columns) for frame in (parent.frame, children))
    n_children = int(has_parent.sum())
    if link.method == "minimum_distance" and parent_coords.shape[1] == 0:
        return rng.integers(len(parent.frame), size=n_children)
    owned = original_counts(link, original, parent_table)
    if link.method == "minimum_distance":
        rooms = nearest.rooms_by_demand(owned, child_coords, parent_coords,
                                        k=parent.k or nearest.DEMAND_NEIGHBOURS, min_count=count_holders(schema, link, parent),
                                        random_state=rng)
        return nearest.nearest_with_room(child_coords, parent_coords, rooms, progress)
    expected = expected_counts(link, original, parent, parent_table)
    candidates = plausible_counts(owned, original[link.parent], space, parent_coords, columns, parent.k)
    # a number of children few parents have is not released as it is (the same bound as the rooms)
    bounds = count_bounds(owned, count_holders(schema, link, parent))
    expected = np.clip(expected, *bounds)
    candidates = None if candidates is None else np.clip(candidates, *bounds)
    if space is None and not about_people(schema, link.parent) and len(expected) == len(owned):
        # a reference list without a released column: nothing places its rows, and its drawn counts,
        # copies of one another's, would repeat some and lose others (16 airlines whose names are dropped:
        # children per parent 0.75-0.81); it keeps the original's counts, in the order of the drawn ones
        expected = in_order_of(np.clip(owned, *bounds), expected, rng)
    counts = allocate_counts(expected, n_children, candidates=candidates, random_state=rng,
                             held=None if about_people(schema, link.parent) else np.clip(owned, *bounds))
    if parent_coords.shape[1] == 0:
        return rng.permutation(np.repeat(np.arange(len(parent.frame)), counts))
    return assignment.match_linear_sum(child_coords, parent_coords, counts, random_state=rng, progress=progress)
