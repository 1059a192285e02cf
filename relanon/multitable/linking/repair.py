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
(on the demo's blocks of 465 children among about 130 parents, 21 ms against 5.7 ms)."""
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
        groups = _repair_groups(children, slot_points[slot], block_size, rng, by_midpoint=by_midpoint, workers=workers)
        done += _solve_groups(children, slot_points, groups, [slot[members] for members in groups], slot, workers,
                              lambda n, offset=done: report(offset + n, total), owners)
    return slot


def _solve_groups(children, slot_points, groups, slot_groups, slot, workers, solved_so_far=None, owners=None) -> int:
    """Solve each group of children with its slots exactly (:func:`solve_exact`, the slots labelled by ``owners``),
    and write their slots in ``slot``.

    ``solved_so_far(n)`` is called as the groups are solved, in order; returns the number of groups.
    """

    def solve(pair):
        members, slots = pair
        return solve_exact(children[members], slot_points[slots], None if owners is None else owners[slots])

    pairs = list(zip(groups, slot_groups, strict=True))
    if workers > 1 and len(pairs) > 1:
        # the assignment solver releases the GIL: threads share the arrays without copies
        with ThreadPoolExecutor(max_workers=workers) as pool:
            solved = _counted(pool.map(solve, pairs), solved_so_far)
    else:
        solved = _counted(map(solve, pairs), solved_so_far)
    for (members, slots), local in zip(pairs, solved, strict=True):
        slot[members] = slots[local]
    return len(pairs)


def _counted(results, solved_so_far) -> list:
    """The results of an iterator of solves, reporting how many are done after each."""
    out = []
    for local in results:
        out.append(local)
        if solved_so_far is not None:
            solved_so_far(len(out))
    return out


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
    """
    if rotation is not None:
        points = points @ rotation
        others = None if others is None else others @ rotation
    everything = np.arange(len(points))
    parts = [(everything, None if others is None else everything)]
    if workers > 1 and len(points) > PARALLEL_CUT:
        while len(parts) < workers and any(len(mine) > max_size for mine, _ in parts):
            parts = [half for part in parts for half in _halves(points, others, part, max_size)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            cut = list(pool.map(lambda part: _cut(points, others, part, max_size), parts))
    else:
        cut = [_cut(points, others, part, max_size) for part in parts]
    return [block for blocks in cut for block in blocks]


PARALLEL_CUT = 100_000
"""Points from which the cuts of :func:`_balanced_blocks` are shared between threads."""


def _halves(points, others, part, max_size: int) -> list:
    """The lower and upper halves of ``part`` (a ``(points, others)`` pair of positions), or ``[part]`` when
    it is a block already."""
    mine, theirs = part
    if len(mine) <= max_size:
        return [part]
    inside = points[mine]
    axis = int(np.argmax(inside.var(axis=0)))
    half = len(mine) // 2
    cut = np.argpartition(inside[:, axis], half)
    if others is None:
        return [(mine[cut[:half]], None), (mine[cut[half:]], None)]
    cut_theirs = np.argpartition(others[theirs, axis], half)
    return [(mine[cut[:half]], theirs[cut_theirs[:half]]), (mine[cut[half:]], theirs[cut_theirs[half:]])]


def _cut(points, others, part, max_size: int) -> list:
    """The blocks of ``part``, depth first, the lower half's before the upper half's."""
    pending = [part]
    blocks = []
    while pending:  # one iteration per block made or cut: a few thousand at most
        halves = _halves(points, others, pending.pop(), max_size)
        if len(halves) == 1:
            mine, theirs = halves[0]
            blocks.append(mine if others is None else (mine, theirs))
        else:
            pending += halves[::-1]
    return blocks



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
