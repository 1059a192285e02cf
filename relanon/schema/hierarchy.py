"""Self-references: a foreign key from a table to its own primary key (a manager, a parent category).

The rows and their self-reference form a hierarchy: a row with the key empty is at the top (depth 0),
each other row one level below the row it names. relanon releases a hierarchy as a forest
(:mod:`relanon.multitable.self_reference`): the original must be one, so a cycle (a row that is its own
ancestor, itself included) is a problem of the data, reported with the rows that form it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from relanon.common.errors import Problem

if TYPE_CHECKING:
    from relanon.schema.model import Table


def parent_rows(keys: pd.Series, references: pd.Series) -> np.ndarray:
    """For each row, the position of the row its reference names; -1 for an empty reference or an unknown key."""
    return pd.Index(keys.to_numpy()).get_indexer(references.to_numpy())


def depths(parents: np.ndarray) -> np.ndarray:
    """The depth of each row in the hierarchy ``parents`` (:func:`parent_rows`): 0 at the top, -1 for a row
    in a cycle or below one.

    Examples
    --------
    >>> depths(np.array([-1, 0, 1, 1, 5, 4])).tolist()
    [0, 1, 2, 2, -1, -1]
    """
    parents = np.asarray(parents, dtype=np.int64)
    found = np.where(parents < 0, 0, -1)
    todo = np.flatnonzero(found < 0)
    while len(todo):
        known = found[parents[todo]] >= 0
        if not known.any():
            break  # the rows left are in a cycle or below one
        rows = todo[known]
        found[rows] = found[parents[rows]] + 1
        todo = todo[~known]
    return found


def hierarchy_problems(table: Table, frame: pd.DataFrame) -> list[Problem]:
    """A problem for each self-reference of ``table`` whose rows form a cycle, naming rows of it."""
    problems = []
    if table.primary_key not in frame.columns:
        return problems
    for fk in table.self_references:
        if fk.column not in frame.columns:
            continue
        keys = frame[table.primary_key]
        found = depths(parent_rows(keys, frame[fk.column]))
        stuck = np.flatnonzero(found < 0)
        if len(stuck):
            problems.append(Problem(
                f"{len(stuck):,} row{'s are' if len(stuck) > 1 else ' is'} in a cycle of the hierarchy {fk.column} -> "
                f"{table.primary_key} or below one (a row that is its own ancestor); relanon releases a hierarchy "
                "without cycles: empty the reference of the row at the top of each cycle",
                table.name, fk.column, tuple(keys.iloc[stuck[:5]])))
    return problems
