"""Are the intervals of pooled rounds honest? Risks divided by their errors, on releases that leak nothing.

    python benchmarks/rounds_calibration.py [--populations 100] [--rounds 4]

``relanon assess --rounds R`` splits the same people R times, at random and independently, and
pools the attacks of the R releases as one set of trials (relanon.metrics.attacks.rounds). The
same people appear in every round, on the training side in some and on the control side in others:
if that made the rounds' risks correlated, the pooled interval would be too narrow.

For each of ``--populations`` fixed populations (600 people: age, town, smoker depending on age,
income), each round splits them in two halves at random and attacks a release that is a fresh sample of
the population (it knows no one: every risk is 0 in truth). Printed per attack: the standard
deviation of ``raw risk / standard error`` over the populations, for one round and for R rounds pooled. An
honest interval gives about 1 (a little less for the bounded, discrete rates); well above 1 would
mean the pooled intervals are too narrow. The mean no-leak bound (``floor``) shows what pooling buys.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from relanon.metrics.attacks import inference, linkability, singling_out  # noqa: E402
from relanon.metrics.attacks.confidence import probit  # noqa: E402
from relanon.metrics.attacks.rounds import pooled  # noqa: E402

KINDS = {"age": "integer", "town": "categorical", "smoker": "categorical", "income": "continuous"}
PEOPLE = 600


def people(n: int, rng: np.random.Generator) -> pd.DataFrame:
    age = rng.integers(18, 90, n)
    return pd.DataFrame({"age": age, "town": rng.choice([f"t{i}" for i in range(40)], n),
                         "smoker": np.where(rng.random(n) < 0.2 + (age > 50) * 0.3, "yes", "no"),
                         "income": (20_000 + 400 * age + rng.normal(0, 5_000, n)).round(0)})


def one_round(population: pd.DataFrame, rng: np.random.Generator, seed: int) -> list:
    order = rng.permutation(len(population))
    training = population.iloc[order[: len(order) // 2]].reset_index(drop=True)
    control = population.iloc[order[len(order) // 2:]].reset_index(drop=True)
    release = people(len(training), rng)  # knows no one
    return [singling_out(release, training, control, KINDS, mode="multivariate", n_attacks=300, random_state=seed),
            linkability(release, training, control, KINDS, split=(["age", "town"], ["smoker", "income"]),
                        random_state=seed),
            inference(release, training, control, KINDS, secret="smoker", random_state=seed)]


def z_score(result) -> float:
    """The raw risk over its standard error (the interval's half-width over the normal quantile)."""
    risk = result.risk
    error = (risk.high - risk.raw) / probit(result.confidence) if risk.high < 1 else float("nan")
    return risk.raw / error if error > 0 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--populations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    started = time.perf_counter()
    names = ["singling out (multivariate)", "linkability", "inference of smoker"]
    single, multi = {n: [] for n in names}, {n: [] for n in names}
    floors_single, floors_multi = {n: [] for n in names}, {n: [] for n in names}
    for p in range(args.populations):
        rng = np.random.default_rng([2024, p])
        population = people(PEOPLE, rng)
        rounds = [one_round(population, rng, 1000 * p + r) for r in range(args.rounds)]
        for position, name in enumerate(names):
            first, together = rounds[0][position], pooled([r[position] for r in rounds])
            single[name].append(z_score(first))
            multi[name].append(z_score(together))
            floors_single[name].append(first.floor)
            floors_multi[name].append(together.floor)
    print(f"{args.populations} populations of {PEOPLE} people, releases that know no one; "
          f"sd of raw risk / standard error (about 1 = honest), mean no-leak bound")
    print(f"{'attack':<30}{'1 round':>10}{f'{args.rounds} rounds':>12}{'bound 1':>10}{f'bound {args.rounds}':>10}")
    for name in names:
        print(f"{name:<30}{np.nanstd(single[name]):>10.2f}{np.nanstd(multi[name]):>12.2f}"
              f"{np.mean(floors_single[name]):>10.3f}{np.mean(floors_multi[name]):>10.3f}")
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
