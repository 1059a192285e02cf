"""Views of a table enriched across one link, as the multi-table scenarios define them (docs/guide/verdict.md).

- ``STANDALONE(T)``: the table alone.
- ``TO_TOP_ENRICHED(T, C)``: T plus aggregates of its children in C: their number, the mean (or
  median) of their numeric columns, the most frequent value of their other columns.
- ``TO_BOTTOM_PROPAGATED(T, P)``: T plus the columns of its parent in P, broadcast through the key.

A view keeps the rows of T in their order, so a pairing of T's rows (avatar <-> original) holds for
its views too. Each side of a comparison builds its views from its own links. The metrics and the
release audit read the same views; the audit restricts them to quasi-identifiers and takes medians,
whose exact value does not depend on the order of the rows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.common.errors import DataError, Problem
from relanon.common.exact import exact_codes, row_per_code
from relanon.schema.graph import Link, child_links, parent_links
from relanon.schema.model import Schema
from relanon.schema.vocabulary import NUMERIC_TYPES

STANDALONE = "STANDALONE"
TO_TOP_ENRICHED = "TO_TOP_ENRICHED"
TO_BOTTOM_PROPAGATED = "TO_BOTTOM_PROPAGATED"


class View(NamedTuple):
    """A table, possibly enriched across a link, with the type of every column."""

    scenario: str  # STANDALONE, TO_TOP_ENRICHED or TO_BOTTOM_PROPAGATED
    table: str
    reference: str  # the other table of the link (the table itself for STANDALONE)
    link: Link | None
    via: str | None  # the foreign key, named when two links join the same tables
    name: str  # e.g. "TO_TOP_ENRICHED(patients, visits)"
    frame: pd.DataFrame
    types: dict[str, str]


def views(schema: Schema, database, table: str, columns=None, *, numeric: str = "mean") -> list[View]:
    """Every view of ``table``: standalone, enriched by each child link, by each parent link.

    Parameters
    ----------
    columns : mapping of table name to column names, optional
        What each table contributes (its quasi-identifiers for an audit, say); by default every
        released column.
    numeric : {"mean", "median"}
        How the children's numeric columns are summarized.
    """
    out = [standalone(schema, database, table, columns)]
    out += [to_top_enriched(schema, database, link, columns, numeric=numeric) for link in child_links(schema, table)]
    out += [to_bottom_propagated(schema, database, link, columns) for link in parent_links(schema, table)]
    return out


def standalone(schema: Schema, database, table: str, columns=None) -> View:
    frame, types = _own(schema, database, table, columns)
    return View(STANDALONE, table, table, None, None, f"{STANDALONE}({table})", frame, types)


def to_top_enriched(schema: Schema, database, link: Link, columns=None, *, numeric: str = "mean") -> View:
    """The parent table of ``link`` plus aggregates of its children."""
    frame, types = _own(schema, database, link.parent, columns)
    aggregates, aggregate_types = _apart(*child_aggregates(schema, database, link, columns, numeric=numeric), frame)
    enriched = pd.concat([frame, aggregates.set_axis(frame.index)], axis=1)
    via = _via(schema, link)
    return View(TO_TOP_ENRICHED, link.parent, link.child, link, via,
                _name(TO_TOP_ENRICHED, link.parent, link.child, via), enriched, {**types, **aggregate_types})


def to_bottom_propagated(schema: Schema, database, link: Link, columns=None) -> View:
    """The child table of ``link`` plus its parent's columns, broadcast through the foreign key.

    A child without a parent gets missing values.
    """
    frame, types = _own(schema, database, link.child, columns)
    parent_frame, parent_types = _own(schema, database, link.parent, columns)
    positions = parent_positions(schema, database, link)
    via = _via(schema, link)
    prefix = _prefix(link.parent, via)
    broadcast = {
        f"{prefix}.{c}": pd.api.extensions.take(parent_frame[c].array, positions, allow_fill=True)
        for c in parent_frame.columns
    }
    propagated_types = {f"{prefix}.{c}": t for c, t in parent_types.items()}
    broadcast, propagated_types = _apart(pd.DataFrame(broadcast, index=frame.index), propagated_types, frame)
    enriched = pd.concat([frame, broadcast], axis=1)
    return View(TO_BOTTOM_PROPAGATED, link.child, link.parent, link, via,
                _name(TO_BOTTOM_PROPAGATED, link.child, link.parent, via), enriched, {**types, **propagated_types})


def child_aggregates(schema: Schema, database, link: Link, columns=None, *, numeric: str = "mean"):
    """Per row of the parent (in its order): number of children and a summary of each of their columns.

    Numeric columns (continuous, integer, datetime) take the ``numeric`` summary (``"mean"`` or
    ``"median"``, missing values left out); the others their most frequent value, where a missing
    value counts as a value and ties go to the smallest value. Rows without children get a count of
    0 and missing summaries.

    Returns
    -------
    (DataFrame, dict)
        The aggregates and their types.
    """
    n_parents = len(database[link.parent])
    positions = parent_positions(schema, database, link)
    linked = positions >= 0
    prefix = _prefix(link.child, _via(schema, link))
    parts = {f"{prefix}.count": np.bincount(positions[linked], minlength=n_parents).astype("int64")}
    types = {f"{prefix}.count": "integer"}
    children = database[link.child]
    for column in _columns(schema, link.child, columns):
        kind = _type_of(schema, link.child, column)
        values = children[column].reset_index(drop=True)
        if kind in NUMERIC_TYPES and _is_numeric(values):
            name = f"{prefix}.{numeric}({column})"
            parts[name] = _group_summary(values, positions, n_parents, numeric)
            types[name] = "datetime" if kind == "datetime" else "continuous"
        else:
            name = f"{prefix}.mode({column})"
            parts[name] = _group_mode(values, positions, n_parents)
            types[name] = "categorical"
    return pd.DataFrame(parts), types


def parent_positions(schema: Schema, database, link: Link) -> np.ndarray:
    """Position of each child row's parent among the parent rows (-1 without a parent)."""
    parent = database[link.parent]
    index = pd.Index(parent[schema[link.parent].primary_key])
    if not index.is_unique:
        repeated = index[index.duplicated()].unique()
        raise DataError(
            "the view cannot be built",
            [Problem(f"the primary key has repeated values, needed unique to follow {link.child}.{link.column}",
                     link.parent, schema[link.parent].primary_key, tuple(repeated[:5]))],
        )
    return np.asarray(index.get_indexer(database[link.child][link.column]), dtype=np.int64)


