"""Views of a table enriched across one link, as the multi-table scenarios define them (seed 004).

- ``STANDALONE(T)``: the table alone.
- ``TO_TOP_ENRICHED(T, C)``: T plus aggregates of its children in C: their number, the mean of their
  numeric columns, the most frequent value of their categorical and boolean columns.
- ``TO_BOTTOM_PROPAGATED(T, P)``: T plus the columns of its parent in P, broadcast through the key.

A view keeps the rows of T in their order, so a pairing of T's rows (avatar <-> original) holds for
its views too. Each side of a comparison builds its views from its own links.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.graph import Link, child_links, parent_links
from relanon.schema import NUMERIC_TYPES, Schema

STANDALONE = "STANDALONE"
TO_TOP_ENRICHED = "TO_TOP_ENRICHED"
TO_BOTTOM_PROPAGATED = "TO_BOTTOM_PROPAGATED"


class View(NamedTuple):
    """A table, possibly enriched across a link, with the type of every column."""

    scenario: str  # STANDALONE, TO_TOP_ENRICHED or TO_BOTTOM_PROPAGATED
    table: str
    reference: str  # the other table of the link (the table itself for STANDALONE)
    link: Link | None
    name: str  # e.g. "TO_TOP_ENRICHED(patients, visits)"
    frame: pd.DataFrame
    types: dict[str, str]


def views(schema: Schema, database, table: str, columns=None) -> list[View]:
    """Every view of ``table``: standalone, enriched by each child link, by each parent link.

    ``columns`` (table name -> list of column names) restricts what each table contributes, e.g. to
    its quasi-identifiers for an audit; by default every released column is used.
    """
    out = [standalone(schema, database, table, columns)]
    out += [to_top_enriched(schema, database, link, columns) for link in child_links(schema, table)]
    out += [to_bottom_propagated(schema, database, link, columns) for link in parent_links(schema, table)]
    return out


def view_name(scenario: str, table: str, link: Link | None, schema: Schema | None = None) -> str:
    """``TO_TOP_ENRICHED(patients, visits)``; the column is added when two links join the same tables."""
    if link is None:
        return f"{scenario}({table})"
    other = link.child if link.parent == table and scenario == TO_TOP_ENRICHED else link.parent
    name = f"{scenario}({table}, {other}"
    if schema is not None and _links_between(schema, link.parent, link.child) > 1:
        name += f" via {link.column}"
    return name + ")"


def standalone(schema: Schema, database, table: str, columns=None) -> View:
    frame, types = _own(schema, database, table, columns)
    return View(STANDALONE, table, table, None, view_name(STANDALONE, table, None), frame, types)


def to_top_enriched(schema: Schema, database, link: Link, columns=None) -> View:
    """The parent table of ``link`` plus aggregates of its children."""
    frame, types = _own(schema, database, link.parent, columns)
    aggregates, aggregate_types = child_aggregates(schema, database, link, columns)
    enriched = pd.concat([frame, aggregates], axis=1)
    name = view_name(TO_TOP_ENRICHED, link.parent, link, schema)
    return View(TO_TOP_ENRICHED, link.parent, link.child, link, name, enriched, {**types, **aggregate_types})


def to_bottom_propagated(schema: Schema, database, link: Link, columns=None) -> View:
    """The child table of ``link`` plus its parent's columns, broadcast through the foreign key."""
    frame, types = _own(schema, database, link.child, columns)
    parent_frame, parent_types = _own(schema, database, link.parent, columns, index=schema[link.parent].primary_key)
    keys = database[link.child][link.column].to_numpy()
    broadcast = parent_frame.reindex(keys).reset_index(drop=True)
    broadcast.columns = [f"{link.parent}.{c}" for c in broadcast.columns]
    enriched = pd.concat([frame, broadcast.set_axis(frame.index)], axis=1)
    propagated_types = {f"{link.parent}.{c}": t for c, t in parent_types.items()}
    name = view_name(TO_BOTTOM_PROPAGATED, link.child, link, schema)
    return View(TO_BOTTOM_PROPAGATED, link.child, link.parent, link, name, enriched, {**types, **propagated_types})


