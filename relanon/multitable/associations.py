"""Association tables in a release: each combination of parents kept unique where it was unique.

An association table (:mod:`relanon.schema.associations`) is released as any child: its rows avatarized
with its parents' columns, each foreign key re-linked to the released parents. Two rows may then land on
the same combination (a track twice in one playlist) where the original had each once. Such a row swaps
its last foreign key with another row when both new combinations are free: the numbers of children of
every parent on every link are unchanged. A row that finds no such swap among :data:`SWAP_TRIES` rows
drawn at random takes a free parent of the last link at random (that parent gains a child, the old one
loses one); a row whose first parents are already linked to every parent of the last link keeps its
combination and is counted.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from relanon.schema.associations import unique_combinations
from relanon.schema.model import Schema

SWAP_TRIES = 64
"""Rows drawn at random for a swap before a free parent is drawn instead."""


def keep_combinations_unique(schema: Schema, name: str, original: dict, releases: dict,
                             rng: np.random.Generator) -> tuple[int, int]:
    """Make the released combinations of parents of association table ``name`` unique, in place, when the
    original's were. Returns ``(rows changed, rows left on a repeated combination)``."""
    table = schema[name]
    frame = releases[name].frame
    if not table.association or not unique_combinations(table, original[name]) or len(frame) < 2:
        return 0, 0
    columns = list(table.foreign_key_columns)
    last = columns[-1]
    combos = [tuple(row) for row in frame[columns].astype(object).where(frame[columns].notna(), None)
              .itertuples(index=False, name=None)]
    repeated = np.flatnonzero(pd.Series(combos).duplicated().to_numpy())
    if not len(repeated):
        return 0, 0
    taken = Counter(combos)
    parent = schema[table.foreign_keys[-1].references]
    free_parents = releases[parent.name].frame[parent.primary_key].to_numpy(dtype=object)
    values = np.array(frame[last].astype(object).where(frame[last].notna(), None), dtype=object)
    changed, left = 0, 0
    for row in repeated:
        combo = combos[row]
        if taken[combo] < 2:
            continue  # an earlier change already freed it
        new = _swap(row, combos, taken, rng) or _free_parent(row, combos, taken, free_parents, rng)
        if new is None:
            left += 1
            continue
        for position, combo in new:
            taken[combos[position]] -= 1
            combos[position] = combo
            taken[combo] = taken.get(combo, 0) + 1
            values[position] = combo[-1]
            changed += 1
    frame[last] = pd.Series(values, index=frame.index).astype(frame[last].dtype)
    return changed, left


def _swap(row: int, combos: list, taken: dict, rng) -> list | None:
    mine = combos[row]
    for other in rng.integers(0, len(combos), size=min(SWAP_TRIES, len(combos))):
        theirs = combos[other]
        if other == row or theirs[-1] == mine[-1]:
            continue
        a, b = (*mine[:-1], theirs[-1]), (*theirs[:-1], mine[-1])
        if a != b and not taken.get(a) and not taken.get(b):
            return [(row, a), (int(other), b)]
    return None


def _free_parent(row: int, combos: list, taken: dict, parents: np.ndarray, rng) -> list | None:
    head = combos[row][:-1]
    for value in parents[rng.permutation(len(parents))]:
        combo = (*head, value)
        if not taken.get(combo):
            return [(row, combo)]
    return None
