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

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from relanon.common.errors import Problem, SchemaError

COLUMN_TYPES = ("continuous", "integer", "categorical", "boolean", "datetime", "drop")
NUMERIC_TYPES = ("continuous", "integer", "datetime")
LINK_METHODS = ("linear_sum", "minimum_distance", "original_order")
METHODS = ("avatar", "keep", "anatomize", "bucketize")
DEFAULT_K = {"avatar": 10, "bucketize": 5}
FORMAT_VERSION = 1
MAX_WEIGHT = 1_000_000.0


@dataclass(frozen=True)
class Column:
    """A column that is not a key: its name, its type and its weight in the factor space."""

    name: str
    type: str
    weight: float = 1.0

    @property
    def released(self) -> bool:
        return self.type != "drop"


@dataclass(frozen=True)
class ForeignKey:
    """A link from a child column to the primary key of a parent table."""

    column: str
    references: str
    link: str = "linear_sum"
    anchor: bool = False  # re-draw the children on the parent they are linked to (multitable.anchoring)


@dataclass(frozen=True)
class Anonymization:
    """How a table is anonymized.

    ``k`` and ``ncp`` left to ``None`` take their defaults when the table is processed
    (``k`` = 10 for avatar, 5 for bucketize; ``ncp`` = ``"auto"``, see
    :class:`relanon.engine.factor_space.FactorSpace`).
    """

    method: str = "avatar"
    k: int | None = None
    ncp: int | str | None = None
    sensitive: tuple[str, ...] = ()
    l: int | None = None  # noqa: E741 - the letter of l-diversity
    allow_suppression: bool = False

    @property
    def k_or_default(self) -> int | None:
        return self.k if self.k is not None else DEFAULT_K.get(self.method)

    @property
    def l_or_default(self) -> int:
        return self.l if self.l is not None else 2


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
    out: dict = {"primary_key": table.primary_key}
    if table.individual:
        out["individual"] = True
    if table.source:
        out["source"] = table.source
    if table.foreign_keys:
        out["foreign_keys"] = [
            {"column": fk.column, "references": fk.references, "link": fk.link, **({"anchor": True} if fk.anchor else {})}
            for fk in table.foreign_keys
        ]
    if table.columns:
        out["columns"] = {
            c.name: c.type if c.weight == 1.0 else {"type": c.type, "weight": c.weight} for c in table.columns
        }
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
    for key in ("k", "ncp", "l"):
        if getattr(a, key) is not None:
            out[key] = getattr(a, key)
    if a.sensitive:
        out["sensitive"] = a.sensitive[0] if a.method == "anatomize" else list(a.sensitive)
    if a.allow_suppression:
        out["allow_suppression"] = True
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
        raw, problems = _parse_text(_read_source(source))
    problems += _json_schema_problems(raw)
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
        from relanon.common.atomic import write_text_atomically

        write_text_atomically(Path(path), text)
    return text


def json_schema() -> dict:
    """The JSON Schema of the schema file format (``schemas/relanon.schema.json``)."""
    text = resources.files("relanon.schemas").joinpath("relanon.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _read_source(source) -> str:
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and len(source) < 4096):
        path = Path(source)
        if path.is_file():
            try:
                return path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                problem = f"{str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
            except OSError as exc:
                problem = f"cannot read {str(path)!r}: {exc.strerror or exc}"
            raise SchemaError("cannot read the schema", [Problem(problem)])
        if isinstance(source, Path) or path.suffix.lower() in (".yaml", ".yml", ".json"):
            raise SchemaError("cannot read the schema", [Problem(f"no schema file at {str(path)!r}")])
    return str(source)


MAX_ALIAS_EXPANSION = 10_000
"""Values that YAML aliases (``*name``) may add to a schema once expanded: a schema never needs more,
and a file of a few hundred bytes with nested aliases (a "billion laughs") would expand to billions."""


