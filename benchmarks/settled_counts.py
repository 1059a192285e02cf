"""Rows of counts settled together: what they keep (the correlation of a person's numbers of children on
two links) and what they reveal (released people whose pair of counts a single original person holds).

    python benchmarks/settled_counts.py [--scale 0.3] [--seeds 0-2]

The careers database (``relanon.datasets.careers``): people with yearly records and leaves, two
``linear_sum`` child links, whose rows of drawn counts are settled together (a person's row replaced as a
whole by a nearest original person's; docs/method.md, "Children per parent"). Each seed is anonymized with
:func:`relanon.anonymize`. Printed per seed: the correlation of the two counts per person, in the data and
released, and the released people whose pair of counts is held by exactly one original person (and how many
such pairs the data has).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import relanon  # noqa: E402
from relanon import datasets  # noqa: E402


def count_pairs(schema, tables) -> pd.Series:
    """Each person's numbers of children on her child links, as tuples."""
    people = next(t for t in schema if t.individual)
    links = [(t.name, fk.column) for t in schema for fk in t.foreign_keys if fk.references == people.name]
    keys = tables[people.name][people.primary_key]
    columns = [tables[name][column].value_counts().reindex(keys, fill_value=0).to_numpy() for name, column in links]
    return pd.Series(list(zip(*columns, strict=True)))


def seeds_of(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.3)
    parser.add_argument("--seeds", default="0-2")
    args = parser.parse_args()
    schema, database = datasets.careers(scale=args.scale, seed=0)
    original = count_pairs(schema, database)
    held = original.value_counts()
    single = set(held[held == 1].index)
    print(f"{len(original):,} people; correlation of the two counts in the data "
          f"{np.corrcoef(np.array(original.tolist()).T)[0, 1]:.2f}; {len(single)} pairs held by one person")
    for seed in seeds_of(args.seeds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = relanon.anonymize(schema, database, random_state=seed, progress=False)
        released = count_pairs(schema, result.tables)
        correlation = np.corrcoef(np.array(released.tolist()).T)[0, 1]
        print(f"seed {seed}: correlation {correlation:.2f}; released people carrying a pair one original person "
              f"holds: {int(released.isin(single).sum())}")

if __name__ == "__main__":
    main()
