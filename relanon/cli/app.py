"""The parser of the ``relanon`` command and its entry point :func:`main`."""

from __future__ import annotations

import argparse
import math
import os
import sys

from relanon.cli.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE
from relanon.common.console import Terminated, terminate_like_interrupt, warnings_printed_once
from relanon.common.errors import RelanonError
from relanon.common.options import (
    DEFAULT_BUDGET_ROUNDS,
    DEFAULT_HOLDOUT,
    DEFAULT_ROUNDS,
    FORMATS,
    CsvFormulas,
)
from relanon.common.version import __version__

FILE_FORMATS = [name for name in FORMATS if name != "sql"]  # a server is given by its URL, never by --format

EPILOG = {
    "validate": "example:\n  relanon validate schema.yaml --data data/",
    "demo": "example:\n  relanon demo --out demo_out\n\n"
            "exit 0 once the demo is written, whatever its verdict (printed): a tour of relanon on built-in data,\n"
            "not a check of your release (relanon anonymize and evaluate exit 1 on a failing verdict)",
    "init": "example:\n  relanon init --data data/ --out schema.yaml",
    "anonymize": "example:\n  relanon anonymize schema.yaml --data data/ --out released/ --seed 7\n"
                 "on a Dask cluster, over partitioned Parquet:\n"
                 "  relanon anonymize schema.yaml --data parts/ --out released/ --engine dask --workers 2\n"
                 "  relanon anonymize schema.yaml --data parts/ --out released/ --engine dask --scheduler tcp://host:8786\n\n"
                 "exit 1 when the verdict names a measure that misses its target (the release and report are written\n"
                 "all the same); 0 only when every measure holds, with --no-report (nothing judged) or with --exit-zero",
    "evaluate": "example:\n  relanon evaluate schema.yaml --original data/ --anonymized released/ --report review/\n\n"
                "exit 1 when the verdict names a measure that misses its target; 0 when every measure holds or with "
                "--exit-zero",
    "report": "example:\n  relanon report schema.yaml --original data/ --anonymized released/ --out review/",
    "audit": "example:\n  relanon audit schema.yaml --data released/ --k 5 --max-risk 0.2 --json audit.json",
    "clean": "example:\n  relanon clean .   (after a run killed with kill -9: removes its .relanon-dask-* work folder)\n\n"
             "exit 0 whether or not something was removed (it says which)",
    "assess": "example:\n  relanon assess schema.yaml --data data/ --out assessment/ --holdout 0.5 --seed 7\n\n"
              "exit 0 only when every attack passes (the upper bound of its risk's 95 % interval below 5 %);\n"
              "exit 1 when an attack fails (!, a leak measured) or is inconclusive (?, its risk below 5 % but\n"
              "too few people to show an upper bound below 5 %), or when an attack could not be made\n"
              "(NOT RUN: nobody to attack, e.g. --holdout 0.999)",
}
EXIT_ZERO_HELP = ("exit 0 even when the verdict names a measure that misses its target (default: exit 1, the release "
                  "and report written all the same)")
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
            return _command(args.command)(args)
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


