"""Plain, JSON-ready data from results: numpy scalars to Python, NaN to ``None``, matrices to dicts.

One rule for every result's ``to_dict`` (evaluation, assessment), so that ``metrics.json`` spells a
missing figure and a numpy number the same way whichever result wrote it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def plain(value):
    """``value`` with nested dicts, lists and numpy scalars made plain; NaN becomes ``None``.

    Examples
    --------
    >>> plain({"a": np.float64("nan"), "b": [np.int64(2), (1.5,)], 3: np.bool_(True)})
    {'a': None, 'b': [2, [1.5]], '3': True}
    """
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def matrix_dict(frame: pd.DataFrame) -> dict:
    """A matrix as ``{row: {column: value}}``: missing cells ``None``, flags ``bool``.

    Examples
    --------
    >>> matrix_dict(pd.DataFrame({"a": [1.0, None]}, index=["x", "y"]))
    {'x': {'a': 1.0}, 'y': {'a': None}}
    """
    return {
        str(row): {str(c): (None if pd.isna(v) else (bool(v) if isinstance(v, bool | np.bool_) else v))
                   for c, v in frame.loc[row].items()}
        for row in frame.index
    }
