"""Nearest-neighbour search in a factor space (Euclidean), fast on millions of rows.

The searches use :class:`scipy.spatial.cKDTree` on every core. The points are stored in the
tree's own leaf order and queried in a leaf order too, so that consecutive queries walk the same
branches: on 1,000,000 points in 5 dimensions this makes the search about three times faster than
querying in the table's order. Where a tree prunes little (many dimensions for its points), counting
the points within a radius and the distances to the nearest points are taken from blocks of the distance
matrix instead (:mod:`relanon.engine.distance_blocks`), with the tree's answers to the bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.spatial import cKDTree

from relanon.common.errors import ParameterError
from relanon.engine import distance_blocks

# Sliding-midpoint trees (balanced_tree=False) build faster and, on factor-space coordinates
# (clusters along categorical axes), answer queries about twice as fast as median-split trees.
_TREE_OPTIONS = {"balanced_tree": False, "leafsize": 16}

# Queries answered per call of the tree (a multiple of the number of neighbours asked): the tree's
# answers, held twice while they are put back in the caller's order, stay near 100 MB however many
# queries there are. Each query's answer does not depend on the others asked with it.
QUERY_VALUES = 4_000_000
# Queries answered between two calls of a ``progress`` hook: a bar moves every fraction of a second.
PROGRESS_QUERIES = 4_096

# Two distances closer than this (relatively) are a tie: "strictly closer" must not depend on the
# last bit of two ways of computing the same distance.
_RELATIVE_TIE = 1e-9

# A kd-tree prunes branches only while its points far outnumber its cells along every axis: with fewer
# than TREE_POINTS_PER_CELL * 2 ** dimensions reference points, a query within a radius visits most leaves
# and blocks of the distance matrix (matrix products) count faster. The demo's hidden-rate counts, 10,000
# queries, in CPU seconds: among 10,000 points in 12 / 30 dimensions, 0.6 / 0.7 by blocks against 3.0 / 13.5
# by the tree; among 100,000 points in 12 dimensions (the patients ten times, jittered), 8 against 25.
TREE_POINTS_PER_CELL = 64
# The k nearest of a query prune far more than a wide radius: a tree finds them faster down to one point
# per cell (10,000 points in 12 dimensions: 0.1 s of CPU by the tree, 0.4 by blocks; in 30: 1.3 against 0.5).
NEAREST_POINTS_PER_CELL = 1


class Neighbours(NamedTuple):
    """``indices[i, j]`` is the j-th nearest point of query i, at distance ``distances[i, j]``."""

    distances: np.ndarray
    indices: np.ndarray


def _points(coords, what: str) -> np.ndarray:
    points = np.asarray(coords, dtype=np.float64)
    if points.ndim != 2:
        raise ParameterError(f"{what} must be a 2-D array (rows x coordinates), got shape {points.shape}")
    if points.shape[1] == 0:  # no informative axis: every point sits at the origin
        points = np.zeros((len(points), 1))
    if not np.isfinite(points).all():
        raise ParameterError(f"{what} hold NaN or infinite coordinates")
    return points


class SearchTree:
    """A search structure over ``points`` built once and queried as often as needed: several searches among
    the same points (:func:`cross_neighbours`'s answers, each time) share its construction.

    The points are stored in the tree's leaf order (``order``); answers come in the caller's order.

    Examples
    --------
    >>> tree = SearchTree([[0.0], [1.0], [5.0]])
    >>> tree.query(np.array([[0.9], [4.0]]), 2).indices.tolist()
    [[1, 0], [2, 1]]
    """

    def __init__(self, points):
        points = _points(points, "reference coordinates")
        self.n_points, self.dimensions = points.shape
        self.order = cKDTree(points, **_TREE_OPTIONS).indices
        self.tree = cKDTree(points[self.order], **_TREE_OPTIONS)

    def locality_of(self, of: np.ndarray) -> np.ndarray:
        """An order of the queries ``points[of]`` (points of the tree) that walks the tree's leaves in turn."""
        rank = np.empty(self.n_points, dtype=np.int64)
        rank[self.order] = np.arange(self.n_points)
        return np.argsort(rank[of], kind="stable")

    def query(self, queries, k: int, order: np.ndarray | None = None, *, distances: bool = True,
              dtype=np.int64, progress=None) -> Neighbours:
        """The ``k`` nearest points of each query (as :func:`cross_neighbours`); ``order``, the order in which
        the queries are answered (any permutation: it changes only the speed), by default a locality order."""
        queries = _checked_queries(queries, self.dimensions, self.n_points, k)
        order = locality_order(queries) if order is None else order
        out_d = np.empty((len(order), k)) if distances else None
        out_i = np.empty((len(order), k), dtype=dtype)
        step = max(1, QUERY_VALUES // k)
        if progress is not None:
            step = min(step, PROGRESS_QUERIES)
        for start in range(0, len(order), step):
            part = order[start:start + step]
            found_d, positions = self.tree.query(queries[part], k=k, workers=-1)
            if distances:
                out_d[part] = found_d.reshape(len(part), k)
            del found_d
            out_i[part] = self.order[positions.reshape(len(part), k)]
            if progress is not None:
                progress(start + len(part), len(order))
        return Neighbours(out_d, out_i)

    def count_within(self, queries: np.ndarray, radii: np.ndarray, progress=None) -> np.ndarray:
        """Points within each query's radius, counted by parts of :data:`PROGRESS_QUERIES` queries in
        locality order (each count is independent of the others: the parts change no figure)."""
        order = locality_order(queries)
        out = np.empty(len(order), dtype=np.int64)
        for start in range(0, len(order), PROGRESS_QUERIES):
            part = order[start:start + PROGRESS_QUERIES]
            out[part] = self.tree.query_ball_point(queries[part], radii[part], return_length=True, workers=-1)
            if progress is not None:
                progress(start + len(part), len(order))
        return out


def locality_order(points: np.ndarray) -> np.ndarray:
    """An order of ``points`` in which consecutive points are near each other (a k-d tree's leaf order): queries
    answered in it walk the same branches of a tree in turn."""
    if len(points) < 2:
        return np.arange(len(points))
    return cKDTree(points, **_TREE_OPTIONS).indices


def self_neighbours(coords, k: int) -> Neighbours:
    """The ``k`` nearest *other* points of every point.

    A point is never its own neighbour, even when exact duplicates (distance 0) come first in the
    search: ``k + 1`` points are searched and the point itself is removed wherever it appears
    (the farthest one is dropped when it does not appear).

    Examples
    --------
    >>> found = self_neighbours([[0.0], [0.0], [2.0], [5.0]], k=2)
    >>> found.indices[:2].tolist()
    [[1, 2], [0, 2]]
    """
    points = _points(coords, "coords")
    n = len(points)
    if not 1 <= k < n:
        raise ParameterError(f"k must be between 1 and the number of points minus one ({n - 1}), got {k}")
    tree = SearchTree(points)
    found = tree.query(points, k + 1, order=tree.order)
    is_self = found.indices == np.arange(n)[:, None]
    is_self[~is_self.any(axis=1), k] = True
    keep = ~is_self
    return Neighbours(found.distances[keep].reshape(n, k), found.indices[keep].reshape(n, k))


def cross_neighbours(reference, queries, k: int, *, distances: bool = True, dtype=np.int64,
                     progress=None) -> Neighbours:
    """The ``k`` nearest points of ``reference`` for every row of ``queries``.

    Without ``distances`` only the indices are kept (``distances`` is None); ``dtype``, their integer
    type (int32 halves a large search's memory). ``progress(done, total)``, if given, is called after
    each part of at most :data:`PROGRESS_QUERIES` queries.

    Examples
    --------
    >>> cross_neighbours([[0.0, 0.0], [3.0, 4.0]], [[0.0, 1.0]], k=2).distances.tolist()
    [[1.0, 4.242640687119285]]
    """
    return SearchTree(reference).query(queries, k, distances=distances, dtype=dtype, progress=progress)


def _checked_queries(queries, dimensions: int, n_points: int, k: int) -> np.ndarray:
    """The queries of a search for the ``k`` nearest of ``n_points`` points in ``dimensions`` coordinates, checked."""
    queries = _points(queries, "query coordinates")
    if queries.shape[1] != dimensions:
        raise ParameterError(f"reference and queries have {dimensions} and {queries.shape[1]} coordinates")
    if not 1 <= k <= n_points:
        raise ParameterError(f"k must be between 1 and the number of reference points ({n_points}), got {k}")
    return queries


def nearest_distances(reference, queries, k: int, *, progress=None) -> np.ndarray:
    """The distances of every row of ``queries`` to its ``k`` nearest points of ``reference``, nearest first.

    The distances of :func:`cross_neighbours`, to the bit, without the points' positions (which one of
    equally close points is named does not matter here). ``progress(done, total)``, if given, is called
    as the queries are answered.

    Examples
    --------
    >>> nearest_distances([[0.0, 0.0], [3.0, 4.0]], [[0.0, 1.0]], k=2).tolist()
    [[1.0, 4.242640687119285]]
    """
    reference = _points(reference, "reference coordinates")
    queries = _checked_queries(queries, reference.shape[1], len(reference), k)
    if len(queries) == 0:
        return np.zeros((0, k))
    if len(reference) < NEAREST_POINTS_PER_CELL * 2.0 ** reference.shape[1]:
        return distance_blocks.nearest_distances(reference, queries, k, progress=progress)
    return SearchTree(reference).query(queries, k, progress=progress).distances


def _prunes_little(reference: np.ndarray) -> bool:
    """Whether a kd-tree of ``reference`` would visit most of its leaves for each query."""
    return len(reference) < TREE_POINTS_PER_CELL * 2.0 ** reference.shape[1]


def tie_tolerance(*coords) -> float:
    """The absolute distance under which two points count as one place: 1e-9 of the largest coordinate (at least 1e-9).

    Duplicated records are coded to the same coordinates up to the last bits of the arithmetic:
    their distance is a tie, not a ranking.

    Examples
    --------
    >>> tie_tolerance([[0.0, 3.0]], [[-4.0, 1.0]])
    4e-09
    """
    largest = max((float(np.abs(np.asarray(c, dtype=np.float64)).max(initial=0.0)) for c in coords), default=0.0)
    return _RELATIVE_TIE * max(1.0, largest)


def count_closer_and_tied(reference, queries, distances, *, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """For each query, the reference points strictly closer than ``distances[i]``, and those at that distance.

    Two distances count as equal (a tie) when they differ by less than a relative 1e-9 plus the
    :func:`tie_tolerance` of the points; the tied count includes any point at exactly
    ``distances[i]`` (a query's own match, when ``distances`` are measured to one of the points).
    ``progress(done, total)``, if given, counts the queries of both searches as they are answered.

    Examples
    --------
    >>> closer, tied = count_closer_and_tied([[0.0], [1.0], [1.0], [2.0]], [[0.0]], [1.0])
    >>> closer.tolist(), tied.tolist()
    ([1], [2])
    """
    reference = _points(reference, "reference coordinates")
    queries = _points(queries, "query coordinates")
    distances = np.asarray(distances, dtype=np.float64)
    slack = _RELATIVE_TIE * distances + tie_tolerance(reference, queries)
    closer = np.zeros(len(queries), dtype=np.int64)
    tied = np.zeros(len(queries), dtype=np.int64)
    if len(queries) == 0 or len(reference) == 0:
        return closer, tied
    inner = distances - slack
    if _prunes_little(reference):
        closer, within = distance_blocks.count_within(reference, queries, np.where(inner > 0, inner, -np.inf),
                                                      distances + slack, progress=progress)
        return closer, within - closer
    tree = SearchTree(reference)
    positive = inner > 0
    first, total = int(positive.sum()), int(positive.sum()) + len(queries)
    if positive.any():
        closer[positive] = tree.count_within(
            queries[positive], inner[positive],
            progress=None if progress is None else lambda done, _: progress(done, total))
    tied = tree.count_within(
        queries, distances + slack,
        progress=None if progress is None else lambda done, _: progress(first + done, total)) - closer
    return closer, tied


def count_strictly_closer(reference, queries, distances) -> np.ndarray:
    """For each query, the number of reference points strictly closer to it than ``distances[i]``.

    Distances equal up to a relative 1e-9 (plus the :func:`tie_tolerance` of the points) count as
    ties, not as closer.

    Examples
    --------
    >>> count_strictly_closer([[0.0], [1.0], [2.0]], [[0.0]], [2.0]).tolist()
    [2]
    """
    return count_closer_and_tied(reference, queries, distances)[0]
