"""Read and write throughput of every data store, on the demo database (10x by default: 895,000 rows).

    python benchmarks/io_speed.py                 # scale 10; starts a throwaway PostgreSQL server
    python benchmarks/io_speed.py --scale 1
    python benchmarks/io_speed.py --postgres postgresql://me@localhost/bench   # a server of yours

Writing goes through :func:`relanon.write_database` (atomic folder or file; for PostgreSQL one
transaction with COPY and the primary and foreign keys), reading through :func:`relanon.read_database`
(typed and checked by the schema, as every command reads). Each is timed ``--repeat`` times and the
best run is printed, in rows per second over all tables. With ``--postgres`` the benchmark writes
into a new schema ``relanon_io_speed_<pid>`` of that database and drops it at the end. Without it,
the server binaries of the operating system (``apt-get install postgresql``) run a temporary server,
as the tests do (``tests/postgres_server.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from relanon import datasets
from relanon.stores.base import masked
from relanon.stores.io import read_database, write_database

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from postgres_server import ServerUnavailable, temporary_server  # noqa: E402


def best(repeat: int, step) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times)


@contextlib.contextmanager
def postgres(url: str | None):
    """A URL to write into (a schema of its own, dropped at the end), or None when no server runs."""
    if url:
        schema = f"relanon_io_speed_{os.getpid()}"
        try:
            yield f"{url}{'&' if '?' in url else '?'}schema={schema}"
        finally:
            import sqlalchemy

            from relanon.stores.sql import engine_for

            engine, _ = engine_for(url)
            with engine.begin() as connection:
                connection.execute(sqlalchemy.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            engine.dispose()
        return
    try:
        with temporary_server() as server:
            server.new_database("bench")
            yield server.url("bench", query="schema=demo")
    except ServerUnavailable as exc:
        print(f"PostgreSQL: skipped ({exc})")
        yield None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=10.0, help="demo size (1 = 89,000 rows)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per measure; the best is printed")
    parser.add_argument("--postgres", help="a PostgreSQL URL to use instead of a temporary server")
    args = parser.parse_args()

    start = time.perf_counter()
    schema, database = datasets.hospital(scale=args.scale, seed=0)
    rows = sum(len(frame) for frame in database.values())
    print(f"demo database at scale {args.scale:g}: {rows:,} rows in {len(database)} tables "
          f"(generated in {time.perf_counter() - start:.1f} s)")
    print(f"{'store':<12} {'write s':>8} {'rows/s':>12} {'read s':>8} {'rows/s':>12}")

    def measure(label: str, location, fmt=None) -> None:
        written = best(args.repeat, lambda: write_database(database, location, schema, format=fmt, overwrite=True))
        read = best(args.repeat, lambda: read_database(location, schema))
        print(f"{label:<12} {written:8.2f} {rows / written:12,.0f} {read:8.2f} {rows / read:12,.0f}", flush=True)

    with tempfile.TemporaryDirectory(prefix="relanon-io-") as folder:
        measure("CSV", Path(folder) / "csv", "csv")
        measure("Parquet", Path(folder) / "parquet", "parquet")
        measure("SQLite", Path(folder) / "demo.sqlite", "sqlite")
    with postgres(args.postgres) as url:
        if url is not None:
            measure("PostgreSQL", url)
            print(f"(PostgreSQL at {masked(url)})")


if __name__ == "__main__":
    main()
