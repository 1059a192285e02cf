"""Reading a schema file: YAML or JSON text, its aliases and duplicate keys, and the JSON Schema of
the format, with one message per problem that names the table and column and says what to write.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jsonschema
import yaml

from relanon.common.errors import Problem, SchemaError
from relanon.common.options import did_you_mean
from relanon.schema.options import Option, default, json_schema_document, option, options
from relanon.schema.vocabulary import COLUMN_TYPES


def json_schema() -> dict:
    """The JSON Schema of the schema file format, made from the table of options
    (:func:`relanon.schema.options.json_schema_document`; ``schemas/relanon.schema.json`` is its text)."""
    return json_schema_document()


def read_source(source) -> str:
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


def parse_text(text: str) -> tuple[object, list[Problem]]:
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


def json_schema_problems(raw) -> list[Problem]:
    validator = jsonschema.Draft202012Validator(json_schema())
    problems = []
    for error in sorted(validator.iter_errors(raw), key=lambda e: [str(p) for p in e.absolute_path]):
        problems.append(_explain(error, raw))
    return problems


BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "type", "minLength", "uniqueItems", "minItems")


def _option_at(path: tuple, raw) -> tuple[Option, str | None] | None:
    """The option a path of the document names, and the table's method for an ``anonymize`` option."""
    if len(path) == 1:
        section = "file"
    elif len(path) == 3 and path[0] == "tables":
        section = "table"
    elif len(path) == 4 and path[0] == "tables" and path[2] == "anonymize":
        section = "anonymize"
    elif len(path) == 5 and path[0] == "tables" and path[2] == "foreign_keys":
        section = "foreign_key"
    else:
        return None
    try:
        found = option(section, str(path[-1]))
    except KeyError:
        return None
    method = None
    if section == "anonymize":
        spec = raw["tables"][path[1]]["anonymize"]
        method = str(spec.get("method", default("anonymize", "method")))
    return found, method


def _explain(error, raw=None) -> Problem:
    path = tuple(error.absolute_path)
    table, column = _locate(path)
    inside_table = path[2:] if table is not None and column is None else path if table is None else ()
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in inside_table).lstrip(".")
    prefix = f"{where}: " if where else ""
    instance, kind = error.instance, error.validator
    if kind == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        unknown = [k for k in instance if k not in known]
        return Problem(prefix + "; ".join(unknown_key(k, known) for k in unknown), table, column)
    if path[-1:] == ("association",) or (kind == "required" and "'association'" in error.message):
        return Problem("primary_key is null, but the table is not declared an association: name the column whose "
                       "values are unique on every row, or, for a table of links between its parents with no key of "
                       "its own, add association: true", table)
    if kind == "required":
        return Problem(prefix + error.message.replace("is a required property", "is required"), table, column)
    if path and path[-1] == "primary_key" and isinstance(instance, list):
        return Problem(
            "composite primary keys are not possible in this format: add a single-column key "
            "(for example a row number) and declare it as primary_key; a table of links whose key is its "
            "foreign keys (a playlist and a track) is declared primary_key: null and association: true",
            table,
        )
    if column is not None and kind == "oneOf":
        return Problem(_bad_column_message(instance), table, column)
    if kind == "enum":
        return Problem(prefix + unknown_value(instance, error.validator_value), table, column)
    if path and path[-1] == "ncp" and kind == "oneOf":
        return Problem(f"{prefix}ncp must be a positive integer or 'auto'{did_you_mean(instance, ['auto'])}, got {instance!r}",
                       table, column)
    located = _option_at(path, raw) if kind in BOUNDS and column is None else None
    if located is not None:
        found, method = located
        return Problem(found.message(instance, method), table)
    if path == ("relanon",):
        return Problem(f"this relanon reads schema format 1; the file says relanon: {instance!r}")
    message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
    return Problem(prefix + message, table, column)


COLUMN_KEYS = tuple(o.name for o in options("column"))


def _bad_column_message(instance) -> str:
    if isinstance(instance, str):
        return unknown_value(instance, COLUMN_TYPES, what="type")
    if isinstance(instance, Mapping):
        unknown = [k for k in instance if k not in COLUMN_KEYS]
        if unknown:
            return "; ".join(unknown_key(k, list(COLUMN_KEYS)) for k in unknown)
        if "type" not in instance:
            return "the long form needs a 'type', e.g. {type: continuous, weight: 2.0}"
        if instance["type"] not in COLUMN_TYPES:
            return unknown_value(instance["type"], COLUMN_TYPES, what="type")
        count = instance.get("min_count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            return option("column", "min_count").message(count)
        return option("column", "weight").message(instance.get("weight"))
    return f"a column is declared by its type ({', '.join(COLUMN_TYPES)}), got {instance!r}"


def unknown_key(key, known) -> str:
    return f"unknown key {key!r}{did_you_mean(key, known)}"


def unknown_value(value, allowed, what="value") -> str:
    return f"unknown {what} {value!r}{did_you_mean(value, allowed)}; expected one of: {', '.join(map(str, allowed))}"
