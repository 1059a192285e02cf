"""A catalogue of bad inputs: schemas, data, command lines and output locations.

Every case runs the command line in-process on a fresh copy of a small database and asserts:
the exit code (1: the data or release fails a check; 2: usage, input or output error), words of
the message, no traceback, the input files unchanged (hashes), and nothing left behind (the
workspace holds exactly what it held before: no output, no temporary). Cases about output
locations also assert that the anonymization never started.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from workspace import SCHEMA, edit_csv, make_visits, make_workspace, people_frame, snapshot

from relanon.cli import main
from relanon.multitable import pipeline


def schema_with(ws, old, new):
    text = (ws / "schema.yaml").read_text()
    assert old in text
    (ws / "schema.yaml").write_text(text.replace(old, new))


BOMB = "relanon: 1\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9 if p else ['x'] * 9)}]\n"
    for p, c in zip(["", "a", "b", "c", "d", "e", "f", "g", "h"], "abcdefghi", strict=True)
) + "tables: *i\n"


def corrupt_sqlite(ws):
    path = ws / "data.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE people (person_id INTEGER, age INTEGER)")
    connection.executemany("INSERT INTO people VALUES (?, ?)", [(i, i) for i in range(2000)])
    connection.commit()
    connection.close()
    raw = bytearray(path.read_bytes())
    raw[100:4096] = b"\xff" * (4096 - 100)  # header intact, the schema page destroyed
    path.write_bytes(bytes(raw))


def put(files: dict) -> Callable[[Path], None]:
    """A setup writing ``files`` (relative path -> text) into the workspace."""

    def setup(ws):
        for name, text in files.items():
            (ws / name).parent.mkdir(parents=True, exist_ok=True)
            (ws / name).write_text(text)

    return setup


def two_people(ws):
    edit_csv(ws, "people", lambda f: f.iloc[:2])
    edit_csv(ws, "visits", lambda f: f.assign(person_id=["1", "2"] * 15))


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Path], list[str]]
    code: int
    words: tuple[str, ...]
    setup: Callable[[Path], object] | None = None
    before_work: bool = False  # refused before any anonymization starts


def anonymize(*extra, schema="schema.yaml", data="data", out="out"):
    def argv(ws):
        return ["anonymize", str(ws / schema), "--data", str(ws / data), "--out", str(ws / out), "-q", *extra]
    return argv


def validate(schema="schema.yaml", data="data"):
    return lambda ws: ["validate", str(ws / schema), "--data", str(ws / data)]


def evaluate(*extra):
    return lambda ws: ["evaluate", str(ws / "schema.yaml"), "--original", str(ws / "data"), "--anonymized",
                       str(ws / "data"), "-q", *[e.format(ws=ws) for e in extra]]


def audit(*extra):
    return lambda ws: ["audit", str(ws / "schema.yaml"), "--data", str(ws / "data"),
                       *[e.format(ws=ws) for e in extra]]


CASES = [
    # ---- the schema: validate says it fails (1); other commands cannot run (2)
    Case("schema-unknown-type", validate(), 1, ("people.age", "did you mean 'integer'"),
         lambda ws: schema_with(ws, "age: integer", "age: integr")),
    Case("schema-yaml-syntax", validate(), 1, ("cannot be parsed",),
         lambda ws: schema_with(ws, "tables:", "tables: [")),
    Case("schema-alias-bomb", validate(), 1, ("aliases", "expand to"), lambda ws: (ws / "schema.yaml").write_text(BOMB)),
    Case("schema-recursive-alias", validate(), 1, ("refers to the value that contains it",),
         lambda ws: (ws / "schema.yaml").write_text("relanon: 1\ntables: &t {people: *t}\n")),
    Case("schema-nan-weight", validate(), 1, ("people.age", "weight must be a finite number", "nan"),
         lambda ws: schema_with(ws, "age: integer", "age: {type: integer, weight: .nan}")),
    Case("schema-infinite-weight", validate(), 1, ("people.age", "weight must be a finite number", "inf"),
         lambda ws: schema_with(ws, "age: integer", "age: {type: integer, weight: .inf}")),
    Case("schema-negative-weight", validate(), 1, ("people.age", "weight"),
         lambda ws: schema_with(ws, "age: integer", "age: {type: integer, weight: -1}")),
    Case("schema-cycle", validate(), 1, ("cycle", "people", "visits"),
         lambda ws: schema_with(ws, "    individual: true\n",
                                "    individual: true\n    foreign_keys: [{column: city, references: visits}]\n")),
    Case("schema-unknown-parent", validate(), 1, ("unknown table 'persons'",),
         lambda ws: schema_with(ws, "references: people", "references: persons")),
    Case("schema-composite-key", validate(), 1, ("composite primary keys",),
         lambda ws: schema_with(ws, "primary_key: visit_id", "primary_key: [visit_id, person_id]")),
    Case("schema-not-utf8", validate(), 1, ("not UTF-8",),
         lambda ws: (ws / "schema.yaml").write_bytes(SCHEMA.replace("small", "sm\xe9ll").encode("latin-1"))),
    Case("schema-not-a-mapping", validate(), 1, ("must be a mapping",),
         lambda ws: (ws / "schema.yaml").write_text("- people\n- visits\n")),
    Case("schema-empty-file", validate(), 1, ("must be a mapping",), lambda ws: (ws / "schema.yaml").write_text("")),
    Case("schema-duplicate-column", validate(), 1, ("column 'age' declared twice",),
         lambda ws: schema_with(ws, "columns: {age: integer,", "columns: {age: integer, age: continuous,")),
    Case("schema-format-version", validate(), 1, ("format 1",), lambda ws: schema_with(ws, "relanon: 1", "relanon: 2")),
    Case("schema-negative-seed", validate(), 1, ("seed",), lambda ws: schema_with(ws, "name: small", "name: small\nseed: -5")),
    Case("schema-k-below-2", validate(), 1, ("anonymize.k must be an integer of at least 2",),
         lambda ws: schema_with(ws, "quasi_identifiers: [age, sex]", "quasi_identifiers: [age, sex]\n    anonymize: {k: 1}")),
    Case("schema-undeclared-qi", validate(), 1, ("quasi_identifiers", "zip"),
         lambda ws: schema_with(ws, "[age, sex]", "[age, zip]")),
    Case("schema-invalid-under-anonymize", anonymize(), 2, ("did you mean 'integer'",),
         lambda ws: schema_with(ws, "age: integer", "age: integr"), before_work=True),
    Case("schema-missing-file", validate(schema="nope.yaml"), 2, ("no schema file", "nope.yaml")),
    Case("schema-is-a-folder", validate(schema="data"), 2, ("no schema file", "a folder is there")),
    # ---- the data: validate says it fails (1); unreadable data is an input error (2)
    Case("data-missing-table", validate(), 1, ("no file 'visits.csv'",), lambda ws: (ws / "data" / "visits.csv").unlink()),
    Case("data-undeclared-column", validate(), 1, ("people", "weight"),
         lambda ws: edit_csv(ws, "people", lambda f: f.assign(weight="70"))),
    Case("data-text-in-integer", validate(), 1, ("people.age", "'abc'"),
         lambda ws: edit_csv(ws, "people", lambda f: f.assign(age=["abc"] + list(f.age[1:])))),
    Case("data-duplicated-key", validate(), 1, ("people.person_id", "unique"),
         lambda ws: edit_csv(ws, "people", lambda f: f.assign(person_id=["1", "1"] + list(f.person_id[2:])))),
    Case("data-orphan-foreign-key", validate(), 1, ("visits.person_id", "999"),
         lambda ws: edit_csv(ws, "visits", lambda f: f.assign(person_id=["999"] + list(f.person_id[1:])))),
    Case("data-null-key", validate(), 1, ("people.person_id",),
         lambda ws: edit_csv(ws, "people", lambda f: f.assign(person_id=[""] + list(f.person_id[1:])))),
    Case("data-bad-date-under-anonymize", anonymize(), 2, ("visits.cost",),
         lambda ws: edit_csv(ws, "visits", lambda f: f.assign(cost=["twelve"] + list(f.cost[1:])))),
    Case("data-row-longer-than-header", validate(), 2, ("people.csv", "line 14", "saw 6"),
         lambda ws: (ws / "data" / "people.csv").write_text((ws / "data" / "people.csv").read_text() + "1,2,3,4,5,6\n")),
    Case("data-header-names-a-column-twice", validate(), 2, ("people.csv", "names column 'age' more than once"),
         lambda ws: (ws / "data" / "people.csv").write_text(
             (ws / "data" / "people.csv").read_text().replace("sex", "age", 1))),
    Case("data-empty-file", validate(), 2, ("people.csv", "the file is empty", "header line"),
         lambda ws: (ws / "data" / "people.csv").write_text("")),
    Case("data-not-utf8", validate(), 2, ("not UTF-8",),
         lambda ws: (ws / "data" / "people.csv").write_bytes(
             (ws / "data" / "people.csv").read_text().replace("Lyon", "Lyon\xe9").encode("latin-1"))),
    Case("data-empty-folder", validate(data="empty"), 2, ("holds no .csv",), lambda ws: (ws / "empty").mkdir()),
    Case("data-missing", validate(data="nowhere"), 2, ("nothing found", "nowhere")),
    Case("data-single-csv-file", validate(data="data/people.csv"), 2, ("single file",)),
    Case("data-csv-and-parquet", validate(), 2, ("both .csv and .parquet",),
         lambda ws: people_frame().to_parquet(ws / "data" / "extra.parquet")),
    Case("data-corrupt-sqlite", validate(data="data.sqlite"), 2, ("cannot read the SQLite file",), corrupt_sqlite),
    Case("data-sqlite-that-is-text", validate(data="fake.sqlite"), 2, ("not a SQLite database",),
         lambda ws: (ws / "fake.sqlite").write_text("hello")),
    Case("data-table-too-small", anonymize("--no-report"), 2, ("people", "needs at least 3"), two_people),
    # ---- what anonymize refuses, validate reports too (1), with the same words
    Case("data-table-too-small-validated", validate(), 1, ("people", "needs at least 3"), two_people),
    Case("data-infinite-number", anonymize("--no-report"), 2, ("visits.cost", "infinite"),
         lambda ws: edit_csv(ws, "visits", lambda f: f.assign(cost=["inf"] + list(f.cost[1:])))),
    Case("data-infinite-number-validated", validate(), 1, ("visits.cost", "infinite"),
         lambda ws: edit_csv(ws, "visits", lambda f: f.assign(cost=["inf"] + list(f.cost[1:])))),
    Case("data-anatomize-l-above-the-values-validated", validate(), 1, ("people.city", "at least l=5"),
         lambda ws: schema_with(ws, "    quasi_identifiers: [age, sex]\n", "    quasi_identifiers: [age, sex]\n"
                                "    anonymize: {method: anatomize, sensitive: city, l: 5}\n")),
    Case("data-bucketize-k-above-the-rows-validated", validate(), 1, ("people", "fewer than k=1000"),
         lambda ws: schema_with(ws, "    quasi_identifiers: [age, sex]\n", "    quasi_identifiers: [age, sex]\n"
                                "    anonymize: {method: bucketize, sensitive: [city], k: 1000}\n")),
    Case("data-bucketize-k-above-the-rows", anonymize("--no-report"), 2, ("table 'people' cannot be bucketized",),
         lambda ws: schema_with(ws, "    quasi_identifiers: [age, sex]\n", "    quasi_identifiers: [age, sex]\n"
                                "    anonymize: {method: bucketize, sensitive: [city], k: 1000}\n")),
    # ---- the command line (2)
    Case("cli-negative-seed", anonymize("--seed", "-5"), 2, ("--seed", "a whole number >= 0", "'-5'")),
    Case("cli-text-seed", anonymize("--seed", "abc"), 2, ("--seed", "'abc'")),
    Case("cli-sample-size-zero", anonymize("--sample-size", "0"), 2, ("--sample-size", ">= 1")),
    Case("cli-audit-k-zero", audit("--k", "0"), 2, ("--k", ">= 1")),
    Case("cli-max-risk-above-1", audit("--max-risk", "1.5"), 2, ("--max-risk", "(0, 1]")),
    Case("cli-demo-scale-nan", lambda ws: ["demo", "--out", str(ws / "demo"), "--scale", "nan"], 2, ("--scale", "finite")),
    Case("cli-unknown-command", lambda ws: ["anonymise"], 2, ("invalid choice", "anonymize")),
    Case("cli-missing-out", lambda ws: ["anonymize", str(ws / "schema.yaml"), "--data", str(ws / "data")], 2,
         ("required", "--out")),
    Case("cli-no-command", lambda ws: [], 2, ("usage",)),
    Case("cli-unknown-format", anonymize("--out-format", "xlsx"), 2, ("--out-format", "invalid choice")),
    # ---- output locations (2), all refused before any work
    Case("out-json-over-a-table", evaluate("--json", "{ws}/data/people.csv"), 2,
         ("refusing to write the metrics JSON", "people.csv", "--json"), before_work=True),
    Case("out-audit-json-over-the-schema", audit("--json", "{ws}/schema.yaml"), 2,
         ("refusing to write the audit JSON", "schema.yaml", "input"), before_work=True),
    Case("out-evaluate-json-over-the-schema", evaluate("--json", "{ws}/schema.yaml"), 2,
         ("refusing", "schema.yaml"), before_work=True),
    Case("out-release-over-the-data", anonymize(out="data"), 2, ("refusing to write the release", "input"),
         before_work=True),
    Case("out-release-around-the-data", anonymize(out="."), 2, ("refusing to write the release", "input"),
         before_work=True),
    Case("out-folder-of-another-project", anonymize(out="project"), 2,
         ("which relanon did not write", "'accounts.csv'", "--overwrite"),
         put({"project/accounts.csv": "id\n1\n"}),
         before_work=True),
    Case("out-release-folder-with-a-stranger", anonymize(out="project"), 2, ("'thesis.docx'", "--overwrite"),
         put({"project/release.json": '{"relanon": "0.1", "tables": {}}', "project/thesis.docx": "years"}),
         before_work=True),
    Case("out-existing-sqlite", anonymize("--out-format", "sqlite", out="their.sqlite"), 2,
         ("SQLite file already exists", "--overwrite", "other tables are kept"),
         lambda ws: sqlite3.connect(ws / "their.sqlite").execute("CREATE TABLE precious (x)").connection.commit(),
         before_work=True),
    Case("out-sqlite-over-a-text-file", anonymize("--out-format", "sqlite", "--overwrite", out="notes.db"), 2,
         ("is not a SQLite database",), lambda ws: (ws / "notes.db").write_text("my notes"), before_work=True),
    Case("out-release-over-a-file", anonymize(out="notes.txt"), 2, ("it is a file",),
         lambda ws: (ws / "notes.txt").write_text("mine"), before_work=True),
    Case("out-demo-over-a-project", lambda ws: ["demo", "--out", str(ws / "project"), "--data-only"], 2,
         ("refusing to write the demo", "'original'", "'schema.yaml'", "--overwrite"),
         put({"project/original/people.csv": "id\n1\n", "project/schema.yaml": "relanon: 1\nname: mine\n"})),
    Case("out-init-over-a-file", lambda ws: ["init", "--data", str(ws / "data"), "--out", str(ws / "existing.txt")], 2,
         ("refusing to write the proposed schema", "existing.txt", "--overwrite"),
         lambda ws: (ws / "existing.txt").write_text("my notes")),
    Case("out-in-proc", anonymize(out="/proc/relanon-x"), 2, ("nothing can be created", "/proc"), before_work=True),
    Case("out-below-a-file", anonymize(out="a_file/out"), 2, ("is a file, not a folder",),
         lambda ws: (ws / "a_file").write_text("x"), before_work=True),
    Case("out-report-folder-of-other-files", anonymize("--report", "{ws}/review"), 2,
         ("refusing to write the report", "'draft.md'", "--overwrite"),
         put({"review/draft.md": "x"}), before_work=True),
    Case("out-report-is-the-release", anonymize("--report", "{ws}/out"), 2, ("separate places",), before_work=True),
    Case("out-report-inside-the-data", anonymize("--report", "{ws}/data/review"), 2, ("refusing to write the report",
         "input"), before_work=True),
    Case("out-json-is-a-folder", audit("--json", "{ws}/reports"), 2, ("it is a folder",),
         lambda ws: (ws / "reports").mkdir(), before_work=True),
    Case("out-report-over-the-data", lambda ws: ["report", str(ws / "schema.yaml"), "--original", str(ws / "data"),
                                                 "--anonymized", str(ws / "data"), "--out", str(ws / "data")], 2,
         ("refusing to write the report", "input"), before_work=True),
    Case("out-foreign-json", audit("--json", "{ws}/results.json"), 2, ("relanon did not write", "--overwrite"),
         lambda ws: (ws / "results.json").write_text('{"mine": true}'), before_work=True),
]


def test_the_catalogue_is_large_enough():
    assert len(CASES) >= 45
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input(case, tmp_path, capsys, monkeypatch):
    if case.name == "out-in-proc" and not Path("/proc/self").exists():
        pytest.skip("needs /proc")
    ws = make_workspace(tmp_path / "ws")
    if case.setup is not None:
        case.setup(ws)
    argv = [a.format(ws=ws) for a in case.argv(ws)]
    started = []
    real_anonymize = pipeline.anonymize
    monkeypatch.setattr(pipeline, "anonymize", lambda *a, **k: started.append(1) or real_anonymize(*a, **k))
    monkeypatch.chdir(ws)
    before = snapshot(ws)
    clock = time.perf_counter()
    code = main(argv)
    elapsed = time.perf_counter() - clock
    out, err = capsys.readouterr()
    said = out + err
    assert code == case.code, said
    for word in case.words:
        assert word in said, f"{word!r} not in {said!r}"
    assert "Traceback" not in said and "failed unexpectedly" not in said
    assert snapshot(ws) == before  # inputs unchanged, nothing left behind
    if case.before_work:
        assert not started, "the anonymization started before the output was checked"
    assert elapsed < 30


def test_an_alias_bomb_is_refused_in_well_under_a_second(tmp_path, capsys):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    assert len(BOMB) < 500
    clock = time.perf_counter()
    assert main(["validate", str(path)]) == 1
    assert time.perf_counter() - clock < 0.5
    assert "aliases" in capsys.readouterr().err


def test_permissions_of_an_unreadable_input(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    ws = make_workspace(tmp_path / "ws")
    (ws / "schema.yaml").chmod(0)
    assert main(["validate", str(ws / "schema.yaml")]) == 2
    assert "permission denied" in capsys.readouterr().err


def test_a_negative_seed_through_python_is_a_parameter_error():
    from relanon.common.errors import ParameterError
    from relanon.schema.model import load_schema
    from relanon.schema.validation import check_database

    schema = load_schema(SCHEMA)
    database = check_database(schema, {"people": people_frame(), "visits": make_visits()})
    with pytest.raises(ParameterError, match="random_state must be a whole number >= 0"):
        pipeline.anonymize(schema, database, random_state=-5, progress=False)
