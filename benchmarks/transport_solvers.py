"""Solvers of the ``linear_sum`` transport problem compared on the same instances: total distance, CPU time.

The problem: each child (one unit) goes to a parent, parent ``p`` receives exactly ``counts[p]`` children,
the total Euclidean distance is minimized. The clustered instances are those of ``benchmarks/linear_sum_speed.py``
(clustered 5-dimension factor space, 3 children per parent). Solvers:

- ``linear_sum``: relanon's :func:`relanon.multitable.linking.match_linear_sum` (the blocked solver, then up to
  200,000 children the minimum-cost flow on :func:`relanon.multitable.linking.candidates.candidate_arcs`);
  ``linear_sum-R`` with ``pricing_rounds=R`` (:mod:`relanon.multitable.linking.pricing`);
- ``blocked``: the blocked solver alone (:func:`relanon.multitable.linking.repair.solve_blocked`: exact
  solves of balanced spatial blocks of children and slots, then repair passes along rotated cuts);
- ``nearest-K``: OR-Tools' ``SimpleMinCostFlow`` (cost scaling) on a sparse graph of nearest arcs only: each child's
  ``K`` nearest parents and each parent's ``2 * count + 2`` nearest children, integer costs (distances scaled
  to ``2**20`` at the longest arc); a child that the graph cannot place goes through an overflow node of
  prohibitive cost, and then receives arcs to the nearest of the parents left short (their number doubled at
  each round) until no child overflows: exact on its final graph;
- ``sparse-K``: scipy's ``min_weight_full_bipartite_matching`` (LAPJVsp) on the slot graph (each child to
  every slot of its ``K`` nearest parents), run in a child process with a CPU limit (it is erratic on
  the exact ties of slots: a parent of 20 children is 20 identical slots);
- ``priced-R``: a cheap feasible start (blocks of 150 solved once, no repair), the candidate graph of
  :func:`relanon.multitable.linking.candidates.candidate_arcs` with 8 nearest parents, the min-cost flow, then up to
  ``R`` rounds of exact pricing (:func:`relanon.multitable.linking.pricing.priced_flow`: the parents' potentials
  proving the flow optimal on its graph, the pairs of negative reduced cost found or proven absent, the flow
  re-solved);
- ``exact``: scipy's ``linear_sum_assignment`` on the dense child x slot matrix up to 10,000 children; above, the
  ``priced`` solve run to its proof (no pair left with a negative reduced cost: the exact optimum of the integer
  costs, within 1e-7 of the true one).

The instances are clustered ones (``--sizes``, ``--seeds``) or, with ``--demo SCALE``, the demo's own
``linear_sum`` links above 10,000 children (their released parents and children placed in the link's parent space,
each parent's count its released children).

Every solver runs in its own process (peak memory and CPU seconds are its own); the figures are CPU seconds
(stable on a loaded machine) and wall seconds.

    python benchmarks/transport_solvers.py                       # 10k children, 3 seeds, every solver
    python benchmarks/transport_solvers.py --sizes 100000 --seeds 0 --solvers linear_sum blocked
    python benchmarks/transport_solvers.py --sizes 50000 --solvers exact linear_sum priced-1   # exact by pricing
    python benchmarks/transport_solvers.py --demo 1 --solvers exact linear_sum linear_sum-1      # the demo's links
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from linear_sum_speed import clustered
from pipeline_speed import released_link
from scipy.spatial.distance import cdist

from relanon.engine.neighbours import cross_neighbours
from relanon.multitable import linking
from relanon.multitable.linking import candidates, pricing, repair
from relanon.multitable.linking.inputs import worker_count

SOLVERS = ("exact", "linear_sum", "linear_sum-1", "linear_sum-3", "blocked", "priced-1", "priced-3", "nearest-8",
           "nearest-16", "sparse-8")
CPU_LIMIT = 600  # seconds of CPU a solver may take on one instance
RESOLUTION = 2**20
DENSE_EXACT = 10_000  # children: scipy's dense exact solve up to this size, the priced proof above
PROOF_ROUNDS = 1_000  # pricing rounds the exact solve may take above DENSE_EXACT (it stops at the proof)


def candidate_arcs(children, parents, counts, k: int):
    """Each child's ``k`` nearest parents and each parent's ``2 * count + 2`` nearest children (deduplicated)."""
    n = len(children)
    live = np.flatnonzero(counts > 0)
    found = cross_neighbours(parents[live], children, k=min(k, len(live)))
    tails, heads, dist = [np.repeat(np.arange(n), found.indices.shape[1])], [found.indices.ravel()], [found.distances.ravel()]
    want = np.minimum(n, 2 * counts[live] + 2)
    width = 2 ** np.ceil(np.log2(want)).astype(np.int64)
    for size in np.unique(width):
        members = np.flatnonzero(width == size)
        back = cross_neighbours(children, parents[live[members]], k=int(min(n, size)))
        keep = np.arange(back.indices.shape[1])[None, :] < want[members][:, None]
        tails.append(back.indices[keep])
        heads.append(np.repeat(members, keep.sum(axis=1)))
        dist.append(back.distances[keep])
    tails, heads, dist = np.concatenate(tails), np.concatenate(heads), np.concatenate(dist)
    _, first = np.unique(tails * len(live) + heads, return_index=True)
    return live, tails[first], heads[first], dist[first]


def min_cost_flow(children, parents, counts, k: int) -> tuple[np.ndarray, int]:
    """OR-Tools' min-cost flow on the candidate arcs, widened until no child overflows; returns the parent of
    each child and the number of solves."""
    from ortools.graph.python import min_cost_flow as mcf

    n = len(children)
    live, tails, heads, dist = candidate_arcs(children, parents, counts, k)
    demand = counts[live].astype(np.int64)
    widen, solves = k, 0
    while True:
        scale = RESOLUTION / max(float(dist.max()), 1e-300)
        costs = np.round(dist * scale).astype(np.int64)
        big = 4 * int(costs.max()) + 1  # any final graph is solved exactly; this only orders the overflow
        graph = mcf.SimpleMinCostFlow()
        arcs = graph.add_arcs_with_capacity_and_unit_cost(tails, heads + n, np.ones(len(tails), np.int64), costs)
        overflow = n + len(live)
        graph.add_arcs_with_capacity_and_unit_cost(np.arange(n), np.full(n, overflow), np.ones(n, np.int64),
                                                   np.full(n, big, np.int64))
        short_arcs = graph.add_arcs_with_capacity_and_unit_cost(np.full(len(live), overflow), np.arange(len(live)) + n,
                                                                demand, np.zeros(len(live), np.int64))
        graph.set_nodes_supplies(np.arange(n + len(live) + 1), np.concatenate([np.ones(n, np.int64), -demand, [0]]))
        status = graph.solve()
        solves += 1
        if status != graph.OPTIMAL:
            raise RuntimeError(f"min-cost flow: {status}")
        flows = graph.flows(arcs)
        placed = np.zeros(n, dtype=bool)
        placed[tails[flows > 0]] = True
        lost = np.flatnonzero(~placed)
        if lost.size == 0:
            break
        short = np.flatnonzero(graph.flows(short_arcs) > 0)
        widen *= 2
        near = cross_neighbours(parents[live[short]], children[lost], k=min(widen, len(short)))
        tails = np.concatenate([tails, np.repeat(lost, near.indices.shape[1])])
        heads = np.concatenate([heads, short[near.indices.ravel()]])
        dist = np.concatenate([dist, near.distances.ravel()])
    out = np.empty(n, dtype=np.int64)
    used = flows > 0
    out[tails[used]] = live[heads[used]]
    return out, solves


def sparse_matching(children, parents, counts, k: int) -> np.ndarray:
    """scipy's LAPJVsp on the slot graph: each child to every slot of its ``k`` nearest parents."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching

    n = len(children)
    live = np.flatnonzero(counts > 0)
    found = cross_neighbours(parents[live], children, k=min(k, len(live)))
    first_slot = np.concatenate([[0], np.cumsum(counts[live])[:-1]])
    per = counts[live][found.indices]
    rows = np.repeat(np.arange(n), per.sum(axis=1))
    starts = np.repeat(first_slot[found.indices].ravel(), per.ravel())
    within = np.arange(len(starts)) - np.repeat(np.cumsum(per.ravel()) - per.ravel(), per.ravel())
    values = np.repeat(found.distances.ravel(), per.ravel()) + 1e-12  # an explicit zero is no arc
    matrix = csr_matrix((values, (rows, starts + within)), shape=(n, n))
    _, slot = min_weight_full_bipartite_matching(matrix)
    return np.repeat(live, counts[live])[slot]


