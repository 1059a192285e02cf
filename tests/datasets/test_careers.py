"""The careers database (children that must agree with their person) and the anchored release."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from relanon import anonymize, load_schema
from relanon.common.errors import ParameterError
from relanon.datasets import careers, careers_schema, careers_sizes, careers_violations
from relanon.multitable.linking import anchoring
from relanon.schema.validation import check_database


@pytest.fixture(scope="module")
def small():
    return careers(scale=0.2, seed=0)


def test_the_database_is_valid_deterministic_and_obeys_its_rules(small):
    schema, db = small
    check_database(schema, db)
    again = careers(scale=0.2, seed=0)[1]
    for name, frame in db.items():
        pd.testing.assert_frame_equal(frame, again[name])
    assert careers_violations(db) == {"yearly_records": 0.0, "leaves": 0.0}
    people = db["people"]
    assert (people["first_year"] <= people["last_year"]).all()
    assert not db["people"].equals(careers(scale=0.2, seed=1)[1]["people"])


def test_records_grow_with_the_span(small):
    _, db = small
    span = (db["people"]["last_year"] - db["people"]["first_year"] + 1).to_numpy()
    counts = db["yearly_records"]["person_id"].value_counts().reindex(db["people"]["person_id"], fill_value=0)
    assert np.corrcoef(span, counts.to_numpy())[0, 1] > 0.9
    assert (counts >= 1).all()


def test_sizes_scale_linearly():
    assert careers_sizes(2.0).people == 2 * careers_sizes(1.0).people
    with pytest.raises(ParameterError):
        careers(scale=0)
    with pytest.raises(ParameterError):
        careers(seed=-1)


def test_the_schema_anchors_both_links():
    assert all(fk.anchor for table in careers_schema() for fk in table.foreign_keys)


def unanchored_violations(schema, db, seed, monkeypatch) -> dict:
    """:func:`careers_violations` of a release made with its children's anchoring turned off."""
    monkeypatch.setattr(anchoring, "ANCHOR_CHILDREN", False)
    return careers_violations(anonymize(schema, db, random_state=seed, progress=False).tables)


def test_anchored_release_keeps_most_children_inside_their_persons_span_at_a_tenth(small_careers,
                                                                                 small_careers_release, monkeypatch):
    # the property of the slow test below at a tenth of the size (fewer parents to draw from: more children
    # outside): measured 3.2 % of the yearly records and 6.8 % of the leaves anchored, 59 % and 60 % without
    anchored = careers_violations(small_careers_release.tables)
    plain = unanchored_violations(*small_careers, 0, monkeypatch)
    assert anchored["yearly_records"] <= 0.05, anchored
    assert anchored["leaves"] <= 0.10, anchored
    for table in ("yearly_records", "leaves"):
        assert anchored[table] < plain[table] / 5


@pytest.mark.slow  # at a tenth of the size in the default run: the test above
def test_anchored_release_keeps_children_inside_their_persons_span(monkeypatch):
    schema, db = careers(scale=0.3, seed=0)
    anchored = careers_violations(anonymize(schema, db, random_state=1, progress=False).tables)
    plain = unanchored_violations(schema, db, 1, monkeypatch)
    # measured at this size: 0.1 % and 1.5-2.4 % anchored, about half without (the target, 2 %,
    # is met at scale 1, where the leaves are 4,200 rather than 1,260: benchmarks/quality_sdmetrics.py)
    assert anchored["yearly_records"] <= 0.02, anchored
    assert anchored["leaves"] <= 0.03, anchored
    for table in ("yearly_records", "leaves"):
        assert anchored[table] < plain[table] / 10


def test_a_child_whose_donors_do_not_surround_its_parent_is_redrawn_among_more_donors(monkeypatch):
    # parents first..first+5 starting 2000-2007 and 2030-2045, three children each (years first, +2,
    # +5); a child linked to the span 2010-2015: its 8 nearest parents (k = 2) all start before 2008,
    # so no mix of their children reaches 2010; among three times as many, the parents of 2030
    # surround it and every re-drawn year lies inside the span
    firsts = [*range(2000, 2008), *range(2030, 2046)]
    kids = pd.DataFrame([(f, f + 5, f + off) for f in firsts for off in (0, 2, 5)],
                        columns=["p::first", "p::last", "year"])
    targets = pd.DataFrame({"year": [2009] * 20, "p::first": [2010] * 20, "p::last": [2015] * 20})
    types = {"year": "integer", "p::first": "integer", "p::last": "integer"}
    years = {}
    repaired = anchoring.REPAIR_DONORS
    for repair in (1, repaired):
        monkeypatch.setattr(anchoring, "REPAIR_DONORS", repair)
        out = anchoring.anchor(kids, targets, types, {}, ["year"], ["p::first", "p::last"], k=2, ncp=None,
                               random_state=0)
        years[repair] = out["year"].to_numpy()
    assert repaired > 1
    assert ((years[repaired] >= 2010) & (years[repaired] <= 2015)).all()
    assert (years[1] < 2010).mean() > 0.5  # measured: 16 of 20 without the second search


def test_anchoring_in_blocks_of_rows_gives_the_same_rows_as_in_one_block(monkeypatch):
    # the equations are built and solved a block of rows at a time (memory); the rows are independent
    # and drawn in order, so one row per block gives the bytes of one block for all (repair pass included)
    rng = np.random.default_rng(3)
    first = rng.integers(1990, 2010, 300)
    kids = pd.DataFrame({"p::first": first, "p::last": first + rng.integers(0, 12, 300),
                         "p::sex": rng.choice(["F", "M"], 300), "sector": rng.choice(["a", "b", "c"], 300)})
    kids["year"] = kids["p::first"] + rng.integers(0, 1 + kids["p::last"] - kids["p::first"])
    kids["hours"] = rng.normal(1600, 200, 300).round()
    targets = kids.sample(120, random_state=1).reset_index(drop=True)
    targets["p::first"] = targets["p::first"] + rng.integers(-3, 4, 120)
    types = {"year": "integer", "hours": "continuous", "sector": "categorical", "p::first": "integer",
             "p::last": "integer", "p::sex": "categorical"}
    arguments = (kids, targets, types, {}, ["year", "hours", "sector"], ["p::first", "p::last", "p::sex"])
    whole = anchoring.anchor(*arguments, k=3, ncp=None, random_state=5)
    monkeypatch.setattr(anchoring, "CHUNK_CELLS", 1)
    blocks = anchoring.anchor(*arguments, k=3, ncp=None, random_state=5)
    pd.testing.assert_frame_equal(whole, blocks)


def test_an_anchored_child_table_of_constant_columns_is_released():
    # its avatars live in no axis (release ncp 0): the anchoring searches its donors in one
    rng = np.random.default_rng(0)
    people = pd.DataFrame({"pid": range(40), "age": rng.integers(20, 80, 40), "sex": rng.choice(["F", "M"], 40)})
    kids = pd.DataFrame({"kid": range(80), "pid": np.repeat(range(40), 2), "y": 3})
    schema = load_schema({"relanon": 1, "tables": {
        "people": {"primary_key": "pid", "columns": {"age": "integer", "sex": "categorical"}, "anonymize": {"k": 5}},
        "kids": {"primary_key": "kid", "columns": {"y": "integer"}, "anonymize": {"k": 5},
                 "foreign_keys": [{"column": "pid", "references": "people", "link": "linear_sum", "anchor": True}]}}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kids_out = anonymize(schema, {"people": people, "kids": kids}, random_state=0, progress=False).tables["kids"]
    assert len(kids_out) == 80 and (kids_out["y"] == 3).all()
