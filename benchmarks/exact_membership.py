"""Whether a value or a tuple that one person holds, shown or not in the release, tells that she is in the data.

    python benchmarks/exact_membership.py [--seeds 0 1]

Two generated populations of 8,000 people, each split 4,000 in the data (anonymized at default settings of an
individual table: ``k`` 10, ``min_count`` 5) and 4,000 outside it. For the people whose value (or tuple) no other
person of the population holds, printed: the share whose value appears in the release, among those in the data
and among those outside it. Equal shares: the release tells nothing about membership through exact values.

- ``dates``: a day among 9,000, a weight, a hand. Compared: the release, and the release with every date that
  exactly one person of the data holds moved to the nearest day that none or several hold (a rule left out of
  the release, docs/open-questions.md: *Numbers one person holds*), applied to the released dates.
- ``tuples``: the wide table of ``tests/engine/test_private_values.py`` (a month and a day that fits it, a city and its
  state, a hand, a death day, a height, a weight), whose columns left out of the tuple rule are taken a family at
  a time from other neighbours than the drawn one (docs/method.md, *Small groups*).
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
from tests.engine.test_private_values import WIDE_TYPES, wide_people  # noqa: E402

SIZE = 8000
DATE_TYPES = {"debut": "datetime", "weight": "continuous", "hand": "categorical"}


def dated_people(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"debut": pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 9000, SIZE), unit="D"),
                         "weight": rng.normal(80, 12, SIZE).round(1), "hand": rng.choice(["L", "R"], SIZE)})


def shown(population: pd.Series, inside: np.ndarray, released: pd.Series) -> tuple[float, float]:
    """Among the values of ``population`` that one person holds: the share found in ``released``, for the people
    ``inside`` the data and for the others."""
    alone = population.map(population.value_counts()).to_numpy() == 1
    found = population.isin(set(released)).to_numpy()
    return float(found[alone & inside].mean()), float(found[alone & ~inside].mean())


def moved_once_held(released: pd.Series, data: pd.Series) -> pd.Series:
    """Each released date that exactly one record of ``data`` holds, moved to the nearest day (the earlier on a
    tie) that none or several hold."""
    counts = data.value_counts()
    out = released.copy()
    for i in np.flatnonzero(released.map(counts).fillna(0).to_numpy() == 1):
        for days in range(1, 400):
            near = [released.iloc[i] - pd.Timedelta(days=days), released.iloc[i] + pd.Timedelta(days=days)]
            free = [d for d in near if counts.get(d, 0) != 1]
            if free:
                out.iloc[i] = free[0]
                break
    return out


def tuple_of(frame: pd.DataFrame) -> pd.Series:
    columns = ["month", "day", "city", "state", "hand", "death_day"]
    return frame[columns].astype(str).agg("|".join, axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    inside = np.arange(SIZE) < SIZE // 2
    for seed in args.seeds:
        people = dated_people(seed)
        data = people[inside].reset_index(drop=True)
        release = avatarize(data, DATE_TYPES, k=10, random_state=seed, min_counts=5).avatars
        for label, dates in (("release", release["debut"]), ("dates held once moved", moved_once_held(release["debut"],
                                                                                                        data["debut"]))):
            a, b = shown(people["debut"], inside, dates)
            print(f"seed {seed}, dates, {label}: shown for {a:.3f} of the people in the data, {b:.3f} of the others")
        people = wide_people(SIZE, seed)
        data = people[inside].reset_index(drop=True)
        release = avatarize(data, WIDE_TYPES, k=10, random_state=seed, min_counts=5).avatars
        a, b = shown(tuple_of(people), inside, tuple_of(release))
        print(f"seed {seed}, tuples, release: shown for {a:.3f} of the people in the data, {b:.3f} of the others")

if __name__ == "__main__":
    main()
