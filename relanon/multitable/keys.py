"""New keys for a release: fresh primary keys of the same kind as the originals, none equal to the
key of the record its row comes from.
"""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd


def new_keys(original: pd.Series, source_keys: np.ndarray, rng: np.random.Generator) -> pd.Series:
    """Fresh primary keys of the same kind as ``original``, none equal to its row's source key.

    Integer keys become 1..n; text keys shaped like ``P0001`` keep their prefix and width (``RX-1`` to
    ``RX-3000``, of no fixed width, stay unpadded); other text
    keys become random UUIDs drawn from ``rng``. Rows are already shuffled, so the order of the new keys
    says nothing about the originals.
    """
    n = len(source_keys)
    if pd.api.types.is_integer_dtype(original.dtype):
        keys = np.arange(1, n + 1, dtype="int64")
    else:
        keys = _text_keys(original, n, rng)
    keys = avoid_source_keys(keys, source_keys, rng)
    return pd.Series(keys, dtype=original.dtype if n else original.dtype)


def _text_keys(original: pd.Series, n: int, rng: np.random.Generator) -> np.ndarray:
    values = original.dropna().astype(str)
    shape = values.str.extract(r"^(\D*)(\d+)$")
    prefixes = shape[0].dropna().unique()
    if len(values) and shape[1].notna().all() and len(prefixes) == 1:
        lengths = shape[1].str.len()
        width = key_width(int(lengths.max()), int(lengths.min()), bool(shape[1].str.match(r"0\d").any()), n)
        return np.array([f"{prefixes[0]}{i:0{width}d}" for i in range(1, n + 1)], dtype=object)
    return np.array([str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n)], dtype=object)


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
