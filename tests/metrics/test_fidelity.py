"""Faithful avatars (issue 10): records that could exist, missing shares and supports kept, a factor
space chosen from the data, and the metrics that see the loss (shared binning, noise floors,
impossible combinations)."""

import math

import numpy as np
import pandas as pd
import pytest
from generated_tables import CLINICAL_TYPES, TWELVE_TYPES, clinical, twelve_columns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relanon.common.binning import few_values, fit_bins, hellinger, quantile_bin_count
from relanon.engine import axes
from relanon.engine.avatar import _draw, avatarize
from relanon.engine.factor_space import FactorSpace, auto_axes
from relanon.engine.neighbours import self_neighbours
from relanon.metrics import Metric
from relanon.metrics.noise_floor import half_splits, noise_floor, quadrature_margin
from relanon.metrics.signal import (
    _unseen_share,
    categorical_like,
    combination_metrics,
    combination_shares,
    correlation_difference_ratio,
    hellinger_distance,
    hellinger_distances,
    hellinger_metric,
    signal,
)

FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- the shared binning


def test_few_values_get_one_bin_each_then_other_then_missing():
    original = np.array([10.0] * 10 + [20.0] * 30 + [np.nan] * 10)
    bins = fit_bins(original, numeric=True)
    assert bins.labels == ["10.0", "20.0", "other", "missing"]
    # 35.294 mg never appears in the original: it is "other", not the nearest dose
    assert bins.codes(np.array([10.0, 20.0, 35.294, np.nan])).tolist() == [0, 1, 2, 3]
    assert bins.shares(original).tolist() == [0.2, 0.6, 0.0, 0.2]


def test_many_values_get_quantile_bins_of_the_original_by_hand():
    # 100 values 0..99: Sturges gives ceil(log2 100) + 1 = 8 bins; the cut at q = i / 8 is the smallest
    # value with F(x) >= q (inverted CDF): ranks ceil(100 i / 8) = 13, 25, 38, 50, 63, 75, 88, values one less
    bins = fit_bins(np.arange(100.0), numeric=True)
    assert quantile_bin_count(100) == 8
    assert bins.cuts.tolist() == [12.0, 24.0, 37.0, 49.0, 62.0, 74.0, 87.0]
    # bin b holds cuts[b-1] < x <= cuts[b]: 0..12, 13..24, 25..37...
    assert bins.shares(np.arange(100.0)).tolist() == pytest.approx([0.13, 0.12, 0.13, 0.12, 0.13, 0.12, 0.13, 0.12, 0.0])
    # a value tied by 60 % of the rows is a bin of its own
    zeros = np.concatenate([np.zeros(60), np.arange(1.0, 41.0)])
    assert fit_bins(zeros, numeric=True).shares(zeros)[0] == 0.6
    # values outside the original range fall in the end bins
    assert bins.codes(np.array([-1e308, 1e308])).tolist() == [0, 7]


def test_quantile_bins_do_not_swallow_small_values():
    # a long right tail: equal-width bins would put 90 % of the rows in the first bin
    values = np.concatenate([np.linspace(1, 10, 900), np.linspace(100, 1000, 100)])
    bins = fit_bins(values, numeric=True)
    assert bins.shares(values)[:-1].max() < 0.1


def test_extreme_and_constant_and_empty_columns():
    huge = np.array([-1e308, 1e308] * 10 + list(np.linspace(-1e307, 1e307, 100)))
    bins = fit_bins(huge, numeric=True)
    assert np.isfinite(bins.cuts).all() and bins.shares(huge).sum() == pytest.approx(1.0)
    constant = fit_bins(np.full(7, 3.0), numeric=True)
    assert constant.labels == ["3.0", "other", "missing"] and constant.codes(np.array([3.0, 4.0])).tolist() == [0, 1]
    empty = fit_bins(np.full(3, np.nan), numeric=True)
    assert empty.labels == ["other", "missing"] and empty.shares(np.full(3, np.nan)).tolist() == [0.0, 1.0]


