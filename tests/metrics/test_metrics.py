"""Privacy and signal metrics: hand-computed cases, the identity release, sampling, errors."""

import math

import numpy as np
import pandas as pd
import pytest

from relanon.common.errors import ParameterError
from relanon.engine.avatar import avatarize
from relanon.metrics import (
    Metric,
    closer_avatar_counts,
    closest_distances_ratio,
    column_direct_match_protection,
    correlation_difference_ratio,
    distance_to_closest,
    hellinger_distance,
    hidden_rate,
    inference,
    local_cloaking,
    metrics_frame,
    privacy,
    row_direct_match_protection,
    signal,
)

# Four originals and four avatars on a line. Avatar a is the avatar of original PAIRING[a]:
# a0=0.4 <- o1, a1=5.0 <- o3, a2=9.0 <- o0, a3=1.8 <- o2.
ORIGINALS = np.array([[0.0], [1.0], [2.0], [10.0]])
AVATARS = np.array([[0.4], [5.0], [9.0], [1.8]])
PAIRING = np.array([1, 3, 0, 2])


def test_strictly_closer_avatars_by_hand():
    # o0 at 0: own avatar 9.0 away; a0 (0.4), a3 (1.8), a1 (5.0) are closer -> 3
    # o1 at 1: own avatar 0.6 away; a3 is 0.8 away -> 0
    # o2 at 2: own avatar 0.2 away -> 0
    # o3 at 10: own avatar 5.0 away; a2 is 1.0 away -> 1
    assert closer_avatar_counts(ORIGINALS, AVATARS, PAIRING).tolist() == [3, 0, 0, 1]


def test_hidden_rate_and_local_cloaking_by_hand():
    assert hidden_rate(ORIGINALS, AVATARS, PAIRING).value == 50.0  # o0 and o3 are hidden
    assert local_cloaking(ORIGINALS, AVATARS, PAIRING).value == 0.5  # median of 0, 0, 1, 3
    assert hidden_rate(ORIGINALS, AVATARS, PAIRING, rows=[0, 3]).value == 100.0


def test_equally_close_avatars_find_an_original_with_probability_one_over_their_number():
    # o0, o1 and o2 at 0, o3 at 5; avatars a0 = 0 (of o0), a1 = 0 (of o1), a2 = 1 (of o2), a3 = 5 (of o3)
    # o0: own avatar at 0, a1 too: 2 tied, found with probability 1/2, 1/2 ranked before it on average
    # o1: the same; o2: a0 and a1 strictly closer (hidden, 2 before); o3: alone on its avatar (found, 0)
    originals, avatars, pairing = [[0.0], [0.0], [0.0], [5.0]], [[0.0], [0.0], [1.0], [5.0]], [0, 1, 2, 3]
    hidden = hidden_rate(originals, avatars, pairing)
    assert hidden.value == 100.0 * (0.5 + 0.5 + 1.0 + 0.0) / 4  # 50.0; 25.0 when a tie counted as found
    assert hidden.breakdown["records_tied"] == 2
    assert local_cloaking(originals, avatars, pairing).value == 0.5  # median of 0.5, 0.5, 2, 0; was 0
    assert closer_avatar_counts(originals, avatars, pairing).tolist() == [0, 0, 2, 0]


def test_repeated_records_are_not_all_found():
    # 1,000 records that are 20 distinct tuples repeated 50 times, released as they are (shuffled):
    # each original has 50 equally close avatars, its own among them: found with probability 1/50
    tuples = pd.DataFrame({"a": list("abcdefghij") * 2, "b": ["x"] * 10 + ["y"] * 10, "n": np.arange(20) % 7})
    original = tuples.iloc[np.repeat(np.arange(20), 50)].reset_index(drop=True)
    pairing = np.random.default_rng(0).permutation(len(original))
    columns = {"a": "categorical", "b": "categorical", "n": "integer"}
    metrics = {m.name: m for m in privacy(original, original.iloc[pairing].reset_index(drop=True), columns,
                                          pairing=pairing)}
    assert metrics["hidden_rate"].value == pytest.approx(98.0)  # was 0.0
    assert metrics["local_cloaking"].value == 24.5  # 49 equally close others, half ranked before: was 0
    assert metrics["distance_to_closest"].value == 0.0
    assert metrics["distance_to_closest"].breakdown["avatars_on_shared_values"] == 1000
    assert metrics["closest_distances_ratio"].value == 1.0
    assert metrics["row_direct_match_protection"].value == 0.0  # the copy is still seen as a copy


