"""The blocked linear_sum solver (relanon.multitable.linking.repair) forms the blocks and the assignment of a plain
recursive median bisection: each part's points gathered by position, ``numpy.var`` for its axis, ``argpartition``
for its halves, and every group solved with ``solve_exact`` in turn. The solver cuts in place and solves groups in
batches on threads; a change of any block or of any tie would change the releases, so these tests compare arrays
for equality, not totals."""

from __future__ import annotations

import numpy as np
import pytest

from relanon.multitable.linking import repair


def reference_blocks(points, others=None, max_size=1, rotation=None) -> list:
    """Recursive median bisection, depth first, the lower half's blocks before the upper half's."""
    if rotation is not None:
        points = points @ rotation
        others = None if others is None else others @ rotation
    everything = np.arange(len(points))
    pending, blocks = [(everything, everything)], []
    while pending:
        mine, theirs = pending.pop()
        if len(mine) <= max_size:
            blocks.append(mine if others is None else (mine, theirs))
            continue
        inside = points[mine]
        axis = int(np.argmax(inside.var(axis=0)))
        half = len(mine) // 2
        cut = np.argpartition(inside[:, axis], half)
        if others is None:
            lower, upper = (mine[cut[:half]], None), (mine[cut[half:]], None)
        else:
            cut_theirs = np.argpartition(others[theirs, axis], half)
            lower = (mine[cut[:half]], theirs[cut_theirs[:half]])
            upper = (mine[cut[half:]], theirs[cut_theirs[half:]])
        pending += [upper, lower]
    return blocks


def reference_blocked(children, slot_points, block_size, passes, rng, by_midpoint):
    """Blocks of children and slots solved one by one, then ``passes`` regroupings along rotated cuts."""
    slot = np.empty(len(children), dtype=np.int64)
    for members, slots in reference_blocks(children, slot_points, max_size=block_size):
        slot[members] = slots[repair.solve_exact(children[members], slot_points[slots])]
    for _ in range(passes):
        rotation, _ = np.linalg.qr(rng.normal(size=(children.shape[1], children.shape[1])))
        points = children + slot_points[slot] if by_midpoint else children
        for members in reference_blocks(points, max_size=block_size, rotation=rotation):
            slots = slot[members]
            slot[members] = slots[repair.solve_exact(children[members], slot_points[slots])]
    return slot


def instance(n, d, seed):
    """Clustered children and slots, with duplicated points (ties in distances and in medians)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, 3.0, size=(8, d)) * 0.7 ** np.arange(d)
    children = centers[rng.integers(0, 8, n)] + rng.normal(size=(n, d))
    children[: n // 10] = np.round(children[: n // 10])  # many children at the same points
    parents = centers[rng.integers(0, 8, n // 3)] + rng.normal(size=(n // 3, d))
    slot_points = parents[np.sort(rng.integers(0, len(parents), n))]
    return children, slot_points


@pytest.mark.parametrize("shape", [(3, 2), (151, 5), (1_000, 4), (20_000, 12)])
def test_variances_are_numpys_bit_for_bit(shape):
    rng = np.random.default_rng(shape[0])
    points = rng.normal(size=shape) * np.exp(3 * rng.normal(size=shape[1])) + 100 * rng.normal(size=shape[1])
    points[:, 0] = 0.1  # a constant column: its variance is rounding only
    points[:, 1] = points[:, 1].round()
    scratch = np.empty_like(points)
    np.testing.assert_array_equal(repair._variances(points, scratch), points.var(axis=0))
    # a contiguous slice (the cuts read their parts in place)
    np.testing.assert_array_equal(repair._variances(points[1:], scratch[1:]), points[1:].var(axis=0))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("rotated", [False, True])
def test_blocks_are_those_of_a_plain_bisection(monkeypatch, workers, rotated):
    monkeypatch.setattr(repair, "PARALLEL_CUT", 1_000)  # cut on threads from 1,000 points
    children, slot_points = instance(6_000, 5, 0)
    rotation = repair._random_rotation(5, np.random.default_rng(1)) if rotated else None
    for others in (slot_points, None):
        expected = reference_blocks(children, others, max_size=150, rotation=rotation)
        got = repair._balanced_blocks(children, others, max_size=150, rotation=rotation, workers=workers)
        assert len(got) == len(expected) == 64
        for one, other in zip(got, expected, strict=True):
            np.testing.assert_array_equal(one, other)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("by_midpoint", [False, True])
def test_the_blocked_assignment_is_that_of_plain_blocks_solved_in_turn(monkeypatch, workers, by_midpoint):
    monkeypatch.setattr(repair, "PARALLEL_CUT", 1_000)
    monkeypatch.setattr(repair, "LARGE", 1_000 if by_midpoint else 10_000)  # repair groups by midpoint or position
    children, slot_points = instance(4_000, 4, 2)
    expected = reference_blocked(children, slot_points, 150, 2, np.random.default_rng(3), by_midpoint)
    got = repair.solve_blocked(children, slot_points, 150, 2, workers, np.random.default_rng(3))
    np.testing.assert_array_equal(got, expected)


def test_groups_are_reported_as_they_are_solved():
    children, slot_points = instance(4_000, 4, 2)
    seen = []
    repair.solve_blocked(children, slot_points, 150, 1, 2, np.random.default_rng(0),
                         lambda done, total: seen.append((done, total)))
    assert seen == sorted(seen) and seen[-1] == (64, 64) and len(seen) >= 4
