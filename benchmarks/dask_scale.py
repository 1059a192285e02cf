"""The Dask engine on the demo database at several scales, or on one table of many rows: time, and peak
memory of each worker and of the client.

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
    python benchmarks/dask_scale.py --table-rows 3000000 10000000 30000000   # one table, through batches

With ``--table-rows``, the database is one table of people (:data:`ONE_TABLE`: sex, age, birth date, zip
code, income, BMI, smoker, blood type; income of as many distinct values as rows) of each number of rows,
generated part by part from seeds, and cut into batches by the engine: the client's peak memory should
not grow with the rows.

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
ONE_TABLE = """
relanon: 1
name: people
seed: 0
tables:
  people:
    primary_key: person_id
    individual: true
    columns:
      sex: categorical
      age: integer
      birth_date: datetime
      zip_code: categorical
      income: continuous
      bmi: continuous
      smoker: boolean
      blood_type: categorical
    quasi_identifiers: [sex, blood_type]
    anonymize: {method: avatar, k: 20}
"""


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


def generate_table(rows: int, folder: Path) -> dict:
    """Write the table of :data:`ONE_TABLE` with ``rows`` rows as partitioned Parquet in ``folder``, part by
    part (each from its own seed: the same rows whatever the memory); returns its rows."""
    import numpy as np
    import pandas as pd

    from relanon.stores.partitioned import write_part

    blood = np.array(["O+", "A+", "B+", "AB+", "O-", "A-", "B-", "AB-"], dtype=object)
    for i, start in enumerate(range(0, rows, PART_ROWS)):
        n = min(PART_ROWS, rows - start)
        rng = np.random.default_rng([0, i])
        age = rng.integers(0, 100, size=n)
        female = rng.random(n) < 0.51
        birth = np.datetime64("2026-01-01") - (age * 365.25 + rng.integers(0, 365, size=n)).astype("timedelta64[D]")
        income = np.round(rng.lognormal(10 + 0.01 * np.minimum(age, 60), 0.6, size=n), 2)
        bmi = np.round(np.clip(18 + 0.1 * np.minimum(age, 65) + 3.5 * rng.standard_normal(n), 13, 55), 1)
        bmi[rng.random(n) < 0.1] = np.nan
        frame = pd.DataFrame({
            "person_id": np.arange(start + 1, start + n + 1, dtype=np.int64),
            "sex": np.where(female, "F", "M").astype(object),
            "age": age.astype(np.int64),
            "birth_date": birth.astype("datetime64[ns]"),
            "zip_code": (10_000 + 10 * rng.integers(0, 5_000, size=n)).astype(np.int64),
            "income": income,
            "bmi": bmi,
            "smoker": rng.random(n) < np.where(age >= 15, 0.25, 0.0),
            "blood_type": blood[rng.choice(len(blood), size=n, p=[.38, .34, .09, .03, .07, .06, .02, .01])],
        })
        write_part(frame, folder / "people", i)
    (folder / "schema.json").write_text(json.dumps({"rows": {"people": rows}}))
    return {"people": rows}


def run(folder: Path, workers: int, batch_size: int | None, block_size: int | None, out: Path, live: bool) -> dict:
    from relanon import datasets
    from relanon.common.progress import Progress
    from relanon.distributed import anonymize_dataset
    from relanon.schema.model import load_schema

    schema = load_schema(ONE_TABLE) if (folder / "people").is_dir() else datasets.hospital_schema()
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
    elif argv[0] == "table":
        print(json.dumps(generate_table(int(argv[1]), Path(argv[2]))))
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
    parser.add_argument("--table-rows", type=int, nargs="+", default=None,
                        help="instead of the demo, one table of each number of rows (the scales are not used)")
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
        sizes = [("table", n, f"table-{n}", f"one table of {n:,}") for n in args.table_rows or []] or \
            [("generate", scale, f"scale-{scale:g}", f"scale {scale:g}") for scale in args.scales]
        for kind, scale, name, label in sizes:
            folder = base / name
            started = time.perf_counter()
            reused = (folder / "schema.json").is_file()
            rows = json.loads((folder / "schema.json").read_text())["rows"] if reused else _in_child(kind, scale, folder)
            print(f"{label}: {sum(rows.values()):,} rows ({', '.join(f'{n} {r:,}' for n, r in rows.items())}); "
                  + ("reused" if reused else f"generated in {time.perf_counter() - started:.0f} s"), flush=True)
            for workers in args.workers:
                figures = _in_child("run", folder, workers, args.batch_size or "default",
                                  args.block_size or "default", base / f"release-{name}-{workers}",
                                  "live" if args.steps else "quiet", live=args.steps)
                peaks = ", ".join(f"{g:.2f}" for g in figures["worker_gb"])
                print(f"  {workers} worker{'s' if workers > 1 else ''}: {figures['seconds']:.0f} s, peak memory per "
                      f"worker {peaks} GB, client {figures['client_gb']:.2f} GB (batches of {figures['batch_size']:,}; "
                      f"load {os.getloadavg()[0]:.1f})", flush=True)
                if args.steps:
                    for label, seconds in figures["steps"].items():
                        print(f"      {label}: {seconds} s")
                shutil.rmtree(base / f"release-{name}-{workers}", ignore_errors=True)
            if not keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
