"""Pricing of the ``linear_sum`` transport problem: proving a flow optimal among every child x parent pair, or
finding the pairs that would lower its total.

A minimum-cost flow exact on its candidate graph (:mod:`relanon.multitable.linking.transport`) has parent
*potentials* ``h``: each child's parent minimizes ``cost(c, p) + h[p]`` over the child's arcs
(:func:`potentials`, shortest paths in the graph of parents where moving a child from its parent to ``p`` costs
``cost(c, p) - cost(c, parent)``). The flow is optimal among *all* pairs when no pair outside the graph has a
negative reduced cost ``cost(c, p) + h[p] - own[c]`` (``own[c]``: the child's value at its own parent); the
pairs that do are *violations* (:func:`violations`). :func:`priced_flow` adds each child's best violations to
the graph and re-solves, round after round, until none is left (the flow is then proven optimal, up to the
integer costs' resolution) or the rounds run out; every round keeps the previous flow on its graph, so the
total never rises.

The search of the violations is exact, with k-d trees and no dense matrix: the parents are cut into bands of
potentials; in a band of lowest potential ``low``, a parent at distance ``d`` is lifted to the height
``h[p] - low`` above the children's space, where its distance to a child, ``sqrt(d**2 + (h[p] - low)**2)``, is at
most ``d + h[p] - low``: once a child's ``k``-th nearest lifted parent is at least ``own[c] - low`` away, no
parent of the band beyond those ``k`` has a negative reduced cost.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from relanon.multitable.linking.transport import COST_RESOLUTION, solve_transport

PRICE_BANDS = 16
"""Bands of potentials the parents are cut into for the search of violations."""
BEST_VIOLATIONS = 4
"""Arcs a pricing round adds per child: its violations of most negative reduced cost."""
FIRST_NEAREST = 8
"""Lifted parents of a band first asked for each child (four times as many while not proven)."""
QUERY_VALUES = 2_000_000
"""Answers of the k-d tree held at once: the children asked are split so that a search stays near 100 MB."""


def cost_scale(children: np.ndarray, parents: np.ndarray) -> float:
    """Integer cost units per unit of distance: the diagonal of the box holding every point costs
    :data:`COST_RESOLUTION`, so that every pair, in the graph or not, has a cost on the same scale."""
    low = np.minimum(children.min(axis=0), parents.min(axis=0))
    high = np.maximum(children.max(axis=0), parents.max(axis=0))
    diagonal = float(np.linalg.norm(high - low))
    return COST_RESOLUTION / diagonal if diagonal > 0 else 0.0


def integer_costs(children, parents, tails, heads, scale: float) -> np.ndarray:
    return np.round(np.linalg.norm(children[tails] - parents[heads], axis=1) * scale).astype(np.int64)


def potentials(parent: np.ndarray, tails: np.ndarray, heads: np.ndarray, costs: np.ndarray,
               n_parents: int) -> np.ndarray:
    """Parent potentials ``h >= 0`` under which each child's ``parent`` minimizes ``costs + h[head]`` over its
    arcs, for a flow optimal on the graph of arcs ``(tails, heads)`` (Bellman-Ford from every parent at once:
    an optimal flow leaves no negative cycle).

    Examples
    --------
    >>> # children 0 and 1 sit on parent 0 (count 1) and parent 1 (count 1); child 1 would rather be at 0
    >>> potentials(np.array([0, 1]), np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([0, 1, 3]), 2).tolist()
    [2, 0]
    """
    assigned = heads == parent[tails]
    own = np.zeros(len(parent), dtype=np.int64)
    own[tails[assigned]] = costs[assigned]
    source, target = parent[tails[~assigned]], heads[~assigned]
    weight = costs[~assigned] - own[tails[~assigned]]
    order = np.argsort(source, kind="stable")
    source, target, weight = source[order], target[order], weight[order]
    first = np.searchsorted(source, np.arange(n_parents + 1))
    distance = np.zeros(n_parents, dtype=np.int64)
    active = np.unique(source)
    while active.size:  # relax the arcs out of the parents whose distance fell in the last sweep
        lengths = first[active + 1] - first[active]
        arc = np.repeat(first[active] - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        reached = distance[source[arc]] + weight[arc]
        better = reached < distance[target[arc]]
        np.minimum.at(distance, target[arc][better], reached[better])
        active = np.unique(target[arc][better])
    return distance.max() - distance


def violations(children, parents, counts, parent, prices, scale: float, *, best: int = BEST_VIOLATIONS,
               bands: int = PRICE_BANDS, k: int = FIRST_NEAREST) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(child, parent)`` of negative reduced cost under ``prices``, among the parents receiving children:
    for every child that has one, the ``best`` of most negative reduced cost among those its search met (a child's
    search in a band stops once it holds ``best``); none when the flow ``parent`` is optimal among every pair.
    Sorted by child, then reduced cost, then parent: the same inputs give the same arcs.

    Examples
    --------
    >>> children, parents = np.array([[0.0], [1.0]]), np.array([[0.0], [1.0]])
    >>> tails, heads = violations(children, parents, np.array([1, 1]), np.array([1, 0]), np.zeros(2, np.int64), 1.0)
    >>> tails.tolist(), heads.tolist()
    ([0, 1], [0, 1])
    """
    n, live = len(children), np.flatnonzero(counts > 0)
    floor = prices[live].min()
    own = integer_costs(children, parents, np.arange(n), parent, scale) + prices[parent] - floor
    height = prices[live] - floor
    found_tails, found_heads, found_gains = [], [], []
    for band in np.array_split(np.argsort(height, kind="stable"), min(bands, len(live))):
        low = height[band].min()
        tree = cKDTree(np.column_stack([parents[live[band]], (height[band] - low) / scale]))
        asked, width = np.flatnonzero(own - low > 0), k  # a child at own <= low gains nothing in this band
        while asked.size:
            width = min(width, len(band))
            unsettled = []
            for chunk in np.array_split(asked, -(-len(asked) * width // QUERY_VALUES)):  # the answers held at once
                distance, nearest = tree.query(np.column_stack([children[chunk], np.zeros(len(chunk))]), k=width,
                                               workers=-1)
                distance, nearest = distance.reshape(len(chunk), width), nearest.reshape(len(chunk), width)
                tails, heads = np.repeat(chunk, width), live[band[nearest.ravel()]]
                gains = integer_costs(children, parents, tails, heads, scale) + prices[heads] - floor - own[tails]
                negative = gains < 0
                found_tails.append(tails[negative])
                found_heads.append(heads[negative])
                found_gains.append(gains[negative])
                # a cost is rounded by at most half a unit: proven once the k-th lifted parent is a unit beyond
                proven = (distance[:, -1] * scale >= own[chunk] - low + 1) | (width == len(band))
                enough = np.bincount(tails[negative] - chunk[0], minlength=chunk[-1] - chunk[0] + 1)[
                    chunk - chunk[0]] >= best
                unsettled.append(chunk[~proven & ~enough])
            asked, width = np.concatenate(unsettled), 4 * width
    tails, heads, gains = (np.concatenate(found_tails), np.concatenate(found_heads), np.concatenate(found_gains))
    order = np.lexsort((heads, gains, tails))
    tails, heads = tails[order], heads[order]
    rank = np.arange(len(tails)) - np.searchsorted(tails, tails)
    return tails[rank < best], heads[rank < best]


def priced_flow(children, parents, counts, tails, heads, rounds: int, after_round=None) -> tuple[np.ndarray, bool]:
    """The minimum-cost flow on the arcs ``(tails, heads)`` (which must hold a feasible assignment), then up to
    ``rounds`` pricing rounds; returns the parent of each child and whether the last flow is proven optimal among
    every pair (a round found no violation). ``after_round(done)`` is called after each round's flow.

    Examples
    --------
    >>> children, parents = np.array([[0.0], [1.0], [5.0]]), np.array([[0.0], [5.0]])
    >>> parent, proven = priced_flow(children, parents, np.array([2, 1]), np.array([0, 1, 2]), np.array([0, 0, 1]), 3)
    >>> parent.tolist(), proven
    ([0, 0, 1], True)
    """
    scale = cost_scale(children, parents)
    tails, heads = np.asarray(tails, dtype=np.int64), np.asarray(heads, dtype=np.int64)
    costs = integer_costs(children, parents, tails, heads, scale)
    parent = solve_transport(len(children), counts, tails, heads, costs, scale=1.0)
    for done in range(rounds):
        new_tails, new_heads = violations(children, parents, counts, parent,
                                          potentials(parent, tails, heads, costs, len(parents)), scale)
        if len(new_tails) == 0:
            return parent, True
        tails, heads = np.concatenate([tails, new_tails]), np.concatenate([heads, new_heads])
        costs = np.concatenate([costs, integer_costs(children, parents, new_tails, new_heads, scale)])
        parent = solve_transport(len(children), counts, tails, heads, costs, scale=1.0)
        if after_round is not None:
            after_round(done + 1)
    return parent, False
