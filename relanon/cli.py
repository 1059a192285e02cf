"""The ``relanon`` command line: parse, call the library, print, exit code.

Exit codes, the same for every command, so that a release job can gate on them:

- 0: the command did what it was asked and everything it checked holds;
- 1: the data or the release fails a check: ``validate`` found problems in the schema or the
  data, ``audit`` found a threshold missed;
- 2: the command could not run as asked: a wrong option, a missing or unreadable input, a schema
  or data that does not fit (outside ``validate``), an output location refused. Nothing is written.

Interrupted runs (Ctrl-C, ``SIGTERM``) remove their temporaries and exit 130 / 143. Every output is
checked (against every input, against each other, against what exists there) before any work.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path

from relanon.common.console import Terminated, terminate_like_interrupt, warnings_printed_once
from relanon.common.errors import ProblemsError, RelanonError, StorageError
from relanon.common.version import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
DEMO_ENTRIES = ("schema.yaml", "original", "anonymized", "report")

EPILOG = {
    "validate": "example:\n  relanon validate schema.yaml --data data/",
    "demo": "example:\n  relanon demo --out demo_out",
    "init": "example:\n  relanon init --data data/ --out schema.yaml",
    "anonymize": "example:\n  relanon anonymize schema.yaml --data data/ --out released/ --seed 7",
    "evaluate": "example:\n  relanon evaluate schema.yaml --original data/ --anonymized released/ --report review/",
    "report": "example:\n  relanon report schema.yaml --original data/ --anonymized released/ --out review/",
    "audit": "example:\n  relanon audit schema.yaml --data released/ --k 5 --max-risk 0.2 --json audit.json",
    "assess": "example:\n  relanon assess schema.yaml --data data/ --out assessment/ --holdout 0.2 --seed 7\n\n"
              "an attack 'fails its check' (exit 1) when the upper bound of its risk's 95 % interval reaches 5 %",
}
QUIET_HELP = "no progress: print only results, where they were written, warnings and errors"
EXIT_CODES = "exit codes: 0 all holds; 1 the data or release fails a check; 2 usage, input or output error"
DATABASE = ("a folder of CSV or Parquet files, a SQLite file, or a database URL "
            "(postgresql://user@host/db?schema=name; the password from PGPASSWORD or ~/.pgpass)")


def main(argv=None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # argparse: --help (0) or a wrong option (2, its message printed)
        return exit.code if isinstance(exit.code, int) else EXIT_USAGE
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    with terminate_like_interrupt(), warnings_printed_once():
        try:
            return args.run(args)
        except RelanonError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
        except Terminated:
            print("terminated: temporaries removed", file=sys.stderr)
            return EXIT_TERMINATED
        except KeyboardInterrupt:
            print("interrupted: temporaries removed", file=sys.stderr)
            return EXIT_INTERRUPTED
        except BrokenPipeError:  # the output was piped into a reader that stopped early (| head)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            return EXIT_OK
        except OSError as error:  # a file system refusal relanon did not foresee
            where = f" ({error.filename})" if getattr(error, "filename", None) else ""
            print(f"error: {error.strerror or error}{where}", file=sys.stderr)
            return EXIT_USAGE
        except MemoryError:
            print("error: out of memory; try a smaller --sample-size, or a machine with more memory", file=sys.stderr)
            return EXIT_USAGE
        except Exception as error:  # a bug: say so in one line, the traceback only when asked for
            if os.environ.get("RELANON_DEBUG"):
                raise
            print(f"error: relanon failed unexpectedly ({type(error).__name__}: {error}). This is a bug: "
                  "please report it with the command line; RELANON_DEBUG=1 shows the traceback", file=sys.stderr)
            return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relanon",
        description="Anonymize multi-table relational databases (avatar method) and audit their release.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"relanon {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(name, help, run):
        sub = commands.add_parser(
            name, help=help, description=help, epilog=f"{EPILOG[name]}\n\n{EXIT_CODES}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.set_defaults(run=run, command=name)
        return sub

    validate = command("validate", "Check a schema file, and a database against it.", _validate)
    validate.add_argument("schema", help="the schema file (YAML or JSON)")
    validate.add_argument("--data", help=f"the database: {DATABASE}")
    validate.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="storage format (default: detected)")

    demo = command("demo", "Build the demo hospital database, anonymize it and report on it.", _demo)
    demo.add_argument("--out", required=True, help="folder for the demo: original/, anonymized/, report/")
    demo.add_argument("--scale", type=_positive_number, default=1.0, help="size factor (1 = 10,000 patients)")
    demo.add_argument("--seed", type=_seed, default=None, help="seed of the run (default: the demo schema's seed)")
    demo.add_argument("--data-only", action="store_true", help="only write the demo database and its schema")
    demo.add_argument("--no-report", action="store_true", help="skip the evaluation and the report")
    demo.add_argument("--quiet", "-q", action="store_true", help=QUIET_HELP)
    _add_overwrite(demo, "the demo's schema.yaml, original/, anonymized/ and report/ in OUT")

    init = command("init", "Propose a schema file from a database, for you to review.", _init)
    init.add_argument("--data", required=True, help=f"the database: {DATABASE}; keys declared there are used")
    init.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="storage format (default: detected)")
    init.add_argument("--out", help="write the proposal to this file (default: print it)")
    init.add_argument("--name", help="name of the database")
    _add_overwrite(init, "an existing file at --out")

    anonymize = command("anonymize", "Anonymize a database described by a schema file.", _anonymize)
    anonymize.add_argument("schema", help="the schema file (YAML or JSON)")
    anonymize.add_argument("--data", required=True, help=f"the original database: {DATABASE}")
    anonymize.add_argument("--out", required=True,
                           help="where to write the anonymized database: a folder, a SQLite file, or a database URL "
                                "with a schema of its own (postgresql://user@host/db?schema=release)")
    anonymize.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="input format (default: detected)")
    anonymize.add_argument("--out-format", choices=["csv", "parquet", "sqlite"], help="output format (default: as the input)")
    anonymize.add_argument("--seed", type=_seed, default=None, help="seed of the run (default: the schema's seed)")
    anonymize.add_argument("--report", help="folder for report.html and metrics.json (default: OUT-report beside OUT; "
                                            "for a database URL, DATABASE-SCHEMA-report in the current folder)")
    anonymize.add_argument("--no-report", action="store_true", help="do not evaluate nor write the report")
    anonymize.add_argument("--sample-size", type=_positive_int, default=None,
                           help="rows sampled per table for the distance metrics")
    anonymize.add_argument("--quiet", "-q", action="store_true", help=QUIET_HELP)
    _add_overwrite(anonymize, "what exists at --out and --report (in a SQLite file or a database schema, only the "
                              "release's tables)")

    evaluate = command(
        "evaluate",
        "Measure privacy and utility of an anonymized database against its original.",
        _evaluate,
    )
    _add_comparison_arguments(evaluate)
    evaluate.add_argument("--report", help="also write report.html and metrics.json to this folder")
    evaluate.add_argument("--json", help="write the detailed metrics as JSON to this file")
    _add_sampling_arguments(evaluate)
    _add_overwrite(evaluate, "what exists at --report and --json")

    report = command(
        "report",
        "Write report.html and metrics.json comparing an anonymized database with its original.",
        _report,
    )
    _add_comparison_arguments(report)
    report.add_argument("--out", required=True, help="folder for report.html and metrics.json")
    _add_sampling_arguments(report)
    _add_overwrite(report, "what exists at --out")

    audit = command("audit", "Audit k-anonymity, re-identification risk and l-diversity of a release.", _audit)
    audit.add_argument("schema", help="the schema file (declares quasi_identifiers and sensitive columns)")
    audit.add_argument("--data", required=True, help=f"the database to audit (original or anonymized): {DATABASE}")
    audit.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="storage format (default: detected)")
    audit.add_argument("--k", type=_positive_int, default=5, help="minimum equivalence-class size (default 5)")
    audit.add_argument("--l", type=_positive_int, default=None,
                       help="required l-diversity of the sensitive columns (default: reported, not required)")
    audit.add_argument("--max-risk", type=_share, default=0.2,
                       help="largest acceptable re-identification risk, in (0, 1] (default 0.2)")
    audit.add_argument("--json", help="write the audit as JSON to this file")
    _add_overwrite(audit, "an existing file at --json")

    _add_assess_command(command)
    return parser


def _add_comparison_arguments(sub) -> None:
    """The two databases compared by ``evaluate`` and ``report``, and their schema."""
    sub.add_argument("schema", help="the schema file shared by both databases")
    sub.add_argument("--original", required=True, help=f"the original database: {DATABASE}")
    sub.add_argument("--anonymized", required=True, help="the anonymized database (the same kinds of location)")
    sub.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="storage format (default: detected)")


def _add_sampling_arguments(sub) -> None:
    """How ``evaluate`` and ``report`` sample rows for the distance metrics, and their progress."""
    sub.add_argument("--sample-size", type=_positive_int, default=None,
                     help="rows sampled per table for the distance metrics")
    sub.add_argument("--seed", type=_seed, default=0,
                     help="seed of the metric sampling (default 0, as relanon anonymize and demo use)")
    sub.add_argument("--quiet", "-q", action="store_true", help=QUIET_HELP)


def _add_overwrite(sub, what: str) -> None:
    sub.add_argument("--overwrite", action="store_true",
                     help=f"replace {what}, even when relanon did not write it")


# --------------------------------------------------------------------------- option types


def _number(text: str, convert, fits, expected: str):
    """An option value converted by ``convert`` and accepted by ``fits``, or argparse's error (exit 2)."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not fits(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def _seed(text: str) -> int:
    return _number(text, int, lambda v: v >= 0, "a seed: a whole number >= 0")


