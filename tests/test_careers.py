"""The careers database (children that must agree with their person) and the anchored release."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relanon import anonymize
from relanon.common.errors import ParameterError
from relanon.datasets import careers, careers_schema, careers_sizes, careers_violations
from relanon.multitable import pipeline
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


def test_anchored_release_keeps_children_inside_their_persons_span(small, monkeypatch):
    schema, db = small
    anchored = careers_violations(anonymize(schema, db, random_state=1, progress=False).tables)
    monkeypatch.setattr(pipeline, "ANCHOR_CHILDREN", False)
    plain = careers_violations(anonymize(schema, db, random_state=1, progress=False).tables)
    # measured at this size: 4.0 % and 4.6 % anchored, 31 % and 35 % without
    for table in ("yearly_records", "leaves"):
        assert anchored[table] <= 0.07
        assert anchored[table] < plain[table] / 4
