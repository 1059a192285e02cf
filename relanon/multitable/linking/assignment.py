"""The assignment step of a link: each released child gets a released parent (docs/method.md, "Links").

The pipeline places the avatar parents and the avatar children's broadcast parent part in one
factor space; this module only sees those coordinates (Euclidean distance) and returns, for each
child row, the position of its new parent row.

- :func:`match_minimum_distance`: each child goes to its nearest parent (most private; the number
  of children per parent drifts).
- :func:`match_linear_sum`: each parent receives exactly its allocated number of children
  (:func:`relanon.multitable.linking.counts.allocate_counts`) and the total distance is minimized.
- :func:`match_original_order`: each child keeps the avatar of its original parent (exact, least
  private: it warns).

How ``linear_sum`` is solved. It is a transport problem: each child is one unit, parent ``p`` takes
``counts[p]`` of them, an arc costs the distance.

- up to ``exact_limit`` children (2,000), exactly (:func:`relanon.multitable.linking.repair.solve_exact`: the
  network simplex on the children and their parents, each parent's capacity its count; up to 200 children,
  ``scipy.optimize.linear_sum_assignment`` on the dense distance matrix of children and *slots*, a parent repeated
  once per child it receives);
- beyond, children and slots are cut together into balanced spatial blocks (recursive median bisection, as
  many slots as children in every block), each block is solved exactly, and then, ``repair_passes`` times,
  the children are regrouped along randomly rotated cuts and each group is re-solved exactly with the slots
  its members hold (:mod:`relanon.multitable.linking.repair`); blocks are cut and solved on every core;
- up to :data:`FLOW_LIMIT` children, that assignment is then improved by the minimum-cost flow
  (:func:`relanon.multitable.linking.transport.solve_transport`) on the candidate graph
  (:func:`relanon.multitable.linking.candidates.candidate_arcs`: each child's nearest parents, each parent's
  nearest children, and the blocked assignment's arcs): exact on that graph, so never above the blocked
  total. Measured on 3,000-child instances (seeds 0-2, ``tests/multitable/test_linking.py``): 0.55, 1.01 and 0.27 %
  above the exact optimum after the blocks and repairs, 0.05, 0.59 and 0.01 % after the flow. Above
  :data:`FLOW_LIMIT` the flow costs more than the blocks: on a million children, a start of blocks solved once,
  the candidate arcs and one flow take 104 s of CPU, 2.6 times the whole blocked link;
- ``pricing_rounds`` rounds of exact pricing then follow the flow (:mod:`relanon.multitable.linking.pricing`;
  none by default): each adds the pairs outside the graph that would lower the total under the flow's parent
  potentials and re-solves, and a round that finds none proves the assignment optimal among every pair. On the
  clustered instances of ``benchmarks/transport_solvers.py`` (10,000 children, seeds 0-2) the flow ends 0.10-0.58 %
  above the exact optimum, one round 0.002-0.17 % for 1.5 to 1.8 times the CPU, three rounds 0-0.006 % (2.5 to 2.9
  times). The demo's two links are harder: the flow ends 2.5 and 7.8 % above their optimum,
  whose children travel far beyond their nearest parents, and a round costs about as much as the whole link
  (``--demo 1``: 29,804 visits on their patients, 1.34 % above after one round for 1.8 times the CPU).
"""

from __future__ import annotations

import warnings

import numpy as np

from relanon.common.errors import ParameterError, format_examples
from relanon.engine.neighbours import cross_neighbours
from relanon.multitable.linking.candidates import candidate_arcs
from relanon.multitable.linking.inputs import (
    as_count,
    as_int_vector,
    generator,
    link_coordinates,
    optional_count,
    optional_flag,
    validated_counts,
    worker_count,
)
from relanon.multitable.linking.pricing import priced_flow
from relanon.multitable.linking.repair import BLOCK_SIZE, LARGE, REPAIR_PASSES, no_progress, solve_blocked, solve_exact
from relanon.multitable.linking.transport import solve_transport

EXACT_LIMIT = 2_000
FLOW_LIMIT = 200_000
"""Largest link whose blocked assignment is improved by the minimum-cost flow on its candidate graph."""

ARCS_SHARE, FLOW_SHARE = 0.15, 0.3
"""The time of the candidate arcs and of the minimum-cost flow, as shares of the time of the blocks and repairs,
so that the progress counts them in groups solved and its time left holds. Measured on one thread
(``benchmarks/link_phases.py``) on 9,000, 30,000 and 60,000 children in 5 axes: arcs 0.20, 0.12 and 0.13, flow
0.33, 0.27 and 0.29 (blocks solved on more cores take less time: the shares grow with them)."""