def _positive_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 1, "a whole number >= 1")


def _positive_number(text: str) -> float:
    return _number(text, float, lambda v: math.isfinite(v) and v > 0, "a finite number > 0")


def _share(text: str) -> float:
    return _number(text, float, lambda v: 0 < v <= 1, "a number in (0, 1]")


# --------------------------------------------------------------------------- commands


def _validate(args) -> int:
    from relanon.schema.graph import connected_groups
    from relanon.schema.model import load_schema
    from relanon.stores.io import read_database

    _check_inputs(args.schema, args.data)
    try:
        schema = load_schema(Path(args.schema))
        print(f"schema {args.schema}: valid ({len(schema)} tables)")
        database = read_database(args.data, schema, format=args.format) if args.data else None
    except ProblemsError as error:  # what validate checks: the schema and the data fail it
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(_graph_summary(schema, database))
    groups = connected_groups(schema)
    if len(groups) > 1:
        print("tables not linked to each other (each group is anonymized on its own): "
              + "; ".join(", ".join(g) for g in groups))
    if database is not None:
        print(f"data {_shown(args.data)}: valid against the schema")
    return EXIT_OK


def _graph_summary(schema, database) -> str:
    from relanon.schema.graph import parent_links, topological_order

    lines = []
    for name in topological_order(schema):
        table = schema[name]
        size = f"{len(database[name]):>10,} rows  " if database is not None else ""
        role = "individual" if table.individual else "          "
        links = ", ".join(f"{link.column} -> {link.parent} ({link.method})" for link in parent_links(schema, name))
        lines.append(f"  {name:<20} {size}{role}  {table.anonymize.method:<9} {links}")
    return "\n".join(lines)


