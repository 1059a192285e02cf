"""What is published: the anonymized tables, their schema, and notes on how they were made.

A release folder holds the tables, ``schema.yaml`` (so that ``relanon audit`` and ``relanon
validate`` read it back), ``release.json`` (methods per table and link, relanon version, and a
fingerprint of each table as written, added by the store: :mod:`relanon.stores.fingerprints`) and, when
the run made a choice that weakens privacy (``original_order`` links), a loud
``WARNING-SENSITIVE-CHOICES.txt``. In a SQLite file the notes are rows of a ``relanon_files`` table.

The run's seed is never written: with the seed and the table sizes, the shuffles of the run could
be replayed, so the seed is a secret like the original data.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from relanon.common.options import CsvFormulas, Method, check_option
from relanon.common.version import __version__
from relanon.schema.model import Schema, dump_schema
from relanon.schema.shapes import companion_name
from relanon.stores.formulas import neutralized
from relanon.stores.io import RELEASE_FILES, output_format, write_database

SCHEMA_FILE, NOTES_FILE, WARNING_FILE = RELEASE_FILES


def release_schema(result) -> Schema:
    """The schema of the released database, without the run's seed."""
    schema = result.schema
    return Schema(tables=dict(schema.tables), name=schema.name, seed=None)


def release_notes(result) -> dict:
    """How the release was made, as plain data (no seed, no original value, no timestamp)."""
    tables = {}
    for name, release in result.releases.items():
        entry = {"method": release.method, "rows": len(release.frame)}
        if release.k is not None:
            entry["k"] = release.k
        if release.column_rules:
            entry["column_rules"] = [str(rule) for rule in release.column_rules]
        if getattr(release, "generalized", ()):
            entry["generalized"] = list(release.generalized)
        tables[name] = entry
    return {
        "relanon": __version__,
        "tables": tables,
        "links": [
            {"child": r.child, "column": r.column, "parent": r.parent, "method": r.method,
             "rows": r.n_children, "linked": r.n_linked}
            for r in result.links
        ],
        "sensitive_choices": list(result.sensitive_choices),
    }


def release_files(result) -> dict[str, str]:
    """The notes written with the tables: schema, release notes, and the warning if any."""
    files = {
        SCHEMA_FILE: dump_schema(release_schema(result)),
        NOTES_FILE: json.dumps(release_notes(result), indent=2) + "\n",
    }
    if result.sensitive_choices:
        files[WARNING_FILE] = (
            "WARNING: this release was made with options that weaken privacy.\n\n"
            + "".join(f"- {message}\n" for message in result.sensitive_choices)
            + "\nReview the privacy metrics of the report before publishing it.\n"
        )
    return files


def write_release(result, location, *, format=None, inputs=(), overwrite: bool = False,
                  csv_formulas=CsvFormulas.NEUTRALIZE) -> Path:
    """Write the anonymized database and its notes to ``location``, atomically.

    Parameters
    ----------
    result : AnonymizationResult
        What :func:`relanon.anonymize` returned.
    location : str or Path
        A folder (CSV, Parquet) or a SQLite file.
    format : {"csv", "parquet", "sqlite"}, optional
        Default: detected from ``location``.
    inputs : iterable of paths
        Where the original data came from; writing over it is refused.
    overwrite : bool, default False
        Replace what exists at ``location`` even when it is not a release relanon wrote (a
        folder is replaced whole; in a SQLite file only the release's tables are replaced).
    csv_formulas : {"neutralize", "keep"}, default "neutralize"
        In a CSV release, text cells that a spreadsheet would run as a formula (beginning with ``=``,
        ``+``, ``-``, ``@``, a tab or a carriage return, numbers aside) are prefixed with a single quote
        (:mod:`relanon.stores.formulas`), and ``release.json`` says how many per column under
        ``csv_formulas``; ``"keep"`` writes them raw (and says so).
    """
    schema = release_schema(result)
    # a companion table (anatomization) is stored under its table's source name + "_sensitive"
    sources = {companion_name(t): f"{t.source_name}_sensitive" for t in schema if t.anonymize.method == Method.ANATOMIZE}
    tables = {sources.get(name, name): frame for name, frame in result.tables.items()}
    files = release_files(result)
    policy = check_option(csv_formulas, CsvFormulas, "csv_formulas")
    if output_format(location, format) == "csv":
        tables, changed = neutralized(tables, policy)
        notes = json.loads(files[NOTES_FILE])
        notes["csv_formulas"] = {"policy": str(policy), "cells": changed}
        files[NOTES_FILE] = json.dumps(notes, indent=2) + "\n"
        if changed:
            how = ("written raw, as asked (--csv-formulas keep): a spreadsheet opening the release runs them"
                   if policy == CsvFormulas.KEEP else "written with a ' before them (--csv-formulas keep writes them raw)")
            warnings.warn(f"{sum(changed.values()):,} text cells that a spreadsheet would run as formulas (beginning "
                          f"with =, +, -, @, a tab or a carriage return), in {', '.join(changed)}: {how}",
                          UserWarning, stacklevel=2)
    return write_database(tables, location, schema, format=format, inputs=inputs, files=files, overwrite=overwrite)
