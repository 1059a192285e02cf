"""Multivariate singling out: relanon's attack beside anonymeter's on the same releases, and on two references.

    python benchmarks/singling_out_multivariate.py --database demo --seed 2024 \\
        --anonymeter-python /tmp/anonymeter-venv/bin/python
    python benchmarks/singling_out_multivariate.py --database lahman --people 1000 --seed 0 \\
        --anonymeter-python /tmp/anonymeter-venv/bin/python

The database (``demo``: the embedded hospital at ``--scale``; ``lahman``: ``--people`` people of the Lahman
baseball database with their batting lines, as benchmarks/rare_generalization.py samples them) is split 80 / 20
into training and control people with relanon's holdout, the training part anonymized at default settings. Three
releases of every view of the individual tables are attacked:

- ``relanon``: the anonymized training people;
- ``independent``: as many rows as training, each column drawn on its own from the values of the training and
  control people together; it knows nobody (no row is anyone's), so an honest attack finds a risk near 0;
- ``copy``: the training people themselves; an attack worth its name finds a risk near 1.

On each, relanon's multivariate singling out (3 columns, the public :func:`relanon.metrics.attacks.singling_out`)
and, with ``--anonymeter-python``, anonymeter's ``SinglingOutEvaluator`` (benchmarks/anonymeter_runner.py, in its
own environment) with the same numbers of predicates and attempts. Printed per release: both risks with their 95 %
intervals and the parts they are made of (shares of the predicates singling out a training person, a control
person, and the control success each attack compares with). ``--cache DIR`` keeps the anonymized frames, so
that a second run attacks the same release without anonymizing again.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from attacks_vs_anonymeter import _for_anonymeter, view_frames  # noqa: E402

from relanon import anonymize, datasets  # noqa: E402
from relanon.metrics.attacks import singling_out  # noqa: E402
from relanon.metrics.attacks.holdout import split_database  # noqa: E402
from relanon.schema.validation import check_database  # noqa: E402

PARTS = ("release", "training", "control")


def database_of(args):
    if args.database == "lahman":
        from rare_generalization import lahman

        return lahman(args.people, args.seed)
    return datasets.hospital(scale=args.scale, seed=0)


def anonymized_frames(args) -> dict:
    """View name -> (release, training, control, types) of the anonymized training people (cached in ``--cache``)."""
    folder = None
    if args.cache:
        key = f"{args.database}-{args.people if args.database == 'lahman' else args.scale}-{args.seed}"
        folder = Path(args.cache) / key
        if (folder / "views.json").exists():
            names = json.loads((folder / "views.json").read_text(encoding="utf-8"))
            return {name: tuple(pd.read_parquet(folder / f"{i}.{part}.parquet") for part in PARTS) + (types,)
                    for i, (name, types) in enumerate(names.items())}
    schema, database = database_of(args)
    split = split_database(schema, check_database(schema, database), holdout=0.2, random_state=args.seed)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = anonymize(schema, split.training, random_state=args.seed, progress=False).tables
    print(f"{args.database}: {', '.join(f'{t} {s[0]:,} training / {s[1]:,} control' for t, s in split.sizes.items())}; "
          f"anonymized in {time.perf_counter() - started:.0f} s", flush=True)
    frames = {name: (r, t, c, types) for name, (r, t, c, types, _) in view_frames(schema, split, release).items()}
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        for i, parts in enumerate(frames.values()):
            for part, frame in zip(PARTS, parts[:3], strict=True):
                frame.to_parquet(folder / f"{i}.{part}.parquet", index=False)
        (folder / "views.json").write_text(json.dumps({n: f[3] for n, f in frames.items()}), encoding="utf-8")
    return frames


def independent(training: pd.DataFrame, control: pd.DataFrame, seed: int) -> pd.DataFrame:
    """As many rows as ``training``, each column drawn on its own among the values of both groups."""
    rng = np.random.default_rng(seed)
    people = pd.concat([training, control], ignore_index=True)
    return pd.DataFrame({c: people[c].iloc[rng.integers(len(people), size=len(training))].to_numpy()
                         for c in training.columns})


def anonymeter_multivariate(python: str, cases: dict, *, seed: int, n_predicates: int) -> dict:
    """anonymeter's multivariate singling out (3 columns) on each case: name -> (release, training, control, types)."""
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        listed = []
        for i, (release, training, control, types) in enumerate(cases.values()):
            for part, frame in zip(PARTS, (release, training, control), strict=True):
                _for_anonymeter(frame, types).to_parquet(folder / f"case{i}.{part}.parquet", index=False)
            listed.append({"name": f"case{i}", "seed": seed, "n_predicates": n_predicates, "n_attacks": n_predicates,
                           "singling_out": ["multivariate"], "splits": [], "secrets": []})
        (folder / "cases.json").write_text(json.dumps(listed), encoding="utf-8")
        subprocess.run([python, str(HERE / "anonymeter_runner.py"), str(folder)], check=True)
        answers = json.loads((folder / "anonymeter.json").read_text(encoding="utf-8"))
    return {name: answers["cases"][f"case{i}"][0] for i, name in enumerate(cases)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["demo", "lahman"], default="demo")
    parser.add_argument("--people", type=int, default=1000, help="Lahman people sampled")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the demo (1 = 10,000 patients)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--predicates", type=int, default=2000)
    parser.add_argument("--views", default="", help="attack only the views whose name holds this text")
    parser.add_argument("--anonymeter-python", help="python of a virtual environment holding anonymeter")
    parser.add_argument("--cache", help="folder keeping the anonymized frames between runs")
    args = parser.parse_args()
    cases = {}
    for name, (release, training, control, types) in anonymized_frames(args).items():
        if args.views in name:
            for label, frame in (("relanon", release), ("independent", independent(training, control, args.seed)),
                                 ("copy", training)):
                cases[f"{name} | {label}"] = (frame, training, control, types)
    theirs = {}
    if args.anonymeter_python:
        started = time.perf_counter()
        theirs = anonymeter_multivariate(args.anonymeter_python, cases, seed=args.seed, n_predicates=args.predicates)
        print(f"anonymeter: {time.perf_counter() - started:.0f} s")
    print(f"\n{'view | release':58} {'relanon risk [95 % CI]':>24} {'main':>6} {'control':>7}   "
          f"{'anonymeter risk [95 % CI]':>24} {'main':>6} {'control':>7}")
    for name, (release, training, control, types) in cases.items():
        ours = singling_out(release, training, control, types, n_attacks=args.predicates, random_state=args.seed)
        other = theirs.get(name)
        shown = (f"{other['risk']:.3f} [{other['low']:.3f}, {other['high']:.3f}] {other['main']:6.3f} "
                 f"{other['control']:7.3f}") if other else "-"
        print(f"{name[:58]:58} {ours.risk.value:.3f} [{ours.risk.low:.3f}, {ours.risk.high:.3f}] "
              f"{ours.main.value:6.3f} {ours.control.value:7.3f}   {shown}")
        d = ours.details
        n = max(d["predicates"], 1)
        print(f"{'':58} {d['predicates']:,} predicates: unique among training {d['unique_in_training'] / n:.3f}, "
              f"among control {d['unique_in_control'] / n:.3f}; design effect {d['design_effect']:.2f}", flush=True)


if __name__ == "__main__":
    main()
