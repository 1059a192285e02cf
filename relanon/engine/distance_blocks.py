"""Exact distance searches on blocks of the distance matrix, where a kd-tree prunes little.

A kd-tree skips a branch only while its points far outnumber its cells along every axis; with few points
for many dimensions (10,000 patients and the aggregates of their visits: 30 axes) each query visits
most leaves, and one matrix product per block of queries is an order of magnitude faster.

A block's squared distances come from the product ``|q|^2 + |p|^2 - 2 q.p``, whose rounding error has a
known bound (:func:`product_error`). What lies farther from a decision than that bound is decided from
the product; the few points within it (duplicated records at distance 0, points on a radius, candidates
for the nearest) are measured again with :func:`tree_squared_distances`, the very arithmetic of
:class:`scipy.spatial.cKDTree`. The searches return the tree's answers to the bit, and each block is
independent of the others: the number of threads and the block size change nothing.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

# Entries of the distance matrix a thread holds at once (a block of queries times every reference point):
# about 4 MB, near the processor's cache.
BLOCK_ENTRIES = 1 << 19


def tree_squared_distances(queries: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Squared distance of each row of ``queries`` to the same row of ``points``, summed as cKDTree sums them.

    scipy's tree adds the squared differences in four interleaved sums (coordinates 0, 4, 8 ... in the first),
    adds the four, then the coordinates left over one by one; summing in the same order gives the same bits.

    Examples
    --------
    >>> from scipy.spatial import cKDTree
    >>> rng = np.random.default_rng(0)
    >>> points, queries = rng.normal(size=(50, 11)), rng.normal(size=(20, 11))
    >>> distances, nearest = cKDTree(points).query(queries, k=1)
    >>> bool((np.sqrt(tree_squared_distances(queries, points[nearest])) == distances).all())
    True
    """
    dims = queries.shape[1]
    sums = [np.zeros(len(queries)) for _ in range(4)]
    whole = dims - dims % 4
    for axis in range(whole):
        difference = queries[:, axis] - points[:, axis]
        sums[axis % 4] += difference * difference
    total = ((sums[0] + sums[1]) + sums[2]) + sums[3]
    for axis in range(whole, dims):
        difference = queries[:, axis] - points[:, axis]
        total += difference * difference
    return total


def product_error(dimensions: int) -> float:
    """A bound, relative to ``|q|^2 + |p|^2``, of the rounding error of a squared distance computed as
    ``|q|^2 + |p|^2 - 2 q.p`` and compared with a threshold, plus the tree's own rounding (twice the
    textbook bounds)."""
    return 8.0 * (dimensions + 3) * np.finfo(np.float64).eps


