"""The ``relanon`` command line: parse, call the library, print, exit code.

Exit codes: 0 success; 1 the data, schema or release failed a check (problems are printed);
2 the command line itself is wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from relanon.common.errors import ProblemsError, RelanonError

EPILOG = {
    "validate": "example:\n  relanon validate schema.yaml --data data/",
    "demo": "example:\n  relanon demo --out demo_out",
    "init": "example:\n  relanon init --data data/ --out schema.yaml",
    "anonymize": "example:\n  relanon anonymize schema.yaml --data data/ --out released/ --seed 7",
    "evaluate": "example:\n  relanon evaluate schema.yaml --original data/ --anonymized released/ --report review/",
    "report": "example:\n  relanon report schema.yaml --original data/ --anonymized released/ --out review/",
    "audit": "example:\n  relanon audit schema.yaml --data released/ --k 5 --max-risk 0.2 --json audit.json",
}


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except ProblemsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except RelanonError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the output was piped into a reader that stopped early (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0


def _parser() -> argparse.ArgumentParser:
    from relanon import __version__

    parser = argparse.ArgumentParser(
        prog="relanon",
        description="Anonymize multi-table relational databases (avatar method) and audit their release.",
    )
    parser.add_argument("--version", action="version", version=f"relanon {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(name, help, run):
        sub = commands.add_parser(
            name, help=help, description=help, epilog=EPILOG[name], formatter_class=argparse.RawDescriptionHelpFormatter
        )
        sub.set_defaults(run=run, command=name)
        return sub

    validate = command("validate", "Check a schema file, and a database against it.", _validate)
    validate.add_argument("schema", help="the schema file (YAML or JSON)")
    validate.add_argument("--data", help="the database: a folder of CSV or Parquet files, or a SQLite file")
    validate.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="storage format (default: detected)")

    demo = command("demo", "Build the demo hospital database, anonymize it and report on it.", _demo)
    demo.add_argument("--out", required=True, help="folder for the demo: original/, anonymized/, report/")
    demo.add_argument("--scale", type=float, default=1.0, help="size factor (1 = 10,000 patients)")
    demo.add_argument("--seed", type=int, default=None, help="seed of the run (default: the demo schema's seed)")
    demo.add_argument("--data-only", action="store_true", help="only write the demo database and its schema")
    demo.add_argument("--no-report", action="store_true", help="skip the evaluation and the report")
    demo.add_argument("--quiet", "-q", action="store_true", help="no progress lines")

    init = command("init", "Propose a schema file from a database, for you to review.", _init)
    init.add_argument("--data", required=True, help="the database: a folder of CSV or Parquet files, or a SQLite file")
    init.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="storage format (default: detected)")
    init.add_argument("--out", help="write the proposal to this file (default: print it)")
    init.add_argument("--name", help="name of the database")

    anonymize = command("anonymize", "Anonymize a database described by a schema file.", _anonymize)
    anonymize.add_argument("schema", help="the schema file (YAML or JSON)")
    anonymize.add_argument("--data", required=True, help="the original database")
    anonymize.add_argument("--out", required=True, help="where to write the anonymized database")
    anonymize.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="input format (default: detected)")
    anonymize.add_argument("--out-format", choices=["csv", "parquet", "sqlite"], help="output format (default: as the input)")
    anonymize.add_argument("--seed", type=int, default=None, help="seed of the run (default: the schema's seed)")
    anonymize.add_argument("--report", help="folder for report.html and metrics.json (default: OUT-report beside OUT)")
    anonymize.add_argument("--no-report", action="store_true", help="do not evaluate nor write the report")
    anonymize.add_argument("--sample-size", type=int, default=None, help="rows sampled per table for the distance metrics")
    anonymize.add_argument("--quiet", "-q", action="store_true", help="no progress lines")

    evaluate = command(
        "evaluate",
        "Measure privacy and utility of an anonymized database against its original.",
        _evaluate,
    )
    _add_comparison_arguments(evaluate)
    evaluate.add_argument("--report", help="also write report.html and metrics.json to this folder")
    evaluate.add_argument("--json", help="write the detailed metrics as JSON to this file")
    _add_sampling_arguments(evaluate)

    report = command(
        "report",
        "Write report.html and metrics.json comparing an anonymized database with its original.",
        _report,
    )
    _add_comparison_arguments(report)
    report.add_argument("--out", required=True, help="folder for report.html and metrics.json")
    _add_sampling_arguments(report)

    audit = command("audit", "Audit k-anonymity, re-identification risk and l-diversity of a release.", _audit)
    audit.add_argument("schema", help="the schema file (declares quasi_identifiers and sensitive columns)")
    audit.add_argument("--data", required=True, help="the database to audit (original or anonymized)")
    audit.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="storage format (default: detected)")
    audit.add_argument("--k", type=int, default=5, help="minimum equivalence-class size (default 5)")
    audit.add_argument("--l", type=int, default=None,
                       help="required l-diversity of the sensitive columns (default: reported, not required)")
    audit.add_argument("--max-risk", type=float, default=0.2, help="largest acceptable re-identification risk (default 0.2)")
    audit.add_argument("--json", help="write the audit as JSON to this file")
    return parser


def _add_comparison_arguments(sub) -> None:
    """The two databases compared by ``evaluate`` and ``report``, and their schema."""
    sub.add_argument("schema", help="the schema file shared by both databases")
    sub.add_argument("--original", required=True, help="the original database")
    sub.add_argument("--anonymized", required=True, help="the anonymized database")
    sub.add_argument("--format", choices=["csv", "parquet", "sqlite"], help="storage format (default: detected)")


def _add_sampling_arguments(sub) -> None:
    """How ``evaluate`` and ``report`` sample rows for the distance metrics, and their progress."""
    sub.add_argument("--sample-size", type=int, default=None, help="rows sampled per table for the distance metrics")
    sub.add_argument("--seed", type=int, default=0,
                     help="seed of the metric sampling (default 0, as relanon anonymize and demo use)")
    sub.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


# --------------------------------------------------------------------------- commands


def _validate(args) -> int:
    from relanon.schema.graph import connected_groups
    from relanon.schema.model import load_schema
    from relanon.stores.io import read_database

    schema = load_schema(args.schema)
    print(f"schema {args.schema}: valid ({len(schema)} tables)")
    database = read_database(args.data, schema, format=args.format) if args.data else None
    print(_graph_summary(schema, database))
    groups = connected_groups(schema)
    if len(groups) > 1:
        print("tables not linked to each other (each group is anonymized on its own): "
              + "; ".join(", ".join(g) for g in groups))
    if database is not None:
        print(f"data {args.data}: valid against the schema")
    return 0


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
    from relanon.schema.proposal import propose_schema
    from relanon.stores.io import read_tables

    tables = read_tables(args.data, format=args.format)
    proposal = propose_schema(tables, name=args.name or Path(args.data).stem)
    text = proposal.to_yaml()
    if args.out:
        from relanon.common.atomic import refuse_overwriting_input, write_text_atomically

        refuse_overwriting_input(args.out, args.data)
        write_text_atomically(Path(args.out), text)
        print(f"proposed schema written to {args.out}: review every line marked REVIEW before using it")
    else:
        print(text, end="")
    return 0


def _anonymize(args) -> int:
    from relanon.common.progress import Progress
    from relanon.multitable.pipeline import anonymize
    from relanon.multitable.release import write_release
    from relanon.schema.model import load_schema
    from relanon.stores.io import detect_format, read_database

    progress = Progress(quiet=args.quiet)
    schema = load_schema(args.schema)
    database = read_database(args.data, schema, format=args.format)
    result = anonymize(schema, database, random_state=args.seed, progress=progress)
    out_format = args.out_format or args.format or detect_format(args.data)
    written = write_release(result, args.out, format=out_format, inputs=[args.data, args.schema])
    print(f"anonymized database written to {written}")
    _print_sensitive(result)
    if not args.no_report:
        report_dir = Path(args.report) if args.report else written.parent / f"{written.name}-report"
        evaluation = _evaluate_result(schema, database, result, args.sample_size, progress)
        _write_report(evaluation, report_dir, [args.data, args.out])
        print(evaluation.privacy_matrix_text())
    return 0


def _demo(args) -> int:
    from relanon import datasets
    from relanon.common.progress import Progress
    from relanon.multitable.pipeline import anonymize
    from relanon.multitable.release import write_release
    from relanon.schema.model import dump_schema
    from relanon.stores.io import write_database

    progress = Progress(quiet=args.quiet)
    out = Path(args.out)
    schema, database = datasets.hospital(scale=args.scale, seed=0)
    dump_schema(schema, out / "schema.yaml")
    original_dir = write_database(database, out / "original", schema, format="csv")
    print(f"demo database written to {original_dir} (schema: {out / 'schema.yaml'})")
    if args.data_only:
        return 0
    result = anonymize(schema, database, random_state=args.seed, progress=progress)
    written = write_release(result, out / "anonymized", format="csv", inputs=[original_dir])
    print(f"anonymized database written to {written}")
    _print_sensitive(result)
    if not args.no_report:
        evaluation = _evaluate_result(schema, database, result, None, progress)
        report = _write_report(evaluation, out / "report", [original_dir, written])
        print(f"report: {report}")
        print(evaluation.privacy_matrix_text())
    return 0


def _evaluate(args) -> int:
    evaluation = _evaluate_pair(args)
    for note in evaluation.notes:
        print(f"note: {note}")
    print(evaluation.privacy_matrix_text())
    print(evaluation.signal_matrix_text())
    if args.json:
        from relanon.common.atomic import write_text_atomically

        write_text_atomically(Path(args.json), evaluation.to_json())
        print(f"metrics written to {args.json}")
    if args.report:
        print(f"report: {_write_report(evaluation, Path(args.report), [args.original, args.anonymized])}")
    return 0


def _report(args) -> int:
    evaluation = _evaluate_pair(args)
    print(f"report: {_write_report(evaluation, Path(args.out), [args.original, args.anonymized])}")
    print(evaluation.privacy_matrix_text())
    return 0


def _evaluate_pair(args):
    """Evaluate two databases read from disk (no private pairing: the run is not known)."""
    from relanon.common.progress import Progress
    from relanon.metrics.scenarios import evaluate
    from relanon.schema.model import load_schema
    from relanon.stores.io import read_database

    schema = load_schema(args.schema)
    original = read_database(args.original, schema, format=args.format)
    anonymized = read_database(args.anonymized, schema, format=args.format)
    return evaluate(schema, original, anonymized, sample_size=args.sample_size, random_state=args.seed,
                    progress=Progress(quiet=args.quiet))


def _audit(args) -> int:
    from relanon.audit.checks import audit_database
    from relanon.schema.model import load_schema
    from relanon.stores.io import read_database

    schema = load_schema(args.schema)
    database = read_database(args.data, schema, format=args.format)
    report = audit_database(schema, database, k=args.k, l=args.l, max_risk=args.max_risk)
    print(report.to_text())
    if args.json:
        import json

        from relanon.common.atomic import refuse_overwriting_input, write_text_atomically

        refuse_overwriting_input(args.json, args.data)
        write_text_atomically(Path(args.json), json.dumps(report.to_dict(), indent=2, default=str) + "\n")
        print(f"audit written to {args.json}")
    return 0 if report.passed else 1


# --------------------------------------------------------------------------- shared steps


def _print_sensitive(result) -> None:
    for message in result.sensitive_choices:
        print(f"WARNING (sensitive choice): {message}", file=sys.stderr)


def _evaluate_result(schema, database, result, sample_size, progress):
    """The metrics of a run, sampled with the fixed metrics seed (not the run's): ``relanon evaluate``
    of the same release then gives the same figures."""
    from relanon.metrics.scenarios import METRICS_SEED, evaluate

    return evaluate(schema, database, result.tables, result, sample_size=sample_size, random_state=METRICS_SEED,
                    progress=progress)


def _write_report(evaluation, folder: Path, inputs) -> Path:
    from relanon.present.report import write_report

    return write_report(evaluation, folder, inputs=inputs)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
