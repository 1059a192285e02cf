"""The options of the schema file, declared once: name, type, bounds, default and description.

One table, :data:`OPTIONS`, from which three things are derived:

- the JSON Schema of the file format (:func:`json_schema_document`; ``schemas/relanon.schema.json`` is
  its text, :func:`json_schema_text`, and a test keeps the two equal);
- the checks: the JSON Schema's bounds and words, the options each method reads
  (:func:`method_options`), the defaults (:func:`default`) and the messages (:meth:`Option.message`);
- the reference page of the schema file (:func:`option_table`, one row per option).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from relanon.common.options import integer_message, option_message
from relanon.schema.vocabulary import COLUMN_TYPES, FORMAT_VERSION, LINK_METHODS, MAX_WEIGHT, METHODS

SECTIONS = ("file", "table", "column", "foreign_key", "cross_rule", "anonymize")
"""Where an option is written: at the top of the file, in a table, in a column's long form
(``{type: ..., weight: ...}``), in an item of ``foreign_keys``, or in a table's ``anonymize``."""

TYPES = ("integer", "number", "boolean", "text", "text or null", "word", "names", "name or names",
         "integer or 'auto'", "format version", "tables", "columns", "foreign keys", "cross rules", "anonymize")


@dataclass(frozen=True)
class Option:
    """One option of the schema file.

    ``default`` is the value an absent option takes (a mapping method -> value when it depends on
    the method, None when there is none or it is computed from the data, as ``description`` says).
    ``minimum`` and ``maximum`` bound integers and numbers (both included); ``above`` is an
    excluded lower bound; ``minimum_by_method`` raises ``minimum`` for some methods. ``methods``
    lists the methods that read an ``anonymize`` option.
    """

    section: str
    name: str
    type: str
    description: str
    default: object = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    above: int | float | None = None
    minimum_by_method: Mapping[str, int] = field(default_factory=dict)
    words: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    required: bool = False

    def __post_init__(self):
        if self.section not in SECTIONS or self.type not in TYPES:
            raise ValueError(f"option {self.name!r}: unknown section {self.section!r} or type {self.type!r}")

    @property
    def path(self) -> str:
        """Where the option is written, e.g. ``anonymize.k`` or ``foreign_keys[].link``."""
        prefix = {"file": "", "table": "", "column": "columns.<name>.", "foreign_key": "foreign_keys[].",
                  "cross_rule": "foreign_keys[].rules[].", "anonymize": "anonymize."}[self.section]
        return prefix + self.name

    @property
    def label(self) -> str:
        """How a message names the option (a column's options: the column is named beside the message)."""
        return self.name if self.section == "column" else self.path

    def lowest(self, method: str | None = None):
        """The smallest value allowed (for ``method`` when the bound depends on it)."""
        return self.minimum_by_method.get(method, self.minimum) if method is not None else self.minimum

    def default_for(self, method: str | None = None):
        """The default value, for ``method`` when it depends on it."""
        if isinstance(self.default, Mapping):
            return self.default.get(method)
        return self.default

    def message(self, value, method: str | None = None) -> str:
        """What to write instead of ``value`` (one wording per kind of option, see relanon.common.options)."""
        context = f" for the {method} method" if method is not None and method in self.minimum_by_method else ""
        if self.type in ("integer", "integer or 'auto'"):
            text = integer_message(self.label, value, self.lowest(method), self.maximum, context)
            return text.replace(", got", " or 'auto', got") if self.type == "integer or 'auto'" else text
        if self.type == "number":
            low = f"above {self.above}" if self.above is not None else f"at least {self.minimum}"
            high = f" and at most {self.maximum:,}" if self.maximum is not None else ""
            return f"{self.label} must be a finite number {low}{high}, got {value!r}"
        if self.type == "word":
            return option_message(self.label, value, self.words)
        return f"{self.label} must be {_NOUNS.get(self.type, self.type)}, got {value!r}"

    def json(self) -> dict:
        """This option's part of the JSON Schema."""
        out: dict = {"description": self.description} if self.description else {}
        if self.type == "integer":
            out |= {"type": "integer", **_bounds(self)}
        elif self.type == "number":
            out |= {"type": "number", **_bounds(self)}
        elif self.type == "boolean":
            out["type"] = "boolean"
        elif self.type == "text":
            out |= {"type": "string", "minLength": 1}
        elif self.type == "text or null":
            out["oneOf"] = [{"type": "string", "minLength": 1}, {"type": "null"}]
        elif self.type == "word":
            out |= {"$ref": "#/$defs/columnType"} if self.words == COLUMN_TYPES else {"enum": list(self.words)}
        elif self.type == "names":
            out |= _NAMES
        elif self.type == "name or names":
            out["oneOf"] = [{"type": "string", "minLength": 1}, {**_NAMES, "minItems": 1}]
        elif self.type == "integer or 'auto'":
            out["oneOf"] = [{"type": "integer", **_bounds(self)}, {"const": "auto"}]
        elif self.type == "format version":
            out["const"] = FORMAT_VERSION
        elif self.type == "tables":
            out |= {"type": "object", "minProperties": 1, "propertyNames": {"type": "string", "minLength": 1},
                    "additionalProperties": {"$ref": "#/$defs/table"}}
        elif self.type == "columns":
            out |= {"type": "object", "propertyNames": {"type": "string", "minLength": 1},
                    "additionalProperties": {"$ref": "#/$defs/column"}}
        elif self.type == "foreign keys":
            out |= {"type": "array", "items": {"$ref": "#/$defs/foreignKey"}}
        elif self.type == "cross rules":
            out |= {"type": "array", "items": {"$ref": "#/$defs/crossRule"}}
        else:  # anonymize
            out["$ref"] = "#/$defs/anonymize"
        return out


