"""The shapes of databases people have, as ``init`` proposes them and the schema file declares them: lookup
lists, constants, keys found in plain files, association tables, self-references.

The database is built for the tests (``tests/retail_database.py``): a music store of 11 tables, once as a
SQLite file declaring its keys, once as CSV files without any key.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest
from retail_database import proposed

from relanon.common.errors import DataError, SchemaError
from relanon.schema.graph import self_links
from relanon.schema.model import load_schema
from relanon.schema.proposal import propose_schema
from relanon.schema.validation import check_database
from relanon.stores.io import declared_keys, read_tables


def notes_text(proposal, table, column=None) -> str:
    return " ".join(n.message for n in proposal.notes_for(table, column))


# --------------------------------------------------------------------------- init


@pytest.mark.parametrize("source", ["sqlite", "csv"])
def test_init_proposes_every_shape_without_a_manual_edit(retail, source):
    _, sqlite_file, csv_folder = retail
    proposal, schema = proposed(sqlite_file if source == "sqlite" else csv_folder)
    # lookup lists keep their label, released as they are
    for lookup in ("Genre", "MediaType", "Playlist"):
        assert schema[lookup].anonymize.method == "keep"
        assert schema[lookup].types() == {"Name": "categorical"}
    # a constant is a constant, not a yes/no flag
    assert schema["InvoiceLine"].types()["Quantity"] == "integer"
    assert "a constant: all" in notes_text(proposal, "InvoiceLine", "Quantity")
    # a staff reference named after a role, and a manager within the table
    assert {(fk.column, fk.references) for fk in schema["Customer"].foreign_keys} == {("SupportRepId", "Employee")}
    assert [(fk.column, fk.references) for fk in schema["Employee"].foreign_keys] == [("ReportsTo", "Employee")]
    # the association table
    playlist_track = schema["PlaylistTrack"]
    assert playlist_track.association
    assert schema.to_dict()["tables"]["PlaylistTrack"]["primary_key"] is None
    assert {fk.references for fk in playlist_track.foreign_keys} == {"Playlist", "Track"}
    # dates stored as text with a time
    assert schema["Invoice"].types()["InvoiceDate"] == "datetime"
    assert schema["Employee"].types()["HireDate"] == "datetime"


def test_keys_found_in_plain_files_say_their_evidence(retail):
    _, _, csv_folder = retail
    proposal, _ = proposed(csv_folder)
    rep = notes_text(proposal, "Customer", "SupportRepId")
    assert "keys of Employee.EmployeeId and the names relate" in rep
    manager = notes_text(proposal, "Employee", "ReportsTo")
    assert "reports_to" in manager and "a hierarchy of 3 levels, 1 row at the top" in manager
    association = notes_text(proposal, "PlaylistTrack")
    assert "an association table" in association and "unique on (PlaylistId, TrackId)" in association


def test_a_role_names_its_table_of_people_but_values_alone_say_the_names_differ():
    staff = pd.DataFrame({"StaffId": np.arange(1, 21), "age": np.arange(30, 50)})
    orders = pd.DataFrame({"OrderId": np.arange(1, 201), "SalesRepId": np.tile(np.arange(3, 13), 20),
                           "BoxCount": np.tile(np.arange(3, 13), 20), "amount": np.linspace(1, 9, 200)})
    proposal = propose_schema({"Staff": staff, "Orders": orders})
    links = {fk.column: fk.references for fk in proposal.schema["Orders"].foreign_keys}
    assert links == {"SalesRepId": "Staff"}  # the count of boxes falls in 1..20 by chance: not a link
    assert "the names relate" in notes_text(proposal, "Orders", "SalesRepId")


def test_a_name_is_a_persons_only_in_a_table_about_people():
    genres = pd.DataFrame({"id": np.arange(1, 31), "name": [f"genre {i % 6}" for i in range(30)],
                           "kind": ["a", "b", "c"] * 10})
    patients = pd.DataFrame({"patient_id": np.arange(1, 31), "name": [f"person {i % 7}" for i in range(30)],
                             "age": np.arange(20, 50)})
    proposal = propose_schema({"genres": genres, "patients": patients})
    assert proposal.schema["genres"].types()["name"] == "categorical"
    assert proposal.schema["patients"].column("name").type == "drop"


def test_a_column_holding_one_value_is_a_constant_not_a_flag():
    frame = pd.DataFrame({"id": np.arange(1, 41), "quantity": 1, "ratio": 0.5, "flag": [0, 1] * 20})
    types = propose_schema({"lines": frame}).schema["lines"].types()
    assert types == {"quantity": "integer", "ratio": "continuous", "flag": "boolean"}


def test_a_named_hierarchy_with_a_cycle_is_not_proposed_and_says_why():
    frame = pd.DataFrame({"category_id": [1, 2, 3, 4], "parent_id": [None, 3, 4, 2], "label": list("abcd")})
    proposal = propose_schema({"categories": frame})
    assert not proposal.schema["categories"].foreign_keys
    assert "form a cycle" in notes_text(proposal, "categories", "parent_id")


# --------------------------------------------------------------------------- the schema file


SHOP = {"relanon": 1, "tables": {
    "lists": {"primary_key": "list_id", "columns": {"label": "categorical"}},
    "items": {"primary_key": "item_id", "columns": {"price": "continuous"},
              "foreign_keys": [{"column": "parent_id", "references": "items"}]},
    "list_items": {"primary_key": None, "association": True, "foreign_keys": [
        {"column": "list_id", "references": "lists"}, {"column": "item_id", "references": "items"}]},
}}


def test_association_tables_and_self_references_are_declared_and_written_back():
    schema = load_schema(SHOP)
    assert schema["list_items"].association and schema["list_items"].primary_key == "relanon_row"
    assert [link.column for link in self_links(schema, "items")] == ["parent_id"]
    assert load_schema(schema.to_dict()).to_dict() == schema.to_dict()
    assert schema.to_dict()["tables"]["list_items"]["primary_key"] is None


@pytest.mark.parametrize("change, message", [
    (lambda s: s["tables"]["list_items"].pop("association"), "not declared an association"),
    (lambda s: s["tables"]["list_items"].update(foreign_keys=[]), "declare its foreign_keys"),
    (lambda s: s["tables"]["items"]["foreign_keys"].append({"column": "list_row", "references": "list_items"}),
     "refers to the association table"),
    (lambda s: s["tables"]["list_items"].update(primary_key="list_id"), "has no primary key"),
    (lambda s: s["tables"]["items"]["foreign_keys"][0].update(anchor=True), "anchor has no meaning for a self-ref"),
])
def test_a_wrong_association_is_refused_with_its_reason(change, message):
    import copy

    raw = copy.deepcopy(SHOP)
    change(raw)
    with pytest.raises(SchemaError, match=message):
        load_schema(raw)


def test_a_hierarchy_with_a_cycle_is_refused_naming_its_rows():
    schema = load_schema(SHOP)
    database = {"lists": pd.DataFrame({"list_id": [1], "label": ["x"]}),
                "items": pd.DataFrame({"item_id": [1, 2, 3], "price": [1.0, 2.0, 3.0], "parent_id": [None, 3, 2]}),
                "list_items": pd.DataFrame({"list_id": [1], "item_id": [1]})}
    with pytest.raises(DataError, match="cycle of the hierarchy") as error:
        check_database(schema, database)
    assert set(error.value.problems[0].examples) == {2, 3}


def test_a_declared_self_reference_with_a_cycle_is_left_out_and_says_why(tmp_path):
    path = tmp_path / "cycle.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE staff (id INTEGER PRIMARY KEY, boss INTEGER REFERENCES staff (id), age INT)")
        connection.executemany("INSERT INTO staff VALUES (?, ?, ?)", [(1, None, 50), (2, 3, 40), (3, 2, 30)])
    connection.close()
    proposal = propose_schema(read_tables(path), declared=declared_keys(path))
    assert not proposal.schema["staff"].foreign_keys
    assert "form a cycle" in notes_text(proposal, "staff", "boss")
    load_schema(proposal.to_yaml())