def _init(args) -> int:
    from relanon.common.atomic import write_text_atomically
    from relanon.schema.proposal import propose_schema
    from relanon.stores.io import declared_keys, read_tables
    from relanon.stores.outputs import FileOutput, check_outputs

    _check_inputs(None, args.data)
    if args.out:
        check_outputs([FileOutput(args.out, what="the proposed schema", flag="--out", overwrite=args.overwrite)],
                      [args.data])
    tables = read_tables(args.data, format=args.format)
    proposal = propose_schema(tables, name=args.name or _database_name(args.data),
                              declared=declared_keys(args.data, format=args.format))
    text = proposal.to_yaml()
    if args.out:
        write_text_atomically(Path(args.out), text)
        print(f"proposed schema written to {args.out}: review every line marked REVIEW before using it")
    else:
        print(text, end="")
    return EXIT_OK


def _anonymize(args) -> int:
    from relanon.multitable.pipeline import anonymize
    from relanon.multitable.release import write_release
    from relanon.schema.model import load_schema
    from relanon.stores.io import detect_format, output_format
    from relanon.stores.outputs import check_outputs, output_for_database

    _check_inputs(args.schema, args.data)
    inputs = [args.data, args.schema]
    out_format = output_format(args.out, args.out_format, like=args.format or detect_format(args.data))
    release = output_for_database(args.out, out_format, what="the release", flag="--out", overwrite=args.overwrite)
    report_dir = None
    if not args.no_report:
        report_dir = Path(args.report) if args.report else _default_report(args.out)
    check_outputs([release, _report_output(report_dir, "--report", args.overwrite)], inputs)

    progress = _progress(args)
    schema = load_schema(Path(args.schema))
    database = _read(progress, args.data, schema, args.format)
    result = anonymize(schema, database, random_state=args.seed, progress=progress)
    files = evaluation = None
    if report_dir is not None:  # evaluated and rendered before anything is written
        evaluation = _evaluate_result(schema, database, result, args.sample_size, progress)
        files = _render_report(evaluation, progress=progress)
    with progress.step("write the release"):
        written = write_release(result, args.out, format=out_format, inputs=inputs, overwrite=args.overwrite)
    print(f"anonymized database written to {_shown(written)}")
    if evaluation is not None:
        with progress.step("write the report"):
            report = _write_report(evaluation, report_dir, inputs + [args.out], args.overwrite, files)
        print(_verdict(evaluation, report))
    _finish(progress)
    return EXIT_OK


