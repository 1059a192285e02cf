"""New keys for a release: fresh primary keys of the same kind as the originals, none equal to the
key of the record its row comes from, for a whole table or batch by batch.

A released table may be written batch after batch (the Dask engine); its row ``r`` (counted over all
batches) gets the key the whole-table run gives its row ``r``: ``r + 1`` for integer keys, ``P00..0{r + 1}``
for text keys of one shape (prefix and digits, padded to a width only when the originals are), a random
UUID otherwise. The shape of the original keys is read batch by batch (:func:`key_shape`,
:func:`merge_key_shapes`); a row whose new key would equal the key of the record it comes from swaps keys
within its batch (keys are unique over the table, so a swap within a batch never makes a duplicate).
:func:`new_keys` is :func:`batch_keys` on one batch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np
import pandas as pd


def new_keys(original: pd.Series, source_keys: np.ndarray, rng: np.random.Generator) -> pd.Series:
    """Fresh primary keys of the same kind as ``original``, none equal to its row's source key.

    Integer keys become 1..n; text keys shaped like ``P0001`` keep their prefix and width (``RX-1`` to
    ``RX-3000``, of no fixed width, stay unpadded); other text
    keys become random UUIDs drawn from ``rng``. Rows are already shuffled, so the order of the new keys
    says nothing about the originals.
    """
    return batch_keys(key_shape(original), original.dtype, 0, source_keys, len(source_keys), rng)


@dataclass(frozen=True)
class KeyShape:
    """What the new keys of a table look like, read from its original keys."""

    integer: bool
    values: int = 0  # present text keys
    shaped: bool = True  # every text key is a prefix followed by digits
    prefixes: tuple = ()  # distinct prefixes (two at most are kept: more than one means no shape)
    digits: int = 0  # the longest run of digits
    shortest: int = 0  # the shortest run of digits
    leading_zero: bool = False  # some key's digits start with a 0: the keys are padded


def key_shape(original: pd.Series) -> KeyShape:
    """The shape of a batch of original keys.

    Examples
    --------
    >>> key_shape(pd.Series(["P001", "P017"], dtype=object))
    KeyShape(integer=False, values=2, shaped=True, prefixes=('P',), digits=3, shortest=3, leading_zero=True)
    """
    if pd.api.types.is_integer_dtype(original.dtype):
        return KeyShape(integer=True)
    values = original.dropna().astype(str)
    shape = values.str.extract(r"^(\D*)(\d+)$")
    prefixes = tuple(sorted(shape[0].dropna().unique()))[:2]
    lengths = shape[1].dropna().str.len()
    digits, shortest = (int(lengths.max()), int(lengths.min())) if len(lengths) else (0, 0)
    return KeyShape(False, len(values), bool(shape[1].notna().all()), prefixes, digits, shortest,
                    bool(shape[1].str.match(r"0\d").fillna(False).any()))


def merge_key_shapes(a: KeyShape, b: KeyShape) -> KeyShape:
    if a.integer or b.integer:
        return KeyShape(integer=True)
    shortest = min((s for s in (a.shortest, b.shortest) if s), default=0)  # 0: a batch without digits
    return KeyShape(False, a.values + b.values, a.shaped and b.shaped, tuple(sorted(set(a.prefixes) | set(b.prefixes)))[:2],
                    max(a.digits, b.digits), shortest, a.leading_zero or b.leading_zero)


def batch_keys(shape: KeyShape, dtype, offset: int, source_keys: np.ndarray, n_total: int,
               rng: np.random.Generator) -> pd.Series:
    """The new keys of the released rows ``offset .. offset + len(source_keys) - 1`` of a table of
    ``n_total`` rows, none equal to the key of the record its row comes from (``source_keys``).

    Examples
    --------
    >>> batch_keys(KeyShape(integer=True), np.dtype("int64"), 3, np.array([4, 9]), 5, np.random.default_rng(0)).tolist()
    [5, 4]
    """
    n = len(source_keys)
    if shape.integer:
        keys = np.arange(offset + 1, offset + n + 1, dtype="int64")
    elif shape.values and shape.shaped and len(shape.prefixes) == 1:
        width = key_width(shape.digits, shape.shortest, shape.leading_zero, n_total)
        keys = np.array([f"{shape.prefixes[0]}{i:0{width}d}" for i in range(offset + 1, offset + n + 1)], dtype=object)
    else:
        keys = np.array([str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n)], dtype=object)
    return pd.Series(avoid_source_keys(keys, source_keys, rng), dtype=dtype)


def key_width(longest: int, shortest: int, leading_zero: bool, n: int) -> int:
    """The number of digits new text keys are padded to: the originals' fixed width when they have one
    (``P0001``, or ``A100`` to ``A999``), none when their numbers are written as they are (``RX-1`` to
    ``RX-3000`` stay unpadded, never ``RX-0001``).

    Examples
    --------
    >>> key_width(4, 4, True, 50), key_width(4, 1, False, 3000), key_width(3, 3, False, 5000)
    (4, 0, 4)
    """
    return max(longest, len(str(n))) if leading_zero or longest == shortest else 0


def avoid_source_keys(keys: np.ndarray, source_keys: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Permute keys so that no row keeps the key of the record it comes from.

    Rotating the keys among the colliding rows removes every collision (keys are unique, so a row
    never receives its own source key from another colliding row); a single collision is swapped with
    a random other row.
    """
    keys = keys.copy()
    clash = np.flatnonzero(keys == source_keys)
    if len(clash) >= 2:
        keys[clash] = keys[np.roll(clash, -1)]
    elif len(clash) == 1 and len(keys) > 1:
        other = (clash[0] + 1 + rng.integers(len(keys) - 1)) % len(keys)
        keys[[clash[0], other]] = keys[[other, clash[0]]]
    return keys