def child_aggregates(schema: Schema, database, link: Link, columns=None):
    """Per row of the parent (in its order): number of children, means and most frequent values.

    Returns ``(frame, types)``. Rows without children get a count of 0 and missing aggregates.
    """
    parent = schema[link.parent]
    keys = pd.Index(database[link.parent][parent.primary_key].to_numpy())
    children = database[link.child]
    fk = children[link.column]
    counts = fk.value_counts().reindex(keys, fill_value=0).to_numpy().astype("int64")
    prefix = link.child if _links_between(schema, link.parent, link.child) == 1 else f"{link.child}[{link.column}]"
    parts = {f"{prefix}.count": counts}
    types = {f"{prefix}.count": "integer"}
    for column in _columns(schema, link.child, columns):
        kind = schema[link.child].column(column).type if column in schema[link.child].column_names else "categorical"
        values = children[column]
        if kind in NUMERIC_TYPES:
            parts[f"{prefix}.mean({column})"] = _group_mean(fk, values, keys)
            types[f"{prefix}.mean({column})"] = "datetime" if kind == "datetime" else "continuous"
        else:
            parts[f"{prefix}.mode({column})"] = _group_mode(fk, values, keys)
            types[f"{prefix}.mode({column})"] = "categorical"
    frame = pd.DataFrame({name: np.asarray(part) if not isinstance(part, pd.Series) else part.to_numpy()
                          for name, part in parts.items()}, index=database[link.parent].index)
    return frame, types


def _group_mean(fk: pd.Series, values: pd.Series, keys: pd.Index) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        tz = values.dt.tz
        naive = values.dt.tz_convert("UTC").dt.tz_localize(None) if tz is not None else values
        seconds = (naive - pd.Timestamp(0)) / pd.Timedelta(seconds=1)
        means = seconds.groupby(fk.to_numpy()).mean().reindex(keys)
        dates = pd.Timestamp(0) + pd.to_timedelta(means.to_numpy(), unit="s")
        return pd.Series(dates.tz_localize("UTC").tz_convert(tz) if tz is not None else dates)
    numbers = pd.to_numeric(values).astype("float64")
    return pd.Series(numbers.groupby(fk.to_numpy()).mean().reindex(keys).to_numpy())


def _group_mode(fk: pd.Series, values: pd.Series, keys: pd.Index) -> np.ndarray:
    """Most frequent non-missing value per parent; ties go to the smallest value (deterministic)."""
    pairs = pd.DataFrame({"key": fk.to_numpy(), "value": values.to_numpy()}).dropna()
    if pairs.empty:
        return np.full(len(keys), np.nan, dtype=object)
    sizes = pairs.groupby(["key", "value"], sort=True).size().rename("n").reset_index()
    sizes = sizes.sort_values(["key", "n"], ascending=[True, False], kind="stable")
    first = sizes.drop_duplicates("key").set_index("key")["value"]
    return first.reindex(keys).to_numpy()


def _own(schema: Schema, database, table: str, columns=None, index=None):
    names = _columns(schema, table, columns)
    types = {name: _type_of(schema, table, name) for name in names}
    frame = database[table]
    own = frame[names].copy()
    if index is not None:
        own.index = pd.Index(frame[index].to_numpy())
    return own, types


def _columns(schema: Schema, table: str, columns) -> list[str]:
    if columns is not None:
        return list(columns.get(table, ()))
    return [c.name for c in schema[table].released_columns]


def _type_of(schema: Schema, table: str, column: str) -> str:
    if column in schema[table].column_names:
        return schema[table].column(column).type
    return "categorical"  # a foreign key used as a quasi-identifier: an identifier, compared as a label


def _links_between(schema: Schema, parent: str, child: str) -> int:
    return sum(1 for fk in schema[child].foreign_keys if fk.references == parent)
