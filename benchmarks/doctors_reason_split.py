"""The demo doctors' most frequent visit reason: how much of its inference risk is the split's.

    python benchmarks/doctors_reason_split.py                     # seeds 2024 1 2 3, balanced split
    python benchmarks/doctors_reason_split.py --random --seeds 2024 1 2 3

For each seed, the demo database is split as ``relanon assess --seed S --holdout 0.5`` splits it
(balanced on the quasi-identifiers, or, with ``--random``, the simple random draw relanon used
before), the training part is anonymized as ``relanon assess`` anonymizes it, and the inference
attack on ``TO_TOP_ENRICHED(doctors, visits)`` guesses every doctor's most frequent visit reason,
training and control, from all her other columns (20 seeds of tie-breaking, averaged). It prints
the risk, the share of the released doctors the attacker lands on that have her specialty, and per
specialty how many training / control doctors there are, how many released doctors hold it, and the
success on each side: a specialty the release does not hold is guessed wrong for everyone, so a
split that puts more of its doctors in the control part raises the risk (README, Privacy attacks).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from relanon import datasets
from relanon.metrics.attacks import holdout
from relanon.metrics.attacks.assessment import _released_columns, _seed, _stream
from relanon.metrics.attacks.coding import code_frames, nearest
from relanon.multitable.pipeline import anonymize
from relanon.multitable.views import views
from relanon.schema.validation import check_database

SECRET = "visits.mode(reason)"
TIES = 20


def random_choice(frame, columns, size, rng):
    """The simple random draw of control people that relanon used before the balanced one."""
    return np.sort(rng.choice(len(frame), size=size, replace=False))


def one_seed(schema, database, seed: int) -> None:
    run_seed = _seed(schema, seed)
    split = holdout.split_database(schema, database, holdout=0.5, random_state=_stream(run_seed, "holdout"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = anonymize(schema, split.training, random_state=run_seed, progress=False)
    columns = _released_columns(schema, result.tables)
    name = "TO_TOP_ENRICHED(doctors, visits)"
    training = {v.name: v for v in views(schema, split.training, "doctors", columns)}[name]
    control = {v.name: v for v in views(schema, split.control["doctors"], "doctors", columns)}[name]
    release = {v.name: v for v in views(schema, result.tables, "doctors", columns)}[name].frame
    frames = {"release": release, "training": training.frame,
              "control": control.frame.iloc[split.control_rows["doctors"]].reset_index(drop=True)}
    coded = code_frames(frames, training.types)
    secret = int(coded.index([SECRET])[0])
    known = np.setdiff1d(np.arange(len(coded.columns)), [secret])
    right, landed = {}, {}
    for group in ("training", "control"):
        hits = []
        for tie in range(TIES):
            (near,) = nearest(coded[group], coded["release"], coded, [known], random_state=tie)
            hits.append(coded["release"][near[:, 0], secret] == coded[group][:, secret])
        right[group] = np.mean(hits, axis=0)
        landed[group] = np.mean(release["specialty"].to_numpy()[near[:, 0]] == frames[group]["specialty"].to_numpy())
    t, c = right["training"].mean(), right["control"].mean()
    print(f"seed {seed}: training {t:.3f}, control {c:.3f}, risk {(t - c) / (1 - c):.3f}; the released doctor "
          f"landed on has her specialty: training {landed['training']:.2f}, control {landed['control']:.2f}")
    rows = pd.DataFrame({
        "training doctors": frames["training"]["specialty"].value_counts(),
        "control doctors": frames["control"]["specialty"].value_counts(),
        "released doctors": release["specialty"].value_counts(),
        "right on training": pd.Series(right["training"]).groupby(frames["training"]["specialty"]).mean(),
        "right on control": pd.Series(right["control"]).groupby(frames["control"]["specialty"]).mean(),
    }).fillna(0)
    print(rows.round(2).to_string(), "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[2024, 1, 2, 3])
    parser.add_argument("--random", action="store_true", help="draw the control doctors at random, as before")
    args = parser.parse_args()
    if args.random:
        holdout.balanced_choice = random_choice
    schema, database = datasets.hospital(scale=1.0, seed=0)
    database = check_database(schema, database)
    for seed in args.seeds:
        one_seed(schema, database, seed)


if __name__ == "__main__":
    main()