def test_labels_with_every_kind_of_missing_value_are_one_missing_bin():
    bins = fit_bins(pd.Series(["a", None, "b", np.nan, pd.NA], dtype=object), numeric=False)
    assert bins.labels == ["a", "b", "other", "missing"]
    assert bins.shares(pd.Series(["a", "c", None, np.nan])).tolist() == [0.25, 0.0, 0.25, 0.5]


def test_dates_are_binned_as_seconds():
    dates = pd.Series(pd.date_range("2020-01-01", periods=400, freq="D"))
    assert hellinger_distance(dates, dates, "datetime") == 0.0
    shifted = dates + pd.Timedelta(days=200)
    assert hellinger_distance(dates, shifted, "datetime") > 0.5


def test_few_values_rule():
    assert few_values(20, 50_000) and not few_values(20, 20) and not few_values(51, 10**6)


def test_hellinger_by_hand():
    assert hellinger(np.array([0.5, 0.5]), np.array([0.5, 0.5])) == 0.0
    assert hellinger(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == 1.0
    # p = (1/4, 3/4) against q = (3/4, 1/4): 1 - BC = 1 - 2 sqrt(3/16)
    assert hellinger(np.array([0.25, 0.75]), np.array([0.75, 0.25])) == pytest.approx(math.sqrt(1 - math.sqrt(3) / 2))


# ----------------------------------------------------------------------------- the noise floor


def test_halves_are_disjoint_seeded_and_of_equal_size():
    first = list(half_splits(11, 3, random_state=5))
    again = list(half_splits(11, 3, random_state=5))
    assert all(np.array_equal(a, c) and np.array_equal(b, d) for (a, b), (c, d) in zip(first, again, strict=True))
    for a, b in first:
        assert len(a) == len(b) == 5 and not set(a) & set(b)


def test_halves_are_the_sorted_first_and_second_halves_of_a_seeded_permutation():
    # every floor compares the same rows, whatever way the halves are read off the permutation
    rng = np.random.default_rng(7)
    for a, b in half_splits(1_001, 4, random_state=7):
        order = rng.permutation(1_001)
        assert np.array_equal(a, np.sort(order[:500])) and np.array_equal(b, np.sort(order[500:1_000]))


def test_noise_floor_of_a_known_case():
    # every value distinct: half B never meets a value of half A, so the share of unseen values is 100 %
    values = np.arange(40)
    floor = noise_floor(lambda a, b: 100.0 * np.mean(~np.isin(values[b], values[a])), len(values))
    assert floor.value == 100.0 and floor.spread == 0.0
    # a constant column: two halves are identical, the Hellinger floor is exactly 0
    column = pd.Series(["x"] * 30)
    assert noise_floor(lambda a, b: hellinger_distance(column.iloc[a], column.iloc[b], "categorical"), 30).value == 0.0
    # the mean of N(0, 1) over n values moves by |N(0, 4 / n)| between halves: E = sqrt(2 / pi) * 2 / sqrt(n)
    x = np.random.default_rng(3).normal(size=10_000)
    floor = noise_floor(lambda a, b: abs(x[a].mean() - x[b].mean()), len(x), splits=400)
    assert floor.value == pytest.approx(math.sqrt(2 / math.pi) * 0.02, rel=0.1)


def test_noise_floor_of_a_table_too_small_to_halve_is_nan():
    assert math.isnan(noise_floor(lambda a, b: 1.0, 3).value)


def test_a_metric_within_its_floor_plus_margin_passes():
    assert quadrature_margin(0.24, 0.1) == pytest.approx(0.02)
    small = Metric("hellinger_mean", 0.25, 0.1, "lower", "d", floor=0.24, margin=quadrature_margin(0.24, 0.1))
    large = Metric("hellinger_mean", 0.25, 0.1, "lower", "d", floor=0.01, margin=quadrature_margin(0.01, 0.1))
    assert small.passed and not large.passed
    assert Metric("hellinger_mean", 0.05, 0.1, "lower", "d", floor=0.5, margin=0.0).passed  # under target


def test_twenty_rows_with_sampling_noise_only_do_not_fail_but_twenty_thousand_do():
    rng = np.random.default_rng(0)
    types = {"g": "categorical", "x": "continuous"}

    def table(n):
        return pd.DataFrame({"g": rng.choice(list("abcde"), n), "x": rng.normal(size=n)})

    small, small_release = table(20), table(20)  # an independent sample: sampling noise only
    metric = signal(small, small_release, types)[0]
    # too few rows to judge: shown, neither passed nor failed (relanon.metrics.columns.TOO_SMALL_FLOOR)
    assert metric.name == "hellinger_mean" and metric.value > 0.1 and metric.passed is not False
    assert metric.breakdown.get("too_small")
    large = table(20_000)
    shifted = large.assign(x=large["x"] + 0.7)
    metric = signal(large, shifted, types)[0]
    assert metric.floor < 0.03 and not metric.passed


# ----------------------------------------------------------------------------- combinations


def test_impossible_combinations_by_hand():
    original = pd.DataFrame({"city": ["Lyon", "Lille", "Paris", "Lyon"] * 10, "region": ["ARA", "HDF", "IDF", "ARA"] * 10,
                             "beds": [100.0, 200.0, 300.0, 100.0] * 10})
    released = pd.DataFrame({"city": ["Lyon", "Lille", "Lyon", "Paris"], "region": ["ARA", "ARA", "HDF", "IDF"],
                             "beds": [100.0, 200.0, 300.0, 250.0]})
    types = {"city": "categorical", "region": "categorical", "beds": "continuous"}
    binned = categorical_like(original, types)
    assert list(binned) == ["city", "region", "beds"]  # beds: 3 values over 40 rows, a small set
    shares = combination_shares(original, released, binned)
    # rows 2 and 3 have impossible (city, region); row 3 (Lyon, 300) and row 4 (250 unseen) for (city, beds)
    assert shares == {"all": 75.0, "city ~ region": 50.0, "city ~ beds": 50.0, "region ~ beds": 75.0}
    found = {m.name: m for m in combination_metrics(original, released, types)}
    # every combination of the original occurs 10 times or more: halves meet every one of them
    assert found["impossible_pairs"].breakdown["pair"] == "region ~ beds" and found["impossible_pairs"].floor == 0.0
    assert not found["impossible_combinations"].passed


# ----------------------------------------------------------------------------- avatars


@pytest.mark.parametrize("k", [5, 10, 20])
def test_every_avatar_carries_a_combination_an_original_carries(k):
    frame = twelve_columns(3_000, seed=2)
    avatars = avatarize(frame, TWELVE_TYPES, k=k, random_state=k).avatars
    found = {m.name: m for m in combination_metrics(frame, avatars, TWELVE_TYPES)}
    assert found["impossible_combinations"].value == 0.0  # halves: about 40 %
    assert found["impossible_pairs"].value == 0.0
    pairs = set(zip(frame["city"], frame["region"], strict=True))
    assert set(zip(avatars["city"], avatars["region"], strict=True)) <= pairs


def test_one_neighbour_is_drawn_with_its_weight():
    # the avatar's categorical part is that of neighbour j with probability w_ij: each column's
    # modality mass sum_j w_ij 1[x_jc = m] holds in expectation
    weights = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    indices = np.array([[4, 5, 6], [7, 8, 9]])
    cumulative = np.cumsum(weights, axis=1)
    rng = np.random.default_rng(0)
    draws = np.array([_draw(indices, cumulative, rng) for _ in range(20_000)])
    for row in range(2):
        frequencies = [(draws[:, row] == j).mean() for j in indices[row]]
        assert frequencies == pytest.approx(weights[row], abs=0.01)


@FAST
@given(st.floats(0.02, 0.4), st.floats(0.02, 0.4), st.floats(0.0, 0.15), st.integers(0, 10**6))
def test_missing_shares_and_missing_together_are_kept(rate_a, rate_b, together, seed):
    rng = np.random.default_rng(seed)
    n = 1_500
    age = rng.integers(18, 90, n)
    frame = pd.DataFrame({
        "age": age,
        "a": np.round(rng.normal(size=n) + age / 30, 2),
        "b": np.round(rng.normal(size=n), 2),
        "g": rng.choice(["x", "y", "z"], n),
    })
    both = rng.random(n) < together
    frame.loc[both | (rng.random(n) < rate_a * (age / 54)), "a"] = np.nan  # more often for older people
    frame.loc[both | (rng.random(n) < rate_b), "b"] = np.nan
    frame.loc[rng.random(n) < rate_b / 2, "g"] = None
    types = {"age": "integer", "a": "continuous", "b": "continuous", "g": "categorical"}
    avatars = avatarize(frame, types, k=10, random_state=seed).avatars
    for column in ("a", "b", "g"):
        assert abs(frame[column].isna().mean() - avatars[column].isna().mean()) < 0.01, column
    both_o = (frame["a"].isna() & frame["b"].isna()).mean()
    both_a = (avatars["a"].isna() & avatars["b"].isna()).mean()
    assert abs(both_o - both_a) < 0.01


@pytest.mark.slow  # the demo's 10,000 patients three times; the property on small tables: the test above
def test_the_demo_bmi_keeps_its_missing_share():
    from relanon.datasets import hospital

    schema, database = hospital(scale=1.0, seed=0)
    patients = database["patients"]
    for seed in range(3):
        avatars = avatarize(patients, schema["patients"].released_columns, k=10, random_state=seed).avatars
        assert abs(avatars["bmi"].isna().mean() - patients["bmi"].isna().mean()) < 0.01


@FAST
@given(st.integers(2, 50), st.integers(0, 10**6), st.sampled_from(["integer", "continuous", "datetime"]))
def test_numbers_from_a_small_set_stay_on_it_and_nothing_leaves_the_range(n_values, seed, kind):
    rng = np.random.default_rng(seed)
    n = 600
    base = np.sort(rng.choice(np.arange(1, 10_000), n_values, replace=False)).astype(np.float64)
    if kind == "continuous":
        base = base / 7.0  # no common step
    small = base[rng.integers(0, n_values, n)]
    x = rng.normal(size=n)
    frame = pd.DataFrame({"small": small, "x": x * 3 + 50, "wide": np.round(rng.lognormal(3, 1, n), 3)})
    if kind == "integer":
        frame["small"] = frame["small"].astype("int64")
    if kind == "datetime":
        frame["small"] = pd.Timestamp("2000-01-01") + pd.to_timedelta(frame["small"].astype("int64"), unit="D")
    types = {"small": kind, "x": "continuous", "wide": "continuous"}
    avatars = avatarize(frame, types, k=10, random_state=seed).avatars
    assert set(avatars["small"]) <= set(frame["small"])
    for column in types:
        assert avatars[column].min() >= frame[column].min() and avatars[column].max() <= frame[column].max()
    if kind == "integer":
        assert avatars["small"].dtype == np.int64


def test_integers_from_a_shared_support_stay_whole_and_on_it():
    rng = np.random.default_rng(0)
    n = 4_000
    years = rng.choice(np.arange(1950, 2010, 2), n)  # 30 even years, then 60 odd ones held by many rows
    frame = pd.DataFrame({"year": np.concatenate([years[: n // 2], rng.choice(np.arange(1951, 2070, 2), n // 2)]),
                          "x": rng.normal(size=n)})
    avatars = avatarize(frame, {"year": "integer", "x": "continuous"}, k=10, random_state=0).avatars
    assert frame["year"].nunique() > 50 and set(avatars["year"]) <= set(frame["year"])


def test_doses_are_released_on_the_doses_of_the_original():
    frame = clinical(4_000, seed=4)
    avatars = avatarize(frame, CLINICAL_TYPES, k=10, random_state=0).avatars
    assert set(avatars["dose_mg"]) <= set(frame["dose_mg"])
    assert set(zip(avatars["drug"], avatars["dose_mg"], strict=True)) <= set(zip(frame["drug"], frame["dose_mg"], strict=True))
    assert hellinger_distance(frame["dose_mg"], avatars["dose_mg"], "continuous") < 0.1
    assert set(avatars["month"]) <= set(frame["month"])


def test_correlations_of_the_twelve_column_table_are_kept():
    frame = twelve_columns(5_000, seed=0)
    avatars = avatarize(frame, TWELVE_TYPES, k=10, random_state=0).avatars
    metric = correlation_difference_ratio(frame, avatars, TWELVE_TYPES)
    assert metric.value < 10  # 14-16 with the former ncp = 5
    assert set(metric.breakdown["std_ratios"]) == {"age", "income", "weight_kg", "height_cm", "systolic", "children"}


# ----------------------------------------------------------------------------- ncp: auto


def test_auto_axes_reaches_the_share_and_never_cuts_a_group():
    assert auto_axes([5.0, 3.0, 1.0, 1.0], 10.0, share=0.5) == 1
    assert auto_axes([5.0, 3.0, 1.0, 1.0], 10.0, share=0.55) == 2
    assert auto_axes([4.0, 2.0, 2.0, 2.0, 0.5], 11.0, share=0.5) == 4  # group 2-4 kept whole
    assert auto_axes([4.0, 2.0, 2.0, 2.0, 0.5], 11.0, share=0.5, cap=3) == 1  # it does not fit: left out
    assert auto_axes([3.0, 3.0, 3.0], 9.0, share=0.25, cap=2) == 2  # a first group over the cap: as many as allowed


@FAST
@given(st.lists(st.sampled_from([3.0, 2.0, 1.5, 1.0, 0.5]), min_size=2, max_size=30), st.floats(0.05, 0.95),
       st.integers(1, 30))
def test_auto_axes_never_ends_inside_a_group_of_equal_eigenvalues(values, share, cap):
    eigenvalues = np.sort(np.array(values))[::-1]
    kept = auto_axes(eigenvalues, float(eigenvalues.sum()), share=share, cap=cap)
    assert 1 <= kept <= len(eigenvalues)
    ends_a_group = kept == len(eigenvalues) or eigenvalues[kept - 1] != eigenvalues[kept]
    whole_first_group = np.all(eigenvalues[:kept] == eigenvalues[0])  # the one case left: over the cap
    assert ends_a_group or (whole_first_group and kept == cap)
    assert kept <= cap or ends_a_group


def tied_table(n=400, seed=0):
    """Two independent, perfectly balanced categoricals: their six modalities give equal eigenvalues."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": np.repeat(list("pqrs"), n // 4),
        "b": np.tile(list("uvwx"), n // 4),
        "x": rng.normal(size=n),
    })


def test_neighbours_do_not_depend_on_the_eigenbasis_of_a_group():
    frame = tied_table()
    types = {"a": "categorical", "b": "categorical", "x": "continuous"}
    full = FactorSpace(types, n_components=100).fit(frame)
    eigenvalues = full.eigenvalues_
    space = FactorSpace(types).fit(frame)
    kept = space.n_components_
    assert kept == len(eigenvalues) or not axes.tied_eigenvalues(eigenvalues[kept - 1], eigenvalues[kept])
    coords = space.transform(frame)
    # another valid basis: rotate the axes inside every group of equal eigenvalues
    rng = np.random.default_rng(1)
    rotated = coords.copy()
    start = 0
    while start < kept:
        end = start + 1
        while end < kept and axes.tied_eigenvalues(eigenvalues[end - 1], eigenvalues[end]):
            end += 1
        q, _ = np.linalg.qr(rng.normal(size=(end - start, end - start)))
        rotated[:, start:end] = coords[:, start:end] @ q
        start = end
    a, b = self_neighbours(coords, 10), self_neighbours(rotated, 10)
    assert np.allclose(a.distances, b.distances)


def test_an_explicit_ncp_wins():
    frame = twelve_columns(1_000, seed=1)
    assert FactorSpace(TWELVE_TYPES, n_components=3).fit(frame).n_components_ == 3
    assert avatarize(frame, TWELVE_TYPES, k=5, ncp=4, random_state=0).ncp == 4
    assert avatarize(frame, TWELVE_TYPES, k=5, random_state=0).ncp == FactorSpace(TWELVE_TYPES).fit(frame).n_components_


# ----------------------------------------------------------------------------- evaluation


def weighted_schema(weight):
    from relanon.schema.model import load_schema

    return load_schema({"relanon": 1, "tables": {"people": {
        "primary_key": "id", "individual": True,
        "columns": {"x": {"type": "continuous", "weight": weight}, "g": "categorical", "y": "continuous"}}}})


def test_privacy_metrics_use_the_column_weights():
    from relanon.metrics import privacy
    from relanon.metrics.scenarios import evaluate

    rng = np.random.default_rng(0)
    n = 300
    people = pd.DataFrame({"id": range(n), "x": rng.normal(size=n), "g": rng.choice(list("abc"), n), "y": rng.normal(size=n)})
    released = people.assign(x=people["x"] + rng.normal(0, 0.3, n), y=people["y"] + rng.normal(0, 0.3, n))
    found = {}
    for weight in (1.0, 10.0):
        evaluation = evaluate(weighted_schema(weight), {"people": people}, {"people": released}, progress=False)
        found[weight] = {m.name: m.value for kind, _, m in evaluation.metrics if kind == "privacy"}
    types = {"x": "continuous", "g": "categorical", "y": "continuous"}
    direct = {m.name: m.value for m in privacy(people, released, types, weights={"x": 10.0}, random_state=0)}
    assert found[10.0]["distance_to_closest"] == direct["distance_to_closest"]
    assert found[10.0]["distance_to_closest"] != found[1.0]["distance_to_closest"]


def test_the_same_release_gets_the_same_figures_from_every_command(tiny_hospital, tiny_hospital_release,
                                                                   tiny_hospital_evaluation):
    from relanon.metrics.scenarios import evaluate

    schema, database = tiny_hospital
    result = tiny_hospital_release
    run = tiny_hospital_evaluation  # relanon anonymize / demo: evaluated with the run's pairing
    again = evaluate(schema, database, result.tables, result, progress=False)
    alone = evaluate(schema, database, result.tables, progress=False)  # relanon evaluate / report: no pairing
    figures = [{(view, m.name): m.value for _, view, m in e.metrics if m.name not in ("hidden_rate", "local_cloaking")}
               for e in (run, again, alone)]
    assert figures[0] == figures[1] == figures[2]
    assert run.to_json() == again.to_json()


def test_unseen_share_counts_released_codes_the_original_never_holds():
    rng = np.random.default_rng(3)
    o = [rng.integers(0, 6, 400), rng.integers(0, 4, 400)]
    r = [rng.integers(0, 7, 250), rng.integers(0, 5, 250)]
    seen = set(zip(o[0].tolist(), o[1].tolist(), strict=True))
    expected = 100.0 * np.mean([pair not in seen for pair in zip(r[0].tolist(), r[1].tolist(), strict=True)])
    assert _unseen_share([(o[0], r[0], 7), (o[1], r[1], 5)]) == pytest.approx(expected, abs=1e-12)
    assert _unseen_share([(o[0], r[0], 7)]) == pytest.approx(100.0 * np.mean(~np.isin(r[0], o[0])), abs=1e-12)


def test_hellinger_metric_with_its_floor_gives_each_column_its_own_distance():
    # the columns binned once for the release and the floor's halves: the distances of the columns one by one
    rng = np.random.default_rng(6)
    original = pd.DataFrame({"x": rng.normal(size=600), "d": rng.choice([1.0, 2.5, 4.0], 600),
                             "g": rng.choice(["a", "b", "c"], 600)})
    released = pd.DataFrame({"x": rng.normal(0.2, 1.0, 500), "d": rng.choice([1.0, 2.5, 3.0], 500),
                             "g": rng.choice(["a", "b", "z"], 500)})
    types = {"x": "continuous", "d": "continuous", "g": "categorical"}
    metric = hellinger_metric(original, released, types)
    assert metric.breakdown["per_column"] == hellinger_distances(original, released, types)
    floors = {c: [] for c in types}
    for a, b in half_splits(len(original), random_state=0):
        for c, distance in hellinger_distances(original.iloc[a], original.iloc[b], types).items():
            floors[c].append(distance)
    assert metric.breakdown["floor_per_column"] == pytest.approx({c: np.mean(v) for c, v in floors.items()}, abs=1e-12)