def test_distance_to_closest_and_closest_distances_ratio_by_hand():
    # nearest originals: a0 -> 0 (0.4), then 1 (0.6); a1 -> 2 (3), then 1 (4);
    #                    a2 -> 10 (1), then 2 (7); a3 -> 2 (0.2), then 1 (0.8)
    assert distance_to_closest(ORIGINALS, AVATARS).value == pytest.approx((0.4 + 1.0) / 2)
    ratios = sorted([0.4 / 0.6, 3 / 4, 1 / 7, 0.2 / 0.8])
    assert closest_distances_ratio(ORIGINALS, AVATARS).value == pytest.approx((ratios[1] + ratios[2]) / 2)


def test_an_avatar_between_two_identical_originals_has_ratio_one():
    assert closest_distances_ratio([[0.0], [0.0]], [[0.0]]).value == 1.0


def test_row_direct_match_protection_by_hand():
    original = pd.DataFrame({"n": [1.0, 2.0, np.nan, 4.0], "g": ["a", "b", "c", "d"]})
    released = pd.DataFrame({"n": [2.0, np.nan, 4.0, 5.0], "g": ["b", "c", "x", "d"]})
    metric = row_direct_match_protection(original, released)
    assert metric.value == 50.0  # (2, b) and (missing, c) are released verbatim
    assert metric.breakdown["records_found"] == 2


def test_column_direct_match_protection_by_hand():
    original = pd.DataFrame(
        {
            "age": pd.array([30, 30, 41, 104, None], dtype="Int64"),  # singling: 41, 104 (missing never)
            "blood": ["A", "A", "B", "AB-", "O"],  # singling: B, AB-, O
            "bmi": [20.5, 20.5, 22.0, 31.0, 25.0],  # singling: 22.0, 31.0, 25.0
        }
    )
    released = pd.DataFrame(
        {
            "age": [30, 41, 41, 104, 50],  # int64 where the original is Int64: compared as stored
            "blood": ["A", "A", "A", "O", "O"],
            "bmi": [20.5, 21.0, 23.0, 24.0, 26.0],
        }
    )
    metric = column_direct_match_protection(original, released)
    # age: 41 and 104 both repeated -> 0 %; blood: O repeated, B and AB- not -> 66.7 %; bmi: none -> 100 %
    assert metric.breakdown["per_column"] == pytest.approx({"age": 0.0, "blood": 200 / 3, "bmi": 100.0})
    assert metric.breakdown["singling_values"] == {"age": 2, "blood": 3, "bmi": 3}
    assert metric.value == 0.0 and metric.target is None and metric.passed is None  # for information
    # a column without singling values is fully protected
    assert column_direct_match_protection(pd.DataFrame({"g": ["a", "a"]}), pd.DataFrame({"g": ["a", "a"]})).value == 100


def test_inference_by_hand():
    original = pd.DataFrame({"age": [20, 40, 60], "smoker": ["no", "yes", "no"], "bmi": [20.0, 30.0, 40.0]})
    released = pd.DataFrame({"age": [21, 41, 59], "smoker": ["no", "no", "no"], "bmi": [22.0, 30.0, np.nan]})
    types = {"age": "integer", "smoker": "categorical", "bmi": "continuous"}
    found = {m.name: m for m in inference(original, released, types, known=["age"], sensitive=["smoker", "bmi"])}
    # each original's closest avatar on age is the one at the same position
    assert found["inference_categorical"].value == pytest.approx(100 / 3)  # "yes" guessed "no"
    smape = (200 * 2 / 42 + 0 + 200) / 3  # 20 vs 22; 30 vs 30; 40 vs missing
    assert found["inference_continuous"].value == pytest.approx(smape)
    assert found["inference_continuous"].breakdown["per_column"] == {"bmi": pytest.approx(smape)}


