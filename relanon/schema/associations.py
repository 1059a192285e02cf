"""Association tables: tables of links between their parents, with no key of their own.

A many-to-many table (a playlist's tracks: ``PlaylistId``, ``TrackId``, its key the pair) is declared::

    playlist_track:
      primary_key: null
      association: true
      foreign_keys:
        - {column: PlaylistId, references: playlists}
        - {column: TrackId, references: tracks}

While relanon holds it, its rows are numbered in a column named by the table's ``primary_key``
(:data:`ROW_KEY`, ``relanon_row``): every step that needs a key per row (new keys,
pairings, metrics) finds one, and no table may refer to it. The numbers are added when the data are
checked (:func:`numbered`) and never written (:func:`unnumbered`): a released association table has the
columns of its source. Its foreign keys are re-linked to the released parents as any child's are; each
combination of parents is kept unique in the release where it was unique in the original
(:mod:`relanon.multitable.associations`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from relanon.common.errors import Problem

if TYPE_CHECKING:
    from relanon.schema.model import Schema, Table


ROW_KEY = "relanon_row"
"""The column numbering the rows of an association table (``primary_key: null``) while relanon holds it."""


def row_key_name(table: str, columns, foreign_keys) -> str:
    """:data:`ROW_KEY`, or ``relanon_row_1``... the first name that is none of the table's columns."""
    taken = {*columns, *foreign_keys}
    chosen, number = ROW_KEY, 0
    while chosen in taken:
        number += 1
        chosen = f"{ROW_KEY}_{number}"
    return chosen


def association_problems(schema: Schema) -> list[Problem]:
    """The problems of meaning of association tables, and of tables declared without a primary key."""
    problems = []
    referenced = {fk.references: (table.name, fk.column) for table in schema for fk in table.foreign_keys}
    for table in schema:
        if not table.association:
            continue  # primary_key: null without association: true is the JSON Schema's (relanon.schema.parsing)
        if table.primary_key != row_key_name(table.name, table.column_names, table.foreign_key_columns):
            problems.append(Problem("an association table has no primary key: set primary_key: null, or remove "
                                    "association: true and keep the key", table.name, table.primary_key))
        if not table.foreign_keys:
            problems.append(Problem("an association table links parents: declare its foreign_keys (a pair, such as "
                                    "a playlist and a track), or give it a primary key and remove association",
                                    table.name))
        if table.self_references:
            problems.append(Problem("an association table cannot refer to itself (it has no key to refer to); "
                                    "remove the foreign key or give the table a primary key", table.name,
                                    table.self_references[0].column))
        if table.name in referenced:
            child, column = referenced[table.name]
            problems.append(Problem(f"{child}.{column} refers to the association table {table.name!r}, which has no "
                                    "key: give it a primary key (and remove association: true), or remove that "
                                    "foreign key", table.name))
    return problems


def numbered(table: Table, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the row numbers (1, 2, 3...) of an association table as its first column, or ``frame``
    itself for other tables and for a frame that already has them."""
    if not table.association or table.primary_key in frame.columns:
        return frame
    out = frame.copy(deep=False)
    out.insert(0, table.primary_key, np.arange(1, len(frame) + 1, dtype="int64"))
    return out


def unnumbered(table: Table, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the row numbers of an association table (what is written)."""
    if not table.association or table.primary_key not in frame.columns:
        return frame
    return frame.drop(columns=[table.primary_key])


def unique_combinations(table: Table, frame: pd.DataFrame) -> bool:
    """Whether each row of an association table holds its own combination of parents (missing ones count as
    values), so that the combination is a key of the table."""
    columns = [c for c in table.foreign_key_columns if c in frame.columns]
    return bool(columns) and not frame.duplicated(columns).any()
