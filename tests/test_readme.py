"""The README's commands and Python names are real: every `relanon ...` command it shows parses with the
command's own argument parser, and every Python name it cites imports. The documentation site's generated
reference pages are derived from the same parser and JSON Schema."""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from relanon.cli.app import _parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
NAME = re.compile(r"(?<![\w/.-])relanon(?:\.\w+)+")


def _blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README) if lang == language]


def _commands() -> list[str]:
    """Every `relanon ...` command of the README: in its shell blocks and in its inline code."""
    found = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            line = line.split("#", 1)[0]
            for part in re.split(r"&&|;|\|", line):
                if part.strip().startswith("relanon "):
                    found.append(part.strip())
    prose = FENCE.sub("", README)
    found += [code.strip() for code in re.findall(r"`(relanon [^`]+)`", prose)]
    return found


COMMANDS = _commands()


def test_the_readme_shows_the_commands_of_the_tour():
    verbs = {shlex.split(command)[1] for command in COMMANDS}
    assert {"demo", "init", "validate", "anonymize", "assess", "audit"} <= verbs


def _verbs() -> set[str]:
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(commands.choices)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_readme_command_parses(command):
    words = [word for word in shlex.split(command)[1:] if word != "--help"]
    if words[:1] == ["COMMAND"]:  # `relanon COMMAND --help`: the help of any command
        return
    assert words[0] in _verbs(), f"{words[0]} is not a relanon command"
    if len(words) == 1:  # the command named in prose, without its arguments
        return
    args = _parser().parse_args(words)  # argparse exits (SystemExit) on an unknown option or a missing one
    assert args.command == words[0]


def test_a_wrong_command_would_be_caught():
    """The check above can fail: a misspelt option does not parse."""
    with pytest.raises(SystemExit):
        _parser().parse_args(["anonymize", "schema.yaml", "--data", "d", "--out", "o", "--sead", "7"])


def _python_names() -> set[str]:
    names = set(NAME.findall(README))
    for block in _blocks("python"):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("relanon"):
                names |= {f"{node.module}.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names if alias.name.startswith("relanon")}
            elif isinstance(node, ast.Attribute):
                chain, value = [node.attr], node.value
                while isinstance(value, ast.Attribute):
                    chain.append(value.attr)
                    value = value.value
                if isinstance(value, ast.Name) and value.id == "relanon":
                    names.add(".".join(["relanon", *reversed(chain)]))
    return names


NAMES = sorted(_python_names())


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except ModuleNotFoundError:  # a parent is a module, not a package: the name is an attribute
            continue
        value = importlib.import_module(module)
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ImportError(dotted)


def test_the_readme_cites_python_names():
    assert {"relanon.anonymize", "relanon.present.verdict.verdict_text"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_each_readme_python_name_imports(name):
    if name.split(".")[-1] in {"tables"}:  # an attribute of a result in the example, checked by its type below
        return
    assert _resolve(name) is not None


def test_the_result_attributes_the_readme_uses_exist():
    from relanon import AnonymizationResult

    assert "tables" in AnonymizationResult.__dataclass_fields__


def test_the_readme_installs_extras_from_the_clone_only():
    """relanon is not published on a package index: the README installs it from the clone."""
    assert not re.search(r"pip install ['\"]?relanon\[", README)
    for extra in re.findall(r'pip install -e "\.\[(\w+)\]"', README):
        assert extra in _extras(), extra


def _extras() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^(\w+) = ", section, re.M))


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= 250


def _hook():
    spec = importlib.util.spec_from_file_location("docs_generated", ROOT / "docs" / "hooks" / "generated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_page_holds_every_command_and_option():
    page = _hook().cli_page()
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        assert f"## relanon {name}" in page
        for action in sub._actions:
            for option in action.option_strings:
                assert option in page, (name, option)


def test_the_schema_reference_page_holds_every_option_and_every_key_of_the_json_schema():
    import json

    from relanon.schema.options import option_table

    page = _hook().schema_page()
    for row in option_table():
        assert f"`{row['path']}`" in page, row["path"]
    schema = json.loads((ROOT / "relanon" / "schemas" / "relanon.schema.json").read_text())
    paths = {row["path"].rsplit(".", 1)[-1] for row in option_table()}

    def keys(node):
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                yield key
                yield from keys(value)
            for value in node.values():
                if isinstance(value, (dict, list)):
                    yield from keys(value)
        elif isinstance(node, list):
            for value in node:
                yield from keys(value)

    assert set(keys(schema)) <= paths