def _demo(args) -> int:
    from relanon import datasets
    from relanon.multitable.pipeline import anonymize
    from relanon.multitable.release import write_release
    from relanon.schema.model import dump_schema
    from relanon.stores.io import write_database
    from relanon.stores.outputs import FolderOutput, check_outputs, remove_entries

    out = Path(args.out)
    check_outputs([FolderOutput(out, own_entries=_demo_foreign_entries, what="the demo", flag="--out",
                                own="a demo folder it made (schema.yaml, original/, anonymized/, report/)",
                                whole="replace the demo's entries in it (other entries are kept)",
                                overwrite=args.overwrite)])
    progress = _progress(args)
    with progress.step("build the demo database") as step:
        schema, database = datasets.hospital(scale=args.scale, seed=0)
        step.detail = f"{sum(len(frame) for frame in database.values()):,} rows in {len(database)} tables"
    result = evaluation = files = None
    if not args.data_only:
        result = anonymize(schema, database, random_state=args.seed, progress=progress)
        if not args.no_report:
            evaluation = _evaluate_result(schema, database, result, None, progress)
            files = _render_report(evaluation, progress=progress)
    with progress.step("write the demo database"):
        if out.is_dir():  # checked above: only the demo's own entries, or --overwrite for them
            remove_entries(out, [name for name in DEMO_ENTRIES if name != "schema.yaml"])
        dump_schema(schema, out / "schema.yaml")
        original_dir = write_database(database, out / "original", schema, format="csv", overwrite=True)
    print(f"demo database written to {original_dir} (schema: {out / 'schema.yaml'})")
    if result is not None:
        with progress.step("write the release"):
            written = write_release(result, out / "anonymized", format="csv", inputs=[original_dir], overwrite=True)
        print(f"anonymized database written to {written}")
    if evaluation is not None:
        with progress.step("write the report"):
            report = _write_report(evaluation, out / "report", [original_dir, written], True, files)
        print(_verdict(evaluation, report))
    _finish(progress)
    return EXIT_OK


def _evaluate(args) -> int:
    from relanon.common.atomic import write_text_atomically
    from relanon.stores.outputs import FileOutput, check_outputs, json_with_keys

    _check_inputs(args.schema, args.original, args.anonymized)
    json_output = None
    if args.json:
        json_output = FileOutput(args.json, what="the metrics JSON", flag="--json", overwrite=args.overwrite,
                                 recognize=json_with_keys("privacy_matrix", "signal_matrix", "metrics"),
                                 own="a metrics JSON file it wrote")
    report_dir = Path(args.report) if args.report else None
    check_outputs([json_output, _report_output(report_dir, "--report", args.overwrite)],
                  [args.schema, args.original, args.anonymized])
    progress = _progress(args)
    evaluation = _evaluate_pair(args, progress)
    files = _render_report(evaluation, progress=progress) if report_dir is not None else None
    report = None
    if args.json:
        write_text_atomically(Path(args.json), evaluation.to_json())
        print(f"metrics written to {args.json}")
    if report_dir is not None:
        with progress.step("write the report"):
            report = _write_report(evaluation, report_dir, [args.original, args.anonymized], True, files)
    for note in evaluation.notes:
        print(f"note: {note}")
    print(_verdict(evaluation, report))
    _finish(progress)
    return EXIT_OK


