"""The declarative schema of a database: tables, keys, links, column types, roles, methods.

A schema file is YAML (or JSON with the same structure)::

    relanon: 1
    name: hospital
    seed: 7
    tables:
      patients:
        primary_key: patient_id
        individual: true
        columns: {age: integer, sex: categorical, weight_kg: {type: continuous, weight: 2.0}}
        quasi_identifiers: [age, sex]
        anonymize: {method: avatar, k: 10, ncp: 5}
      visits:
        primary_key: visit_id
        foreign_keys:
          - {column: patient_id, references: patients, link: linear_sum}
        columns: {visit_date: datetime, cost: continuous}

:func:`load_schema` checks the file against the JSON Schema shipped in ``schemas/``, then checks
its meaning (links, cycles, roles, parameters) and reports every problem at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from relanon.common.atomic import write_text_atomically
from relanon.common.errors import SchemaError
from relanon.schema.associations import row_key_name
from relanon.schema.cross_rules import CrossRule
from relanon.schema.options import default
from relanon.schema.parsing import (
    json_schema_problems,
    parse_text,
    read_source,
)
from relanon.schema.structure import structure_problems
from relanon.schema.vocabulary import FORMAT_VERSION


@dataclass(frozen=True)
class Column:
    """A column that is not a key: its name, its type, its weight in the factor space, and
    ``min_count``: with the avatar method, a value held by fewer records is never released verbatim
    (None: the table's default, see :func:`relanon.multitable.policy.min_counts`)."""

    name: str
    type: str
    weight: float = 1.0
    min_count: int | None = None

    @property
    def released(self) -> bool:
        return self.type != "drop"


@dataclass(frozen=True)
class ForeignKey:
    """A link from a child column to the primary key of a parent table."""

    column: str
    references: str
    link: str = "linear_sum"
    anchor: bool = False  # re-draw the children on the parent they are linked to (multitable.linking.anchoring)
    rules: tuple[CrossRule, ...] = ()  # what the child's and the parent's columns owe each other (schema.cross_rules)


@dataclass(frozen=True)
class Anonymization:
    """How a table is anonymized.

    ``k`` and ``ncp`` left to ``None`` take their defaults when the table is processed
    (:data:`relanon.schema.options.OPTIONS`: ``k`` = 10 for avatar, 5 for bucketize; ``ncp`` = ``"auto"``, see
    :class:`relanon.engine.factor_space.FactorSpace`).
    """

    method: str = "avatar"
    k: int | None = None
    ncp: int | str | None = None
    sensitive: tuple[str, ...] = ()
    l: int | None = None  # noqa: E741 - the letter of l-diversity
    allow_suppression: bool = False
    protect_sensitive: bool = True  # avatar: decode the sensitive columns from look-alike donors
    # avatar: fewest records that must hold an avatar's tuple of categorical values, and each pair of them
    # (None: the default of relanon.schema.options, 2)
    combination_min_count: int | None = None
    # avatar: find the columns that are exact functions of others and recompute them in the release
    # (relanon.engine.column_rules)
    column_rules: bool = True

    @property
    def k_or_default(self) -> int | None:
        return self.k if self.k is not None else default("anonymize", "k", self.method)

    @property
    def l_or_default(self) -> int:
        return self.l if self.l is not None else default("anonymize", "l")


@dataclass(frozen=True)
class Table:
    """One table of the database, as declared in the schema."""

    name: str
    primary_key: str
    columns: tuple[Column, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    individual: bool = False
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    anonymize: Anonymization = field(default_factory=Anonymization)
    source: str | None = None
    # a table of links without a key of its own (primary_key: null): its rows are numbered in a column
    # named primary_key, never written (relanon.schema.associations)
    association: bool = False

    @property
    def source_name(self) -> str:
        """The table's name in the data store."""
        return self.source or self.name

    @property
    def column_names(self) -> tuple[str, ...]:
        """Every declared non-key column, ``drop`` ones included."""
        return tuple(c.name for c in self.columns)

    @property
    def released_columns(self) -> tuple[Column, ...]:
        """The non-key columns that are released (all but ``drop``)."""
        return tuple(c for c in self.columns if c.released)

    @property
    def foreign_key_columns(self) -> tuple[str, ...]:
        return tuple(fk.column for fk in self.foreign_keys)

    @property
    def self_references(self) -> tuple[ForeignKey, ...]:
        """The foreign keys to the table itself (a manager, a parent category)."""
        return tuple(fk for fk in self.foreign_keys if fk.references == self.name)

    @property
    def key_columns(self) -> tuple[str, ...]:
        return (self.primary_key, *self.foreign_key_columns)

    @property
    def all_columns(self) -> tuple[str, ...]:
        """Every column expected in the data: keys first, then declared columns."""
        return (*self.key_columns, *self.column_names)

    @property
    def output_columns(self) -> tuple[str, ...]:
        """The columns of the released table, in their order in the data."""
        return (*self.key_columns, *(c.name for c in self.released_columns))

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"table {self.name!r} has no declared column {name!r}")

    def types(self) -> dict[str, str]:
        """Released column name -> type."""
        return {c.name: c.type for c in self.released_columns}


@dataclass(frozen=True)
class Schema:
    """A whole database schema. ``tables`` maps table name -> :class:`Table` in file order."""

    tables: Mapping[str, Table]
    name: str | None = None
    seed: int | None = None

    def __getitem__(self, table: str) -> Table:
        try:
            return self.tables[table]
        except KeyError:
            raise KeyError(f"no table {table!r} in the schema; tables: {', '.join(self.tables)}") from None

    def __iter__(self):
        return iter(self.tables.values())

    def __len__(self) -> int:
        return len(self.tables)

    def to_dict(self) -> dict:
        """The schema as plain data, in the file format (defaults left out)."""
        out: dict = {"relanon": FORMAT_VERSION}
        if self.name is not None:
            out["name"] = self.name
        if self.seed is not None:
            out["seed"] = self.seed
        out["tables"] = {t.name: _table_to_dict(t) for t in self}
        return out

    def with_tables(self, tables: Mapping[str, Table]) -> Schema:
        """A copy of this schema with another set of tables."""
        return Schema(tables=dict(tables), name=self.name, seed=self.seed)


def _table_to_dict(table: Table) -> dict:
    out: dict = {"primary_key": None if table.association else table.primary_key}
    if table.association:
        out["association"] = True
    if table.individual:
        out["individual"] = True
    if table.source:
        out["source"] = table.source
    if table.foreign_keys:
        out["foreign_keys"] = [
            {"column": fk.column, "references": fk.references, "link": fk.link, **({"anchor": True} if fk.anchor else {}),
             **({"rules": [rule.to_dict() for rule in fk.rules]} if fk.rules else {})}
            for fk in table.foreign_keys
        ]
    if table.columns:
        out["columns"] = {c.name: _column_to_dict(c) for c in table.columns}
    if table.quasi_identifiers:
        out["quasi_identifiers"] = list(table.quasi_identifiers)
    if table.sensitive:
        out["sensitive"] = list(table.sensitive)
    anonymize = _anonymization_to_dict(table.anonymize)
    if anonymize != {"method": "avatar"}:
        out["anonymize"] = anonymize
    return out


def _anonymization_to_dict(a: Anonymization) -> dict:
    out: dict = {"method": a.method}
    for key in ("k", "ncp", "l", "combination_min_count"):
        if getattr(a, key) is not None:
            out[key] = getattr(a, key)
    if a.sensitive:
        out["sensitive"] = a.sensitive[0] if a.method == "anatomize" else list(a.sensitive)
    if a.allow_suppression:
        out["allow_suppression"] = True
    if not a.protect_sensitive:
        out["protect_sensitive"] = False
    if not a.column_rules:
        out["column_rules"] = False
    return out


# --------------------------------------------------------------------------- loading


def load_schema(source) -> Schema:
    """Read and validate a schema from a YAML/JSON file, a YAML/JSON string or a mapping.

    Parameters
    ----------
    source : str, Path or Mapping
        A path to a ``.yaml``/``.yml``/``.json`` file, the text of one, or the parsed mapping.

    Returns
    -------
    Schema

    Raises
    ------
    SchemaError
        Listing every problem found, each with its table and column.

    Examples
    --------
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "columns": {"age": "integer"}}}})
    >>> schema["people"].types()
    {'age': 'integer'}
    """
    if isinstance(source, Mapping):
        raw, problems = dict(source), []
    else:
        raw, problems = parse_text(read_source(source))
    problems += json_schema_problems(raw)
    schema = _build(raw) if isinstance(raw, Mapping) else None
    if schema is not None:
        problems += structure_problems(schema)
    if problems:
        raise SchemaError("the schema is not valid", problems)
    return schema


def dump_schema(schema: Schema, path=None) -> str:
    """Write ``schema`` as YAML (or JSON when ``path`` ends in ``.json``); return the text."""
    data = schema.to_dict()
    if path is not None and str(path).endswith(".json"):
        text = json.dumps(data, indent=2) + "\n"
    else:
        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, allow_unicode=True)
    if path is not None:
        write_text_atomically(Path(path), text)
    return text


