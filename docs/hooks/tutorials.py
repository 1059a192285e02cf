"""MkDocs hook: the tutorials rendered with their outputs.

The notebooks in ``tutorials/`` are committed without outputs (a run's data and paths stay out of the
repository; the test suite executes them). For the site, each is executed here, from a fresh temporary
working folder, with the same client the tests use (nbclient), and the executed copy is handed to
mkdocs-jupyter as ``tutorials/<name>.ipynb`` (which renders it without executing again).

Executed copies are kept in ``.docs-cache/executed/tutorials/``, each with the SHA-256 of the notebook and of
relanon's source files beside it: a rebuild re-executes a notebook only when it or the package changed.
``RELANON_DOCS_EXECUTE=0`` renders the notebooks without outputs (a quick preview while writing).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
CACHE = ROOT / ".docs-cache" / "executed"
TIMEOUT = 900  # seconds per cell


@event_priority(100)  # before mkdocs-jupyter, which picks the notebooks up among the files
def on_files(files, config):
    execute = os.environ.get("RELANON_DOCS_EXECUTE", "1") != "0"
    package = _package_digest() if execute else ""
    for notebook in sorted(TUTORIALS.glob("*.ipynb")):
        # A File with a source folder, not File.generated: mkdocs-jupyter's wrapper reads the path from it.
        folder = _executed(notebook, package) if execute else ROOT
        files.append(File(f"tutorials/{notebook.name}", src_dir=str(folder), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    return files


def _package_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "relanon").rglob("*")):
        if path.is_file() and path.suffix in {".py", ".json", ".yaml"}:
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _executed(notebook: Path, package: str) -> Path:
    """The folder holding ``tutorials/<notebook>`` executed (executing it when its copy is stale)."""
    key = hashlib.sha256(notebook.read_bytes() + package.encode()).hexdigest()
    target = CACHE / "tutorials" / notebook.name
    stamp = target.with_suffix(".sha256")
    if target.exists() and stamp.exists() and stamp.read_text() == key:
        return CACHE
    import nbclient
    import nbformat

    document = nbformat.read(notebook, as_version=4)
    with tempfile.TemporaryDirectory(prefix="relanon-tutorial-") as workdir:
        nbclient.NotebookClient(document, timeout=TIMEOUT, kernel_name="python3",
                                resources={"metadata": {"path": workdir}}).execute()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    nbformat.write(document, partial)
    partial.replace(target)
    stamp.write_text(key)
    return CACHE
