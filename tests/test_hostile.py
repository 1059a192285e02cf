"""Hostile inputs, second round: each case an adversary tried, reproduced, and what relanon must do.

Every command-line case asserts its exit code, words of its message, and that relanon never calls
its own failure a bug. The PostgreSQL cases run against a throwaway server (tests/postgres_server.py)
and compare hashes of the input tables before and after; the Dask cases kill a real client.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from relanon.cli import main
from relanon.common.atomic import WORK_PREFIX, remove_leftovers, work_prefix
from relanon.metrics.attacks.assessment import Assessment
from relanon.stores.base import MAX_CELL_CHARS, MAX_COLUMNS
from relanon.stores.formulas import formula_cells

BUG = "this is a bug"
ROOT = Path(__file__).resolve().parents[1]

PEOPLE_VISITS = """relanon: 1
tables:
  people:
    primary_key: id
    individual: true
    columns:
      age: integer
      city: categorical
  visits:
    primary_key: vid
    foreign_keys:
      - column: pid
        references: people
    columns:
      when: datetime
      cost: continuous
"""


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert BUG not in (out + err).lower()
    return code, out, err


def write_people_visits(folder: Path, n_people=60, n_visits=150, *, dates=None, cities=None) -> Path:
    """A small database of people and their visits as CSV files (``dates``: visit row -> date text)."""
    rng = np.random.default_rng(0)
    cities = cities or ["Lyon", "Paris", "Nantes"]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"id": range(n_people), "age": rng.integers(20, 80, n_people),
                  "city": [cities[i % len(cities)] for i in range(n_people)]}).to_csv(folder / "data" / "people.csv",
                                                                                      index=False)
    when = [f"20{10 + i % 10}-0{1 + i % 9}-1{i % 9}" for i in range(n_visits)]
    for row, text in (dates or {}).items():
        when[row] = text
    pd.DataFrame({"vid": range(n_visits), "pid": rng.integers(0, n_people, n_visits), "when": when,
                  "cost": rng.random(n_visits).round(3)}).to_csv(folder / "data" / "visits.csv", index=False)
    (folder / "schema.yaml").write_text(PEOPLE_VISITS)
    return folder


# --------------------------------------------------------------------------- gates that do not open by accident


def _assessment(attacks) -> Assessment:
    empty = pd.DataFrame()
    return Assessment(attacks, [], empty, empty, empty, None, {}, 0.5)


def test_an_assessment_that_attacked_nothing_does_not_pass():
    nothing = _assessment([])
    assert nothing.passed is False and nothing.state == "inconclusive"


def test_an_assessment_with_an_attack_that_could_not_run_does_not_pass():
    from relanon.metrics.attacks.confidence import success_rate
    from relanon.metrics.attacks.results import attack_result

    none = success_rate(0, 0)
    done = attack_result("linkability", "people", success_rate(2, 400), success_rate(2, 400), success_rate(1, 400))
    not_run = attack_result("inference", "people.city", none, none, none)
    assert done.passed is True and not_run.passed is None
    assert _assessment([done]).passed
    mixed = _assessment([done, not_run])
    assert not mixed.passed and mixed.not_run == [not_run] and mixed.state == "inconclusive"


@pytest.mark.slow
def test_assess_exits_1_when_no_attack_could_run(tmp_path, capsys):
    folder = write_people_visits(tmp_path, n_people=4, n_visits=8)
    code, out, _ = run(capsys, "assess", folder / "schema.yaml", "--data", folder / "data", "--out", tmp_path / "a",
                       "-q", "--rounds", "1")
    assert code == 1 and "NOT RUN" in out and "PASSED" not in out
    data = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert data["assessment"]["passed"] is False


# --------------------------------------------------------------------------- linear in the input


def _wide_csv(path: Path, columns: int, rows: int = 50) -> None:
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["id", *(f"c{i}" for i in range(1, columns))])
        for r in range(rows):
            writer.writerow([r, *([r % 7] * (columns - 1))])


def test_a_table_of_100001_columns_is_refused_naming_the_limit(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    _wide_csv(tmp_path / "data" / "wide.csv", 100_001)
    (tmp_path / "schema.yaml").write_text("relanon: 1\ntables:\n  wide:\n    primary_key: id\n    columns:\n"
                                          "      c1: integer\n")
    for argv in (["validate", tmp_path / "schema.yaml", "--data", tmp_path / "data"],
                 ["init", "--data", tmp_path / "data"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "100,001 columns" in err and f"{MAX_COLUMNS:,}" in err and "wide.csv" in err


def test_a_header_field_beyond_the_csv_default_is_read(tmp_path, capsys):
    long_name = "n" * 200_000  # the csv module stops at 131,072 characters by default
    (tmp_path / "data").mkdir()
    pd.DataFrame({"id": range(20), long_name: range(20)}).to_csv(tmp_path / "data" / "t.csv", index=False)
    code, out, _ = run(capsys, "init", "--data", tmp_path / "data")
    assert code == 0 and long_name in out


def test_a_header_field_beyond_the_cell_limit_is_refused_naming_it(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("id," + "n" * (MAX_CELL_CHARS + 1) + "\n1,2\n")
    code, _, err = run(capsys, "init", "--data", tmp_path / "data")
    assert code == 2 and f"{MAX_CELL_CHARS:,}" in err and "header" in err


def test_a_very_long_cell_is_refused_naming_the_limit(tmp_path, capsys):
    folder = write_people_visits(tmp_path)
    people = pd.read_csv(folder / "data" / "people.csv")
    people["city"] = people["city"].astype(object)
    people.loc[3, "city"] = "x" * (2 * MAX_CELL_CHARS)
    people.to_csv(folder / "data" / "people.csv", index=False)
    code, _, err = run(capsys, "validate", folder / "schema.yaml", "--data", folder / "data")
    assert code == 2 and "'city'" in err and "data row 4" in err and f"{MAX_CELL_CHARS:,}" in err


@pytest.mark.parametrize("date", ["1500-03-04", "2500-03-04", "9999-12-31"])
def test_dates_beyond_pandas_range_are_found_by_validate_and_refused_by_anonymize(tmp_path, capsys, date):
    folder = write_people_visits(tmp_path, dates={7: date, 9: "2020-01-01"})
    code, _, err = run(capsys, "validate", folder / "schema.yaml", "--data", folder / "data")
    assert code == 1 and "visits.when" in err and "vid 7" in err and date in err and "vid 9" not in err
    code, _, err = run(capsys, "anonymize", folder / "schema.yaml", "--data", folder / "data", "--out", tmp_path / "o")
    assert code == 2 and "visits.when" in err and "vid 7" in err
    assert not (tmp_path / "o").exists()


def test_the_views_and_link_bins_compute_with_dates_of_any_year():
    from relanon.common.link_binning import binned_numbers
    from relanon.multitable.views import _group_summary

    dates = pd.Series(pd.to_datetime(["1500-03-04", "9999-12-31", "2000-01-01"]).as_unit("us"))
    summary = _group_summary(dates, np.array([0, 0, 1]), 2, "min")
    assert summary.tolist() == [pd.Timestamp("1500-03-04"), pd.Timestamp("2000-01-01")]
    assert binned_numbers(dates, "datetime")[0] == pytest.approx(-14826412800.0)


# --------------------------------------------------------------------------- names, formulas, full disks


@pytest.mark.parametrize("where", ["table", "source"])
def test_a_table_named_like_a_path_is_refused_by_validate_as_by_anonymize(tmp_path, capsys, where):
    folder = write_people_visits(tmp_path)
    text = PEOPLE_VISITS.replace("  people:\n", '  "../../pwn":\n    source: people\n' if where == "table"
                                 else '  people:\n    source: "../../pwn"\n')
    (folder / "schema.yaml").write_text(text.replace("references: people", 'references: "../../pwn"')
                                        if where == "table" else text)
    for command in (["validate", folder / "schema.yaml", "--data", folder / "data"],
                    ["anonymize", folder / "schema.yaml", "--data", folder / "data", "--out", tmp_path / "o"]):
        code, _, err = run(capsys, *command)
        assert code in (1, 2) and "'../../pwn' cannot name a table" in err
    assert not (tmp_path / "o").exists() and not (tmp_path.parent / "pwn.csv").exists()


FORMULAS = ['=HYPERLINK("http://x","c")', "+cmd|' /C calc'!A0", "@SUM(A1)", "-2+3", "\tx"]


def test_formula_cells_are_those_a_spreadsheet_would_run():
    cells = pd.Series([*FORMULAS, "\rx", "-12", "+3.5", "-1e-3", "Lyon", "a=b", None, ""])
    assert formula_cells(cells).tolist() == [True] * 6 + [False] * 7


def test_formula_cells_of_a_csv_release_are_neutralized_and_said_so(tmp_path, capsys):
    folder = write_people_visits(tmp_path, n_people=120, cities=["Lyon", "-12", *FORMULAS])
    (folder / "schema.yaml").write_text(PEOPLE_VISITS.replace("      city: categorical\n",
                                                              "      city: {type: categorical, min_count: 1}\n"))
    code, _, err = run(capsys, "anonymize", folder / "schema.yaml", "--data", folder / "data", "--out", tmp_path / "o",
                       "--no-report", "-q")
    assert code == 0 and "spreadsheet would run as formulas" in err
    released = pd.read_csv(tmp_path / "o" / "people.csv", dtype=str, keep_default_na=False)
    cities = released["city"]
    assert not formula_cells(cities).any()
    assert cities.isin(["'" + f for f in FORMULAS]).any() and "-12" in set(cities)  # a number is data
    notes = json.loads((tmp_path / "o" / "release.json").read_text())
    assert notes["csv_formulas"]["policy"] == "neutralize"
    assert notes["csv_formulas"]["cells"]["people.city"] == int(cities.str.startswith("'").sum()) > 0
    code, _, err = run(capsys, "anonymize", folder / "schema.yaml", "--data", folder / "data", "--out", tmp_path / "raw",
                       "--no-report", "-q", "--csv-formulas", "keep")
    raw = pd.read_csv(tmp_path / "raw" / "people.csv", dtype=str, keep_default_na=False)["city"]
    assert code == 0 and formula_cells(raw).any() and "written raw" in err
    assert json.loads((tmp_path / "raw" / "release.json").read_text())["csv_formulas"]["policy"] == "keep"


def _file_size_limit(size: int):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write beyond the limit fails (EFBIG), as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


@pytest.mark.slow
def test_a_report_that_cannot_be_written_names_its_path(tmp_path):
    folder = write_people_visits(tmp_path)
    result = subprocess.run([sys.executable, "-m", "relanon", "anonymize", folder / "schema.yaml", "--data",
                             folder / "data", "--out", tmp_path / "o", "-q"], preexec_fn=_file_size_limit(60_000),
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2 and BUG not in result.stderr.lower()
    assert f"cannot write the report {str(tmp_path / 'o-report' / 'report.html')!r}" in result.stderr
    assert (tmp_path / "o" / "release.json").exists()  # the release was written before, and said so
    assert f"anonymized database written to {tmp_path / 'o'}" in result.stdout


# --------------------------------------------------------------------------- private work never outlives a run


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_the_work_folders_of_dead_runs_are_removed_and_live_ones_kept(tmp_path):
    mine = tmp_path / f"{work_prefix()}live1234"
    dead = tmp_path / work_prefix().replace(f"-{os.getpid()}-", f"-{_dead_pid()}-")
    dead = dead.with_name(dead.name + "dead1234")
    elsewhere = tmp_path / f"{WORK_PREFIX}otherhost-{_dead_pid()}-abcd1234"
    temporary = tmp_path / f".release.relanon-{_dead_pid()}-abcd.tmp"
    for folder in (mine, dead, elsewhere, temporary):
        (folder / "avatars").mkdir(parents=True)
        (folder / "avatars" / "part.00000.parquet").write_bytes(b"private")
    removed = remove_leftovers(tmp_path)
    assert sorted(removed) == sorted([dead, temporary])
    assert mine.exists() and elsewhere.exists() and not dead.exists()


def test_the_clean_command_removes_what_killed_runs_left(tmp_path, capsys):
    dead = tmp_path / f"{WORK_PREFIX}{work_prefix().split('-')[2]}-{_dead_pid()}-abcd1234"
    (dead / "orig").mkdir(parents=True)
    code, out, _ = run(capsys, "clean", tmp_path)
    assert code == 0 and not dead.exists() and "removed 1" in out
    code, out, _ = run(capsys, "clean", tmp_path)
    assert code == 0 and "nothing to remove" in out


def _dask_parts(folder: Path, people: int) -> Path:
    from relanon.stores.partitioned import write_part

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"id": np.arange(people), "age": rng.integers(18, 90, people),
                          "city": rng.choice(["Lyon", "Paris", "Nantes", "Lille"], people)})
    for i, rows in enumerate(np.array_split(np.arange(people), 4)):
        write_part(frame.iloc[rows].reset_index(drop=True), folder / "parts" / "people", i)
    visits = pd.DataFrame({"vid": np.arange(3 * people), "pid": rng.integers(0, people, 3 * people),
                           "when": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, 3 * people), "D"),
                           "cost": rng.random(3 * people)})
    for i, rows in enumerate(np.array_split(np.arange(len(visits)), 4)):
        write_part(visits.iloc[rows].reset_index(drop=True), folder / "parts" / "visits", i)
    (folder / "schema.yaml").write_text(PEOPLE_VISITS)
    return folder


def _private_columns(folder: Path) -> set[str]:
    import pyarrow.parquet as pq

    found = set()
    for path in folder.rglob("*.parquet"):
        found |= {name for name in pq.read_schema(path).names if name.startswith(("_source", "__source::", "_row"))}
    return found


@pytest.mark.slow
def test_a_killed_dask_client_leaves_nothing_private_after_the_next_run(tmp_path):
    pytest.importorskip("distributed")
    folder = _dask_parts(tmp_path, 4000)
    command = [sys.executable, "-m", "relanon", "anonymize", folder / "schema.yaml", "--data", folder / "parts",
               "--out", tmp_path / "out" / "release", "--engine", "dask", "--workers", "1", "--batch-size", "1500"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    client = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and client.poll() is None:
            if any((work / "avatars").is_dir() for work in (tmp_path / "out").glob(f"{WORK_PREFIX}*")):
                break
            time.sleep(0.2)
        assert client.poll() is None, "the run ended before it could be killed"
    finally:
        os.killpg(client.pid, signal.SIGKILL)  # the client and its workers, at once: kill -9
        client.wait()
    left = list((tmp_path / "out").glob(f"{WORK_PREFIX}*"))
    assert left and _private_columns(left[0])  # the killed run left its private work behind
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr
    assert not list((tmp_path / "out").glob(f"{WORK_PREFIX}*"))
    assert not list((tmp_path / "out").glob(".*"))
    assert not _private_columns(tmp_path / "out")


def test_the_dask_engine_refuses_an_output_in_the_words_of_the_command_line(tmp_path, capsys):
    pytest.importorskip("distributed")
    folder = _dask_parts(tmp_path, 40)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep me")
    code, _, err = run(capsys, "anonymize", folder / "schema.yaml", "--data", folder / "parts", "--out",
                       tmp_path / "taken", "--engine", "dask", "--workers", "1")
    assert code == 2 and "--overwrite" in err and "overwrite=True" not in err and "(--out)" in err
    assert (tmp_path / "taken" / "mine.txt").read_text() == "keep me"


@pytest.mark.slow
def test_a_dask_worker_out_of_memory_is_one_line_with_the_batch_size_to_try(tmp_path):
    distributed = pytest.importorskip("distributed")
    import dask

    from relanon.common.errors import ResourceError
    from relanon.distributed import anonymize_dataset
    from relanon.schema.model import load_schema

    class Hungry(distributed.WorkerPlugin):  # defined here: sent to the worker by value
        """Holds 1 GiB of memory as soon as a task starts to run: the nanny kills the worker."""

        def setup(self, worker):
            self.held = []

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing":
                self.held.append(b"x" * (1 << 30))

    folder = _dask_parts(tmp_path, 4000)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                     memory_limit="600MiB") as cluster, distributed.Client(cluster) as client:
        client.register_plugin(Hungry(), name="hungry")
        with pytest.raises(ResourceError, match=r"--batch-size 750, half the 1,500 used") as caught:
            anonymize_dataset(load_schema(folder / "schema.yaml"), folder / "parts", tmp_path / "out", client=client,
                              batch_size=1500, progress=False)
    assert "\n" not in str(caught.value)


# --------------------------------------------------------------------------- a PostgreSQL input schema


@pytest.fixture(scope="module")
def pg():
    from postgres_server import ServerUnavailable, temporary_server

    pytest.importorskip("sqlalchemy")
    pytest.importorskip("psycopg")
    try:
        with temporary_server() as running:
            yield running
    except ServerUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL tests: {exc}")
        pytest.skip(str(exc))


def _sql(server, database, statement):
    import psycopg

    with psycopg.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                         dbname=database, autocommit=True) as connection:
        cursor = connection.execute(statement)
        return cursor.fetchall() if cursor.description else None


def _hashes(server, database, schema="mid") -> dict:
    tables = [row[0] for row in _sql(server, database, f"SELECT tablename FROM pg_tables WHERE schemaname = '{schema}' "
                                                        "ORDER BY 1")]
    return {t: _sql(server, database, f"SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) "
                                      f'FROM "{schema}"."{t}" x')[0] for t in tables}


@pytest.fixture
def mid(pg, tmp_path):
    """A database whose input tables live in schema ``mid`` (not the default ``public``)."""
    from relanon.schema.model import load_schema
    from relanon.stores.io import read_database, write_database

    folder = write_people_visits(tmp_path)
    database = pg.new_database(f"hostile_{os.getpid()}_{int(time.monotonic() * 1000) % 10**8}")
    url = pg.url(database)
    schema = load_schema(folder / "schema.yaml")
    write_database(read_database(folder / "data", schema), f"{url}?schema=mid", schema)
    return folder, database, url


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("spelling", ["options", "PGOPTIONS"])
def test_the_input_schema_named_by_search_path_is_never_an_output(pg, mid, capsys, monkeypatch, spelling, overwrite):
    folder, database, url = mid
    before = _hashes(pg, database)
    assert before["people"][0] == 60 and before["visits"][0] == 150
    if spelling == "options":
        data = f"{url}?options=-csearch_path%3Dmid"
    else:
        monkeypatch.setenv("PGOPTIONS", "-csearch_path=mid")
        data = url
    argv = ["anonymize", folder / "schema.yaml", "--data", data, "--out", f"{url}?schema=mid", "--no-report"]
    code, _, err = run(capsys, *argv, *(["--overwrite"] if overwrite else []))
    assert code == 2 and "the database schema the data was read from" in err and "--overwrite" in err
    assert pg.password not in err
    assert _hashes(pg, database) == before


def test_the_same_database_under_another_name_is_never_an_output(pg, mid, capsys):
    folder, database, url = mid
    before = _hashes(pg, database)
    other_host = url.replace("127.0.0.1", "localhost").replace("postgresql+psycopg", "postgresql")
    code, _, err = run(capsys, "anonymize", folder / "schema.yaml", "--data", f"{url}?schema=mid", "--out",
                       f"{other_host}?options=-csearch_path%3Dmid", "--no-report", "--overwrite")
    assert code == 2 and "the database schema the data was read from" in err
    assert _hashes(pg, database) == before


@pytest.mark.slow
def test_an_output_elsewhere_in_the_same_database_is_written_and_the_input_kept(pg, mid, capsys):
    folder, database, url = mid
    before = _hashes(pg, database)
    code, _, err = run(capsys, "anonymize", folder / "schema.yaml", "--data", f"{url}?options=-csearch_path%3Dmid",
                       "--out", f"{url}?schema=release", "--no-report", "-q")
    assert code == 0, err
    assert _hashes(pg, database) == before
    released = {t: n for t, (n, _) in _hashes(pg, database, "release").items()}
    assert released == {"people": 60, "visits": 150, "relanon_files": 2}  # the notes: schema.yaml, release.json


# --------------------------------------------------------------------------- "did nothing": the exit codes


def test_what_each_command_does_with_nothing_to_do(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "init", "--data", tmp_path / "empty")
    assert code == 2 and "holds no .csv or .parquet file" in err
    folder = write_people_visits(tmp_path / "zero", n_people=0, n_visits=0)
    code, out, _ = run(capsys, "anonymize", folder / "schema.yaml", "--data", folder / "data", "--out", tmp_path / "o",
                       "-q")
    assert code == 1 and "no measure could be computed" in out and "meets its target" not in out
    assert (tmp_path / "o" / "release.json").exists()  # written all the same, and said so
    code, _, err = run(capsys, "anonymize", folder / "schema.yaml", "--data", folder / "data", "--out", tmp_path / "o",
                       "-q", "--exit-zero")
    assert code == 0 and "no measure could be computed (exit 0: --exit-zero)" in err
    code, out, _ = run(capsys, "clean", tmp_path)
    assert code == 0 and "nothing to remove" in out
    (tmp_path / "none.yaml").write_text("relanon: 1\ntables:\n  people:\n    primary_key: id\n    individual: true\n"
                                        "    columns: {age: integer, city: categorical}\n")
    code, out, _ = run(capsys, "audit", tmp_path / "none.yaml", "--data", folder / "data")
    assert code == 1 and "NOTHING AUDITED" in out