def _command(name: str):
    """The function of command ``name``: the library is imported only when a command runs, so that
    ``relanon --help`` and a wrong option answer at once."""
    import relanon.cli.commands as commands

    return getattr(commands, f"run_{name}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relanon",
        description="Anonymize multi-table relational databases (avatar method) and audit their release.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"relanon {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(name, help):
        sub = commands.add_parser(
            name, help=help, description=help, epilog=f"{EPILOG[name]}\n\n{EXIT_CODES}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.set_defaults(command=name)
        return sub

    validate = command("validate", "Check a schema file, and a database against it.")
    validate.add_argument("schema", help="the schema file (YAML or JSON)")
    validate.add_argument("--data", help=f"the database: {DATABASE}")
    validate.add_argument("--format", choices=FILE_FORMATS, help="storage format (default: detected)")

    demo = command("demo", "Build the demo hospital database, anonymize it and report on it.")
    demo.add_argument("--out", required=True, help="folder for the demo: original/, anonymized/, report/")
    demo.add_argument("--scale", type=_positive_number, default=1.0, help="size factor (1 = 10,000 patients)")
    demo.add_argument("--seed", type=_seed, default=None, help="seed of the run (default: the demo schema's seed)")
    demo.add_argument("--data-only", action="store_true", help="only write the demo database and its schema")
    demo.add_argument("--no-report", action="store_true", help="skip the evaluation and the report")
    demo.add_argument("--quiet", "-q", action="store_true", help=QUIET_HELP)
    _add_overwrite(demo, "the demo's schema.yaml, original/, anonymized/ and report/ in OUT")

    init = command("init", "Propose a schema file from a database, for you to review.")
    init.add_argument("--data", required=True, help=f"the database: {DATABASE}; keys declared there are used")
    init.add_argument("--format", choices=FILE_FORMATS, help="storage format (default: detected)")
    init.add_argument("--out", help="write the proposal to this file (default: print it)")
    init.add_argument("--name", help="name of the database")
    _add_overwrite(init, "an existing file at --out")

    anonymize = command("anonymize", "Anonymize a database described by a schema file.")
    anonymize.add_argument("schema", help="the schema file (YAML or JSON)")
    anonymize.add_argument("--data", required=True, help=f"the original database: {DATABASE}")
    anonymize.add_argument("--out", required=True,
                           help="where to write the anonymized database: a folder, a SQLite file, or a database URL "
                                "with a schema of its own (postgresql://user@host/db?schema=release)")
    anonymize.add_argument("--format", choices=FILE_FORMATS, help="input format (default: detected)")
    anonymize.add_argument("--out-format", choices=FILE_FORMATS, help="output format (default: as the input)")
    anonymize.add_argument("--seed", type=_seed, default=None, help="seed of the run (default: the schema's seed)")
    anonymize.add_argument("--report", help="folder for report.html and metrics.json (default: OUT-report beside OUT; "
                                            "for a database URL, DATABASE-SCHEMA-report in the current folder)")
    anonymize.add_argument("--no-report", action="store_true", help="do not evaluate nor write the report")
    anonymize.add_argument("--sample-size", type=_positive_int, default=None,
                           help="rows sampled per table for the distance metrics")
    anonymize.add_argument("--csv-formulas", choices=[str(c) for c in CsvFormulas], default=str(CsvFormulas.NEUTRALIZE),
                           help="CSV release: text cells a spreadsheet would run as formulas (=, +, -, @, tab, CR) "
                                "get a ' before them (neutralize, the default, as OWASP recommends) or are written "
                                "raw (keep); release.json counts them")
    anonymize.add_argument("--quiet", "-q", action="store_true", help=QUIET_HELP)
    anonymize.add_argument("--exit-zero", action="store_true", help=EXIT_ZERO_HELP)
    engine = anonymize.add_argument_group(
        "Dask engine", "run on a Dask cluster over partitioned Parquet (pip install -e \".[dask]\" from a clone; "
                       "see docs/guide/dask.md)")
    engine.add_argument("--engine", choices=["local", "dask"], default="local",
                        help="local: one process, the whole database in memory (default); dask: a Dask cluster, "
                             "tables read and written as directories of Parquet parts")
    cluster = engine.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", help="address of an existing Dask scheduler (tcp://host:8786)")
    cluster.add_argument("--workers", type=_positive_int, default=None,
                         help="workers of the local cluster started when no --scheduler is given (default: one per core)")
    engine.add_argument("--batch-size", type=_positive_int, default=None,
                        help="rows avatarized together (default 200,000): larger tables are cut into random batches")
    _add_overwrite(anonymize, "what exists at --out and --report (in a SQLite file or a database schema, only the "
                              "release's tables)")

    evaluate = command(
        "evaluate",
        "Measure privacy and utility of an anonymized database against its original.",
    )
    _add_comparison_arguments(evaluate)
    evaluate.add_argument("--report", help="also write report.html and metrics.json to this folder")
    evaluate.add_argument("--json", help="write the detailed metrics as JSON to this file")
    evaluate.add_argument("--exit-zero", action="store_true", help=EXIT_ZERO_HELP)
    _add_sampling_arguments(evaluate)
    _add_overwrite(evaluate, "what exists at --report and --json")

    report = command(
        "report",
        "Write report.html and metrics.json comparing an anonymized database with its original.",
    )
    _add_comparison_arguments(report)
    report.add_argument("--out", required=True, help="folder for report.html and metrics.json")
    _add_sampling_arguments(report)
    _add_overwrite(report, "what exists at --out")

    audit = command("audit", "Audit k-anonymity, re-identification risk and l-diversity of a release.")
    audit.add_argument("schema", help="the schema file (declares quasi_identifiers and sensitive columns)")
    audit.add_argument("--data", required=True, help=f"the database to audit (original or anonymized): {DATABASE}")
    audit.add_argument("--format", choices=FILE_FORMATS, help="storage format (default: detected)")
    audit.add_argument("--k", type=_positive_int, default=5, help="minimum equivalence-class size (default 5)")
    audit.add_argument("--l", type=_positive_int, default=None,
                       help="required l-diversity of the sensitive columns (default: reported, not required)")
    audit.add_argument("--max-risk", type=_share, default=0.2,
                       help="largest acceptable re-identification risk, in (0, 1] (default 0.2)")
    audit.add_argument("--json", help="write the audit as JSON to this file")
    _add_overwrite(audit, "an existing file at --json")

    _add_assess_command(command)

    clean = command("clean", "Remove what killed runs left in folders (private work folders, temporaries).")
    clean.add_argument("folders", nargs="+", metavar="FOLDER",
                       help="a folder where relanon wrote (the parent of --out, or the Dask engine's work folder)")
    return parser


def _add_comparison_arguments(sub) -> None:
    """The two databases compared by ``evaluate`` and ``report``, and their schema."""
    sub.add_argument("schema", help="the schema file shared by both databases")
    sub.add_argument("--original", required=True, help=f"the original database: {DATABASE}")
    sub.add_argument("--anonymized", required=True, help="the anonymized database (the same kinds of location)")
    sub.add_argument("--format", choices=FILE_FORMATS, help="storage format (default: detected)")


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


# --------------------------------------------------------------------------- assess (privacy attacks)


def _add_assess_command(command) -> None:
    assess = command(
        "assess",
        "Hold people out, anonymize the rest and attack the release (singling out, linkability, inference).",
    )
    assess.add_argument("schema", help="the schema file (YAML or JSON)")
    assess.add_argument("--data", required=True, help=f"the original database: {DATABASE}")
    assess.add_argument("--out", required=True, help="folder for report.html and metrics.json")
    assess.add_argument("--format", choices=FILE_FORMATS, help="input format (default: detected)")
    assess.add_argument("--holdout", type=_holdout, default=DEFAULT_HOLDOUT,
                        help="share of the people of each individual table held out as control (default 0.5: "
                             "as many control as training people, the narrowest intervals)")
    assess.add_argument("--seed", type=_seed, default=None, help="seed of the run (default: the schema's seed)")
    assess.add_argument("--rounds", type=_positive_int, default=DEFAULT_ROUNDS,
                        help="independent splits, each anonymized and attacked, their attacks pooled: narrower "
                             "intervals for small tables, each round the time of one (default: chosen within "
                             "--time-budget, stopping when every risk is settled)")
    assess.add_argument("--time-budget", type=_positive_number, default=None, metavar="SECONDS",
                        help=f"seconds the rounds may take when --rounds is not given (default: "
                             f"{DEFAULT_BUDGET_ROUNDS} times the first round)")
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