_NAMES = {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True}
_NOUNS = {"boolean": "true or false", "text": "a non-empty text", "text or null": "a non-empty text or null",
          "names": "a list of distinct column names",
          "name or names": "a column name or a list of column names"}


def _bounds(option: Option) -> dict:
    out = {}
    if option.minimum is not None:
        out["minimum"] = option.minimum
    if option.above is not None:
        out["exclusiveMinimum"] = option.above
    if option.maximum is not None:
        out["maximum"] = option.maximum
    return out


OPTIONS: tuple[Option, ...] = (
    # ------------------------------------------------------------------ the file
    Option("file", "relanon", "format version", "Format version of the schema file.", required=True),
    Option("file", "name", "text", "Name of the database."),
    Option("file", "seed", "integer", "Seed of the random generator; absent means fresh randomness on every run.",
           minimum=0),
    Option("file", "tables", "tables", "The tables of the database: table name -> its declaration.", required=True),
    # ------------------------------------------------------------------ a table
    Option("table", "primary_key", "text or null", "The column that identifies each row (one column); null for an "
           "association table (see association).", required=True),
    Option("table", "association", "boolean", "A table of links between its parents (a pair of foreign keys, such as "
           "a playlist and a track) with no key of its own: primary_key is null and no table refers to it; its rows "
           "are re-linked to the released parents, each combination of parents kept unique where it was (default "
           "false).", default=False),
    Option("table", "individual", "boolean", "The table holds people: one row per person (default false).",
           default=False),
    Option("table", "source", "text", "The table's name in the data store (default: the table's name)."),
    Option("table", "columns", "columns", "The non-key columns: column name -> its type, or its long form "
           "{type: ..., weight: ..., min_count: ...}."),
    Option("table", "foreign_keys", "foreign keys", "The links to parent tables."),
    Option("table", "quasi_identifiers", "names", "Columns an attacker may know about a person (audits and attacks)."),
    Option("table", "sensitive", "names", "Columns an attacker wants to learn (audits and attacks)."),
    Option("table", "anonymize", "anonymize", "How the table is released (default: the avatar method)."),
    # ------------------------------------------------------------------ a column's long form
    Option("column", "type", "word", "The column's type.", words=COLUMN_TYPES, required=True),
    Option("column", "weight", "number", "Importance of the column in the factor space (1 = as any other).",
           default=1.0, above=0, maximum=MAX_WEIGHT),
    Option("column", "min_count", "integer", "avatar: a value held by fewer records is never released verbatim "
           "(default: the table's k for tables of people and the tables below them, 1 otherwise; 1 releases every "
           "value).", minimum=1),
    # ------------------------------------------------------------------ a foreign key
    Option("foreign_key", "column", "text", "The child column holding the parent's key.", required=True),
    Option("foreign_key", "references", "text", "The parent table.", required=True),
    Option("foreign_key", "link", "word", "How the anonymized children are matched to the anonymized parents.",
           default="linear_sum", words=LINK_METHODS),
    Option("foreign_key", "anchor", "boolean", "re-draw each child on the parent it is linked to, so that it agrees "
           "with it (default false).", default=False),
    Option("foreign_key", "rules", "cross rules", "Rules across the link, found by relanon init in the original and "
           "kept in the release: copy (the child's column equals its parent's), sum and count (the parent's column "
           "is the sum of its children's column, or their number), within (the child's value lies between two of "
           "its parent's columns)."),
    # ------------------------------------------------------------------ a rule across a link
    Option("cross_rule", "rule", "word", "copy (the child's column equals its parent's), sum (the parent's column is "
           "the sum of its children's column), count (the parent's column is its number of children) or within (the "
           "child's column lies between two of its parent's).", words=("copy", "sum", "count", "within"),
           required=True),
    Option("cross_rule", "column", "text", "The child's column (every rule but count)."),
    Option("cross_rule", "parent", "name or names", "The parent's column; for within, its two bounds [low, high].",
           required=True),
    # ------------------------------------------------------------------ anonymize
    Option("anonymize", "method", "word", "How the table is released: avatar (synthetic records), keep (as they "
           "are), anatomize or bucketize (real records, de-associated).", default="avatar", words=METHODS),
    Option("anonymize", "k", "integer", "avatar: number of neighbours (default 10); bucketize: minimum bucket size "
           "(default 5).", default={"avatar": 10, "bucketize": 5}, minimum=1, minimum_by_method={"avatar": 2},
           methods=("avatar", "bucketize")),
    Option("anonymize", "ncp", "integer or 'auto'", "avatar: number of factor-space dimensions used for the "
           "neighbours; auto (default): the fewest axes reaching a share of the inertia, never ending inside a group "
           "of equal eigenvalues.", default="auto", minimum=1, methods=("avatar",)),
    Option("anonymize", "sensitive", "name or names", "anatomize: the sensitive column; bucketize: the sensitive "
           "columns.", methods=("anatomize", "bucketize")),
    Option("anonymize", "l", "integer", "anatomize: l-diversity level.", default=2, minimum=2, methods=("anatomize",)),
    Option("anonymize", "allow_suppression", "boolean", "anatomize: suppress records that cannot be placed in an "
           "l-diverse group instead of failing.", default=False, methods=("anatomize",)),
    Option("anonymize", "protect_sensitive", "boolean", "avatar: decode the table's sensitive columns from "
           "look-alike donors, never from the record's own neighbours (default true). false weakens privacy: an "
           "attacker who knows a person's other columns reads her sensitive values; the release says so.",
           default=True, methods=("avatar",)),
    Option("anonymize", "combination_min_count", "integer", "avatar, individual tables: fewest records that must "
           "hold an avatar's tuple of categorical values (the columns whose min_count is above 1), and each pair of "
           "them, for the tuple to be released (default 2; a tuple one record holds singles it out). More protects "
           "against singling out by rare combinations and turns more rare combinations down.", default=2, minimum=2,
           methods=("avatar",)),
    Option("anonymize", "column_rules", "boolean", "avatar: find the columns that are exact functions of other "
           "columns of the table (c = 100 * a + b; the month of a date; a year, month and day that form a date) and "
           "recompute them from the released values, so that every released row obeys them (default true). false "
           "releases each column as the avatar method makes it.", default=True, methods=("avatar",)),
)


