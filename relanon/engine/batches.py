"""The avatar method in batches: one factor space for the whole table, neighbours within random batches.

A table too large for one machine is avatarized the way the method's authors scale it out: its factor
space is fitted once, on all its rows (:mod:`relanon.engine.space_statistics` reduces its statistics
over partitions), then its rows are split into random batches of about ``batch_size`` rows, and each
batch is avatarized on its own in that shared space: a record's neighbours are searched among the
records of its batch (:func:`relanon.engine.avatar.avatarize` with ``space=``).

What it costs: a batch holds a ``1 / n_batches`` share of the records, so neighbours lie farther apart
than in the whole table; avatars mix less similar records (a little less faithful, a little more
private). ``benchmarks/batching_cost.py`` measures it (docs/guide/dask.md, docs/benchmarks.md); its
figures set :data:`DEFAULT_BATCH_SIZE`.

Batches are drawn without collecting the rows: each partition of the table spreads its rows at random
over the batches, round robin over the table's positions (:func:`assign_batches`), so the batches'
sizes differ by one row at most and each batch is a random sample of every partition. With a single
batch, the batch is the table in its order, avatarized exactly as the local engine does.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from relanon.common.options import check_integer

DEFAULT_BATCH_SIZE = 200_000
"""Rows per batch unless told (see the module documentation and the measurements in docs/benchmarks.md)."""

MIN_BATCH_SIZE = 100
"""Fewest rows per batch (neighbours are searched within a batch; k is lowered to what the smallest batch allows)."""


def check_batch_size(batch_size) -> int:
    """``batch_size`` as an int, or a :class:`ParameterError` saying what is allowed."""
    return check_integer(batch_size, "batch size", MIN_BATCH_SIZE,
                         context=f" rows (neighbours are searched within a batch; the default is {DEFAULT_BATCH_SIZE:,})")


def batch_count(n_rows: int, batch_size: int) -> int:
    """Number of batches of a table: its rows split in batches of at most ``batch_size`` rows.

    Examples
    --------
    >>> batch_count(10, 200_000), batch_count(200_000, 200_000), batch_count(200_001, 200_000)
    (1, 1, 2)
    """
    return max(1, math.ceil(n_rows / batch_size))


def batch_sizes(n_rows: int, n_batches: int) -> np.ndarray:
    """Rows of each batch: batch ``b`` holds the table positions ``g`` with ``g % n_batches == b``.

    Examples
    --------
    >>> batch_sizes(10, 3).tolist()
    [4, 3, 3]
    """
    return np.array([(n_rows - b + n_batches - 1) // n_batches for b in range(n_batches)], dtype=np.int64)


def assign_batches(start: int, n_rows: int, n_batches: int, rng: np.random.Generator) -> np.ndarray:
    """The batch of each row of a partition holding the table positions ``start .. start + n_rows - 1``.

    The partition's positions are shuffled, then dealt round robin: each batch gets ``n_rows /
    n_batches`` of the partition's rows (give or take one) drawn at random, and over the whole table
    the batches' sizes are those of :func:`batch_sizes`.

    Examples
    --------
    >>> assign_batches(0, 6, 2, np.random.default_rng(0)).tolist().count(0)
    3
    """
    if n_batches == 1:
        return np.zeros(n_rows, dtype=np.int64)
    return (start + rng.permutation(n_rows)) % n_batches


def partition_generator(seed: np.random.SeedSequence, purpose: str, index: int) -> np.random.Generator:
    """The generator of one partition, batch or block, derived from a table's seed and its number: the
    same whatever the worker, the number of workers or the order in which tasks run."""
    key = (*seed.spawn_key, zlib.crc32(purpose.encode("utf-8")), int(index))
    return np.random.default_rng(np.random.SeedSequence(seed.entropy, spawn_key=key))


def rows_searched(n_rows: int, n_batches: int) -> int:
    """Rows among which neighbours are searched: the largest batch."""
    return int(batch_sizes(n_rows, n_batches)[0]) if n_rows else 0
