"""What the tuple rule and ``anonymize.combination_min_count`` gain and cost on a table of small groups, over seeds.

    python benchmarks/combination_holders.py --seeds 0-5

People live in towns of about six, with a sex and one of three jobs (independent of each other and of their
age and income), so that most tuples of categories (town, sex, job) are held by one or two people and the
pairs (town, sex) by about three. Each seed draws 3,000 people, anonymizes the first 1,500 (the avatar method,
``k`` 5, ``min_count`` 2) with the tuple rule asking 2 to 5 holders, and attacks the release with multivariate
singling out (3 columns, 1,000 predicates) against the other 1,500. The rule counts the columns it chooses (a
column stays out when counting it would leave fewer than a tenth of the records to give their categories, or
bend the other columns' shares among them). Printed per number of holders: the risk (mean over seeds, with each
seed's), the records whose tuple (town, sex, job) and each pair of it that many hold, the towns released, and
the mean Hellinger distance of the categorical columns (released against training).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from relanon import avatarize  # noqa: E402
from relanon.metrics import hellinger_distance  # noqa: E402
from relanon.metrics.attacks import singling_out  # noqa: E402

TYPES = {"town": "categorical", "sex": "categorical", "job": "categorical", "age": "integer", "income": "continuous"}


def people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"town": [f"T{t}" for t in rng.integers(0, n // 6, n)], "sex": rng.choice(["F", "M"], n),
                         "job": rng.choice(["a", "b", "c"], n), "age": rng.integers(18, 90, n),
                         "income": np.round(rng.lognormal(10, 0.5, n), -1)})


def seeds_from(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def least_held(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """For each record, the fewest records holding its whole tuple of ``columns`` or any pair of them."""
    groups = [columns] + [[a, b] for i, a in enumerate(columns) for b in columns[i + 1:]]
    held = [frame.groupby(group)[group[0]].transform("size").to_numpy() for group in groups]
    return np.min(held, axis=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-5", help="seeds, as 0-5")
    args = parser.parse_args()
    seeds = seeds_from(args.seeds)
    print(f"{'holders':>7} {'risk (mean)':>11}  {'each seed':<40} {'may give':>9} {'towns':>12} {'Hellinger':>9}")
    for holders in (2, 3, 4, 5):
        risks, giving, towns, distances = [], [], [], []
        for seed in seeds:
            both = people(3000, seed)
            training, control = both.iloc[:1500].reset_index(drop=True), both.iloc[1500:].reset_index(drop=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the rule's warnings: the table is built to be hard
                release = avatarize(training, TYPES, k=5, min_counts=2, random_state=seed,
                                    combination_holders=holders).avatars
            risks.append(singling_out(release, training, control, TYPES, n_columns=3, n_attacks=1000,
                                      random_state=seed).risk.value)
            giving.append(float((least_held(training, ["town", "sex", "job"]) >= holders).mean()))
            towns.append(f"{release['town'].nunique()}/{training['town'].nunique()}")
            distances.append(np.mean([hellinger_distance(training[c], release[c], "categorical")
                                      for c in ("town", "sex", "job")]))
        each = " ".join(f"{r:.3f}" for r in risks)
        print(f"{holders:>7} {np.mean(risks):>11.3f}  {each:<40} {100 * np.mean(giving):>8.1f}% "
              f"{towns[0]:>12} {np.mean(distances):>9.3f}")
    print("may give: records whose tuple and pairs of every column that many hold; towns: released / in the data, "
          "first seed")


if __name__ == "__main__":
    main()
