"""The Dask engine on the demo database at several scales: time, and peak memory of each worker and of the client.

For each scale, the demo database is generated in a process of its own and written as partitioned
Parquet (one directory per table, parts of at most 500,000 rows), then each number of workers runs
``relanon.distributed.anonymize_dataset`` on a fresh ``LocalCluster`` in another process, which prints
the run's time, its steps, and the peak resident memory of each worker process and of the client
(``getrusage``: the largest resident set the process ever held). Peak memory per worker should be
bounded by the batch and block sizes, not grow with the database.

    python benchmarks/dask_scale.py                          # scales 10 30 100, 2 workers
    python benchmarks/dask_scale.py 1 10 --workers 1 2       # time against the number of workers
    python benchmarks/dask_scale.py 3 --workers 1 2 --batch-size 50000 --block-size 50000   # the same, smaller
    python benchmarks/dask_scale.py 100 --data-dir /big/tmp  # where the generated data goes (about 0.5 GB at 100)

With ``--data-dir``, a database generated there before (``scale-100/schema.json`` present) is reused and
kept, so the generation (minutes at scale 100) is paid once; without it, everything goes to a temporary
folder removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PART_ROWS = 500_000
GIB = 2**30


def generate(scale: float, folder: Path) -> dict:
    """Write the demo at ``scale`` as partitioned Parquet in ``folder``; returns the rows per table."""
    import numpy as np

    from relanon import datasets
    from relanon.stores.partitioned import write_part

    schema, database = datasets.hospital(scale=scale, seed=0)
    rows = {}
    for table in schema:
        frame = database.pop(table.name)
        rows[table.name] = len(frame)
        n_parts = max(1, -(-len(frame) // PART_ROWS))
        for i, positions in enumerate(np.array_split(np.arange(len(frame)), n_parts)):
            write_part(frame.iloc[positions].reset_index(drop=True), folder / table.source_name, i)
        del frame
    (folder / "schema.json").write_text(json.dumps({"rows": rows}))
    return rows


def run(folder: Path, workers: int, batch_size: int | None, block_size: int | None, out: Path, live: bool) -> dict:
    from relanon import datasets
    from relanon.common.progress import Progress
    from relanon.distributed import anonymize_dataset

    schema = datasets.hospital_schema()
    progress = Progress(quiet=not live, bars=False)  # live: one line per step on standard error, as it ends
    started = time.perf_counter()
    result = anonymize_dataset(schema, folder, out, workers=workers, batch_size=batch_size, block_size=block_size, random_state=0,
                               progress=progress, overwrite=True)
    seconds = time.perf_counter() - started
    client = result.peaks.pop("client")
    return {"seconds": seconds, "rows": sum(result.tables.values()), "client_gb": client / GIB,
            "worker_gb": sorted(v / GIB for v in result.peaks.values()), "batch_size": result.batch_size,
            "steps": {label: round(t, 1) for label, t in result.timings.items()}}


def child(argv: list[str]) -> None:
    if argv[0] == "generate":
        print(json.dumps(generate(float(argv[1]), Path(argv[2]))))
    else:
        batch, block = (None if a == "default" else int(a) for a in argv[3:5])
        print(json.dumps(run(Path(argv[1]), int(argv[2]), batch, block, Path(argv[5]), argv[6] == "live")))


def _in_child(*args, live: bool = False) -> dict:
    """Run a step in a process of its own; ``live``: its standard error (the run's steps) goes straight through."""
    done = subprocess.run([sys.executable, __file__, "--child", *map(str, args)], stdout=subprocess.PIPE,
                          stderr=None if live else subprocess.PIPE, text=True)
    if done.returncode:
        sys.stderr.write((done.stderr or "")[-4000:])
        raise SystemExit(f"the child process failed ({args[0]})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scales", type=float, nargs="*", default=[10, 30, 100])
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--batch-size", type=int, default=None, help="rows per batch (default: the engine's)")
    parser.add_argument("--block-size", type=int, default=None,
                        help="children per block of a linear_sum link (default: the engine's)")
    parser.add_argument("--data-dir", default=None, help="where the generated databases go (default: a temporary folder)")
    parser.add_argument("--steps", action="store_true", help="also print every step as it ends (standard error) and the time of each")
    args = parser.parse_args()
    keep = args.data_dir is not None
    base = Path(args.data_dir) if keep else Path(tempfile.mkdtemp(prefix="relanon-dask-scale-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; data in {base}", flush=True)
    try:
        for scale in args.scales:
            folder = base / f"scale-{scale:g}"
            started = time.perf_counter()
            reused = (folder / "schema.json").is_file()
            rows = json.loads((folder / "schema.json").read_text())["rows"] if reused else _in_child("generate", scale, folder)
            print(f"scale {scale:g}: {sum(rows.values()):,} rows ({', '.join(f'{n} {r:,}' for n, r in rows.items())}); "
                  + ("reused" if reused else f"generated in {time.perf_counter() - started:.0f} s"), flush=True)
            for workers in args.workers:
                figures = _in_child("run", folder, workers, args.batch_size or "default",
                                  args.block_size or "default", base / f"release-{scale:g}-{workers}",
                                  "live" if args.steps else "quiet", live=args.steps)
                peaks = ", ".join(f"{g:.2f}" for g in figures["worker_gb"])
                print(f"  {workers} worker{'s' if workers > 1 else ''}: {figures['seconds']:.0f} s, peak memory per "
                      f"worker {peaks} GB, client {figures['client_gb']:.2f} GB (batches of {figures['batch_size']:,}; "
                      f"load {os.getloadavg()[0]:.1f})", flush=True)
                if args.steps:
                    for label, seconds in figures["steps"].items():
                        print(f"      {label}: {seconds} s")
                shutil.rmtree(base / f"release-{scale:g}-{workers}", ignore_errors=True)
            if not keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
