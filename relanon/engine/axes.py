"""How many axes the neighbour search uses: ``ncp: auto``.

The factor space keeps the fewest leading axes that reach a share of the total inertia, never
ending inside a group of equal eigenvalues, and no more than the exact neighbour search affords on
the table's number of rows.
"""

from __future__ import annotations

import logging

import numpy as np

logger = logging.getLogger(__name__)

# ncp = "auto": the fewest axes whose eigenvalues reach this share of the total inertia, never
# ending inside a group of eigenvalues equal up to TIE_TOLERANCE (relative): the axes of such a
# group are one arbitrary basis of its eigenspace, and neighbours found in part of it would depend
# on the solver. The share comes from measurements (benchmarks/fidelity.py, docs/method.md):
# the axes left out are those of least inertia, and among them is the difference of two correlated
# columns; neighbours that do not agree on it average it away and the avatars' correlations
# inflate (age and BMI at r = 0.66 become 0.82 with 2, 3 or 4 of 5 axes, 0.69 with all 5; the
# correlation difference of the generated twelve-column table is 6.4 at 50 %, 5.5 at 95 %; of the
# demo doctors 6.7 and 3.0), for hidden rates within a few points.
AUTO_INERTIA_SHARE = 0.95
TIE_TOLERANCE = 1e-6
# ...and at most as many axes as the exact neighbour search (a k-d tree) affords on the table:
# without structure, its cost grows steeply with the axes (measured on this project's 2-core
# machine, benchmarks/avatar_speed.py table: 100,000 rows take 1.4 s in 5 axes, 22 s in 10,
# 130 s in 15; 10,000 rows 7 s in 41). rows * axes is kept under NEIGHBOUR_BUDGET: 10,000 rows
# get up to 30 axes, 30,000 rows 10, 60,000 rows and more MIN_AUTO_AXES. An explicit ncp is not capped.
MIN_AUTO_AXES = 5
MAX_AUTO_AXES = 100
NEIGHBOUR_BUDGET = 300_000


def max_auto_axes(n_rows: int) -> int:
    """The most axes ``ncp: auto`` keeps on a table of ``n_rows`` rows (see ``NEIGHBOUR_BUDGET``).

    Examples
    --------
    >>> max_auto_axes(1_000), max_auto_axes(10_000), max_auto_axes(30_000), max_auto_axes(1_000_000)
    (100, 30, 10, 5)
    """
    return int(min(MAX_AUTO_AXES, max(MIN_AUTO_AXES, NEIGHBOUR_BUDGET // max(n_rows, 1))))


def tied_eigenvalues(a: float, b: float) -> bool:
    """Two eigenvalues equal up to ``TIE_TOLERANCE`` (relative): their axes span one eigenspace."""
    return abs(a - b) <= TIE_TOLERANCE * max(abs(a), abs(b))


def auto_axes(eigenvalues, total_inertia: float, *, share: float | None = None, cap: int = MAX_AUTO_AXES,
              complete: bool = True) -> int:
    """The number of axes ``ncp: auto`` keeps.

    The fewest leading axes whose eigenvalues reach ``share`` (default ``AUTO_INERTIA_SHARE``) of
    ``total_inertia``, at most ``cap``. When the last of them belongs to a group of equal
    eigenvalues (relative ``TIE_TOLERANCE``), the whole group is kept if it fits under ``cap``,
    and none of it otherwise, so that the axes kept span the same space whichever basis of the
    group the solver returned. ``eigenvalues`` are the leading ones, decreasing, one beyond
    ``cap`` when there are more; ``complete`` says they are all of them.

    Examples
    --------
    Three equal eigenvalues after a first one: reaching 50 % needs two axes, which would cut the
    group; the group fits under the cap, so all four are kept; under a cap of 3, only the first:

    >>> auto_axes([4.0, 1.0, 1.0, 1.0, 0.5], 10.0, share=0.5)
    4
    >>> auto_axes([4.0, 1.0, 1.0, 1.0, 0.5], 10.0, share=0.5, cap=3, complete=False)
    1
    """
    eigenvalues = np.asarray(eigenvalues, dtype=np.float64)
    if eigenvalues.size == 0:
        return 0
    share = AUTO_INERTIA_SHARE if share is None else share
    reached = np.cumsum(eigenvalues) >= share * total_inertia * (1 - 1e-12)
    kept = int(np.argmax(reached)) + 1 if reached.any() else len(eigenvalues)
    kept = min(kept, cap, len(eigenvalues))
    if kept == len(eigenvalues) or not tied_eigenvalues(eigenvalues[kept - 1], eigenvalues[kept]):
        return kept
    start = kept - 1
    while start > 0 and tied_eigenvalues(eigenvalues[start - 1], eigenvalues[start]):
        start -= 1
    end = kept  # one past the group's last known axis
    while end < len(eigenvalues) and tied_eigenvalues(eigenvalues[end - 1], eigenvalues[end]):
        end += 1
    group_known_to_end = end < len(eigenvalues) or complete
    if group_known_to_end and end <= cap:
        return end
    if start > 0:
        return start
    logger.warning(
        "the leading %d+ eigenvalues are equal (%.6g): more axes than the %d allowed would be needed to keep "
        "them all; the %d kept are one basis of that eigenspace", end, eigenvalues[0], cap, cap,
    )
    return cap
