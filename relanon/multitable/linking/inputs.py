"""The inputs of the linking functions, checked: coordinates, counts, seeds and worker numbers,
with messages that say which argument is wrong and what was given.
"""

from __future__ import annotations

import os

import numpy as np

from relanon.common.errors import ParameterError, format_examples
from relanon.common.options import check_integer


def as_matrix(coords, name: str) -> np.ndarray:
    """Coordinates as a float matrix (one row per point); a vector is one coordinate per row."""
    try:
        points = np.asarray(coords, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ParameterError(f"{name} must be numeric coordinates: {error}") from None
    if points.ndim == 1:
        points = points[:, None]  # one coordinate per row
    if points.ndim != 2:
        raise ParameterError(f"{name} must be a 2-D array (rows x coordinates), got shape {points.shape}")
    if points.shape[1] == 0:  # no informative axis: every point sits at the origin
        points = np.zeros((len(points), 1))
    bad = np.flatnonzero(~np.isfinite(points).all(axis=1))
    if bad.size:
        raise ParameterError(
            f"{name} holds NaN or infinite coordinates in rows {format_examples(bad)}; "
            "impute or drop those rows before matching"
        )
    return points


def validated_counts(counts, n_parents: int, n_children: int) -> np.ndarray:
    """Children per parent: non-negative integers, one per parent, summing to the number of children."""
    values = as_int_vector(counts, "counts")
    if values.shape != (n_parents,):
        raise ParameterError(f"counts must give one count per parent ({n_parents}), got shape {values.shape}")
    negative = np.flatnonzero(values < 0)
    if negative.size:
        raise ParameterError(
            f"counts must be >= 0; parents {format_examples(negative)} have {format_examples(values[negative])}"
        )
    if int(values.sum()) != n_children:
        raise ParameterError(
            f"counts sum to {int(values.sum())} but there are {n_children} children; "
            "allocate them with allocate_counts(expected, n_children)"
        )
    return values


def as_int_vector(values, name: str) -> np.ndarray:
    """A 1-D vector of integers, or an error naming the argument."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ParameterError(f"{name} must be a 1-D array, got shape {array.shape}")
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    try:
        floats = array.astype(np.float64)
    except (TypeError, ValueError):
        raise ParameterError(
            f"{name} must hold whole numbers, got {format_examples(array[:5])} (dtype {array.dtype})"
        ) from None
    bad = np.flatnonzero(~np.isfinite(floats) | (floats != np.round(floats)))
    if bad.size:
        raise ParameterError(
            f"{name} must hold whole numbers; positions {format_examples(bad)} hold {format_examples(array[bad])}"
        )
    return floats.astype(np.int64)


def as_float_vector(values, name: str) -> np.ndarray:
    """A 1-D vector of floats, or an error naming the argument."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ParameterError(f"{name} must be numbers: {error}") from None
    if array.ndim != 1:
        raise ParameterError(f"{name} must be a 1-D array, got shape {array.shape}")
    return array


def as_count(value, name: str, minimum: int = 0) -> int:
    """A non-negative integer (at least ``minimum``), or an error naming the argument."""
    return check_integer(value, name, minimum)


def optional_count(value, name: str, minimum: int = 0) -> int | None:
    """``None``, or a count as :func:`as_count` checks it."""
    return None if value is None else as_count(value, name, minimum)


def optional_flag(value, name: str) -> bool | None:
    """``None``, ``True`` or ``False`` (numpy booleans too), or an error naming the argument."""
    if value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ParameterError(f"{name} must be True, False or None, got {value!r}")


def generator(random_state) -> np.random.Generator:
    """A numpy Generator from ``random_state``: an integer, a SeedSequence, a Generator, or None (fresh entropy)."""
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as error:
        raise ParameterError(
            f"random_state must be an integer, a numpy Generator or None, got {random_state!r} ({error})"
        ) from None


def worker_count(n_jobs) -> int:
    """Worker processes for ``n_jobs``, never more than the cores this process may use."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if n_jobs is None or n_jobs == -1:
        return cores
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0 or n_jobs < -1:
        raise ParameterError(f"n_jobs must be a positive integer, -1 or None, got {n_jobs!r}")
    return min(int(n_jobs), cores)


def link_coordinates(child_coords, parent_coords):
    children = as_matrix(child_coords, "child_coords")
    parents = as_matrix(parent_coords, "parent_coords")
    if children.shape[1] != parents.shape[1]:
        raise ParameterError(
            f"child_coords and parent_coords must lie in the same space, got {children.shape[1]} and "
            f"{parents.shape[1]} coordinates; project both with the factor space fitted on the parent"
        )
    if len(children) and not len(parents):
        raise ParameterError(f"cannot link {len(children)} children to no parent: parent_coords is empty")
    return children, parents


def slot_permutation(slot, n_children: int, n_slots: int) -> np.ndarray:
    slot = as_int_vector(slot, "slot").copy()
    if slot.shape != (n_children,) or n_slots != n_children or not np.array_equal(np.sort(slot), np.arange(len(slot))):
        raise ParameterError("slot must give each child a distinct slot: a permutation of 0 .. number of children - 1")
    return slot

