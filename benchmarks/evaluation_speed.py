"""The evaluation of the demo's release, table by table: wall seconds of each, CPU seconds of the whole.

The script builds the demo database (``relanon.datasets.hospital``), anonymizes it with seed 0 and
evaluates the release as ``relanon demo`` does (:func:`relanon.evaluate` with the metrics seed). It
prints each table's evaluation (wall seconds, from the run's progress), the evaluation's wall and
CPU seconds, and the md5 of the evaluation's JSON (``metrics.json`` of the report): two versions of the
code that measure the same figures print the same md5.

    python benchmarks/evaluation_speed.py            # scale 1
    python benchmarks/evaluation_speed.py 10         # any scale
"""

from __future__ import annotations

import hashlib
import sys
import time

from relanon import anonymize, datasets, evaluate
from relanon.common.progress import Progress
from relanon.metrics.scenarios import METRICS_SEED


def main(scale: float) -> None:
    schema, database = datasets.hospital(scale=scale, seed=0)
    result = anonymize(schema, database, random_state=0, progress=False)
    progress = Progress(quiet=True)
    wall, cpu = time.perf_counter(), time.process_time()
    evaluation = evaluate(schema, database, result.tables, result, random_state=METRICS_SEED, progress=progress)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"scale {scale:g}: " + ", ".join(f"{name} {len(frame):,}" for name, frame in database.items()))
    for label, seconds in progress.timings.items():
        print(f"  {label:<30} {seconds:7.2f} s wall")
    print(f"  {'evaluation':<30} {wall:7.2f} s wall, {cpu:.2f} s CPU")
    print(f"  metrics md5 {hashlib.md5(evaluation.to_json().encode()).hexdigest()}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