def test_hellinger_of_categoricals_by_hand():
    p = {"a": 0.5, "b": 0.5}
    q = {"a": 0.75, "c": 0.25}
    expected = math.sqrt(1 - math.sqrt(p["a"] * q["a"]))
    value = hellinger_distance(pd.Series(["a", "b", "a", "b"]), pd.Series(["a", "a", "a", "c"]), "categorical")
    assert value == pytest.approx(expected)
    with_missing = hellinger_distance(pd.Series(["a", None]), pd.Series([None, None]), "categorical")
    assert with_missing == pytest.approx(math.sqrt(1 - math.sqrt(0.5 * 1.0)))


def test_hellinger_of_continuous_values_on_quantile_bins_of_the_original_by_hand():
    original = pd.Series(np.arange(8.0))  # Sturges: 4 quantile bins (cuts 2, 4, 6), a quarter each
    released = pd.Series([0.5, 1.5, 3.0, 3.0, 100.0, -5.0, np.nan, np.nan])
    # released shares: bin0 3/8 (0.5, 1.5, -5 below the range), bin1 2/8, bin2 0, bin3 1/8 (100), missing 2/8
    bc = math.sqrt(0.25 * 3 / 8) + math.sqrt(0.25 * 2 / 8) + math.sqrt(0.25 * 1 / 8)
    assert hellinger_distance(original, released, "continuous") == pytest.approx(math.sqrt(1 - bc))


def test_hellinger_of_few_values_uses_one_bin_per_value_and_sees_values_never_held():
    # 3 values held by 10 rows or more each: shares (1/2, 1/4, 1/4) against (1/4, 1/2, 0) + 1/4 of 2.5
    original = pd.Series([1.0] * 20 + [2.0] * 10 + [3.0] * 10)
    released = pd.Series([1.0, 2.0, 2.0, 2.5])
    bc = math.sqrt(0.5 * 0.25) + math.sqrt(0.25 * 0.5)
    assert hellinger_distance(original, released, "continuous") == pytest.approx(math.sqrt(1 - bc))


def test_correlation_difference_ratio_by_hand():
    original = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [1.0, 2, 3, 4], "z": [1.0, 0, 0, 1]})
    released = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [4.0, 3, 2, 1], "z": [1.0, 0, 0, 1]})
    types = {"x": "continuous", "y": "continuous", "z": "continuous"}
    # r(x, y): 1 -> -1; r(x, z) = r(y, z) = 0 in both: mean |difference| = 2 / 3
    metric = correlation_difference_ratio(original, released, types)
    assert metric.value == pytest.approx(200 / 3)
    assert metric.breakdown["pairs"]["x ~ y"] == pytest.approx(2.0)
    assert not metric.passed


def test_the_identity_release_is_not_private_and_keeps_every_signal():
    rng = np.random.default_rng(0)
    table = pd.DataFrame({
        "x": rng.normal(size=300),
        "y": rng.normal(size=300),
        "g": rng.choice(["a", "b", "c"], 300),
        "n": rng.integers(0, 50, 300),
    })
    types = {"x": "continuous", "y": "continuous", "g": "categorical", "n": "integer"}
    found = {m.name: m.value for m in privacy(table, table, types, pairing=np.arange(300))}
    assert found["hidden_rate"] == 0
    assert found["local_cloaking"] == 0
    assert found["distance_to_closest"] == 0
    assert found["row_direct_match_protection"] == 0
    kept = {m.name: m.value for m in signal(table, table.sample(frac=1.0, random_state=1), types)}
    assert kept == {"hellinger_mean": 0, "hellinger_std": 0, "correlation_difference_ratio": pytest.approx(0, abs=1e-12),
                    "hellinger_column": 0, "std_ratio_gap": pytest.approx(0, abs=1e-12), "tail_quantile_shift": 0}


