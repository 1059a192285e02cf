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
from pathlib import Path

import numpy as np
import pandas as pd

from relanon.engine.avatar import avatarize
from relanon.engine.columns import NUMERIC_KINDS, numeric_values
from relanon.metrics.privacy import privacy
from relanon.metrics.signal import combination_metrics, correlation_difference_ratio, hellinger_metric

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from generated_tables import CLINICAL_TYPES, TWELVE_TYPES, clinical, twelve_columns  # noqa: E402

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