def _report(args) -> int:
    from relanon.stores.outputs import check_outputs

    _check_inputs(args.schema, args.original, args.anonymized)
    check_outputs([_report_output(Path(args.out), "--out", args.overwrite)],
                  [args.schema, args.original, args.anonymized])
    progress = _progress(args)
    evaluation = _evaluate_pair(args, progress)
    files = _render_report(evaluation, progress=progress)
    with progress.step("write the report"):
        report = _write_report(evaluation, Path(args.out), [args.original, args.anonymized], True, files)
    print(_verdict(evaluation, report))
    _finish(progress)
    return EXIT_OK


def _evaluate_pair(args, progress):
    """Evaluate two databases read from disk (no private pairing: the run is not known)."""
    from relanon.metrics.scenarios import evaluate
    from relanon.schema.model import load_schema

    schema = load_schema(Path(args.schema))
    original = _read(progress, args.original, schema, args.format, "the original")
    anonymized = _read(progress, args.anonymized, schema, args.format, "the anonymized database")
    return evaluate(schema, original, anonymized, sample_size=args.sample_size, random_state=args.seed,
                    progress=progress)


def _audit(args) -> int:
    import json

    from relanon.audit.database import audit_database
    from relanon.common.atomic import write_text_atomically
    from relanon.present.audit import audit_dict, audit_text
    from relanon.schema.model import load_schema
    from relanon.stores.io import read_database
    from relanon.stores.notes import release_methods
    from relanon.stores.outputs import FileOutput, check_outputs, json_with_keys

    _check_inputs(args.schema, args.data)
    if args.json:
        check_outputs([FileOutput(args.json, what="the audit JSON", flag="--json", overwrite=args.overwrite,
                                  recognize=json_with_keys("thresholds", "passed", "views"),
                                  own="an audit JSON file it wrote")],
                      [args.schema, args.data])
    schema = load_schema(Path(args.schema))
    database = read_database(args.data, schema, format=args.format)
    # a release's notes say which tables hold synthetic records (avatar method): audited for information
    synthetic = [name for name, method in release_methods(args.data).items() if method == "avatar" and name in schema.tables]
    report = audit_database(schema, database, k=args.k, l=args.l, max_risk=args.max_risk, synthetic=synthetic)
    print(audit_text(report))
    if args.json:
        write_text_atomically(Path(args.json), json.dumps(audit_dict(report), indent=2, default=str) + "\n")
        print(f"audit written to {args.json}")
    return EXIT_OK if report.passed else EXIT_FAILED


# --------------------------------------------------------------------------- assess (privacy attacks)


def _add_assess_command(command) -> None:
    assess = command(
        "assess",
        "Hold people out, anonymize the rest and attack the release (singling out, linkability, inference).",
        _assess,
    )
    assess.add_argument("schema", help="the schema file (YAML or JSON)")
    assess.add_argument("--data", required=True, help=f"the original database: {DATABASE}")
    assess.add_argument("--out", required=True, help="folder for report.html and metrics.json")
    assess.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="input format (default: detected)")
    assess.add_argument("--holdout", type=_holdout, default=0.2,
                        help="share of the people of each individual table held out as control (default 0.2)")
    assess.add_argument("--seed", type=_seed, default=None, help="seed of the run (default: the schema's seed)")
    assess.add_argument("--attacks", type=_positive_int, default=None,
                        help="people attacked per group by linkability and inference (default 5,000)")
    assess.add_argument("--predicates", type=_positive_int, default=None,
                        help="singling-out predicates per mode (default 2,000)")
    assess.add_argument("--sample-size", type=_positive_int, default=None,
                        help="rows sampled per table for the distance metrics")
    assess.add_argument("--quiet", "-q", action="store_true", help=QUIET_HELP)
    _add_overwrite(assess, "what exists at --out")


def _holdout(text: str) -> float:
    return _number(text, float, lambda v: 0 < v < 1, "a share in (0, 1), e.g. 0.2")


