"""Make the pycanon golden files that tests/test_audit.py compares relanon's audit with.

pycanon (a published checker of k-anonymity, l-diversity and re-identification risk) pins old
numpy and pandas releases, so it is kept out of the project's environment: this script runs in a
virtual environment of its own and writes small CSV tables plus the answers pycanon gives on them.

    python -m venv /tmp/pycanon-venv
    /tmp/pycanon-venv/bin/pip install pycanon==1.3.6
    /tmp/pycanon-venv/bin/python tests/golden/make_pycanon_golden.py

The tables have no missing values: pycanon groups with pandas' default ``dropna=True``, which
drops the rows relanon counts as a class of their own.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from pycanon import anonymity, metrics

HERE = Path(__file__).parent / "pycanon"
SEED = 20240611


def make_tables(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    """Random tables with a mix of integer, text and decimal columns and a skew that leaves small classes."""
    n = 240
    patients = pd.DataFrame(
        {
            "age_band": rng.choice([20, 30, 40, 50, 60, 70], n, p=[0.1, 0.2, 0.25, 0.25, 0.15, 0.05]),
            "sex": rng.choice(["F", "M"], n),
            "zip3": rng.choice(["750", "751", "752", "920", "930"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
            "bmi_band": rng.choice([18.5, 22.25, 27.5, 32.75], n),
            "disease": rng.choice(["flu", "asthma", "diabetes", "cancer", "covid", "none"], n),
        }
    )
    m = 400
    employees = pd.DataFrame(
        {
            "grade": rng.integers(1, 4, m),
            "site": rng.choice(["north", "south", "east", "west"], m, p=[0.55, 0.25, 0.15, 0.05]),
            "hired": rng.choice([2015, 2017, 2019, 2021, 2023], m),
            "salary_band": rng.choice(["low", "mid", "high"], m, p=[0.5, 0.35, 0.15]),
        }
    )
    q = 120
    survey = pd.DataFrame(
        {
            "region": rng.choice(["a", "b", "c"], q),
            "children": rng.poisson(1.2, q),
            "opinion": rng.choice(["yes", "no", "maybe"], q),
        }
    )
    return {"patients": patients, "employees": employees, "survey": survey}


CASES = [
    ("patients", ["age_band", "sex"], "disease"),
    ("patients", ["age_band", "sex", "zip3"], "disease"),
    ("patients", ["age_band", "sex", "zip3", "bmi_band"], "disease"),
    ("employees", ["grade", "site"], "salary_band"),
    ("employees", ["grade", "site", "hired"], "salary_band"),
    ("survey", ["region"], "opinion"),
    ("survey", ["region", "children"], "opinion"),
]


def answers(data: pd.DataFrame, quasi_identifiers: list[str], sensitive: str) -> dict:
    sizes = metrics.sizes_ec(data, quasi_identifiers)
    return {
        "k_anonymity": int(anonymity.k_anonymity(data, quasi_identifiers)),
        "max_rir": float(metrics.max_rir(data, quasi_identifiers)),
        "average_rir": float(metrics.average_rir(data, quasi_identifiers)),
        "n_ec": int(sizes["n_ec"]),
        "min_ec": int(sizes["min_ec"]),
        "max_ec": int(sizes["max_ec"]),
        "mean_ec": float(sizes["mean_ec"]),
        "l_diversity": int(anonymity.l_diversity(data, quasi_identifiers, [sensitive])),
    }


def main() -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    tables = make_tables(np.random.default_rng(SEED))
    for name, frame in tables.items():
        frame.to_csv(HERE / f"{name}.csv", index=False)
    cases = []
    for name, quasi_identifiers, sensitive in CASES:
        # pycanon reads the same CSV text the test reads, so both see identical values
        data = pd.read_csv(HERE / f"{name}.csv")
        cases.append(
            {"table": f"{name}.csv", "quasi_identifiers": quasi_identifiers, "sensitive": sensitive, **answers(data, quasi_identifiers, sensitive)}
        )
    golden = {
        "made_by": "tests/golden/make_pycanon_golden.py",
        "versions": {"pycanon": version("pycanon"), "pandas": pd.__version__, "numpy": np.__version__},
        "cases": cases,
    }
    (HERE / "answers.json").write_text(json.dumps(golden, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases and {len(tables)} tables to {HERE}")


if __name__ == "__main__":
    main()