def _parse_text(text: str) -> tuple[object, list[Problem]]:
    """Parse YAML (JSON is YAML) and report keys declared twice, which PyYAML would silently merge.

    Aliases that expand beyond :data:`MAX_ALIAS_EXPANSION` values, or refer to themselves, are
    refused before anything walks the document.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_aliases(root)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SchemaError("the schema file cannot be parsed", [Problem(f"invalid YAML/JSON: {exc}")]) from None
    except RecursionError:
        raise SchemaError("the schema file cannot be parsed",
                          [Problem("the document is nested too deeply; a schema has a few levels")]) from None
    if not isinstance(data, Mapping):
        raise SchemaError(
            "the schema file cannot be parsed",
            [Problem("the schema must be a mapping with 'relanon: 1' and 'tables'")],
        )
    return data, list(_duplicate_keys(root, ()))


def _check_aliases(root) -> None:
    """Count the values of the document as if its aliases were expanded (each node once, in linear time)."""
    if root is None:
        return
    sizes: dict[int, int] = {}
    distinct = 0
    open_nodes: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        children = _child_nodes(node)
        if closing:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise SchemaError("the schema file cannot be parsed", [Problem(
                "a YAML alias refers to the value that contains it (a structure without end); remove it")])
        open_nodes.add(key)
        distinct += 1
        stack.append((node, True))
        stack += [(child, False) for child in children if id(child) not in sizes]
    if sizes[id(root)] > distinct + MAX_ALIAS_EXPANSION:
        raise SchemaError("the schema file cannot be parsed", [Problem(
            f"its YAML aliases (*name) expand to {sizes[id(root)]:,} values, more than the "
            f"{MAX_ALIAS_EXPANSION:,} extra values allowed; write the repeated parts out instead")])


def _child_nodes(node) -> list:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _duplicate_keys(node, path):
    if isinstance(node, yaml.MappingNode):
        seen: dict = {}
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                table, column = _locate(path + (key,))
                what = "column" if len(path) == 3 and path[2] == "columns" else "key"
                yield Problem(
                    f"{what} {key!r} declared twice (lines {seen[key]} and {line}); keep one",
                    table,
                    column,
                )
            else:
                seen[key] = line
            yield from _duplicate_keys(value_node, path + (key,))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield from _duplicate_keys(item, path + (i,))


def _locate(path) -> tuple[str | None, str | None]:
    """(table, column) named by a path inside the schema document, as far as it tells."""
    table = path[1] if len(path) > 1 and path[0] == "tables" else None
    column = None
    if len(path) > 3 and path[2] == "columns":
        column = path[3]
    return (str(table) if table is not None else None, str(column) if column is not None else None)


def _json_schema_problems(raw) -> list[Problem]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(json_schema())
    problems = []
    for error in sorted(validator.iter_errors(raw), key=lambda e: [str(p) for p in e.absolute_path]):
        problems.append(_explain(error))
    return problems


def _explain(error) -> Problem:
    path = tuple(error.absolute_path)
    table, column = _locate(path)
    inside_table = path[2:] if table is not None and column is None else path if table is None else ()
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in inside_table).lstrip(".")
    prefix = f"{where}: " if where else ""
    instance, kind = error.instance, error.validator
    if kind == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        unknown = [k for k in instance if k not in known]
        return Problem(prefix + "; ".join(_unknown_key(k, known) for k in unknown), table, column)
    if kind == "required":
        return Problem(prefix + error.message.replace("is a required property", "is required"), table, column)
    if path and path[-1] == "primary_key" and isinstance(instance, list):
        return Problem(
            "composite primary keys are not possible in this format: add a single-column key "
            "(for example a row number) and declare it as primary_key",
            table,
        )
    if column is not None and kind == "oneOf":
        return Problem(_bad_column_message(instance), table, column)
    if kind == "enum":
        return Problem(prefix + _unknown_value(instance, error.validator_value), table, column)
    if path and path[-1] == "ncp" and kind == "oneOf":
        return Problem(f"{prefix}ncp must be a positive integer or 'auto'{_did_you_mean(instance, ['auto'])}, got {instance!r}",
                       table, column)
    if path == ("relanon",):
        return Problem(f"this relanon reads schema format 1; the file says relanon: {instance!r}")
    message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
    return Problem(prefix + message, table, column)


def _bad_column_message(instance) -> str:
    if isinstance(instance, str):
        return _unknown_value(instance, COLUMN_TYPES, what="type")
    if isinstance(instance, Mapping):
        unknown = [k for k in instance if k not in ("type", "weight")]
        if unknown:
            return "; ".join(_unknown_key(k, ["type", "weight"]) for k in unknown)
        if "type" not in instance:
            return "the long form needs a 'type', e.g. {type: continuous, weight: 2.0}"
        if instance["type"] not in COLUMN_TYPES:
            return _unknown_value(instance["type"], COLUMN_TYPES, what="type")
        return f"weight must be a positive number, got {instance.get('weight')!r}"
    return f"a column is declared by its type ({', '.join(COLUMN_TYPES)}), got {instance!r}"


def _unknown_key(key, known) -> str:
    return f"unknown key {key!r}{_did_you_mean(key, known)}"


def _unknown_value(value, allowed, what="value") -> str:
    return f"unknown {what} {value!r}{_did_you_mean(value, allowed)}; expected one of: {', '.join(map(str, allowed))}"


def _did_you_mean(word, candidates) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


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


def _build_table(name: str, spec: Mapping) -> Table:
    columns = []
    raw_columns = spec.get("columns") or {}
    for column, declared in (raw_columns.items() if isinstance(raw_columns, Mapping) else ()):
        if isinstance(declared, Mapping):
            weight = declared.get("weight", 1.0)
            columns.append(
                Column(str(column), str(declared.get("type")), float(weight) if _is_number(weight) else 1.0)
            )
        else:
            columns.append(Column(str(column), str(declared)))
    foreign_keys = []
    for fk in spec.get("foreign_keys") or ():
        if isinstance(fk, Mapping) and isinstance(fk.get("column"), str) and isinstance(fk.get("references"), str):
            foreign_keys.append(ForeignKey(fk["column"], fk["references"], str(fk.get("link", "linear_sum")),
                                           fk.get("anchor") is True))
    primary_key = spec.get("primary_key")
    return Table(
        name=name,
        primary_key=primary_key if isinstance(primary_key, str) else "",
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
    )


def _names(value) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return ()


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --------------------------------------------------------------------------- meaning


def structure_problems(schema: Schema) -> list[Problem]:
    """Every problem of meaning in a schema: links, cycles, keys, roles, method parameters."""
    problems: list[Problem] = []
    for table in schema:
        problems += _key_problems(table)
        problems += _link_problems(table, schema)
        problems += _role_problems(table)
        problems += _method_problems(table)
    problems += _source_problems(schema)
    problems += _cycle_problems(schema)
    return problems


def _key_problems(table: Table) -> list[Problem]:
    problems = [
        Problem(f"weight must be a finite number between 0 and {MAX_WEIGHT:,.0f}, got {c.weight!r}; "
                "1 counts the column as any other", table.name, c.name)
        for c in table.columns
        if not (0 < c.weight <= MAX_WEIGHT)  # False for NaN too
    ]
    declared = set(table.column_names)
    if table.primary_key in declared:
        problems.append(
            Problem(
                "the primary key is listed under columns; remove it from columns (keys are declared once)",
                table.name,
                table.primary_key,
            )
        )
    seen = set()
    for fk in table.foreign_keys:
        if fk.column == table.primary_key and table.primary_key:
            problems.append(
                Problem(
                    "a column cannot be both the primary key and a foreign key; "
                    "add a separate key column to the table",
                    table.name,
                    fk.column,
                )
            )
        if fk.column in declared:
            problems.append(
                Problem(
                    "the foreign key is listed under columns; remove it from columns "
                    "(it is declared in foreign_keys)",
                    table.name,
                    fk.column,
                )
            )
        if fk.column in seen:
            problems.append(Problem("foreign key column declared twice in foreign_keys; keep one", table.name, fk.column))
        seen.add(fk.column)
    return problems


def _link_problems(table: Table, schema: Schema) -> list[Problem]:
    problems = []
    for fk in table.foreign_keys:
        if fk.references == table.name:
            problems.append(
                Problem(
                    f"the foreign key references its own table {table.name!r}; self-references "
                    "(hierarchies inside one table) are not supported: drop the column or move the "
                    "hierarchy to a separate table",
                    table.name,
                    fk.column,
                )
            )
        elif fk.references not in schema.tables:
            problems.append(
                Problem(
                    f"the foreign key references unknown table {fk.references!r}"
                    f"{_did_you_mean(fk.references, schema.tables)}; declared tables: {', '.join(schema.tables)}",
                    table.name,
                    fk.column,
                )
            )
        if fk.link not in LINK_METHODS:
            continue  # already reported by the JSON Schema
    return problems


def _role_problems(table: Table) -> list[Problem]:
    problems = []
    released = {c.name for c in table.released_columns}
    dropped = {c.name for c in table.columns if not c.released}
    usable = released | set(table.foreign_key_columns)
    for role in ("quasi_identifiers", "sensitive"):
        for name in getattr(table, role):
            if name == table.primary_key:
                problems.append(
                    Problem(
                        f"the primary key is listed in {role}; a key is unique on every row and is "
                        "never released as is: remove it",
                        table.name,
                        name,
                    )
                )
            elif name in dropped:
                problems.append(
                    Problem(f"listed in {role} but its type is drop (never released): remove one of the two", table.name, name)
                )
            elif name not in usable:
                problems.append(
                    Problem(
                        f"listed in {role} but not declared in columns{_did_you_mean(name, usable)}",
                        table.name,
                        name,
                    )
                )
    return problems


def _method_problems(table: Table) -> list[Problem]:
    a = table.anonymize
    problems = []
    if a.method not in METHODS:
        return problems  # already reported by the JSON Schema
    allowed = {
        "avatar": {"k", "ncp"},
        "keep": set(),
        "anatomize": {"sensitive", "l", "allow_suppression"},
        "bucketize": {"sensitive", "k"},
    }[a.method]
    given = {
        name
        for name, value in (
            ("k", a.k),
            ("ncp", a.ncp),
            ("l", a.l),
            ("sensitive", a.sensitive or None),
            ("allow_suppression", a.allow_suppression or None),
        )
        if value is not None
    }
    for name in sorted(given - allowed):
        problems.append(
            Problem(
                f"anonymize.{name} has no meaning for method {a.method!r} (it takes: "
                f"{', '.join(sorted(allowed)) or 'no parameter'}); remove it",
                table.name,
            )
        )
    if a.method == "avatar" and a.k is not None and a.k < 2:
        problems.append(Problem(f"anonymize.k must be at least 2 for the avatar method, got {a.k}", table.name))
    released = {c.name for c in table.released_columns}
    if a.method in ("anatomize", "bucketize"):
        if not a.sensitive:
            problems.append(Problem(f"method {a.method!r} needs anonymize.sensitive (the column(s) to de-associate)", table.name))
        if a.method == "anatomize" and len(a.sensitive) > 1:
            problems.append(Problem("anatomize takes one sensitive column (anonymize.sensitive: name)", table.name))
        for name in a.sensitive:
            if name not in released:
                problems.append(
                    Problem(
                        f"anonymize.sensitive names {name!r}, which is not a released column"
                        f"{_did_you_mean(name, released)}",
                        table.name,
                        name,
                    )
                )
        if a.method == "bucketize" and not table.quasi_identifiers:
            problems.append(
                Problem("bucketize forms its buckets from the table's quasi_identifiers: declare them", table.name)
            )
        if set(a.sensitive) & set(table.quasi_identifiers):
            problems.append(
                Problem(
                    f"a column cannot be both a quasi-identifier and a sensitive column to {a.method}: "
                    "the method separates the two",
                    table.name,
                    sorted(set(a.sensitive) & set(table.quasi_identifiers))[0],
                )
            )
    return problems


def _source_problems(schema: Schema) -> list[Problem]:
    problems = []
    seen: dict[str, str] = {}
    for table in schema:
        if table.source_name in seen:
            problems.append(
                Problem(
                    f"tables {seen[table.source_name]!r} and {table.name!r} read the same source "
                    f"{table.source_name!r}; give each table its own source",
                    table.name,
                )
            )
        seen[table.source_name] = table.name
    for table in schema:
        if table.anonymize.method == "anatomize" and f"{table.name}_sensitive" in schema.tables:
            problems.append(
                Problem(
                    f"an anatomized table is released as {table.name!r} and {table.name + '_sensitive'!r}, "
                    "but a table of that second name already exists: rename it",
                    table.name,
                )
            )
    return problems


def _cycle_problems(schema: Schema) -> list[Problem]:
    from relanon.schema.graph import find_cycles

    problems = []
    for cycle in find_cycles(schema):
        path = " -> ".join([*cycle, cycle[0]])
        problems.append(
            Problem(
                f"the foreign keys form a cycle ({path}); relanon needs parents before children: "
                "remove one of these foreign keys",
                cycle[0],
            )
        )
    return problems
