"""Time and memory of single-table avatarization at 10,000, 100,000 and 1,000,000 rows.

The table is mixed: 5 continuous columns (correlated), 5 categorical columns with 3 to 50 levels,
10 % missing values in two columns (one continuous, one categorical). Each size runs in a fresh
process so that its peak memory (maximum resident set size, interpreter and libraries included) is
its own.

    python benchmarks/avatar_speed.py                 # 10k, 100k, 1M
    python benchmarks/avatar_speed.py --sizes 10000 100000
    python benchmarks/avatar_speed.py --private        # with the rare-value rule (min_count = k) and two
                                                       # sensitive columns (x0, c1) decoded leaving them out
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

LEVELS = (3, 5, 12, 25, 50)
TYPES = {**{f"x{i}": "continuous" for i in range(5)}, **{f"c{i}": "categorical" for i in range(5)}}


def mixed_table(n: int, seed: int = 0) -> pd.DataFrame:
    """A mixed table with correlated columns and missing values."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 2))
    columns = {}
    for i in range(5):
        columns[f"x{i}"] = latent @ rng.normal(size=2) + rng.normal(scale=0.5, size=n) + 10 * i
    for i, levels in enumerate(LEVELS):
        score = latent[:, i % 2] + rng.normal(scale=1.0, size=n)
        cuts = np.quantile(score, np.linspace(0, 1, levels + 1)[1:-1])
        columns[f"c{i}"] = np.array([f"level_{j:02d}" for j in range(levels)])[np.searchsorted(cuts, score)]
    frame = pd.DataFrame(columns)
    frame["x4"] = frame["x4"].mask(rng.random(n) < 0.10)
    frame["c4"] = frame["c4"].mask(rng.random(n) < 0.10)
    return frame


def run_one(n: int, private: bool = False) -> dict:
    from relanon.engine.avatar import avatarize

    table = mixed_table(n)
    options = {"min_counts": 10, "sensitive": ["x0", "c1"]} if private else {}
    start = time.perf_counter()
    avatars, _ = avatarize(table, TYPES, k=10, random_state=0, name="bench", **options)
    seconds = time.perf_counter() - start
    assert len(avatars) == n
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rows": n, "seconds": seconds, "rows_per_second": n / seconds, "peak_mb": peak_mb}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--private", action="store_true", help="rare-value rule and two sensitive columns")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_one(args.child, args.private)))
        return
    results = []
    print(f"{'rows':>10} {'seconds':>9} {'rows/s':>10} {'peak MB':>9} {'time ratio':>11} {'size ratio':>11}")
    for n in args.sizes:
        command = [sys.executable, __file__, "--child", str(n), *(["--private"] if args.private else [])]
        out = subprocess.run(command, capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        ratio, size_ratio = "", ""
        if results:
            ratio = f"{result['seconds'] / results[-1]['seconds']:.1f}x"
            size_ratio = f"{n / results[-1]['rows']:.0f}x"
        results.append(result)
        print(
            f"{n:>10,} {result['seconds']:>9.2f} {result['rows_per_second']:>10,.0f} {result['peak_mb']:>9.0f} "
            f"{ratio:>11} {size_ratio:>11}",
            flush=True,
        )


if __name__ == "__main__":
    main()
