"""``relanon init``: the rules across tables the original obeys, proposed on the links (:mod:`relanon.schema.cross_rules`).

Each proposed link is searched for a child column copied from its parent, a parent column that sums its
children's column or counts them, and a child value within two of its parent's. A ``within`` rule comes with
``anchor: true`` on its link: anchoring re-draws each child on the parent it is linked to, from the children
of the parents nearest to it, so that a season falls within its player's career; the rule then moves the few
left outside to the nearer bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pandas as pd

from relanon.schema.coercion import COERCERS
from relanon.schema.cross_rules import find_cross_rules
from relanon.schema.model import Table
from relanon.schema.proposal_rules import Note

__all__ = ["propose_cross_rules"]


def propose_cross_rules(built: Mapping[str, Table], tables: Mapping[str, pd.DataFrame], notes: list) -> dict:
    """``built`` with the rules each link's original obeys declared on the link (``anchor: true`` with a
    ``within`` rule); a note per link that got rules is appended to ``notes``."""
    typed = {name: _typed(table, tables[name]) for name, table in built.items()}
    out = dict(built)
    for name, table in built.items():
        links = []
        for fk in table.foreign_keys:
            parent = built.get(fk.references)
            if parent is None or fk.references == name or not parent.primary_key:  # a self-reference: no rule
                links.append(fk)
                continue
            child_frame = typed[name].assign(**{fk.column: tables[name][fk.column]})
            parent_frame = typed[fk.references].assign(**{parent.primary_key: tables[fk.references][parent.primary_key]})
            rules = tuple(find_cross_rules(child_frame, parent_frame, fk.column, parent.primary_key,
                                           _released(table), _released(parent)))
            if rules:
                anchor = fk.anchor or any(r.kind == "within" for r in rules)
                links.append(replace(fk, rules=rules, anchor=anchor))
                notes.append(Note(name, fk.column, "rules across the link, true of every row of the original, kept in "
                                  f"the release: {'; '.join(map(str, rules))}"
                                  + ("; anchor: true holds the children within their parent's bounds"
                                     if anchor and not fk.anchor else ""), about="foreign_key"))
            else:
                links.append(fk)
        out[name] = replace(table, foreign_keys=tuple(links))
    return out


def _released(table: Table) -> dict[str, str]:
    return {c.name: c.type for c in table.columns if c.released}


def _typed(table: Table, frame: pd.DataFrame) -> pd.DataFrame:
    """The table's released columns in their proposed types (dates stored as text read as dates)."""
    out = {}
    for column in table.columns:
        if column.released and column.type in COERCERS:
            from_text = frame[column.name].dtype == object
            out[column.name] = COERCERS[column.type](frame[column.name], from_text)[0]
    return pd.DataFrame(out, index=frame.index)
