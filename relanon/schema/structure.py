"""The meaning of a schema, checked once it is parsed: keys, links, roles, method parameters,
sources and cycles. Every problem is reported, each with its table and column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relanon.common.errors import Problem
from relanon.common.options import did_you_mean
from relanon.schema.associations import association_problems
from relanon.schema.cross_rules import rule_problems
from relanon.schema.graph import find_cycles
from relanon.schema.options import method_options, option, options
from relanon.schema.vocabulary import LINK_METHODS, METHODS

if TYPE_CHECKING:
    from relanon.schema.model import Schema, Table


def structure_problems(schema: Schema) -> list[Problem]:
    """Every problem of meaning in a schema: links, cycles, keys, roles, method parameters."""
    problems: list[Problem] = []
    for table in schema:
        problems += _key_problems(table)
        problems += _link_problems(table, schema)
        problems += _cross_rule_problems(table, schema)
        problems += _role_problems(table)
        problems += _method_problems(table)
    problems += _source_problems(schema)
    problems += _cycle_problems(schema)
    problems += association_problems(schema)
    return problems


def _cross_rule_problems(table: Table, schema: Schema) -> list[Problem]:
    """Rules across a link that name columns its tables do not declare (:mod:`relanon.schema.cross_rules`)."""
    problems = []
    for fk in table.foreign_keys:
        if fk.rules and fk.references in schema.tables:
            parent = schema[fk.references]
            problems += rule_problems(table.name, parent.name, fk.column, fk.rules, set(table.column_names),
                                      set(parent.column_names))
    return problems


def _key_problems(table: Table) -> list[Problem]:
    weight = option("column", "weight")
    problems = [  # the JSON Schema's bounds let NaN through: no comparison holds for it
        Problem(weight.message(c.weight) + "; 1 counts the column as any other", table.name, c.name)
        for c in table.columns
        if c.weight != c.weight
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
        if fk.references == table.name:  # a self-reference: a hierarchy inside the table (relanon.schema.hierarchy)
            if fk.anchor:
                problems.append(Problem("anchor has no meaning for a self-reference (a row is not re-drawn on another "
                                        "row of its table): remove it", table.name, fk.column))
            continue
        if fk.references not in schema.tables:
            problems.append(
                Problem(
                    f"the foreign key references unknown table {fk.references!r}"
                    f"{did_you_mean(fk.references, schema.tables)}; declared tables: {', '.join(schema.tables)}",
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
                        f"listed in {role} but not declared in columns{did_you_mean(name, usable)}",
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
    allowed = method_options(a.method)
    given = {o.name for o in options("anonymize") if o.name != "method" and _given(getattr(a, o.name), o)}
    for name in sorted(given - allowed):
        problems.append(
            Problem(
                f"anonymize.{name} has no meaning for method {a.method!r} (it takes: "
                f"{', '.join(sorted(allowed)) or 'no parameter'}); remove it",
                table.name,
            )
        )
    if a.method == "avatar" and a.combination_min_count is not None and not table.individual:
        problems.append(Problem("anonymize.combination_min_count has no effect: the rule of combinations applies to "
                                "tables of people (individual: true); remove it or mark the table individual",
                                table.name))
    if a.method == "avatar" and not a.protect_sensitive and not table.sensitive:
        problems.append(Problem("anonymize.protect_sensitive: false has no effect: the table declares no sensitive "
                                "columns; remove it", table.name))
    if a.method != "avatar":
        problems += [Problem(f"min_count has no meaning for method {a.method!r} (it releases values as they are); "
                             "remove it", table.name, c.name) for c in table.columns if c.min_count is not None]
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
                        f"{did_you_mean(name, released)}",
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


def is_writable_name(name: str) -> bool:
    """Whether a table may be released under ``name``: a name of its own in a folder (no path separator,
    not ``.``-hidden, not empty), so that a release never lands outside its place.

    Examples
    --------
    >>> is_writable_name("visits"), is_writable_name("../../pwn"), is_writable_name(".hidden")
    (True, False, False)
    """
    name = str(name)
    return bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name and "\0" not in name


def _given(value, declared) -> bool:
    """Whether the file sets an option (the model keeps a boolean's value, not whether it was written)."""
    if declared.type == "boolean":
        return value != declared.default
    return value is not None and value != ()


def _source_problems(schema: Schema) -> list[Problem]:
    problems = []
    seen: dict[str, str] = {}
    for table in schema:
        for name in dict.fromkeys((table.name, table.source_name)):
            if not is_writable_name(name):
                problems.append(Problem(
                    f"{name!r} cannot name a table relanon reads and writes (it is a path, a hidden name or empty); "
                    "name the table and its source without '/', '\\' or a leading '.'", table.name))
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
