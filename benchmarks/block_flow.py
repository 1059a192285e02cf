"""One block of a Dask ``linear_sum`` link, solved with and without the minimum-cost flow.

The Dask engine cuts a link into blocks of ``BLOCK_CHILDREN`` children and solves each with
:func:`relanon.multitable.linking.match_linear_sum` and the settings of the whole link
(:func:`relanon.multitable.linking.blocked_settings` and :func:`relanon.multitable.linking.uses_flow`).
This solves one block (the instance of ``benchmarks/linear_sum_speed.py``, ``--children`` children) with the
block size and repair passes of a link of ``--link`` children, once without the flow and once with it, and
prints the wall and CPU seconds (CPU: every thread of this process) and the total distance of each.

    python benchmarks/block_flow.py                                # a block of 200,000 of a 1,000,000-child link
    python benchmarks/block_flow.py --children 100000 --link 3000000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from linear_sum_speed import clustered  # noqa: E402

from relanon.distributed.blocked import BLOCK_CHILDREN  # noqa: E402
from relanon.multitable import linking  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--children", type=int, default=BLOCK_CHILDREN, help="children of the block")
    parser.add_argument("--link", type=int, default=1_000_000, help="children of the whole link (its settings)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    children, parents, counts = clustered(args.children, seed=args.seed)
    size, passes = linking.blocked_settings(args.link)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; a block of {len(children):,} children "
          f"with the settings of a link of {args.link:,} (blocks of {size}, {passes} repair passes; the flow "
          f"{'runs' if linking.uses_flow(args.link) else 'does not run'} there)", flush=True)
    for flow in (False, True):
        wall, cpu = time.perf_counter(), time.process_time()
        chosen = linking.match_linear_sum(children, parents, counts, random_state=args.seed, block_size=size,
                                          repair_passes=passes, flow=flow)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"  {'with' if flow else 'without'} the flow: {wall:.1f} s wall, {cpu:.1f} s CPU, total distance "
              f"{linking.total_distance(children, parents, chosen):,.1f}", flush=True)


if __name__ == "__main__":
    main()
