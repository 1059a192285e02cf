"""Rules across tables: what a link's child and parent columns owe each other, found in the data and checked.

Declared under a foreign key (``foreign_keys: [{column, references, rules: [...]}]``), four kinds:

- ``{rule: copy, column: billing_country, parent: country}``: the child's column equals its parent's
  (an invoice's billing country is its customer's country);
- ``{rule: sum, column: amount, parent: total}``: the parent's column is the sum of its children's
  column (an invoice's total, the sum of its lines' amounts);
- ``{rule: count, parent: n_lines}``: the parent's column is its number of children;
- ``{rule: within, column: year, parent: [start_year, end_year]}``: the child's value lies between two
  of its parent's (a season within its player's career); held in the release by anchoring the child
  on its linked parent (``anchor: true``).

:func:`find_cross_rules` finds those the original obeys on every row (``relanon init`` proposes them);
:func:`broken_rows` counts the rows of a database that break a rule (the verdict compares the release
with the original). :mod:`relanon.multitable.cross_rules` makes the release obey them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relanon.common.errors import Problem

__all__ = ["KINDS", "CrossRule", "aggregate", "broken_rows", "find_cross_rules", "rule_problems", "totals_of_children"]

KINDS = ("copy", "sum", "count", "within")
MIN_ROWS = 20  # child rows (parents for sum and count) where a rule must hold before it is proposed
MIN_DISTINCT = 2  # distinct values the columns of a rule must show (a constant proves nothing)
RELATIVE_TOLERANCE = 1e-9  # of a sum: floats added in another order differ in their last bits


@dataclass(frozen=True)
class CrossRule:
    """One rule between a child table's column and its parent's, across one foreign key.

    ``kind`` is one of :data:`KINDS`; ``column`` the child's column (None for ``count``); ``parent`` the
    parent's column, or its two bounds for ``within``.

    Examples
    --------
    >>> str(CrossRule("sum", "amount", ("total",)))
    'parent.total = sum of amount'
    """

    kind: str
    column: str | None
    parent: tuple[str, ...]

    def __str__(self) -> str:
        if self.kind == "copy":
            return f"{self.column} = parent.{self.parent[0]}"
        if self.kind == "sum":
            return f"parent.{self.parent[0]} = sum of {self.column}"
        if self.kind == "count":
            return f"parent.{self.parent[0]} = number of children"
        return f"parent.{self.parent[0]} <= {self.column} <= parent.{self.parent[1]}"

    def to_dict(self) -> dict:
        """The rule as the schema file writes it."""
        out: dict = {"rule": self.kind}
        if self.column is not None:
            out["column"] = self.column
        out["parent"] = list(self.parent) if self.kind == "within" else self.parent[0]
        return out

    @classmethod
    def from_dict(cls, spec: Mapping) -> CrossRule | None:
        """The rule a schema file declares, or None when it is malformed (the JSON Schema names the problem)."""
        kind, column, parent = spec.get("rule"), spec.get("column"), spec.get("parent")
        parents = tuple(parent) if isinstance(parent, list | tuple) else (parent,)
        if kind not in KINDS or not all(isinstance(p, str) for p in parents):
            return None
        if (kind == "within") != (len(parents) == 2) or (kind != "count") != isinstance(column, str):
            return None
        return cls(kind, column if kind != "count" else None, parents)


def rule_problems(child: str, parent: str, fk_column: str, rules, child_columns, parent_columns) -> list[Problem]:
    """The declared rules of a link that name columns the tables do not declare."""
    problems = []
    for rule in rules:
        if rule.column is not None and rule.column not in child_columns:
            problems.append(Problem(f"rule '{rule}' of the link {fk_column} -> {parent} names a column {child} does "
                                    "not declare; declare it, or remove the rule", child, rule.column))
        for name in rule.parent:
            if name not in parent_columns:
                problems.append(Problem(f"rule '{rule}' of the link {fk_column} -> {parent} names a column {parent} "
                                        "does not declare; declare it, or remove the rule", child, name))
    return problems


def broken_rows(rule: CrossRule, child: pd.DataFrame, parent: pd.DataFrame, fk_column: str, parent_key: str) -> int:
    """How many rows break ``rule``: child rows (copy, within) or parent rows (sum, count).

    A row with a missing value in the rule, or a child without a parent, breaks nothing.

    Examples
    --------
    >>> parent = pd.DataFrame({"id": [1, 2], "total": [5.0, 4.0], "n": [2, 1]})
    >>> child = pd.DataFrame({"inv": [1, 1, 2], "amount": [2.0, 3.0, 1.0]})
    >>> broken_rows(CrossRule("sum", "amount", ("total",)), child, parent, "inv", "id")
    1
    >>> broken_rows(CrossRule("count", None, ("n",)), child, parent, "inv", "id")
    0
    """
    if rule.kind in ("copy", "within"):
        joined = _joined(child, parent, fk_column, parent_key, [rule.column], rule.parent)
        value = _numbers(joined[rule.column])
        if rule.kind == "copy":
            other = joined["parent." + rule.parent[0]]
            present = joined[rule.column].notna().to_numpy() & other.notna().to_numpy()
            same = _equal(joined[rule.column], other)
            return int((present & ~same).sum())
        low, high = (_numbers(joined["parent." + p]) for p in rule.parent)
        with np.errstate(invalid="ignore"):
            return int(((value < low) | (value > high)).sum())
    expected = _aggregate(rule, child, parent, fk_column, parent_key)
    actual = _numbers(parent[rule.parent[0]])
    present = ~np.isnan(actual)
    return int((present & ~_close(actual, expected)).sum())


def find_cross_rules(child: pd.DataFrame, parent: pd.DataFrame, fk_column: str, parent_key: str,
                     child_types: Mapping[str, str], parent_types: Mapping[str, str]) -> list[CrossRule]:
    """The rules across one link that the original obeys on every row, with enough rows to tell.

    ``child_types`` and ``parent_types`` map the released columns to their schema types (``drop`` left out).

    Examples
    --------
    >>> parent = pd.DataFrame({"id": range(30), "country": ["FR", "DE", "IT"] * 10,
    ...                        "start": range(30), "end": range(10, 40)})
    >>> child = pd.DataFrame({"pid": list(range(30)) * 2, "country": (["FR", "DE", "IT"] * 10) * 2,
    ...                       "year": list(range(5, 35)) * 2})
    >>> [str(r) for r in find_cross_rules(child, parent, "pid", "id", {"country": "categorical", "year": "integer"},
    ...  {"country": "categorical", "start": "integer", "end": "integer"})]
    ['country = parent.country', 'parent.start <= year <= parent.end']
    """
    linked = child[child[fk_column].notna()]
    if len(linked) < MIN_ROWS:
        return []
    numeric = ("continuous", "integer", "datetime")
    rules = []
    joined = _joined(linked, parent, fk_column, parent_key, list(child_types), list(parent_types))
    for column, kind in child_types.items():
        for name, parent_kind in parent_types.items():
            if (kind in numeric) == (parent_kind in numeric) and kind != "boolean" and _copies(joined, column, name):
                rules.append(CrossRule("copy", column, (name,)))
    copied = {r.column for r in rules}
    bounds = [(a, b) for a in parent_types for b in parent_types
              if a != b and parent_types[a] in numeric and parent_types[a] == parent_types[b]
              and _ordered(parent[a], parent[b])]
    for column, kind in child_types.items():
        if kind in numeric and column not in copied:
            inside = [(a, b) for a, b in bounds if parent_types[a] == kind and _within(joined, column, a, b)]
            if inside:  # the tightest pair: the one whose span is narrowest on average
                a, b = min(inside, key=lambda p: float(np.nanmean(_numbers(parent[p[1]]) - _numbers(parent[p[0]]))))
                rules.append(CrossRule("within", column, (a, b)))
    if len(parent) >= MIN_ROWS:
        for name, parent_kind in parent_types.items():
            if parent[name].nunique() < MIN_DISTINCT or not _whole_or_number(parent[name], parent_kind):
                continue
            if parent_kind != "continuous" and _holds(CrossRule("count", None, (name,)), linked, parent, fk_column, parent_key):
                rules.append(CrossRule("count", None, (name,)))
                continue
            for column, kind in child_types.items():
                if parent_kind != "categorical" and kind in ("integer", "continuous") and _holds(CrossRule("sum", column, (name,)), linked, parent,
                                                                 fk_column, parent_key):
                    rules.append(CrossRule("sum", column, (name,)))
                    break
    return rules


def aggregate(rule: CrossRule, child: pd.DataFrame, parent: pd.DataFrame, fk_column: str, parent_key: str) -> np.ndarray:
    """Per parent row (in ``parent``'s order), the value a ``sum`` or ``count`` rule gives its column."""
    return _aggregate(rule, child, parent, fk_column, parent_key)


def totals_of_children(rule: CrossRule, child: pd.DataFrame, fk_column: str) -> pd.Series:
    """Per parent key of ``child[fk_column]``, the number of its children (``count``) or the sum of their column
    (``sum``; missing when every value is): what :func:`aggregate` gives each parent, and what the Dask engine adds
    up over the batches of children.

    Examples
    --------
    >>> child = pd.DataFrame({"inv": [1, 1, 2], "amount": [2.0, 3.0, 1.0]})
    >>> totals_of_children(CrossRule("sum", "amount", ("total",)), child, "inv").to_dict()
    {1: 5.0, 2: 1.0}
    """
    keys = child[fk_column]
    if rule.kind == "count":
        return keys.value_counts()
    return pd.Series(_numbers(child[rule.column]), index=child.index).groupby(keys.to_numpy()).sum(min_count=1)


# --------------------------------------------------------------------------- helpers


def _whole_or_number(values: pd.Series, kind: str) -> bool:
    """A number column, or a category column of whole numbers (a count of few values is proposed categorical)."""
    if kind in ("integer", "continuous"):
        return True
    if kind != "categorical":
        return False
    numbers = _numbers(values)
    present = values.notna().to_numpy()
    return bool(present.any()) and not np.isnan(numbers[present]).any() and bool((numbers[present] % 1 == 0).all())


def _holds(rule, child, parent, fk_column, parent_key) -> bool:
    present = parent[rule.parent[0]].notna()
    return int(present.sum()) >= MIN_ROWS and broken_rows(rule, child, parent, fk_column, parent_key) == 0


def _aggregate(rule, child, parent, fk_column, parent_key) -> np.ndarray:
    return totals_of_children(rule, child, fk_column).reindex(parent[parent_key].to_numpy()).fillna(0).to_numpy(
        dtype=np.float64)


def _joined(child, parent, fk_column, parent_key, child_columns, parent_columns) -> pd.DataFrame:
    positions = pd.Index(parent[parent_key]).get_indexer(child[fk_column])
    found = positions >= 0
    out = {c: child[c].to_numpy()[found] for c in child_columns}
    out.update({"parent." + p: parent[p].to_numpy()[positions[found]] for p in parent_columns})
    return pd.DataFrame(out)


def _numbers(values) -> np.ndarray:
    series = pd.Series(values)
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        out = series.dt.tz_localize(None) if getattr(series.dt, "tz", None) is not None else series
        return np.where(out.isna(), np.nan, out.to_numpy(dtype="datetime64[ns]").astype(np.int64) / 1e9)
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)