def _group_summary(values: pd.Series, positions: np.ndarray, n_parents: int, how: str) -> pd.Series:
    linked = positions >= 0
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        tz = values.dt.tz
        naive = values.dt.tz_convert("UTC").dt.tz_localize(None) if tz is not None else values
        epoch = pd.Timestamp(0).as_unit(naive.dt.unit)  # in the dates' own unit: years 1500 or 9999 fit
        seconds = (naive - epoch) / pd.Timedelta(seconds=1)
        summary = seconds[linked].groupby(positions[linked]).agg(how).reindex(range(n_parents))
        dates = pd.Series(epoch + pd.to_timedelta(summary.to_numpy(), unit="s").as_unit(naive.dt.unit))
        return dates.dt.tz_localize("UTC").dt.tz_convert(tz) if tz is not None else dates
    numbers = pd.to_numeric(values).astype("float64")
    return numbers[linked].groupby(positions[linked]).agg(how).reindex(range(n_parents)).reset_index(drop=True)


def _group_mode(values: pd.Series, positions: np.ndarray, n_parents: int) -> pd.Series:
    """Most frequent value per parent, compared exactly; missing counts as a value; ties: smallest."""
    linked = positions >= 0
    codes, n_codes = exact_codes(values, sort=True)
    pair, counts = np.unique(positions[linked] * n_codes + codes[linked], return_counts=True)
    pair_parent, pair_code = pair // n_codes, pair % n_codes
    order = np.lexsort((pair_code, -counts, pair_parent))
    first = order[np.flatnonzero(np.diff(pair_parent[order], prepend=-1) > 0)]
    rows = np.full(n_parents, -1, dtype=np.int64)
    rows[pair_parent[first]] = row_per_code(codes, n_codes)[pair_code[first]]
    return pd.Series(pd.api.extensions.take(values.array, rows, allow_fill=True))


def _is_numeric(values: pd.Series) -> bool:
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    return numeric or pd.api.types.is_datetime64_any_dtype(values)


def _apart(added: pd.DataFrame, types: dict, frame: pd.DataFrame):
    """``added`` renamed (``_`` prefixed as often as needed) so that no name equals a column of ``frame``:
    a user column named ``visits.count`` is never mixed up with the count of visits."""
    taken, names = set(frame.columns), {}
    for column in added.columns:
        name = column
        while name in taken:
            name = "_" + name
        taken.add(name)
        names[column] = name
    if all(k == v for k, v in names.items()):
        return added, types
    return added.rename(columns=names), {names.get(c, c): t for c, t in types.items()}


def _own(schema: Schema, database, table: str, columns=None):
    names = _columns(schema, table, columns)
    types = {name: _type_of(schema, table, name) for name in names}
    return database[table][names].reset_index(drop=True), types


def _columns(schema: Schema, table: str, columns) -> list[str]:
    if columns is not None:
        return list(columns.get(table, ()))
    return [c.name for c in schema[table].released_columns]


def _type_of(schema: Schema, table: str, column: str) -> str:
    if column in schema[table].column_names:
        return schema[table].column(column).type
    return "categorical"  # a foreign key used as a quasi-identifier: an identifier, compared as a label


def _via(schema: Schema, link: Link) -> str | None:
    twice = sum(1 for fk in schema[link.child].foreign_keys if fk.references == link.parent) > 1
    return link.column if twice else None


def _prefix(table: str, via: str | None) -> str:
    return f"{table}[{via}]" if via else table


def _name(scenario: str, table: str, other: str, via: str | None) -> str:
    return f"{scenario}({table}, {other}{f' via {via}' if via else ''})"
