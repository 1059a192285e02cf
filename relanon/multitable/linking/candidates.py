"""Where a link's candidates are found: the factor space of the parent's original columns, in which the
released parents and the released children's copy of their parent's columns are placed
(:func:`parent_space`, :func:`project`, :func:`child_side`), and the candidate arcs of the ``linear_sum``
transport problem in that space (:func:`candidate_arcs`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.engine.factor_space import FactorSpace
from relanon.engine.neighbours import cross_neighbours
from relanon.multitable.results import TableRelease
from relanon.schema.graph import Link
from relanon.schema.model import Table

NEAREST_PARENTS = 16
"""Candidate parents of each child: its nearest parents that receive children."""


def child_side(link: Link, original, child: TableRelease, parent_table: Table, columns: dict) -> pd.DataFrame:
    """The parent's columns as the released child rows see them (avatarized broadcast, or original)."""
    if child.enriched_avatars is not None:
        source = child.enriched_avatars
        names = child.internal_names
        return pd.DataFrame({c: source[names[("parent", link.column, c)]] for c in columns}, index=source.index)
    # a child released with its original rows: the parent's values through its original foreign key
    parent_frame = original[link.parent].set_index(parent_table.primary_key)
    keys = original[link.child][link.column].to_numpy()[child.original_position]
    return pd.DataFrame({c: parent_frame[c].reindex(keys).reset_index(drop=True) for c in columns})


def parent_space(parent_table: Table, parent_original, columns, rng):
    """The factor space of the parent's original columns, where parents and children are matched."""
    if not columns:
        return None
    weights = {c.name: c.weight for c in parent_table.released_columns if c.name in columns}
    # seeded: above DENSE_LIMIT coded columns (a parent with a high-cardinality column) the axes come
    # from Lanczos iterations whose start vector would otherwise change the links on every run
    return FactorSpace(columns, weights=weights, random_state=rng).fit(parent_original[list(columns)])


def project(space, frame, columns) -> np.ndarray:
    return np.empty((len(frame), 0)) if space is None else space.transform(frame[list(columns)])


def candidate_arcs(children: np.ndarray, parents: np.ndarray, counts: np.ndarray, start: np.ndarray, *,
                   k: int = NEAREST_PARENTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arcs of the transport graph of a ``linear_sum`` link: ``(child, parent, distance)`` arrays.

    Each child's ``k`` nearest parents among those receiving children; each such parent's ``2 * count + 2``
    nearest children (a parent that must take many children reaches beyond the children that have it among
    their nearest); and the arc of each child to its parent in ``start``, a feasible assignment, so that the
    graph always holds a flow meeting every count (a flow exact on this graph is never worse than ``start``).
    Sorted by child then parent, without duplicates, so the graph does not depend on the order of the
    searches.

    Examples
    --------
    >>> tails, heads, distances = candidate_arcs(np.array([[0.0], [1.0], [5.0]]), np.array([[0.0], [5.0]]),
    ...                                          np.array([2, 1]), np.array([0, 0, 1]), k=1)
    >>> tails.tolist(), heads.tolist()
    ([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1])
    """
    n = len(children)
    live = np.flatnonzero(counts > 0)
    found = cross_neighbours(parents[live], children, k=min(k, len(live)))
    tails = [np.repeat(np.arange(n), found.indices.shape[1]), np.arange(n)]
    heads = [live[found.indices.ravel()], np.asarray(start, dtype=np.int64)]
    distances = [found.distances.ravel(), np.linalg.norm(children - parents[start], axis=1)]
    want = np.minimum(n, 2 * counts[live] + 2)
    width = 2 ** np.ceil(np.log2(want)).astype(np.int64)  # parents searched together, by powers of two
    for size in np.unique(width):
        members = np.flatnonzero(width == size)
        back = cross_neighbours(children, parents[live[members]], k=int(min(n, size)))
        keep = np.arange(back.indices.shape[1])[None, :] < want[members][:, None]
        tails.append(back.indices[keep])
        heads.append(np.repeat(live[members], keep.sum(axis=1)))
        distances.append(back.distances[keep])
    tails, heads, distances = np.concatenate(tails), np.concatenate(heads), np.concatenate(distances)
    _, first = np.unique(tails * len(parents) + heads, return_index=True)
    return tails[first], heads[first], distances[first]
