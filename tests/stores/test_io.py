"""Reading and writing a whole database: CSV folder, Parquet folder, SQLite file (and SQL URLs)."""

from __future__ import annotations

import doctest
import hashlib
import sqlite3
import sys
import time

import numpy as np
import pandas as pd
import pytest

import relanon.stores.io
import relanon.stores.sqlite as sqlite_module
from relanon.common.errors import DataError, ParameterError, StorageError
from relanon.schema.model import load_schema
from relanon.stores.io import detect_format, read_database, read_tables, write_database

OUTPUTS = {"csv": "clinic", "parquet": "clinic", "sqlite": "clinic.sqlite"}


def fingerprint(path):
    """Names, bytes and modification times of everything under ``path``."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return {str(p): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in files}


def write_csv(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.csv").write_text(text, encoding="utf-8")


def assert_same_database(actual, expected):
    assert list(actual) == list(expected)
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(actual[name], frame, check_exact=True)


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("fmt", ["csv", "parquet", "sqlite"])
def test_each_format_reads_back_what_it_wrote(clinic_database, clinic_schema, tmp_path, fmt):
    out = write_database(clinic_database, tmp_path / OUTPUTS[fmt], clinic_schema, format=fmt)
    assert detect_format(out) == fmt
    assert_same_database(read_database(out, clinic_schema), clinic_database)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "sqlite"])
def test_writing_and_reading_leave_the_input_untouched(clinic_database, clinic_schema, tmp_path, fmt):
    before = {name: frame.copy(deep=True) for name, frame in clinic_database.items()}
    out = write_database(clinic_database, tmp_path / OUTPUTS[fmt], clinic_schema, format=fmt)
    assert_same_database(clinic_database, before)
    on_disk = fingerprint(out)
    time.sleep(0.01)  # a rewrite would show in the modification times
    read_database(out, clinic_schema)
    read_tables(out)
    assert fingerprint(out) == on_disk


def test_tables_are_written_under_their_source_names(clinic_database, clinic_schema, tmp_path):
    spec = clinic_schema.to_dict()
    spec["tables"]["patients"]["source"] = "tbl_patients"
    schema = load_schema(spec)
    out = write_database(clinic_database, tmp_path / "out", schema)
    assert sorted(p.name for p in out.iterdir()) == ["doctors.csv", "tbl_patients.csv", "visits.csv"]
    assert_same_database(read_database(out, schema), clinic_database)


def test_tables_outside_the_schema_keep_their_names(clinic_database, clinic_schema, tmp_path):
    extra = {**clinic_database, "patients_sensitive": pd.DataFrame({"group": [1, 2], "disease": ["flu", "cold"]})}
    out = write_database(extra, tmp_path / "out.sqlite", clinic_schema)
    assert read_tables(out)["patients_sensitive"]["disease"].tolist() == ["flu", "cold"]


def test_parquet_keeps_the_time_zone_by_name(tmp_path):
    schema = load_schema({"relanon": 1, "tables": {"t": {"primary_key": "id", "columns": {"at": "datetime"}}}})
    paris = pd.DataFrame({"id": [1, 2], "at": pd.to_datetime(["2021-01-01 10:00", "2021-07-01 10:00"])})
    paris["at"] = paris["at"].dt.tz_localize("Europe/Paris").dt.as_unit("us")
    back = read_database(write_database({"t": paris}, tmp_path / "p", format="parquet"), schema)
    assert str(back["t"]["at"].dtype) == "datetime64[us, Europe/Paris]"
    as_text = read_database(write_database({"t": paris}, tmp_path / "c"), schema)
    assert (as_text["t"]["at"] == paris["at"]).all()  # text keeps the instants, on UTC


# --------------------------------------------------------------------------- what the files hold


def test_csv_files_hold_iso_dates_plain_integers_and_true_false(clinic_database, clinic_schema, tmp_path):
    out = write_database(clinic_database, tmp_path / "out", clinic_schema)
    patients = (out / "patients.csv").read_text(encoding="utf-8").splitlines()
    visits = (out / "visits.csv").read_text(encoding="utf-8").splitlines()
    doctors = (out / "doctors.csv").read_text(encoding="utf-8").splitlines()
    assert patients[0] == "patient_id,age,bmi,smoker,born,zip,blood,name"
    assert patients[1] == "10,34,22.5,true,1990-05-17,01234,A+,Ann"
    assert patients[2] == "11,,,false,1985-12-31,75001,O-,Bob"  # Int64 missing: empty, never 'nan' or '.0'
    assert visits[2] == "101,10,D2,2021-02-11 16:45:10.250,80.5,3,true"
    assert doctors[1] == "D1,cardiology,2010-03-01 08:30:00+00:00,true"


def test_csv_is_utf8(tmp_path):
    out = write_database({"t": pd.DataFrame({"id": [1], "city": ["Zoë's Åre, 東京"]})}, tmp_path / "out")
    assert (out / "t.csv").read_bytes().decode("utf-8") == 'id,city\n1,"Zoë\'s Åre, 東京"\n'


def test_sqlite_stores_dates_as_text_and_booleans_as_integers(clinic_database, clinic_schema, tmp_path):
    out = write_database(clinic_database, tmp_path / "clinic.db", clinic_schema)
    with sqlite3.connect(out) as connection:
        row = connection.execute("SELECT at, urgent, severity, cost FROM visits WHERE visit_id = 101").fetchone()
        declared = {r[1]: r[2] for r in connection.execute("PRAGMA table_info(visits)")}
        missing = connection.execute("SELECT severity FROM visits WHERE visit_id = 102").fetchone()
        key = [r[1] for r in connection.execute("PRAGMA table_info(visits)") if r[5]]
        links = {(r[3], r[2], r[4]) for r in connection.execute("PRAGMA foreign_key_list(visits)")}
        unchecked = connection.execute("PRAGMA foreign_key_check").fetchall()
    connection.close()
    assert row == ("2021-02-11 16:45:10.250", 1, 3, 80.5)  # ISO 8601
    assert declared == {  # INT, not INTEGER, for a key: an INTEGER PRIMARY KEY would reorder the rows
        "visit_id": "INT", "patient_id": "INTEGER", "doctor_id": "TEXT", "at": "TEXT",
        "cost": "REAL", "severity": "INTEGER", "urgent": "INTEGER",
    }
    assert key == ["visit_id"] and unchecked == []
    assert links == {("patient_id", "patients", "patient_id"), ("doctor_id", "doctors", "doctor_id")}
    assert missing == (None,)


# --------------------------------------------------------------------------- reading text storage


def test_csv_cells_are_typed_by_the_schema(clinic_schema, tmp_path):
    folder = tmp_path / "in"
    write_csv(folder, "doctors", "doctor_id,specialty,hired,senior\nD1,NA,2010-03-01T08:30:00Z,Yes\n")
    write_csv(folder, "patients",
              "patient_id,age,bmi,smoker,born,zip,blood,name\n"
              "12,41,NaN,N,31/12/1980,01234,NA,\n13,,22,y,02/01/1981,99999,,Bob\n")
    write_csv(folder, "visits",
              "visit_id,patient_id,doctor_id,at,cost,severity,urgent\n"
              "1,12,D1,2021-01-04,1e2,3,0\n2,13,,2021-01-05 10:00,inf,NA,1\n")
    db = read_database(folder, clinic_schema)
    patients, visits = db["patients"], db["visits"]
    assert patients["born"].dt.strftime("%Y-%m-%d").tolist() == ["1980-12-31", "1981-01-02"]  # day first
    assert patients["zip"].tolist() == ["01234", "99999"]
    assert patients["blood"].tolist()[0] == "NA" and pd.isna(patients["blood"][1])  # 'NA' among words: a value
    assert patients["age"].dtype == "Int64" and patients["smoker"].tolist() == [False, True]
    assert visits["patient_id"].dtype == "int64" and visits["doctor_id"].isna().tolist() == [False, True]
    assert visits["severity"].dtype == "Int64" and pd.isna(visits["severity"][1])  # 'NA' among integer codes
    assert visits["cost"].tolist() == [100.0, np.inf]
    assert str(db["doctors"]["hired"].dtype) == "datetime64[us, UTC]"


def test_semicolon_separated_csv_with_byte_order_mark(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "t.csv").write_bytes("\ufeffid;price\n1;2.5\n2;3\n".encode())
    schema = load_schema({"relanon": 1, "tables": {"t": {"primary_key": "id", "columns": {"price": "continuous"}}}})
    assert read_database(folder, schema)["t"]["price"].tolist() == [2.5, 3.0]


def test_sqlite_text_dates_and_integer_booleans(tmp_path):
    path = tmp_path / "in.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (id TEXT, seen TEXT, ok INTEGER, code TEXT, n INTEGER)")
        connection.executemany(
            "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
            [("1", "2020-01-31", 1, "007", 5), ("2", "2020-02-01 12:00:00", 0, "12", None)],
        )
    connection.close()
    schema = load_schema({"relanon": 1, "tables": {"t": {"primary_key": "id", "columns": {
        "seen": "datetime", "ok": "boolean", "code": "categorical", "n": "integer"}}}})
    t = read_database(path, schema)["t"]
    assert t.dtypes.astype(str).to_dict() == {
        "id": "int64", "seen": "datetime64[us]", "ok": "bool", "code": "str", "n": "Int64"}
    assert t["seen"].tolist() == [pd.Timestamp("2020-01-31"), pd.Timestamp("2020-02-01 12:00")]


def test_an_empty_table_reads_with_its_types(tmp_path):
    write_csv(tmp_path / "in", "t", "id,x,d\n")
    schema = load_schema({"relanon": 1, "tables": {"t": {"primary_key": "id", "columns": {
        "x": "continuous", "d": "datetime"}}}})
    t = read_database(tmp_path / "in", schema)["t"]
    assert len(t) == 0 and t.dtypes.astype(str).tolist() == ["str", "float64", "datetime64[us]"]


def test_read_tables_infers_types_without_a_schema(clinic_database, clinic_schema, tmp_path):
    for fmt in ("csv", "parquet", "sqlite"):
        tables = read_tables(write_database(clinic_database, tmp_path / fmt / OUTPUTS[fmt], clinic_schema, format=fmt))
        assert list(tables) == ["doctors", "patients", "visits"]
        assert tables["patients"]["patient_id"].dtype == "int64"
        assert tables["patients"]["age"].isna().sum() == 1
    write_csv(tmp_path / "raw", "t", "a,b,c\n1,x,NULL\nn/a,y,2.5\n")
    raw = read_tables(tmp_path / "raw")["t"]
    assert raw.dtypes.astype(str).to_dict() == {"a": "float64", "b": "str", "c": "float64"}


# --------------------------------------------------------------------------- problems when reading


def test_a_missing_table_says_what_was_looked_for_and_what_is_there(clinic_database, clinic_schema, tmp_path):
    out = write_database(clinic_database, tmp_path / "out", clinic_schema)
    (out / "patients.csv").rename(out / "Patient.csv")
    with pytest.raises(DataError) as caught:
        read_database(out, clinic_schema)
    [problem] = caught.value.problems
    assert problem.table == "patients"
    assert "no file 'patients.csv' in" in problem.message and str(out) in problem.message
    assert "did you mean 'Patient'?" in problem.message
    assert "found: 'Patient', 'doctors', 'visits'" in problem.message


def test_a_missing_sqlite_table_is_named_as_a_table(clinic_database, clinic_schema, tmp_path):
    out = write_database({"doctors": clinic_database["doctors"]}, tmp_path / "out.sqlite", clinic_schema)
    with pytest.raises(DataError) as caught:
        read_database(out, clinic_schema)
    messages = [p.message for p in caught.value.problems]
    assert len(messages) == 2 and all(m.startswith("no table '") for m in messages)
    assert all("found: 'doctors'" in m for m in messages)


def test_reading_reports_every_problem_at_once(clinic_schema, tmp_path):
    folder = tmp_path / "in"
    write_csv(folder, "patients", "patient_id,age,bmi,smoker,born,zip,blood,name,email\n"
              "1,forty,1.5,true,2000-01-01,1,A,x,a@b\n1,40,1.5,true,2000-01-01,1,A,y,c@d\n")
    write_csv(folder, "visits",
              "visit_id,patient_id,doctor_id,at,cost,severity,urgent\n1,7,,2020-01-01,1,1,sometimes\n")
    with pytest.raises(DataError) as caught:
        read_database(folder, clinic_schema)
    found = [(p.table, p.column) for p in caught.value.problems]
    assert found == [
        ("doctors", None),  # no doctors.csv
        ("patients", None),  # email is not declared
        ("patients", "age"),  # 'forty'
        ("patients", "patient_id"),  # duplicated
        ("visits", "urgent"),  # 'sometimes'
        ("visits", "patient_id"),  # orphan 7
    ]
    assert f"the database at {str(folder)!r} does not fit its schema (6 problems)" in str(caught.value)


def test_unreadable_files_raise_storage_errors(clinic_schema, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "doctors.csv").write_bytes("doctor_id,specialty\nD1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(StorageError, match="doctors.csv.*not UTF-8 text.*save it as UTF-8"):
        read_database(folder, clinic_schema)
    (folder / "doctors.csv").write_text("doctor_id,specialty\nD1,cardiology,oops\n")
    with pytest.raises(StorageError, match="cannot read .*doctors.csv.*more fields than the header"):
        read_tables(folder)
    (folder / "doctors.csv").write_text('doctor_id,specialty\nD1,"cardiology\n')
    with pytest.raises(StorageError, match="cannot read .*doctors.csv.*EOF inside string"):
        read_database(folder, clinic_schema)


# --------------------------------------------------------------------------- formats and locations


def test_detect_format(clinic_database, tmp_path):
    csv_folder = write_database(clinic_database, tmp_path / "c")
    parquet_folder = write_database(clinic_database, tmp_path / "p", format="parquet")
    sqlite_file = write_database(clinic_database, tmp_path / "s.db")
    disguised = tmp_path / "export.bin"
    disguised.write_bytes(sqlite_file.read_bytes())
    assert [detect_format(p) for p in (csv_folder, parquet_folder, sqlite_file, disguised)] == [
        "csv", "parquet", "sqlite", "sqlite"]
    assert detect_format("postgresql://me@localhost/clinic") == "sql"
    assert detect_format(tmp_path / "new.sqlite3") == "sqlite"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "nothing found at"),
        (lambda p: p.mkdir(), "holds no .csv or .parquet file"),
        (lambda p: (p.mkdir(), (p / "a.csv").touch(), (p / "b.parquet").touch()), "both .csv and .parquet"),
        (lambda p: p.write_text("id\n1\n"), "is a single file; give the folder"),
    ],
)
def test_detect_format_explains_what_it_cannot_tell(tmp_path, make, message):
    location = tmp_path / "data"
    make(location)
    with pytest.raises(StorageError, match=message):
        detect_format(location)


def test_an_unknown_format_is_a_parameter_error(clinic_database, tmp_path):
    with pytest.raises(ParameterError, match="unknown format 'xlsx'; expected one of: csv, parquet, sqlite, sql"):
        write_database(clinic_database, tmp_path / "out", format="xlsx")
    with pytest.raises(ParameterError, match="unknown format"):
        read_tables(tmp_path, format="excel")


def test_writing_over_or_inside_the_input_is_refused(clinic_database, tmp_path):
    source = write_database(clinic_database, tmp_path / "data")
    sqlite_source = write_database(clinic_database, tmp_path / "data.sqlite")
    before = fingerprint(tmp_path)
    for target, inputs in [
        (source, [source]),
        (source / "anonymized", [source]),
        (tmp_path, [source]),
        (sqlite_source, [sqlite_source]),
    ]:
        with pytest.raises(StorageError, match="refusing to write"):
            write_database(clinic_database, target, inputs=[target.parent / "schema.yaml", *inputs])
    with pytest.raises(StorageError, match="refusing to write"):
        write_database(clinic_database, source, inputs=str(source))  # one path, not a list of them
    assert fingerprint(tmp_path) == before


def test_a_folder_holding_other_things_is_never_replaced(clinic_database, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.docx").write_text("years of work")
    with pytest.raises(StorageError, match=r"holds 1 entry \('thesis.docx'\), which relanon did not write.*overwrite"):
        write_database(clinic_database, home)
    assert [p.name for p in home.iterdir()] == ["thesis.docx"]
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_text("not a database")
    with pytest.raises(StorageError, match="exists and is not a SQLite database"):
        write_database(clinic_database, not_sqlite)
    assert not_sqlite.read_text() == "not a database"


def test_a_previous_output_is_replaced_only_when_the_new_one_is_complete(
    clinic_database, clinic_schema, tmp_path, monkeypatch
):
    def disk_full(write):
        def writer(frame, *args, **kwargs):
            if "boom" in frame.columns:
                raise OSError(28, "No space left on device")
            return write(frame, *args, **kwargs)
        return writer

    for method in ("to_csv", "to_parquet"):
        monkeypatch.setattr(pd.DataFrame, method, disk_full(getattr(pd.DataFrame, method)))
    create_table = sqlite_module._create_sqlite_table

    def create_or_fail(connection, name, frame, *keys):
        if "boom" in frame.columns:
            raise OSError(28, "No space left on device")
        return create_table(connection, name, frame, *keys)

    monkeypatch.setattr(sqlite_module, "_create_sqlite_table", create_or_fail)
    broken = {**clinic_database, "zz_last": pd.DataFrame({"boom": [1]})}
    for fmt, name in OUTPUTS.items():
        out = write_database(clinic_database, tmp_path / fmt / name, clinic_schema, format=fmt)
        before = fingerprint(out)
        with pytest.raises(StorageError, match="cannot write.*No space left on device"):
            write_database(broken, out, clinic_schema, format=fmt, overwrite=True)
        assert fingerprint(out) == before
        assert [p.name for p in out.parent.iterdir()] == [name]  # no temporary leftovers
        smaller = write_database({"doctors": clinic_database["doctors"]}, out, clinic_schema, format=fmt,
                                 overwrite=True)
        # a folder is replaced whole; in a SQLite file only the tables written are replaced
        assert list(read_tables(smaller)) == (["doctors"] if fmt != "sqlite" else ["doctors", "patients", "visits"])


def test_names_that_cannot_be_written_are_reported_together(clinic_database, tmp_path):
    doctors, patients, visits = clinic_database.values()
    bad = {"../escape": doctors, "ok": visits, ".hidden": patients,
           "numbers": pd.DataFrame({0: [1]}), "list": [1, 2]}
    with pytest.raises(DataError) as caught:
        write_database(bad, tmp_path / "out")
    assert [p.table for p in caught.value.problems] == ["../escape", ".hidden", "numbers", "list"]
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- SQLAlchemy URLs (optional)


def test_a_url_without_sqlalchemy_says_what_to_install(monkeypatch, clinic_database):
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # as if it were not installed
    with pytest.raises(StorageError, match=r"needs SQLAlchemy.*pip install -e \"\.\[postgres\]\""):
        read_tables("postgresql://me@localhost/clinic")
    with pytest.raises(StorageError, match="needs SQLAlchemy"):
        write_database(clinic_database, "postgresql://me:secret@localhost/clinic")


def test_a_url_reads_and_writes_through_sqlalchemy(clinic_database, clinic_schema, tmp_path):
    pytest.importorskip("sqlalchemy")
    url = f"sqlite:///{tmp_path / 'server.sqlite'}"
    assert write_database(clinic_database, url, clinic_schema) == url
    assert_same_database(read_database(url, clinic_schema), clinic_database)
    with pytest.raises(StorageError, match="holds 3 tables .'doctors', 'patients', 'visits'. that relanon did not"):
        write_database(clinic_database, url, clinic_schema)
    with pytest.raises(StorageError, match="the database schema the data was read from"):
        write_database(clinic_database, url, inputs=[url])


# --------------------------------------------------------------------------- scale and documentation


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["csv", "parquet", "sqlite"])
def test_a_million_rows_are_written_read_and_checked_in_seconds(tmp_path, fmt):
    n = 1_000_000
    rng = np.random.default_rng(0)
    schema = load_schema({"relanon": 1, "tables": {"t": {"primary_key": "id", "columns": {
        "age": "integer", "bmi": "continuous", "smoker": "boolean", "born": "datetime", "zip": "categorical"}}}})
    table = pd.DataFrame({
        "id": np.arange(n),
        "age": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 99, n)), dtype="Int64"),
        "bmi": rng.normal(25, 4, n),
        "smoker": rng.random(n) < 0.3,
        "born": (pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 25_000, n), unit="D")).as_unit("us"),
        "zip": pd.Series(rng.choice(["01234", "75001", "13008"], n), dtype="str"),
    })
    out = write_database({"t": table}, tmp_path / OUTPUTS[fmt], schema, format=fmt)
    start = time.perf_counter()
    back = read_database(out, schema)["t"]
    seconds = time.perf_counter() - start
    pd.testing.assert_frame_equal(back, table)
    assert seconds < 20, f"reading and checking 1,000,000 rows from {fmt} took {seconds:.1f} s"


def test_docstring_examples_run():
    failures, tried = doctest.testmod(relanon.stores.io, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried > 0 and failures == 0