def test_avatars_are_more_private_with_more_neighbours_and_keep_the_signal():
    rng = np.random.default_rng(1)
    n = 2000
    age = rng.integers(18, 90, n)
    table = pd.DataFrame({
        "age": age,
        "bmi": np.where(rng.random(n) < 0.1, np.nan, 18 + age / 8 + rng.normal(0, 3, n)),
        "sex": rng.choice(["F", "M"], n),
        "smoker": rng.random(n) < 0.25,
    })
    types = {"age": "integer", "bmi": "continuous", "sex": "categorical", "smoker": "boolean"}
    hidden = {}
    for k in (5, 20):
        avatars, pairing = avatarize(table, types, k=k, random_state=0)
        found = {m.name: m for m in privacy(table, avatars, types, pairing=pairing, known=["age", "sex"],
                                            sensitive=["bmi", "smoker"])}
        kept = {m.name: m for m in signal(table, avatars, types)}
        hidden[k] = found["hidden_rate"].value
        assert found["row_direct_match_protection"].passed and found["inference_categorical"].passed
        assert kept["hellinger_mean"].passed and kept["correlation_difference_ratio"].passed
    assert 50 < hidden[5] < hidden[20]  # few columns: avatars stay close; more neighbours hide better


def test_large_tables_are_measured_on_a_seeded_sample():
    rng = np.random.default_rng(2)
    table = pd.DataFrame({"x": rng.normal(size=400), "g": rng.choice(["a", "b"], 400)})
    types = {"x": "continuous", "g": "categorical"}
    avatars, pairing = avatarize(table, types, k=5, random_state=0)
    first = privacy(table, avatars, types, pairing=pairing, sample_size=50, random_state=7)
    again = privacy(table, avatars, types, pairing=pairing, sample_size=50, random_state=7)
    assert [m.value for m in first] == [m.value for m in again]
    by_name = {m.name: m for m in first}
    assert by_name["hidden_rate"].breakdown["records"] == 50
    assert by_name["distance_to_closest"].breakdown["avatars"] == 50
    assert by_name["row_direct_match_protection"].breakdown["records"] == 400


def test_metrics_needing_the_pairing_are_left_out_without_it():
    table = pd.DataFrame({"x": np.arange(10.0)})
    names = [m.name for m in privacy(table, table, {"x": "continuous"})]
    assert names == [
        "distance_to_closest",
        "closest_distances_ratio",
        "row_direct_match_protection",
        "column_direct_match_protection",
    ]


def test_a_bad_pairing_is_explained():
    with pytest.raises(ParameterError, match="permutation"):
        hidden_rate(ORIGINALS, AVATARS, [0, 0, 1, 2])
    with pytest.raises(ParameterError, match="one original position per avatar"):
        hidden_rate(ORIGINALS, AVATARS, [0, 1, 2])


def test_bad_inference_roles_are_explained():
    table = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    types = {"a": "continuous", "b": "categorical"}
    with pytest.raises(ParameterError, match="both known and sensitive"):
        inference(table, table, types, known=["a"], sensitive=["a"])
    with pytest.raises(ParameterError, match="unknown: c"):
        inference(table, table, types, known=["a"], sensitive=["c"])


def test_signal_leaves_out_correlations_without_two_numeric_columns():
    table = pd.DataFrame({"x": [1.0, 2.0, 3.0], "g": ["a", "b", "a"]})
    names = [m.name for m in signal(table, table, {"x": "continuous", "g": "categorical"})]
    assert names == ["hellinger_mean", "hellinger_std"]


