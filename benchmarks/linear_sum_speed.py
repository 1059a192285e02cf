"""Time, memory and optimality gap of linear_sum matching (relanon.multitable.linking.match_linear_sum).

Coordinates are realistic for a 5-dimension factor space: parents drawn from 6 Gaussian clusters
whose axes shrink like principal components (standard deviations 1, 0.7, 0.49, ...); each parent
owns a Poisson number of children (3 on average, more on one side of the space) placed around it;
the avatar parents are the parents moved by noise, and their expected counts the true counts plus
noise, allocated with allocate_counts. There are 3 children per parent.

Each size runs in a fresh process, so that its peak memory is its own; the memory reported is
the growth of the maximum resident set size during the matching. The optimality gap is
measured against scipy's exact linear_sum_assignment on instances small enough to solve
exactly, for the blocked path with and without repair passes; at every size, the total is
also compared with a lower bound (each child at its nearest parent, or each slot at its nearest
child), which bounds the gap from above.

    python benchmarks/linear_sum_speed.py                  # 10k, 100k, 1M and the gaps
    python benchmarks/linear_sum_speed.py --sizes 10000 100000 --no-gaps
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import threading
import time

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from relanon.multitable import linking
from relanon.multitable.linking import repair

DIMENSIONS = 5
CHILDREN_PER_PARENT = 3


def clustered(n_children: int, seed: int = 0):
    """Children, avatar parents and allocated counts for about ``n_children`` children."""
    rng = np.random.default_rng(seed)
    m = max(1, n_children // CHILDREN_PER_PARENT)
    scale = 0.7 ** np.arange(DIMENSIONS)
    centers = rng.normal(0.0, 3.0, size=(6, DIMENSIONS)) * scale
    parents = centers[rng.integers(0, 6, m)] + rng.normal(size=(m, DIMENSIONS)) * scale
    tilt = np.exp(0.3 * parents[:, 0])
    owned = rng.poisson(CHILDREN_PER_PARENT * tilt / tilt.mean())
    children = np.repeat(parents, owned, axis=0)
    children += rng.normal(scale=0.3, size=children.shape) * scale
    children = children[rng.permutation(len(children))[:n_children]]
    avatars = parents + rng.normal(scale=0.3, size=parents.shape) * scale
    counts = linking.allocate_counts(owned + rng.normal(size=m), len(children), random_state=rng)
    return children, avatars, counts


def lower_bound(children, parents, counts) -> float:
    """No assignment costs less than every child at its nearest parent, or every slot at its
    nearest child."""
    live = counts > 0
    by_child = cKDTree(parents[live]).query(children, workers=-1)[0].sum()
    by_slot = (cKDTree(children).query(parents[live], workers=-1)[0] * counts[live]).sum()
    return float(max(by_child, by_slot))


def max_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, workers) / 1024


def run_one(n: int) -> dict:
    children, parents, counts = clustered(n)
    before = max_rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    assignment = linking.match_linear_sum(children, parents, counts, random_state=0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert np.array_equal(np.bincount(assignment, minlength=len(parents)), counts)
    total = linking.total_distance(children, parents, assignment)
    return {
        "children": len(children),
        "parents": len(parents),
        "seconds": wall,
        "main_cpu_seconds": cpu,
        "memory_mb": max_rss_mb() - before,
        "peak_rss_mb": max_rss_mb(),
        "above_lower_bound_pct": 100 * (total / lower_bound(children, parents, counts) - 1),
    }


def gaps(sizes=(2_000, 8_000), seeds=(0, 1, 2)) -> list[dict]:
    """Gap to the exact optimum of each path, forced by its parameters."""
    paths = {
        "default": {},
        "blocked (default blocks and passes)": {"exact_limit": 0},
        "blocked, 3 repair passes": {"exact_limit": 0, "repair_passes": 3},
        "blocked, 12 repair passes": {"exact_limit": 0, "repair_passes": 12},
        "blocked, no repair": {"exact_limit": 0, "repair_passes": 0},
    }
    rows = []
    for n in sizes:
        for seed in seeds:
            children, parents, counts = clustered(n, seed)
            slots = np.repeat(np.arange(len(parents)), counts)
            start = time.perf_counter()
            distances = cdist(children, parents[slots])
            optimum = distances[linear_sum_assignment(distances)].sum()
            exact_seconds = time.perf_counter() - start
            bound = lower_bound(children, parents, counts)
            for name, options in paths.items():
                start = time.perf_counter()
                assignment = linking.match_linear_sum(children, parents, counts, random_state=seed, **options)
                seconds = time.perf_counter() - start
                gap = 100 * (linking.total_distance(children, parents, assignment) / optimum - 1)
                rows.append(
                    {
                        "size": n,
                        "children": len(children),
                        "seed": seed,
                        "path": name,
                        "gap_pct": gap,
                        "seconds": seconds,
                        "exact_seconds": exact_seconds,
                        "optimum_above_bound_pct": 100 * (optimum / bound - 1),
                    }
                )
    return rows


def gil_check(n_blocks: int = 8, size: int = 1_000) -> dict:
    """Does the exact solver release the GIL? Solve blocks on 1 thread, then on 2."""
    problems = []
    for seed in range(n_blocks):
        children, parents, counts = clustered(size, seed)
        problems.append((children, parents[np.repeat(np.arange(len(parents)), counts)]))
    start = time.perf_counter()
    for problem in problems:
        repair.solve_exact(*problem)
    serial = time.perf_counter() - start
    threads = [
        threading.Thread(target=lambda part=problems[i::2]: [repair.solve_exact(*p) for p in part]) for i in range(2)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    threaded = time.perf_counter() - start
    return {"blocks": n_blocks, "block_size": size, "serial_s": serial, "two_threads_s": threaded}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--no-gaps", action="store_true", help="skip the comparison with the exact optimum")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_one(args.child)))
        return

    print("linear_sum matching, d = 5, 3 children per parent (clustered factor-space coordinates)")
    results = []
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--child", str(n)], capture_output=True, text=True, check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = results[-1]
        print(
            f"  {r['children']:>9,} children, {r['parents']:>7,} parents: {r['seconds']:7.2f} s wall "
            f"({r['main_cpu_seconds']:.1f} s cpu in the main process), +{r['memory_mb']:.0f} MB "
            f"(peak {r['peak_rss_mb']:.0f} MB), total {r['above_lower_bound_pct']:.1f} % above the lower bound"
        )
    for small, large in zip(results[:-1], results[1:], strict=True):
        ratio = large["children"] / small["children"]
        print(
            f"  x{ratio:.0f} children: time x{large['seconds'] / small['seconds']:.1f}, "
            f"memory x{max(large['memory_mb'], 1) / max(small['memory_mb'], 1):.1f}"
        )

    gil = gil_check()
    print(
        f"GIL: {gil['blocks']} blocks of {gil['block_size']} children: {gil['serial_s']:.2f} s on one thread, "
        f"{gil['two_threads_s']:.2f} s on two threads"
    )

    if not args.no_gaps:
        print("Gap to the exact optimum (scipy linear_sum_assignment), mean and worst over 3 seeds:")
        rows = gaps()
        for n in sorted({r["size"] for r in rows}):
            block = [r for r in rows if r["size"] == n]
            exact = np.mean([r["exact_seconds"] for r in block])
            above = np.mean([r["optimum_above_bound_pct"] for r in block])
            children = sorted({r["children"] for r in block})
            print(
                f"  {n:,} children asked ({', '.join(f'{c:,}' for c in children)} drawn; exact solve {exact:.2f} s; "
                f"the optimum is {above:.1f} % above the lower bound):"
            )
            for path in dict.fromkeys(r["path"] for r in block):
                gap = [r["gap_pct"] for r in block if r["path"] == path]
                seconds = np.mean([r["seconds"] for r in block if r["path"] == path])
                print(f"    {path:<30} mean {np.mean(gap):6.3f} %  worst {np.max(gap):6.3f} %  ({seconds:.2f} s)")


if __name__ == "__main__":
    main()
