"""The tutorials run from top to bottom (they are documentation that must not rot), and show pictures."""

from pathlib import Path

import pytest

TUTORIALS = sorted((Path(__file__).parent.parent / "tutorials").glob("*.ipynb"))
TAUGHT = {"getting_started.ipynb", "your_own_database.ipynb", "tuning_privacy_and_utility.ipynb",
          "release_audit.ipynb"}
DRAWN = TAUGHT  # notebooks that must draw at least one picture inline


@pytest.mark.slow  # each notebook runs relanon end to end on a demo database
@pytest.mark.parametrize("path", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_tutorial_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    errors = [f"{o['ename']}: {o['evalue']}" for o in outputs if o.get("output_type") == "error"]
    assert not errors
    if path.name in DRAWN:
        assert any("image/png" in o.get("data", {}) for o in outputs), "the tutorial draws no picture"


def test_the_tutorials_are_all_there_and_listed_in_the_readme():
    names = {p.name for p in TUTORIALS}
    assert TAUGHT <= names
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    for name in names:
        assert f"tutorials/{name}" in readme, f"{name} is not listed in the README"


def test_committed_notebooks_hold_no_outputs():
    """Outputs would carry a run's data and paths into the repository; the suite runs them fresh."""
    nbformat = pytest.importorskip("nbformat")
    for path in TUTORIALS:
        notebook = nbformat.read(path, as_version=4)
        assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), path.name
