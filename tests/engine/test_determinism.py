"""Same seed, same bytes: in separate processes, whatever their hash seed and thread count.

The database has what made runs differ before: text keys (released as random UUIDs), many
identical rows (ties in every distance), and a parent column with more categories than the dense
eigen-solver takes, so that the link's factor space comes from Lanczos iterations (whose start
vector was drawn from fresh entropy: 93 of 115,450 links changed between two runs on a real
database of baseball players).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from relanon.engine.factor_space import DENSE_LIMIT, FactorSpace

SCHEMA = """relanon: 1
name: ties
tables:
  people:
    primary_key: person
    individual: true
    columns: {city: categorical, sex: categorical, age: integer}
  visits:
    primary_key: visit
    foreign_keys:
      - {column: person, references: people, link: linear_sum}
    columns: {reason: categorical, cost: continuous, day: datetime}
  notes:
    primary_key: note
    foreign_keys:
      - {column: visit, references: visits, link: minimum_distance}
    columns: {kind: categorical}
"""


def tied_database(folder, n_people=2_600, seed=0):
    """Text keys, heavy ties, and a parent column of more than DENSE_LIMIT categories."""
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta"])
    people = pd.DataFrame({
        "person": [f"{w}-{i}x" for i, w in enumerate(rng.choice(words, n_people))],
        "city": [f"town {i}" for i in rng.permutation(n_people) % (DENSE_LIMIT + 100)],
        "sex": rng.choice(["F", "M"], n_people),
        "age": rng.choice([30, 40, 50], n_people),
    })
    n_visits = 2 * n_people
    visits = pd.DataFrame({
        "visit": [f"v{k:x}" for k in rng.permutation(10 * n_visits)[:n_visits]],
        "person": rng.choice(people["person"], n_visits),
        "reason": rng.choice(["flu", "check"], n_visits),
        "cost": rng.choice([10.0, 20.0], n_visits),
        "day": rng.choice(["2024-01-01", "2024-01-02"], n_visits),
    })
    notes = pd.DataFrame({
        "note": [f"n-{k}" for k in range(n_visits)],
        "visit": rng.choice(visits["visit"], n_visits),
        "kind": rng.choice(["a", "b"], n_visits),
    })
    folder.mkdir()
    for name, frame in (("people", people), ("visits", visits), ("notes", notes)):
        frame.to_csv(folder / f"{name}.csv", index=False)
    return folder


@pytest.mark.slow  # two runs of the command line in processes of their own; in one process: test_pipeline
def test_same_seed_gives_the_same_bytes_in_separate_processes(tmp_path):
    assert 2_600 > DENSE_LIMIT + 100  # every city exists, more categories than the dense solver takes
    data = tied_database(tmp_path / "data")
    schema = tmp_path / "schema.yaml"
    schema.write_text(SCHEMA)
    outputs = []
    for hash_seed, threads in (("1", "1"), ("2", None)):
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        env["PYTHONHASHSEED"] = hash_seed
        if threads:
            env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = threads
        out = tmp_path / f"out{hash_seed}"
        done = subprocess.run(
            [sys.executable, "-m", "relanon", "anonymize", str(schema), "--data", str(data), "--out", str(out),
             "--seed", "1", "-q", "--sample-size", "500", "--exit-zero"],
            capture_output=True, text=True, env=env, timeout=600,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(out)
    first, second = (_digests(out) for out in outputs)
    assert set(first) == {"people.csv", "visits.csv", "notes.csv", "schema.yaml", "release.json"}
    assert first == second
    report_first, report_second = (_digests(out.parent / f"{out.name}-report") for out in outputs)
    assert report_first == report_second  # the metrics and the pictures too
    people = pd.read_csv(outputs[0] / "people.csv")
    assert not set(people["person"]) & set(pd.read_csv(data / "people.csv")["person"])  # new keys


def _digests(folder) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}



def wide_table(n=3_000, seed=0):
    """Seven correlated numbers and 136 modalities: a coded covariance wide enough (143 columns) for
    LAPACK's blocked reduction, which shares its sums between BLAS threads."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 3))
    frame = pd.DataFrame({f"x{i}": base @ rng.normal(size=3) + rng.normal(size=n) for i in range(7)})
    for i, levels in enumerate((40, 30, 25, 20, 12, 9)):
        frame[f"c{i}"] = rng.integers(0, levels, n).astype(str)
    return frame, {c: "continuous" if c.startswith("x") else "categorical" for c in frame}


def city_table(n=30_000, seed=0):
    """A city of 12,000 levels (about 11,000 held): Lanczos iterations on vectors long enough for BLAS
    to split their dot products between threads."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"city": rng.integers(0, 12_000, n).astype(str), "x": rng.normal(size=n),
                          "y": rng.normal(size=n), "sex": rng.choice(["F", "M"], n)})
    return frame, {"city": "categorical", "x": "continuous", "y": "continuous", "sex": "categorical"}


@pytest.mark.parametrize("table, axes", [(wide_table, 30), (city_table, 5)], ids=["eigh", "lanczos"])
def test_the_factor_space_is_the_same_to_the_bit_with_one_or_two_blas_threads(table, axes):
    frame, types = table()
    spaces, coordinates = [], []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            space = FactorSpace(types, n_components=axes, random_state=0).fit(frame)
            spaces.append(space)
            coordinates.append(space.transform(frame))
    assert spaces[0].n_components_ == axes
    assert (len(spaces[0].feature_names_) > DENSE_LIMIT) == (table is city_table)
    assert np.array_equal(spaces[0].eigenvalues_, spaces[1].eigenvalues_)
    assert np.array_equal(spaces[0].components_, spaces[1].components_)
    assert np.array_equal(coordinates[0], coordinates[1])