def _assess(args) -> int:
    from relanon.metrics.attacks.assessment import assess
    from relanon.present.attacks import attacks_text, risk_matrix_text, verdict_text
    from relanon.present.verdict import failure_lines
    from relanon.schema.model import load_schema
    from relanon.stores.outputs import check_outputs

    _check_inputs(args.schema, args.data)
    inputs = [args.schema, args.data]
    check_outputs([_report_output(Path(args.out), "--out", args.overwrite)], inputs)
    progress = _progress(args)
    schema = load_schema(Path(args.schema))
    database = _read(progress, args.data, schema, args.format)
    options = {name: value for name, value in (("n_attacks", args.attacks), ("n_predicates", args.predicates))
               if value is not None}
    assessment = assess(schema, database, holdout=args.holdout, random_state=args.seed, sample_size=args.sample_size,
                        progress=progress, **options)
    files = _render_report(assessment.evaluation, assessment, progress=progress)
    with progress.step("write the report"):
        report = _write_report(assessment.evaluation, Path(args.out), inputs, True, files)
    print(verdict_text(assessment))
    print(risk_matrix_text(assessment))
    print(assessment.evaluation.privacy_matrix_text())
    print("\n".join(failure_lines(assessment.evaluation, kinds=("privacy",))))
    if assessment.failures:
        print("attacks whose risk may reach 5 %:")
        print(attacks_text(assessment, only_failed=True))
    print(f"report: {report} (with metrics.json)")
    _finish(progress)
    return EXIT_OK if assessment.passed else EXIT_FAILED


# --------------------------------------------------------------------------- shared steps


def _check_inputs(schema, *data) -> None:
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


def _shown(location) -> str:
    """A location as printed: a database URL without its password."""
    from relanon.stores.base import masked

    return masked(location)


def _database_name(location) -> str:
    from relanon.stores.base import is_url
    from relanon.stores.sql import database_label

    return database_label(location) if is_url(location) else Path(location).stem


def _default_report(out) -> Path:
    """``released/`` -> ``released-report/`` beside it; a database URL -> ``DATABASE-SCHEMA-report/`` here."""
    from relanon.stores.base import is_url
    from relanon.stores.sql import database_label, url_schema

    if is_url(out):
        name = f"{database_label(out)}-{url_schema(out) or 'release'}-report"
        return Path(re.sub(r"[^\w.-]+", "_", name))
    return _beside(Path(out), "-report")


def _beside(path: Path, suffix: str) -> Path:
    """``released/`` -> ``released-report/``, next to it (``.`` and ``..`` resolved first)."""
    if path.name in ("", ".", ".."):
        path = path.resolve()
    return path.parent / f"{path.name}{suffix}"


def _report_output(folder, flag: str, overwrite: bool):
    if folder is None:
        return None
    from relanon.present.report import report_output

    return report_output(folder, flag=flag, overwrite=overwrite)


def _demo_foreign_entries(folder: Path) -> list[str]:
    """Entries of an existing demo folder that the demo did not write (all of it is recognized by name and content)."""
    from relanon.datasets import hospital_schema
    from relanon.present.report import METRICS_FILE, REPORT_FILE
    from relanon.stores.outputs import release_folder_foreign_entries

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


def _evaluate_result(schema, database, result, sample_size, progress):
    """The metrics of a run, sampled with the fixed metrics seed (not the run's): ``relanon evaluate``
    of the same release then gives the same figures."""
    from relanon.metrics.scenarios import METRICS_SEED, evaluate

    return evaluate(schema, database, result.tables, result, sample_size=sample_size, random_state=METRICS_SEED,
                    progress=progress)


def _render_report(evaluation, assessment=None, progress=False) -> dict:
    from relanon.present.report import render_report

    return render_report(evaluation, assessment, progress=progress)


def _progress(args):
    """The run's progress on standard error: a moving bar on a terminal, a line per step elsewhere, none with -q."""
    from relanon.common.progress import Progress

    return Progress(quiet=args.quiet)


def _read(progress, location, schema, format, what="the data"):
    from relanon.stores.io import read_database

    with progress.step(f"read {what}", unit="tables") as step:
        database = read_database(location, schema, format=format, progress=step)
        step.detail = f"{sum(len(frame) for frame in database.values()):,} rows in {len(database)} tables"
    return database


def _verdict(evaluation, report) -> str:
    from relanon.present.verdict import verdict_text

    return verdict_text(evaluation, report)


def _finish(progress) -> None:
    from relanon.common.progress import format_duration

    progress.say(f"done in {format_duration(progress.elapsed())}")


def _write_report(evaluation, folder: Path, inputs, overwrite: bool, files) -> Path:
    from relanon.present.report import write_report

    return write_report(evaluation, folder, inputs=inputs, overwrite=overwrite, files=files)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