def uses_flow(n_children: int) -> bool:
    """Whether :func:`match_linear_sum` improves the blocked assignment of a link of ``n_children`` by the
    minimum-cost flow (up to :data:`FLOW_LIMIT` children). The Dask engine decides it on the whole link and
    solves its blocks accordingly.

    Examples
    --------
    >>> uses_flow(100_000), uses_flow(1_000_000)
    (True, False)
    """
    return n_children <= FLOW_LIMIT


class SensitiveMatchWarning(UserWarning):
    """A matching keeps the original parent-child links (``original_order``): the least private."""


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
    children, parents = link_coordinates(child_coords, parent_coords)
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
    flow: bool | None = None,
    pricing_rounds: int = 0,
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
        Exact re-solves along other cuts after the blocks (default 6; 5 above 200,000 children; each
        never raises the total).
    flow : bool or None
        Whether the blocked assignment is then improved by the minimum-cost flow on its candidate graph
        (default: up to :data:`FLOW_LIMIT` children, :func:`uses_flow`). The Dask engine gives each of its
        blocks the decision of the whole link, as it gives them its ``block_size`` and ``repair_passes``.
    pricing_rounds : int
        Rounds of exact pricing after the minimum-cost flow (default 0): each adds the arcs that would lower the
        total under the flow's parent potentials and re-solves, and the rounds stop early once none is left (the
        assignment is then proven optimal among every child x parent pair). A positive number runs the flow
        whatever the number of children (``flow=False`` then refuses it). See
        :mod:`relanon.multitable.linking.pricing`.
    progress : callable, optional
        Called as ``progress(done, total)`` as groups of children are solved (the blocks, then each
        repair pass's groups), then as the candidate arcs, the minimum-cost flow and each pricing round are
        done (counted in groups, by :data:`ARCS_SHARE` and :data:`FLOW_SHARE` of the groups, a round as a
        flow); the last call has ``done == total``. A :class:`relanon.common.progress.Progress` step draws it
        as a bar.

    Returns
    -------
    numpy.ndarray of int64, shape (n_children,)
        Position of the parent of each child.

    Examples
    --------
    >>> match_linear_sum([[0.0], [0.2], [5.0]], [[0.0], [5.0]], [1, 2]).tolist()
    [0, 1, 1]
    """
    children, parents = link_coordinates(child_coords, parent_coords)
    counts = validated_counts(counts, len(parents), len(children))
    exact_limit = as_count(exact_limit, "exact_limit")
    block_size = optional_count(block_size, "block_size", minimum=2)
    repair_passes = optional_count(repair_passes, "repair_passes")
    flow = optional_flag(flow, "flow")
    pricing_rounds = as_count(pricing_rounds, "pricing_rounds")
    if pricing_rounds and flow is False:
        raise ParameterError(f"pricing_rounds={pricing_rounds} prices the minimum-cost flow, but flow=False leaves it "
                             "out: pass flow=None or True, or pricing_rounds=0")
    workers = worker_count(n_jobs)
    rng = generator(random_state)

    slot_parent = np.repeat(np.arange(len(parents)), counts)
    n = len(children)
    if n == 0 or np.count_nonzero(counts) == 1:
        return slot_parent  # a single parent takes everyone: nothing to optimize
    slot_points = parents[slot_parent]
    report = progress or no_progress
    if n <= exact_limit:
        report(0, 1)
        slot = solve_exact(children, slot_points, slot_parent)
        report(1, 1)
    else:
        size = block_size or BLOCK_SIZE[n > LARGE]
        passes = REPAIR_PASSES[n > LARGE] if repair_passes is None else repair_passes
        run_flow = (uses_flow(n) or pricing_rounds > 0) if flow is None else flow
        if not run_flow:
            return slot_parent[solve_blocked(children, slot_points, size, passes, workers, rng, report, slot_parent)]
        stages = []  # the groups of the blocks and repairs, learnt when they are cut

        def blocked(done, groups):
            stages[:] = [groups + int(np.ceil((ARCS_SHARE + FLOW_SHARE * i) * groups)) for i in range(pricing_rounds + 2)]
            report(done, stages[-1])

        start = slot_parent[solve_blocked(children, slot_points, size, passes, workers, rng, blocked, slot_parent)]
        arcs = candidate_arcs(children, parents, counts, start)
        report(stages[0], stages[-1])
        if pricing_rounds:
            tails, heads, _ = arcs
            parent, _ = priced_flow(children, parents, counts, tails, heads, pricing_rounds,
                                    lambda done: report(stages[done + 1], stages[-1]))
        else:
            parent = solve_transport(n, counts, *arcs)
        report(stages[-1], stages[-1])
        return parent
    return slot_parent[slot]



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
    children, parents = link_coordinates(child_coords, parent_coords)
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
