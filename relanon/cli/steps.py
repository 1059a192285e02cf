"""The steps every command shares: exit codes, checking inputs, reading, progress, the report."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from relanon.cli.exits import EXIT_FAILED, EXIT_OK
from relanon.common.errors import StorageError
from relanon.common.progress import Progress, format_duration
from relanon.datasets import hospital_schema
from relanon.metrics.failures import failures
from relanon.metrics.scenarios import METRICS_SEED, evaluate
from relanon.present.report import METRICS_FILE, REPORT_FILE, render_report, report_output, write_report
from relanon.present.verdict import nothing_measured, verdict_text
from relanon.stores.base import is_url, masked
from relanon.stores.io import read_database
from relanon.stores.outputs import release_folder_foreign_entries
from relanon.stores.sql import database_label, url_schema

DEMO_ENTRIES = ("schema.yaml", "original", "anonymized", "report")


def check_inputs(schema, *data) -> None:
    """The schema file must be a readable file, and each database location must exist."""
    path = Path(schema) if schema is not None else None
    if path is not None and not path.is_file():
        what = "a folder" if path.is_dir() else "nothing"
        raise StorageError(f"no schema file at {str(schema)!r} ({what} is there); give the path of a YAML or JSON schema")
    if path is not None and not os.access(path, os.R_OK):
        raise StorageError(f"cannot read the schema file {str(schema)!r} (permission denied)")
    for location in data:
        if location is not None and "://" not in str(location) and not Path(location).exists():
            raise StorageError(
                f"nothing found at {str(location)!r}: give a folder of CSV or Parquet files, a SQLite file, "
                "or a database URL (postgresql://user@host/db)"
            )


def tables_text(count: int) -> str:
    """``1 table``, ``2 tables``."""
    return f"{count} table{'s' if count != 1 else ''}"


def shown(location) -> str:
    """A location as printed: a database URL without its password."""
    return masked(location)


def database_name(location) -> str:
    return database_label(location) if is_url(location) else Path(location).stem


def default_report(out) -> Path:
    """``released/`` -> ``released-report/`` beside it; a database URL -> ``DATABASE-SCHEMA-report/`` here."""
    if is_url(out):
        name = f"{database_label(out)}-{url_schema(out) or 'release'}-report"
        return Path(re.sub(r"[^\w.-]+", "_", name))
    return beside(Path(out), "-report")


def beside(path: Path, suffix: str) -> Path:
    """``released/`` -> ``released-report/``, next to it (``.`` and ``..`` resolved first)."""
    if path.name in ("", ".", ".."):
        path = path.resolve()
    return path.parent / f"{path.name}{suffix}"


def report_folder_output(folder, flag: str, overwrite: bool):
    if folder is None:
        return None

    return report_output(folder, flag=flag, overwrite=overwrite)


def demo_foreign_entries(folder: Path) -> list[str]:
    """Entries of an existing demo folder that the demo did not write (all of it is recognized by name and content)."""
    tables = {f"{name}.csv" for name in hospital_schema().tables}
    foreign = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        name = entry.name
        if name == "schema.yaml":
            ours = entry.is_file() and entry.stat().st_size < 1_000_000 and bool(
                re.search(r"^name: hospital$", entry.read_text(encoding="utf-8", errors="replace"), re.M))
        elif name == "original":
            ours = entry.is_dir() and all(p.is_file() and p.name in tables for p in entry.iterdir())
        elif name == "anonymized":
            ours = entry.is_dir() and not release_folder_foreign_entries(entry, ".csv")
        elif name == "report":
            ours = entry.is_dir() and all(p.name in (REPORT_FILE, METRICS_FILE) for p in entry.iterdir())
        else:
            ours = False
        if not ours:
            foreign.append(name)
    return foreign


def evaluate_result(schema, database, result, sample_size, progress):
    """The metrics of a run, sampled with the fixed metrics seed (not the run's): ``relanon evaluate``
    of the same release then gives the same figures."""
    return evaluate(schema, database, result.tables, result, sample_size=sample_size, random_state=METRICS_SEED,
                    progress=progress)


def report_files(evaluation, assessment=None, progress=False) -> dict:
    return render_report(evaluation, assessment, progress=progress)


def progress_for(args):
    """The run's progress on standard error: a moving bar on a terminal, a line per step elsewhere, none with -q."""
    return Progress(quiet=args.quiet)


def read_step(progress, location, schema, format, what="the data"):
    with progress.step(f"read {what}", unit="tables") as step:
        database = read_database(location, schema, format=format, progress=step)
        step.detail = f"{sum(len(frame) for frame in database.values()):,} rows in {tables_text(len(database))}"
    return database


def verdict_line(evaluation, report) -> str:
    return verdict_text(evaluation, report)


def verdict_exit(evaluation, exit_zero: bool, written: str | None = None) -> int:
    """The exit code of a command that ends on a verdict: 1 when it names a failure, or when no measure could
    be computed (nothing judged is nothing passed; the release, if any, is written all the same, and a line on
    standard error says so), 0 when every measure holds or ``exit_zero``."""
    failed = len(failures(evaluation))
    if not failed and not nothing_measured(evaluation):
        return EXIT_OK
    what = (f"{failed} measure{'s miss their targets' if failed > 1 else ' misses its target'}" if failed
            else "no measure could be computed")
    kept = f"{written} is written, but " if written else ""
    if exit_zero:
        print(f"{kept}{what} (exit 0: --exit-zero)", file=sys.stderr)
        return EXIT_OK
    print(f"{kept}{what}: exit {EXIT_FAILED} (--exit-zero for 0 whatever the verdict)", file=sys.stderr)
    return EXIT_FAILED


def finish_run(progress) -> None:
    progress.say(f"done in {format_duration(progress.elapsed())}")


def write_report_folder(evaluation, folder: Path, inputs, overwrite: bool, files) -> Path:
    return write_report(evaluation, folder, inputs=inputs, overwrite=overwrite, files=files)


