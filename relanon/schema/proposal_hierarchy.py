"""Propose self-references: a column naming another row of its own table (a manager, a parent category).

A column is proposed as a foreign key to its own table's primary key when its name says it points within
the table (a word of :data:`HIERARCHY_WORDS`, ``ReportsTo``, ``parent_id``, or the table's key with a role
prefix, ``parent_category_id``), every value it holds is a key of the table, and the rows form a forest
(no row its own ancestor: :mod:`relanon.schema.hierarchy`). The note gives the evidence: the values found,
the number of levels and of rows at the top.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.schema.hierarchy import depths, parent_rows
from relanon.schema.proposal_rules import ID_WORDS, Note, name_words, snake_name

HIERARCHY_WORDS = frozenset((
    "parent", "manager", "reports_to", "report_to", "supervisor", "boss", "superior", "mentor", "referrer",
    "referred_by", "sponsor", "predecessor", "successor", "replaces", "replaced_by", "upline", "head_id",
    "managed_by", "supervised_by", "mother", "father",
))  # fmt: skip
"""Words of a column name that point to another row of the same table."""


def hierarchy_name(column: str, key: str) -> str | None:
    """Why the name of ``column`` points within its table whose key is ``key`` (the note's words), or None.

    Examples
    --------
    >>> hierarchy_name("ReportsTo", "EmployeeId"), hierarchy_name("parent_category_id", "category_id")
    ('named like a reference within the table (reports_to)', 'named like the table key category_id with a role prefix')
    >>> hierarchy_name("SupportRepId", "CustomerId") is None
    True
    """
    snake, key_snake = snake_name(column), snake_name(key)
    if key_snake not in ID_WORDS and snake.endswith("_" + key_snake):
        return f"named like the table key {key_snake} with a role prefix"
    found = sorted(name_words(snake) & HIERARCHY_WORDS)
    return f"named like a reference within the table ({found[0]})" if found else None


def forest(frame: pd.DataFrame, key: str, column: str) -> bool:
    """Whether the rows of ``frame`` and their reference ``column`` to ``key`` form a forest (no cycle)."""
    if key not in frame.columns:
        return False
    return bool((depths(parent_rows(frame[key], frame[column])) >= 0).all())


def propose_self_reference(table: str, column: str, frame: pd.DataFrame, key: str, notes: list[Note]) -> str | None:
    """The evidence for linking ``table.column`` to its own key (the note), or None; a name that points within
    the table with values that do not fit gets a review note saying why it is not linked."""
    if column == key or key not in frame.columns:
        return None
    named = hierarchy_name(column, key)
    if named is None:
        return None
    values = frame[column]
    present = values.dropna()
    if present.empty:
        return None
    parents = parent_rows(frame[key], values)
    unknown = int(((parents < 0) & values.notna().to_numpy()).sum())
    if unknown:
        notes.append(Note(table, column, f"{named}, but {unknown:,} of {len(present):,} values are not keys of "
                          f"{table}.{key}: not linked; empty them (a row at the top) and declare it under "
                          f"foreign_keys: {{column: {column}, references: {table}}}", "foreign_key", review=True))
        return None
    levels = depths(parents)
    if (levels < 0).any():
        notes.append(Note(table, column, f"{named} and all its values are keys of {table}.{key}, but "
                          f"{int((levels < 0).sum()):,} rows form a cycle (a row its own ancestor): not linked; "
                          "relanon releases a hierarchy without cycles", "foreign_key", review=True))
        return None
    top = int((levels == 0).sum())
    return (f"{named}; all {len(present):,} values are keys of {table}.{key}: a hierarchy of "
            f"{int(np.max(levels)) + 1} levels, {top:,} row{'s' if top != 1 else ''} at the top; re-drawn among the "
            "released rows, depths kept")
