"""Re-link anonymized children to anonymized parents (docs/method.md, "Links").

The pipeline places the avatar parents and the avatar children's broadcast parent part in one
factor space; this module only sees those coordinates (Euclidean distance) and returns, for each
child row, the position of its new parent row.

- :func:`match_minimum_distance`: each child goes to its nearest parent (most private; the number
  of children per parent drifts).
- :func:`match_linear_sum`: each parent receives exactly its allocated number of children
  (:func:`allocate_counts`) and the total distance is minimized.
- :func:`match_original_order`: each child keeps the avatar of its original parent (exact, least
  private: it warns).

How ``linear_sum`` scales. Every parent is repeated once per child it must receive (its *slots*)
and children are assigned one-to-one to slots:

- up to ``exact_limit`` children (2,000), exactly: ``scipy.optimize.linear_sum_assignment`` on
  the dense distance matrix (cubic time, quadratic memory: about 0.5 s at 2,000 children);
- beyond, children and slots are cut together into balanced spatial blocks (recursive median
  bisection, as many slots as children in every block), each block is solved exactly, and then,
  ``repair_passes`` times, the children are regrouped along randomly rotated cuts (of their
  positions, or above 200,000 children of the midpoints between each child and the slot it holds),
  and each group is re-solved exactly with the slots its members hold, which never raises the total.
  Blocks are solved on every core (the solver releases the GIL).

Why not the sparse matching (``scipy.sparse.csgraph.min_weight_full_bipartite_matching`` on a
nearest-slots graph)? It is fast on generic distances, but slot distances are full of exact and
near ties (a parent with 20 children is 20 identical slots) and there its running time is
erratic: measured here, 0.9 s on a 10,000-child instance and more than 300 s on the same
instance with distances perturbed by 1e-6. Dense exact blocks cost a predictable time, whatever
the data. ``benchmarks/linear_sum_speed.py`` measures time, memory and the gap to the exact
optimum.
"""

from __future__ import annotations

import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from relanon.common.errors import ParameterError, format_examples
from relanon.engine.neighbours import cross_neighbours
from relanon.multitable.link_inputs import (
    as_count,
    as_float_vector,
    as_int_vector,
    as_matrix,
    generator,
    optional_count,
    validated_counts,
    worker_count,
)

EXACT_LIMIT = 2_000
# Children per block: an exact solve of 1,000 takes 0.1 to 0.3 s, of 500 about 0.03 s, of 250
# about 0.006 s (cubic); smaller blocks need more repair passes to reach the same total.
_BLOCK_SIZE = {False: 500, True: 150}
_REPAIR_PASSES = {False: 6, True: 5}
# Above this many children, smaller blocks and fewer passes keep the time near-linear. Blocks are
# halves of halves: at most 150 gives blocks of 145 at the 10x demo's 297,535-child link and of 121
# at its 495,769-child link. Measured there with the midpoint repair groups, blocks of 121 and 5
# passes take about 45 % of the time of blocks of 242 and 4 passes and end at a lower total; the
# smaller link keeps blocks of 145 and reaches a lower total with one more pass.
_LARGE = 200_000


class SensitiveMatchWarning(UserWarning):
    """A matching keeps the original parent-child links (``original_order``): the least private."""


# --------------------------------------------------------------------------- children per parent


COUNT_TAIL = 20  # the bounds of the numbers of children move at most 1/COUNT_TAIL of the parents at each end


def count_bounds(original_counts, min_count: int) -> tuple[float, float]:
    """The range a released number of children per parent is kept in: from the ``min_count``-th
    smallest to the ``min_count``-th largest original count.

    A number of children only a few parents have (the patient with far more visits than any other)
    would single that parent out if it were released as it is. The bound moves at most
    1/:data:`COUNT_TAIL` of the parents at each end (with fewer than ``COUNT_TAIL * min_count``
    parents it is lowered; below ``2 * COUNT_TAIL`` parents nothing moves).

    Examples
    --------
    >>> count_bounds([1] * 30 + [2] * 30 + [3] * 30 + [4] * 9 + [58], 5)
    (1.0, 4.0)
    >>> count_bounds([1, 9], 5)
    (1.0, 9.0)
    """
    counts = np.sort(np.maximum(np.nan_to_num(as_float_vector(original_counts, "original_counts")), 0.0))
    if counts.size == 0:
        return 0.0, 0.0
    bound = count_rank(len(counts), as_count(min_count, "min_count", minimum=1))
    if bound <= 1:
        return float(counts[0]), float(counts[-1])
    return float(counts[bound - 1]), float(counts[len(counts) - bound])


