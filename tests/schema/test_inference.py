"""relanon init: a schema proposed from the data, with its notes, valid and fitting the data."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from relanon.common.errors import DataError, ParameterError
from relanon.datasets import hospital
from relanon.schema.model import load_schema
from relanon.schema.proposal import DeclaredKeys, propose_schema
from relanon.schema.validation import check_database, database_problems
from relanon.stores.io import read_tables, write_database


@pytest.fixture(scope="module")
def demo():
    return hospital(scale=0.2, seed=0)


def links_of(schema) -> dict:
    return {(t.name, fk.column): fk.references for t in schema for fk in t.foreign_keys}


def proposed(database, table, column):
    """The proposed type of one column, and the text of its notes."""
    proposal = propose_schema(database)
    notes = " ".join(str(n) for n in proposal.notes_for(table, column))
    return proposal.schema[table].column(column).type, notes


# --------------------------------------------------------------------------- the demo database


def test_demo_proposal_finds_the_keys_links_and_types(demo):
    schema, db = demo
    proposal = propose_schema(db, name="hospital")
    assert {t.name: t.primary_key for t in proposal.schema} == {t.name: t.primary_key for t in schema}
    assert links_of(proposal.schema) == links_of(schema)
    assert {t.name: t.types() for t in proposal.schema} == {t.name: t.types() for t in schema}
    assert [c.name for c in proposal.schema["patients"].columns if c.type == "drop"] == ["full_name"]
    assert [t.name for t in proposal.schema if t.individual] == ["doctors", "patients"]


def test_demo_proposal_loads_from_its_yaml_and_fits_the_data(demo):
    _, db = demo
    proposal = propose_schema(db, name="hospital")
    reloaded = load_schema(proposal.to_yaml())
    assert reloaded == proposal.schema
    coerced = check_database(reloaded, db)
    assert list(coerced) == list(db)


@pytest.mark.parametrize("fmt", ["csv", "sqlite"])
def test_demo_read_back_from_text_storage_gets_the_same_proposal(demo, tmp_path, fmt):
    schema, db = demo
    location = tmp_path / ("demo.sqlite" if fmt == "sqlite" else "demo")
    write_database(db, location, schema, format=fmt)
    tables = read_tables(location)
    assert tables["visits"]["visit_date"].dtype == "str"  # dates come back as text
    proposal = propose_schema(tables)
    assert links_of(proposal.schema) == links_of(schema)
    assert {t.name: t.types() for t in proposal.schema} == {t.name: t.types() for t in schema}
    assert database_problems(proposal.schema, tables, from_text=True) == []


def test_the_data_is_not_modified(demo):
    _, db = demo
    before = copy.deepcopy(db)
    propose_schema(db)
    assert list(db) == list(before)
    for name in db:
        pd.testing.assert_frame_equal(db[name], before[name])


# --------------------------------------------------------------------------- primary keys


def test_primary_key_prefers_the_column_named_after_the_table():
    db = {"visits": pd.DataFrame({"record_id": [7, 8, 9], "visit_id": [1, 2, 3], "cost": [1.0, 2.0, 3.0]})}
    proposal = propose_schema(db)
    assert proposal.schema["visits"].primary_key == "visit_id"
    note = proposal.notes_for("visits", "visit_id", about="primary_key")[0]
    assert "record_id" in note.message and note.review


@pytest.mark.parametrize("key", ["CustomerID", "customerId", "id_customer", "customer_key", "id", "ID"])
def test_primary_key_name_forms(key):
    db = {"customers": pd.DataFrame({key: ["a", "b", "c"], "age": [30, 40, 50]})}
    assert propose_schema(db).schema["customers"].primary_key == key


def test_a_column_other_tables_point_to_is_preferred_as_the_key():
    # people numbered by ID, and batting records pointing to them by playerID (the Lahman database)
    db = {
        "people": pd.DataFrame({"ID": [1, 2, 3, 4], "playerID": ["aa01", "bb01", "cc01", "dd01"],
                                "weight": [180, 200, 190, 170]}),
        "batting": pd.DataFrame({"batting_id": range(6), "playerID": ["aa01", "aa01", "bb01", "dd01", "dd01", "dd01"],
                                 "hits": [3, 5, 1, 0, 2, 7]}),
    }
    proposal = propose_schema(db)
    assert proposal.schema["people"].primary_key == "playerID"
    assert links_of(proposal.schema) == {("batting", "playerID"): "people"}
    note = proposal.notes_for("people", "playerID", about="primary_key")[0]
    assert "the values of batting.playerID are among its values" in note.message and "ID" in note.message
    # a value that is not a key of people: not a link, and ID stays the key
    db["batting"].loc[5, "playerID"] = "zz99"
    assert propose_schema(db).schema["people"].primary_key == "ID"


def test_uuid_keys_and_links():
    keys = [f"3f2c0e9a-0000-4000-8000-{i:012d}" for i in range(5)]
    db = {
        "accounts": pd.DataFrame({"account_uuid": keys, "balance": [1.5, 2.5, 3.5, 4.5, 5.5]}),
        "payments": pd.DataFrame({"payment_uuid": [k.replace("3f", "aa") for k in keys] * 2, "account_uuid": keys * 2}),
    }
    db["payments"]["payment_uuid"] = [f"p-{i}" for i in range(10)]
    schema = propose_schema(db).schema
    assert schema["accounts"].primary_key == "account_uuid"
    assert links_of(schema) == {("payments", "account_uuid"): "accounts"}


def test_a_duplicated_or_missing_id_is_not_a_key():
    db = {"items": pd.DataFrame({"item_id": [1, 1, 2], "item_code": ["x1", "x2", "x3"]})}
    proposal = propose_schema(db)
    assert proposal.schema["items"].primary_key == "item_code"
    assert proposal.notes_for("items", "item_code", about="primary_key")[0].review
    db = {"items": pd.DataFrame({"item_id": [1.0, np.nan, 3.0], "size": [1.5, 2.5, 3.5]})}
    proposal = propose_schema(db)
    assert proposal.schema["items"].primary_key == "item_key"  # to add: item_id exists but has a gap
    assert proposal.schema["items"].column("item_id").type == "drop"  # an identifier of nothing here


def test_without_a_key_the_user_is_told_to_add_one():
    db = {"events": pd.DataFrame({"label": ["a", "b", "a", "c"], "amount": [1.5, 2.5, 3.5, 4.5]})}
    proposal = propose_schema(db)
    assert proposal.schema["events"].primary_key == "event_id"  # a column to add to the data
    note = proposal.notes_for("events", "event_id", about="primary_key")[0]
    assert note.review and "add a column 'event_id'" in note.message
    load_schema(proposal.to_yaml())
    assert "amount" in proposal.schema["events"].column_names  # a unique number is not taken as a key


def test_a_unique_column_not_named_like_an_id_is_the_fallback_key_and_links():
    # short names (cid, tid) are keys too: unique and never missing, integers before text
    db = {
        "customers": pd.DataFrame({"cid": ["C1", "C2", "C3"], "city": ["Lyon", "Nice", "Paris"]}),
        "tx": pd.DataFrame({"tid": [10, 11, 12, 13], "cid": ["C1", "C1", "C3", "C2"], "note": ["a", "b", "c", "d"]}),
    }
    proposal = propose_schema(db)
    assert proposal.schema["customers"].primary_key == "cid"
    assert proposal.schema["tx"].primary_key == "tid"  # integers first, though 'note' is unique too
    note = proposal.notes_for("tx", "tid", about="primary_key")[0]
    assert note.review and "not named like an id" in note.message and "other candidates" not in note.message
    # cid is not named like an id either, but the transactions point to it: that is the evidence given
    note = proposal.notes_for("customers", "cid", about="primary_key")[0]
    assert "the values of tx.cid are among its values" in note.message
    assert links_of(proposal.schema) == {("tx", "cid"): "customers"}


# --------------------------------------------------------------------------- foreign keys


def test_a_near_miss_link_reports_its_orphans():
    db = {
        "doctors": pd.DataFrame({"doctor_id": [1, 2, 3], "age": [40, 50, 60]}),
        "visits": pd.DataFrame({"visit_id": range(6), "doctor_id": [1, 2, 3, 99, 99, 98]}),
    }
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {}
    assert proposal.schema["visits"].column("doctor_id").type == "drop"
    message = proposal.notes_for("visits", "doctor_id", about="foreign_key")[0].message
    assert "3 of 6 values are not keys of doctors (2 of 5 distinct" in message and "99" in message and "98" in message
    check_database(proposal.schema, db)


def test_links_by_role_prefix_and_nullable_links():
    db = {
        "accounts": pd.DataFrame({"account_id": [1, 2, 3], "kind": ["a", "b", "a"]}),
        "transfers": pd.DataFrame(
            {
                "transfer_id": [1, 2, 3, 4],
                "from_account_id": [1, 2, 3, 1],
                "to_account_id": [2.0, np.nan, 1.0, 3.0],  # a nullable foreign key, read as floats
                "amount": [10.0, 20.5, 3.2, 8.0],
            }
        ),
    }
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {
        ("transfers", "from_account_id"): "accounts",
        ("transfers", "to_account_id"): "accounts",
    }
    check_database(proposal.schema, db)


def test_a_link_closing_a_cycle_is_left_out():
    db = {
        "a": pd.DataFrame({"a_id": [1, 2, 3], "b_id": [1, 2, 3]}),
        "b": pd.DataFrame({"b_id": [1, 2, 3], "a_id": [1, 2, 3]}),
    }
    proposal = propose_schema(db)
    assert len(links_of(proposal.schema)) == 1
    notes = [n for n in proposal.notes if "cycle" in n.message]
    assert len(notes) == 1 and notes[0].review
    check_database(load_schema(proposal.to_yaml()), db)


def test_keys_stored_as_text_in_the_child_still_link():
    db = {
        "patients": pd.DataFrame({"patient_id": [1, 2, 3], "age": [30, 40, 50]}),
        "visits": pd.DataFrame({"visit_id": [1, 2], "patient_id": ["3", "1"]}),
    }
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {("visits", "patient_id"): "patients"}
    check_database(proposal.schema, db)



# --------------------------------------------------------------------------- foreign keys from values

AIRPORTS = [f"{a}{b}{c}" for a, b, c in zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "QWERTYUIOPASDFGHJKLZXCVBNM",
                                             "ZYXWVUTSRQPONMLKJIHGFEDCBA", strict=True)]  # 26 distinct codes


def test_a_column_named_unlike_the_key_links_by_its_values():
    rng = np.random.default_rng(0)
    db = {
        "airports": pd.DataFrame({"faa": AIRPORTS, "alt": rng.integers(0, 9, len(AIRPORTS))}),  # alt repeats
        "flights": pd.DataFrame({"flight_id": range(200), "origin": rng.choice(AIRPORTS[:3], 200),
                                 "delay": rng.normal(size=200)}),
    }
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {("flights", "origin"): "airports"}
    note = proposal.notes_for("flights", "origin", about="foreign_key")[0]
    assert note.review and "all 3 distinct values are keys of airports.faa" in note.message
    assert "names differ" in note.message
    check_database(load_schema(proposal.to_yaml()), db)


def test_the_key_other_tables_values_point_to_is_preferred_to_another_unique_column():
    rng = np.random.default_rng(4)
    db = {
        "airports": pd.DataFrame({"alt": rng.choice(5000, len(AIRPORTS), replace=False), "faa": AIRPORTS}),
        "flights": pd.DataFrame({"flight_id": range(100), "origin": rng.choice(AIRPORTS[:3], 100)}),
    }
    proposal = propose_schema(db)
    assert proposal.schema["airports"].primary_key == "faa"
    assert "flights.origin are among its values" in proposal.notes_for("airports", "faa", "primary_key")[0].message
    assert links_of(proposal.schema) == {("flights", "origin"): "airports"}


def test_names_come_before_values():
    db = {
        "airports": pd.DataFrame({"faa": AIRPORTS}),
        "hubs": pd.DataFrame({"code": AIRPORTS[:10]}),
        "flights": pd.DataFrame({"code": [AIRPORTS[0], AIRPORTS[1], AIRPORTS[0]], "delay": [1.0, 2.0, 3.0]}),
    }
    assert links_of(propose_schema(db).schema) == {("flights", "code"): "hubs"}


def test_a_near_miss_by_values_is_noted_with_its_orphans_and_kept_as_a_column():
    rng = np.random.default_rng(1)
    dest = np.concatenate([rng.choice(AIRPORTS[:21], 500), AIRPORTS[:21], ["SJU"] * 7])
    db = {"airports": pd.DataFrame({"faa": AIRPORTS}),
          "flights": pd.DataFrame({"flight_id": range(len(dest)), "dest": dest})}
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {}
    assert proposal.schema["flights"].column("dest").type == "categorical"  # released, not dropped
    message = proposal.notes_for("flights", "dest", about="foreign_key")[0].message
    assert "21 of its 22 distinct values are keys of airports.faa" in message
    assert "7 of 528 rows" in message and "'SJU'" in message
    assert "{column: dest, references: airports}" in message
    check_database(load_schema(proposal.to_yaml()), db)


def test_a_column_mostly_outside_every_key_is_neither_linked_nor_noted():
    db = {"airports": pd.DataFrame({"faa": AIRPORTS}),
          "flights": pd.DataFrame({"dest": AIRPORTS[:10] + [f"X{i:02d}" for i in range(10)]})}
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {}
    assert proposal.notes_for("flights", "dest", about="foreign_key") == []


def test_a_count_column_is_not_linked_to_a_small_whole_number_key():
    rng = np.random.default_rng(2)
    db = {
        "doctors": pd.DataFrame({"doctor_id": range(1, 51), "age": rng.integers(30, 65, 50)}),
        "visits": pd.DataFrame({
            "visit_id": range(300),
            "n_prescriptions": rng.integers(1, 6, 300),
            "length_of_stay": rng.integers(1, 31, 300),
            "doctor_count": rng.integers(1, 4, 300),  # named after doctors, but a count
        }),
    }
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {}
    assert not [n for n in proposal.notes if n.about == "foreign_key"]


def test_whole_numbers_link_by_name_when_the_key_is_dense_and_by_values_when_it_is_sparse():
    rng = np.random.default_rng(3)
    accounts = rng.choice(np.arange(10**6, 10**7), 40, replace=False)
    db = {
        "doctors": pd.DataFrame({"doctor_id": range(1, 51), "age": rng.integers(30, 65, 50)}),
        "accounts": pd.DataFrame({"iban": accounts, "opened": rng.integers(1990, 2020, 40)}),
        "visits": pd.DataFrame({
            "visit_id": range(300),
            "referring_doctor": rng.integers(1, 51, 300),
            "billed_to": rng.choice(accounts, 300).astype(str),  # whole numbers stored as text
        }),
    }
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {("visits", "referring_doctor"): "doctors", ("visits", "billed_to"): "accounts"}
    assert "names relate" in proposal.notes_for("visits", "referring_doctor", about="foreign_key")[0].message
    check_database(load_schema(proposal.to_yaml()), db)


def test_a_parent_column_that_is_not_its_tables_key_is_never_linked():
    teams = pd.DataFrame({"yearID": [2000, 2000, 2001, 2001], "teamID": ["BOS", "NYA", "BOS", "NYA"],
                          "W": [85, 87, 85, 95]})
    batting = pd.DataFrame({"playerID": ["a", "b", "c", "a"], "yearID": [2000, 2000, 2001, 2001],
                            "teamID": ["BOS", "NYA", "NYA", "BOS"], "H": [100, 120, 90, 140]})
    proposal = propose_schema({"Teams": teams, "Batting": batting})
    assert links_of(proposal.schema) == {}
    assert proposal.schema["Teams"].primary_key == "team_key"  # not team_id, which would read as teamID
    message = proposal.notes_for("Batting", "teamID", about="foreign_key")[0].message
    assert "named after Teams, whose teamID is not its key" in message
    assert "unique on (yearID, teamID)" in message and "'team_key'" in message
    assert proposal.schema["Batting"].column("teamID").type == "categorical"
    key_note = proposal.notes_for("Teams", "team_key", about="primary_key")[0].message
    assert "unique on (yearID, teamID) together (a key of several columns?" in key_note


def test_a_link_by_values_closing_a_cycle_is_left_out_but_its_column_kept():
    db = {"a": pd.DataFrame({"code": ["ab", "bc", "cd"], "other": ["xy", "yz", "xy"]}),
          "b": pd.DataFrame({"label": ["xy", "yz", "zz"], "back": ["ab", "ab", "cd"]})}
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {("a", "other"): "b"}
    assert "close a cycle" in proposal.notes_for("b", "back", about="foreign_key")[0].message
    assert proposal.schema["b"].column("back").type == "categorical"


def test_a_declared_key_that_repeats_values_is_never_a_parent_by_values():
    db = {"codes": pd.DataFrame({"code": ["ab", "bc", "bc"]}),
          "rows": pd.DataFrame({"row_id": range(4), "label": ["ab", "bc", "ab", "bc"]})}
    declared = DeclaredKeys(primary_keys={"codes": ("code",), "rows": ("row_id",)})
    assert links_of(propose_schema(db, declared=declared).schema) == {}
    db["codes"] = pd.DataFrame({"code": ["ab", "bc", "cd"]})  # the same, unique: linked
    assert links_of(propose_schema(db, declared=declared).schema) == {("rows", "label"): "codes"}


# --------------------------------------------------------------------------- column types


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1.5, 2.25, np.nan] * 10, "continuous"),
        ([1.0, 2.0, np.nan, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0] * 3, "integer"),
        (list(range(30)), "integer"),
        ([0, 1, 1, 0] * 10, "boolean"),
        (["yes", "No", "YES", "no"] * 10, "boolean"),
        ([True, False] * 20, "boolean"),
        (["2021-01-03", "2022-12-31 10:30:00", None] * 10, "datetime"),
        (["31/01/2021", "01/02/2021"] * 10, "datetime"),
        (["Jun 03, 2021", "Dec 17, 2021", None] * 10, "datetime"),  # was dropped as a likely identifier
        (["3 June 2021 10:30", "14 February 2020 09:00"] * 10, "datetime"),
        (list(pd.date_range("2020-01-01", periods=40)), "datetime"),
        (["A+", "O-", "B+", None] * 10, "categorical"),
        (["01234", "75001"] * 20, "categorical"),
        ([f"Person {i}" for i in range(40)], "drop"),
        ([None] * 40, "drop"),
    ],
)
def test_column_types_from_values(values, expected):
    frame = pd.DataFrame({"row_id": range(len(values)), "x": values})
    kind, _ = proposed({"rows": frame}, "rows", "x")
    assert kind == expected
    check_database(propose_schema({"rows": frame}).schema, {"rows": frame})


def test_whole_numbers_named_like_codes_are_categorical():
    frame = pd.DataFrame({"row_id": range(40), "zip_code": np.arange(40) + 75000, "phone": np.arange(40) + 10**9})
    proposal = propose_schema({"rows": frame})
    assert proposal.schema["rows"].types() == {"zip_code": "categorical"}
    assert proposal.schema["rows"].column("phone").type == "drop"  # a direct identifier, whatever its storage


def test_few_distinct_whole_numbers_are_categorical_with_a_note():
    frame = pd.DataFrame({"row_id": range(200), "stage": [1, 2, 3, 4] * 50, "children": np.arange(200) % 40})
    kind, notes = proposed({"rows": frame}, "rows", "stage")
    assert kind == "categorical" and "REVIEW" in notes and "4 distinct" in notes
    assert proposed({"rows": frame}, "rows", "children")[0] == "integer"  # 40 distinct values
    few_rows = pd.DataFrame({"row_id": range(20), "stage": [1, 2, 3, 4] * 5})
    assert proposed({"rows": few_rows}, "rows", "stage")[0] == "integer"  # 4 values is 20 % of the rows


def test_numbers_stored_as_text_get_a_note_on_what_keeps_them_from_being_numbers():
    weights = [f"{60 + i / 10:.1f}" for i in range(300)]
    frame = pd.DataFrame({
        "row_id": range(300),
        "weight": ["?", "<40", "n/a", "unknown"] + weights[4:],  # n/a is missing, not a bad value
        "cost": [w.replace(".", ",") for w in weights],  # nearly unique: not an identifier
        "town": [f"town {i % 60}" for i in range(300)],
    })
    kind, notes = proposed({"rows": frame}, "rows", "weight")
    assert kind == "categorical" and "REVIEW" in notes
    assert "3 distinct values are not numbers" in notes and "'<40'" in notes and "declare the column continuous" in notes
    kind, notes = proposed({"rows": frame}, "rows", "cost")
    assert kind == "categorical" and "REVIEW" in notes and "written with a comma" in notes and "'60,0'" in notes
    assert "REVIEW" not in proposed({"rows": frame}, "rows", "town")[1]
    check_database(propose_schema({"rows": frame}).schema, {"rows": frame})


def test_whole_numbers_with_missing_values_are_not_called_decimals():
    frame = pd.DataFrame({"row_id": range(200), "stage": [1.0, 2.0, 3.0, np.nan] * 50,
                          "dose": [250.0, 500.0, 1000.0, 750.0] * 50})
    assert "some missing" in proposed({"rows": frame}, "rows", "stage")[1]
    assert "stored as decimals" not in proposed({"rows": frame}, "rows", "stage")[1]
    assert "stored as decimals" in proposed({"rows": frame}, "rows", "dose")[1]


def test_categories_the_default_min_count_would_generalize_get_a_note():
    rng = np.random.default_rng(0)
    doctors = pd.DataFrame({"doctor_id": range(12), "specialty": ["cardio"] * 10 + ["ent"] * 2,
                            "grade": ["a", "b", "c"] * 4})
    visits = pd.DataFrame({"visit_id": range(300), "doctor_id": rng.integers(0, 12, 300),
                           "reason": ["flu", "cough"] * 150, "code": [f"C{i % 100}" for i in range(300)],
                           "ward": ["w1"] * 100 + [f"w{i % 50}" for i in range(200)]})
    proposal = propose_schema({"doctors": doctors, "visits": visits})
    assert proposal.schema["doctors"].individual  # k = 10 (12 rows), and visits lie below the doctors

    def notes(table, column):
        return " ".join(str(n) for n in proposal.notes_for(table, column))

    # 12 doctors, k=10: no grade is held by 10 of them; every doctor is released with the merged level
    assert "REVIEW: no value is held by 10 records (the most held by 4): released as one level, 'other'" in notes(
        "doctors", "grade")
    assert "released" not in notes("doctors", "specialty")  # cardio: 10 holders; ent's 2 rows are a minority
    assert "released" not in notes("visits", "reason")
    assert "released as one level, 'other'" in notes("visits", "code")  # 3 holders each
    assert "65% of its values are held by fewer than 10 records" in notes("visits", "ward")


def test_ambiguous_text_dates_are_flagged_for_review():
    frame = pd.DataFrame({"row_id": range(20), "when": ["03/01/2021", "04/02/2021"] * 10})
    kind, notes = proposed({"rows": frame}, "rows", "when")
    assert kind == "datetime" and "REVIEW" in notes and "day/month" in notes


def test_direct_identifiers_are_dropped_even_in_small_tables():
    frame = pd.DataFrame(
        {"client_id": [1, 2, 3, 4], "email": [f"u{i}@mail.org" for i in range(4)], "city": list("abca")}
    )
    proposal = propose_schema({"clients": frame})
    assert {c.name: c.type for c in proposal.schema["clients"].columns} == {"email": "drop", "city": "categorical"}


# --------------------------------------------------------------------------- table roles


def test_individual_from_the_table_name_or_personal_columns():
    people = {
        "employees": pd.DataFrame({"employee_id": range(20), "salary": np.linspace(1.5, 9.5, 20)}),
        "records": pd.DataFrame({"record_id": range(20), "birth_date": pd.date_range("1980-01-01", periods=20),
                                 "gender": ["F", "M"] * 10}),
        "orders": pd.DataFrame({"order_id": range(20), "amount": np.linspace(1.5, 9.5, 20)}),
        # a plural among other words: the people are named as in "employees"
        "Patients 2021": pd.DataFrame({"patient_key": range(20), "amount": np.linspace(1.5, 9.5, 20)}),
        "tbl_customers": pd.DataFrame({"customer_id": range(20), "amount": np.linspace(1.5, 9.5, 20)}),
    }  # fmt: skip
    proposal = propose_schema(people)
    assert {t.name: t.individual for t in proposal.schema} == {
        "employees": True, "records": True, "orders": False, "Patients 2021": True, "tbl_customers": True}
    for note in proposal.notes_for("employees", about="individual") + proposal.notes_for("orders", about="individual"):
        assert note.review == note.message.startswith("rows look like people")


def test_a_table_named_after_the_people_it_points_to_is_not_people():
    patients = pd.DataFrame({"patient_id": range(20), "age": range(20, 40)})
    doctors = pd.DataFrame({"doctor_id": range(10), "grade": list("ab") * 5})
    links = pd.DataFrame({"link_id": range(60), "patient_id": np.arange(60) % 20, "doctor_id": np.arange(60) % 10})
    visits = pd.DataFrame({"visit_id": range(60), "patient_id": np.arange(60) % 20, "cost": np.linspace(1.5, 9.5, 60)})
    proposal = propose_schema({"patients": patients, "doctors": doctors, "patient_doctor": links,
                               "patient_visits": visits})
    # a patient's link to a doctor, and a patient's visits, are not people (both were proposed individual)
    assert {t.name: t.individual for t in proposal.schema} == {
        "patients": True, "doctors": True, "patient_doctor": False, "patient_visits": False}
    renamed = propose_schema({"Patients 2021": patients.rename(columns={"patient_id": "patient_key"}),
                              "patient_visits": visits.rename(columns={"patient_id": "patient_key"})})
    assert not renamed.schema["patient_visits"].individual  # the parent's words, whatever else its name holds


def test_a_reference_list_gets_a_note_proposing_keep():
    db = {
        "airlines": pd.DataFrame({"carrier": [f"C{i:02d}" for i in range(20)], "alliance": ["one", "sky", "star", "-"] * 5,
                                  "fleet": np.arange(20) * 7 + 3}),  # not a lookup list of labels only (keep)
        "customers": pd.DataFrame({"customer_id": range(30), "birth_date": pd.date_range("1980-01-01", periods=30),
                                   "gender": ["F", "M"] * 15}),
        "flights": pd.DataFrame({"flight_id": range(60), "carrier": [f"C{i % 20:02d}" for i in range(60)],
                                 "customer_id": list(range(30)) * 2, "delay": np.linspace(-5, 90, 60)}),
    }  # fmt: skip
    proposal = propose_schema(db)
    assert links_of(proposal.schema) == {("flights", "carrier"): "airlines", ("flights", "customer_id"): "customers"}
    reference = [n for n in proposal.notes if "a reference list?" in n.message]
    # the list of airlines only: customers look like people, flights point to other tables
    assert [(n.table, n.review) for n in reference] == [("airlines", True)]
    assert proposal.schema["airlines"].anonymize.method == "avatar"  # proposed, never decided for the user
    assert "anonymize: {method: keep}" in proposal.to_yaml().split("  customers:")[0]


def test_tiny_tables_are_kept_and_small_ones_get_a_smaller_k():
    db = {
        "settings": pd.DataFrame({"setting_id": [1], "currency": ["EUR"]}),
        "branches": pd.DataFrame({"branch_id": range(6), "size": np.linspace(1.5, 9.5, 6)}),
        "sales": pd.DataFrame({"sale_id": range(50), "amount": np.linspace(1.5, 9.5, 50)}),
    }
    schema = propose_schema(db).schema
    assert schema["settings"].anonymize.method == "keep"
    assert (schema["branches"].anonymize.method, schema["branches"].anonymize.k) == ("avatar", 5)
    assert schema["sales"].anonymize.k is None  # the default
    check_database(schema, db)


# --------------------------------------------------------------------------- the YAML file


def test_yaml_quotes_names_that_need_it_and_keeps_every_note():
    db = {
        "my table": pd.DataFrame(
            {"id": [1, 2, 3, 4], "yes": [1.5, 2.5, 3.5, 4.5], "a: b": ["x", "y", "x", "y"], "#c": ["u", "v", "u", "v"]}
        )
    }
    proposal = propose_schema(db, name="odd: names")
    text = proposal.to_yaml()
    reloaded = load_schema(text)
    assert reloaded == proposal.schema
    assert reloaded.name == "odd: names"
    assert list(reloaded["my table"].column_names) == ["yes", "a: b", "#c"]
    for note in proposal.notes:
        assert note.message in " ".join(text.split()), note


def test_review_marks_and_notes_are_in_the_yaml(demo):
    _, db = demo
    proposal = propose_schema(db)
    text = proposal.to_yaml()
    assert text.count("REVIEW") >= len(proposal.to_review)
    assert "# 2,000 rows." in text  # patients at scale 0.2
    assert proposal.to_review and all(n.review for n in proposal.to_review)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("database", [{}, [pd.DataFrame()], None])
def test_not_a_database_is_refused(database):
    with pytest.raises(ParameterError, match="dict of table name"):
        propose_schema(database)


def test_a_table_that_is_not_a_frame_is_refused():
    with pytest.raises(ParameterError, match="'people'.*DataFrame"):
        propose_schema({"people": [1, 2, 3]})


def test_unusable_column_names_are_reported_together():
    db = {
        "a": pd.DataFrame([[1, 2]]),  # read without a header: numbers as names
        "b": pd.DataFrame([[1, 2]], columns=["x", "x"]),
    }
    with pytest.raises(DataError) as error:
        propose_schema(db)
    assert [p.table for p in error.value.problems] == ["a", "b"]
    assert "non-empty text" in str(error.value) and "more than once" in str(error.value)


# --------------------------------------------------------------------------- direct identifiers


def _identifier_columns(n: int = 400) -> dict[str, list]:
    """Generated columns of every kind of direct identifier, realistic enough to repeat some values."""
    rng = np.random.default_rng(7)
    first = ["Anna", "Ben", "Chloe", "David", "Emma", "Felix", "Grace", "Hugo", "Ines", "Jules"]
    last = [f"{a}{b}" for a in ("Mar", "Ber", "Dur", "Lef", "Mor", "Gar") for b in ("tin", "nard", "and", "evre", "eau")]
    streets = ["rue de la Paix", "Main Street", "avenue Foch", "Baker St.", "Elm Road"]
    words = ["pain", "since", "monday", "the", "patient", "reports", "mild", "fever", "and", "cough", "at", "night"]
    return {
        "first_name": list(rng.choice(first, n)),  # named: few distinct values, still a direct identifier
        "nameLast": list(rng.choice(last, n)),
        "doctorName": list(rng.choice([f"Dr. {name}" for name in last[:5]], n)),  # a person's name, 5 values
        "full_name": [f"{a} {b}" for a, b in zip(rng.choice(first, n), rng.choice(last, n), strict=True)],
        "contact": [f"user{i}@mail{i % 7}.org" for i in range(n)],
        "tel_number": [f"+33 6 {i // 100:02d} {i % 100:02d} {i % 89:02d} {i % 97:02d}" for i in range(n)],
        "home": [f"{i % 120 + 1} {streets[i % 5]}" for i in range(n)],
        "ssn": [f"{100 + i:03d}-{i % 90 + 10:02d}-{1000 + i:04d}" for i in range(n)],
        "page": [f"https://example.org/people/{i % 150}" for i in range(n)],
        "free_comment": [" ".join(rng.choice(words, 9)) for _ in range(n)],
        "token": [f"tok{i * 7919 % 100003:x}" for i in range(n)],  # unique per row, named like nothing
        "badge": [f"B{i % 300:04d}" for i in range(n)],  # 300 distinct values of 400: single people out
    }


@pytest.mark.parametrize("column", list(_identifier_columns()))
def test_direct_identifiers_of_every_kind_are_proposed_as_drop_with_a_reason(column):
    values = _identifier_columns()[column]
    frame = pd.DataFrame({"person_id": range(len(values)), column: values, "city": ["Lyon", "Nice"] * 200})
    kind, notes = proposed({"people": frame}, "people", column)
    assert kind == "drop", notes
    assert "REVIEW" in notes and "direct identifier" in notes and "change its type" in notes
    assert proposed({"people": frame}, "people", "city")[0] == "categorical"


def test_codes_and_categories_are_not_mistaken_for_identifiers():
    n = 400
    frame = pd.DataFrame({
        "row_id": range(n),
        "zip": ["01234", "75001", "13008", "69003"] * 100,  # codes with leading zeros
        "product_code": [f"{10_000_000 + i % 12}" for i in range(n)],  # 8 digits, but 12 codes: not phones
        "blood": ["A+", "O-", "B+", "AB+"] * 100,
        "diagnosis": ["flu", "broken arm", "migraine", "asthma"] * 100,
        "email_verified": ["yes", "no"] * 200,  # a flag about e-mail, not an address
        "hospital_name": ["Saint-Louis", "Necker", "Cochin", "Bichat"] * 100,  # a name, not a person's
    })
    proposal = propose_schema({"rows": frame})
    assert proposal.schema["rows"].types() == {
        "zip": "categorical", "product_code": "categorical", "blood": "categorical", "diagnosis": "categorical",
        "email_verified": "boolean", "hospital_name": "categorical",
    }
    assert not [n for n in proposal.notes if n.review and n.column in ("zip", "product_code")]  # text codes, all digits


def test_a_release_of_the_proposal_carries_no_name():
    """The defect that was found: run as proposed, every released last name was real."""
    values = _identifier_columns()
    people = pd.DataFrame({"person_id": range(400), "nameFirst": values["first_name"], "nameLast": values["nameLast"],
                           "age": np.arange(400) % 60 + 20})
    proposal = propose_schema({"people": people})
    released = {c.name for c in proposal.schema["people"].released_columns}
    assert released == {"age"}
