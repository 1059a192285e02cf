"""Make the anonymeter golden files that tests/test_attacks_golden.py compares relanon's attacks with.

anonymeter (the privacy evaluator reviewed by the French data protection authority) pins its own
numerical stack (numba, polars), so it is kept out of the project's environment: this script runs
in a virtual environment of its own, writes three small CSV tables (training people, control
people, and a release that copies the training people with noise) and the figures anonymeter gives
on them.

    python3 -m venv /tmp/anonymeter-venv
    /tmp/anonymeter-venv/bin/pip install anonymeter==1.1.0
    /tmp/anonymeter-venv/bin/python tests/golden/make_anonymeter_golden.py

Training and control have the same size, so anonymeter applies no size correction to the
singling-out control count, and every person is attacked (``n_attacks`` = the group's size), so
anonymeter's unseeded samples of targets do not change its figures; its random-guess baselines
stay unseeded and are recorded, not compared.

A second set, in ``split/``, splits the people 80 / 20 as relanon's holdout does (4,800 training
people, 1,200 control people) and holds two releases: the training people copied with the same
noise, and as many other people of the population with each column shuffled on its own (a
release that knows nobody). On both, anonymeter's multivariate singling out (3 columns, 1,000
predicates), whose control count is brought to the training group's size by anonymeter's fitted
curve (its samples of the control people draw from numpy's global state, seeded here).
"""

from __future__ import annotations

import json
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

HERE = Path(__file__).parent / "anonymeter"
SEED = 20240614
N_PEOPLE = 600  # per group
N_PREDICATES = 300
SPLIT = (4800, 1200)  # training and control people of the 80 / 20 split
N_SPLIT_PREDICATES = 1000
LINK_COLUMNS = (["age", "sex", "city"], ["income", "height", "smoker"])
SECRETS = {"smoker": False, "income": True}  # column -> regression


