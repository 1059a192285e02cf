"""What avatarizing in batches costs in utility and privacy, and what it saves in memory.

One table of the demo (patients at scale 30: 300,000 people, k = 20 as the demo schema sets it) is
avatarized whole, as the local engine does, and in random batches of several sizes, as the Dask engine
does (:mod:`relanon.engine.batches`: one factor space fitted from the statistics of all the rows, reduced
over ten partitions; neighbours searched within each batch). Each configuration runs in a process of
its own and prints:

- signal: Hellinger mean over the columns, correlation difference ratio, impossible combinations
  (share of avatars whose categorical-like values never occur together in the original);
- privacy: hidden rate and local cloaking (10,000 originals sampled, each against every avatar), and
  the distance to closest;
- the axes of the neighbour search, the time and the peak memory (resident set) of the process.

    python benchmarks/batching_cost.py                   # scale 30, batch sizes 300k (whole) .. 10k
    python benchmarks/batching_cost.py --scale 10 --batches 100000 25000 10000 --seeds 0 1
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from functools import reduce
from pathlib import Path

import numpy as np
import pandas as pd

from relanon import datasets
from relanon.engine import space_statistics as stats
from relanon.engine.avatar import RunHooks, avatarize, avatarize_in_run
from relanon.engine.batches import assign_batches, batch_count, partition_generator, rows_searched
from relanon.engine.columns import numeric_values
from relanon.metrics.privacy import privacy
from relanon.metrics.signal import signal

TABLE = "patients"


def _space(frame, types, weights, k_rows):
    parts = np.array_split(np.arange(len(frame)), 10)
    cap = stats.distinct_cap(len(frame))
    summaries = reduce(lambda a, b: stats.merge_summaries(a, b, cap=cap),
                       [stats.summarize(frame.iloc[p], types, weights, cap=cap, table=TABLE) for p in parts])
    statistics = stats.finish_statistics(summaries, _medians(frame, summaries))
    coder = stats.coder(statistics, TABLE)
    moments = reduce(stats.merge_moments, [stats.coded_moments(frame.iloc[p], coder) for p in parts])
    return stats.space_from_moments(types, statistics, moments, weights=weights, name=TABLE, rows_searched=k_rows)


def _medians(frame, summaries):
    out = {}
    for name, summary in summaries.items():
        if isinstance(summary, stats.NumericSummary) and summary.values is None:
            values = numeric_values(frame[name], summary.kind)
            values = values[~np.isnan(values)]
            found = stats.select_ranks(lambda lo, hi, b, v=values: stats.bin_counts(v, lo, hi, b),
                                       lambda lo, hi, v=values: stats.values_between(v, lo, hi),
                                       stats.median_ranks(summary), summary.low, summary.high)
            out[name] = stats.median_of(summary, found)
    return out


def run(path: str, batch_size: int, seed: int) -> dict:
    schema = datasets.hospital_schema()
    table = schema[TABLE]
    types = {c.name: c.type for c in table.released_columns}
    weights = {c.name: c.weight for c in table.released_columns}
    frame = pd.read_parquet(path)
    k = table.anonymize.k_or_default
    started = time.perf_counter()
    n = len(frame)
    n_batches = batch_count(n, batch_size)
    if n_batches == 1:
        result = avatarize(frame, types, k=k, weights=weights, random_state=seed, name=TABLE)
        avatars, pairing, axes = result.avatars, np.asarray(result.pairing), result.ncp
    else:
        space = _space(frame, types, weights, rows_searched(n, n_batches))
        root = np.random.SeedSequence(seed)
        batch = assign_batches(0, n, n_batches, partition_generator(root, "batches", 0))
        parts, pairs = [], []
        for b in range(n_batches):
            rows = np.flatnonzero(batch == b)
            result = avatarize_in_run(frame.iloc[rows].reset_index(drop=True), types, RunHooks(space=space), k=k,
                                      weights=weights, random_state=partition_generator(root, "avatars", b), name=TABLE)
            parts.append(result.avatars)
            pairs.append(rows[np.asarray(result.pairing)])
        avatars, pairing, axes = pd.concat(parts, ignore_index=True), np.concatenate(pairs), space.n_components_
    seconds = time.perf_counter() - started
    figures = {m.name: m.value for m in signal(frame, avatars, types)}
    figures.update({m.name: m.value for m in privacy(frame, avatars, types, pairing=pairing, weights=weights,
                                                     random_state=0)})
    return {"batch": batch_size, "batches": n_batches, "seed": seed, "axes": axes, "seconds": seconds,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=30)
    parser.add_argument("--batches", type=int, nargs="+", default=None, help="batch sizes (default: whole .. 10,000)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    _, database = datasets.hospital(scale=args.scale, seed=0)
    frame = database[TABLE]
    sizes = args.batches or [len(frame), 150_000, 100_000, 50_000, 20_000, 10_000]
    print(f"{TABLE}: {len(frame):,} rows; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    columns = ["batch", "batches", "seed", "axes", "hellinger_mean", "correlation_difference_ratio",
               "impossible_combinations", "hidden_rate", "local_cloaking", "distance_to_closest", "seconds", "peak_mb"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / f"{TABLE}.parquet")
        frame.to_parquet(path)
        del database, frame
        context = multiprocessing.get_context("spawn")
        for size in sizes:
            for seed in args.seeds:
                with context.Pool(1) as pool:
                    row = pool.apply(run, (path, size, seed))
                rows.append(row)
                print("  ".join(f"{c}={row.get(c, float('nan')):.4g}" if isinstance(row.get(c), float)
                                else f"{c}={row.get(c)}" for c in columns), f"(load {os.getloadavg()[0]:.1f})",
                      flush=True)
    table = pd.DataFrame(rows)[columns]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.groupby(["batch", "batches", "axes"], sort=False).mean(numeric_only=True).drop(columns="seed").round(3))


if __name__ == "__main__":
    sys.exit(main())
