"""Outputs: relanon replaces only what it wrote, release.json last, no stale temporaries, the user's
umask, SIGTERM like Ctrl-C, warnings once, and exit codes a release gate can use."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from workspace import make_workspace, snapshot

import relanon.stores.folder as folder_module
import relanon.stores.sqlite as sqlite_module
from relanon.cli import main
from relanon.common.atomic import remove_stale_temporaries


@pytest.fixture
def ws(tmp_path):
    return make_workspace(tmp_path / "ws")


def anonymize(ws, out="out", *extra):
    return main(["anonymize", str(ws / "schema.yaml"), "--data", str(ws / "data"), "--out", str(ws / out), "-q",
                 "--seed", "3", "--exit-zero", *extra])


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# --------------------------------------------------------------------------- what relanon replaces


def test_a_release_folder_relanon_wrote_is_replaced_on_the_next_run(ws, capsys):
    assert anonymize(ws, "out", "--no-report") == 0
    first = snapshot(ws / "out")
    (ws / "out" / "people.csv").write_text("stale\n")
    assert anonymize(ws, "out", "--no-report") == 0
    assert snapshot(ws / "out") == first  # same seed, same bytes, stale content gone


def test_overwrite_replaces_a_foreign_folder_whole(ws, capsys):
    (ws / "project").mkdir()
    (ws / "project" / "accounts.csv").write_text("id\n1\n")
    assert anonymize(ws, "project", "--no-report") == 2
    assert "--overwrite" in capsys.readouterr().err
    assert anonymize(ws, "project", "--no-report", "--overwrite") == 0
    assert sorted(p.name for p in (ws / "project").iterdir()) == ["people.csv", "release.json", "schema.yaml",
                                                                   "visits.csv"]


def test_sqlite_overwrite_replaces_only_the_release_tables_in_one_transaction(ws, capsys, monkeypatch):
    target = ws / "shared.sqlite"
    connection = sqlite3.connect(target)
    connection.execute("CREATE TABLE precious (x INTEGER)")
    connection.execute("INSERT INTO precious VALUES (42)")
    connection.execute("CREATE TABLE people (stale TEXT)")
    connection.commit()
    connection.close()
    args = ("--out-format", "sqlite", "--no-report")
    assert anonymize(ws, "shared.sqlite", *args) == 2
    assert "other tables are kept" in capsys.readouterr().err

    # a failure in the middle leaves the file as it was (one transaction)
    before = target.read_bytes()
    create = sqlite_module._create_sqlite_table

    def fail_on_visits(connection, name, frame, *keys):
        if name == "visits":
            raise OSError(28, "No space left on device")
        return create(connection, name, frame, *keys)

    monkeypatch.setattr(sqlite_module, "_create_sqlite_table", fail_on_visits)
    assert anonymize(ws, "shared.sqlite", *args, "--overwrite") == 2
    assert "No space left on device" in capsys.readouterr().err
    assert target.read_bytes() == before
    assert [p.name for p in ws.iterdir() if p.name.startswith(".")] == []

    monkeypatch.setattr(sqlite_module, "_create_sqlite_table", create)
    assert anonymize(ws, "shared.sqlite", *args, "--overwrite") == 0
    connection = sqlite3.connect(target)
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"precious", "people", "visits", "relanon_files"}
    assert connection.execute("SELECT x FROM precious").fetchall() == [(42,)]
    assert connection.execute("SELECT count(*) FROM people").fetchone() == (12,)
    connection.close()


def test_a_json_relanon_wrote_is_replaced_and_a_schema_proposal_never_silently(ws, capsys):
    audit = ["audit", str(ws / "schema.yaml"), "--data", str(ws / "data"), "--k", "1", "--max-risk", "1", "--json", str(ws / "a.json")]
    assert main(audit) == 0
    assert main(audit) == 0  # its own audit JSON is replaced
    assert json.loads((ws / "a.json").read_text())["passed"] is True
    init = ["init", "--data", str(ws / "data"), "--out", str(ws / "proposal.yaml")]
    assert main(init) == 0
    (ws / "proposal.yaml").write_text((ws / "proposal.yaml").read_text() + "# my edits\n")
    capsys.readouterr()
    assert main(init) == 2  # the user may have edited it
    assert "--overwrite" in capsys.readouterr().err
    assert (ws / "proposal.yaml").read_text().endswith("# my edits\n")
    assert main([*init, "--overwrite"]) == 0


def test_demo_reruns_in_its_folder_and_overwrite_keeps_other_entries(tmp_path, capsys):
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "--scale", "0.02", "--data-only"]
    assert main(args) == 0
    assert main(args) == 0  # its own folder
    (out / "my_notes.txt").write_text("mine")
    assert main(args) == 2
    assert "'my_notes.txt'" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["my_notes.txt", "original", "schema.yaml"]


# --------------------------------------------------------------------------- interrupted writes


def test_release_json_is_written_last(ws, monkeypatch):
    seen = []
    to_csv = pd.DataFrame.to_csv

    def watching(frame, target, *args, **kwargs):
        seen.append(sorted(p.name for p in Path(target).parent.iterdir()))
        return to_csv(frame, target, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", watching)
    assert anonymize(ws, "out", "--no-report") == 0
    assert seen and all("release.json" not in names for names in seen)
    assert (ws / "out" / "release.json").exists()


def test_stale_temporaries_of_the_same_output_are_removed_and_live_ones_kept(ws):
    stale = ws / f".out.relanon-{dead_pid()}-abc123.tmp"
    stale.mkdir()
    (stale / "release.json").write_text("{}")
    stale_file = ws / f".out-report.relanon-{dead_pid()}-x.old"
    stale_file.write_text("old")
    live = ws / f".out.relanon-{os.getppid()}-def456.tmp"  # our parent process is alive
    live.mkdir()
    other = ws / f".elsewhere.relanon-{dead_pid()}-x.tmp"  # another output's: not ours to remove
    other.mkdir()
    assert anonymize(ws, "out", "--report", str(ws / "out-report")) == 0
    assert not stale.exists() and not stale_file.exists()
    assert live.exists() and other.exists()
    assert remove_stale_temporaries(ws / "elsewhere") == [other]


def test_sigterm_during_the_write_cleans_up_like_ctrl_c(ws, monkeypatch, capsys):
    as_text = folder_module._as_csv_text

    def terminated(frame):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises in this (main) thread
        return as_text(frame)

    monkeypatch.setattr(folder_module, "_as_csv_text", terminated)
    before = snapshot(ws)
    assert anonymize(ws, "out", "--no-report") == 143
    assert "terminated" in capsys.readouterr().err
    assert snapshot(ws) == before  # no release, no temporary
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def test_a_sigterm_to_the_process_exits_143_without_a_traceback(ws):
    script = ("import os, signal, sys\nfrom relanon import cli\nfrom relanon.cli import commands\n"
              "commands.check_inputs = lambda *a: os.kill(os.getpid(), signal.SIGTERM)\n"
              "sys.exit(cli.main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", script, "validate", str(ws / "schema.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 143
    assert "Traceback" not in done.stderr and "terminated" in done.stderr


# --------------------------------------------------------------------------- permissions


def test_outputs_follow_the_umask(ws, capsys):
    mask = 0o027  # not the usual 0o022: group may read, others nothing
    previous = os.umask(mask)
    try:
        assert anonymize(ws, "out") == 0
        assert anonymize(ws, "db.sqlite", "--out-format", "sqlite", "--no-report") == 0
        assert main(["audit", str(ws / "schema.yaml"), "--data", str(ws / "data"), "--json", str(ws / "a.json")]) in (0, 1)
    finally:
        os.umask(previous)
    for folder in (ws / "out", ws / "out-report"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~mask
        for file in folder.iterdir():
            assert stat.S_IMODE(file.stat().st_mode) == 0o666 & ~mask, file
    for file in (ws / "db.sqlite", ws / "a.json"):
        assert stat.S_IMODE(file.stat().st_mode) == 0o666 & ~mask, file


# --------------------------------------------------------------------------- messages and exit codes


def test_a_warning_is_printed_once_without_source_location(ws, capsys):
    schema = (ws / "schema.yaml").read_text().replace("references: people}", "references: people, link: original_order}")
    (ws / "schema.yaml").write_text(schema)
    assert anonymize(ws, "out", "--no-report") == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "original_order" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: ")
    assert ".py:" not in err and "Warning:" not in err


def test_exit_codes_tell_a_failed_check_from_a_usage_error(ws, capsys):
    schema, data = str(ws / "schema.yaml"), str(ws / "data")
    assert main(["validate", schema, "--data", data]) == 0
    assert main(["audit", schema, "--data", data, "--k", "1", "--max-risk", "1"]) == 0
    assert main(["audit", schema, "--data", data, "--k", "5"]) == 1  # 12 people cannot all be 5-anonymous
    assert main(["audit", schema, "--data", str(ws / "nowhere")]) == 2
    assert main(["audit", str(ws / "nowhere.yaml"), "--data", data]) == 2
    (ws / "data" / "visits.csv").unlink()
    assert main(["validate", schema, "--data", data]) == 1
    assert main(["audit", schema, "--data", data]) == 2  # cannot audit: the data does not fit
