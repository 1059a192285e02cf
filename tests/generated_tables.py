"""Generated single tables for the fidelity tests and ``benchmarks/fidelity.py``.

- :func:`twelve_columns`: twelve columns, seven categorical or few-valued (region and the city
  that determines it, sex, smoker, education, children, blood type) and five numeric with moderate
  correlations (0.15-0.40) and one strongly correlated pair (0.9);
- :func:`clinical`: doses from a small set that depends on the drug, two lab values missing
  together (more often for older people), one missing alone, a month column (36 values), a weight
  with a long tail (65-320 kg), a count of stays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

REGIONS = {f"region_{r}": [f"city_{r}{c}" for c in "abc"] for r in "ABCDEF"}
TWELVE_TYPES = {
    "age": "integer", "income": "continuous", "weight_kg": "continuous", "height_cm": "continuous",
    "systolic": "continuous", "region": "categorical", "city": "categorical", "sex": "categorical",
    "smoker": "boolean", "education": "categorical", "children": "integer", "blood_type": "categorical",
}


def twelve_columns(n: int = 5_000, seed: int = 0) -> pd.DataFrame:
    """The twelve-column table: moderate correlations, one strong pair, a city that fixes its region."""
    rng = np.random.default_rng(seed)
    r = np.array([
        [1.00, 0.35, 0.25, 0.15, 0.20],
        [0.35, 1.00, 0.20, 0.30, 0.15],
        [0.25, 0.20, 1.00, 0.40, 0.35],
        [0.15, 0.30, 0.40, 1.00, 0.90],
        [0.20, 0.15, 0.35, 0.90, 1.00],
    ])
    z = rng.multivariate_normal(np.zeros(5), r, size=n)
    region = rng.choice(list(REGIONS), n, p=[0.3, 0.2, 0.15, 0.15, 0.1, 0.1])
    city = np.array([REGIONS[g][i] for g, i in zip(region, rng.choice(3, n, p=[0.6, 0.3, 0.1]), strict=True)])
    education = np.array(["primary", "secondary", "bachelor", "master"])[
        np.searchsorted([-0.8, 0.3, 1.2], z[:, 1] + rng.normal(0, 0.7, n))
    ]
    return pd.DataFrame({
        "age": np.clip(np.rint(50 + 15 * z[:, 0]), 18, 95).astype("int64"),
        "income": np.round(np.exp(10.3 + 0.45 * z[:, 1]), 2),
        "weight_kg": np.round(np.clip(65 + 18 * np.exp(0.55 * z[:, 2] + 0.3), 65, 320), 1),
        "height_cm": np.round(170 + 9 * z[:, 3], 1),
        "systolic": np.round(125 + 14 * z[:, 4], 0),
        "region": region,
        "city": city,
        "sex": np.where(z[:, 3] + rng.normal(0, 1.2, n) > 0, "M", "F"),
        "smoker": (z[:, 0] * -0.4 + rng.normal(0, 1, n)) > 0.9,
        "education": education,
        "children": np.clip(rng.poisson(np.exp(0.4 + 0.25 * z[:, 0])), 0, 6).astype("int64"),
        "blood_type": rng.choice(["O+", "A+", "B+", "AB+", "O-", "A-", "B-", "AB-"], n,
                                 p=[0.36, 0.33, 0.09, 0.03, 0.07, 0.07, 0.03, 0.02]),
    })


DRUGS = {"amoxicillin": [250, 500, 1000], "ibuprofen": [200, 400, 600], "metformin": [500, 850, 1000],
         "atorvastatin": [10, 20, 40, 80], "lisinopril": [5, 10, 20], "insulin": [2.5, 5, 7.5, 10]}
CLINICAL_TYPES = {
    "age": "integer", "sex": "categorical", "drug": "categorical", "dose_mg": "continuous",
    "lab_a": "continuous", "lab_b": "continuous", "lab_c": "continuous", "month": "datetime",
    "admitted": "datetime", "weight_kg": "continuous", "stays": "integer",
}


def clinical(n: int = 8_000, seed: int = 1) -> pd.DataFrame:
    """Doses from a drug's small set, two labs missing together, a monthly date, a long-tailed weight."""
    rng = np.random.default_rng(seed)
    age = np.clip(np.rint(rng.normal(55, 17, n)), 18, 99).astype("int64")
    drug = rng.choice(list(DRUGS), n, p=[0.25, 0.25, 0.15, 0.15, 0.1, 0.1])
    dose = np.array([rng.choice(DRUGS[d]) for d in drug], dtype=np.float64)
    lab_a = np.round(4 + 0.03 * age + rng.normal(0, 1, n), 2)
    lab_b = np.round(lab_a * 10 + rng.normal(0, 5, n), 1)
    together = rng.random(n) < 0.05 + 0.2 * (age > 60)
    months = pd.date_range("2021-01-01", periods=36, freq="MS")
    return pd.DataFrame({
        "age": age,
        "sex": rng.choice(["F", "M"], n),
        "drug": drug,
        "dose_mg": dose,
        "lab_a": np.where(together, np.nan, lab_a),
        "lab_b": np.where(together, np.nan, lab_b),
        "lab_c": np.where(rng.random(n) < 0.05, np.nan, np.round(rng.gamma(2, 2, n), 2)),
        "month": months[rng.integers(0, 36, n)],
        "admitted": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 1500, n), unit="D"),
        "weight_kg": np.round(np.clip(60 + rng.lognormal(2.6, 0.55, n), 65, 320), 1),
        "stays": np.clip(rng.poisson(1 + age / 40), 0, 8).astype("int64"),
    })