"""Values that YAML aliases (``*name``) may add to a schema once expanded: a schema never needs more,
and a file of a few hundred bytes with nested aliases (a "billion laughs") would expand to billions."""


# --------------------------------------------------------------------------- building


def _build(raw: Mapping) -> Schema:
    """Build the dataclasses, leniently: malformed parts (already reported) are skipped."""
    tables = {}
    raw_tables = raw.get("tables")
    for name, spec in (raw_tables.items() if isinstance(raw_tables, Mapping) else ()):
        if isinstance(spec, Mapping):
            tables[str(name)] = _build_table(str(name), spec)
    seed = raw.get("seed")
    return Schema(
        tables=tables,
        name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )


def _column_to_dict(column: Column):
    if column.weight == 1.0 and column.min_count is None:
        return column.type
    out: dict = {"type": column.type}
    if column.weight != 1.0:
        out["weight"] = column.weight
    if column.min_count is not None:
        out["min_count"] = column.min_count
    return out


def _build_table(name: str, spec: Mapping) -> Table:
    columns = []
    raw_columns = spec.get("columns") or {}
    for column, declared in (raw_columns.items() if isinstance(raw_columns, Mapping) else ()):
        if isinstance(declared, Mapping):
            weight, count = declared.get("weight", 1.0), declared.get("min_count")
            columns.append(Column(
                str(column), str(declared.get("type")), float(weight) if _is_number(weight) else 1.0,
                count if isinstance(count, int) and not isinstance(count, bool) and count >= 1 else None,
            ))
        else:
            columns.append(Column(str(column), str(declared)))
    foreign_keys = []
    for fk in spec.get("foreign_keys") or ():
        if isinstance(fk, Mapping) and isinstance(fk.get("column"), str) and isinstance(fk.get("references"), str):
            rules = tuple(r for r in (CrossRule.from_dict(spec) for spec in fk.get("rules") or ()
                                      if isinstance(spec, Mapping)) if r is not None)
            foreign_keys.append(ForeignKey(fk["column"], fk["references"], str(fk.get("link", "linear_sum")),
                                           fk.get("anchor") is True, rules))
    primary_key = spec.get("primary_key")
    association = spec.get("association") is True
    if association and primary_key is None:
        primary_key = row_key_name(name, [c.name for c in columns], [fk.column for fk in foreign_keys])
    return Table(
        name=name,
        primary_key=primary_key if isinstance(primary_key, str) else "",
        association=association,
        columns=tuple(columns),
        foreign_keys=tuple(foreign_keys),
        individual=bool(spec.get("individual", False)),
        quasi_identifiers=_names(spec.get("quasi_identifiers")),
        sensitive=_names(spec.get("sensitive")),
        anonymize=_build_anonymization(spec.get("anonymize")),
        source=spec.get("source") if isinstance(spec.get("source"), str) else None,
    )


def _build_anonymization(spec) -> Anonymization:
    if not isinstance(spec, Mapping):
        return Anonymization()
    sensitive = spec.get("sensitive")

    def integer(key):
        value = spec.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return Anonymization(
        method=str(spec.get("method", "avatar")),
        k=integer("k"),
        ncp="auto" if spec.get("ncp") == "auto" else integer("ncp"),
        sensitive=(sensitive,) if isinstance(sensitive, str) else _names(sensitive),
        l=integer("l"),
        allow_suppression=bool(spec.get("allow_suppression", False)),
        protect_sensitive=spec.get("protect_sensitive") is not False,
        combination_min_count=integer("combination_min_count"),
        column_rules=spec.get("column_rules") is not False,
    )


def _names(value) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return ()


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --------------------------------------------------------------------------- meaning


