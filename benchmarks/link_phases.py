"""Where the time of a ``linear_sum`` link goes: the blocks and repairs, the candidate arcs, the minimum-cost flow.

Read through the progress the link reports (:func:`relanon.multitable.linking.match_linear_sum` with a recording
``progress`` callback): the last three calls mark the end of the blocks and repairs, of the candidate arcs and of
the flow. The shares of the arcs and of the flow in the time of the blocks are what the progress counts them for
(:data:`relanon.multitable.linking.assignment.ARCS_SHARE` and ``FLOW_SHARE``), so that its time left holds.
Instances: parents drawn in a 5-axis space, 3 children each, around their parent.

    python benchmarks/link_phases.py                     # 9,000 and 30,000 children
    python benchmarks/link_phases.py --children 60000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from relanon.multitable.linking import match_linear_sum
from relanon.multitable.linking.assignment import ARCS_SHARE, FLOW_SHARE


def phases(n_children: int, seed: int = 0) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    n_parents = n_children // 3
    parents = rng.normal(size=(n_parents, 5))
    counts = rng.multinomial(n_children, np.full(n_parents, 1 / n_parents))
    children = parents[np.repeat(np.arange(n_parents), counts)] + rng.normal(scale=0.3, size=(n_children, 5))
    marks = []
    start = time.perf_counter()
    match_linear_sum(children, parents, counts, random_state=1, n_jobs=1,
                     progress=lambda done, total: marks.append(time.perf_counter() - start))
    blocks, arcs, flow = marks[-3], marks[-2], marks[-1]
    return blocks, arcs - blocks, flow - arcs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, nargs="+", default=[9_000, 30_000])
    args = parser.parse_args()
    print(f"shares counted by the progress: arcs {ARCS_SHARE}, flow {FLOW_SHARE}")
    print(f"{'children':>9} {'blocks s':>9} {'arcs s':>8} {'flow s':>8} {'arcs share':>11} {'flow share':>11}")
    for n in args.children:
        blocks, arcs, flow = phases(n)
        print(f"{n:>9,} {blocks:>9.2f} {arcs:>8.2f} {flow:>8.2f} {arcs / blocks:>11.2f} {flow / blocks:>11.2f}")


if __name__ == "__main__":
    main()
