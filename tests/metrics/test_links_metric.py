"""The link-fidelity metric: each child joined to its parent, every (child, parent) column pair compared."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relanon.metrics.base import Metric
from relanon.metrics.links import halves_noise_floor, link_fidelity, pair_similarities, total_variation
from relanon.metrics.noise_floor import half_splits
from relanon.schema.graph import all_links
from relanon.schema.model import load_schema

SCHEMA = load_schema("""
relanon: 1
name: tiny
tables:
  parents:
    primary_key: pid
    columns: {x: continuous, g: categorical}
  children:
    primary_key: cid
    foreign_keys: [{column: pid, references: parents}]
    columns: {y: integer}
""")


def database(children_parents):
    return {
        "parents": pd.DataFrame({"pid": [1, 2], "x": [0.0, 1.0], "g": ["a", "b"]}),
        "children": pd.DataFrame({"cid": [1, 2, 3, 4], "pid": children_parents, "y": [0, 0, 1, 1]}),
    }


def test_link_fidelity_on_a_hand_computed_case():
    original = database([1, 1, 2, 2])  # y follows its parent: y = x, and y = 0 exactly for g = a
    released = database([1, 2, 1, 2])  # the same children, linked across
    metric = link_fidelity(SCHEMA, original, released, all_links(SCHEMA)[0], n_splits=0)
    # y ~ x: correlation 1 in the original, 0 in the release: 1 - |1 - 0| / 2 = 0.5
    # y ~ g: joint shares (0,a) .5, (1,b) .5 against .25 in each of the four cells: TVD 0.5, similarity 0.5
    assert metric.breakdown["pairs"] == {"y ~ x": 0.5, "y ~ g": 0.5}
    assert metric.breakdown["measures"] == {"y ~ x": "correlation", "y ~ g": "contingency"}
    assert metric.value == pytest.approx(0.5)
    assert metric.passed is False


def test_a_faithful_release_scores_one():
    original = database([1, 1, 2, 2])
    metric = link_fidelity(SCHEMA, original, original, all_links(SCHEMA)[0], n_splits=0)
    assert metric.value == 1.0 and metric.passed


def test_children_without_parent_are_left_out_of_the_join():
    original = database([1, 1, 2, 2])
    released = database([1, 1, 2, None])
    released["children"]["pid"] = released["children"]["pid"].astype("Int64")
    metric = link_fidelity(SCHEMA, original, released, all_links(SCHEMA)[0], n_splits=0)
    # release join: (y=0, x=0) twice and (y=1, x=1) once: correlation 1; joint shares 2/3 and 1/3
    assert metric.breakdown["pairs"]["y ~ x"] == pytest.approx(1.0)
    assert metric.breakdown["pairs"]["y ~ g"] == pytest.approx(1 - (abs(0.5 - 2 / 3) + abs(0.5 - 1 / 3)) / 2)


@pytest.mark.parametrize(("n_original", "n_released"), [(2, 3), (2, 10), (2, 11), (3, 7)])
def test_joint_tables_sharing_no_cell_are_exactly_1_apart(n_original, n_released):
    # shares of 1/3 or 1/11 sum to 1 only up to rounding: the distance was 0.9999999999999999 or
    # 1.0000000000000002, printed as a link fidelity of 1.11e-16 or -2.22e-16
    original, released = np.arange(n_original), np.arange(n_original, n_original + n_released)
    assert total_variation(original, np.zeros(n_original), released, np.zeros(n_released)) == 1.0


def test_total_variation_counts_every_cell_of_both_sides():
    assert total_variation(np.array([0, 1]), np.array([0, 1]), np.array([0, 1]), np.array([1, 0])) == 1.0


def test_pair_similarities_fall_back_to_contingency_for_a_column_constant_in_the_original_only():
    child = pd.DataFrame({"y": [1.0, 1.0, 1.0, 1.0]})
    parent = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]})
    released = pd.DataFrame({"y": [1.0, 1.0, 1.0, 2.0]})  # 2 falls in the bin of values the original never holds
    pairs, measures = pair_similarities(child, parent, released, parent,
                                        {("child", "y"): "continuous", ("parent", "x"): "continuous"})
    # the fourth cell moves from (1, 3) to (other, 3): TVD 0.25
    assert measures == {"y ~ x": "contingency"} and pairs == {"y ~ x": 0.75}


def _one_parent(children_y):
    return {
        "parents": pd.DataFrame({"pid": [1], "x": [5.0], "g": ["a"]}),
        "children": pd.DataFrame({"cid": range(1, 6), "pid": [1] * 5, "y": children_y}),
    }


def test_a_single_parent_has_no_relation_to_keep():
    # before: each pair's joint table was y's own distribution beside a constant, so the link scored
    # 1 - TVD(y) = 1 - (.2 + .2 + .2 + .2) / 2 = 0.600 and was flagged under 0.85, for a change of the
    # children's own values (which their Hellinger distance measures)
    original, released = _one_parent([0, 1, 2, 3, 4]), _one_parent([0, 0, 1, 1, 2])
    metric = link_fidelity(SCHEMA, original, released, all_links(SCHEMA)[0])
    assert metric.breakdown["pairs"] == {}
    assert metric.breakdown["not_applicable"] == ["y ~ x", "y ~ g"]
    assert np.isnan(metric.value) and metric.target is None and metric.passed is None


def test_a_parent_column_constant_on_both_sides_is_left_out_of_the_mean():
    original, released = database([1, 1, 2, 2]), database([1, 2, 1, 2])
    for db in (original, released):
        db["parents"]["g"] = "a"  # zero variance: every parent in the same group
    metric = link_fidelity(SCHEMA, original, released, all_links(SCHEMA)[0], n_splits=0)
    # y ~ x as in the hand-computed case (0.5); y ~ g scored 1.0 before and lifted the link to 0.75
    assert metric.breakdown["pairs"] == {"y ~ x": 0.5}
    assert metric.breakdown["not_applicable"] == ["y ~ g"]
    assert metric.value == pytest.approx(0.5)


def test_children_all_on_one_parent_are_scored_when_the_release_moves_them():
    parents = pd.DataFrame({"pid": [1, 2, 3], "x": [0.0, 1.0, 2.0], "g": ["a", "b", "c"]})

    def db(links):
        return {"parents": parents, "children": pd.DataFrame({"cid": [1, 2, 3, 4], "pid": links, "y": [0, 0, 1, 1]})}

    link = all_links(SCHEMA)[0]
    kept = link_fidelity(SCHEMA, db([1, 1, 1, 1]), db([1, 1, 1, 1]), link, n_splits=0)
    assert np.isnan(kept.value) and kept.breakdown["not_applicable"] == ["y ~ x", "y ~ g"]
    # all on another parent: still one value per column, but not the same one: every cell moves (TVD 1)
    moved = link_fidelity(SCHEMA, db([1, 1, 1, 1]), db([2, 2, 2, 2]), link, n_splits=0)
    assert moved.breakdown["pairs"] == {"y ~ x": 0.0, "y ~ g": 0.0} and moved.passed is False
    spread = link_fidelity(SCHEMA, db([1, 1, 1, 1]), db([1, 2, 1, 2]), link, n_splits=0)
    # original joint: (0, p1) .5, (1, p1) .5; released: (0, p1), (0, p2), (1, p1), (1, p2) .25 each: TVD 0.5
    assert spread.breakdown["pairs"] == {"y ~ x": 0.5, "y ~ g": 0.5}
    assert spread.value == pytest.approx(0.5)


def test_a_score_under_its_target_passes_within_its_noise_floor():
    original = database([1, 1, 2, 2])
    metric = link_fidelity(SCHEMA, original, database([1, 2, 1, 2]), all_links(SCHEMA)[0])
    assert metric.margin == 0.0 and np.isnan(metric.floor)  # two parents cannot be halved
    within = Metric("link_fidelity", 0.6, 0.85, "higher", "d", floor=0.55, margin=0.0)
    below = Metric("link_fidelity", 0.5, 0.85, "higher", "d", floor=0.55, margin=0.0)
    assert within.passed is True and below.passed is False


def test_the_noise_floor_of_a_small_link_is_low_and_of_a_large_one_high():
    rng = np.random.default_rng(0)

    def generated(n_parents):
        x = rng.normal(size=n_parents)
        counts = rng.integers(1, 6, size=n_parents)
        who = np.repeat(np.arange(n_parents), counts)
        return {
            "parents": pd.DataFrame({"pid": np.arange(n_parents), "x": x, "g": np.where(x > 0, "a", "b")}),
            "children": pd.DataFrame({"cid": np.arange(len(who)), "pid": who,
                                      "y": np.round(x[who] * 3 + rng.normal(size=len(who))).astype(int)}),
        }

    small, large = generated(10), generated(2_000)
    link = all_links(SCHEMA)[0]
    floor_small = link_fidelity(SCHEMA, small, small, link).floor
    floor_large = link_fidelity(SCHEMA, large, large, link).floor
    assert floor_small < floor_large and floor_large > 0.9


def test_a_parent_without_released_columns_gives_no_score_and_no_failure():
    schema = load_schema("""
