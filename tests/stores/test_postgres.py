"""PostgreSQL in and out, against a real server started for the session (see postgres_server.py).

Without the server binaries these tests skip, saying how to install them; in CI (``CI`` set) a
missing server is a failure, so that they never pass by not running.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pandas as pd
import pytest
from postgres_server import INSTALL_HINT, ServerUnavailable, temporary_server
from retail_database import retail_tables, write_retail_sqlite

from relanon import datasets
from relanon.cli import main
from relanon.common.errors import StorageError
from relanon.multitable.pipeline import anonymize
from relanon.multitable.release import write_release
from relanon.schema.hierarchy import depths, parent_rows
from relanon.schema.model import dump_schema, load_schema
from relanon.schema.proposal import propose_schema
from relanon.schema.validation import check_database
from relanon.stores.io import declared_keys, read_database, read_tables, write_database
from relanon.stores.notes import check_release, release_methods


def _unavailable(message: str):
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the PostgreSQL tests: {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
def server():
    for module in ("sqlalchemy", "psycopg"):
        try:
            __import__(module)
        except ImportError:
            _unavailable(f"{module} is not installed: pip install -e '.[test]' (or '.[postgres]')")
    try:
        with temporary_server() as running:
            yield running
    except ServerUnavailable as exc:
        _unavailable(str(exc) if str(exc) else INSTALL_HINT)


@pytest.fixture
def database(server, request):
    """A fresh database on the server for one test: (server, URL with the password)."""
    name = "t_" + re.sub(r"\W", "_", request.node.name)[:50].lower()
    server.new_database(name)
    return server.url(name)


def sql(server, url: str, statement: str, *params):
    """Run one statement as the test user in the database of ``url``; rows when it returns some."""
    import psycopg

    name = url.rsplit("/", 1)[1].split("?", 1)[0]
    with psycopg.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                         dbname=name, autocommit=True) as connection:
        cursor = connection.execute(statement, params or None)
        return cursor.fetchall() if cursor.description else None


def column_types(server, url, schema="public") -> dict:
    rows = sql(server, url, "SELECT table_name, column_name, data_type FROM information_schema.columns "
                            "WHERE table_schema = %s", schema)
    return {(table, column): kind for table, column, kind in rows}


def constraints(server, url, schema="public") -> set:
    rows = sql(server, url, """
        SELECT c.conrelid::regclass::text, c.contype, a.attname, c.confrelid::regclass::text
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
        WHERE n.nspname = %s AND c.contype IN ('p', 'f')""", schema)
    return {(table.split(".")[-1], kind, column, parent.split(".")[-1] if parent != "-" else None)
            for table, kind, column, parent in rows}


def tables_in(server, url, schema) -> list:
    return sorted(r[0] for r in sql(server, url, "SELECT tablename FROM pg_tables WHERE schemaname = %s", schema))


@pytest.fixture
def clinic(clinic_database):
    """The clinic database without its infinite cost, which the anonymization refuses."""
    return {**clinic_database, "visits": clinic_database["visits"].assign(cost=[120.0, 80.5, 3.0, 0.1, np.nan])}


def assert_same_database(actual, expected, **options):
    assert list(actual) == list(expected)
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(actual[name], frame, check_exact=True, **options)


# --------------------------------------------------------------------------- round trips


def test_the_demo_database_goes_in_and_comes_back_with_types_nulls_and_keys(server, database):
    schema, original = datasets.hospital(scale=0.05, seed=0)
    original["patients"].loc[::7, "bmi"] = np.nan  # NULLs in a float column
    write_database(original, database, schema)
    types = column_types(server, database)
    assert types[("patients", "patient_id")] == "bigint"
    assert types[("patients", "bmi")] == "double precision"
    assert types[("patients", "smoker")] == "boolean"
    assert types[("patients", "birth_date")] == "date"  # dates at midnight stay dates
    assert types[("patients", "sex")] == "text"
    assert types[("visits", "visit_date")] == "date"
    found = constraints(server, database)
    for table in schema:
        assert (table.name, "p", table.primary_key, None) in found
        for fk in table.foreign_keys:
            assert (table.name, "f", fk.column, fk.references) in found
    back = read_database(database, schema)
    for name, frame in original.items():
        pd.testing.assert_frame_equal(back[name], frame, check_dtype=False, check_exact=True)
        assert back[name]["patient_id" if name == "patients" else frame.columns[0]].dtype == "int64"
    assert back["patients"]["bmi"].isna().sum() == original["patients"]["bmi"].isna().sum() > 0
    keys = declared_keys(database)
    assert keys.primary_keys == {t.name: (t.primary_key,) for t in schema}
    assert {t: {(c[0], p) for c, p, _ in links} for t, links in keys.foreign_keys.items()} == {
        t.name: {(fk.column, fk.references) for fk in t.foreign_keys} for t in schema if t.foreign_keys}


def test_every_column_type_reads_back_exactly(clinic_database, clinic_schema, server, database):
    # aware and naive timestamps, text keys, codes with leading zeros, inf, NULLs in every type
    write_database(clinic_database, database, clinic_schema)
    types = column_types(server, database)
    assert types[("doctors", "hired")] == "timestamp with time zone"
    assert types[("visits", "at")] == "timestamp without time zone"
    assert types[("visits", "severity")] == "bigint" and types[("doctors", "doctor_id")] == "text"
    assert_same_database(read_database(database, clinic_schema), clinic_database)


@pytest.fixture(params=["copy", "fetch"])
def reading(request, monkeypatch):
    """Both ways of reading: COPY parsed by pyarrow (PostgreSQL with psycopg), and the server-side
    cursor every SQLAlchemy database has (forced here on PostgreSQL)."""
    import relanon.stores.sql as sql_module

    if request.param == "fetch":
        monkeypatch.setattr(sql_module, "has_copy", lambda connection: False)
    return request.param


def test_server_types_are_read_as_the_schema_declares(server, database, reading):
    sql(server, database, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    sql(server, database, """CREATE TABLE people (
        id integer PRIMARY KEY, small smallint, big bigint, maybe integer, price numeric(10, 2),
        whole numeric(12, 0), ratio real, score double precision, flag boolean, born date,
        seen timestamp, seen_tz timestamptz, note text, code varchar(5), feeling mood, token uuid)""")
    sql(server, database, """INSERT INTO people VALUES
        (1, 3, 9007199254740993, 7, 12.34, 123456789012, 0.5, 1e300, true, '1980-02-29',
         '2024-01-31 13:45:00.123456', '2024-01-31 13:45:00+02', 'a', '01234', 'happy',
         'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
        (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (3, -4, -1, 0, -0.01, 0, -2.25, -0.0, false, '2024-12-31', '1900-01-01 00:00:00',
         '1999-12-31 23:59:59.5-05', '', 'x', 'sad', NULL)""")
    schema = load_schema({"relanon": 1, "tables": {"people": {"primary_key": "id", "columns": {
        "small": "integer", "big": "integer", "maybe": "integer", "price": "continuous", "whole": "integer",
        "ratio": "continuous", "score": "continuous", "flag": "boolean", "born": "datetime", "seen": "datetime",
        "seen_tz": "datetime", "note": "categorical", "code": "categorical", "feeling": "categorical",
        "token": "categorical"}}}})
    people = read_database(database, schema)["people"]
    assert people["id"].tolist() == [1, 2, 3] and people["id"].dtype == "int64"
    assert people["small"].dtype == "Int64" and people["small"].tolist() == [3, pd.NA, -4]
    assert people["big"][0] == 9007199254740993  # beyond 2**53: no float on the way
    assert people["price"].tolist()[0] == 12.34 and np.isnan(people["price"][1])
    assert people["whole"].dtype == "Int64" and people["whole"][0] == 123456789012
    assert people["ratio"].tolist()[2] == -2.25 and people["score"][0] == 1e300
    assert people["flag"].dtype == "boolean" and people["flag"].tolist() == [True, pd.NA, False]
    assert str(people["born"].dtype) == "datetime64[us]"
    assert people["born"].tolist()[0] == pd.Timestamp("1980-02-29") and pd.isna(people["born"][1])
    assert people["seen"][0] == pd.Timestamp("2024-01-31 13:45:00.123456")
    assert str(people["seen_tz"].dtype) == "datetime64[us, UTC]"
    assert people["seen_tz"][0] == pd.Timestamp("2024-01-31 11:45:00", tz="UTC")
    assert people["seen_tz"][2] == pd.Timestamp("2000-01-01 04:59:59.5", tz="UTC")
    assert people["note"].tolist()[0] == "a" and pd.isna(people["note"][1]) and people["note"][2] == ""
    assert people["code"][0] == "01234"  # a code stays text in a server: its type says so
    assert people["feeling"].tolist()[::2] == ["happy", "sad"]
    assert people["token"][0] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    proposal = propose_schema(read_tables(database), declared=declared_keys(database))
    assert proposal.schema["people"].primary_key == "id"
    assert "declared as the primary key" in str(proposal.notes_for("people", "id")[0])


def test_large_tables_are_read_in_chunks(server, database, monkeypatch, reading):
    import relanon.stores.sql as sql_module

    monkeypatch.setattr(sql_module, "CHUNK_ROWS", 1_000)
    monkeypatch.setattr(sql_module, "CHUNK_BYTES", 16_384)
    sql(server, database, "CREATE TABLE t AS SELECT g AS id, CASE WHEN g % 3 = 0 THEN NULL ELSE g END AS v, "
                          "'2020-01-01'::date + g AS d FROM generate_series(1, 5500) g")
    sql(server, database, "ALTER TABLE t ADD PRIMARY KEY (id)")
    schema = load_schema({"relanon": 1, "tables": {"t": {"primary_key": "id",
                                                         "columns": {"v": "integer", "d": "datetime"}}}})
    store = sql_module.SqlDatabase(database)
    try:
        chunks = [len(chunk) for chunk in store.read_arrow("t").column("v").chunks]
    finally:
        store.close()
    # never the whole table at once: blocks of 16 KB of COPY text, or 1,000 rows from the cursor
    assert sum(chunks) == 5500 and len(chunks) >= 5 and (reading == "copy" or max(chunks) == 1_000)
    table = read_database(database, schema)["t"]
    assert table["id"].tolist() == list(range(1, 5501))
    assert table["v"].isna().sum() == 5500 // 3
    assert table["d"].iloc[-1] == pd.Timestamp("2020-01-01") + pd.Timedelta(days=5500)


def test_a_table_in_a_schema_of_its_own_is_read_and_its_declared_keys_proposed(server, database):
    sql(server, database, "CREATE SCHEMA clinic")
    sql(server, database, "CREATE TABLE clinic.wards (ward text PRIMARY KEY, floor integer)")
    sql(server, database, "CREATE TABLE clinic.stays (stay integer PRIMARY KEY, "
                          "room text REFERENCES clinic.wards (ward), days integer)")
    sql(server, database, "INSERT INTO clinic.wards VALUES ('A', 1), ('B', 2), ('C', 2)")
    sql(server, database, "INSERT INTO clinic.stays SELECT g, chr(65 + g % 3), g % 9 FROM generate_series(1, 30) g")
    sql(server, database, "CREATE TABLE public.decoy (x integer)")
    url = f"{database}?schema=clinic"
    assert sorted(read_tables(url)) == ["stays", "wards"]
    proposal = propose_schema(read_tables(url), declared=declared_keys(url))
    # names say nothing here: the keys come from the server
    assert proposal.schema["wards"].primary_key == "ward"
    assert proposal.schema["stays"].primary_key == "stay"
    assert [(fk.column, fk.references) for fk in proposal.schema["stays"].foreign_keys] == [("room", "wards")]
    assert read_database(url, proposal.schema)["stays"]["room"].tolist()[:3] == ["B", "C", "A"]
    with pytest.raises(StorageError, match="no schema 'nowhere' in .*found: .*'clinic'"):
        read_tables(f"{database}?schema=nowhere")


# --------------------------------------------------------------------------- releases


@pytest.mark.filterwarnings("ignore:table .* fewer than k . 1:UserWarning")  # a tiny database: k lowered
def test_a_release_is_written_into_its_own_schema_and_read_back(clinic, clinic_schema, server, database):
    result = anonymize(clinic_schema, clinic, random_state=0)
    out = f"{database}?schema=release"
    write_release(result, out, inputs=[database])
    assert tables_in(server, database, "release") == ["doctors", "patients", "relanon_files", "visits"]
    assert tables_in(server, database, "public") == []
    # as read back from any store: a nullable column without missing values comes back plain
    assert_same_database(read_database(out, result.schema), dict(result.tables), check_dtype=False)
    notes = dict(sql(server, database, "SELECT name, content FROM release.relanon_files"))
    assert json.loads(notes["release.json"])["tables"]["visits"]["rows"] == 5
    # the audit knows a release from its notes, as for a folder or a SQLite file
    assert release_methods(out) == {"doctors": "avatar", "patients": "avatar", "visits": "avatar"}
    assert release_methods(database) == {}
    # its notes vouch for the tables as the server holds them (fingerprints computed in the same transaction)
    assert check_release(out, result.schema).unverified == {}
    assert json.loads(notes["release.json"])["written"]["visits"]["rows"] == 5
    assert ("visits", "f", "patient_id", "patients") in constraints(server, database, "release")
    again = anonymize(clinic_schema, clinic, random_state=1)
    write_release(again, out)  # a release relanon wrote is replaced without --overwrite
    assert_same_database(read_database(out, again.schema), dict(again.tables), check_dtype=False)
    assert check_release(out, again.schema).unverified == {}
    sql(server, database, "UPDATE release.patients SET bmi = bmi + 1 WHERE patient_id = (SELECT min(patient_id) FROM release.patients)")
    unverified = check_release(out, again.schema).unverified
    assert list(unverified) == ["patients"] and "changed or replaced after relanon wrote it" in unverified["patients"]


def test_a_failed_write_leaves_nothing(clinic_database, clinic_schema, server, database):
    orphan = dict(clinic_database)
    orphan["visits"] = clinic_database["visits"].assign(patient_id=[10, 10, 11, 13, 99])  # 99: no such patient
    with pytest.raises(StorageError, match=r"rolled back.*visits.*foreign key"):
        write_database(orphan, f"{database}?schema=release", clinic_schema)
    assert sql(server, database, "SELECT count(*) FROM pg_namespace WHERE nspname = 'release'") == [(0,)]
    write_database(clinic_database, f"{database}?schema=release", clinic_schema,
                   files={"release.json": json.dumps({"relanon": "0", "tables": {}}),
                          "schema.yaml": dump_schema(clinic_schema)})
    with pytest.raises(StorageError, match="rolled back"):
        write_database(orphan, f"{database}?schema=release", clinic_schema)
    # the release that was there is untouched
    assert_same_database(read_database(f"{database}?schema=release", clinic_schema), clinic_database)


def test_other_tables_are_never_replaced_without_overwrite(clinic_database, clinic_schema, server, database):
    out = f"{database}?schema=shared"
    sql(server, database, "CREATE SCHEMA shared")
    sql(server, database, "CREATE TABLE shared.budget (year integer, amount numeric)")
    sql(server, database, "CREATE TABLE shared.doctors (mine text)")
    with pytest.raises(StorageError, match=r"holds 2 tables \('budget', 'doctors'\) that relanon did not write.*"
                                           r"overwrite=True"):
        write_database(clinic_database, out, clinic_schema)
    assert tables_in(server, database, "shared") == ["budget", "doctors"]
    write_database(clinic_database, out, clinic_schema, overwrite=True)
    assert tables_in(server, database, "shared") == ["budget", "doctors", "patients", "visits"]
    assert_same_database(read_database(out, clinic_schema), clinic_database)
    with pytest.raises(StorageError, match="the database schema the data was read from"):
        write_database(clinic_database, out.replace("127.0.0.1", "localhost"), clinic_schema, inputs=[out],
                       overwrite=True)


# --------------------------------------------------------------------------- the command line


def test_the_command_line_round_trip_never_shows_the_password(clinic, clinic_schema, server, database,
                                                               tmp_path, capsys, monkeypatch):
    write_database(clinic, database, clinic_schema)
    schema_file = tmp_path / "schema.yaml"
    dump_schema(clinic_schema, schema_file)
    monkeypatch.chdir(tmp_path)
    out = f"{database}?schema=release"
    assert main(["init", "--data", database, "--out", str(tmp_path / "proposed.yaml")]) == 0
    assert "declared as a foreign key to patients.patient_id" in (tmp_path / "proposed.yaml").read_text()
    assert main(["validate", str(schema_file), "--data", database]) == 0
    assert main(["anonymize", str(schema_file), "--data", database, "--out", out, "--seed", "3", "-q",
                 "--no-report"]) == 0
    # the individual tables declare no quasi-identifiers: nothing is audited, which is not a pass (exit 1)
    assert main(["audit", str(schema_file), "--data", out, "--k", "1", "--max-risk", "1"]) == 1
    audited = capsys.readouterr()
    assert "NOTHING AUDITED" in audited.out
    assert main(["evaluate", str(schema_file), "--original", database, "--anonymized", out, "-q",
                 "--json", str(tmp_path / "metrics.json"), "--exit-zero"]) == 0
    assert main(["report", str(schema_file), "--original", database, "--anonymized", out, "-q",
                 "--out", str(tmp_path / "review")]) == 0
    assert (tmp_path / "review" / "report.html").is_file()
    printed = capsys.readouterr()
    assert "***@" in audited.out + printed.out
    written = [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    notes = [content for _, content in sql(server, database, "SELECT name, content FROM release.relanon_files")]
    for text in [audited.out, audited.err, printed.out, printed.err, *written, *notes]:
        assert server.password not in text


def test_a_wrong_password_and_an_unreachable_server_are_clear_errors(clinic_schema, server, database, tmp_path,
                                                                    capsys):
    schema_file = tmp_path / "schema.yaml"
    dump_schema(clinic_schema, schema_file)
    wrong = database.replace(f":{server.password}@", ":not-the-password@")
    assert main(["validate", str(schema_file), "--data", wrong]) == 2
    error = capsys.readouterr().err
    assert "password authentication failed" in error and "not-the-password" not in error and "***" in error
    closed = database.replace(f":{server.port}/", ":1/")  # nothing listens on port 1 of this machine
    assert main(["anonymize", str(schema_file), "--data", database, "--out", f"{closed}?schema=r"]) == 2
    error = capsys.readouterr().err
    assert "cannot connect" in error and "Connection refused" in error and server.password not in error
    assert "Traceback" not in error


def test_the_password_may_come_from_pgpassword_or_a_pgpass_file(clinic_database, clinic_schema, server, database,
                                                                 tmp_path, monkeypatch):
    write_database(clinic_database, database, clinic_schema)
    without = database.replace(f":{server.password}@", "@")
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    monkeypatch.setenv("PGPASSWORD", server.password)
    assert list(read_tables(without)) == ["doctors", "patients", "visits"]
    monkeypatch.delenv("PGPASSWORD")
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"{server.host}:{server.port}:*:{server.user}:{server.password}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    assert list(read_tables(without)) == ["doctors", "patients", "visits"]


def test_postgresql_urls_use_psycopg_3():
    from relanon.stores.sql import engine_for

    engine, schema = engine_for("postgresql://me:pw@localhost/clinic?schema=release&sslmode=prefer")
    assert engine.url.drivername == "postgresql+psycopg" and schema == "release"
    assert "schema" not in engine.url.query and engine.url.query["sslmode"] == "prefer"
    assert "pw" not in repr(engine.url)
    engine.dispose()



# --------------------------------------------------------------------------- keys of a release


def test_association_keys_and_self_references_are_declared_and_checked_by_the_server(server, database):
    schema = load_schema({"relanon": 1, "tables": {
        "lists": {"primary_key": "list_id", "columns": {"label": "categorical"}},
        "items": {"primary_key": "item_id", "foreign_keys": [{"column": "parent_id", "references": "items"}],
                  "columns": {"added": "datetime"}},
        "list_items": {"primary_key": None, "association": True, "foreign_keys": [
            {"column": "list_id", "references": "lists"}, {"column": "item_id", "references": "items"}]}}})
    raw = {"lists": pd.DataFrame({"list_id": [1, 2], "label": ["a", "b"]}),
           "items": pd.DataFrame({"item_id": [1, 2, 3], "parent_id": [None, 1, 2],
                                  "added": ["2007-01-01 00:00:00", "2007-01-02 00:00:00", "2007-01-03 00:00:00"]}),
           "list_items": pd.DataFrame({"list_id": [1, 1, 2], "item_id": [1, 2, 2]})}
    write_database(check_database(schema, raw, from_text=True), database, schema)
    found = {(table.strip('"'), kind, column, parent.strip('"') if parent else None)
             for table, kind, column, parent in constraints(server, database)}
    assert found == {("lists", "p", "list_id", None), ("items", "p", "item_id", None),
                     ("items", "f", "parent_id", "items"), ("list_items", "p", "list_id", None),
                     ("list_items", "p", "item_id", None), ("list_items", "f", "list_id", "lists"),
                     ("list_items", "f", "item_id", "items")}
    assert column_types(server, database)[("items", "added")] == "timestamp without time zone"  # written with a time
    assert column_types(server, database).get(("list_items", "relanon_row")) is None  # the row numbers stay in memory


@pytest.mark.slow
def test_a_release_declares_association_keys_and_self_references_that_the_server_checks(server, database, tmp_path):
    source = write_retail_sqlite(tmp_path / "retail.sqlite", retail_tables(tracks=120, customers=40, invoices=80))
    proposal = propose_schema(read_tables(source), declared=declared_keys(source))
    schema = load_schema(proposal.to_yaml())
    result = anonymize(schema, read_database(source, schema), random_state=2, progress=False)
    url = database + "?schema=release"
    write_release(result, url)
    found = {(table.strip('"'), kind, column, parent.strip('"') if parent else None)  # mixed case: quoted
             for table, kind, column, parent in constraints(server, database, "release")}
    assert {("PlaylistTrack", "p", "PlaylistId", None), ("PlaylistTrack", "p", "TrackId", None)} <= found
    assert ("Employee", "f", "ReportsTo", "Employee") in found and ("Customer", "f", "SupportRepId", "Employee") in found
    assert {table for table, kind, _, _ in found if kind == "p"} == set(schema.tables)
    assert column_types(server, database, "release")[("Invoice", "InvoiceDate")] == "timestamp without time zone"
    staff = sql(server, database, 'SELECT "EmployeeId", "ReportsTo" FROM release."Employee"')
    frame = pd.DataFrame(staff, columns=["id", "boss"])
    levels = depths(parent_rows(frame["id"], frame["boss"]))
    assert (levels >= 0).all() and np.bincount(levels).tolist() == [1, 3, 12]
    back = read_database(url, load_schema(dump_schema(result.schema)))
    assert len(back["PlaylistTrack"]) == len(result.tables["PlaylistTrack"])
