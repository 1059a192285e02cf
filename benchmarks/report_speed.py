"""What the demo spends outside anonymizing and measuring: the command line's start and the report.

In one process, the script builds the demo database (:func:`relanon.datasets.hospital`), anonymizes and
evaluates it as ``relanon demo`` does, then renders the report (:func:`relanon.present.report.render_report`)
and prints its wall seconds, the CPU seconds of this process and those of the worker processes that drew
pictures, and the number of pictures. It then times, each in a fresh interpreter, ``relanon --help`` and
the import of what ``relanon demo`` runs (:mod:`relanon.cli.commands`): the best of three, wall and CPU.

CPU seconds are stable on a loaded machine, wall seconds are not. Run it against two checkouts (the
``PYTHONPATH`` of each) to compare them.

    python benchmarks/report_speed.py            # scale 1
    python benchmarks/report_speed.py 10         # the demo at scale 10
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def best_of_three(arguments: list[str]) -> tuple[float, float]:
    """The least wall and CPU seconds of three runs of a fresh interpreter."""
    walls, cpus = [], []
    for _ in range(3):
        before, start = cpu_seconds(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run([sys.executable, *arguments], check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        cpus.append(cpu_seconds(resource.RUSAGE_CHILDREN) - before)
    return min(walls), min(cpus)


def main(scale: float) -> None:
    from relanon import anonymize, datasets, evaluate
    from relanon.metrics.scenarios import METRICS_SEED
    from relanon.present.report import REPORT_FILE, render_report

    schema, database = datasets.hospital(scale=scale, seed=0)
    result = anonymize(schema, database, progress=False)
    evaluation = evaluate(schema, database, result.tables, result, random_state=METRICS_SEED, progress=False)
    children, parent, start = (cpu_seconds(resource.RUSAGE_CHILDREN), cpu_seconds(resource.RUSAGE_SELF),
                               time.perf_counter())
    files = render_report(evaluation)
    wall = time.perf_counter() - start
    parent, children = cpu_seconds(resource.RUSAGE_SELF) - parent, cpu_seconds(resource.RUSAGE_CHILDREN) - children
    pictures = files[REPORT_FILE].count("<img")
    print(f"scale {scale:g}: the report with {pictures} pictures in {wall:.2f} s wall, {parent:.2f} s of CPU in this "
          f"process, {children:.2f} s in worker processes")
    for what, arguments in (("relanon --help", ["-m", "relanon", "--help"]),
                            ("import of relanon demo's modules", ["-c", "import relanon.cli.commands"])):
        wall, cpu = best_of_three(arguments)
        print(f"{what}: {wall:.2f} s wall, {cpu:.2f} s of CPU (best of 3)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
