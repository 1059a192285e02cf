"""What each command does: read, call the library, print, return the exit code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from relanon.audit.database import audit_database
from relanon.cli.steps import (
    DEMO_ENTRIES,
    EXIT_FAILED,
    EXIT_OK,
    check_inputs,
    database_name,
    default_report,
    demo_foreign_entries,
    evaluate_result,
    finish_run,
    progress_for,
    read_step,
    report_files,
    report_folder_output,
    shown,
    tables_text,
    verdict_exit,
    verdict_line,
    write_report_folder,
)
from relanon.common.atomic import remove_leftovers, write_text_atomically
from relanon.common.errors import DataError, ParameterError, ProblemsError, StorageError
from relanon.common.options import Method
from relanon.datasets import hospital
from relanon.metrics.attacks.assessment import assess, require_individual_tables
from relanon.metrics.scenarios import evaluate
from relanon.multitable.pipeline import anonymization_problems, anonymize
from relanon.multitable.release import write_release
from relanon.present.attacks import attacks_text, risk_matrix_text, verdict_text
from relanon.present.audit import audit_dict, audit_text
from relanon.present.verdict import failure_lines, privacy_matrix_text
from relanon.schema.graph import connected_groups, parent_links, self_links, too_small_for_k, topological_order
from relanon.schema.model import dump_schema, load_schema
from relanon.schema.proposal import propose_schema
from relanon.stores.io import declared_keys, detect_format, output_format, read_database, read_tables, write_database
from relanon.stores.notes import check_release
from relanon.stores.outputs import (
    NOTES_FILE,
    FileOutput,
    FolderOutput,
    ReleaseFolder,
    check_outputs,
    json_with_keys,
    output_for_database,
    remove_entries,
)


def run_validate(args) -> int:
    check_inputs(args.schema, args.data)
    try:
        schema = load_schema(Path(args.schema))
        print(f"schema {args.schema}: valid ({tables_text(len(schema))})")
        database = read_database(args.data, schema, format=args.format) if args.data else None
        problems = anonymization_problems(schema, database) if database is not None else []
        if problems:  # what anonymize would stop on, found by the same checks
            raise DataError("the data cannot be anonymized as the schema declares", problems)
    except ProblemsError as error:  # what validate checks: the schema and the data fail it
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(_graph_summary(schema, database))
    groups = connected_groups(schema)
    if len(groups) > 1:
        print("tables not linked to each other (each group is anonymized on its own): "
              + "; ".join(", ".join(g) for g in groups))
    if database is not None:
        print(f"data {shown(args.data)}: valid against the schema")
        for name, message in too_small_for_k(schema, {n: len(frame) for n, frame in database.items()}).items():
            print(f"review: {name}: {message}")
    return EXIT_OK


def _graph_summary(schema, database) -> str:
    lines = []
    for name in topological_order(schema):
        table = schema[name]
        size = f"{len(database[name]):>10,} rows  " if database is not None else ""
        role = "individual" if table.individual else "          "
        links = [f"{link.column} -> {link.parent} ({link.method})" for link in parent_links(schema, name)]
        links += [f"{link.column} -> {name} (self-reference)" for link in self_links(schema, name)]
        links = ", ".join(links) + ("; association table (no key of its own)" if table.association else "")
        lines.append(f"  {name:<20} {size}{role}  {table.anonymize.method:<9} {links}")
    return "\n".join(lines)


def run_init(args) -> int:
    check_inputs(None, args.data)
    if args.out:
        check_outputs([FileOutput(args.out, what="the proposed schema", flag="--out", overwrite=args.overwrite)],
                      [args.data])
    tables = read_tables(args.data, format=args.format)
    proposal = propose_schema(tables, name=args.name or database_name(args.data),
                              declared=declared_keys(args.data, format=args.format))
    text = proposal.to_yaml()
    if args.out:
        write_text_atomically(Path(args.out), text)
        print(f"proposed schema written to {args.out}: review every line marked REVIEW before using it")
    else:
        print(text, end="")
    return EXIT_OK


def run_anonymize(args) -> int:
    check_inputs(args.schema, args.data)
    if args.engine == "dask":
        return run_anonymize_on_dask(args)
    given = [flag for flag, value in (("--scheduler", args.scheduler), ("--workers", args.workers),
                                      ("--batch-size", args.batch_size)) if value is not None]
    if given:
        raise ParameterError(f"{', '.join(given)} only apply with --engine dask; add --engine dask, or leave them out")
    inputs = [args.data, args.schema]
    out_format = output_format(args.out, args.out_format, like=args.format or detect_format(args.data))
    release = output_for_database(args.out, out_format, what="the release", flag="--out", overwrite=args.overwrite)
    report_dir = None
    if not args.no_report:
        report_dir = Path(args.report) if args.report else default_report(args.out)
    check_outputs([release, report_folder_output(report_dir, "--report", args.overwrite)], inputs)

    progress = progress_for(args)
    schema = load_schema(Path(args.schema))
    database = read_step(progress, args.data, schema, args.format)
    result = anonymize(schema, database, random_state=args.seed, progress=progress)
    files = evaluation = None
    if report_dir is not None:  # evaluated and rendered before anything is written
        evaluation = evaluate_result(schema, database, result, args.sample_size, progress)
        files = report_files(evaluation, progress=progress)
    with progress.step("write the release"):
        written = write_release(result, args.out, format=out_format, inputs=inputs, overwrite=args.overwrite,
                                csv_formulas=args.csv_formulas)
    print(f"anonymized database written to {shown(written)}")
    if evaluation is not None:
        with progress.step("write the report"):
            report = write_report_folder(evaluation, report_dir, inputs + [args.out], args.overwrite, files)
        print(verdict_line(evaluation, report))
    finish_run(progress)
    if evaluation is None:  # --no-report: nothing was judged
        return EXIT_OK
    return verdict_exit(evaluation, args.exit_zero, written=f"the release at {shown(written)}")


def run_anonymize_on_dask(args) -> int:
    """``anonymize --engine dask``: partitioned Parquet in and out, on a Dask cluster; no report (it would
    need both databases in the memory of one machine)."""
    from relanon.distributed import anonymize_dataset  # optional heavy dependency: only for --engine dask

    wrong = [flag for flag, value in (("--format", args.format), ("--out-format", args.out_format))
             if value not in (None, "parquet")]
    if wrong:
        raise ParameterError(f"{', '.join(wrong)}: the Dask engine reads and writes partitioned Parquet only (one "
                             "directory of Parquet files per table); convert the database with relanon's local engine or "
                             "with Dask first")
    if "://" in str(args.out) or "://" in str(args.data):
        raise ParameterError("the Dask engine reads and writes folders of partitioned Parquet, not database URLs; "
                             "use the local engine (leave out --engine dask) for a database server")
    # checked here too, to name the options as typed (--out, --overwrite)
    check_outputs([ReleaseFolder(args.out, "parquet", flag="--out", overwrite=args.overwrite)], [args.data, args.schema])
    progress = progress_for(args)
    schema = load_schema(Path(args.schema))
    result = anonymize_dataset(schema, args.data, args.out, scheduler=args.scheduler, workers=args.workers,
                               batch_size=args.batch_size, random_state=args.seed, progress=progress,
                               overwrite=args.overwrite)
    print(f"anonymized database written to {args.out} ({sum(result.tables.values()):,} rows in "
          f"{tables_text(len(result.tables))}, batches of at most {result.batch_size:,} rows)")
    if not args.no_report:
        print("no report with --engine dask (it compares both databases in the memory of one machine); to measure "
              "a sample: relanon evaluate on a sampled copy of both databases")
    finish_run(progress)
    return EXIT_OK


def run_demo(args) -> int:
    out = Path(args.out)
    check_outputs([FolderOutput(out, own_entries=demo_foreign_entries, what="the demo", flag="--out",
                                own="a demo folder it made (schema.yaml, original/, anonymized/, report/)",
                                whole="replace the demo's entries in it (other entries are kept)",
                                overwrite=args.overwrite)])
    progress = progress_for(args)
    with progress.step("build the demo database") as step:
        schema, database = hospital(scale=args.scale, seed=0)
        step.detail = f"{sum(len(frame) for frame in database.values()):,} rows in {tables_text(len(database))}"
    result = evaluation = files = None
    if not args.data_only:
        result = anonymize(schema, database, random_state=args.seed, progress=progress)
        if not args.no_report:
            evaluation = evaluate_result(schema, database, result, None, progress)
            files = report_files(evaluation, progress=progress)
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
            report = write_report_folder(evaluation, out / "report", [original_dir, written], True, files)
        print(verdict_line(evaluation, report))
    finish_run(progress)
    return EXIT_OK


def run_evaluate(args) -> int:
    check_inputs(args.schema, args.original, args.anonymized)
    json_output = None
    if args.json:
        json_output = FileOutput(args.json, what="the metrics JSON", flag="--json", overwrite=args.overwrite,
                                 recognize=json_with_keys("privacy_matrix", "signal_matrix", "metrics"),
                                 own="a metrics JSON file it wrote")
    report_dir = Path(args.report) if args.report else None
    check_outputs([json_output, report_folder_output(report_dir, "--report", args.overwrite)],
                  [args.schema, args.original, args.anonymized])
    progress = progress_for(args)
    evaluation = _evaluate_pair(args, progress)
    files = report_files(evaluation, progress=progress) if report_dir is not None else None
    report = None
    if args.json:
        write_text_atomically(Path(args.json), evaluation.to_json())
        print(f"metrics written to {args.json}")
    if report_dir is not None:
        with progress.step("write the report"):
            report = write_report_folder(evaluation, report_dir, [args.original, args.anonymized], True, files)
    for note in evaluation.notes:
        print(f"note: {note}")
    print(verdict_line(evaluation, report))
    finish_run(progress)
    return verdict_exit(evaluation, args.exit_zero)


def run_report(args) -> int:
    check_inputs(args.schema, args.original, args.anonymized)
    check_outputs([report_folder_output(Path(args.out), "--out", args.overwrite)],
                  [args.schema, args.original, args.anonymized])
    progress = progress_for(args)
    evaluation = _evaluate_pair(args, progress)
    files = report_files(evaluation, progress=progress)
    with progress.step("write the report"):
        report = write_report_folder(evaluation, Path(args.out), [args.original, args.anonymized], True, files)
    print(verdict_line(evaluation, report))
    finish_run(progress)
    return EXIT_OK


def _evaluate_pair(args, progress):
    """Evaluate two databases read from disk (no private pairing: the run is not known)."""
    schema = load_schema(Path(args.schema))
    original = read_step(progress, args.original, schema, args.format, "the original")
    anonymized = read_step(progress, args.anonymized, schema, args.format, "the anonymized database")
    return evaluate(schema, original, anonymized, sample_size=args.sample_size, random_state=args.seed,
                    progress=progress)


def run_audit(args) -> int:

    check_inputs(args.schema, args.data)
    if args.json:
        check_outputs([FileOutput(args.json, what="the audit JSON", flag="--json", overwrite=args.overwrite,
                                  recognize=json_with_keys("thresholds", "passed", "views"),
                                  own="an audit JSON file it wrote")],
                      [args.schema, args.data])
    schema = load_schema(Path(args.schema))
    database = read_database(args.data, schema, format=args.format)
    # a release's notes say which tables hold synthetic records (avatar method): audited for information,
    # but only the tables whose data is what relanon wrote (the fingerprints in release.json)
    release = check_release(args.data, schema, format=args.format, database=database)
    synthetic = [name for name in release.synthetic(Method.AVATAR) if name in schema.tables]
    report = audit_database(schema, database, k=args.k, l=args.l, max_risk=args.max_risk, synthetic=synthetic)
    warnings = [f"WARNING ({name}): {why}" for name, why in release.unverified.items()]
    if warnings:
        warnings.append(f"WARNING: {', '.join(release.unverified)} audited as real records (gated): {NOTES_FILE} "
                        "does not vouch for their data (see above)")
        print("\n".join([*warnings[:-1], "", audit_text(report), "", warnings[-1]]))
    else:
        print(audit_text(report))
    if args.json:
        data = audit_dict(report)
        data["release_warnings"] = dict(release.unverified)
        write_text_atomically(Path(args.json), json.dumps(data, indent=2, default=str) + "\n")
        print(f"audit written to {args.json}")
    return EXIT_OK if report.passed else EXIT_FAILED


def run_assess(args) -> int:
    check_inputs(args.schema, args.data)
    inputs = [args.schema, args.data]
    check_outputs([report_folder_output(Path(args.out), "--out", args.overwrite)], inputs)
    progress = progress_for(args)
    schema = load_schema(Path(args.schema))
    require_individual_tables(schema)  # before reading the data: without people, there is nothing to attack
    database = read_step(progress, args.data, schema, args.format)
    options = {name: value for name, value in (("n_attacks", args.attacks), ("n_predicates", args.predicates))
               if value is not None}
    assessment = assess(schema, database, holdout=args.holdout, random_state=args.seed, sample_size=args.sample_size,
                        rounds=args.rounds, time_budget=args.time_budget, progress=progress, **options)
    files = report_files(assessment.evaluation, assessment, progress=progress)
    with progress.step("write the report"):
        report = write_report_folder(assessment.evaluation, Path(args.out), inputs, True, files)
    print(verdict_text(assessment))
    print(risk_matrix_text(assessment))
    print(privacy_matrix_text(assessment.evaluation))
    print("\n".join(failure_lines(assessment.evaluation, kinds=("privacy",))))
    if assessment.failures:
        print("attacks whose risk may reach 5 %:")
        print(attacks_text(assessment, only_failed=True))
    print(f"report: {report} (with metrics.json)")
    finish_run(progress)
    return EXIT_OK if assessment.passed else EXIT_FAILED




def run_clean(args) -> int:
    """``relanon clean FOLDER...``: remove what killed runs left there (runs still going are left alone)."""
    removed = []
    for folder in args.folders:
        if not Path(folder).is_dir():
            raise StorageError(f"no folder at {str(folder)!r}; give the folder where relanon wrote (the parent of --out)")
        removed += remove_leftovers(Path(folder))
    for path in removed:
        print(f"removed {path}")
    print(f"removed {len(removed)} leftover{'s' if len(removed) != 1 else ''} of killed runs" if removed
          else "nothing to remove: no leftover of a killed run")
    return EXIT_OK
