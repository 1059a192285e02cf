"""The shape of the package: layers import downward only, without cycles or imports hidden in functions.

The layers, bottom to top (docs/development.md, "Architecture"):
common < schema < stores < engine < multitable (and distributed) < metrics < audit < present < cli.
``datasets`` may import anything below ``present``. The package root (``relanon/__init__.py``)
and ``__main__`` sit above everything: they only re-export and start the command line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

import relanon

PACKAGE = Path(relanon.__file__).parent

LAYERS = {
    "common": 0,
    "schemas": 0,  # package data: the JSON Schema and example schemas
    "schema": 1,
    "stores": 2,
    "engine": 3,
    "multitable": 4,
    "distributed": 4,
    "metrics": 5,
    "audit": 6,
    "datasets": 6.5,
    "present": 7,
    "cli": 8,
    "__main__": 9,
    "": 9,  # the package root
}

# Optional heavy dependencies, imported where used with a message naming the extra to install.
OPTIONAL = {"matplotlib", "sqlalchemy", "psycopg", "dask", "distributed"}
# Our own modules that import an optional dependency when imported: the command line loads the Dask
# engine only for ``--engine dask``.
OPTIONAL_OWN = {"relanon.distributed"}

# Function-local imports still to move to the top of their module (none: keep it so).
PENDING_LOCAL: set[tuple[str, str]] = set()
# Function-local imports for the command line's start: the parser answers (--help, a wrong option) before the
# library, its commands, is loaded.
STARTUP_LOCAL = {("relanon.cli.app", "relanon.cli.commands")}


def module_name(path: Path) -> str:
    parts = ("relanon", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> float:
    parts = module.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else ""]


def type_checking_nodes(tree: ast.AST) -> set[int]:
    """Ids of the import nodes inside ``if TYPE_CHECKING:`` blocks (never executed)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(inner) for inner in ast.walk(node) if isinstance(inner, ast.Import | ast.ImportFrom)}
    return out


def imports_of(path: Path, module: str | None = None):
    """(imported module, line, inside a function) for every executed import of the module at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = type_checking_nodes(tree)
    local = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
             for inner in ast.walk(node) if isinstance(inner, ast.Import | ast.ImportFrom)}
    module = module or module_name(path)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = module.split(".")[: len(module.split(".")) - node.level + (path.name == "__init__.py")]
                names = [".".join([*base, node.module] if node.module else base)]
            else:
                names = [node.module]
            # "from relanon.x import y" may import the submodule relanon.x.y
            names += [f"{names[0]}.{alias.name}" for alias in node.names
                      if (PACKAGE / Path(*names[0].split(".")[1:]) / f"{alias.name}.py").exists()
                      or (PACKAGE / Path(*names[0].split(".")[1:]) / alias.name / "__init__.py").exists()]
        else:
            continue
        for name in names:
            yield name, node.lineno, id(node) in local


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def relanon_imports():
    for module, path in MODULES.items():
        for name, line, local in imports_of(path):
            if name == "relanon" or name.startswith("relanon."):
                yield module, name, line, local


def test_every_module_belongs_to_a_layer():
    unknown = sorted(m for m in MODULES if (m.split(".") + [""])[1] not in LAYERS)
    assert not unknown, f"modules outside the known layers (add the folder to LAYERS): {unknown}"


def upward_imports(edges) -> list[str]:
    """``(module, imported, line)`` triples whose imported module sits in a layer above."""
    return [f"{module} (line {line}) imports {name}" for module, name, line in edges if layer(name) > layer(module)]


def import_cycles(edges, modules) -> list[list[str]]:
    graph = nx.DiGraph()
    for module, name, _ in edges:
        if name in modules and name != module and not module.startswith(name + "."):
            graph.add_edge(module, name)  # a module importing its own package is Python's normal order
    return list(nx.simple_cycles(graph))


EDGES = [(module, name, line) for module, name, line, _ in relanon_imports()]


def test_no_module_imports_from_a_layer_above_it():
    upward = upward_imports(EDGES)
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_the_import_graph_has_no_cycle():
    cycles = import_cycles(EDGES, MODULES)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join([*c, c[0]]) for c in cycles)


def test_no_function_local_import_but_optional_dependencies():
    found = []
    for module, path in MODULES.items():
        for name, line, local in imports_of(path):
            if local and name.split(".")[0] not in OPTIONAL and name not in OPTIONAL_OWN \
                    and (module, name) not in PENDING_LOCAL | STARTUP_LOCAL:
                found.append(f"{module} (line {line}) imports {name} inside a function")
    assert not found, "move these imports to the top of their module:\n" + "\n".join(found)


def test_no_module_imports_a_private_name_of_another():
    """What a module shares is public; a private name (``_CONTAINERS``) read elsewhere is a seam that tears."""
    found = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("relanon"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    found.append(f"{module} imports {', '.join(private)} from {node.module}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module", ["relanon.schema.model", "relanon.schema.graph"])
def test_model_and_graph_do_not_import_each_other_at_import_time(module):
    other = {"relanon.schema.model": "relanon.schema.graph", "relanon.schema.graph": "relanon.schema.model"}[module]
    top_level = [name for name, _, local in imports_of(MODULES[module]) if not local]
    assert other not in top_level


def test_the_detector_sees_an_upward_import_a_local_import_and_a_cycle(tmp_path):
    """The checks above can fail: an engine module importing the CLI inside a function is upward and
    local; model and graph importing each other are a cycle."""
    fake = tmp_path / "fake.py"
    fake.write_text("import relanon.schema.graph\n\n\ndef f():\n    from relanon.cli import main\n")
    found = {(name, local) for name, _, local in imports_of(fake, "relanon.engine.fake")}
    assert {("relanon.schema.graph", False), ("relanon.cli", True)} <= found
    edges = [("relanon.engine.fake", name, 1) for name, _ in found]
    assert upward_imports(edges) == ["relanon.engine.fake (line 1) imports relanon.cli"]
    pair = [("relanon.schema.model", "relanon.schema.graph", 1), ("relanon.schema.graph", "relanon.schema.model", 1)]
    assert import_cycles(pair, MODULES) and not import_cycles(pair[:1], MODULES)


def test_the_dask_engine_reads_the_local_run_only_through_its_policy():
    """Both engines follow one per-table policy (relanon.multitable.policy) and one linking package: the Dask
    engine imports nothing from the local engine's run (relanon.multitable.pipeline)."""
    found = [f"{module} (line {line}) imports {name}" for module, name, line in EDGES
             if module.startswith("relanon.distributed") and name == "relanon.multitable.pipeline"]
    assert not found, "\n".join(found)


def test_the_linking_modules_stay_small():
    """One module per step of a link, none over 500 lines."""
    long = {m: n for m, path in MODULES.items()
            if m.startswith("relanon.multitable") and (n := len(path.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long, f"modules over 500 lines: {long}"
