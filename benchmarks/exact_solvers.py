"""Exact solvers of one group of ``linear_sum``'s blocked solver compared on the same groups: CPU time, totals.

A group is children and as many slots (a parent repeated once per child it receives); its exact solve is the
assignment of minimum total distance (:func:`relanon.multitable.linking.repair.solve_exact`). The groups are the
first-pass blocks of the blocked solver (``repair._balanced_blocks`` of the children and their slots, at most
``--sizes`` children each). Solvers, each single-threaded and timed with the cost matrix it needs:

- ``lsa``: scipy's ``linear_sum_assignment`` on the dense child x slot distance matrix;
- ``emd``: POT's network simplex (``ot.emd``) on the child x distinct parent distance matrix, each parent's
  capacity its slots in the group (as :func:`~relanon.multitable.linking.repair.solve_exact` runs it);
- ``mcf``: OR-Tools' ``SimpleMinCostFlow`` (cost scaling) on every child x distinct parent arc
  (:func:`relanon.multitable.linking.transport.solve_transport`: integer costs, the longest arc costing ``2**24``).

Every solver must reach the same total distance on every block, the script stops with an error otherwise: ``lsa``
and ``emd`` within a relative 1e-9; ``mcf`` is exact on its integer costs, each arc's rounded by at most half a unit
(``longest / 2**25``), so its total may exceed the optimum by up to ``children * longest / 2**24`` (the largest
excess seen relative to the total is printed). A solver whose CPU time on one instance and size passes ``--cap``
seconds is stopped there (the line says after how many blocks); its ratio to the fastest is taken on the blocks it
solved.

Instances: the demo's own ``linear_sum`` links above 10,000 children (``--demo SCALE``, rebuilt as
``benchmarks/transport_solvers.py`` does: the demo anonymized, released children and parents in the link's parent
space), saved links (``--links``: ``.npz`` files of ``children``, ``parents``, ``counts``, as transport_solvers
saves them) and the clustered instances of ``benchmarks/linear_sum_speed.py`` (``--clustered``, ``--seeds``).

Figures are CPU seconds (``time.process_time``), stable on a loaded machine; blocks are solved one at a time,
every solver on a block before the next block.

    python benchmarks/exact_solvers.py                                  # demo at scale 1 and 32,000 clustered
    python benchmarks/exact_solvers.py --demo 10 --clustered            # the 10x demo's links (rebuilt)
    python benchmarks/exact_solvers.py --demo 0 --links /tmp/links10/*.npz --sizes 150 500 --cap 60
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from linear_sum_speed import clustered
from ot.lp import emd
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from transport_solvers import demo_links, instance

from relanon.multitable.linking import repair
from relanon.multitable.linking.transport import COST_RESOLUTION, solve_transport

SOLVERS = ("lsa", "emd", "mcf")
SIZES = (150, 500, 1000, 2000)
TOLERANCE = 1e-9


def solve_lsa(children, slot_points, owners) -> np.ndarray:
    """The slot of each child: ``linear_sum_assignment`` on the child x slot matrix."""
    return linear_sum_assignment(cdist(children, slot_points))[1]


def solve_emd(children, slot_points, owners) -> np.ndarray:
    """The parent (an ``owners`` label) of each child: the network simplex on the child x parent matrix."""
    labels, first, capacity = np.unique(owners, return_index=True, return_counts=True)
    plan, log = emd(np.ones(len(children)), capacity.astype(np.float64), cdist(children, slot_points[first]),
                    numItermax=repair.EMD_ITERATIONS, log=True)
    if log["result_code"] != 1:
        raise AssertionError(f"ot.emd stopped short of the optimum: {log['warning']}")
    return labels[plan.argmax(axis=1)]


def solve_mcf(children, slot_points, owners) -> np.ndarray:
    """The parent (an ``owners`` label) of each child: OR-Tools' min-cost flow on every child x parent arc."""
    labels, first, capacity = np.unique(owners, return_index=True, return_counts=True)
    n, m = len(children), len(labels)
    tails, heads = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)
    return labels[solve_transport(n, capacity, tails, heads, cdist(children, slot_points[first]).ravel())]


SOLVE = {"lsa": solve_lsa, "emd": solve_emd, "mcf": solve_mcf}


def total(solver: str, children, slot_points, owners, result) -> float:
    """The total distance of a solver's result (slots for ``lsa``, parent labels otherwise), after checking it
    gives every parent as many children as it has slots."""
    if solver == "lsa":
        if not np.array_equal(np.sort(result), np.arange(len(children))):
            raise AssertionError("lsa: not a permutation of the slots")
        points = slot_points[result]
    else:
        labels, first, capacity = np.unique(owners, return_index=True, return_counts=True)
        position = np.searchsorted(labels, result)
        if not np.array_equal(np.bincount(position, minlength=len(labels)), capacity):
            raise AssertionError(f"{solver}: a parent does not receive its slots' number of children")
        points = slot_points[first][position]
    return float(np.linalg.norm(children - points, axis=1).sum())


