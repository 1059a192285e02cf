"""The noise floor of a signal metric: what sampling alone does to it.

Two random halves of the *original* table are compared with the metric, as if one were the
original and the other its release; the figure, averaged over a few seeded splits, is what a
perfect release of a table of this size could not avoid: 20 rows with a Hellinger distance of 0.25
are fine when two halves of the table differ by 0.24, 20,000 rows with 0.25 are not.

:func:`noise_floor` takes the metric as a function of two sets of row positions, so that the caller
decides what a half is: rows of a table here, parents with their children for a link.

A metric then passes when it is on the good side of its target, or within its floor plus a margin
(:func:`quadrature_margin`): the loss of a release adds to its sampling noise roughly in
quadrature, so a release passes when its own loss, beyond what the halves show, is under target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple

import numpy as np

DEFAULT_SPLITS = 5
NOISE_FLOOR_SEED = 0
MIN_ROWS = 4  # two rows per half at least


class NoiseFloor(NamedTuple):
    """The mean of a metric over random half-versus-half splits, with its spread.

    ``value`` and ``spread`` are floats, or dicts of floats when the metric returns a mapping
    (one floor per column, say); NaN when the table is too small to be halved.
    """

    value: float | dict
    spread: float | dict
    splits: int


def half_splits(n: int, splits: int = DEFAULT_SPLITS, random_state=NOISE_FLOOR_SEED) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``splits`` seeded pairs of disjoint halves of ``range(n)`` (sorted positions, ``n // 2`` each).

    Examples
    --------
    >>> a, b = next(half_splits(5, random_state=0))
    >>> len(a), len(b), set(a) & set(b)
    (2, 2, set())
    """
    rng = np.random.default_rng(random_state)
    half = n // 2
    for _ in range(splits):
        order = rng.permutation(n)
        yield _sorted_positions(order[:half], n), _sorted_positions(order[half:2 * half], n)


def _sorted_positions(positions: np.ndarray, n: int) -> np.ndarray:
    """Distinct positions among ``range(n)``, sorted: marked and read back in one pass rather than sorted."""
    marked = np.zeros(n, dtype=bool)
    marked[positions] = True
    return np.flatnonzero(marked)


def noise_floor(metric: Callable, n: int, *, splits: int = DEFAULT_SPLITS, random_state=NOISE_FLOOR_SEED) -> NoiseFloor:
    """Average of ``metric(first_half, second_half)`` over ``splits`` random halves of ``n`` rows.

    Parameters
    ----------
    metric : callable
        ``metric(positions_a, positions_b)`` -> float, or a mapping of floats; ``positions_a`` plays
        the original, ``positions_b`` the release. NaN values are left out of the average.
    n : int
        Number of rows (or parents, or any unit the caller halves).
    splits : int
        Number of random splits averaged.
    random_state : int or Generator
        Seed of the splits: the same seed gives the same floor.

    Examples
    --------
    The mean of a standard normal sample of n values moves by about ``sqrt(4 / n)`` between two
    halves (each half's mean has variance 2 / n):

    >>> x = np.random.default_rng(1).normal(size=40_000)
    >>> floor = noise_floor(lambda a, b: abs(x[a].mean() - x[b].mean()), len(x), splits=50)
    >>> 0.005 < floor.value < 0.012   # E|N(0, 4 / n)| = sqrt(2 / pi) * 0.01 = 0.008
    True
    """
    if n < MIN_ROWS:
        return NoiseFloor(math.nan, math.nan, 0)
    results = [metric(a, b) for a, b in half_splits(n, splits, random_state)]
    if results and isinstance(results[0], Mapping):
        keys = list(results[0])
        stats = {key: _mean_spread([r.get(key, math.nan) for r in results]) for key in keys}
        return NoiseFloor({k: s[0] for k, s in stats.items()}, {k: s[1] for k, s in stats.items()}, splits)
    mean, spread = _mean_spread(results)
    return NoiseFloor(mean, spread, splits)


def _mean_spread(values) -> tuple[float, float]:
    finite = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    if finite.size == 0:
        return math.nan, math.nan
    return float(finite.mean()), float(finite.std())


def quadrature_margin(floor: float, target: float) -> float:
    """The margin above a floor within which a distance-like metric still passes.

    Sampling noise and the loss of a release add roughly in quadrature (squared Hellinger
    distances of small independent perturbations add, as do variances of correlation errors), so
    a value ``v`` is read as a loss of ``sqrt(v**2 - floor**2)``; it passes when that loss is under
    the target, i.e. ``v <= sqrt(floor**2 + target**2) = floor + margin``. On a large table (floor
    near 0) this is the target itself; on 20 rows with a floor of 0.24 and a target of 0.1, any
    value up to 0.26 passes.

    Examples
    --------
    >>> round(quadrature_margin(0.24, 0.1), 3), quadrature_margin(0.0, 0.1)
    (0.02, 0.1)
    """
    if floor is None or math.isnan(floor):
        return math.nan
    return math.sqrt(floor**2 + target**2) - floor