def _equal(a: pd.Series, b: pd.Series) -> np.ndarray:
    return (a.astype(object).to_numpy() == b.astype(object).to_numpy()).astype(bool)


def _close(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    scale = np.maximum(np.abs(expected), 1.0)
    with np.errstate(invalid="ignore"):
        return np.abs(actual - expected) <= RELATIVE_TOLERANCE * scale + 1e-9


def _copies(joined: pd.DataFrame, column: str, name: str) -> bool:
    a, b = joined[column], joined["parent." + name]
    present = a.notna().to_numpy() & b.notna().to_numpy()
    if present.sum() < MIN_ROWS or a[present].nunique() < MIN_DISTINCT:
        return False
    return bool(_equal(a[present], b[present]).all()) and bool((a.isna() == b.isna()).all())


def _ordered(a: pd.Series, b: pd.Series) -> bool:
    x, y = _numbers(a), _numbers(b)
    present = ~np.isnan(x) & ~np.isnan(y)
    return present.sum() >= MIN_ROWS and bool((x[present] <= y[present]).all()) and bool((x[present] < y[present]).any())


def _within(joined: pd.DataFrame, column: str, low: str, high: str) -> bool:
    value = _numbers(joined[column])
    a, b = _numbers(joined["parent." + low]), _numbers(joined["parent." + high])
    present = ~np.isnan(value) & ~np.isnan(a) & ~np.isnan(b)
    if present.sum() < MIN_ROWS or len(np.unique(value[present])) < MIN_DISTINCT:
        return False
    return bool(((value[present] >= a[present]) & (value[present] <= b[present])).all())
