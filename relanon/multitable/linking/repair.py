"""The blocked exact solver of ``linear_sum`` and its repairs: children and slots cut together into balanced
spatial blocks, each block solved exactly (:func:`solve_exact`), then groups of children regrouped along
randomly rotated cuts and re-solved exactly with the slots they hold, which never raises the total distance.
The Dask engine repairs the borders between its blocks the same way (:func:`border_band`,
:func:`repair_borders`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from ot.lp import emd
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from relanon.common.errors import ParameterError
from relanon.multitable.linking.inputs import (
    as_count,
    as_int_vector,
    as_matrix,
    generator,
    link_coordinates,
    optional_count,
    slot_permutation,
    worker_count,
)

# Children per block: on the demo's links an exact solve (solve_exact) of 1,900 children takes about 0.13 s, of
# 930 about 0.025 s, of 465 about 0.006 s (benchmarks/exact_solvers.py); smaller blocks need more repair passes
# to reach the same total.
BLOCK_SIZE = {False: 500, True: 150}
REPAIR_PASSES = {False: 6, True: 5}
# Above this many children, smaller blocks and fewer passes keep the time near-linear. Blocks are
# halves of halves: at most 150 gives blocks of 145 at the 10x demo's 297,535-child link and of 121
# at its 495,769-child link. Measured there with the midpoint repair groups, blocks of 121 and 5
# passes take about 45 % of the time of blocks of 242 and 4 passes and end at a lower
# total; the smaller link keeps blocks of 145 and reaches a lower total with one more pass.
LARGE = 200_000


def no_progress(done: int, total: int) -> None:
    pass


def solve_exact(children: np.ndarray, slots: np.ndarray, owners: np.ndarray | None = None) -> np.ndarray:
    """The optimal slot of each child (as many slots as children): a permutation of minimum total distance.

    ``owners`` labels the slots, the same label for slots at the same point (a parent's slots); by default, the
    slots at equal coordinates. Up to :data:`SLOTS_SOLVE` children, ``scipy.optimize.linear_sum_assignment`` solves
    the dense matrix of children and slots. Above, each label is one point whose capacity is its number of slots,
    and the transport problem of the children and these points is solved by the network simplex of POT
    (``ot.emd``: exact, single-threaded, outside the interpreter lock); each label's slots then go to its children
    in order. A solve that stops short of its optimum within :data:`EMD_ITERATIONS` (POT then warns) is done on the
    slots instead.

    Examples
    --------
    >>> solve_exact(np.array([[0.0], [4.0], [1.0]]), np.array([[5.0], [0.0], [0.0]])).tolist()
    [1, 0, 2]
    """
    if len(children) <= SLOTS_SOLVE:
        return linear_sum_assignment(cdist(children, slots))[1]
    if owners is None:
        owners = np.unique(slots, axis=0, return_inverse=True)[1].reshape(-1)
    _, first, owner, capacity = np.unique(owners, return_index=True, return_inverse=True, return_counts=True)
    if len(first) == 1:
        return np.arange(len(children))
    # no warnings filter here: the filters are global to the process, and blocks are solved on several threads
    plan, log = emd(np.ones(len(children)), capacity.astype(np.float64), cdist(children, slots[first]),
                    numItermax=EMD_ITERATIONS, log=True)
    point = plan.argmax(axis=1)
    if log["result_code"] != 1 or not np.array_equal(np.bincount(point, minlength=len(first)), capacity):
        return linear_sum_assignment(cdist(children, slots))[1]
    slot = np.empty(len(children), dtype=np.int64)
    slot[np.argsort(point, kind="stable")] = np.argsort(owner, kind="stable")
    return slot


SLOTS_SOLVE = 200
"""Largest group that :func:`solve_exact` solves on its slots (``linear_sum_assignment``) rather than on its
parents (the network simplex). Measured per block on the first blocks of the demo's links and of clustered
instances (``benchmarks/exact_solvers.py``, CPU time): ``linear_sum_assignment`` takes 0.25 to 0.65 times the
network simplex's time on groups of 25 to 60 children, as much on groups of 95 to 125 of the demo and clustered
instances, 1.4 and 2 times as much on the 10x demo's blocks of 121 and 145, twice as much on groups of 190 to 250
(on the demo's blocks of 465 children among about 130 parents, 21 ms against 5.7 ms). Groups of up to 200 stay
with ``linear_sum_assignment`` because of the clustered million of ``benchmarks/linear_sum_speed.py`` (blocks of
150), which it solves in 24-25 s and the network simplex from 101 children in 33-41 s; the 10x demo's blocked
stages would take 18-29 % less CPU with the network simplex from 101."""
EMD_ITERATIONS = 10_000_000
"""Network simplex iterations allowed to one exact solve."""


def solve_blocked(children, slot_points, block_size, repair_passes, workers, rng, report=no_progress,
                  owners=None) -> np.ndarray:
    """Balanced spatial blocks solved exactly one by one, then repaired along rotated cuts.

    Children and slots are cut together by recursive median bisection, so every block holds as
    many slots as children and the first assignment is feasible. Each repair regroups the children
    (:func:`_repair_groups`: along a randomly rotated cut, by the midpoints between them and their
    slots above :data:`LARGE` children) and re-solves every group exactly with the slots its members
    hold: the current assignment is one of the candidates, so the total never rises, and children
    left on the wrong side of a first-pass border find their parent in a later group.
    ``report(done, total)`` is called as groups are solved (every pass cuts as many groups).
    """
    slot = np.empty(len(children), dtype=np.int64)
    blocks = _balanced_blocks(children, slot_points, max_size=block_size, workers=workers)
    total = len(blocks) * (1 + repair_passes)
    done = _solve_groups(children, slot_points, [m for m, _ in blocks], [s for _, s in blocks], slot, workers,
                         lambda n: report(n, total), owners)
    by_midpoint = len(children) > LARGE
    for _ in range(repair_passes):
        held = np.take(slot_points, slot, axis=0)
        groups = _repair_groups(children, held, block_size, rng, by_midpoint=by_midpoint, workers=workers)
        done += _solve_groups(children, slot_points, groups, [slot[members] for members in groups], slot, workers,
                              lambda n, offset=done: report(offset + n, total), owners)
    return slot


def _solve_groups(children, slot_points, groups, slot_groups, slot, workers, solved_so_far=None, owners=None) -> int:
    """Solve each group of children with its slots exactly (:func:`solve_exact`, the slots labelled by ``owners``),
    and write their slots in ``slot``.

    The groups are disjoint, so each is solved and written on its own: on ``workers`` threads, in tasks of up to
    :data:`GROUPS_PER_TASK` consecutive groups and at least four tasks per thread (the assignment solver releases
    the interpreter; a task per group would spend more time handing out work than solving on the small groups).
    ``solved_so_far(n)`` is called as the tasks are done, in order, with the number of groups solved (after each
    group on one thread); returns the number of groups.
    """

    def solve(task):
        for members, slots in task:
            # np.take gathers rows several times faster than indexing (the same values, C-contiguous)
            local = solve_exact(np.take(children, members, axis=0), np.take(slot_points, slots, axis=0),
                                None if owners is None else owners[slots])
            slot[members] = slots[local]
        return len(task)

    pairs = list(zip(groups, slot_groups, strict=True))
    size = max(1, min(GROUPS_PER_TASK, len(pairs) // (4 * workers))) if workers > 1 else 1
    tasks = [pairs[i:i + size] for i in range(0, len(pairs), size)]
    if workers > 1 and len(tasks) > 1:
        # threads share the arrays without copies, and write the slots of disjoint groups
        with ThreadPoolExecutor(max_workers=workers) as pool:
            _counted(pool.map(solve, tasks), solved_so_far)
    else:
        _counted(map(solve, tasks), solved_so_far)
    return len(pairs)


GROUPS_PER_TASK = 16
"""Groups solved one after the other by one thread's task in :func:`_solve_groups`."""


def _counted(sizes, solved_so_far) -> None:
    """Run an iterator of tasks that return how many groups they solved, reporting the running count."""
    done = 0
    for size in sizes:
        done += size
        if solved_so_far is not None:
            solved_so_far(done)


def _repair_groups(children, held, size, rng, *, by_midpoint: bool, workers: int = 1) -> list:
    """The groups of one repair pass, cut along a randomly rotated cut: of the children's positions, or
    ``by_midpoint``, of the midpoints between each child and the slot it holds (``children + held``).

    By midpoint, children near each other whose slots also lie near each other are regrouped together,
    so that chains of exchanges along the direction the children must travel fall in one group: on the
    10x demo's two large links (297,535 and 495,769 children, small blocks) a pass lowers the total two
    to three times as much as a pass by position, for the same time. Links of up to
    :data:`LARGE` children keep the groups by position, and so their releases are unchanged: there the
    gain is smaller and mixed (on the benchmark's 8,000-child instances the gap to the exact optimum
    falls from 0.86 % to 0.67 %, mean of 3 seeds; on one 3,000-child test instance it rises from 1.01 %
    to 1.36 %), and the demo's metrics moved both ways within their noise.
    """
    points = children + held if by_midpoint else children
    return _balanced_blocks(points, max_size=size, rotation=_random_rotation(children.shape[1], rng), workers=workers)


def _random_rotation(d: int, rng) -> np.ndarray:
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return rotation


def _balanced_blocks(points, others=None, max_size: int = 1, rotation=None, workers: int = 1) -> list:
    """Cut ``points`` into blocks of at most ``max_size`` by recursive median bisection.

    Each block is cut at the median of its points along its axis of largest variance (after
    ``rotation``). ``others`` (as many rows as ``points``) are cut along the same axes into halves
    of the same sizes, the lower values going to the lower half, so every block holds as many
    others as points. Returns one array of point positions per block, or (points, others) pairs,
    the lower half's blocks before the upper half's. With ``workers`` above 1, the first cuts are made
    until there is a part per worker, and the parts are cut on as many threads (numpy's partitions and
    reductions release the interpreter): the same blocks, in the same order.

    The cuts work in place on one copy of the points (:class:`_Parts`): a part is a range of rows, so its
    points are read as a contiguous slice instead of being gathered from the whole array at every level.
    """
    if rotation is not None:
        points = points @ rotation
        others = None if others is None else others @ rotation
    parts = _Parts(points, others)
    pending = [(0, len(points))]
    if workers > 1 and len(points) > PARALLEL_CUT:
        while len(pending) < workers and any(hi - lo > max_size for lo, hi in pending):
            pending = [half for part in pending for half in parts.halves(part, max_size)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            cut = list(pool.map(lambda part: parts.cut(part, max_size), pending))
    else:
        cut = [parts.cut(part, max_size) for part in pending]
    return [parts.block(part) for blocks in cut for part in blocks]


PARALLEL_CUT = 100_000
"""Points from which the cuts of :func:`_balanced_blocks` are shared between threads."""


class _Parts:
    """The recursive bisection of :func:`_balanced_blocks`, in place.

    ``points`` holds a copy of the points, ``mine`` their positions, and ``theirs`` the positions of the others,
    each reordered as the parts are cut so that a part is a range ``(lo, hi)`` of rows of each: its points, in
    the order of their positions, are the slice ``points[lo:hi]`` (the same values, in the same order and the
    same contiguous layout, as the points gathered by those positions: hence the same variances and medians,
    bit for bit). Parts cut on different threads are disjoint ranges. The others are read one axis at a time,
    from a copy of their columns.
    """

    def __init__(self, points, others):
        self.points = np.array(points, order="C")  # a copy: reordered in place
        self.columns = None if others is None else np.ascontiguousarray(others.T)
        self.mine = np.arange(len(points))
        self.theirs = None if others is None else np.arange(len(points))

    def halves(self, part, max_size: int, scratch=None) -> list:
        """The lower and upper halves of ``part``, or ``[part]`` when it is a block already. ``scratch`` (at
        least as many rows as the part, the points' columns) holds the temporary rows."""
        lo, hi = part
        if hi - lo <= max_size:
            return [part]
        inside = self.points[lo:hi]
        scratch = np.empty_like(inside) if scratch is None else scratch[:hi - lo]
        axis = int(np.argmax(_variances(inside, scratch)))
        half = (hi - lo) // 2
        cut = np.argpartition(inside[:, axis], half)
        self.mine[lo:hi] = self.mine[lo:hi][cut]
        if half > max_size or hi - lo - half > max_size:  # a half cut again reads its points
            inside[:] = np.take(inside, cut, axis=0, out=scratch, mode="clip")  # cut is a permutation: no clipping
        if self.columns is not None:
            theirs = self.theirs[lo:hi]
            theirs[:] = theirs[np.argpartition(self.columns[axis][theirs], half)]
        return [(lo, lo + half), (lo + half, hi)]

    def cut(self, part, max_size: int) -> list:
        """The blocks of ``part``, depth first, the lower half's before the upper half's."""
        scratch = np.empty_like(self.points[part[0]:part[1]])
        pending = [part]
        blocks = []
        while pending:  # one iteration per block made or cut: a few thousand at most
            halves = self.halves(pending.pop(), max_size, scratch)
            if len(halves) == 1:
                blocks.append(halves[0])
            else:
                pending += halves[::-1]
        return blocks

    def block(self, part):
        """The positions of the points of a block, or (points, others) positions."""
        lo, hi = part
        return self.mine[lo:hi] if self.theirs is None else (self.mine[lo:hi], self.theirs[lo:hi])


def _variances(points: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """``points.var(axis=0)`` of a C-contiguous float64 matrix, bit for bit, with ``scratch`` (its shape) for the
    deviations.

    numpy's variance sums each column over the rows in order (the rows are the outer loop of its reduction); so
    does ``einsum('ij->j')``, which runs that loop three times faster. The steps and the divisions are those of
    ``numpy.var``, so the axis of largest variance, ties included, is the same
    (``tests/multitable/test_blocked_solver.py`` checks both equalities).
    """
    n = len(points)
    mean = np.einsum("ij->j", points) / n
    deviations = np.subtract(points, mean, out=scratch)
    np.square(deviations, out=deviations)
    return np.einsum("ij->j", deviations) / n


def blocked_settings(n_children: int) -> tuple[int, int]:
    """The block size and repair passes :func:`match_linear_sum` uses for a link of ``n_children``
    (blocks of 500 and 6 passes; 150 and 5 above 200,000 children).

    Examples
    --------
    >>> blocked_settings(1_000_000)
    (150, 5)
    """
    large = n_children > LARGE
    return BLOCK_SIZE[large], REPAIR_PASSES[large]


def border_band(child_coords, labels, width: int, *, random_state=None) -> np.ndarray:
    """The children near a border between blocks: those of the groups of at most ``width`` children
    (cut along a randomly rotated cut) that hold children of more than one block (``labels``).

    Returns their positions, in increasing order. The Dask engine repairs only this band: a child far
    from every border was solved (and repaired) with its whole neighbourhood in its block.

    Examples
    --------
    >>> border_band([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1], 2, random_state=0).tolist()
    []
    >>> border_band([[0.0], [1.0], [2.0], [3.0]], [0, 1, 1, 1], 2, random_state=0).tolist()
    [0, 1]
    """
    children = as_matrix(child_coords, "child_coords")
    labels = as_int_vector(labels, "labels")
    if labels.shape != (len(children),):
        raise ParameterError(f"labels must give one block per child ({len(children)}), got shape {labels.shape}")
    width = as_count(width, "width", minimum=1)
    if len(children) == 0:
        return np.zeros(0, dtype=np.int64)
    groups = _balanced_blocks(children, max_size=width, rotation=_random_rotation(children.shape[1], generator(random_state)))
    mixed = [members for members in groups if np.ptp(labels[members]) > 0]
    return np.sort(np.concatenate(mixed)) if mixed else np.zeros(0, dtype=np.int64)


def repair_borders(child_coords, slot_coords, slot, labels, *, width: int, passes: int, block_size: int | None = None,
                   random_state=None, n_jobs=None) -> np.ndarray:
    """:func:`repair_assignment` of the children near a border between blocks only (:func:`border_band`
    with ``width``): they are re-solved among the slots they hold, the others keep theirs, and the total
    distance never rises. Returns the new slot of each child.

    Examples
    --------
    >>> repair_borders([[0.0], [1.0], [5.0]], [[5.0], [1.0], [0.0]], [2, 0, 1], [0, 0, 1], width=3, passes=1,
    ...                random_state=0).tolist()
    [2, 1, 0]
    """
    children, slots = link_coordinates(child_coords, slot_coords)
    slot = slot_permutation(slot, len(children), len(slots))
    rng = generator(random_state)
    band = border_band(children, labels, width, random_state=rng)
    if len(band) > 1:
        held = slot[band]
        slot[band] = held[repair_assignment(children[band], slots[held], np.arange(len(band)), passes=passes,
                                            block_size=block_size, random_state=rng, n_jobs=n_jobs)]
    return slot


def repair_assignment(child_coords, slot_coords, slot, *, passes: int, block_size: int | None = None,
                      random_state=None, n_jobs=None) -> np.ndarray:
    """Improve an assignment of children to slots by exact re-solves along rotated cuts.

    The repair passes of :func:`match_linear_sum`, from a given assignment: each pass regroups the
    children along a randomly rotated cut (by the midpoints between them and their slots above
    200,000 children; groups of ``block_size``, default 500), and re-solves each
    group exactly with the slots its members hold, which never raises the total distance. The Dask
    engine repairs the borders between its blocks this way.

    Parameters
    ----------
    child_coords, slot_coords : array-like, shape (n, d)
        The children, and the slots (a parent repeated once per child it receives).
    slot : array-like of int, shape (n,)
        The slot of each child (a permutation of 0..n-1).

    Returns
    -------
    numpy.ndarray of int64
        The new slot of each child.

    Examples
    --------
    >>> repair_assignment([[0.0], [5.0]], [[5.0], [0.0]], [0, 1], passes=1, random_state=0).tolist()
    [1, 0]
    """
    children, slots = link_coordinates(child_coords, slot_coords)
    slot = slot_permutation(slot, len(children), len(slots))
    rng = generator(random_state)
    size = optional_count(block_size, "block_size", minimum=2) or BLOCK_SIZE[len(children) > LARGE]
    workers = worker_count(n_jobs)
    for _ in range(as_count(passes, "passes")):
        groups = _repair_groups(children, slots[slot], size, rng, by_midpoint=len(children) > LARGE, workers=workers)
        _solve_groups(children, slots, groups, [slot[members] for members in groups], slot, workers)
    return slot
