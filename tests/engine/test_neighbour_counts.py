"""Counting points within a radius: the blocks of the distance matrix give the tree's counts, ties included."""

import numpy as np
import pytest

from relanon.engine import distance_blocks, neighbours
from relanon.engine.neighbours import count_closer_and_tied


def grid_points(n, dims, seed):
    """Points on a coarse grid: many exact duplicates and many points at equal distances (ties on the sphere)."""
    return np.random.default_rng(seed).integers(-3, 4, size=(n, dims)) * 0.5


def exact_counts(reference, queries, radii):
    squared = ((queries[:, None, :] - reference[None, :, :]) ** 2).sum(axis=2)
    return [(squared <= np.where(r >= 0, r * r, -np.inf)[:, None]).sum(axis=1) for r in radii]


@pytest.mark.parametrize("dims", [1, 3, 12])
def test_blocks_count_as_the_tree_does_on_duplicates_and_ties(dims):
    reference = grid_points(400, dims, seed=dims)
    queries = np.vstack([reference[:150], grid_points(50, dims, seed=100 + dims)])
    # radii exactly on other points' distances (ties), a hair inside and outside, zero, and none (-inf)
    on_point = np.sqrt(((queries - reference[np.arange(len(queries)) % 37]) ** 2).sum(axis=1))
    radii = [on_point, np.nextafter(on_point, 0), on_point * (1 + 1e-12), np.zeros(len(queries)),
             np.where(np.arange(len(queries)) % 2, on_point, -np.inf)]
    tree = neighbours.SearchTree(reference)
    by_tree = [np.where(r >= 0, tree.count_within(queries, np.maximum(r, 0.0)), 0) for r in radii]
    by_blocks = distance_blocks.count_within(reference, queries, *radii)
    for tree_counts, block_counts, exact in zip(by_tree, by_blocks, exact_counts(reference, queries, radii),
                                                strict=True):
        assert np.array_equal(block_counts, tree_counts)
        assert np.array_equal(block_counts, exact)


def test_counts_do_not_depend_on_the_block_size(monkeypatch):
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(3_000, 20)).round(1)
    queries = reference[rng.choice(3_000, 500, replace=False)] + rng.normal(scale=0.01, size=(500, 20))
    own = reference[rng.choice(3_000, 500)]
    distances = np.sqrt(((queries - own) ** 2).sum(axis=1))  # each query's distance to one point: a tie
    whole = count_closer_and_tied(reference, queries, distances)
    monkeypatch.setattr(distance_blocks, "BLOCK_ENTRIES", 7_919)  # a few queries per block, blocks of unequal sizes
    parts = count_closer_and_tied(reference, queries, distances)
    assert all(np.array_equal(a, b) for a, b in zip(whole, parts, strict=True))
    assert whole[0].sum() > 0 and (whole[1] >= 1).all()


def test_high_dimensional_counts_keep_ties_with_the_own_match():
    """20 dimensions and 1,000 points: the blocks count; a query on a duplicated point ties with every copy."""
    reference = np.repeat(np.eye(20)[:10], 100, axis=0)  # 10 places, 100 copies each
    queries = reference[::100] + 0.0
    closer, tied = count_closer_and_tied(reference, queries, np.zeros(10))
    assert closer.tolist() == [0] * 10 and tied.tolist() == [100] * 10
    closer, tied = count_closer_and_tied(reference, queries, np.full(10, np.sqrt(2.0)))
    assert closer.tolist() == [100] * 10 and tied.tolist() == [900] * 10


@pytest.mark.parametrize("dims, k", [(2, 1), (9, 2), (17, 2), (30, 3)])
def test_block_distances_are_the_trees_to_the_bit(dims, k):
    """The nearest distances from blocks equal the tree's float for float, duplicates and ties included."""
    rng = np.random.default_rng(dims)
    reference = np.vstack([rng.normal(size=(600, dims)) * rng.uniform(0.1, 5.0, dims), grid_points(200, dims, dims)])
    queries = np.vstack([reference[:100], rng.normal(size=(150, dims)), grid_points(50, dims, 7)])
    by_tree = neighbours.SearchTree(reference).query(queries, k).distances
    assert np.array_equal(distance_blocks.nearest_distances(reference, queries, k), by_tree)
    assert np.array_equal(neighbours.nearest_distances(reference, queries, k),
                          neighbours.cross_neighbours(reference, queries, k).distances)
