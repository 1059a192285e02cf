"""Self-references in a release: a table's foreign key to its own rows (a manager, a parent category).

A self-reference is no edge of the schema graph (:func:`relanon.schema.graph.self_links`): the table is
released first, then the reference is re-drawn among its own released rows, so that it names a released
key. The original is a forest (:mod:`relanon.schema.hierarchy` refuses a cycle), and so is the release:

- each released row takes the depth of the record it comes from, and that record's number of rows below
  it (its direct reports): the depth distribution and the numbers of children per depth are the
  original's exactly;
- the rows of depth ``d`` are dealt to the slots of the rows of depth ``d - 1`` (each row as many slots
  as its number of children), in a random order drawn from the run's seed (``linear_sum`` and
  ``minimum_distance``), or each to the released row of its record's own parent (``original_order``:
  the original tree's shape, least private, as for any ``original_order`` link).

A reference always points one level up, so the release has no cycle. Tables released with their original
keys (``keep``, anatomization, bucketization) keep their references; one naming a row that the method did
not release (suppressed) is emptied.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.schema.graph import Link
from relanon.schema.hierarchy import depths, parent_rows
from relanon.schema.model import Schema


def relink_within(schema: Schema, link: Link, original: dict, release, rng: np.random.Generator) -> pd.Series:
    """The re-drawn self-reference ``link.column`` of every released row of ``link.child``.

    Parameters
    ----------
    schema : Schema
    link : Link
        A link of :func:`relanon.schema.graph.self_links`.
    original : dict of DataFrame
        The checked original tables.
    release : TableRelease
        The table's release, its primary keys set.
    rng : numpy.random.Generator

    Returns
    -------
    pandas.Series
        On the release's index: the key of the released row each row reports to, missing at the top.
    """
    table = schema[link.child]
    frame, released = original[link.child], release.frame
    new_keys = released[table.primary_key]
    dtype = "Int64" if pd.api.types.is_integer_dtype(new_keys.dtype) else new_keys.dtype
    if release.method != "avatar":  # original keys: the references stand, those to rows not released emptied
        kept = released[link.column].where(released[link.column].isin(new_keys))
        return kept.astype(dtype) if len(kept) else kept
    source = np.asarray(release.original_position)
    parents = parent_rows(frame[table.primary_key], frame[link.column])
    levels = depths(parents)
    target = np.full(len(released), -1, dtype=np.int64)
    if link.method == "original_order":
        released_row = np.full(len(frame), -1, dtype=np.int64)
        released_row[source] = np.arange(len(source))
        up = parents[source]
        target[up >= 0] = released_row[up[up >= 0]]
    else:
        children = np.bincount(parents[parents >= 0], minlength=len(frame))
        level, slots = levels[source], children[source]
        for depth in range(1, int(levels.max(initial=0)) + 1):
            rows = np.flatnonzero(level == depth)
            above = np.flatnonzero(level == depth - 1)
            places = np.repeat(above, slots[above])  # as many places as the level below has rows
            target[rows] = places[rng.permutation(len(places))]
    values = np.full(len(released), None, dtype=object)
    values[target >= 0] = new_keys.to_numpy(dtype=object)[target[target >= 0]]
    return pd.Series(values, index=released.index).astype(dtype)


def release_depths(table, frame: pd.DataFrame, column: str) -> np.ndarray:
    """The depth of each row of a (released) table in its hierarchy ``column``: -1 in or below a cycle."""
    return depths(parent_rows(frame[table.primary_key], frame[column]))
