"""The factor space fitted from partitions (the Dask engine's) is the one a fit on all rows gives."""

from __future__ import annotations

from functools import reduce

import numpy as np
import pandas as pd

from relanon.engine import space_statistics as stats
from relanon.engine.columns import numeric_values
from relanon.engine.factor_space import FactorSpace


def _from_partitions(frame: pd.DataFrame, types: dict, parts: int, rows_searched: int, ncp=None) -> FactorSpace:
    pieces = np.array_split(np.arange(len(frame)), parts)
    cap = stats.distinct_cap(len(frame))
    summaries = reduce(lambda a, b: stats.merge_summaries(a, b, cap=cap),
                       [stats.summarize(frame.iloc[p], types, cap=cap) for p in pieces])
    medians = {}
    for name, summary in summaries.items():
        if isinstance(summary, stats.NumericSummary) and summary.values is None and summary.present:
            values = numeric_values(frame[name], summary.kind)
            values = values[~np.isnan(values)]
            found = stats.select_ranks(lambda lo, hi, b, v=values: stats.bin_counts(v, lo, hi, b),
                                       lambda lo, hi, v=values: stats.values_between(v, lo, hi),
                                       stats.median_ranks(summary), summary.low, summary.high)
            medians[name] = stats.median_of(summary, found)
    statistics = stats.finish_statistics(summaries, medians)
    coder = stats.coder(statistics)
    moments = reduce(stats.merge_moments, [stats.coded_moments(frame.iloc[p], coder) for p in pieces])
    return stats.space_from_moments(types, statistics, moments, n_components=ncp, rows_searched=rows_searched)


def test_a_space_from_partitions_projects_as_a_fit_on_all_rows():
    rng = np.random.default_rng(0)
    n = 3_000
    age = rng.integers(18, 90, n).astype(float)
    age[rng.random(n) < 0.1] = np.nan  # missing values: imputed with the median, and an indicator
    frame = pd.DataFrame({
        "age": pd.array(np.where(np.isnan(age), None, age), dtype="Int64"),
        "income": rng.lognormal(10, 1, n) * (1 + np.nan_to_num(age) / 100),  # many values: median by histograms
        "sex": pd.Series(rng.choice(["F", "M"], n), dtype="str"),
        "region": pd.Series(rng.choice(list("ABCDEFG"), n, p=[.3, .2, .2, .1, .1, .05, .05]), dtype="str"),
        "smoker": rng.random(n) < 0.3,
    })
    types = {"age": "integer", "income": "continuous", "sex": "categorical", "region": "categorical",
             "smoker": "boolean"}
    whole = FactorSpace(types, n_components=4).fit(frame)
    parts = _from_partitions(frame, types, parts=7, rows_searched=n, ncp=4)
    assert parts.feature_names_ == whole.feature_names_
    np.testing.assert_allclose(parts.transform(frame), whole.transform(frame), atol=1e-8)
    assert abs(parts.total_inertia_ - whole.total_inertia_) < 1e-9 * whole.total_inertia_


def test_the_number_of_partitions_does_not_change_the_space_beyond_rounding():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"x": rng.normal(size=2_000), "y": rng.normal(size=2_000),
                          "c": pd.Series(rng.choice(list("abc"), 2_000), dtype="str")})
    types = {"x": "continuous", "y": "continuous", "c": "categorical"}
    one, nine = (_from_partitions(frame, types, parts=p, rows_searched=2_000) for p in (1, 9))
    assert one.n_components_ == nine.n_components_
    np.testing.assert_allclose(one.transform(frame), nine.transform(frame), atol=1e-9)


def test_the_time_grid_from_partitions_is_the_grid_of_all_rows():
    rng = np.random.default_rng(2)
    days = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 700, 400), unit="D")
    frame = pd.DataFrame({
        "x": rng.normal(size=400),
        "noon": days + pd.Timedelta(hours=12),
        "midnight": pd.Series(days).dt.tz_localize("Europe/Paris"),  # 22:00 or 23:00 in UTC
        "half_past": days + pd.to_timedelta(rng.integers(0, 24, 400), unit="h") + pd.Timedelta(minutes=30),
    })
    types = {"x": "continuous", "noon": "datetime", "midnight": "datetime", "half_past": "datetime"}
    whole = FactorSpace(types).fit(frame).statistics_
    parts = _from_partitions(frame, types, parts=7, rows_searched=len(frame)).statistics_
    expected = {"noon": (86400.0, 43200.0), "midnight": (86400.0, 0.0), "half_past": (3600.0, 1800.0)}
    for name, grid in expected.items():
        assert (whole[name].step, whole[name].step_offset) == (parts[name].step, parts[name].step_offset) == grid
    cap = stats.distinct_cap(len(frame))
    merged = stats.summarize(frame, types, cap=cap)
    other_hour = stats.summarize(frame.assign(noon=frame["noon"] + pd.Timedelta(hours=1)).iloc[:5], types, cap=cap)
    mixed = stats.merge_summaries(merged, other_hour, cap=cap)["noon"]  # 12:00 and 13:00: whole hours
    assert (mixed.step, mixed.step_offset) == (3600.0, 0.0)
