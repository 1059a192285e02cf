"""The shapes of databases people have: lookup lists, constants, keys found in plain files, association
tables, self-references, keys declared in the release and dates kept in their text format.

The database is built for the tests (``tests/retail_database.py``): a music store of 11 tables, once as a
SQLite file declaring its keys, once as CSV files without any key.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest
from retail_database import retail_tables, write_retail_csv, write_retail_sqlite

from relanon.common.errors import DataError, SchemaError
from relanon.multitable.associations import keep_combinations_unique
from relanon.multitable.pipeline import anonymize
from relanon.multitable.release import write_release
from relanon.multitable.results import TableRelease
from relanon.multitable.self_reference import relink_within
from relanon.schema.graph import self_links
from relanon.schema.hierarchy import depths, parent_rows
from relanon.schema.model import load_schema
from relanon.schema.proposal import propose_schema
from relanon.schema.validation import check_database
from relanon.stores.io import declared_keys, read_database, read_tables


@pytest.fixture(scope="module")
def retail(tmp_path_factory):
    """(tables, SQLite file declaring its keys, folder of CSV files without keys)."""
    folder = tmp_path_factory.mktemp("retail")
    tables = retail_tables()
    return tables, write_retail_sqlite(folder / "retail.sqlite", tables), write_retail_csv(folder / "csv", tables)


def proposed(location):
    proposal = propose_schema(read_tables(location), name="retail", declared=declared_keys(location))
    return proposal, load_schema(proposal.to_yaml())  # the file as written, read back without any edit


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


# --------------------------------------------------------------------------- the release


def test_depths_of_a_forest():
    assert depths(np.array([-1, 0, 0, 1, 3, -1])).tolist() == [0, 1, 1, 2, 3, 0]


def test_a_self_reference_is_redrawn_as_a_forest_with_the_original_depths():
    schema = load_schema(SHOP)
    parents = [None] * 3 + [1 + i % 3 for i in range(9)] + [4 + i % 9 for i in range(18)]
    frame = pd.DataFrame({"item_id": np.arange(1, 31), "price": np.arange(30.0),
                          "parent_id": pd.array(parents, dtype="Int64")})
    rng = np.random.default_rng(0)
    source = rng.permutation(30)
    released = pd.DataFrame({"item_id": np.arange(101, 131), "price": frame["price"].to_numpy()[source]})
    release = TableRelease("items", "avatar", released, source)
    link = self_links(schema, "items")[0]
    redrawn = relink_within(schema, link, {"items": frame}, release, rng)
    assert redrawn.dropna().isin(released["item_id"]).all()
    before = depths(parent_rows(frame["item_id"], frame["parent_id"]))
    after = depths(parent_rows(released["item_id"], redrawn))
    assert (after >= 0).all()  # a forest: no row in a cycle
    assert np.bincount(after).tolist() == np.bincount(before).tolist() == [3, 9, 18]
    children = lambda keys, refs: sorted(refs.value_counts().reindex(keys, fill_value=0).tolist())  # noqa: E731
    assert children(released["item_id"], redrawn) == children(frame["item_id"], frame["parent_id"])


def test_repeated_combinations_of_an_association_are_made_unique_keeping_the_counts():
    schema = load_schema(SHOP)
    original = pd.DataFrame({"relanon_row": np.arange(1, 61), "list_id": np.repeat([1, 2, 3], 20),
                             "item_id": np.tile(np.arange(1, 21), 3)})
    rng = np.random.default_rng(3)
    released = original.assign(item_id=rng.integers(1, 21, 60))  # re-linked at random: pairs repeat
    assert released.duplicated(["list_id", "item_id"]).any()
    releases = {"list_items": TableRelease("list_items", "avatar", released.copy(), np.arange(60)),
                "items": TableRelease("items", "avatar", pd.DataFrame({"item_id": np.arange(1, 21)}), np.arange(20))}
    changed, left = keep_combinations_unique(schema, "list_items", {"list_items": original}, releases, rng)
    after = releases["list_items"].frame
    assert changed > 0 and left == 0
    assert not after.duplicated(["list_id", "item_id"]).any()
    assert after["list_id"].value_counts().to_dict() == released["list_id"].value_counts().to_dict()


@pytest.mark.slow
@pytest.mark.parametrize("source", ["sqlite", "csv"])
def test_the_release_holds_every_table_with_its_keys_declared_and_its_dates_as_written(retail, source, tmp_path):
    tables, sqlite_file, csv_folder = retail
    location = sqlite_file if source == "sqlite" else csv_folder
    _, schema = proposed(location)
    with pytest.warns(UserWarning):  # the employees' cities: no city held by 10 people
        result = anonymize(schema, read_database(location, schema), random_state=4, progress=False)
    out = write_release(result, tmp_path / "release.sqlite")
    with sqlite3.connect(out) as connection:
        written = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert set(tables) <= written
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        keys = {name: [r[1] for r in connection.execute(f'PRAGMA table_info("{name}")') if r[5]] for name in tables}
        assert keys["PlaylistTrack"] == ["PlaylistId", "TrackId"] and keys["Employee"] == ["EmployeeId"]
        links = {(name, r[3], r[2]) for name in tables for r in connection.execute(f'PRAGMA foreign_key_list("{name}")')}
        assert ("Employee", "ReportsTo", "Employee") in links and ("Customer", "SupportRepId", "Employee") in links
        pairs = connection.execute("SELECT COUNT(*), COUNT(DISTINCT PlaylistId || '-' || TrackId) FROM PlaylistTrack")
        assert len(set(pairs.fetchone())) == 1
        assert connection.execute("SELECT COUNT(*) FROM PlaylistTrack").fetchone()[0] == len(tables["PlaylistTrack"])
        genres = connection.execute("SELECT Name FROM Genre ORDER BY GenreId").fetchall()
        assert [g[0] for g in genres] == tables["Genre"]["Name"].tolist()
        dates = [r[0] for r in connection.execute("SELECT InvoiceDate FROM Invoice")]
        assert all(len(d) == 19 and d.endswith(" 00:00:00") for d in dates)
        employees = pd.read_sql_query("SELECT EmployeeId, ReportsTo FROM Employee", connection)
    levels = depths(parent_rows(employees["EmployeeId"], employees["ReportsTo"]))
    assert (levels >= 0).all() and np.bincount(levels).tolist() == [1, 3, 12]
    folder = write_release(result, tmp_path / "csv", format="csv")
    text = (folder / "Invoice.csv").read_text().splitlines()
    assert text[1].split(",")[2].endswith(" 00:00:00")
    assert (folder / "PlaylistTrack.csv").read_text().splitlines()[0] == "PlaylistId,TrackId"


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