def cheap_start_arcs(children, parents, counts):
    """Blocks of 150 solved once (a feasible start) and the candidate arcs of 8 nearest parents around it."""
    slots = np.repeat(np.arange(len(parents)), counts)
    start = slots[repair.solve_blocked(children, parents[slots], 150, 0, worker_count(None), np.random.default_rng(0))]
    tails, heads, _ = candidates.candidate_arcs(children, parents, counts, start, k=8)
    return tails, heads


def priced(children, parents, counts, rounds: int) -> tuple[np.ndarray, bool]:
    """The cheap start's flow, then up to ``rounds`` pricing rounds (:func:`pricing.priced_flow`); returns the
    assignment and whether it is proven optimal among every pair."""
    return pricing.priced_flow(children, parents, counts, *cheap_start_arcs(children, parents, counts), rounds)


def exact(children, parents, counts) -> np.ndarray:
    from scipy.optimize import linear_sum_assignment


    slots = np.repeat(np.arange(len(parents)), counts)
    _, slot = linear_sum_assignment(cdist(children, parents[slots]))
    return slots[slot]


def demo_links(scale: float, folder: Path) -> list[Path]:
    """The inputs of the demo's ``linear_sum`` links above :data:`DENSE_EXACT` children, saved in ``folder``.

    The demo database (``relanon demo``: ``hospital(scale, seed=0)``, anonymized with the schema's seed) gives
    the released parents and children; each link's coordinates are those of its parent space
    (:mod:`relanon.multitable.linking.candidates`) and its counts are the released children of each parent.
    """
    from relanon import anonymize, datasets
    from relanon.schema.graph import all_links

    schema, database = datasets.hospital(scale=scale, seed=0)
    releases = anonymize(schema, database).releases
    paths = []
    for link in all_links(schema):
        if link.method != "linear_sum":
            continue
        children, parents, keys = released_link(schema, link, database, releases)
        if len(keys) <= DENSE_EXACT or (keys < 0).any():
            continue
        paths.append(folder / f"{link.child}.{link.column}.npz")
        np.savez(paths[-1], children=children, parents=parents, counts=np.bincount(keys, minlength=len(parents)))
    return paths


