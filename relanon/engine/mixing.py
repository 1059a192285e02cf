"""The numbers of an avatar: a weighted mean of records' values moved towards one of them (DESIGN 2.4).

Shared by the avatar decoding (:mod:`relanon.engine.avatar`: the neighbours, moved towards the drawn
neighbour) and the decoding of sensitive numbers (:mod:`relanon.engine.private_values`: look-alikes,
moved towards one of them). Every step is a computation within one row, so rows mixed in chunks give
the same bytes as rows mixed at once, given the same ``all_present``.
"""

from __future__ import annotations

import numpy as np

# Share of the way from the weighted mean to the value moved towards (see avatar._numeric_avatar).
SPREAD = 0.5


def mixed_numbers(values: np.ndarray, indices: np.ndarray, weights: np.ndarray, towards: np.ndarray,
                  all_present: bool | None = None) -> np.ndarray:
    """``(1 - SPREAD) * mean + SPREAD * towards`` per row, ``mean`` the ``weights``-weighted mean of the
    present ``values[indices]`` (``towards`` missing: the mean alone), kept between the row's smallest
    and largest present value (rounding drift removed: a constant stays exact).

    ``all_present`` says whether every value of ``values[indices]`` is present (default: looked at).
    Rows mixed in chunks take the answer of all their rows: it chooses the arithmetic (with missing
    values, each mean is divided by its present weights' sum), and so the last bit of every row.

    Examples
    --------
    >>> mixed_numbers(np.array([0.0, 10.0, 20.0]), np.array([[0, 1, 2]]), np.array([[0.5, 0.25, 0.25]]),
    ...               np.array([10.0])).tolist()
    [8.75]
    """
    around = values[indices]
    present = ~np.isnan(around)
    if present.all() if all_present is None else all_present:
        mean = np.einsum("ij,ij->i", weights, around)
        low, high = around.min(axis=1), around.max(axis=1)
    else:
        kept = weights * present
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.einsum("ij,ij->i", kept, np.where(present, around, 0.0)) / kept.sum(axis=1)
        low = np.where(present, around, np.inf).min(axis=1)
        high = np.where(present, around, -np.inf).max(axis=1)
    # moved towards one record: the same convex mix for every column, so linear rules hold
    mean = np.where(np.isnan(towards), mean, (1.0 - SPREAD) * mean + SPREAD * towards)
    # a weighted mean lies between its values; clipping removes rounding drift (a constant stays exact)
    with np.errstate(invalid="ignore"):
        return np.clip(mean, low, high)
