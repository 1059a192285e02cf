"""How faithful avatars are: combinations, missing shares, supports, distributions, correlations, privacy.

Prints, for the demo database (every table, in a full run) and for generated single tables:

- the share of avatars whose categorical-like values never occur together in the original (all
  columns, worst pair), beside the same share between two halves of the original;
- missing shares per column, original vs avatars, and the share of rows where two columns are
  missing together;
- per numeric column: the share of avatar values outside the original set (columns with few
  values), values outside the original range, the standard-deviation ratio;
- the Hellinger distance per column (shared binning) with its noise floor, the correlation
  difference with its floor;
- privacy: hidden rate, distance to closest, row and column direct-match protection.

    python benchmarks/fidelity.py                     # demo + generated tables
    python benchmarks/fidelity.py --only twelve --ncp 5 10 auto --k 5 10 20
    python benchmarks/fidelity.py --only demo --matrix

Generated tables:

- ``twelve``: twelve columns, seven categorical or few-valued (region and the city it determines,
  sex, smoker, education, children, blood type) and five numeric with moderate correlations
  (0.15-0.40) and one strongly correlated pair (0.9);
- ``clinical``: doses from a small set that depends on the drug, two lab values missing together
  (15 %, more often for older people), one missing alone, a month column (36 values), a weight with
  a long tail (65-320 kg), a count of stays.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import numpy as np
import pandas as pd

from relanon.engine.avatar import avatarize
from relanon.engine.factor_space import NUMERIC_KINDS, numeric_values
from relanon.metrics.privacy import privacy
from relanon.metrics.signal import combination_metrics, correlation_difference_ratio, hellinger_metric

# --------------------------------------------------------------------------- generated tables

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


# --------------------------------------------------------------------------- measures


def measure(original: pd.DataFrame, avatars: pd.DataFrame, types: dict, pairing=None, weights=None) -> dict:
    """Every figure of the module docstring for one table."""
    out = {}
    combos = {m.name: m for m in combination_metrics(original, avatars, types)}
    if combos:
        c, p = combos["impossible_combinations"], combos["impossible_pairs"]
        out["impossible all"] = f"{c.value:.1f} % (halves {c.floor:.1f})"
        out["impossible pair"] = f"{p.value:.1f} % (halves {p.floor:.1f}, {p.breakdown['pair']})"
    missing = {c: (original[c].isna().mean(), avatars[c].isna().mean()) for c in types if original[c].isna().any()}
    if missing:
        out["missing %"] = ", ".join(f"{c} {100 * o:.1f}/{100 * a:.1f}" for c, (o, a) in missing.items())
        out["max missing gap"] = f"{100 * max(abs(o - a) for o, a in missing.values()):.2f} points"
        together = []
        for a, b in itertools.combinations(missing, 2):
            o = (original[a].isna() & original[b].isna()).mean()
            r = (avatars[a].isna() & avatars[b].isna()).mean()
            together.append(f"{a}&{b} {100 * o:.1f}/{100 * r:.1f}")
        if together:
            out["missing together %"] = ", ".join(together)
    off_support, outside, std_ratio = [], [], []
    for c, kind in types.items():
        if kind not in NUMERIC_KINDS:
            continue
        o, a = numeric_values(original[c], kind), numeric_values(avatars[c], kind)
        o_present, a_present = o[~np.isnan(o)], a[~np.isnan(a)]
        distinct = np.unique(o_present)
        if len(distinct) <= 50:
            off_support.append(f"{c} {100 * (~np.isin(a_present, distinct)).mean():.1f}")
        n_out = int(((a_present < o_present.min()) | (a_present > o_present.max())).sum())
        if n_out:
            outside.append(f"{c} {n_out}")
        if o_present.std() > 0:
            std_ratio.append(f"{c} {a_present.std() / o_present.std():.2f}")
    if off_support:
        out["off-support % (<=50 values)"] = ", ".join(off_support)
    out["outside range"] = ", ".join(outside) or "none"
    out["std ratio"] = ", ".join(std_ratio)
    h = hellinger_metric(original, avatars, types)
    per = h.breakdown["per_column"]
    floors = h.breakdown.get("floor_per_column", {})
    out["hellinger mean"] = f"{h.value:.3f} (floor {h.floor or float('nan'):.3f}, passed {h.passed})"
    out["hellinger"] = ", ".join(f"{c} {v:.3f}/{floors.get(c, float('nan')):.3f}" for c, v in per.items())
    corr = correlation_difference_ratio(original, avatars, types, floor=True)
    if corr.floor is not None:
        out["correlation difference"] = f"{corr.value:.1f} (floor {corr.floor:.1f}, passed {corr.passed})"
    found = {m.name: m.value for m in privacy(original, avatars, types, pairing=pairing, weights=weights, random_state=0)}
    out["privacy"] = ", ".join(f"{k} {found[k]:.3g}" for k in
                               ("hidden_rate", "local_cloaking", "distance_to_closest", "row_direct_match_protection",
                                "column_direct_match_protection") if k in found)
    return out


def show(title: str, figures: dict) -> None:
    print(f"\n== {title}")
    for key, value in figures.items():
        print(f"  {key:<30} {value}")
    sys.stdout.flush()


def generated(name: str, ncps, ks) -> None:
    frame, types = (twelve_columns(), TWELVE_TYPES) if name == "twelve" else (clinical(), CLINICAL_TYPES)
    for ncp, k in itertools.product(ncps, ks):
        start = time.perf_counter()
        kwargs = {} if ncp == "default" else {"ncp": int(ncp) if ncp.isdigit() else ncp}
        result = avatarize(frame, types, k=k, random_state=0, name=name, **kwargs)
        seconds = time.perf_counter() - start
        avatars = result.avatars
        figures = {"rows": f"{len(frame):,}", "seconds": f"{seconds:.2f}"}
        if hasattr(result, "ncp"):
            figures["axes"] = result.ncp
        figures.update(measure(frame, avatars, types, pairing=result.pairing))
        show(f"{name} (ncp {ncp}, k {k})", figures)


def demo(matrix: bool, scale: float) -> None:
    from relanon import anonymize, datasets
    from relanon.metrics.scenarios import evaluate

    schema, database = datasets.hospital(scale=scale, seed=0)
    start = time.perf_counter()
    result = anonymize(schema, database, random_state=schema.seed, progress=False)
    print(f"demo (scale {scale}): run {time.perf_counter() - start:.1f} s")
    for table in schema:
        types = {c.name: c.type for c in table.released_columns}
        weights = {c.name: c.weight for c in table.released_columns}
        release = result.releases[table.name]
        avatars = result.tables[table.name].reset_index(drop=True)
        original = database[table.name].reset_index(drop=True)
        figures = {"rows": f"{len(original):,}", "ncp": release.ncp}
        figures.update(measure(original, avatars, types, pairing=release.original_position, weights=weights))
        show(f"demo {table.name}", figures)
    if matrix:
        evaluation = evaluate(schema, database, result.tables, result, progress=False)
        print()
        print(evaluation.privacy_matrix_text())
        print(evaluation.signal_matrix_text())
        failures = [(view, m.name, round(m.value, 3), m.floor) for _, view, m in evaluation.metrics if m.passed is False]
        print(f"failures: {len(failures)}")
        for failure in failures:
            print("  ", failure)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["demo", "twelve", "clinical"], nargs="+", default=["demo", "twelve", "clinical"])
    parser.add_argument("--ncp", nargs="+", default=["default"], help="ncp values for the generated tables")
    parser.add_argument("--k", type=int, nargs="+", default=[10])
    parser.add_argument("--matrix", action="store_true", help="also evaluate the demo (privacy and signal matrices)")
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args(argv)
    for name in args.only:
        if name == "demo":
            demo(args.matrix, args.scale)
        else:
            generated(name, args.ncp, args.k)


if __name__ == "__main__":
    main()
