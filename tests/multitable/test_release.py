"""What is published: tables, schema and notes; de-associated tables in a run."""

from __future__ import annotations

import json
import shutil
import sqlite3
import warnings

import pandas as pd
import pytest

from relanon.audit import audit_database
from relanon.common.errors import SchemaError, StorageError
from relanon.multitable.pipeline import SensitiveChoiceWarning, anonymize
from relanon.multitable.release import write_release
from relanon.schema.graph import all_links
from relanon.schema.model import load_schema
from relanon.stores.io import read_database, write_database
from relanon.stores.notes import check_release


@pytest.fixture
def small_demo(tiny_hospital):
    return tiny_hospital


@pytest.fixture
def small_release(tiny_hospital_release):
    """The demo at 5 % released with seed 0 (made once per session): the tests write it, never modify it."""
    return tiny_hospital_release


def with_methods(schema, **changes):
    data = schema.to_dict()
    for table, anonymize_spec in changes.items():
        data["tables"][table].update(anonymize_spec)
    return load_schema(data)


@pytest.mark.parametrize("fmt, name", [("csv", "out"), ("parquet", "out"), ("sqlite", "out.sqlite")])
def test_release_reads_back_with_its_own_schema(small_demo, small_release, tmp_path, fmt, name):
    schema, database = small_demo
    result = small_release
    written = write_release(result, tmp_path / name, format=fmt)
    back = read_database(written, schema)
    for table in schema:
        pd.testing.assert_frame_equal(back[table.name], result.tables[table.name], check_dtype=False)
        # same kinds of dtypes (text storage gives dates in microseconds)
        assert [d.kind for d in back[table.name].dtypes] == [d.kind for d in result.tables[table.name].dtypes]


def test_release_folder_notes_and_no_seed(small_demo, small_release, tmp_path):
    schema, database = small_demo
    result = small_release
    out = write_release(result, tmp_path / "out")
    assert schema.seed is not None
    published = load_schema(out / "schema.yaml")
    assert published.seed is None  # the seed would let a reader replay the shuffles: never published
    assert "seed" not in (out / "schema.yaml").read_text()
    notes = json.loads((out / "release.json").read_text())
    assert notes["tables"]["patients"]["method"] == "avatar"
    assert {(link["child"], link["column"], link["method"]) for link in notes["links"]} == {
        (link.child, link.column, link.method) for link in all_links(schema)
    }
    assert not (out / "WARNING-SENSITIVE-CHOICES.txt").exists()
    # the same folder can be written again (it holds only what relanon wrote)
    write_release(result, out)


def test_original_order_writes_a_loud_warning_into_the_release(small_demo, tmp_path):
    schema, database = small_demo
    data = schema.to_dict()
    data["tables"]["visits"]["foreign_keys"][0]["link"] = "original_order"
    changed = load_schema(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SensitiveChoiceWarning)
        result = anonymize(changed, database, random_state=1, progress=False)
    out = write_release(result, tmp_path / "out")
    warning = (out / "WARNING-SENSITIVE-CHOICES.txt").read_text()
    assert "visits.patient_id -> patients used original_order" in warning
    sqlite = write_release(result, tmp_path / "out.sqlite", format="sqlite")
    import sqlite3

    with sqlite3.connect(sqlite) as connection:
        names = [row[0] for row in connection.execute("SELECT name FROM relanon_files")]
    assert "WARNING-SENSITIVE-CHOICES.txt" in names


def test_unprotected_sensitive_columns_are_decoded_like_the_others_and_said_loudly(small_demo, small_release, tmp_path):
    schema, database = small_demo
    unprotected = with_methods(schema, patients={"anonymize": {"method": "avatar", "k": 20, "protect_sensitive": False}})
    undeclared = with_methods(schema, patients={"sensitive": []})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SensitiveChoiceWarning)
        result = anonymize(unprotected, database, random_state=0, progress=False)
    assert any("patients sets protect_sensitive: false" in str(w.message) for w in caught)
    plain = anonymize(undeclared, database, random_state=0, progress=False)
    protected = small_release  # the same seed, 0
    # without the protection the columns (and the visits' copies steering their link) are decoded as if
    # they were not sensitive; with it, they are not
    for name in schema.tables:
        pd.testing.assert_frame_equal(result.tables[name], plain.tables[name])
    assert not result.tables["patients"]["smoker"].equals(protected.tables["patients"]["smoker"])
    out = write_release(result, tmp_path / "out")
    warning = (out / "WARNING-SENSITIVE-CHOICES.txt").read_text()
    assert "patients sets protect_sensitive: false: its sensitive columns (bmi, smoker)" in warning
    published = load_schema(out / "schema.yaml")
    assert published["patients"].anonymize.protect_sensitive is False
    assert published["patients"].sensitive == ("bmi", "smoker")  # the audit role is kept


