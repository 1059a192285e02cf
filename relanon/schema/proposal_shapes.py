"""Propose the tables that are not entities: association tables (links between parents, no key of their
own) and lookup lists (a short list of labels that other tables point to).

- An *association table* has a primary key made of its foreign keys (declared by the database, such as
  ``PRIMARY KEY (PlaylistId, TrackId)``), or no unique column at all, and no table refers to it: it is
  proposed ``primary_key: null`` and ``association: true`` (:mod:`relanon.schema.associations`).
- A *lookup list* (genres, media types) is referenced by other tables, refers to none, is not about
  people, has at most :data:`LOOKUP_ROWS` rows and at most :data:`LOOKUP_COLUMNS` columns besides its
  key, all text: it is proposed ``anonymize: {method: keep}`` and its label released as it is, even when
  it is unique on every row or named ``name`` (a genre's name names no person).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from relanon.schema.associations import row_key_name
from relanon.schema.identifiers import identifier_by_values
from relanon.schema.model import Anonymization, Column, Table
from relanon.schema.proposal_rules import DeclaredKeys, Note

LOOKUP_ROWS = 1_000
"""A lookup list has at most this many rows ..."""
LOOKUP_COLUMNS = 2
"""... and at most this many columns besides its key, all text."""


def propose_associations(tables: dict[str, Table], frames, keys: dict[str, str], declared: DeclaredKeys,
                         notes: list[Note]) -> dict[str, Table]:
    """``tables`` with each association table declared so; the notes on their keys replaced."""
    referenced = {fk.references for table in tables.values() for fk in table.foreign_keys}
    out = dict(tables)
    for name, table in tables.items():
        linked = set(table.foreign_key_columns)
        if name in referenced or not linked or table.self_references:
            continue
        composite = tuple(declared.primary_keys.get(name, ()))
        if len(composite) > 1 and set(composite) <= linked:
            why = f"the database declares its primary key as its foreign keys ({', '.join(composite)})"
        elif keys[name] not in frames[name].columns:  # no unique column: a missing one was proposed
            unique = not frames[name].duplicated(list(table.foreign_key_columns)).any()
            why = ("no column is unique, and no table refers to it; its rows are unique on "
                   f"({', '.join(table.foreign_key_columns)})" if unique else
                   "no column is unique, and no table refers to it")
        else:
            continue
        notes[:] = [n for n in notes if not (n.table == name and n.about == "primary_key")]
        notes.append(Note(name, None, f"an association table: {why}; its rows are re-linked to the released "
                          "parents, each combination of parents kept unique where it was", about="primary_key"))
        row_key = row_key_name(name, table.column_names, table.foreign_key_columns)
        out[name] = replace(table, primary_key=row_key, association=True)
    return out


def propose_lookup_lists(tables: dict[str, Table], frames, notes: list[Note]) -> dict[str, Table]:
    """``tables`` with each lookup list released as it is (``keep``), its labels typed categorical."""
    referenced = {fk.references for table in tables.values() for fk in table.foreign_keys if fk.references != table.name}
    out = dict(tables)
    for name, table in tables.items():
        frame = frames[name]
        labels = [c.name for c in table.columns]
        if (name not in referenced or table.foreign_keys or table.individual or table.association
                or len(frame) > LOOKUP_ROWS or not 1 <= len(labels) <= LOOKUP_COLUMNS
                or not all(_text(frame[c]) for c in labels)
                or any(identifier_by_values(frame[c]) is not None for c in labels)):
            continue
        notes[:] = [n for n in notes if not (n.table == name and (n.about == "anonymize"
                                                                   or (n.about == "type" and n.column in labels)))]
        for label in labels:
            notes.append(Note(name, label, "the label of a lookup list, released as it is", about="type"))
        notes.append(Note(name, None, f"a lookup list ({len(frame):,} rows of labels that other tables point to, "
                          "not about people): released as it is, keys included, and its children keep their true "
                          "rows of it; use method avatar if its labels are personal", about="anonymize", review=True))
        out[name] = replace(table, columns=tuple(Column(c, "categorical") for c in labels),
                            anonymize=Anonymization(method="keep"))
    return out


def _text(values: pd.Series) -> bool:
    present = values.dropna()
    return not present.empty and pd.api.types.infer_dtype(present, skipna=True) == "string"
