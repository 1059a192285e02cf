"""Spatial blocks of a link too large for one machine: children and parent slots cut together.

The ``linear_sum`` link assigns each child to one *slot* (a parent repeated as many times as the
children it receives) at minimum total distance. On one machine, children and slots are cut together
into balanced spatial blocks by recursive median bisection (:mod:`relanon.multitable.linking.repair`). Spread
over partitions, the same cut is made in three steps, none of which gathers the points:

1. a k-d tree of median cuts is fitted on a seeded sample of the children (:class:`CellTree`); its
   leaves are small *cells*, numbered along the tree, so consecutive cells are close in space;
2. every partition counts its children (and, separately, its slots) per cell (:func:`cell_counts`);
   the counts, summed in the order of the partitions, give each point an exact *rank* along the
   cells (:func:`rank_offsets`, :func:`ranks`): cell first, then partition, then position;
3. block ``g`` holds the points of ranks ``g * size`` to ``(g + 1) * size - 1``, for the children and
   for the slots alike: every block holds exactly as many slots as children, and is a run of
   neighbouring cells.

Each block is then solved on a worker (as one machine would solve a link of its size), and the
borders between blocks are repaired by passes along rotated cuts: the same three steps on rotated
coordinates, each group re-solved with the slots its children hold (which never raises the total).
"""

from __future__ import annotations

import numpy as np

from relanon.common.errors import ParameterError

CELL_DEPTH = 16
"""Levels of the cell tree: 65,536 cells, far finer than blocks of tens of thousands of children."""


class CellTree:
    """Median cuts of a sample of points, each along the axis of its largest spread.

    Parameters
    ----------
    sample : array of shape (n, d)
        Points standing for the whole set (a seeded sample).
    depth : int
        Levels of cuts: ``2 ** depth`` cells (fewer when the sample is small: a cell per sampled point at most).

    Examples
    --------
    >>> tree = CellTree(np.array([[0.0], [1.0], [2.0], [3.0]]), depth=2)
    >>> tree.cells(np.array([[0.1], [2.9], [1.2]])).tolist()
    [0, 3, 1]
    """

    def __init__(self, sample, depth: int = CELL_DEPTH):
        points = np.asarray(sample, dtype=np.float64)
        if points.ndim != 2 or len(points) == 0:
            raise ParameterError(f"the cell tree needs a non-empty sample of points, got shape {points.shape}")
        self.depth = int(min(depth, max(1, np.floor(np.log2(len(points))))))
        self.axis = np.zeros(2**self.depth, dtype=np.int64)  # heap layout: node 1 is the root
        self.value = np.zeros(2**self.depth)
        pending = [(1, np.arange(len(points)))]
        while pending:
            node, members = pending.pop()
            if node >= 2**self.depth:
                continue
            inside = points[members]
            if len(members) > 1:
                axis = int(np.argmax(inside.var(axis=0)))
                value = float(np.median(inside[:, axis]))
            else:
                axis, value = 0, float(inside[0, 0]) if len(members) else 0.0
            self.axis[node], self.value[node] = axis, value
            below = inside[:, axis] <= value
            pending += [(2 * node, members[below]), (2 * node + 1, members[~below])]

    @property
    def n_cells(self) -> int:
        return 2**self.depth

    def cells(self, points) -> np.ndarray:
        """The cell of each point (0 .. ``n_cells - 1``, in the tree's left-to-right order)."""
        points = np.asarray(points, dtype=np.float64)
        node = np.ones(len(points), dtype=np.int64)
        rows = np.arange(len(points))
        for _ in range(self.depth):
            right = points[rows, self.axis[node]] > self.value[node]
            node = 2 * node + right
        return node - self.n_cells


def cell_counts(cells: np.ndarray, n_cells: int) -> np.ndarray:
    """How many points of a partition lie in each cell."""
    return np.bincount(cells, minlength=n_cells).astype(np.int64)


def rank_offsets(counts: list[np.ndarray]) -> list[np.ndarray]:
    """For each partition (in order), the rank of its first point in each cell.

    Ranks run cell by cell; within a cell, partition by partition.

    Examples
    --------
    >>> [o.tolist() for o in rank_offsets([np.array([2, 1]), np.array([1, 3])])]
    [[0, 3], [2, 4]]
    """
    if not counts:
        return []
    table = np.vstack(counts)
    cell_start = np.concatenate([[0], np.cumsum(table.sum(axis=0))[:-1]])
    before = np.cumsum(table, axis=0) - table  # points of earlier partitions in the same cell
    return [cell_start + before[p] for p in range(len(counts))]


def ranks(cells: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The rank of each point of a partition: its cell's offset plus its place among the partition's
    points of that cell (in the partition's order).

    Examples
    --------
    >>> ranks(np.array([1, 0, 1]), np.array([0, 5])).tolist()
    [5, 0, 6]
    """
    order = np.argsort(cells, kind="stable")
    sorted_cells = cells[order]
    first = np.searchsorted(sorted_cells, sorted_cells, side="left")
    within = np.empty(len(cells), dtype=np.int64)
    within[order] = np.arange(len(cells)) - first
    return offsets[cells] + within


def random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    """A random orthogonal matrix (the rotated cuts of the repair passes)."""
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return rotation


def sample_rows(n_rows: int, share: float, rng: np.random.Generator) -> np.ndarray:
    """Positions of a seeded sample of about ``share`` of ``n_rows`` rows (at least one when any)."""
    if n_rows == 0:
        return np.zeros(0, dtype=np.int64)
    size = min(n_rows, max(1, int(round(n_rows * share))))
    return np.sort(rng.choice(n_rows, size=size, replace=False))
