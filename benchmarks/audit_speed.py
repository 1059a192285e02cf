"""How fast the release audit and the de-associative methods run on large tables.

    python benchmarks/audit_speed.py            # 1,000,000 rows
    python benchmarks/audit_speed.py --rows 200000

Prints the time of each step, and its ratio to a plain pandas ``groupby(...).size()`` over the same
quasi-identifiers (the least any exact class count can cost), plus the peak memory of the process.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pandas as pd

from relanon.audit import (
    audit_database,
    k_anonymity,
    l_diversity,
    reidentification_risk,
)
from relanon.engine.deassociate import anatomize, bucketize
from relanon.schema.model import load_schema

QUASI_IDENTIFIERS = ["age", "sex", "zip", "admitted"]


def people(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """A table with 4 quasi-identifiers of different dtypes, a few missing values and a sensitive column."""
    age = pd.array(rng.integers(18, 95, n), dtype="Int64")
    age[rng.random(n) < 0.02] = pd.NA
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "age": age,
            "sex": rng.choice(["F", "M"], n),
            "zip": rng.choice([f"{z:05d}" for z in range(0, 99999, 97)], n),
            "admitted": pd.Timestamp("2023-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D"),
            "diagnosis": rng.choice(
                ["flu", "cold", "asthma", "diabetes", "cancer", "covid", "none"],
                n,
                p=[0.3, 0.25, 0.15, 0.12, 0.08, 0.06, 0.04],
            ),
        }
    )


def timed(label: str, baseline: float | None, step):
    start = time.perf_counter()
    result = step()
    seconds = time.perf_counter() - start
    ratio = f"  ({seconds / baseline:5.1f} x groupby)" if baseline else ""
    print(f"{label:<58} {seconds:7.2f} s{ratio}")
    return result, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    rows = parser.parse_args().rows
    rng = np.random.default_rng(0)
    table = people(rows, rng)
    print(f"{rows:,} rows, quasi-identifiers: {', '.join(QUASI_IDENTIFIERS)}")
    _, base = timed(
        "pandas groupby(dropna=False).size() (baseline)",
        None,
        lambda: table.groupby(QUASI_IDENTIFIERS, dropna=False).size(),
    )
    result, _ = timed("k_anonymity(k=5)", base, lambda: k_anonymity(table, QUASI_IDENTIFIERS, k=5))
    print(f"    {result.summary}")
    timed("reidentification_risk", base, lambda: reidentification_risk(table, QUASI_IDENTIFIERS))
    timed("l_diversity(diagnosis, l=2)", base, lambda: l_diversity(table, QUASI_IDENTIFIERS, "diagnosis", l=2))

    schema = load_schema(
        {
            "relanon": 1,
            "tables": {
                "patients": {
                    "primary_key": "id",
                    "individual": True,
                    "columns": {
                        "age": "integer",
                        "sex": "categorical",
                        "zip": "categorical",
                        "admitted": "datetime",
                        "diagnosis": "categorical",
                    },
                    "quasi_identifiers": ["age", "sex"],
                    "sensitive": ["diagnosis"],
                },
                "visits": {
                    "primary_key": "visit_id",
                    "foreign_keys": [{"column": "patient_id", "references": "patients"}],
                    "columns": {"ward": "categorical", "cost": "continuous"},
                    "quasi_identifiers": ["ward", "cost"],
                },
            },
        }
    )
    visits = pd.DataFrame(
        {
            "visit_id": np.arange(2 * rows),
            "patient_id": rng.integers(0, rows, 2 * rows),
            "ward": rng.choice(list("ABCDEFGH"), 2 * rows),
            "cost": rng.integers(1, 50, 2 * rows) * 10.0,
        }
    )
    database = {"patients": table, "visits": visits}
    report, _ = timed(
        f"audit_database ({rows:,} patients, {2 * rows:,} visits, 3 views)",
        base,
        lambda: audit_database(schema, database, k=5, l=2),
    )
    for view in report.views:
        print(f"    {view.name}: {view.k_anonymity.summary}")
    timed("anatomize(diagnosis, l=3)", base, lambda: anatomize(table, "diagnosis", l=3, key="id", random_state=0))
    timed(
        "bucketize(4 quasi-identifiers, diagnosis, k=5)",
        base,
        lambda: bucketize(table, QUASI_IDENTIFIERS, "diagnosis", k=5, random_state=0),
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of the process: {peak:,.0f} MB")


if __name__ == "__main__":
    main()