def instance(name: str, seed: int):
    """Children, parents and counts of a clustered instance (``name`` its size) or of a saved link (a path)."""
    if name.endswith(".npz"):
        saved = np.load(name)
        return saved["children"], saved["parents"], saved["counts"]
    return clustered(int(name), seed)


def run_one(solver: str, name: str, seed: int) -> dict:
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, CPU_LIMIT))
    children, parents, counts = instance(name, seed)
    wall, cpu = time.perf_counter(), time.process_time()
    extra = {}
    if solver == "exact" and len(children) <= DENSE_EXACT:
        assignment = exact(children, parents, counts)
    elif solver == "exact":
        assignment, proven = priced(children, parents, counts, PROOF_ROUNDS)
        if not proven:
            raise AssertionError(f"exact: no proof after {PROOF_ROUNDS} pricing rounds")
    elif solver.startswith("priced-"):
        assignment, extra["proven"] = priced(children, parents, counts, int(solver.split("-")[1]))
    elif solver.startswith("linear_sum"):
        rounds = int(solver.split("-")[1]) if "-" in solver else 0
        assignment = linking.match_linear_sum(children, parents, counts, random_state=seed, pricing_rounds=rounds)
    elif solver == "blocked":
        size, passes = linking.blocked_settings(len(children))
        slots = np.repeat(np.arange(len(parents)), counts)
        assignment = slots[repair.solve_blocked(children, parents[slots], size, passes, worker_count(None),
                                                np.random.default_rng(seed))]
    elif solver.startswith("nearest-"):
        assignment, extra["solves"] = min_cost_flow(children, parents, counts, int(solver.split("-")[1]))
    else:
        assignment = sparse_matching(children, parents, counts, int(solver.split("-")[1]))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not np.array_equal(np.bincount(assignment, minlength=len(parents)), counts):
        raise AssertionError(f"{solver}: counts not met")
    return {"solver": solver, "n": len(children), "seed": seed, "wall": wall, "cpu": cpu,
            "total": linking.total_distance(children, parents, assignment),
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **extra}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    parser.add_argument("--demo", type=float, metavar="SCALE",
                        help="the demo's linear_sum links at this scale instead of clustered instances (seed 0)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child[0], args.child[1], int(args.child[2]))))
        return
    with tempfile.TemporaryDirectory() as folder:
        instances = ([(str(path), [0]) for path in demo_links(args.demo, Path(folder))] if args.demo
                     else [(str(n), args.seeds) for n in args.sizes])
        for name, seeds in instances:
            compare(args.solvers, name, seeds)


def compare(solvers, name: str, seeds) -> None:
    """Every solver on the instance ``name`` (a size or a saved link) with each seed, in its own process."""
    label = f"{Path(name).stem} " if name.endswith(".npz") else ""
    for seed in seeds:
        results = {}
        for solver in solvers:
            done = subprocess.run([sys.executable, __file__, "--child", solver, name, str(seed)],
                                  capture_output=True, text=True)
            if done.returncode:
                reason = "CPU limit" if done.returncode in (-24, 152) else done.stderr.strip().splitlines()[-1:]
                print(f"{label}n={name if not label else '-'} seed={seed} {solver:<12} failed ({reason})", flush=True)
                continue
            results[solver] = json.loads(done.stdout.strip().splitlines()[-1])
            best = results.get("exact", {}).get("total")
            r = results[solver]
            gap = f"{100 * (r['total'] / best - 1):6.3f} %" if best else "   -    "
            print(f"{label}n={r['n']:,} seed={seed} {solver:<12} total {r['total']:14.3f}  gap to exact {gap}  "
                  f"cpu {r['cpu']:7.1f} s  wall {r['wall']:7.1f} s  {r['max_rss_mb']:6.0f} MB"
                  + (f"  solves {r['solves']}" if "solves" in r else "")
                  + (f"  {'proven optimal' if r['proven'] else 'not proven'}" if "proven" in r else ""), flush=True)


if __name__ == "__main__":
    main()
