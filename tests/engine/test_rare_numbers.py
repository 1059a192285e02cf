"""Mixed numbers that would give one person's own value back: a mix of neighbours' dates landing on the date
that one person holds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.engine.avatar import avatarize
from relanon.engine.columns import numeric_statistics
from relanon.engine.private_values import GRID_VALUES, off_rare_values


def _people_with_dates(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    # 400 debut dates over 500 days: most dates are held by one person, and a mix of neighbours' dates lands on
    # a held date about as often as not
    days = rng.integers(0, 500, n)
    return pd.DataFrame({
        "debut": pd.Timestamp("1990-01-01") + pd.to_timedelta(days, unit="D"),
        "weight": rng.normal(80, 10, n).round(1),
        "bats": rng.choice(["L", "R"], n),
    })


def test_no_released_date_is_one_that_fewer_than_min_count_people_hold():
    people = _people_with_dates()
    counts = people["debut"].value_counts()
    rare = set(counts[counts < 10].index)
    types = {"debut": "datetime", "weight": "continuous", "bats": "categorical"}
    released = avatarize(people, types, k=10, random_state=3, min_counts=10).avatars
    assert not released["debut"].isin(rare).any()
    # the rule moves a date by a few days, not more: the dates keep their spread
    assert abs(released["debut"].std() / people["debut"].std() - 1) < 0.15
    # without the rule, mixes do land on such dates: the test data exercises the rule
    unruled = avatarize(people, types, k=10, random_state=3).avatars
    assert unruled["debut"].isin(rare).sum() > 20


def test_off_rare_values_moves_only_rare_held_values_to_the_nearest_free_step():
    values = pd.Series(list(range(0, 2 * (GRID_VALUES + 50), 2)) + [100] * 10, name="n")
    stats = numeric_statistics(values, "integer", 1.0, table="t")
    moved = off_rare_values(pd.Series([4, 5, 100, 150, 298], dtype="int64"), values, 5, stats)
    # 4, 150 and 298 are held by one record each (moved one step towards the median); 100 by eleven
    assert moved.tolist() == [5, 5, 100, 149, 297]
    assert moved.dtype == np.int64
    # a grid of few values (a year, a count) is left alone, as is a rule of one record
    few = pd.Series(range(50), name="n")
    assert off_rare_values(pd.Series([3]), few, 5, numeric_statistics(few, "integer", 1.0, table="t")).tolist() == [3]
    assert off_rare_values(pd.Series([4]), values, 1, stats).tolist() == [4]