relanon: 1
tables:
  parents:
    primary_key: pid
    columns: {name: drop}
  children:
    primary_key: cid
    foreign_keys: [{column: pid, references: parents}]
    columns: {y: integer}
""")
    db = database([1, 1, 2, 2])
    db["parents"] = pd.DataFrame({"pid": [1, 2], "name": ["Ann", "Bob"]})
    metric = link_fidelity(schema, db, db, all_links(schema)[0], n_splits=0)
    assert np.isnan(metric.value) and metric.target is None and metric.passed is None


def test_the_halves_floor_is_the_mean_score_of_the_halves_binned_on_their_own_rows():
    """Each half of the floor is binned on its own rows, as a release is on its original: a value the first half
    lacks is "other" for it, a number's bins are the first half's quantiles, a label never sorted keeps its
    rows' own order."""
    from relanon.metrics.links import halves_noise_floor
    from relanon.metrics.noise_floor import half_splits

    rng = np.random.default_rng(3)
    n, parents = 400, 60
    groups = rng.integers(0, parents, n)
    child = pd.DataFrame({
        "y": rng.normal(size=n),
        "when": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), unit="D"),
        "g": pd.Series(rng.choice(["a", "b", "c", "rare", None], n, p=[0.4, 0.3, 0.2, 0.05, 0.05]), dtype=object),
        "mixed": pd.Series(rng.choice(np.array([1, "one", 2.5], dtype=object), n), dtype=object),
    })
    parent = pd.DataFrame({"x": rng.normal(size=parents)[groups], "h": rng.choice(["p", "q", "r"], parents)[groups]})
    types = {("child", "y"): "continuous", ("child", "when"): "datetime", ("child", "g"): "categorical",
             ("child", "mixed"): "categorical", ("parent", "x"): "continuous", ("parent", "h"): "categorical"}
    scores, held = [], np.unique(groups)
    for a, b in half_splits(len(held), 5, 0):
        first, second = np.isin(groups, held[a]), np.isin(groups, held[b])
        pairs, _ = pair_similarities(child[first].reset_index(drop=True), parent[first].reset_index(drop=True),
                                     child[second].reset_index(drop=True), parent[second].reset_index(drop=True),
                                     types)
        scores.append(np.mean(list(pairs.values())))
    assert halves_noise_floor(child, parent, groups, types, 5, 0) == pytest.approx(np.mean(scores), abs=1e-12)


