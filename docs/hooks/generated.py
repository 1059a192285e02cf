"""MkDocs hook: the reference pages that are derived from the code, never written by hand.

- ``reference/schema.md`` from the JSON Schema the loader checks schema files against
  (``relanon/schemas/relanon.schema.json``);
- ``reference/cli.md`` from the argument parser of the ``relanon`` command (``relanon.cli.app``);
- ``reference/api.md``: one mkdocstrings entry per public name of ``relanon.__all__``, so that a name added
  to (or removed from) the package's public list appears on (or leaves) the page.

Both pages are made at every build, so they cannot drift from what relanon accepts.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JSON_SCHEMA = ROOT / "relanon" / "schemas" / "relanon.schema.json"


def on_files(files, config):
    from mkdocs.structure.files import File  # here: the page generators below run without MkDocs (tests)

    files.append(File.generated(config, "reference/schema.md", content=schema_page()))
    files.append(File.generated(config, "reference/cli.md", content=cli_page()))
    files.append(File.generated(config, "reference/api.md", content=api_page()))
    return files


# ---------------------------------------------------------------- the schema file


def schema_page() -> str:
    schema = json.loads(JSON_SCHEMA.read_text())
    definitions = schema.get("$defs", {})
    lines = [
        "# Schema file reference",
        "",
        "This page is generated from the JSON Schema that every schema file is checked against "
        "(`relanon/schemas/relanon.schema.json`). Unknown keys are errors. The guide page "
        "[The schema file](../guide/schema-file.md) explains the keys with an example.",
        "",
    ]
    sections = [("The file", schema)]
    for name in ("table", "column", "foreignKey", "anonymize", "columnType"):
        if name in definitions:
            sections.append((_TITLES.get(name, name), definitions[name]))
    sections += [(_TITLES.get(n, n), d) for n, d in definitions.items() if n not in {s for s in _TITLES}]
    for title, node in sections:
        lines += [f"## {title}", ""]
        lines += _describe(node, definitions)
        lines.append("")
    return "\n".join(lines)


_TITLES = {
    "table": "A table (`tables.<name>`)",
    "column": "A column (`columns.<name>`)",
    "foreignKey": "A foreign key (`foreign_keys[]`)",
    "anonymize": "How a table is anonymized (`anonymize`)",
    "columnType": "Column types",
}


def _describe(node: dict, definitions: dict) -> list[str]:
    lines = []
    if node.get("description"):
        lines += [node["description"], ""]
    if "enum" in node:
        lines += ["One of: " + ", ".join(f"`{value}`" for value in node["enum"]) + ".", ""]
    if "oneOf" in node and "properties" not in node:
        lines += ["Either:", ""]
        for option in node["oneOf"]:
            lines.append(f"- {_type_of(option, definitions)}")
        lines.append("")
        objects = [option for option in node["oneOf"] if option.get("properties")]
        for option in objects:
            lines += _properties(option, definitions)
    if node.get("properties"):
        lines += _properties(node, definitions)
    return lines


def _properties(node: dict, definitions: dict) -> list[str]:
    required = set(node.get("required", []))
    lines = ["| key | type | required | meaning |", "| --- | --- | --- | --- |"]
    for key, spec in node["properties"].items():
        meaning = _resolve(spec, definitions).get("description", "") or spec.get("description", "")
        lines.append(f"| `{key}` | {_type_of(spec, definitions)} | {'yes' if key in required else 'no'} | "
                     f"{meaning.replace('|', '&#124;')} |")
    if node.get("additionalProperties") is False:
        lines += ["", "No other key is allowed."]
    return lines + [""]


def _resolve(spec: dict, definitions: dict) -> dict:
    reference = spec.get("$ref", "")
    return definitions.get(reference.rsplit("/", 1)[-1], {}) if reference else spec


def _type_of(spec: dict, definitions: dict) -> str:
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return _LINKS.get(name, f"`{name}`")
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    if "enum" in spec:
        return " &#124; ".join(f"`{value}`" for value in spec["enum"])
    if "oneOf" in spec:
        return " or ".join(_type_of(option, definitions) for option in spec["oneOf"])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type_of(spec.get('items', {}), definitions)}" + (
            ", no repeats" if spec.get("uniqueItems") else "")
    if kind == "object":
        values = spec.get("additionalProperties")
        if isinstance(values, dict):
            return f"mapping of name to {_type_of(values, definitions)}"
        return "mapping"
    bounds = []
    if "minimum" in spec:
        bounds.append(f">= {spec['minimum']}")
    if "exclusiveMinimum" in spec:
        bounds.append(f"> {spec['exclusiveMinimum']}")
    if "maximum" in spec:
        bounds.append(f"<= {spec['maximum']}")
    if spec.get("minLength"):
        bounds.append("not empty")
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


_LINKS = {
    "table": "[table](#a-table-tablesname)",
    "column": "[column](#a-column-columnsname)",
    "foreignKey": "[foreign key](#a-foreign-key-foreign_keys)",
    "anonymize": "[anonymize](#how-a-table-is-anonymized-anonymize)",
    "columnType": "[column type](#column-types)",
}


# ---------------------------------------------------------------- the command line


def cli_page() -> str:
    from relanon.cli.app import _parser

    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal's width: the page must not depend on it
    parser = _parser()
    lines = [
        "# Command-line reference",
        "",
        "This page is generated from the argument parser of the `relanon` command; "
        "`relanon COMMAND --help` prints the same text. The exit codes are the same for every command: "
        "0 everything checked holds, 1 the data or the release fails a check, 2 the command could not run as "
        "asked (nothing was written), 130 / 143 interrupted / terminated.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                lines += [f"## relanon {name}", "", sub.description or "", "", "```text",
                          sub.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the API


def api_page() -> str:
    import inspect

    import relanon

    groups = {"Functions": [], "Results": [], "Estimators and schema": [], "Errors": [], "Modules": []}
    for name in relanon.__all__:
        value = getattr(relanon, name)
        if name.startswith("__"):
            continue
        if inspect.ismodule(value):
            groups["Modules"].append(name)
        elif inspect.isclass(value) and issubclass(value, Exception):
            groups["Errors"].append(name)
        elif inspect.isclass(value) and name in {"FactorSpace", "Schema"}:
            groups["Estimators and schema"].append(name)
        elif inspect.isclass(value):
            groups["Results"].append(name)
        else:
            groups["Functions"].append(name)
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings of the names `relanon` exports (`relanon.__all__`). "
        "[Python](../guide/python.md) shows them at work.",
        "",
    ]
    for title, names in groups.items():
        if not names:
            continue
        lines += [f"## {title}", ""]
        for name in names:
            options = "\n    options:\n      show_submodules: false\n      members: false" if title == "Modules" else ""
            lines += [f"::: relanon.{name}{options}", ""]
    return "\n".join(lines)