def option(section: str, name: str) -> Option:
    """The option ``name`` of ``section`` (see :data:`SECTIONS`)."""
    for o in OPTIONS:
        if o.section == section and o.name == name:
            return o
    raise KeyError(f"no option {name!r} in section {section!r}")


def options(section: str) -> tuple[Option, ...]:
    """The options of one section, in the order of the table."""
    return tuple(o for o in OPTIONS if o.section == section)


def default(section: str, name: str, method: str | None = None):
    """The default of an option (for ``method`` when it depends on it).

    Examples
    --------
    >>> default("anonymize", "k", "avatar"), default("anonymize", "k", "bucketize"), default("anonymize", "k", "keep")
    (10, 5, None)
    """
    return option(section, name).default_for(method)


def method_options(method: str) -> set[str]:
    """The ``anonymize`` options that ``method`` reads (besides ``method``).

    Examples
    --------
    >>> sorted(method_options("bucketize"))
    ['k', 'sensitive']
    """
    return {o.name for o in options("anonymize") if method in o.methods}


def option_table() -> list[dict]:
    """One row per option of the schema file, for its reference page.

    Each row has ``section``, ``path`` (where it is written, e.g. ``anonymize.k``), ``type``,
    ``bounds`` (text, empty when none), ``default`` (text, empty when none or computed),
    ``required``, ``methods`` (the methods that read an ``anonymize`` option) and ``description``.

    Examples
    --------
    >>> row = next(r for r in option_table() if r["path"] == "anonymize.k")
    >>> row["bounds"], row["default"]
    ('>= 1; avatar: >= 2', 'avatar: 10; bucketize: 5')
    """
    rows = []
    for o in OPTIONS:
        bounds = []
        if o.minimum is not None:
            bounds.append(f">= {o.minimum}")
        if o.above is not None:
            bounds.append(f"> {o.above}")
        if o.maximum is not None:
            bounds.append(f"<= {o.maximum:,g}")
        text = ", ".join(bounds) + "".join(f"; {m}: >= {v}" for m, v in o.minimum_by_method.items())
        if o.words:
            text = "one of " + ", ".join(o.words)
        rows.append({
            "section": o.section,
            "path": o.path,
            "type": o.type,
            "bounds": text,
            "default": _default_text(o.default),
            "required": o.required,
            "methods": ", ".join(o.methods),
            "description": o.description,
        })
    return rows