class _Blocks:
    """The reference points, ready for products with blocks of queries: ``|p|^2 - 2 q.p`` in one product."""

    def __init__(self, reference: np.ndarray, queries: np.ndarray):
        self.reference, self.queries = reference, queries
        norms = np.einsum("ij,ij->i", reference, reference)
        self.points = np.ascontiguousarray(np.hstack([reference, norms[:, None]]).T)
        self.query_norms = np.einsum("ij,ij->i", queries, queries)
        self.largest = float(norms.max(initial=0.0))
        self.rows = max(1, BLOCK_ENTRIES // max(1, len(reference)))

    def products(self, start: int, stop: int) -> tuple[np.ndarray, float]:
        """Squared distances minus ``|q|^2`` of queries ``start:stop`` to every point, and their error bound."""
        part = self.queries[start:stop]
        products = np.hstack([-2.0 * part, np.ones((len(part), 1))]) @ self.points
        error = product_error(self.reference.shape[1]) * (self.largest + float(self.query_norms[start:stop].max()))
        return products, error

    def run(self, block, progress=None) -> None:
        """``block(start, stop)`` for every block of queries, on every core; ``progress(done, total)`` in order."""
        def part(start: int) -> int:
            stop = min(start + self.rows, len(self.queries))
            block(start, stop)
            return stop

        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(max_workers=_cores()) as pool:
            for stop in pool.map(part, range(0, len(self.queries), self.rows)):
                if progress is not None:
                    progress(stop, len(self.queries))


def count_within(reference: np.ndarray, queries: np.ndarray, *radii, progress=None) -> list[np.ndarray]:
    """For each array of radii, the reference points within ``radii[j][i]`` of query ``i`` (distance <= radius,
    as :meth:`scipy.spatial.cKDTree.query_ball_point` counts them; a negative radius counts none).

    Examples
    --------
    >>> count_within(np.array([[0.0], [1.0], [1.0], [3.0]]), np.array([[0.0]]), [1.0], [-1.0])
    [array([3]), array([0])]
    """
    blocks = _Blocks(reference, queries)
    squared = [np.where(r >= 0, r * r, -np.inf) for r in (np.asarray(r, dtype=np.float64) for r in radii)]
    counts = [np.zeros(len(queries), dtype=np.int64) for _ in squared]

    def block(start: int, stop: int) -> None:
        products, error = blocks.products(start, stop)
        for count, limit in zip(counts, squared, strict=True):
            threshold = limit[start:stop] - blocks.query_norms[start:stop]
            sure = np.count_nonzero(products <= (threshold - error)[:, None], axis=1)
            unsure = np.count_nonzero(products <= (threshold + error)[:, None], axis=1) - sure
            for i in np.flatnonzero(unsure):
                close = np.flatnonzero((products[i] > threshold[i] - error) & (products[i] <= threshold[i] + error))
                exact = tree_squared_distances(np.broadcast_to(queries[start + i], (len(close), queries.shape[1])),
                                               reference[close])
                sure[i] += np.count_nonzero(exact <= limit[start + i])
            count[start:stop] = sure

    blocks.run(block, progress)
    return counts


def nearest_distances(reference: np.ndarray, queries: np.ndarray, k: int, progress=None) -> np.ndarray:
    """The distances of each query to its ``k`` nearest reference points, nearest first, as
    :meth:`scipy.spatial.cKDTree.query` returns them (``1 <= k <= len(reference)``).

    Examples
    --------
    >>> nearest_distances(np.array([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]]), np.array([[0.0, 1.0]]), k=2).tolist()
    [[1.0, 1.0]]
    """
    blocks = _Blocks(reference, queries)
    out = np.empty((len(queries), k))

    def block(start: int, stop: int) -> None:
        products, error = blocks.products(start, stop)
        n = stop - start
        rows = np.arange(n)
        # the k smallest products: k passes of the minimum, each hiding the one found (put back after)
        found, values = np.empty((n, k), dtype=np.int64), np.empty((n, k))
        for j in range(k):
            found[:, j] = products.argmin(axis=1)
            values[:, j] = products[rows, found[:, j]]
            products[rows, found[:, j]] = np.inf
        for j in range(k):
            products[rows, found[:, j]] = values[:, j]
        # every point whose distance may be among the k smallest is measured as the tree measures it: most
        # queries have no candidate but the k found
        limit = values[:, -1] + 2 * error
        exact = tree_squared_distances(np.repeat(queries[start:stop], k, axis=0), reference[found.ravel()])
        squared = np.sort(exact.reshape(n, k), axis=1)
        more = np.flatnonzero(np.count_nonzero(products <= limit[:, None], axis=1) > k)
        if len(more):
            row, column = np.nonzero(products[more] <= limit[more, None])
            exact = tree_squared_distances(queries[start + more[row]], reference[column])
            order = np.lexsort((exact, row))
            firsts = np.searchsorted(row[order], np.arange(len(more)))
            squared[more] = exact[order][firsts[:, None] + np.arange(k)]
        out[start:stop] = np.sqrt(squared)

    blocks.run(block, progress)
    return out


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