@pytest.mark.parametrize(
    ("value", "target", "direction", "passed"),
    [(95.0, 90.0, "higher", True), (90.0, 90.0, "higher", False), (0.05, 0.1, "lower", True),
     (0.2, 0.1, "lower", False), (float("nan"), 0.1, "lower", False), (0.3, None, "lower", None)],
)
def test_a_metric_passes_strictly_on_the_good_side_of_its_target(value, target, direction, passed):
    assert Metric("m", value, target, direction, "d").passed is passed


def test_metrics_read_as_a_table_and_plain_data():
    metric = Metric("hidden_rate", 95.0, 90.0, "higher", "Share hidden.", {"records": 10})
    assert metric.to_dict()["passed"] is True and metric.to_dict()["breakdown"] == {"records": 10}
    frame = metrics_frame([metric])
    assert frame.loc["hidden_rate", "value"] == 95.0 and bool(frame.loc["hidden_rate", "passed"])
    with pytest.raises(ValueError, match="direction"):
        Metric("m", 1.0, 1.0, "up", "d")


def test_privacy_moves_a_bar_through_its_distance_searches_and_changes_no_figure():
    """A view of many people reports its searches by parts (a bar that moves), ending at its total."""
    from relanon.engine.neighbours import PROGRESS_QUERIES
    from relanon.metrics.privacy import privacy

    rng = np.random.default_rng(3)
    n = 2 * PROGRESS_QUERIES + 100
    people = pd.DataFrame({"x": rng.normal(size=n), "y": rng.normal(size=n)})
    released = people.sample(frac=1.0, random_state=1).reset_index(drop=True) + 0.01
    pairing = people.sample(frac=1.0, random_state=1).index.to_numpy()
    types = {"x": "continuous", "y": "continuous"}
    calls = []
    with_bar = privacy(people, released, types, pairing=pairing, random_state=0,
                       progress=lambda done, total: calls.append((done, total)))
    quiet = privacy(people, released, types, pairing=pairing, random_state=0)
    assert [(m.name, m.value) for m in with_bar] == [(m.name, m.value) for m in quiet]
    done = [d for d, _ in calls]
    assert len({t for _, t in calls}) == 1 and calls[-1][0] == calls[-1][1]
    assert done == sorted(done) and len(set(done)) >= 7  # 3 searches of 3 parts each, then the other measures


@pytest.mark.parametrize("dims", [4, 14])
def test_privacy_figures_are_the_same_whichever_search_answers(monkeypatch, dims):
    """The hidden rate, local cloaking and distances to the closest record, searched by kd-tree or by blocks of the
    distance matrix (relanon.engine.distance_blocks), are the same floats: duplicated records and ties included."""
    from relanon.engine import neighbours
    from relanon.metrics.privacy import privacy

    rng = np.random.default_rng(dims)
    n = 600
    frame = pd.DataFrame({f"x{i}": rng.integers(0, 3, n).astype(float) for i in range(dims // 2)}
                         | {f"g{i}": rng.choice(["a", "b", "c"], n) for i in range(dims - dims // 2)})
    avatars = frame.sample(frac=1.0, random_state=1).reset_index(drop=True)
    avatars.iloc[::3, 0] += 0.5  # some avatars off the originals, most on duplicated values
    pairing = rng.permutation(n)
    types = {c: "continuous" if c.startswith("x") else "categorical" for c in frame}

    def figures(points_per_cell):
        monkeypatch.setattr(neighbours, "TREE_POINTS_PER_CELL", points_per_cell)
        monkeypatch.setattr(neighbours, "NEAREST_POINTS_PER_CELL", points_per_cell)
        return [(m.name, m.value, m.breakdown) for m in privacy(frame, avatars, types, pairing=pairing, random_state=0)]

    by_tree, by_blocks = figures(0), figures(float("inf"))
    assert by_tree == by_blocks
    assert dict((name, value) for name, value, _ in by_tree)["hidden_rate"] > 0
