"""Exact comparison of values, as the release audit needs it (the R ``kanonvrf`` reference).

Two values are one value only when they are stored equal: missing values (None, NaN, NaT, pandas.NA)
are one value of their own; ``-0.0`` and ``0.0`` are one value, ``0.1 + 0.2`` and ``0.3`` two;
timestamps compare by instant, categoricals by label. :func:`exact_codes` numbers the values of a
column accordingly; :func:`uncomparable_reason` says why a column cannot be compared exactly.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import numbers
import uuid

import numpy as np
import pandas as pd

from relanon.common.errors import format_examples

# infer_dtype kinds whose values all compare exactly with one another
_HOMOGENEOUS_KINDS = frozenset(
    {
        "empty",
        "string",
        "bytes",
        "integer",
        "floating",
        "mixed-integer-float",
        "decimal",
        "complex",
        "boolean",
        "date",
        "time",
        "timedelta",
        "timedelta64",
        "period",
        "interval",
        "datetime64",
    }
)
CONTAINERS = (list, tuple, dict, set, frozenset, bytearray, np.ndarray, pd.Series, pd.DataFrame, pd.Index)
_NESTED_ARROW = ("list", "large_list", "fixed_size_list", "struct", "map", "dictionary<values=list")


def _kind(value_type: type) -> str | None:
    """The kind of the values of a type, for deciding whether an object column compares exactly."""
    kinds = (
        ((str, np.str_), "text"),
        ((bytes, np.bytes_), "bytes"),
        ((bool, np.bool_), "boolean"),
        ((numbers.Number, decimal.Decimal, fractions.Fraction), "number"),
        ((datetime.datetime, np.datetime64), "timestamp"),
        ((datetime.date,), "date"),
        ((datetime.time,), "time of day"),
        ((datetime.timedelta, np.timedelta64), "duration"),
        ((pd.Period,), "period"),
        ((pd.Interval,), "interval"),
        ((uuid.UUID,), "uuid"),
    )
    return next((kind for bases, kind in kinds if issubclass(value_type, bases)), None)


def _timestamp_kind(value) -> str:
    naive = isinstance(value, np.datetime64) or value.tzinfo is None
    return "naive timestamp" if naive else "timezone-aware timestamp"


def uncomparable_reason(values: pd.Series | pd.Index) -> str | None:
    """Why the values of a column cannot be compared exactly, or ``None`` when they can.

    A column is refused when it holds containers (lists, dicts, sets...), values without a
    value-based equality, nested Arrow values, timestamps with and without a timezone, or values of
    different kinds that would be confused with one another (``1`` and ``"1"``, ``True`` and ``1``):
    their classes would then depend on how each value happens to be stored. Values of different
    kinds that cannot be confused (``"a"`` and ``7``) are simply different values.

    Examples
    --------
    >>> uncomparable_reason(pd.Series(["a", "b"])) is None
    True
    >>> print(uncomparable_reason(pd.Series([[1], [2]])))
    holds lists (e.g. [1], [2]), which have no single exact value: split them into columns or convert them to text
    """
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return uncomparable_reason(dtype.categories)
    if isinstance(dtype, pd.ArrowDtype) and str(dtype.pyarrow_dtype).startswith(_NESTED_ARROW):
        return (
            f"holds nested Arrow values ({dtype.pyarrow_dtype}), which have no single exact value: "
            "split them into columns"
        )
    if dtype != object or pd.api.types.infer_dtype(values, skipna=True) in _HOMOGENEOUS_KINDS:
        return None
    present = pd.Series(np.asarray(values, dtype=object))
    present = present[~pd.isna(present)]
    types = present.map(type)
    containers = types.isin([t for t in pd.unique(types) if issubclass(t, CONTAINERS)])
    if containers.any():
        bad = present[containers]
        names = sorted({type(v).__name__ + "s" for v in bad.iloc[:100]})
        return (
            f"holds {' and '.join(names)} (e.g. {format_examples(bad.iloc[:3])}), which have no single "
            "exact value: split them into columns or convert them to text"
        )
    kinds = types.map({t: _kind(t) for t in pd.unique(types)})
    unknown = present[kinds.isna()]
    if len(unknown):
        return (
            f"holds values of type {type(unknown.iloc[0]).__name__} (e.g. {format_examples(unknown.iloc[:3])}) "
            "that have no exact comparison: convert the column to text (astype(str)) or to numbers"
        )
    uniques: dict[str, list] = {}
    for kind in sorted(pd.unique(kinds)):
        # one kind at a time: hashing all values together would merge True with 1 unseen
        try:
            distinct = pd.unique(present[kinds == kind])
        except TypeError as exc:
            return f"holds {kind} values that cannot be compared ({exc}): convert the column to text (astype(str))"
        for value in distinct:
            uniques.setdefault(_timestamp_kind(value) if kind == "timestamp" else kind, []).append(value)
    return _mixed_kinds_reason(uniques)


def _mixed_kinds_reason(uniques: dict[str, list]) -> str | None:
    """Values of different kinds are refused only when some would be confused across kinds."""
    kinds = sorted(uniques)
    if len(kinds) < 2:
        return None
    if "naive timestamp" in kinds and "timezone-aware timestamp" in kinds:
        return (
            "mixes timestamps with and without a timezone, which name no common instant: "
            "localize the naive ones (tz_localize) or drop the timezones"
        )
    equal_seen: dict = {}
    text_seen: dict = {}
    for kind in kinds:
        for value in uniques[kind]:
            for seen, probe in ((equal_seen, value), (text_seen, str(value))):
                other = seen.get(probe)
                if other is not None and other[0] != kind:
                    return (
                        f"mixes {' and '.join(kinds)} values that look alike across kinds "
                        f"({other[1]!r} and {value!r}): their classes would depend on how each value "
                        "is stored; convert the column to a single type"
                    )
                seen.setdefault(probe, (kind, value))
    return None


def exact_codes(values: pd.Series, *, sort: bool = False) -> tuple[np.ndarray, int]:
    """Integer codes such that two rows share a code exactly when their values are equal.

    Missing values (None, NaN, NaT, pandas.NA, a missing categorical level) share one code of their
    own, the last one. The caller checks comparability first (:func:`uncomparable_reason`).

    Parameters
    ----------
    values : pandas.Series
    sort : bool
        Number the values in their sorted order (missing last) instead of their order of first
        appearance; values of kinds that cannot be ordered keep their order of appearance.

    Returns
    -------
    codes : numpy.ndarray of int64
    n_codes : int
        Number of distinct codes (missing included).

    Examples
    --------
    >>> codes, n = exact_codes(pd.Series([0.1 + 0.2, 0.3, -0.0, 0.0, None]))
    >>> codes.tolist(), n
    ([0, 1, 2, 2, 3], 4)
    """
    try:
        codes, uniques = pd.factorize(values, sort=sort, use_na_sentinel=True)
    except TypeError:
        codes, uniques = pd.factorize(values, sort=False, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    n_codes = len(uniques)
    missing = codes < 0
    if missing.any():
        codes = np.where(missing, n_codes, codes)
        n_codes += 1
    return codes, n_codes


def row_per_code(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """A row holding each code (-1 for an absent code); any one will do, their values are equal."""
    rows = np.full(n_codes, -1, dtype=np.int64)
    rows[codes] = np.arange(len(codes))
    return rows
