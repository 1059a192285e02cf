"""Equivalence classes: the rows that share the same values on the quasi-identifiers.

Every audit measure reads the classes of a table: a class id per row (numbered by first appearance),
the class sizes and the first row of each class. Values are compared exactly
(:mod:`relanon.common.exact`): a missing value is a value of its own, ``-0.0`` and ``0.0`` are one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relanon.common.errors import AuditError, ParameterError, format_examples
from relanon.common.exact import exact_codes, uncomparable_reason
from relanon.common.options import check_integer

SIZE_COLUMN = ".n"
"""Name of the class-size column of ``violating_classes`` (as in the R ``kanonvrf`` reference)."""


def first_appearances(ids: np.ndarray) -> np.ndarray:
    """Row of the first appearance of each id, for ids numbered by first appearance (0, 1, 2...)."""
    return np.flatnonzero(np.diff(np.maximum.accumulate(ids), prepend=-1) > 0)


def combine_codes(codes: np.ndarray, more: np.ndarray, n_more: int) -> tuple[np.ndarray, int]:
    """Codes of the pairs (codes, more), renumbered by first appearance."""
    pairs = codes * n_more + more  # both < number of rows, so the product fits in int64
    combined, uniques = pd.factorize(pairs)
    return combined.astype(np.int64, copy=False), len(uniques)


@dataclass(frozen=True, eq=False)
class Classes:
    """The equivalence classes of a table: a class id per row, sizes, first row of each class."""

    ids: np.ndarray
    sizes: np.ndarray
    first_rows: np.ndarray

    @property
    def n(self) -> int:
        return len(self.sizes)


def quasi_identifier_list(quasi_identifiers) -> list[str]:
    if isinstance(quasi_identifiers, str):
        return [quasi_identifiers]
    if not isinstance(quasi_identifiers, Sequence | pd.Index | np.ndarray) or isinstance(quasi_identifiers, bytes):
        raise ParameterError(
            f"quasi_identifiers must be a column name or a list of column names, got {quasi_identifiers!r}"
        )
    names = list(quasi_identifiers)
    if not names:
        raise ParameterError("give at least one quasi-identifier column (quasi_identifiers is empty)")
    duplicated = sorted({str(n) for n in names if names.count(n) > 1})
    if duplicated:
        raise ParameterError(f"quasi-identifiers listed twice: {', '.join(duplicated)}; list each once")
    return names


def check_columns(table: pd.DataFrame, columns: list, role: str, where: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"the {where} must be a pandas DataFrame, got {type(table).__name__}")
    unknown = [c for c in columns if c not in table.columns]
    if unknown:
        available = ", ".join(map(str, table.columns)) or "none"
        raise AuditError(
            f"{role} {format_examples(unknown)} not found in the {where}; available columns: {available}"
        )
    repeated = [c for c in columns if isinstance(table[c], pd.DataFrame)]
    if repeated:
        raise AuditError(
            f"column {repeated[0]!r} appears more than once in the {where}; rename the copies so that "
            "each column has one name"
        )
    for column in columns:
        reason = uncomparable_reason(table[column])
        if reason is not None:
            raise AuditError(f"column {column!r} of the {where} cannot be compared exactly: it {reason}")


def equivalence_classes(table: pd.DataFrame, quasi_identifiers: list) -> Classes:
    n = len(table)
    ids, n_ids = np.zeros(n, dtype=np.int64), 1
    for column in quasi_identifiers:
        codes, n_codes = exact_codes(table[column])
        ids, n_ids = combine_codes(ids, codes, n_codes)
    if n == 0:
        return Classes(ids, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    return Classes(ids, np.bincount(ids, minlength=n_ids), first_appearances(ids))


def class_keys(table: pd.DataFrame, quasi_identifiers: list, rows: np.ndarray) -> pd.DataFrame:
    return table[quasi_identifiers].iloc[rows].reset_index(drop=True)


def positive_int(value, name: str, minimum: int = 1) -> int:
    return check_integer(value, name, minimum)