def count_rank(n_parents: int, min_count) -> int:
    """The rank of the order statistics :func:`count_bounds` keeps the counts between: ``min_count``,
    lowered to 1/:data:`COUNT_TAIL` of the parents (1 or less: nothing is bounded).

    Examples
    --------
    >>> count_rank(10_000, 10), count_rank(100, 10), count_rank(20, 10)
    (10, 5, 1)
    """
    return min(min_count or 1, n_parents // COUNT_TAIL)


def allocate_counts(expected, total: int, *, candidates=None, held=None, random_state=None) -> np.ndarray:
    """Whole numbers of children per parent, close to ``expected`` and summing to ``total``.

    Negative and missing expectations count as 0. With ``candidates`` (for each parent, counts
    that are as plausible for it as its expectation: those of its nearest original parents), the
    expectations are first brought towards ``total`` by replacing some of them with one of their
    parent's candidates (:func:`draw_towards_total`), so that a sum that is off by sampling noise
    (20 drawn counts summing to 122 children of 200) is corrected with plausible counts instead of
    stretching every count by the same factor, which distorts the distribution's shape. Then the
    expectations are scaled to sum to ``total`` and rounded by largest remainders (Hamilton's
    method): each parent gets the whole part of its share, and the children left over go one each
    to the parents with the largest fractional parts, ties broken at random. Every count is
    therefore within 1 of its scaled share, and a parent expected to have no child gets none. When
    every expectation is 0, the children are spread uniformly.

    Parameters
    ----------
    expected : array-like of float, shape (n_parents,)
        Expected (for example avatarized) number of children of each parent.
    total : int
        Number of children to allocate (the number of child rows).
    candidates : array-like of float, shape (n_parents, n_candidates), optional
        Other plausible counts of each parent, used before any scaling.
    held : array-like of float, shape (n_original_parents,), optional
        The original's numbers of children: a candidate is taken only while fewer parents hold it than
        in the original (:func:`draw_towards_totals`).
    random_state : int, numpy.random.Generator or None
        Breaks ties between equal fractional parts and orders the replacements.

    Returns
    -------
    numpy.ndarray of int64, shape (n_parents,)
        Non-negative counts summing exactly to ``total``.

    Examples
    --------
    >>> allocate_counts([2.6, 0.3, -1.0, 1.1], 4).tolist()
    [3, 0, 0, 1]
    >>> allocate_counts([0.0, 0.0], 3, random_state=0).sum()
    np.int64(3)
    """
    rng = generator(random_state)
    values = as_float_vector(expected, "expected")
    total = as_count(total, "total")
    if values.size == 0:
        if total:
            raise ParameterError(f"cannot allocate {total} children to no parent: give at least one parent")
        return np.zeros(0, dtype=np.int64)
    infinite = np.flatnonzero(np.isposinf(values))
    if infinite.size:
        raise ParameterError(
            f"expected counts must be finite, got +inf at positions {format_examples(infinite)}; "
            "replace them by a finite expectation"
        )
    values = np.where(np.isnan(values) | (values < 0), 0.0, values)
    if candidates is not None:
        values = draw_towards_total(values, candidates, total, held=held, random_state=rng)
    weight = values.sum()
    if weight <= 0:
        values, weight = np.ones_like(values), float(values.size)
    share = values / weight * total
    counts = np.floor(share).astype(np.int64)
    left = total - int(counts.sum())
    if left > 0:
        # fractional parts equal but for rounding noise are ties, broken at random
        remainder = np.round(share - counts, 9)
        tie_break = rng.random(values.size)
        order = np.lexsort((tie_break, -remainder))
        counts[order[:left]] += 1
    return counts


def draw_towards_total(expected, candidates, total: int, *, held=None, random_state=None,
                       passes: int = 3) -> np.ndarray:
    """Replace some expected counts by other plausible counts of their parent until they sum to ``total``.

    Parents are visited in a random order (``passes`` times at most); a parent's count is replaced
    by the one of its candidates that brings the sum closest to ``total`` without going past it,
    when one does. Every count stays one of its parent's plausible counts, so the distribution keeps
    its shape; what the candidates cannot close is left to the scaling of :func:`allocate_counts`.
    One link's case of :func:`draw_towards_totals` (``held``: the original's numbers of children, see there).

    Examples
    --------
    >>> draw_towards_total([1.0, 1.0, 1.0], [[1, 4], [1, 2], [1, 1]], 7, random_state=0).tolist()
    [4.0, 2.0, 1.0]
    """
    values = as_float_vector(expected, "expected")
    options = np.asarray(candidates, dtype=np.float64)
    if options.ndim != 2 or len(options) != len(values):
        raise ParameterError(f"candidates must have one row per parent ({len(values)}), got shape {options.shape}")
    held = None if held is None else as_float_vector(held, "held")[:, None]
    return draw_towards_totals(values[:, None], options[:, :, None], [total], held=held, random_state=random_state,
                               passes=passes)[:, 0]


def draw_towards_totals(expected, candidates, totals, *, held=None, random_state=None, passes: int = 3) -> np.ndarray:
    """Replace some parents' numbers of children, on all their links at once, by those of another
    plausible parent, until each link's numbers sum to its total.

    The numbers of children of one parent on its several links go together (an airport with many
    flights has many weather records): a parent's row of counts is replaced by one of its candidate
    rows (those of its nearest original parents) as a whole, never one link at a time. Parents are
    visited in a random order (``passes`` times at most); a candidate row is usable when it goes past
    no link's total and changes some count, and the one bringing the sums closest to the totals
    (relative to each total) is taken. What the candidates cannot close is left to each link's
    :func:`allocate_counts`.

    With ``held`` (the original parents' rows of counts, for parents whose counts are released as they
    are: reference lists), a row is taken only while the release holds it fewer times than the original:
    two airports near the same hub do not both take its flights, which would leave the other hub's flights
    to be spread by scaling.

    Parameters
    ----------
    expected : array-like of float, shape (n_parents, n_links)
        The drawn numbers of children of each parent on each link.
    candidates : array-like of float, shape (n_parents, n_candidates, n_links)
        Other plausible rows of counts of each parent; missing or negative values are never taken.
    totals : array-like of int, shape (n_links,)
        The number of children of each link.
    held : array-like of float, shape (n_original_parents, n_links), optional
        The original's rows of counts: a candidate row is taken only while fewer released parents
        hold it than original ones.
    random_state : int, numpy.random.Generator or None
        Orders the visits.
    passes : int
        Visits of every parent, at most.

    Returns
    -------
    numpy.ndarray of float, shape (n_parents, n_links)

    Examples
    --------
    >>> draw_towards_totals([[1, 1], [1, 1], [9, 5]], [[[1, 1], [9, 5]], [[1, 1], [9, 5]], [[9, 5], [1, 1]]],
    ...                     [19, 11], random_state=0).tolist()
    [[9.0, 5.0], [1.0, 1.0], [9.0, 5.0]]
    """
    rng = generator(random_state)
    values = np.array(expected, dtype=np.float64)
    options = np.asarray(candidates, dtype=np.float64)
    if values.ndim != 2 or options.ndim != 3 or options.shape[0] != len(values) or options.shape[2] != values.shape[1]:
        raise ParameterError(f"expected must be (parents, links) and candidates (parents, candidates, links): got "
                             f"shapes {values.shape} and {options.shape}")
    options = np.where(np.isfinite(options) & (options >= 0), options, np.nan)
    totals = np.asarray(totals, dtype=np.float64).reshape(-1)
    gap = totals - values.sum(axis=0)
    scale = np.maximum(totals, 1.0)
    room = None
    if held is not None:  # how many more parents may hold each row of counts
        room = Counter(map(tuple, np.asarray(held, dtype=np.float64).reshape(-1, values.shape[1]).tolist()))
        room.subtract(Counter(map(tuple, values.tolist())))
    for _ in range(passes):
        for parent in rng.permutation(len(values)):
            if np.all(np.abs(gap) < 0.5):
                return values
            change = options[parent] - values[parent]
            fits = (change == 0) | ((np.sign(change) == np.sign(gap)) & (np.abs(change) <= np.abs(gap) + 0.5))
            useful = fits.all(axis=1) & (change != 0).any(axis=1)
            if room is not None:
                useful &= np.array([room[row] > 0 for row in map(tuple, options[parent].tolist())])
            if not useful.any():
                continue
            gain = (np.abs(np.nan_to_num(change)) / scale).sum(axis=1)
            best = np.flatnonzero(useful)[np.argmax(gain[useful])]
            if room is not None:
                room[tuple(options[parent, best].tolist())] -= 1
                room[tuple(values[parent].tolist())] += 1
            values[parent] += change[best]
            gap -= change[best]
    return values


# --------------------------------------------------------------------------- the three methods


def match_minimum_distance(child_coords, parent_coords) -> np.ndarray:
    """Each child's nearest parent.

    Parameters
    ----------
    child_coords : array-like, shape (n_children, d)
        The avatar children's broadcast parent part, in the parents' factor space.
    parent_coords : array-like, shape (n_parents, d)
        The avatar parents in the same space.

    Returns
    -------
    numpy.ndarray of int64, shape (n_children,)
        Position of the nearest parent of each child.

    Examples
    --------
    >>> match_minimum_distance([[0.1], [2.9], [1.4]], [[0.0], [3.0]]).tolist()
    [0, 1, 0]
    """
    children, parents = _coordinates(child_coords, parent_coords)
    if len(children) == 0:
        return np.zeros(0, dtype=np.int64)
    return cross_neighbours(parents, children, k=1).indices[:, 0]


def match_linear_sum(
    child_coords,
    parent_coords,
    counts,
    *,
    random_state=None,
    n_jobs=None,
    exact_limit: int = EXACT_LIMIT,
    block_size: int | None = None,
    repair_passes: int | None = None,
    progress=None,
) -> np.ndarray:
    """Assign children to parents, parent ``p`` receiving exactly ``counts[p]`` of them, at
    minimum total distance.

    Parameters
    ----------
    child_coords : array-like, shape (n_children, d)
        The avatar children's broadcast parent part, in the parents' factor space.
    parent_coords : array-like, shape (n_parents, d)
        The avatar parents in the same space.
    counts : array-like of int, shape (n_parents,)
        Children each parent receives (see :func:`allocate_counts`); they sum to ``n_children``.
    random_state : int, numpy.random.Generator or None
        Seeds the rotations of the repair cuts; the same seed gives the same assignment.
    n_jobs : int or None
        Threads solving blocks: ``None`` or ``-1`` use every available core, ``1`` one.
    exact_limit : int
        Largest number of children solved exactly at once (default 2,000).
    block_size : int or None
        Largest number of children in a block (default 500; 150 above 200,000 children).
    repair_passes : int or None
        Exact re-solves along other cuts after the blocks (default 6; 5 above 200,000
        children; each never raises the total).
    progress : callable, optional
        Called as ``progress(done, total)`` as groups of children are solved (the blocks, then each
        repair pass's groups): a :class:`relanon.common.progress.Progress` step draws it as a bar.

    Returns
    -------
    numpy.ndarray of int64, shape (n_children,)
        Position of the parent of each child.

    Examples
    --------
    >>> match_linear_sum([[0.0], [0.2], [5.0]], [[0.0], [5.0]], [1, 2]).tolist()
    [0, 1, 1]
    """
    children, parents = _coordinates(child_coords, parent_coords)
    counts = validated_counts(counts, len(parents), len(children))
    exact_limit = as_count(exact_limit, "exact_limit")
    block_size = optional_count(block_size, "block_size", minimum=2)
    repair_passes = optional_count(repair_passes, "repair_passes")
    workers = worker_count(n_jobs)
    rng = generator(random_state)

    slot_parent = np.repeat(np.arange(len(parents)), counts)
    n = len(children)
    if n == 0 or np.count_nonzero(counts) == 1:
        return slot_parent  # a single parent takes everyone: nothing to optimize
    slot_points = parents[slot_parent]
    report = progress or _no_progress
    if n <= exact_limit:
        report(0, 1)
        slot = _solve_exact(children, slot_points)
        report(1, 1)
    else:
        size = block_size or _BLOCK_SIZE[n > _LARGE]
        passes = _REPAIR_PASSES[n > _LARGE] if repair_passes is None else repair_passes
        slot = _solve_blocked(children, slot_points, size, passes, workers, rng, report)
    return slot_parent[slot]


def _no_progress(done: int, total: int) -> None:
    pass


def match_original_order(child_original_parent, parent_avatar_of_original) -> np.ndarray:
    """Give each child the avatar of its original parent.

    The number of children per parent is kept exactly, but so is every original link: the least
    private method. It warns with :class:`SensitiveMatchWarning`, and the release must say that it
    was used.

    Parameters
    ----------
    child_original_parent : array-like of int, shape (n_children,)
        For each child row, the position of its original parent among the original parent rows,
        or -1 when it has none.
    parent_avatar_of_original : array-like of int, shape (n_original_parents,)
        For each original parent row, the position of its avatar in the avatar parent table.

    Returns
    -------
    numpy.ndarray of int64, shape (n_children,)
        The avatar parent position of each child (-1 kept for children without a parent).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     match_original_order([1, 0, -1, 1], [2, 0]).tolist()
    [0, 2, -1, 0]
    """
    positions = as_int_vector(child_original_parent, "child_original_parent")
    avatars = as_int_vector(parent_avatar_of_original, "parent_avatar_of_original")
    outside = np.flatnonzero((positions < -1) | (positions >= len(avatars)))
    if outside.size:
        raise ParameterError(
            f"child_original_parent must hold -1 or a position among the {len(avatars)} original "
            f"parents; rows {format_examples(outside)} hold {format_examples(positions[outside])}"
        )
    negative = np.flatnonzero(avatars < 0)
    if negative.size:
        raise ParameterError(
            "parent_avatar_of_original must give every original parent the position of its avatar; "
            f"positions {format_examples(negative)} hold {format_examples(avatars[negative])}"
        )
    warnings.warn(
        "original_order matching keeps every child with the avatar of its original parent: the "
        "children-per-parent counts are exact but the original links are released as they are. "
        "Record this in the release, or use linear_sum or minimum_distance matching.",
        SensitiveMatchWarning,
        stacklevel=2,
    )
    return np.where(positions >= 0, avatars[np.maximum(positions, 0)], -1)


def total_distance(child_coords, parent_coords, assignment) -> float:
    """Sum over children of the distance to their assigned parent (what ``linear_sum`` minimizes).

    Examples
    --------
    >>> total_distance([[0.0], [3.0]], [[1.0], [3.0]], [0, 1])
    1.0
    """
    children, parents = _coordinates(child_coords, parent_coords)
    assignment = as_int_vector(assignment, "assignment")
    if assignment.shape != (len(children),):
        raise ParameterError(
            f"assignment must give one parent per child ({len(children)}), got shape {assignment.shape}"
        )
    outside = np.flatnonzero((assignment < 0) | (assignment >= len(parents)))
    if outside.size:
        raise ParameterError(
            f"assignment must hold parent positions 0 to {len(parents) - 1}; children "
            f"{format_examples(outside)} hold {format_examples(assignment[outside])}"
        )
    return float(np.linalg.norm(children - parents[assignment], axis=1).sum())


# --------------------------------------------------------------------------- exact solves and blocks


def _solve_exact(children: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """The optimal slot of each child, from the dense distance matrix."""
    _, slot = linear_sum_assignment(cdist(children, slots))
    return slot


def _solve_blocked(children, slot_points, block_size, repair_passes, workers, rng, report=_no_progress) -> np.ndarray:
    """Balanced spatial blocks solved exactly one by one, then repaired along rotated cuts.

    Children and slots are cut together by recursive median bisection, so every block holds as
    many slots as children and the first assignment is feasible. Each repair regroups the children
    (:func:`_repair_groups`: along a randomly rotated cut, by the midpoints between them and their
    slots above :data:`_LARGE` children) and re-solves every group exactly with the slots its members
    hold: the current assignment is one of the candidates, so the total never rises, and children
    left on the wrong side of a first-pass border find their parent in a later group.
    ``report(done, total)`` is called as groups are solved (every pass cuts as many groups).
    """
    slot = np.empty(len(children), dtype=np.int64)
    blocks = _balanced_blocks(children, slot_points, max_size=block_size)
    total = len(blocks) * (1 + repair_passes)
    done = _solve_groups(children, slot_points, [m for m, _ in blocks], [s for _, s in blocks], slot, workers,
                         lambda n: report(n, total))
    by_midpoint = len(children) > _LARGE
    for _ in range(repair_passes):
        groups = _repair_groups(children, slot_points[slot], block_size, rng, by_midpoint=by_midpoint)
        done += _solve_groups(children, slot_points, groups, [slot[members] for members in groups], slot, workers,
                              lambda n, offset=done: report(offset + n, total))
    return slot


def _solve_groups(children, slot_points, groups, slot_groups, slot, workers, solved_so_far=None) -> int:
    """Solve each group of children with its slots exactly, and write their slots in ``slot``.

    ``solved_so_far(n)`` is called as the groups are solved, in order; returns the number of groups.
    """

    def solve(pair):
        members, slots = pair
        return _solve_exact(children[members], slot_points[slots])

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


def _repair_groups(children, held, size, rng, *, by_midpoint: bool) -> list:
    """The groups of one repair pass, cut along a randomly rotated cut: of the children's positions, or
    ``by_midpoint``, of the midpoints between each child and the slot it holds (``children + held``).

    By midpoint, children near each other whose slots also lie near each other are regrouped together,
    so that chains of exchanges along the direction the children must travel fall in one group: on the
    10x demo's two large links (297,535 and 495,769 children, small blocks) a pass lowers the total two
    to three times as much as a pass by position, for the same time. Links of up to
    :data:`_LARGE` children keep the groups by position, and so their releases are unchanged: there the
    gain is smaller and mixed (on the benchmark's 8,000-child instances the gap to the exact optimum
    falls from 0.86 % to 0.67 %, mean of 3 seeds; on one 3,000-child test instance it rises from 1.01 %
    to 1.36 %), and the demo's metrics moved both ways within their noise.
    """
    points = children + held if by_midpoint else children
    return _balanced_blocks(points, max_size=size, rotation=_random_rotation(children.shape[1], rng))


def _random_rotation(d: int, rng) -> np.ndarray:
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return rotation


def _balanced_blocks(points, others=None, max_size: int = 1, rotation=None) -> list:
    """Cut ``points`` into blocks of at most ``max_size`` by recursive median bisection.

    Each block is cut at the median of its points along its axis of largest variance (after
    ``rotation``). ``others`` (as many rows as ``points``) are cut along the same axes into halves
    of the same sizes, the lower values going to the lower half, so every block holds as many
    others as points. Returns one array of point positions per block, or (points, others) pairs.
    """
    if rotation is not None:
        points = points @ rotation
        others = None if others is None else others @ rotation
    everything = np.arange(len(points))
    pending = [(everything, None if others is None else everything)]
    blocks = []
    while pending:  # one iteration per block made or cut: a few thousand at most
        mine, theirs = pending.pop()
        if len(mine) <= max_size:
            blocks.append(mine if others is None else (mine, theirs))
            continue
        inside = points[mine]
        axis = int(np.argmax(inside.var(axis=0)))
        half = len(mine) // 2
        cut = np.argpartition(inside[:, axis], half)
        if others is None:
            pending += [(mine[cut[half:]], None), (mine[cut[:half]], None)]
        else:
            cut_theirs = np.argpartition(others[theirs, axis], half)
            pending += [
                (mine[cut[half:]], theirs[cut_theirs[half:]]),
                (mine[cut[:half]], theirs[cut_theirs[:half]]),
            ]
    return blocks


# --------------------------------------------------------------------------- validation


def _coordinates(child_coords, parent_coords):
    children = as_matrix(child_coords, "child_coords")
    parents = as_matrix(parent_coords, "parent_coords")
    if children.shape[1] != parents.shape[1]:
        raise ParameterError(
            f"child_coords and parent_coords must lie in the same space, got {children.shape[1]} and "
            f"{parents.shape[1]} coordinates; project both with the factor space fitted on the parent"
        )
    if len(children) and not len(parents):
        raise ParameterError(f"cannot link {len(children)} children to no parent: parent_coords is empty")
    return children, parents


def _permutation(slot, n_children: int, n_slots: int) -> np.ndarray:
    slot = as_int_vector(slot, "slot").copy()
    if slot.shape != (n_children,) or n_slots != n_children or not np.array_equal(np.sort(slot), np.arange(len(slot))):
        raise ParameterError("slot must give each child a distinct slot: a permutation of 0 .. number of children - 1")
    return slot


def blocked_settings(n_children: int) -> tuple[int, int]:
    """The block size and repair passes :func:`match_linear_sum` uses for a link of ``n_children``
    (blocks of 500 and 6 passes; 150 and 5 above 200,000 children).

    Examples
    --------
    >>> blocked_settings(1_000_000)
    (150, 5)
    """
    large = n_children > _LARGE
    return _BLOCK_SIZE[large], _REPAIR_PASSES[large]


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
    children, slots = _coordinates(child_coords, slot_coords)
    slot = _permutation(slot, len(children), len(slots))
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
    children, slots = _coordinates(child_coords, slot_coords)
    slot = _permutation(slot, len(children), len(slots))
    rng = generator(random_state)
    size = optional_count(block_size, "block_size", minimum=2) or _BLOCK_SIZE[len(children) > _LARGE]
    workers = worker_count(n_jobs)
    for _ in range(as_count(passes, "passes")):
        groups = _repair_groups(children, slots[slot], size, rng, by_midpoint=len(children) > _LARGE)
        _solve_groups(children, slots, groups, [slot[members] for members in groups], slot, workers)
    return slot
