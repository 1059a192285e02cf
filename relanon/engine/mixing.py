"""The numbers of an avatar: a weighted mean of records' values moved towards one of them (docs/method.md, "Decoding").

Shared by the avatar decoding (:mod:`relanon.engine.avatar`: the neighbours, moved towards the drawn
neighbour) and the decoding of sensitive numbers (:mod:`relanon.engine.private_values`: look-alikes,
moved towards one of them). Every step is a computation within one row, so rows mixed in chunks give
the same bytes as rows mixed at once, given the same ``all_present``.
"""

from __future__ import annotations

import numpy as np

# Share of the way from the weighted mean to the value moved towards (see avatar_numbers.numeric_avatar).
SPREAD = 0.5
# Largest factor by which :func:`restored_spread` stretches a mix away from its neighbourhood's mean.
MAX_STRETCH = 3.0


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


def restored_spread(mixed: np.ndarray, values: np.ndarray, indices: np.ndarray, weights: np.ndarray,
                    low: float, high: float, stretch: np.ndarray | None = None) -> np.ndarray:
    """``mixed`` (from :func:`mixed_numbers`) moved away from its neighbourhood's plain mean ``m`` so that it
    varies around ``m`` as much as one neighbour does: ``m + c * (mixed - m)``, kept within ``[low, high]`` (the
    column's range: a batch's rows are bounded by the whole table's).

    A mix ``sum_j v_j x_j`` of ``k`` exchangeable values around their mean has the variance of one of them times
    ``(k * sum_j v_j**2 - 1) / (k - 1)``, less than 1 for any mix that is not a single record: the convex mix loses
    part of the within-neighbourhood variance, and the column's spread shrinks (a standard deviation ratio of
    0.78 for the demo's visit dates). ``c = sqrt((k - 1) / (k * S - 1))`` with ``S`` the expected ``sum_j v_j**2``
    of the mix moved towards a drawn neighbour, ``(1 - SPREAD**2) * sum_j w_j**2 + SPREAD**2``, gives it back (at
    most :data:`MAX_STRETCH`). The same ``c`` and ``m`` for every column of a row, so linear equalities between
    columns still hold; an order between two columns may not (the avatar keeps the mix of a row where it would
    reverse). Rows whose neighbours miss a value keep their mix. ``stretch``, the rows' ``c``
    (:func:`spread_factors` of ``weights``), is computed once for the columns of a table when given.

    Examples
    --------
    >>> values = np.array([0.0, 10.0, 20.0, 30.0])
    >>> restored_spread(np.array([14.0]), values, np.array([[0, 1, 2, 3]]), np.full((1, 4), 0.25), 0.0, 30.0).tolist()
    [13.0]
    """
    if indices.shape[1] < 2:
        return mixed
    around = values[indices]
    present = ~np.isnan(around)
    stretch = spread_factors(weights) if stretch is None else stretch
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = np.where(present, around, 0.0).sum(axis=1) / present.sum(axis=1)
    out = np.where(present.all(axis=1) & ~np.isnan(mixed), centre + stretch * (mixed - centre), mixed)
    with np.errstate(invalid="ignore"):
        return np.clip(out, low, high)


def spread_factors(weights: np.ndarray) -> np.ndarray:
    """The factor ``c`` of :func:`restored_spread` of each row of ``weights`` (its ``k`` columns, ``k >= 2``).

    Examples
    --------
    >>> spread_factors(np.full((1, 4), 0.25)).tolist()
    [2.0]
    """
    k = weights.shape[1]
    squares = (1.0 - SPREAD**2) * np.einsum("ij,ij->i", weights, weights) + SPREAD**2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.minimum(np.sqrt((k - 1) / np.maximum(k * squares - 1.0, 1e-12)), MAX_STRETCH)
