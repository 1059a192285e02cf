"""Where the time of the demo's whole run goes, step by step, against the physical limit of each step.

Each scale runs in its own process. The script times, with wall and CPU seconds: the demo database's
construction, every step of :func:`relanon.anonymize` (each table's avatarization, each link, anchoring,
rules), the evaluation (:func:`relanon.evaluate`, as ``relanon demo`` runs it) and the report's rendering
(:func:`relanon.present.report.render_report`). In the same process it then measures the floor of the two
kinds of step that carry the work:

- avatarize: a plain FAMD (:class:`relanon.FactorSpace` fitted on the table's enriched original rows and
  projecting them) and a plain k-nearest-neighbour query in its first ``ncp`` axes
  (:func:`relanon.engine.neighbours.self_neighbours`, the table's ``k``);
- link: the link's factor space (:mod:`relanon.multitable.linking.candidates`) and each released child's
  nearest released parent (:func:`relanon.engine.neighbours.cross_neighbours`, ``k = 1``): the relaxation
  without the counts, under which no ``linear_sum`` solver can go; and, for a ``linear_sum`` link, a
  minimum-cost flow on the same kind of arcs the link solves (the candidate arcs of
  :func:`relanon.multitable.linking.candidates.candidate_arcs` around the released assignment, then
  :func:`relanon.multitable.linking.transport.solve_transport`), the time of one exact solve on its graph.

It prints each step's seconds and its ratio to its floor. CPU seconds are stable on a loaded machine,
wall seconds are not.

    python benchmarks/pipeline_speed.py            # scales 1 and 10
    python benchmarks/pipeline_speed.py 1 10 30    # any scales
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

CHILD = "--child"


class Clock:
    """Wall and CPU seconds of a block."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def avatarize_floor(release) -> float:
    """Seconds of a plain FAMD of the table's enriched rows and a plain kNN query in its first ncp axes."""
    from relanon import FactorSpace
    from relanon.engine.neighbours import self_neighbours

    with Clock() as clock:
        space = FactorSpace(release.enriched_types, weights=release.enriched_weights, random_state=0)
        coords = space.fit(release.enriched_original).transform(release.enriched_original)
        ncp = release.ncp if isinstance(release.ncp, int) else coords.shape[1]
        self_neighbours(coords[:, :max(1, ncp)], k=release.k)
    return clock.wall


def released_link(schema, link, original, releases):
    """A link's released children and released parents in the link's parent space
    (:mod:`relanon.multitable.linking.candidates`, as the run placed them), and the position of each child's
    released parent (-1 for a child without one)."""
    import numpy as np
    import pandas as pd

    from relanon.multitable.linking.candidates import child_side, parent_space, project

    child, parent = releases[link.child], releases[link.parent]
    table = schema[link.parent]
    columns = {c.name: c.type for c in table.released_columns if c.name in parent.frame.columns}
    space = parent_space(table, original[link.parent], columns, np.random.default_rng(0))
    children = project(space, child_side(link, original, child, table, columns), columns)
    parents = project(space, parent.frame, columns)
    keys = pd.Index(parent.frame[table.primary_key]).get_indexer(child.frame[link.column])
    return children, parents, keys


def link_floor(schema, link, original, releases) -> tuple[float, float | None]:
    """Seconds of the link's factor space and each released child's nearest released parent; and of the
    candidate arcs and one minimum-cost flow on them (``linear_sum`` links whose children are all linked)."""
    import numpy as np

    from relanon.engine.neighbours import cross_neighbours
    from relanon.multitable.linking.candidates import candidate_arcs
    from relanon.multitable.linking.transport import solve_transport

    with Clock() as clock:
        children, parents, keys = released_link(schema, link, original, releases)
        if children.shape[1] and len(parents):
            cross_neighbours(parents, children, k=1)
    if link.method != "linear_sum" or (keys < 0).any() or not children.shape[1]:
        return clock.wall, None
    counts = np.bincount(keys, minlength=len(parents))
    with Clock() as flow:
        solve_transport(len(children), counts, *candidate_arcs(children, parents, counts, keys))
    return clock.wall, flow.wall


def measure(scale: float) -> dict:
    from relanon import anonymize, datasets, evaluate
    from relanon.common.progress import Progress
    from relanon.metrics.scenarios import METRICS_SEED
    from relanon.present.report import render_report
    from relanon.schema.graph import all_links

    steps = {}
    with Clock() as clock:
        schema, database = datasets.hospital(scale=scale, seed=0)
    steps["build the demo database"] = (clock.wall, clock.cpu, None, None)
    progress = Progress(quiet=True)
    with Clock() as run:
        result = anonymize(schema, database, random_state=0, progress=progress)
    original = result.original
    for label, seconds in progress.timings.items():
        floor = flow = None
        if label.endswith(": avatarize"):
            release = result.releases[label.split(":")[0]]
            if release.enriched_types and release.k:
                floor = avatarize_floor(release)
        elif label.startswith("link "):
            name, column = label.split()[1].split(".", 1)
            link = next(lk for lk in all_links(schema) if lk.child == name and lk.column == column)
            if link.method != "original_order":
                floor, flow = link_floor(schema, link, original, result.releases)
        steps[label] = (seconds, None, floor, flow)
    steps["anonymize (whole)"] = (run.wall, run.cpu, None, None)
    with Clock() as clock:
        evaluation = evaluate(schema, database, result.tables, result, random_state=METRICS_SEED, progress=False)
    steps["evaluate"] = (clock.wall, clock.cpu, None, None)
    with Clock() as clock:
        render_report(evaluation, progress=False)
    steps["render the report"] = (clock.wall, clock.cpu, None, None)
    return {"scale": scale, "rows": {name: len(frame) for name, frame in database.items()}, "steps": steps,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(scales: list[float]) -> None:
    for scale in scales:
        done = subprocess.run([sys.executable, __file__, CHILD, str(scale)], capture_output=True, text=True)
        if done.returncode:
            print(f"scale {scale}: failed\n{done.stderr}")
            break
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"\nscale {scale:g}: " + ", ".join(f"{name} {n:,}" for name, n in result["rows"].items()))
        print(f"  {'step':<62} {'wall s':>8} {'cpu s':>8} {'floor s':>8} {'x floor':>8} {'flow s':>8} {'x flow':>8}")
        for label, (wall, cpu, floor, flow) in result["steps"].items():
            cpu_text = f"{cpu:8.1f}" if cpu is not None else f"{'':>8}"
            floor_text = f"{floor:8.2f} {wall / floor:8.1f}" if floor else f"{'':>8} {'':>8}"
            flow_text = f" {flow:8.2f} {wall / flow:8.1f}" if flow else ""
            print(f"  {label:<62} {wall:8.1f} {cpu_text} {floor_text}{flow_text}")
        total = sum(result["steps"][s][0] for s in ("build the demo database", "anonymize (whole)", "evaluate",
                                                    "render the report"))
        cpu = sum(result["steps"][s][1] for s in ("build the demo database", "anonymize (whole)", "evaluate",
                                                  "render the report"))
        print(f"  {'end to end (build, anonymize, evaluate, render)':<62} {total:8.1f} {cpu:8.1f}"
              f"   {result['max_rss_mb']:,.0f} MB max resident")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == CHILD:
        print(json.dumps(measure(float(sys.argv[2]))))
    else:
        main([float(s) for s in sys.argv[1:]] or [1.0, 10.0])
