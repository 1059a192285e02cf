"""Where a link's candidates are found: the factor space of the parent's original columns, in which the
released parents and the released children's copy of their parent's columns are placed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.engine.factor_space import FactorSpace
from relanon.multitable.results import TableRelease
from relanon.schema.graph import Link
from relanon.schema.model import Table


def child_side(link: Link, original, child: TableRelease, parent_table: Table, columns: dict) -> pd.DataFrame:
    """The parent's columns as the released child rows see them (avatarized broadcast, or original)."""
    if child.enriched_avatars is not None:
        source = child.enriched_avatars
        names = child.internal_names
        return pd.DataFrame({c: source[names[("parent", link.column, c)]] for c in columns}, index=source.index)
    # a child released with its original rows: the parent's values through its original foreign key
    parent_frame = original[link.parent].set_index(parent_table.primary_key)
    keys = original[link.child][link.column].to_numpy()[child.original_position]
    return pd.DataFrame({c: parent_frame[c].reindex(keys).reset_index(drop=True) for c in columns})


def parent_space(parent_table: Table, parent_original, columns, rng):
    """The factor space of the parent's original columns, where parents and children are matched."""
    if not columns:
        return None
    weights = {c.name: c.weight for c in parent_table.released_columns if c.name in columns}
    # seeded: above DENSE_LIMIT coded columns (a parent with a high-cardinality column) the axes come
    # from Lanczos iterations whose start vector would otherwise change the links on every run
    return FactorSpace(columns, weights=weights, random_state=rng).fit(parent_original[list(columns)])


def project(space, frame, columns) -> np.ndarray:
    return np.empty((len(frame), 0)) if space is None else space.transform(frame[list(columns)])
