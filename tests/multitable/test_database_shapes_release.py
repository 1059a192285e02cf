"""The release of the shapes of databases people have: association tables (combinations of parents kept
unique), self-references (a forest with the original depths), keys declared in the SQLite release and dates
kept in their text format.

The database is built for the tests (``tests/retail_database.py``): a music store of 11 tables, once as a
SQLite file declaring its keys, once as CSV files without any key.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest
from retail_database import proposed

from relanon.multitable.associations import keep_combinations_unique
from relanon.multitable.pipeline import anonymize
from relanon.multitable.release import write_release
from relanon.multitable.results import TableRelease
from relanon.multitable.self_reference import relink_within
from relanon.schema.graph import self_links
from relanon.schema.hierarchy import depths, parent_rows
from relanon.schema.model import load_schema
from relanon.stores.io import read_database

SHOP = {"relanon": 1, "tables": {
    "lists": {"primary_key": "list_id", "columns": {"label": "categorical"}},
    "items": {"primary_key": "item_id", "columns": {"price": "continuous"},
              "foreign_keys": [{"column": "parent_id", "references": "items"}]},
    "list_items": {"primary_key": None, "association": True, "foreign_keys": [
        {"column": "list_id", "references": "lists"}, {"column": "item_id", "references": "items"}]},
}}


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


def test_a_small_database_with_an_association_and_a_hierarchy_is_released_with_its_keys(tmp_path):
    schema = load_schema({**SHOP, "tables": {**SHOP["tables"],
                                             "lists": {**SHOP["tables"]["lists"], "anonymize": {"method": "keep"}}}})
    rng = np.random.default_rng(5)
    parents = [None] * 4 + [1 + i % 4 for i in range(12)] + [5 + i % 12 for i in range(24)]
    pairs = pd.DataFrame({"list_id": rng.integers(1, 6, 150), "item_id": rng.integers(1, 41, 150)}).drop_duplicates()
    database = {"lists": pd.DataFrame({"list_id": np.arange(1, 6), "label": list("abcde")}),
                "items": pd.DataFrame({"item_id": np.arange(1, 41), "price": rng.gamma(2.0, 10.0, 40),
                                       "parent_id": pd.array(parents, dtype="Int64")}),
                "list_items": pairs.reset_index(drop=True)}
    result = anonymize(schema, database, random_state=1, progress=False)
    out = write_release(result, tmp_path / "release.sqlite")
    with sqlite3.connect(out) as connection:
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        key = [r[1] for r in connection.execute('PRAGMA table_info("list_items")') if r[5]]
        released = pd.read_sql_query("SELECT * FROM list_items", connection)
        items = pd.read_sql_query("SELECT item_id, parent_id FROM items", connection)
    connection.close()
    assert key == ["list_id", "item_id"] and list(released.columns) == ["list_id", "item_id"]  # no row numbers
    assert len(released) == len(pairs) and not released.duplicated().any()
    levels = depths(parent_rows(items["item_id"], items["parent_id"]))
    assert np.bincount(levels).tolist() == [4, 12, 24]