def _default_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return "; ".join(f"{m}: {_default_text(v)}" for m, v in value.items())
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --------------------------------------------------------------------------- the JSON Schema


def _object(section: str) -> dict:
    members = options(section)
    out: dict = {"type": "object"}
    required = [o.name for o in members if o.required]
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    out["properties"] = {o.name: o.json() for o in members}
    return out


def _method_bounds() -> list[dict]:
    """``if method is m then option >= its minimum for m``: absent ``method`` is the default one."""
    clauses = []
    for method in METHODS:
        raised = {o.name: {"minimum": o.minimum_by_method[method]}
                  for o in options("anonymize") if method in o.minimum_by_method}
        if raised:
            condition: dict = {"properties": {"method": {"const": method}}}
            if method != default("anonymize", "method"):
                condition["required"] = ["method"]
            clauses.append({"if": condition, "then": {"properties": raised}})
    return clauses


_ASSOCIATION_RULE = {  # primary_key: null only in an association table (relanon.schema.associations)
    "if": {"properties": {"primary_key": {"type": "null"}}, "required": ["primary_key"]},
    "then": {"properties": {"association": {"const": True}}, "required": ["association"]},
}
CROSS_RULE_KINDS = [
    {"if": {"properties": {"rule": {"const": "count"}}},
     "then": {"not": {"required": ["column"]}, "properties": {"parent": {"type": "string"}}}},
    {"if": {"properties": {"rule": {"enum": ["copy", "sum"]}}},
     "then": {"required": ["column"], "properties": {"parent": {"type": "string"}}}},
    {"if": {"properties": {"rule": {"const": "within"}}},
     "then": {"required": ["column"], "properties": {"parent": {"type": "array", "minItems": 2, "maxItems": 2}}}},
]
"""What each kind of rule across a link needs (:mod:`relanon.schema.cross_rules`): a child column but for count,
two parent columns for within."""


def json_schema_document() -> dict:
    """The JSON Schema (draft 2020-12) of the schema file, made from :data:`OPTIONS`."""
    top = _object("file")
    anonymize = _object("anonymize")
    anonymize["allOf"] = _method_bounds()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"relanon-schema-v{FORMAT_VERSION}",
        "title": "relanon schema file",
        "description": "Declares the tables of a relational database, their keys, links and column types, and how "
                       "each table is anonymized and audited.",
        **top,
        "$defs": {
            "columnType": {"enum": list(COLUMN_TYPES)},
            "column": {"oneOf": [{"$ref": "#/$defs/columnType"}, _object("column")]},
            "foreignKey": _object("foreign_key"),
            "crossRule": {**_object("cross_rule"), "allOf": CROSS_RULE_KINDS},
            "anonymize": anonymize,
            "table": {**_object("table"), **_ASSOCIATION_RULE},
        },
    }


def json_schema_text() -> str:
    """The text of ``schemas/relanon.schema.json``: :func:`json_schema_document` as indented JSON."""
    return json.dumps(json_schema_document(), indent=2, ensure_ascii=False) + "\n"
