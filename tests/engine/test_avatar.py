"""Single-table avatarization: types kept, seeds, edge cases, neighbour search, the demo table."""

import inspect
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from relanon.common.errors import DataError, ParameterError
from relanon.engine import mixing
from relanon.engine.avatar import AvatarResult, RunHooks, avatarize, avatarize_in_run, neighbour_weights
from relanon.engine.neighbours import count_strictly_closer, cross_neighbours, self_neighbours
from relanon.schema.model import Column

TYPES = {
    "height": "continuous",
    "age": "integer",
    "visits": "integer",
    "score": "continuous",
    "flag": "boolean",
    "consent": "boolean",
    "birth": "datetime",
    "seen_at": "datetime",
    "city": "categorical",
    "group": "categorical",
    "zip": "categorical",
    "grade": "categorical",
    "bmi": "continuous",
}


def every_type(n=1500, seed=0):
    """One column per in-memory convention of the project, with missing values where allowed."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    missing = rng.random((5, n)) < np.array([[0.1], [0.2], [0.1], [0.25], [0.1]])
    return pd.DataFrame({
        "id": np.arange(n) + 1000,
        "height": 150 + 0.2 * age + rng.normal(0, 8, n),
        "age": age,
        "visits": pd.array(np.where(missing[0], None, rng.poisson(3, n)), dtype="Int64"),
        "score": pd.array(np.where(missing[1], None, rng.normal(size=n)), dtype="Float64"),
        "flag": rng.random(n) < 0.3,
        "consent": pd.array(np.where(missing[2], None, rng.random(n) < 0.5), dtype="boolean"),
        "birth": pd.to_datetime("2024-01-01") - pd.to_timedelta(age * 365 + rng.integers(0, 365, n), unit="D"),
        "seen_at": pd.Series(pd.Timestamp("2023-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 10**7, n), unit="s"))
        .dt.tz_convert("Europe/Paris").astype("datetime64[ms, Europe/Paris]"),
        "city": pd.Series(np.where(missing[3], None, rng.choice(["Paris", "Lyon", "Nice", "Lille"], n)), dtype="str"),
        "group": pd.Series(rng.choice(["a", "b", "c"], n), dtype=object),
        "zip": rng.choice([75001, 69001, 6000, 59000], n),
        "grade": pd.Categorical(rng.choice(["low", "mid", "high"], n), categories=["low", "mid", "high"], ordered=True),
        "bmi": np.where(missing[4], np.nan, 18 + age / 8 + rng.normal(0, 3, n)),
        "note": rng.choice(["free text", "other"], n),
    })


@pytest.fixture(scope="module")
def table():
    return every_type()


@pytest.fixture(scope="module")
def result(table):
    return avatarize(table, TYPES, k=10, random_state=42, name="people")


def test_one_avatar_per_row_same_columns_order_dtypes_fresh_index(table, result):
    avatars = result.avatars
    assert isinstance(result, AvatarResult)
    assert list(avatars.columns) == [c for c in table.columns if c in TYPES]
    assert avatars.dtypes.to_dict() == table[list(avatars.columns)].dtypes.to_dict()
    assert len(avatars) == len(table)
    assert avatars.index.equals(pd.RangeIndex(len(table)))


def test_undeclared_and_dropped_columns_are_not_released(table):
    columns = [Column("age", "integer"), Column("city", "categorical", 2.0), Column("note", "drop")]
    avatars, _ = avatarize(table, columns, k=5, random_state=0)
    assert list(avatars.columns) == ["age", "city"]


def test_same_seed_same_bytes_other_seed_other_avatars(table, result):
    again = avatarize(table, TYPES, k=10, random_state=42, name="people")
    assert result.avatars.to_csv().encode() == again.avatars.to_csv().encode()
    assert np.array_equal(result.pairing, again.pairing)
    other = avatarize(table, TYPES, k=10, random_state=43, name="people")
    assert not result.avatars.equals(other.avatars)
    generator = avatarize(table, TYPES, k=10, random_state=np.random.default_rng(42), name="people")
    assert generator.avatars.equals(result.avatars)


def test_the_input_is_never_modified(table):
    before = table.copy(deep=True)
    avatarize(table, TYPES, k=10, random_state=1)
    pd.testing.assert_frame_equal(table, before)


def test_the_pairing_points_each_avatar_to_its_original():
    rng = np.random.default_rng(3)
    cluster = rng.integers(0, 4, 800)
    frame = pd.DataFrame({"x": cluster * 100.0 + rng.normal(0, 1, 800), "g": np.array(list("abcd"))[cluster]})
    avatars, pairing = avatarize(frame, {"x": "continuous", "g": "categorical"}, k=8, random_state=0)
    assert sorted(pairing.tolist()) == list(range(800))
    assert not np.array_equal(pairing, np.arange(800))  # the rows are shuffled
    source = frame.iloc[pairing].reset_index(drop=True)
    assert (avatars["g"] == source["g"]).all()
    assert (np.abs(avatars["x"] - source["x"]) < 10).all()


def test_values_stay_in_their_domain(table, result):
    avatars = result.avatars
    for column in ("group", "zip", "grade", "city"):
        assert set(avatars[column].dropna()) <= set(table[column].dropna())
    assert avatars["zip"].dtype == np.int64
    for column in ("age", "visits", "height", "bmi"):
        assert avatars[column].min() >= table[column].min() and avatars[column].max() <= table[column].max()
    assert (avatars["birth"] == avatars["birth"].dt.normalize()).all()  # dates stay dates
    assert (avatars["seen_at"].dt.microsecond == 0).all() and (avatars["seen_at"].dt.nanosecond == 0).all()


def test_missing_values_come_back_in_similar_proportions(table, result):
    for column in ("visits", "score", "consent", "city", "bmi"):
        original, released = table[column].isna().mean(), result.avatars[column].isna().mean()
        assert released == pytest.approx(original, abs=0.05), column
        assert released > 0


def test_avatars_are_mixtures_not_copies(table, result):
    released = result.avatars
    source = table.iloc[result.pairing].reset_index(drop=True)
    assert (released["height"] != source["height"]).mean() > 0.95
    def row_hashes(frame):
        return pd.util.hash_pandas_object(frame[["height", "age", "city"]], index=False)

    assert not row_hashes(released).isin(row_hashes(table)).any()


# ----------------------------------------------------------------------------- edge cases


def test_exact_duplicate_rows_are_avatarized():
    frame = pd.DataFrame({"x": [1.0] * 30 + list(np.linspace(2, 9, 30)), "g": ["a"] * 30 + ["b", "c"] * 15})
    avatars, _ = avatarize(frame, {"x": "continuous", "g": "categorical"}, k=5, random_state=0)
    assert np.isfinite(avatars["x"]).all()
    assert (avatars["x"] == 1.0).sum() >= 25  # a duplicate's neighbours are its copies


def test_a_constant_column_stays_exactly_constant():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=200), "c": 0.1 + 0.2, "n": 7})
    avatars, _ = avatarize(frame, {"x": "continuous", "c": "continuous", "n": "integer"}, k=10, random_state=0)
    assert (avatars["c"] == 0.1 + 0.2).all() and (avatars["n"] == 7).all()


def test_dates_keep_the_time_of_day_they_all_share_local_midnights_in_their_zone():
    rng = np.random.default_rng(0)
    days = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 1_000, 300), unit="D")
    frame = pd.DataFrame({
        "x": rng.normal(size=300),
        "noon": days + pd.Timedelta(hours=12),
        "day": pd.Series(days).dt.tz_localize("Europe/Paris").astype("datetime64[us, Europe/Paris]"),
        "date": days,
    })
    types = {"x": "continuous", "noon": "datetime", "day": "datetime", "date": "datetime"}
    avatars, _ = avatarize(frame, types, k=10, random_state=0)
    assert avatars["noon"].nunique() > 50 and (avatars["noon"].dt.strftime("%H:%M:%S") == "12:00:00").all()
    assert avatars["day"].dtype == frame["day"].dtype and avatars["day"].nunique() > 50
    assert (avatars["day"] == avatars["day"].dt.normalize()).all()  # 00:00 in Paris, winter and summer
    assert (avatars["date"] == avatars["date"].dt.normalize()).all()


def test_continuous_values_keep_the_precision_of_their_column():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "cents": np.round(rng.lognormal(4, 1, 300), 2),  # an amount: 2 decimals
            "whole": np.round(rng.normal(50, 10, 300)),  # whole numbers stored as floats
            "raw": rng.normal(size=300),  # full precision: left alone
        }
    )
    avatars, _ = avatarize(frame, dict.fromkeys(frame, "continuous"), k=5, random_state=0)
    assert (np.round(avatars["cents"], 2) == avatars["cents"]).all()
    assert (np.round(avatars["whole"]) == avatars["whole"]).all()
    assert (np.round(avatars["raw"], 6) != avatars["raw"]).mean() > 0.9
    assert avatars.dtypes.tolist() == [np.float64] * 3
    # mixtures, not copies: most amounts are new values
    assert (~avatars["cents"].isin(frame["cents"])).mean() > 0.5


def test_an_all_missing_column_stays_missing():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "x": rng.normal(size=100),
        "empty": np.nan,
        "nothing": pd.Series([None] * 100, dtype="str"),
        "never": pd.Series(pd.NaT, index=range(100), dtype="datetime64[ns]"),
    })
    types = {"x": "continuous", "empty": "continuous", "nothing": "categorical", "never": "datetime"}
    avatars, _ = avatarize(frame, types, k=5, random_state=0)
    assert avatars[["empty", "nothing", "never"]].isna().all().all()
    assert avatars.dtypes.to_dict() == frame.dtypes.to_dict()


def test_a_categorical_with_one_level():
    frame = pd.DataFrame({"x": np.arange(50.0), "country": "FR"})
    avatars, _ = avatarize(frame, {"x": "continuous", "country": "categorical"}, k=4, random_state=0)
    assert (avatars["country"] == "FR").all()


def test_a_high_cardinality_categorical_stays_sparse():
    rng = np.random.default_rng(0)
    n, levels = 20_000, 3_000
    shares = 1 / np.arange(1, levels + 1)
    frame = pd.DataFrame({
        "city": np.array([f"city_{i:04d}" for i in range(levels)])[rng.choice(levels, n, p=shares / shares.sum())],
        "age": rng.integers(0, 100, n),
        "income": rng.lognormal(10, 1, n),
    })
    tracemalloc.start()
    try:
        avatars, _ = avatarize(frame, {"city": "categorical", "age": "integer", "income": "continuous"}, k=10, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100e6  # a dense one-hot table alone would be 480 MB
    assert set(avatars["city"]) <= set(frame["city"])


@pytest.mark.slow
def test_a_5000_level_column_on_100000_rows_stays_under_2_gb():
    rng = np.random.default_rng(0)
    n, levels = 100_000, 5_000
    frame = pd.DataFrame({
        "city": np.array([f"city_{i:04d}" for i in range(levels)])[rng.integers(0, levels, n)],
        "age": rng.integers(0, 100, n),
        "income": rng.lognormal(10, 1, n),
        "sex": rng.choice(["F", "M"], n),
    })
    types = {"city": "categorical", "age": "integer", "income": "continuous", "sex": "categorical"}
    tracemalloc.start()
    try:
        avatarize(frame, types, k=10, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2e9


@pytest.mark.parametrize("k", [10, 12, 1, 0, 2.5, True])
def test_k_out_of_range_names_the_table_its_size_and_the_largest_k(k):
    frame = pd.DataFrame({"x": np.arange(10.0)})
    with pytest.raises(ParameterError) as caught:
        avatarize(frame, {"x": "continuous"}, k=k, name="visits")
    message = str(caught.value)
    assert "'visits'" in message and "10 rows" in message and "k must be an integer from 2 to 9" in message


@pytest.mark.parametrize("n", [0, 1, 2])
def test_a_table_of_fewer_than_three_rows_is_refused_with_a_way_out(n):
    frame = pd.DataFrame({"x": np.arange(float(n))})
    with pytest.raises(ParameterError) as caught:
        avatarize(frame, {"x": "continuous"}, k=2, name="settings")
    message = str(caught.value)
    assert "'settings'" in message and "too few" in message and "method: keep" in message


def test_three_rows_is_the_smallest_table():
    frame = pd.DataFrame({"x": [1.0, 2.0, 4.0], "g": ["a", "b", "a"]})
    avatars, pairing = avatarize(frame, {"x": "continuous", "g": "categorical"}, k=2, random_state=0)
    assert len(avatars) == 3 and sorted(pairing.tolist()) == [0, 1, 2]


def test_infinite_values_are_refused_naming_the_column():
    frame = pd.DataFrame({"x": np.arange(20.0), "cost": np.r_[np.arange(19.0), np.inf]})
    with pytest.raises(DataError) as caught:
        avatarize(frame, {"x": "continuous", "cost": "continuous"}, k=3, name="visits")
    assert "visits.cost" in str(caught.value) and "infinite" in str(caught.value)


def test_a_missing_declared_column_is_refused():
    with pytest.raises(DataError, match="people.weight"):
        avatarize(pd.DataFrame({"x": np.arange(9.0)}), {"x": "continuous", "weight": "continuous"}, k=3, name="people")


# ----------------------------------------------------------------------------- neighbours and weights


def test_self_neighbours_equal_brute_force_and_never_include_the_point():
    rng = np.random.default_rng(5)
    points = rng.normal(size=(500, 3))
    found = self_neighbours(points, 7)
    brute = cdist(points, points)
    np.fill_diagonal(brute, np.inf)
    assert np.allclose(found.distances, np.sort(brute, axis=1)[:, :7])
    assert not (found.indices == np.arange(500)[:, None]).any()


def test_self_neighbours_skip_the_point_among_many_duplicates():
    points = np.r_[np.zeros((12, 2)), np.ones((3, 2))]
    found = self_neighbours(points, 4)
    assert not (found.indices == np.arange(15)[:, None]).any()
    assert (found.distances[:12] == 0).all()


def test_cross_neighbours_and_strict_counts_equal_brute_force():
    rng = np.random.default_rng(6)
    reference, queries = rng.normal(size=(300, 4)), rng.normal(size=(50, 4))
    distances = cdist(queries, reference)
    found = cross_neighbours(reference, queries, 3)
    assert np.allclose(found.distances, np.sort(distances, axis=1)[:, :3])
    radii = distances[:, 10]
    assert np.array_equal(count_strictly_closer(reference, queries, radii), (distances < radii[:, None]).sum(axis=1))


def test_weights_sum_to_one_and_favour_close_neighbours():
    rng = np.random.default_rng(0)
    distances = np.tile([0.1, 1.0, 1.0, 10.0], (20_000, 1))
    weights = neighbour_weights(distances, rng)
    assert np.allclose(weights.sum(axis=1), 1.0)
    mean = weights.mean(axis=0)
    assert mean[0] > mean[1] > mean[3]
    assert mean[1] == pytest.approx(mean[2], abs=0.01)  # equal distances, equal chances


# ----------------------------------------------------------------------------- the demo database


def test_demo_patients_at_k20_are_hidden_and_keep_their_distributions():
    from relanon.datasets import hospital
    from relanon.metrics import privacy, signal

    schema, database = hospital(scale=1.0, seed=0)
    patients, columns = database["patients"], schema["patients"].released_columns
    first = avatarize(patients, columns, k=20, random_state=2024, name="patients")
    second = avatarize(patients, columns, k=20, random_state=2024, name="patients")
    assert first.avatars.to_csv().encode() == second.avatars.to_csv().encode()
    found = {m.name: m for m in privacy(patients, first.avatars, columns, pairing=first.pairing, random_state=0)}
    kept = {m.name: m for m in signal(patients, first.avatars, columns)}
    assert kept["hellinger_mean"].value < 0.1
    # The patients' own 7 columns alone, neighbours in 12 axes (ncp auto): 89.8-90.9 % at k=20 for
    # seeds 0-3 and 2024 (87.5-88.2 % at k=15; 84 % at k=10, which the former 5 axes kept at 88 %).
    # In the multi-table run, patients are avatarized with their number of visits too, and their
    # STANDALONE hidden rate is above 90 % (tests/multitable/test_pipeline.py); this guards the engine alone.
    assert found["hidden_rate"].value > 88
    assert found["row_direct_match_protection"].value > 99


def test_numbers_keep_more_spread_than_the_weighted_mean_and_linear_rules_hold(monkeypatch):
    rng = np.random.default_rng(4)
    start = rng.normal(100.0, 30.0, 600)
    table = pd.DataFrame({"start": start, "end": start + rng.gamma(2.0, 5.0, 600),
                          "kind": rng.choice(["a", "b", "c"], 600)})
    for other in range(4):  # independent columns: neighbours near in all of them are far apart in each
        table[f"x{other}"] = rng.normal(size=600)
    columns = {"start": "continuous", "end": "continuous", "kind": "categorical"} | {f"x{o}": "continuous" for o in range(4)}
    spread = {}
    for share in (0.0, mixing.SPREAD):
        monkeypatch.setattr(mixing, "SPREAD", share)
        # the convex mix alone (restore_spread is measured in test_column_verdict)
        avatars = avatarize_in_run(table, columns, RunHooks(restore_spread=False), k=10, random_state=2).avatars
        assert (avatars["start"] <= avatars["end"]).all()  # the same mix for every column of a row
        assert avatars["start"].between(start.min(), start.max()).all()
        spread[share] = avatars["x0"].std() / table["x0"].std()
    assert mixing.SPREAD == 0.5
    assert spread[0.5] > spread[0.0] + 0.01  # measured: 0.74 -> 0.76


def test_avatarize_takes_the_users_options_and_a_run_gives_its_hooks_apart():
    assert list(inspect.signature(avatarize).parameters) == [
        "table", "columns", "k", "ncp", "weights", "random_state", "name", "min_counts", "sensitive",
        "combination_holders"]
    rng = np.random.default_rng(3)
    people = pd.DataFrame({"age": rng.integers(20, 80, 200), "town": rng.choice(["a", "b", "c", "d"], 200),
                           "sex": rng.choice(["F", "M"], 200)})
    types = {"age": "integer", "town": "categorical", "sex": "categorical"}
    alone = avatarize(people, types, k=5, random_state=4, min_counts=3, sensitive=["sex"])
    in_run = avatarize_in_run(people, types, RunHooks(), k=5, random_state=4, min_counts=3, sensitive=["sex"])
    pd.testing.assert_frame_equal(alone.avatars, in_run.avatars)
    assert np.array_equal(alone.pairing, in_run.pairing)
    unshifted = avatarize_in_run(people, types, RunHooks(shift_numbers=False), k=5, random_state=4, min_counts=3,
                                 sensitive=["sex"])
    assert not unshifted.avatars["age"].equals(alone.avatars["age"])  # the hooks are read: the test can fail


def test_the_run_hears_each_stage_of_the_avatarization_and_the_avatars_do_not_change():
    rng = np.random.default_rng(5)
    people = pd.DataFrame({"age": rng.integers(20, 80, 200).astype(float), "sex": rng.choice(["F", "M"], 200),
                           "income": rng.normal(3000, 500, 200)})
    types = {"age": "continuous", "sex": "categorical", "income": "continuous"}
    calls = []
    heard = avatarize_in_run(people, types, RunHooks(progress=lambda done, total: calls.append((done, total))),
                             k=5, random_state=1, sensitive=["income"])
    plain = avatarize_in_run(people, types, RunHooks(), k=5, random_state=1, sensitive=["income"])
    pd.testing.assert_frame_equal(heard.avatars, plain.avatars)
    assert [d for d, _ in calls] == list(range(7)) and {t for _, t in calls} == {6}
