"""The ``linear_sum`` link alone: the Dask engine's blocks against one machine, on the same instance.

The instance is the one of ``benchmarks/linear_sum_speed.py`` (children around parents in a 5-dimension
factor space, allocated counts). One machine solves it with
:func:`relanon.multitable.linking.match_linear_sum`; the Dask engine (:func:`relanon.distributed.blocked.solve_blocks`)
solves it from partitioned Parquet on a ``LocalCluster`` (parts of 200,000 children and slots, as
batches), in blocks of ``--block`` children. Printed: the time of each, their ratio, and the total
distances (the Dask engine's relative to one machine's, and both against a lower bound of the optimum).

    python benchmarks/dask_link.py                       # 500,000 children, 2 workers
    python benchmarks/dask_link.py --sizes 1000000 --workers 1 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from linear_sum_speed import clustered, lower_bound  # noqa: E402

from relanon.distributed import blocked  # noqa: E402
from relanon.distributed.cluster import cluster  # noqa: E402
from relanon.distributed.links import PARENT, part  # noqa: E402
from relanon.distributed.work import read_parts, write  # noqa: E402
from relanon.multitable import linking  # noqa: E402
from relanon.multitable.linking import blocks  # noqa: E402

PART_ROWS = 200_000
POS = blocked.POS


def write_instance(children, parents, counts, base: Path, seed: int) -> tuple[int, int, np.ndarray]:
    """Children and slots as parts of the working folder, as the engine lays them out; returns the parts
    of each and the sample of children the cell tree is fitted on."""
    rng = np.random.default_rng(seed)
    slot_parent = np.repeat(np.arange(len(parents)), counts)
    share = min(1.0, blocked.SAMPLE_POINTS / len(children))
    samples = []
    for name, coords, ids, column in (("children", children, np.arange(len(children)), POS),
                                      ("slots", parents[slot_parent], slot_parent, PARENT)):
        pieces = np.array_split(np.arange(len(coords)), max(1, -(-len(coords) // PART_ROWS)))
        for i, rows in enumerate(pieces):
            frame = pd.DataFrame({column: ids[rows]})
            frame = pd.concat([frame, pd.DataFrame(coords[rows], columns=[f"c{j}" for j in range(coords.shape[1])])],
                              axis=1)
            write(frame, base / name, i)
            if name == "children":
                samples.append(coords[rows][blocks.sample_rows(len(rows), share, rng)])
        if name == "children":
            n_children = len(pieces)
        else:
            n_slots = len(pieces)
    return n_children, n_slots, np.vstack(samples)


def distributed(children, parents, counts, workers: int, block: int, seed: int = 0) -> tuple[float, np.ndarray]:
    base = Path(tempfile.mkdtemp(prefix="relanon-dask-link-"))
    try:
        n_children, n_slots, sample = write_instance(children, parents, counts, base, seed)
        with cluster(workers=workers) as client:
            client.run(lambda: None)  # workers up before the clock starts
            started = time.perf_counter()
            where, n_parts = blocked.solve_blocks(client, base, n_children, n_slots, len(children), sample,
                                                  np.random.SeedSequence(seed), block)
            seconds = time.perf_counter() - started
        pairs = read_parts([part(base / where, i) for i in range(n_parts)], [POS, PARENT])
        assignment = np.full(len(children), -1)
        assignment[pairs[POS].to_numpy()] = pairs[PARENT].to_numpy()
        return seconds, assignment
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500_000])
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--block", type=int, default=blocked.BLOCK_CHILDREN, help="children per block")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    for n in args.sizes:
        children, parents, counts = clustered(n)
        bound = lower_bound(children, parents, counts)
        started = time.perf_counter()
        local = linking.match_linear_sum(children, parents, counts, random_state=0)
        local_seconds = time.perf_counter() - started
        local_total = linking.total_distance(children, parents, local)
        print(f"{len(children):,} children: one machine {local_seconds:.1f} s, total {local_total:,.0f} "
              f"({local_total / bound - 1:+.2%} above the lower bound)", flush=True)
        for workers in args.workers:
            seconds, assignment = distributed(children, parents, counts, workers, args.block)
            assert (assignment >= 0).all() and np.array_equal(np.bincount(assignment, minlength=len(parents)), counts)
            total = linking.total_distance(children, parents, assignment)
            print(f"  Dask, {workers} worker{'s' if workers > 1 else ''}, blocks of {args.block:,}: {seconds:.1f} s "
                  f"({seconds / local_seconds:.2f} x one machine), total {total / local_total - 1:+.3%} against one "
                  f"machine ({total / bound - 1:+.2%} above the lower bound; load {os.getloadavg()[0]:.1f})",
                  flush=True)


if __name__ == "__main__":
    main()