@pytest.mark.parametrize("labels", [3, 40, 3_000])
def test_total_variation_is_the_sum_over_the_sorted_cells_of_either_side(labels):
    # a table of every cell (few cells) or the cells sorted (many): the same cells, summed in the same order
    rng = np.random.default_rng(labels)
    a, b = rng.integers(0, labels, 5_000), rng.integers(0, labels, 5_000)
    c, d = rng.integers(0, labels, 3_001), rng.integers(0, labels, 3_001)
    cells = sorted(set(zip(a.tolist(), b.tolist(), strict=True)) | set(zip(c.tolist(), d.tolist(), strict=True)))
    o = pd.Series(list(zip(a.tolist(), b.tolist(), strict=True))).value_counts() / len(a)
    r = pd.Series(list(zip(c.tolist(), d.tolist(), strict=True))).value_counts() / len(c)
    expected = np.abs(np.array([o.get(cell, 0.0) - r.get(cell, 0.0) for cell in cells])).sum() / 2
    assert total_variation(a, b, c, d) == float(np.clip(round(float(expected), 12), 0.0, 1.0))


def test_halves_floor_scores_the_children_of_each_half_of_the_parents():
    rng = np.random.default_rng(4)
    groups = rng.integers(0, 60, 900) * 3  # parents' positions, not all held
    child = pd.DataFrame({"y": rng.normal(size=900), "c": rng.choice(["a", "b", "c"], 900)})
    parent = pd.DataFrame({"x": rng.normal(size=900), "g": rng.choice(["u", "v"], 900)})
    types = {("child", "y"): "continuous", ("child", "c"): "categorical", ("parent", "x"): "continuous",
             ("parent", "g"): "categorical"}
    parents, scores = np.unique(groups), []
    for a, b in half_splits(len(parents), 3, random_state=1):
        first, second = np.isin(groups, parents[a]), np.isin(groups, parents[b])
        pairs, _ = pair_similarities(child[first], parent[first], child[second], parent[second], types)
        scores.append(np.mean(list(pairs.values())))
    assert halves_noise_floor(child, parent, groups, types, 3, random_state=1) == pytest.approx(np.mean(scores), abs=1e-12)
