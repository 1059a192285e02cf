"""The HTML release report: well-formed, self-contained, complete, deterministic, safe to write."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from relanon.common.binning import hellinger
from relanon.common.errors import ParameterError, StorageError
from relanon.common.progress import Progress, _Step
from relanon.metrics.scenarios import evaluate
from relanon.metrics.signal import column_bins
from relanon.multitable.results import LinkReport
from relanon.present.charts import INSTALL_HINT, MAX_COLUMNS, _columns_shown
from relanon.present.figures import column_shares as _shares
from relanon.present.figures import sample_rows as _sample
from relanon.present.report import render_html, write_report
from relanon.present.sections import privacy_sentences
from relanon.schema.graph import all_links
from relanon.schema.model import load_schema

VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
DATA_URI = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def demo(tiny_hospital_evaluation):
    evaluation = tiny_hospital_evaluation
    before = {side: {n: f.copy(deep=True) for n, f in getattr(evaluation, side).items()}
              for side in ("original", "anonymized")}
    page = render_html(evaluation)
    return evaluation, page, before


@pytest.fixture(scope="module")
def written(demo, tmp_path_factory):
    evaluation, _, _ = demo
    folder = tmp_path_factory.mktemp("review") / "report"
    return write_report(evaluation, folder)


def _without_pictures(evaluation, **changes):
    """A copy without the databases: the report then draws nothing, which keeps these tests fast."""
    return dataclasses.replace(evaluation.without_data(), **changes)


class _Document(HTMLParser):
    """Checks that every element is closed in order, and collects the text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.texts, self.tags = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID_TAGS:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.texts.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.texts).split())


def _parse(page: str) -> _Document:
    document = _Document()
    document.feed(page)
    document.close()
    return document


def _matrix_row(page: str, section: str, row: str) -> list[tuple[str, str]]:
    """(class, text) of each cell of one row of the matrix in ``section``."""
    part = page[page.index(f'<section id="{section}">'):]
    part = part[: part.index("</section>")]
    cells = re.search(rf'<tr><th class="row" scope="row">{row}</th>(.*?)</tr>', part).group(1)
    return re.findall(r'<td class="(\w+)"[^>]*>(.*?)</td>', cells)


# --------------------------------------------------------------------------- the document


def test_html_is_well_formed(demo):
    _, page, _ = demo
    document = _parse(page)
    assert page.startswith("<!DOCTYPE html>")
    assert document.errors == []
    assert document.stack == []
    names = [tag for tag, _ in document.tags]
    assert names[0] == "html" and names.count("html") == names.count("head") == names.count("body") == 1
    for section in ("verdict", "privacy", "signal", "links", "details", "pictures", "glossary"):
        assert ("section", {"id": section}) in document.tags


