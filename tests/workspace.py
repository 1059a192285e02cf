"""A small database in a fresh folder, and a snapshot of a folder, for the command-line tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

SCHEMA = """relanon: 1
name: small
tables:
  people:
    primary_key: person_id
    individual: true
    columns: {age: integer, sex: categorical, city: categorical}
    quasi_identifiers: [age, sex]
  visits:
    primary_key: visit_id
    foreign_keys:
      - {column: person_id, references: people}
    columns: {cost: continuous, reason: categorical}
"""


def people_frame(n=12) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"person_id": range(1, n + 1), "age": rng.integers(20, 70, n),
                         "sex": rng.choice(["F", "M"], n), "city": rng.choice(["Lyon", "Paris", "Nice"], n)})


def make_visits(n=30, people=12) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"visit_id": range(100, 100 + n), "person_id": rng.integers(1, people + 1, n),
                         "cost": rng.integers(10, 90, n) / 2, "reason": rng.choice(["flu", "check"], n)})


def make_workspace(root: Path) -> Path:
    data = root / "data"
    data.mkdir(parents=True)
    people_frame().to_csv(data / "people.csv", index=False)
    make_visits().to_csv(data / "visits.csv", index=False)
    (root / "schema.yaml").write_text(SCHEMA)
    return root


def snapshot(root: Path) -> dict:
    """Every entry under ``root`` (hidden ones too) with the hash of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
        for p in sorted(root.rglob("*"))
    }


def edit_csv(ws, table, change):
    path = ws / "data" / f"{table}.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    change(frame).to_csv(path, index=False)