def test_protect_sensitive_is_refused_where_it_means_nothing(small_demo):
    schema, _ = small_demo
    with pytest.raises(SchemaError, match="protect_sensitive: false has no effect"):
        with_methods(schema, doctors={"anonymize": {"method": "avatar", "protect_sensitive": False}})
    with pytest.raises(SchemaError, match="protect_sensitive has no meaning for method 'keep'"):
        with_methods(schema, hospitals={"anonymize": {"method": "keep", "protect_sensitive": False}})


def test_release_refuses_to_overwrite_its_input(small_demo, small_release, tmp_path):
    schema, database = small_demo
    result = small_release
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(StorageError, match="overwrite or sit inside the input"):
        write_release(result, data, inputs=[data])
    with pytest.raises(StorageError):
        write_release(result, data / "inside", inputs=[data])


def test_a_run_anatomizing_one_table_and_avatarizing_the_others(small_demo, tmp_path):
    schema, database = small_demo
    changed = with_methods(
        schema,
        patients={"quasi_identifiers": ["sex", "smoker"], "sensitive": ["bmi"],
                  "anonymize": {"method": "anatomize", "sensitive": "blood_type", "l": 2}},
    )
    result = anonymize(changed, database, random_state=2, progress=False)
    patients = result.tables["patients"]
    assert "blood_type" not in patients.columns and "group_id" in patients.columns
    assert patients["patient_id"].isin(database["patients"]["patient_id"]).all()  # the seed keeps ids
    counts = result.tables["patients_sensitive"]
    assert list(counts.columns) == ["group_id", "blood_type", "count"]
    assert counts["count"].sum() == len(patients) == len(database["patients"])
    for link in all_links(changed):  # children link to existing keys
        fk = result.tables[link.child][link.column].dropna()
        assert fk.isin(result.tables[link.parent][changed[link.parent].primary_key]).all()
    out = write_release(result, tmp_path / "out")
    back = read_database(out, changed)
    assert set(back) == set(changed.tables) | {"patients_sensitive"}
    report = audit_database(changed, back, k=5, l=2)
    patients_view = next(v for v in report.views if v.name == "STANDALONE(patients)")
    assert patients_view.l_diversity["blood_type"].satisfies


def test_a_run_bucketizing_one_table(small_demo):
    schema, database = small_demo
    changed = with_methods(schema, doctors={"anonymize": {"method": "bucketize", "sensitive": ["age"], "k": 3}})
    result = anonymize(changed, database, random_state=2, progress=False)
    doctors = result.tables["doctors"]
    assert "bucket_id" in doctors.columns
    assert doctors.groupby("bucket_id").size().min() >= 3
    original = database["doctors"].set_index("doctor_id")
    released = doctors.set_index("doctor_id")
    assert released["specialty"].equals(original.loc[released.index, "specialty"])  # quasi-identifiers kept
    assert sorted(released["age"]) == sorted(original["age"])  # the same ages, permuted in buckets
    assert result.tables["visits"]["doctor_id"].isin(doctors["doctor_id"]).all()


def test_anatomization_that_cannot_be_done_names_the_table(small_demo):
    from relanon.common.errors import DataError

    schema, database = small_demo
    changed = with_methods(schema, patients={"sensitive": ["bmi"],
                                             "anonymize": {"method": "anatomize", "sensitive": "smoker", "l": 2}})
    with pytest.raises(DataError, match=r"patients.smoker: value False.*anonymize: \{allow_suppression: true\}"):
        anonymize(changed, database, random_state=0, progress=False)


# --------------------------------------------------------------------------- the release gate trusts only what relanon wrote


def audit_cli(schema, data, tmp_path, capsys, *extra):
    from relanon.cli import main
    from relanon.schema.model import dump_schema

    schema_path = tmp_path / "audited.yaml"
    dump_schema(schema, schema_path)
    code = main(["audit", str(schema_path), "--data", str(data), *extra])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("fmt, name", [("csv", "out"), ("parquet", "out"), ("sqlite", "out.sqlite")])
