"""User columns are never overwritten by the run's internal enrichment columns, nor by view columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.multitable.pipeline import anonymize, enrichment_names
from relanon.multitable.views import to_bottom_propagated, to_top_enriched
from relanon.schema.graph import child_links, parent_links
from relanon.schema.model import load_schema

SCHEMA = {
    "relanon": 1,
    "tables": {
        "people": {
            "primary_key": "person_id",
            "individual": True,
            "columns": {"age": "integer", "present": "categorical", "count::visits::person_id": "categorical",
                        "visits.count": "integer"},
        },
        "visits": {
            "primary_key": "visit_id",
            "foreign_keys": [{"column": "person_id", "references": "people"}],
            "columns": {"person_id::age": "integer", "_person_id::age": "integer", "cost": "continuous",
                        "people.age": "integer"},
        },
    },
}


def database(n_people=60, n_visits=180, seed=0):
    rng = np.random.default_rng(seed)
    people = pd.DataFrame({
        "person_id": np.arange(n_people),
        "age": rng.integers(20, 70, n_people),  # 20 to 69
        "present": rng.choice(["here", "away"], n_people),
        "count::visits::person_id": rng.choice(["a/b", "c/d"], n_people),
        "visits.count": rng.integers(1000, 1100, n_people),
    })
    person = rng.integers(0, n_people, n_visits).astype(float)
    person[:10] = np.nan  # visits without a person: the run adds a presence column
    visits = pd.DataFrame({
        "visit_id": np.arange(n_visits),
        "person_id": pd.array(person, dtype="Int64"),
        "person_id::age": rng.integers(5000, 5100, n_visits),
        "_person_id::age": rng.integers(9000, 9100, n_visits),
        "cost": rng.normal(50, 10, n_visits),
        "people.age": rng.integers(300, 400, n_visits),
    })
    return {"people": people, "visits": visits}


def test_internal_names_differ_from_every_user_column_and_from_each_other():
    schema = load_schema(SCHEMA)
    for table in ("people", "visits"):
        names = list(enrichment_names(schema, table).values())
        assert len(set(names)) == len(names)
        assert not set(names) & set(schema[table].all_columns)
    visits = enrichment_names(schema, "visits")
    assert visits[("parent", "person_id", "age")] == "__person_id::age"  # both simpler names are taken
    assert visits[("parent", "person_id", "present")] != visits[("present", "person_id")]


def test_user_columns_named_like_internal_ones_keep_their_own_values():
    schema, db = load_schema(SCHEMA), database()
    result = anonymize(schema, db, random_state=0, progress=False)
    visits, people = result.tables["visits"], result.tables["people"]
    assert visits["person_id::age"].between(5000, 5099).all()  # not ages
    assert visits["_person_id::age"].between(9000, 9099).all()
    assert visits["people.age"].between(300, 399).all()
    assert set(people["present"]) <= {"here", "away"}  # not the presence flag
    assert set(people["count::visits::person_id"]) <= {"a/b", "c/d"}  # not counts
    assert people["visits.count"].between(1000, 1099).all()
    assert visits["person_id"].isna().sum() > 0  # the presence column still did its work
    linked = visits["person_id"].dropna()
    assert linked.isin(people["person_id"]).all()


def test_view_columns_never_replace_user_columns():
    schema, db = load_schema(SCHEMA), database()
    link = child_links(schema, "people")[0]
    top = to_top_enriched(schema, db, link)
    assert top.frame.columns.is_unique
    assert top.frame["visits.count"].between(1000, 1099).all()  # the user's column
    assert top.frame["_visits.count"].sum() == db["visits"]["person_id"].notna().sum()  # the number of visits
    bottom = to_bottom_propagated(schema, db, parent_links(schema, "visits")[0])
    assert bottom.frame.columns.is_unique
    assert bottom.frame["people.age"].between(300, 399).all()
    assert set(bottom.types) == set(bottom.frame.columns)