def check(totals: dict, block, name: str, excess: list) -> None:
    """Fail unless the solvers' totals on ``block`` agree (module docstring); keeps ``mcf``'s largest excess in
    ``excess[0]``."""
    floats = [value for solver, value in totals.items() if solver != "mcf"]
    low = min(totals.values())
    rounding = 0.0
    if "mcf" in totals:
        children, slot_points, owners = block
        _, first = np.unique(owners, return_index=True)
        rounding = len(children) * float(cdist(children, slot_points[first]).max()) / COST_RESOLUTION
        if floats:
            excess[0] = max(excess[0], (totals["mcf"] - min(floats)) / min(floats))
    if (any(value - low > TOLERANCE * low for value in floats)
            or ("mcf" in totals and totals["mcf"] - low > rounding + TOLERANCE * low)):
        raise AssertionError(f"{name}: the exact solvers disagree: " + ", ".join(f"{s} {v!r}" for s, v in totals.items())
                             + f" (mcf's rounding allows {rounding:.3g})")


def groups(children, parents, counts, size: int) -> list:
    """The first-pass blocks of the blocked solver: (children, slot points, owners) of each."""
    owner = np.repeat(np.arange(len(parents)), counts)
    slot_points = parents[owner]
    return [(children[members], slot_points[slots], owner[slots])
            for members, slots in repair._balanced_blocks(children, slot_points, max_size=size)]


def compare(label: str, children, parents, counts, size: int, solvers, cap: float) -> None:
    """Every solver on every block of ``size`` of one instance; prints one line per solver."""
    blocks = groups(children, parents, counts, size)
    for solver in solvers:  # warm-up: imports and first calls outside the clock
        SOLVE[solver](*blocks[0])
    seconds = {solver: [] for solver in solvers}
    running = list(solvers)
    excess = [0.0]  # mcf's largest total above the others', relative to it
    for number, block in enumerate(blocks):
        if not running:
            break
        totals = {}
        for solver in running:
            start = time.process_time()
            result = SOLVE[solver](*block)
            seconds[solver].append(time.process_time() - start)
            totals[solver] = total(solver, *block, result)
        check(totals, block, f"{label} size {size} block {number} ({len(block[0])} children)", excess)
        running = [solver for solver in running if sum(seconds[solver]) <= cap]
    sizes = np.array([len(b[0]) for b in blocks])
    distinct = np.array([len(np.unique(b[2])) for b in blocks])
    print(f"{label}  size {size}: {len(blocks)} blocks of {sizes.min()}-{sizes.max()} children, distinct parents "
          f"per block median {np.median(distinct):.0f} ({distinct.min()}-{distinct.max()})", flush=True)
    fastest = min(solvers, key=lambda s: np.median(seconds[s]))
    for solver in solvers:
        spent = np.array(seconds[solver])
        common = min(len(spent), len(seconds[fastest]))  # the same blocks: every solver starts at the first
        ratio = spent[:common].sum() / sum(seconds[fastest][:common])
        stopped = f"  stopped after {len(spent)} of {len(blocks)} blocks (cap {cap:g} s)" if len(spent) < len(blocks) else ""
        print(f"    {solver:<4} median {1000 * np.median(spent):9.2f} ms  total {spent.sum():8.3f} s  "
              f"x{ratio:5.2f} of {fastest}{stopped}", flush=True)
    if "mcf" in solvers and len(solvers) > 1:
        print(f"    mcf's total above the exact one: at most {excess[0]:.1e} of it", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=float, default=1.0, metavar="SCALE",
                        help="the demo's linear_sum links at this scale (0: none)")
    parser.add_argument("--links", type=Path, nargs="*", default=[], help="saved links (.npz)")
    parser.add_argument("--clustered", type=int, nargs="*", default=[32_000], metavar="N",
                        help="clustered instances of about N children (none if given without a value)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    parser.add_argument("--cap", type=float, default=30.0, help="CPU seconds per solver, instance and size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        saved = list(args.links) + (demo_links(args.demo, Path(folder)) if args.demo else [])
        for path in saved:
            children, parents, counts = instance(str(path), 0)
            for size in args.sizes:
                compare(f"{path.stem} ({len(children):,} children)", children, parents, counts, size, args.solvers,
                        args.cap)
    for n in args.clustered:
        for seed in args.seeds:
            children, parents, counts = clustered(n, seed)
            for size in args.sizes:
                compare(f"clustered {len(children):,} seed {seed}", children, parents, counts, size, args.solvers,
                        args.cap)


if __name__ == "__main__":
    main()
