"""Speed and memory of the whole multi-table run on the demo database at several scales.

Each scale runs in its own process. For every table and link the script prints the wall time and the
peak of memory allocated during that step (tracemalloc, which numpy reports to), then the total time,
the process's peak resident memory and the growth ratios between scales.

    python benchmarks/pipeline_speed.py            # scales 1 and 10
    python benchmarks/pipeline_speed.py 1 10 30    # any scales
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import tracemalloc

CHILD = "--child"


def measure(scale: float) -> dict:
    from relanon import anonymize, datasets
    from relanon.common.progress import Progress, _Step

    class MeasuredStep(_Step):
        def __enter__(self):
            tracemalloc.reset_peak()
            return super().__enter__()

        def __exit__(self, *exc):
            peaks[self.label] = tracemalloc.get_traced_memory()[1]
            return super().__exit__(*exc)

    class MeasuredProgress(Progress):
        def step(self, label, total=None, unit="steps"):
            return MeasuredStep(self, label, total, unit)

    peaks: dict[str, int] = {}
    schema, database = datasets.hospital(scale=scale, seed=0)
    rows = {name: len(frame) for name, frame in database.items()}
    tracemalloc.start()
    progress = MeasuredProgress(quiet=True)
    start = time.perf_counter()
    anonymize(schema, database, random_state=0, progress=progress)
    total = time.perf_counter() - start
    tracemalloc.stop()
    return {
        "scale": scale,
        "rows": rows,
        "steps": {label: (seconds, peaks.get(label, 0)) for label, seconds in progress.timings.items()},
        "total": total,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(scales: list[float]) -> None:
    results = []
    for scale in scales:
        done = subprocess.run([sys.executable, __file__, CHILD, str(scale)], capture_output=True, text=True)
        if done.returncode:
            print(f"scale {scale}: failed\n{done.stderr}")
            break
        result = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(result)
        print(f"\nscale {scale:g}: " + ", ".join(f"{name} {n:,}" for name, n in result["rows"].items()))
        for label, (seconds, peak) in result["steps"].items():
            print(f"  {label:<60} {seconds:7.1f} s  {peak / 2**20:8.0f} MB peak")
        total_rows = sum(result["rows"].values())
        print(
            f"  {'total':<60} {result['total']:7.1f} s  {result['max_rss_mb']:8.0f} MB max resident"
            f"  ({total_rows / result['total']:,.0f} rows/s)"
        )
    for before, after in zip(results, results[1:], strict=False):
        rows = sum(after["rows"].values()) / sum(before["rows"].values())
        print(
            f"\nscale {before['scale']:g} -> {after['scale']:g}: rows x{rows:.1f}, "
            f"time x{after['total'] / before['total']:.1f}, memory x{after['max_rss_mb'] / before['max_rss_mb']:.1f}"
        )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == CHILD:
        print(json.dumps(measure(float(sys.argv[2]))))
    else:
        main([float(s) for s in sys.argv[1:]] or [1.0, 10.0])