def test_an_untouched_release_is_audited_as_synthetic(small_demo, small_release, tmp_path, capsys, fmt, name):
    schema, database = small_demo
    result = small_release
    out = write_release(result, tmp_path / name, format=fmt)
    check = check_release(out, schema)
    assert check.unverified == {}
    assert sorted(check.synthetic("avatar")) == sorted(t.name for t in schema)
    code, printed = audit_cli(schema, out, tmp_path, capsys)
    assert code == 0 and "Result: PASSED" in printed
    assert "WARNING" not in printed and "does not describe" not in printed


def test_a_release_json_copied_beside_the_original_data_is_not_believed(small_demo, small_release, tmp_path, capsys):
    schema, database = small_demo
    result = small_release
    release = write_release(result, tmp_path / "release")
    code, _ = audit_cli(schema, write_database(database, tmp_path / "plain", schema), tmp_path, capsys)
    assert code == 1  # the original data fails the audit...
    original = write_database(database, tmp_path / "original", schema)
    shutil.copy(release / "release.json", original / "release.json")
    code, printed = audit_cli(schema, original, tmp_path, capsys)
    assert code == 1  # ...and still fails with the release's notes beside it: they do not describe its files
    assert "WARNING (patients): release.json does not describe this file: it was changed or replaced after " \
           "relanon wrote it" in printed
    assert "audited as real records" in printed and "Result: FAILED" in printed
    assert "patients" in check_release(original, schema).unverified


@pytest.mark.parametrize("fmt, name", [("csv", "out"), ("sqlite", "out.sqlite")])
def test_a_released_table_changed_afterwards_is_audited_as_real_records(small_demo, small_release, tmp_path, capsys, fmt, name):
    schema, database = small_demo
    result = small_release
    out = write_release(result, tmp_path / name, format=fmt)
    if fmt == "csv":  # two rows of patients.csv swapped: the same data for the audit, not the same file
        header, first, second, *rest = (out / "patients.csv").read_text(encoding="utf-8").splitlines(keepends=True)
        (out / "patients.csv").write_text("".join([header, second, first, *rest]), encoding="utf-8")
    else:
        with sqlite3.connect(out) as connection:
            connection.execute("UPDATE patients SET sex = CASE sex WHEN 'F' THEN 'M' ELSE 'F' END "
                               "WHERE rowid = (SELECT min(rowid) FROM patients)")
    unverified = check_release(out, schema).unverified
    assert list(unverified) == ["patients"]
    assert "it was changed or replaced after relanon wrote it" in unverified["patients"]
    code, printed = audit_cli(schema, out, tmp_path, capsys)
    assert code == 1
    assert f"WARNING (patients): release.json does not describe this {'file' if fmt == 'csv' else 'table'}" in printed
    assert "STANDALONE(patients)" in printed and "Result: FAILED" in printed


def test_a_release_json_without_fingerprints_vouches_for_nothing(small_demo, small_release, tmp_path, capsys):
    schema, database = small_demo
    result = small_release
    out = write_release(result, tmp_path / "out")
    notes = json.loads((out / "release.json").read_text(encoding="utf-8"))
    del notes["written"]  # as an older relanon wrote it
    (out / "release.json").write_text(json.dumps(notes), encoding="utf-8")
    assert set(check_release(out, schema).unverified) == {t.name for t in schema}
    code, printed = audit_cli(schema, out, tmp_path, capsys)
    assert code == 1
    assert "release.json holds no fingerprint of the tables" in printed and "audited as real records" in printed


def test_release_notes_are_the_same_bytes_wherever_they_are_written(small_demo, small_release, tmp_path):
    schema, database = small_demo
    result = small_release
    first = write_release(result, tmp_path / "a" / "out")
    second = write_release(result, tmp_path / "b" / "elsewhere")
    assert (first / "release.json").read_bytes() == (second / "release.json").read_bytes()
    written = json.loads((first / "release.json").read_text(encoding="utf-8"))["written"]
    assert written["patients"]["file"] == "patients.csv"
    assert written["patients"]["rows"] == len(result.tables["patients"])
    assert str(tmp_path) not in (first / "release.json").read_text(encoding="utf-8")
    sqlite_notes = []
    for folder in ("a", "b"):
        path = write_release(result, tmp_path / folder / "out.sqlite")
        with sqlite3.connect(path) as connection:
            sqlite_notes.append(connection.execute("SELECT content FROM relanon_files WHERE name = 'release.json'")
                                .fetchone()[0])
    assert sqlite_notes[0] == sqlite_notes[1]
    assert json.loads(sqlite_notes[0])["written"]["patients"]["rows"] == len(result.tables["patients"])
