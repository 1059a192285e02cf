"""MkDocs hook: the reference pages that are derived from the code, never written by hand.

- ``reference/schema.md`` from the table of options the schema file is declared in
  (``relanon.schema.options``), from which the JSON Schema the loader checks files against is derived;
- ``reference/cli.md`` from the argument parser of the ``relanon`` command (``relanon.cli.app``);
- ``reference/api.md``: one mkdocstrings entry per public name of ``relanon.__all__``, so that a name added
  to (or removed from) the package's public list appears on (or leaves) the page.

Both pages are made at every build, so they cannot drift from what relanon accepts.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def on_files(files, config):
    from mkdocs.structure.files import File  # here: the page generators below run without MkDocs (tests)

    files.append(File.generated(config, "reference/schema.md", content=schema_page()))
    files.append(File.generated(config, "reference/cli.md", content=cli_page()))
    files.append(File.generated(config, "reference/api.md", content=api_page()))
    return files


# ---------------------------------------------------------------- the schema file


SECTIONS = {
    "file": "The file",
    "table": "A table (`tables.<name>`)",
    "column": "A column in its long form (`columns.<name>`)",
    "foreign_key": "A foreign key (`foreign_keys[]`)",
    "anonymize": "How a table is anonymized (`anonymize`)",
}


def schema_page() -> str:
    """The reference of the schema file, from the table of options it is declared in
    (:func:`relanon.schema.options.option_table`), from which the JSON Schema is derived too."""
    from relanon.schema.options import option_table

    rows = option_table()
    lines = [
        "# Schema file reference",
        "",
        "This page is generated from the table of options the schema file is declared in "
        "(`relanon.schema.options.OPTIONS`), from which the JSON Schema that every schema file is checked "
        "against (`relanon/schemas/relanon.schema.json`) and the checks of the loader are derived too. "
        "Unknown keys are errors, with a \"did you mean\". The guide page "
        "[The schema file](../guide/schema-file.md) explains the keys with an example.",
        "",
        "A column is declared by its type alone (`age: integer`) or in its long form "
        "(`weight_kg: {type: continuous, weight: 2.0}`).",
        "",
    ]
    for section in [s for s in SECTIONS if any(r["section"] == s for r in rows)] + sorted(
            {r["section"] for r in rows} - set(SECTIONS)):
        lines += [f"## {SECTIONS.get(section, section)}", "",
                  "| key | type | values | default | required | meaning |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for row in (r for r in rows if r["section"] == section):
            meaning = row["description"]
            if row["methods"]:
                meaning += f" (read by: {row['methods'] if isinstance(row['methods'], str) else ', '.join(row['methods'])})"
            cells = [f"`{row['path']}`", row["type"], row["bounds"], f"`{row['default']}`" if row["default"] else "",
                     "yes" if row["required"] else "no", meaning]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _cell(text) -> str:
    return str(text).replace("|", "&#124;").replace("\n", " ")


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
