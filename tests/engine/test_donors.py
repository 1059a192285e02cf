"""The parts of the sensitive donors' search (:mod:`relanon.engine.donors`) against their definitions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relanon.common.errors import ParameterError
from relanon.engine import donors as donors_module
from relanon.engine.donors import FEW_ROWS, _Held, _other_neighbours, _row_sets, sensitive_donors
from relanon.engine.factor_space import FactorSpace
from relanon.engine.neighbours import SearchTree, cross_neighbours, self_neighbours


def tied_points(rng, n: int = 300) -> np.ndarray:
    points = np.round(rng.normal(size=(n, 3)), 1)  # many exact ties
    points[:20] = points[0]  # and duplicates
    return points


def test_a_search_tree_answers_each_search_as_a_tree_of_its_own_in_any_order():
    rng = np.random.default_rng(3)
    points, queries = tied_points(rng), np.round(rng.normal(size=(80, 3)), 1)
    tree = SearchTree(points)
    for k in (1, 9, 40):
        expected = cross_neighbours(points, queries, k)
        for order in (None, rng.permutation(len(queries))):
            found = tree.query(queries, k, order)
            assert np.array_equal(found.indices, expected.indices) and np.array_equal(found.distances,
                                                                                      expected.distances)
    of = np.unique(rng.integers(0, len(points), 120))
    assert np.array_equal(_other_neighbours(points, of, 25, tree=tree), self_neighbours(points, 25).indices[of])
    with pytest.raises(ParameterError, match="coordinates"):
        tree.query(queries[:, :2], 3)
    with pytest.raises(ParameterError, match="k must be"):
        tree.query(queries, len(points) + 1)


def test_row_sets_mark_each_record_s_closest_rows_and_the_few_closest_apart():
    rng = np.random.default_rng(4)
    n, width, few = 60, 7, 2
    closest = [np.array([rng.choice(n, width, replace=False) for _ in range(n)]) for _ in range(2)]
    sets = _row_sets(closest, few).toarray()
    listed = np.zeros((n, n), dtype=bool)  # [released row, record]
    first = np.zeros((n, n), dtype=bool)
    for rows in closest:
        for record in range(n):
            listed[rows[record], record] = True
            first[rows[record, :few], record] = True
    assert np.array_equal(sets > 0, listed) and np.array_equal(sets >= FEW_ROWS, first)
    assert first.sum() < listed.sum() and (sets[first & listed] > 0).all()


@pytest.mark.parametrize("table_size", [donors_module.HELD_TABLE_SIZE, 0])
def test_held_pairs_are_those_enough_records_hold_by_table_or_by_search(monkeypatch, table_size):
    monkeypatch.setattr(donors_module, "HELD_TABLE_SIZE", table_size)
    rng = np.random.default_rng(5)
    left, right = rng.integers(0, 12, 500), rng.integers(0, 5, 500)
    counts = pd.Series(list(zip(left.tolist(), right.tolist(), strict=True))).value_counts()
    held = _Held(left, right, 4)
    asked_left, asked_right = rng.integers(-1, 12, (40, 1)), rng.integers(0, 5, (40, 9))
    expected = np.array([[a >= 0 and counts.get((a, b), 0) >= 4 for b in row]
                         for a, row in zip(asked_left[:, 0].tolist(), asked_right.tolist(), strict=True)])
    assert (held.table is None) == (table_size == 0)
    assert np.array_equal(held.contains(asked_left, asked_right), expected)
    assert expected.any() and not expected.all()


def test_donors_are_the_same_whether_their_random_numbers_are_kept_or_drawn_twice(monkeypatch):
    rng = np.random.default_rng(6)
    n, k = 300, 5
    table = pd.DataFrame({"age": rng.integers(20, 80, n), "sex": rng.choice(["F", "M"], n),
                          "smoker": rng.choice(["yes", "no"], n), "income": rng.normal(3000, 500, n)})
    types = {"age": "integer", "sex": "categorical", "smoker": "categorical", "income": "continuous"}
    space = FactorSpace(types, random_state=0).fit(table)
    chosen = self_neighbours(space.transform(table), k).indices[np.arange(n), rng.integers(0, k, n)]
    avatars = table.take(chosen).reset_index(drop=True)

    def donors():
        generator = np.random.default_rng(7)
        found = sensitive_donors(table, avatars, space, chosen, ["smoker", "income"], ["sex", "smoker"], k, generator,
                                 numbers={"income": table["income"].to_numpy(dtype=float)}, chunk_rows=64)
        return found, generator.random()  # the caller's generator goes on as after the same draws

    kept, after = donors()
    monkeypatch.setattr(donors_module, "CHUNK_VALUES", 1_000)  # fewer values than the avatars' candidates
    again, again_after = donors()
    assert again_after == after and again.counts == kept.counts
    for field in ("donors", "pulled"):
        assert getattr(again, field).tobytes() == getattr(kept, field).tobytes()
    assert again.numbers["income"].tobytes() == kept.numbers["income"].tobytes()


def test_donors_are_the_same_whether_their_rules_are_asked_per_tuple_or_per_candidate(monkeypatch):
    rng = np.random.default_rng(8)
    n, k = 400, 5
    table = pd.DataFrame({"age": rng.integers(20, 80, n), "sex": rng.choice(["F", "M"], n),
                          "town": rng.choice([f"t{i}" for i in range(30)], n), "reason": rng.choice(list("pqrs"), n)})
    types = {"age": "integer", "sex": "categorical", "town": "categorical", "reason": "categorical"}
    space = FactorSpace(types, random_state=0).fit(table)
    chosen = self_neighbours(space.transform(table), k).indices[np.arange(n), rng.integers(0, k, n)]
    avatars = table.take(chosen).reset_index(drop=True)

    def donors():
        return sensitive_donors(table, avatars, space, chosen, ["reason"], ["sex", "town", "reason"], k,
                                np.random.default_rng(9), combination_holders=3)

    per_tuple = donors()
    assert per_tuple.counts["forming"] and per_tuple.counts["pairing"]  # both tiers asked
    monkeypatch.setattr(donors_module, "TUPLES_PER_CANDIDATE", 0.0)
    per_candidate = donors()
    assert per_candidate.counts == per_tuple.counts
    assert per_candidate.donors.tobytes() == per_tuple.donors.tobytes()
    assert per_candidate.pulled.tobytes() == per_tuple.pulled.tobytes()