def make_tables(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    """Training and control people from one population, and a noisy copy of the training people."""
    people = population(rng, 2 * N_PEOPLE)
    training, control = people.iloc[:N_PEOPLE].reset_index(drop=True), people.iloc[N_PEOPLE:].reset_index(drop=True)
    return {"training": training, "control": control, "release": noisy_copy(training, rng)}


def make_split_tables(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    """The 80 / 20 split: training and control people, a noisy copy of the training people, and a release that
    knows nobody (as many other people of the population, each column shuffled on its own)."""
    people = population(rng, 2 * SPLIT[0] + SPLIT[1])
    training = people.iloc[:SPLIT[0]].reset_index(drop=True)
    control = people.iloc[SPLIT[0]:sum(SPLIT)].reset_index(drop=True)
    others = people.iloc[sum(SPLIT):].reset_index(drop=True)
    independent = pd.DataFrame({c: rng.permutation(others[c].to_numpy()) for c in others.columns})
    return {"training": training, "control": control, "release": noisy_copy(training, rng), "independent": independent}


def population(rng: np.random.Generator, n: int) -> pd.DataFrame:
    cities = [f"city{i:02d}" for i in range(40)]
    weights = 1.0 / np.arange(1, 41) ** 1.2
    people = pd.DataFrame({
        "age": rng.integers(18, 91, n),
        "sex": rng.choice(["F", "M"], n),
        "city": rng.choice(cities, n, p=weights / weights.sum()),
        "income": np.round(rng.lognormal(10, 0.5, n), -1),
        "height": np.round(rng.normal(170, 9, n), 1),
        "smoker": rng.choice(["yes", "no"], n, p=[0.3, 0.7]),
    })
    people.loc[people["sex"] == "F", "height"] -= 10
    people["smoker"] = np.where(people["age"] > 60, rng.choice(["yes", "no"], n, p=[0.5, 0.5]), people["smoker"])
    return people


def noisy_copy(training: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """The training people with noise: ages moved by up to 2 years, incomes by up to 10 %, heights by 3 cm or so,
    30 % moved to one of the 5 largest cities, 20 % with the other smoking habit; shuffled."""
    n = len(training)
    cities = [f"city{i:02d}" for i in range(5)]
    release = training.copy()
    release["age"] = np.clip(release["age"] + rng.integers(-2, 3, n), 18, 90)
    release["income"] = np.round(release["income"] * rng.uniform(0.9, 1.1, n), -1)
    release["height"] = np.round(release["height"] + rng.normal(0, 3, n), 1)
    moved = rng.random(n) < 0.3
    release.loc[moved, "city"] = rng.choice(cities, int(moved.sum()))
    flipped = rng.random(n) < 0.2
    release.loc[flipped, "smoker"] = np.where(release.loc[flipped, "smoker"] == "yes", "no", "yes")
    return release.sample(frac=1.0, random_state=1).reset_index(drop=True)


def figures(results, risk) -> dict:
    return {
        "n_attacks": [int(results.n_attacks_ori), int(results.n_attacks_baseline), int(results.n_attacks_control)],
        "n_success": float(results.n_success),
        "n_baseline": float(results.n_baseline),
        "n_control": float(results.n_control),
        "main": {"value": float(results.attack_rate.value), "error": float(results.attack_rate.error)},
        "baseline": {"value": float(results.baseline_rate.value), "error": float(results.baseline_rate.error)},
        "control": {"value": float(results.control_rate.value), "error": float(results.control_rate.error)},
        "risk": {"value": float(risk.value), "ci": [float(risk.ci[0]), float(risk.ci[1])]},
    }


def split_singling_out() -> list[dict]:
    """anonymeter's multivariate singling out on the 80 / 20 split: the noisy copy, and the release that knows
    nobody. The control group is smaller than training, so anonymeter brings its count to training's size with
    its fitted curve."""
    folder = HERE / "split"
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in make_split_tables(np.random.default_rng(SEED + 1)).items():
        frame.to_csv(folder / f"{name}.csv.gz", index=False)
    training, control = (pd.read_csv(folder / f"{name}.csv.gz") for name in ("training", "control"))
    cases = []
    for release in ("release", "independent"):
        evaluator = SinglingOutEvaluator(ori=training, syn=pd.read_csv(folder / f"{release}.csv.gz"), control=control,
                                         n_attacks=N_SPLIT_PREDICATES, n_cols=3, seed=SEED).evaluate(mode="multivariate")
        cases.append({"attack": "singling_out", "mode": "multivariate", "n_cols": 3, "release": release,
                      **figures(evaluator.results(), evaluator.risk())})
    return cases


def main() -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    for name, frame in make_tables(np.random.default_rng(SEED)).items():
        frame.to_csv(HERE / f"{name}.csv", index=False)
    # anonymeter reads the same CSV text the test reads
    training, control, release = (pd.read_csv(HERE / f"{name}.csv") for name in ("training", "control", "release"))
    np.random.seed(SEED)  # anonymeter's unseeded pandas samples draw from numpy's global state
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in ("univariate", "multivariate"):
            evaluator = SinglingOutEvaluator(ori=training, syn=release, control=control, n_attacks=N_PREDICATES,
                                             n_cols=3, seed=SEED).evaluate(mode=mode)
            cases.append({"attack": "singling_out", "mode": mode, "n_cols": 3,
                          **figures(evaluator.results(), evaluator.risk())})
        evaluator = LinkabilityEvaluator(ori=training, syn=release, control=control, aux_cols=LINK_COLUMNS,
                                         n_attacks=N_PEOPLE, n_neighbors=1).evaluate(n_jobs=1)
        cases.append({"attack": "linkability", "split": [list(c) for c in LINK_COLUMNS],
                      **figures(evaluator.results(), evaluator.risk())})
        for secret, regression in SECRETS.items():
            known = [c for c in training.columns if c != secret]
            evaluator = InferenceEvaluator(ori=training, syn=release, control=control, aux_cols=known, secret=secret,
                                           regression=regression, n_attacks=N_PEOPLE).evaluate(n_jobs=1)
            cases.append({"attack": "inference", "secret": secret, "regression": regression,
                          **figures(evaluator.results(), evaluator.risk())})
        split_cases = split_singling_out()
    golden = {
        "made_by": "tests/golden/make_anonymeter_golden.py",
        "seed": SEED,
        "versions": {"anonymeter": version("anonymeter"), "pandas": pd.__version__, "numpy": np.__version__,
                     "polars": version("polars")},
        "n_predicates": N_PREDICATES,
        "cases": cases,
        "split": {"sizes": list(SPLIT), "n_predicates": N_SPLIT_PREDICATES, "cases": split_cases},
    }
    (HERE / "answers.json").write_text(json.dumps(golden, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {HERE}")


if __name__ == "__main__":
    main()
