"""minimum_distance with room: rooms from the original's distribution of children per parent, handed
out where the children are, and each child sent to its nearest parent with room."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from relanon import anonymize
from relanon.common.errors import ParameterError
from relanon.metrics.scenarios import children_per_parent
from relanon.multitable.linking import foreign_keys, match_minimum_distance
from relanon.multitable.linking.nearest import nearest_with_room, rooms_by_demand
from relanon.schema.graph import all_links


def test_a_full_parent_sends_its_farthest_child_to_the_next_parent_by_hand():
    # three children near parent 0 (room 2), one near parent 1 (room 2): the nearest parent of
    # every child would give parent 0 three children; with rooms, the farthest of the three (0.3)
    # goes to parent 1, and the two closest stay
    children, parents = [[0.1], [0.3], [0.2], [9.0]], [[0.0], [10.0]]
    assert match_minimum_distance(children, parents).tolist() == [0, 0, 0, 1]
    assert nearest_with_room(children, parents, [2, 2]).tolist() == [0, 1, 0, 1]


def test_ample_rooms_give_each_child_its_nearest_parent():
    rng = np.random.default_rng(0)
    children, parents = rng.normal(size=(400, 3)), rng.normal(size=(30, 3))
    found = nearest_with_room(children, parents, np.full(30, 400))
    np.testing.assert_array_equal(found, match_minimum_distance(children, parents))


def test_rooms_are_never_exceeded_and_every_child_is_placed():
    rng = np.random.default_rng(1)
    children = rng.normal(size=(2_000, 4)) * 0.3  # crowded around the middle: central parents in demand
    parents = rng.normal(size=(50, 4))
    rooms = rng.multinomial(2_000, np.full(50, 1 / 50))
    found = nearest_with_room(children, parents, rooms)
    assert (found >= 0).all()
    assert (np.bincount(found, minlength=50) <= rooms).all()
    assert np.bincount(found, minlength=50).sum() == 2_000


def test_rooms_have_the_original_distribution_and_follow_the_children():
    rng = np.random.default_rng(2)
    original = rng.poisson(rng.gamma(2.0, 10.0, size=80))  # skewed numbers of children per parent
    parents = rng.normal(size=(80, 2))
    children = parents[rng.integers(0, 10, int(original.sum()))] + rng.normal(scale=0.01, size=(int(original.sum()), 2))
    rooms = rooms_by_demand(original, children, parents, k=1, random_state=0)
    assert rooms.sum() == original.sum()
    np.testing.assert_array_equal(np.sort(rooms), np.sort(original))  # same numbers of parents and children
    assert rooms[:10].min() >= np.sort(rooms)[-10]  # the ten largest rooms where the children are
    again = rooms_by_demand(original, children, parents, k=1, random_state=0)
    np.testing.assert_array_equal(rooms, again)


def test_rooms_scale_to_other_numbers_of_parents_and_children():
    rooms = rooms_by_demand([0, 1, 1, 2, 6], np.zeros((30, 1)), np.arange(10.0)[:, None], k=2, random_state=0)
    assert rooms.sum() == 30 and len(rooms) == 10 and rooms.min() >= 0


def test_rooms_do_not_release_a_rare_number_of_children():
    original = [2] * 90 + [3] * 9 + [40]  # one parent with far more children than any other
    children = np.zeros((int(sum(original)), 1))
    parents = np.arange(100.0)[:, None]
    free = rooms_by_demand(original, children, parents, k=2, random_state=0)
    assert free.max() == 40  # without the rule, the unique count is released as it is
    rooms = rooms_by_demand(original, children, parents, k=2, min_count=5, random_state=0)
    assert rooms.sum() == sum(original)
    assert rooms.max() < 10  # bounded by the 5th largest count (3), then brought to the number of children
    few = rooms_by_demand(original[-20:], children[:100], parents[:20], k=2, min_count=5, random_state=0)
    assert few.max() > 10  # 20 parents: a bound at the 5th would flatten them; at most 1/20 moves (none)


def test_rooms_below_the_children_are_refused():
    with pytest.raises(ParameterError, match="fewer than the 3 children"):
        nearest_with_room([[0.0], [1.0], [2.0]], [[0.0]], [2])
    with pytest.raises(ParameterError, match="one value per parent"):
        nearest_with_room([[0.0]], [[0.0], [1.0]], [2])


def test_a_minimum_distance_link_keeps_the_shape_of_children_per_parent(small_hospital, small_hospital_release,
                                                                        monkeypatch):
    # the demo at a tenth, released with seed 5 (the session's release) and again without rooms: 1.0 and 0.1
    schema, db = small_hospital
    link = next(link for link in all_links(schema) if link.method == "minimum_distance")
    scores = {}
    for rooms in (True, False):
        if rooms:
            release = small_hospital_release.tables
        else:  # every child to its nearest parent, whatever the others do
            monkeypatch.setattr(foreign_keys.nearest, "nearest_with_room",
                                lambda children, parents, *_: match_minimum_distance(children, parents))
            release = anonymize(schema, db, random_state=5, progress=False).tables
        original, released = children_per_parent(db, schema, link), children_per_parent(release, schema, link)
        scores[rooms] = 1 - stats.ks_2samp(original, released).statistic
    assert scores[True] >= 0.9, scores
    assert scores[True] > scores[False] + 0.1, scores
