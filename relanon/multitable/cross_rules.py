"""The release obeys the rules across tables its schema declares (:mod:`relanon.schema.cross_rules`).

Each table's avatars are made apart from its parent's and linked afterwards, so nothing ties an invoice's
billing country to its customer's, or its total to its lines. Once every table is linked,
:func:`obey_cross_rules` recomputes what is a function of the linked rows:

1. top-down, each ``copy`` rule gives the child its linked parent's value, and each ``within`` rule brings a
   child value outside its parent's bounds to the nearer bound (``anchor: true``, which ``relanon init``
   proposes with the rule, already draws the children from the parent's span: few are left to move);
2. bottom-up, each ``sum`` and ``count`` rule gives the parent the sum of its linked children's column, or
   their number, so that a total follows the lines it is released with (a parent without children: 0).

Only tables made by the avatar method are rewritten: a table released as it is (``keep``) or whose records are
real (``anatomize``, ``bucketize``) keeps its values, and the verdict counts the rules it breaks. Nothing is
drawn: the release stays a function of the seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.common.options import Method
from relanon.schema.cross_rules import aggregate
from relanon.schema.graph import topological_order
from relanon.schema.model import Schema

__all__ = ["from_parent", "made", "obey_cross_rules", "typed_totals"]


def obey_cross_rules(schema: Schema, tables: dict[str, pd.DataFrame]) -> list[str]:
    """Make the linked release ``tables`` (keys already new) obey every rule its schema declares, in place.

    Returns one line per rule applied, for the progress.

    Examples
    --------
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {
    ...     "invoices": {"primary_key": "id", "columns": {"total": "continuous", "country": "categorical"}},
    ...     "lines": {"primary_key": "id", "columns": {"amount": "continuous", "country": "categorical"},
    ...               "foreign_keys": [{"column": "invoice", "references": "invoices", "rules": [
    ...                   {"rule": "sum", "column": "amount", "parent": "total"},
    ...                   {"rule": "copy", "column": "country", "parent": "country"}]}]}}})
    >>> tables = {"invoices": pd.DataFrame({"id": [1, 2], "total": [9.0, 9.0], "country": ["FR", "DE"]}),
    ...           "lines": pd.DataFrame({"id": [1, 2, 3], "invoice": [1, 1, 2], "amount": [2.0, 3.0, 4.0],
    ...                                  "country": ["DE", "FR", "FR"]})}
    >>> obey_cross_rules(schema, tables)
    ['lines.invoice -> invoices: country = parent.country', 'lines.invoice -> invoices: parent.total = sum of amount']
    >>> tables["invoices"]["total"].tolist(), tables["lines"]["country"].tolist()
    ([5.0, 4.0], ['FR', 'FR', 'DE'])
    """
    order = topological_order(schema)
    done = []
    for name in order:  # copies and bounds: a parent's values are final before its children take them
        for fk in schema[name].foreign_keys:
            for rule in fk.rules:
                if rule.kind in ("copy", "within") and made(schema, name):
                    from_parent(rule, tables[name], tables[fk.references], fk.column, schema[fk.references].primary_key)
                    done.append(f"{name}.{fk.column} -> {fk.references}: {rule}")
    for name in reversed(order):  # aggregates: the children's values are final before their parent sums them
        for fk in schema[name].foreign_keys:
            for rule in fk.rules:
                if rule.kind in ("sum", "count") and made(schema, fk.references):
                    parent = tables[fk.references]
                    totals = aggregate(rule, tables[name], parent, fk.column, schema[fk.references].primary_key)
                    parent[rule.parent[0]] = typed_totals(totals, parent[rule.parent[0]])
                    done.append(f"{name}.{fk.column} -> {fk.references}: {rule}")
    return done


def made(schema: Schema, name: str) -> bool:
    """Whether relanon makes the table's values (avatar method): a table released as it is, or whose records are
    real (keep, anatomize, bucketize), is never rewritten; the verdict counts the rules it breaks."""
    return schema[name].anonymize.method == Method.AVATAR


def from_parent(rule, child: pd.DataFrame, parent: pd.DataFrame, fk_column: str, parent_key: str) -> None:
    """Apply a ``copy`` or ``within`` rule to ``child`` in place: its linked rows take their parent's value, or the
    nearer of its bounds when outside them. ``parent`` needs only the parents the children link to (with at least
    one row)."""
    positions = pd.Index(parent[parent_key]).get_indexer(child[fk_column])
    linked = positions >= 0
    if rule.kind == "copy":
        taken = parent[rule.parent[0]].take(np.where(linked, positions, 0)).reset_index(drop=True)
        taken.index = child.index
        child[rule.column] = taken.where(pd.Series(linked, index=child.index), child[rule.column])
        return
    value = child[rule.column]
    for bound, outside in ((rule.parent[0], _below), (rule.parent[1], _above)):
        limit = parent[bound].take(np.where(linked, positions, 0)).reset_index(drop=True)
        limit.index = child.index
        moved = linked & outside(value, limit) & limit.notna().to_numpy()
        if moved.any():
            value = value.where(~pd.Series(moved, index=child.index), limit.astype(value.dtype))
    child[rule.column] = value


def _below(value: pd.Series, limit: pd.Series) -> np.ndarray:
    return (value < limit).fillna(False).to_numpy(dtype=bool)


def _above(value: pd.Series, limit: pd.Series) -> np.ndarray:
    return (value > limit).fillna(False).to_numpy(dtype=bool)


def typed_totals(totals: np.ndarray, like: pd.Series) -> pd.Series:
    """Totals in the dtype of the column they replace (whole numbers rounded)."""
    out = pd.Series(totals, index=like.index)
    if pd.api.types.is_float_dtype(like.dtype):
        return out.astype(like.dtype)
    whole = out.round().astype(np.int64)
    if pd.api.types.is_integer_dtype(like.dtype):
        return whole.astype(like.dtype)
    return whole.astype(object)  # a count declared categorical: whole numbers as values