def test_html_is_self_contained(demo):
    _, page, _ = demo
    sources = re.findall(r'src="([^"]*)"', page)
    assert len(sources) >= 10  # distributions, correlations and factor space per table, one per link
    for source in sources:
        assert DATA_URI.fullmatch(source)
        assert base64.b64decode(source.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    # base64 text may spell "http" by chance; everything else may not
    rest = DATA_URI.sub("", page).lower()
    assert "http" not in rest
    for reference in ("<script", "<link", "@import", "url(", "<iframe", "<object"):
        assert reference not in rest
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(href.startswith("#") for href in hrefs)


def test_report_names_every_table_and_link(demo):
    evaluation, page, _ = demo
    document = _parse(page)
    for table in evaluation.schema:
        assert table.name in document.text
        assert ("h3", {"id": f"table-{table.name}"}) in document.tags
    links = all_links(evaluation.schema)
    assert len(links) == 4
    for link in links:
        label = f"{link.child}.{link.column} -> {link.parent}"
        assert label in document.text
        assert f"{label}: number of {link.child} rows per {link.parent} row" in document.text  # its picture


def test_report_states_audience_privacy_in_words_and_glossary(demo):
    evaluation, page, _ = demo
    text = _parse(page).text
    assert "not itself part of the release" in text
    for sentence in privacy_sentences(evaluation):
        assert sentence in text
    assert [s.split(":")[0] for s in privacy_sentences(evaluation)] == ["doctors", "patients"]
    for name, sentence in evaluation.descriptions.items():
        assert sentence in text, name
    assert "Rows are the individuals protected" in text and "The diagonal is the table alone." in text


def test_detailed_metrics_have_one_row_per_table_scenario_and_reference(demo):
    evaluation, page, _ = demo
    part = page[page.index('<section id="details">'):]
    part = part[: part.index("</section>")]
    rows = re.findall(r'<tr><td class="text">([^<]*)</td><td class="text">([^<]*)</td><td class="text">([^<]*)</td>', part)
    expected = [(t, s, r) for _, t, s, r, _ in evaluation.details.index]
    assert sorted(rows) == sorted(expected)


def test_rendering_never_modifies_the_databases(demo):
    evaluation, _, before = demo
    for side, frames in before.items():
        for name, frame in frames.items():
            pd.testing.assert_frame_equal(getattr(evaluation, side)[name], frame)


# --------------------------------------------------------------------------- colours and warnings


def test_failing_cell_is_red_passing_green_missing_grey(demo):
    evaluation, _, _ = demo
    values = pd.DataFrame(np.nan, index=pd.Index(["doctors", "patients"], name="individual table"),
                          columns=list(evaluation.schema.tables))
    values.loc["patients", "patients"], values.loc["patients", "visits"] = 91.2, 62.0
    values.attrs["headline"] = "hidden_rate"
    passed = pd.DataFrame(pd.NA, index=values.index, columns=values.columns, dtype="boolean")
    passed.loc["patients", "patients"], passed.loc["patients", "visits"] = True, False
    page = render_html(_without_pictures(evaluation, privacy_matrix=values, privacy_passed=passed))
    cells = _matrix_row(page, "privacy", "patients")
    assert cells == [("pass", "91.2"), ("fail", "62.0")]  # only the columns that hold a cell
    assert _matrix_row(page, "privacy", "doctors") == [("na", "&ndash;"), ("na", "&ndash;")]  # every row kept
    colours = dict(re.findall(r"td\.(pass|fail|na)[^{]*\{background:#([0-9a-f]{6})", page))
    red, green, grey = (tuple(int(colours[k][i:i + 2], 16) for i in (0, 2, 4)) for k in ("fail", "pass", "na"))
    assert red[0] > red[1] + 40 and red[0] > red[2] + 40
    assert green[1] > green[0] + 20 and green[1] > green[2] + 20
    assert max(grey) - min(grey) < 10
    assert ("patients: hidden rate 91.2% alone, 62.0% with visits (a privacy metric misses its target)."
            in _parse(page).text)


def test_original_order_warning_banner_and_flagged_link(demo):
    evaluation, _, _ = demo
    quiet = render_html(_without_pictures(evaluation))
    assert 'class="banner"' not in quiet and 'class="sensitive"' not in quiet
    message = ("visits.doctor_id -> doctors used original_order: each anonymized visits row keeps the doctors "
               "of its original record, which weakens privacy")
    links = [LinkReport(r.parent, r.child, r.column, "original_order" if r.column == "doctor_id" else r.method,
                        120, 118, 0.1) for r in evaluation.relations.itertuples()]
    page = render_html(_without_pictures(evaluation, sensitive_choices=[message], links=links))
    banner = page.index('class="banner"')
    assert banner < page.index("<section")  # at the top
    assert message in _parse(page).text
    rows = re.findall(r'<tr class="(\w+)"><td class="text">([^<]*)</td><td class="text">([^<]*)</td><td>([^<]*)</td>', page)
    flagged = {label: (kind, method) for kind, label, method, _ in rows}
    assert flagged["visits.doctor_id -&gt; doctors"][0] == "sensitive"
    assert flagged["visits.doctor_id -&gt; doctors"][1].startswith("original_order")
    assert all(kind == "plain" for label, (kind, _) in flagged.items() if "doctor_id" not in label)
    assert {linked for *_, linked in rows} == {"118 of 120"}  # the run's record, not the schema


def test_without_databases_the_report_says_why_there_is_no_picture(demo):
    evaluation, _, _ = demo
    page = render_html(_without_pictures(evaluation))
    assert "<img" not in page
    assert "need the original and anonymized databases" in page
    assert _parse(page).errors == []


def test_without_matplotlib_the_report_is_written_and_names_the_extra(demo, monkeypatch, tmp_path):
    evaluation, _, _ = demo
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes "import matplotlib" fail
    path = write_report(evaluation, tmp_path / "report")
    page = path.read_text(encoding="utf-8")
    assert "<img" not in page
    assert INSTALL_HINT in _parse(page).text
    assert "patients" in page and _parse(page).errors == []


def test_render_refuses_what_is_not_an_evaluation():
    with pytest.raises(ParameterError, match="Evaluation returned by"):
        render_html({"privacy_matrix": None})


def test_matplotlib_is_imported_only_to_draw_and_pyplot_never():
    code = (
        "import sys\n"
        "import relanon.present.report as r\n"
        "assert 'matplotlib' not in sys.modules, 'imported at module import'\n"
        "import pandas as pd\n"
        "from relanon.metrics.scenarios import evaluate\n"
        "from relanon.schema.model import load_schema\n"
        "s = load_schema({'relanon': 1, 'tables': {'people': {'primary_key': 'id', 'individual': True,\n"
        "                 'columns': {'age': 'integer', 'sex': 'categorical'}}}})\n"
        "db = {'people': pd.DataFrame({'id': range(30), 'age': range(30), 'sex': ['F', 'M', 'M'] * 10})}\n"
        "page = r.render_html(evaluate(s, db, db, progress=False))\n"
        "assert '<img' in page and 'matplotlib' in sys.modules\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot keeps global figures'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- writing


def test_same_evaluation_gives_identical_bytes(demo, written):
    _, page, _ = demo
    assert written.read_bytes() == page.encode("utf-8")


def test_metrics_json_round_trips(demo, written):
    evaluation, _, _ = demo
    assert written.name == "report.html"
    data = json.loads((written.parent / "metrics.json").read_text(encoding="utf-8"))
    assert data == json.loads(evaluation.to_json())
    for row, cells in data["privacy_matrix"].items():
        for column, value in cells.items():
            expected = evaluation.privacy_matrix.loc[row, column]
            assert (value is None) if pd.isna(expected) else value == pytest.approx(expected)
    assert sorted(p.name for p in written.parent.iterdir()) == ["metrics.json", "report.html"]


def test_write_report_refuses_to_write_inside_or_over_an_input(demo, tmp_path):
    evaluation, _, _ = demo
    data = tmp_path / "data"
    data.mkdir()
    (data / "patients.csv").write_text("patient_id\n1\n")
    for target in (data / "report", data):
        with pytest.raises(StorageError, match="input"):
            write_report(_without_pictures(evaluation), target, inputs=[data])
    assert sorted(p.name for p in data.iterdir()) == ["patients.csv"]


def test_write_report_replaces_a_previous_report_but_not_other_files(demo, tmp_path):
    evaluation, _, _ = demo
    light = _without_pictures(evaluation)
    folder = tmp_path / "review"
    write_report(light, folder)
    (folder / "report.html").write_text("old")
    write_report(light, folder)
    assert (folder / "report.html").read_text(encoding="utf-8") == render_html(light)
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(StorageError, match="notes.txt"):
        write_report(light, folder)
    assert (folder / "notes.txt").read_text() == "mine"


# --------------------------------------------------------------------------- what the pictures draw


def test_category_shares_top_modalities_other_and_missing(monkeypatch):
    original = pd.Series(["a", "a", "b", None], dtype="str")
    released = pd.Series(["a", "c", "c", "b"], dtype="str")
    shares = _shares(original, released, "categorical")
    assert shares.labels == ("a", "b", "other", "missing")
    np.testing.assert_allclose(shares.original, [0.5, 0.25, 0.0, 0.25])
    np.testing.assert_allclose(shares.released, [0.25, 0.25, 0.5, 0.0])
    monkeypatch.setattr("relanon.present.figures.MAX_CATEGORIES", 1)
    shares = _shares(original, released, "categorical")
    assert shares.labels == ("a", "other", "missing")
    np.testing.assert_allclose(shares.original, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(shares.released, [0.25, 0.75, 0.0])


def test_category_ties_are_ordered_by_label_whatever_the_row_order():
    first = _shares(pd.Series(["y", "x", "z", "z"]), pd.Series(["x"]), "categorical")
    second = _shares(pd.Series(["z", "x", "z", "y"]), pd.Series(["x"]), "categorical")
    assert first.labels == second.labels == ("z", "x", "y")


def test_pictures_draw_the_bins_of_the_metric():
    # few values: one bar per original value, values never seen in "other" (as the Hellinger metric bins them)
    doses = pd.Series([10.0, 20.0] * 10 + [None] * 5)
    shares = _shares(doses, pd.Series([10.0, 15.0, 20.0, 20.0]), "continuous")
    assert shares.labels == ("10", "20", "other", "missing") and shares.edges is None
    np.testing.assert_allclose(shares.original, [0.4, 0.4, 0.0, 0.2])
    np.testing.assert_allclose(shares.released, [0.25, 0.5, 0.25, 0.0])
    assert hellinger(column_bins(doses, "continuous").shares(doses.to_numpy()), np.array([0.4, 0.4, 0.0, 0.2])) == 0.0
    # many values: the quantile bins of the original, outer edges its range, outside values in the end bins
    original = pd.Series(np.arange(100), dtype="Int64")
    shares = _shares(original, pd.Series([-5, 50, 500], dtype="Int64"), "integer")
    np.testing.assert_allclose(shares.edges, [0, 12, 24, 37, 49, 62, 74, 87, 99])
    np.testing.assert_allclose(shares.released, [1 / 3, 0, 0, 0, 1 / 3, 0, 0, 1 / 3])  # 50 in (49, 62]
    assert shares.missing == (0.0, 0.0)


def test_dates_are_labelled_as_dates():
    dates = pd.Series(pd.to_datetime(["2020-01-01", "2020-02-01"] * 10))
    assert _shares(dates, dates, "datetime").labels == ("2020-01-01", "2020-02-01")


def test_columns_capped_keep_the_most_changed_in_schema_order():
    columns = [f"c{i}" for i in range(MAX_COLUMNS + 2)]
    distances = {c: (0.5 if c in ("c3", "c7") else 0.1 + i / 100) for i, c in enumerate(columns)}
    distances["c0"], distances["c1"] = 0.0, 0.01
    shown, hidden = _columns_shown(columns, distances)
    assert hidden == ["c0", "c1"]
    assert shown == columns[2:]
    assert _columns_shown(columns[:3], {}) == (columns[:3], [])


def test_samples_are_bounded_and_seeded():
    frame = pd.DataFrame({"x": np.arange(1000)})
    first, second = _sample(frame, 50), _sample(frame, 50)
    assert len(first) == 50 and first["x"].is_unique and first["x"].is_monotonic_increasing
    pd.testing.assert_frame_equal(first, second)
    assert _sample(frame, 5000) is frame


def test_docstring_examples_run():
    import doctest

    import relanon.present.report

    failures, tried = doctest.testmod(relanon.present.report, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried >= 3 and failures == 0


def test_wide_table_draws_at_most_max_columns_and_names_the_others():
    from relanon.schema.model import load_schema

    names = [f"x{i:02d}" for i in range(MAX_COLUMNS + 2)]
    schema = load_schema({"relanon": 1, "tables": {"wide": {
        "primary_key": "id", "individual": True, "columns": dict.fromkeys(names, "continuous")}}})
    rng = np.random.default_rng(0)
    original = pd.DataFrame({"id": range(60), **{n: rng.normal(size=60) for n in names}})
    released = original.copy()
    released[names[-1]] = released[names[-1]] * 5  # only the last column moves: it must be drawn,
    # and among the unchanged ones the first in schema order are kept
    evaluation = evaluate(schema, {"wide": original}, {"wide": released}, progress=False)
    text = _parse(render_html(evaluation)).text
    assert "2 more columns, closer to the original, not drawn: x11, x12." in text


ANONYMIZE = {"keep": {}, "avatar": {"k": 2}, "anatomize": {"sensitive": "c", "l": 2},
             "bucketize": {"sensitive": ["c"], "k": 2}}
QUASI_IDENTIFIERS = {"bucketize": {"quasi_identifiers": ["a", "b"]}}


@pytest.mark.parametrize("in_workers", [False, True], ids=["here", "workers"])
@pytest.mark.parametrize("method", list(ANONYMIZE))
def test_only_a_projected_table_warns_about_its_axes(method, in_workers, caplog, recwarn, monkeypatch):
    """Drawn here or by worker processes (whose log records are given out again here), the same warnings."""
    monkeypatch.setattr("relanon.present.charts.PARALLEL_ROWS", 0 if in_workers else 10**12)
    # eight rows, every combination of three balanced two-valued columns once: the three axes share one
    # eigenvalue, so two axes end inside the group and the fit warns about ncp
    combos = [(a, b, c) for a in "pq" for b in "rs" for c in "tu"]
    lookup = pd.DataFrame({"lid": range(8), "a": [x[0] for x in combos], "b": [x[1] for x in combos],
                           "c": [x[2] for x in combos]})
    schema = load_schema({"relanon": 1, "tables": {"lookup": {
        "primary_key": "lid", "columns": {"a": "categorical", "b": "categorical", "c": "categorical"},
        **QUASI_IDENTIFIERS.get(method, {}), "anonymize": {"method": method, **ANONYMIZE[method]}}}})
    released = {"lookup": lookup.iloc[::-1].reset_index(drop=True)}  # the same rows, another order
    evaluation = evaluate(schema, {"lookup": lookup}, released, progress=False)
    caplog.clear()
    html = render_html(evaluation)
    axes_warnings = [r for r in caplog.records if r.levelname == "WARNING" and "ncp" in r.getMessage()]
    assert not [w for w in recwarn if "ncp" in str(w.message)]
    if method != "avatar":  # real records, not projected: no warning, and a sentence instead of the picture
        assert axes_warnings == []
        assert f"(method {method}), not projected: no factor-space picture" in html
    else:  # said of the picture, whose 2 axes are its own: not a call to change the table's ncp (it was)
        [warning] = axes_warnings
        assert "lookup" in warning.getMessage() and "picture" in warning.getMessage()
        assert "ncp: auto avoids it" not in warning.getMessage()


def test_the_pictures_step_counts_pictures_and_advances_once_per_picture(demo, monkeypatch):
    evaluation, page, _ = demo
    advanced = []
    monkeypatch.setattr(_Step, "advance", lambda self, n=1: advanced.append((self.label, self.total, n)))
    lines = []
    assert render_html(evaluation, progress=Progress(write=lines.append)) == page
    drawn = page.count("<img") + page.count("no factor-space picture") + page.count("a single dimension")
    [line] = [line for line in lines if "report pictures" in line]
    assert f"({drawn} pictures of {len(evaluation.schema.tables)} tables and their links)" in line
    assert advanced == [("report pictures", drawn, 1)] * drawn


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="worker processes draw only on a machine of 2 cores or more")
def test_pictures_drawn_by_worker_processes_are_the_bytes_drawn_in_one(demo, monkeypatch, caplog):
    evaluation, _, _ = demo
    monkeypatch.setattr("relanon.present.charts.PARALLEL_ROWS", 10**12)
    here = render_html(evaluation)
    monkeypatch.setattr("relanon.present.charts.PARALLEL_ROWS", 0)
    workers = render_html(evaluation)
    assert workers == here and here.count("<img") >= 10


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="worker processes draw only on a machine of 2 cores or more")
def test_a_worker_dying_leaves_the_rest_drawn_here_each_picture_counted_once(demo, monkeypatch):
    from relanon.present import charts

    evaluation, _, _ = demo
    monkeypatch.setattr(charts, "PARALLEL_ROWS", 10**12)
    here = render_html(evaluation)
    drawing, parent = charts._drawn, os.getpid()

    def dies_in_a_worker_on_the_third(picture):
        if os.getpid() != parent and picture is charts._PLAN[2]:
            os._exit(1)  # the worker process dies: the pool breaks
        return drawing(picture)

    monkeypatch.setattr(charts, "_drawn", dies_in_a_worker_on_the_third)  # inherited by the forked workers
    monkeypatch.setattr(charts, "PARALLEL_ROWS", 0)
    advanced = []
    monkeypatch.setattr(_Step, "advance", lambda self, n=1: advanced.append((self.label, self.total, n)))
    assert render_html(evaluation, progress=Progress(write=lambda line: None)) == here
    [(label, total, _)] = set(advanced)
    assert label == "report pictures" and len(advanced) == total  # each picture counted once, none twice
