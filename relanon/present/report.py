"""The release report: one self-contained HTML page, and the metrics as JSON.

The page is for the people who decide whether a release goes out. It opens offline (inline CSS,
pictures as base64 PNG data URIs, no script, no font, no link to fetch) and shows, top down:

- a warning banner when a link used ``original_order`` matching, the least private method;
- the verdict, the privacy of every individual table in words, and the summary matrices as coloured
  grids (green: every metric of the scenario meets its target, red: one misses, grey: no scenario);
- the links with the matching method each used, and the detailed metrics per table and scenario;
- the pictures people look at rather than read: per column, the original and anonymized
  distributions; per table, the correlation matrices side by side and the first two factor-space
  dimensions of originals and avatars overlaid; per link, the children-per-parent histograms;
- a glossary explaining every metric in one sentence.

The pictures show original data, so the report itself is never part of the release. They need
matplotlib (the ``report`` extra); without it the page is written without pictures and says so.
matplotlib is imported only when pictures are drawn, through its object-oriented API on the Agg
canvas: pyplot, its global figure list and the user's backend are never touched.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from relanon.common.atomic import atomic_directory
from relanon.common.errors import ParameterError, RelanonError
from relanon.common.progress import as_progress
from relanon.engine.factor_space import NUMERIC_KINDS, FactorSpace, numeric_values
from relanon.metrics.failures import failures
from relanon.metrics.scenarios import Evaluation, children_per_parent, similarity_passed
from relanon.metrics.signal import column_bins, column_values
from relanon.multitable.views import STANDALONE
from relanon.present.attacks import attacks_section
from relanon.present.verdict import PERCENT_METRICS, failure_text, figure
from relanon.schema.graph import all_links
from relanon.stores.outputs import FolderOutput, check_outputs, only_entries

REPORT_FILE = "report.html"
METRICS_FILE = "metrics.json"
INSTALL_HINT = 'pip install "relanon[report]"'

MAX_COLUMNS = 12  # distribution pictures per table
MAX_CATEGORIES = 20  # bars per column binned by value, the rest grouped as "other"
MAX_CORRELATION_COLUMNS = 20
SCATTER_SAMPLE = 5_000  # points per side in the factor-space picture
FIT_SAMPLE = 20_000  # original rows the picture's factor space is fitted on
PICTURE_SEED = 0
DPI = 80
ORIGINAL_COLOUR, ANONYMIZED_COLOUR = "#4c72b0", "#dd8452"

# Percentages (PERCENT_METRICS, shared with the terminal) are shown with one decimal; the others with three
# significant digits...
# ...except these, compared with a target near 0 or 1, where 3 significant digits would round onto it.
FRACTION_METRICS = frozenset({"children_per_parent", "distance_to_closest", "closest_distances_ratio"})

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1100px;padding:0 1.5em 3em;color:#222;line-height:1.45}
h1{margin-top:1em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
.audience{background:#eef3fb;border-left:4px solid #4c72b0;padding:.6em 1em}
.banner{background:#fde2e1;border:2px solid #c0392b;padding:.6em 1em;margin:1em 0}
.banner strong{color:#a93226}
table{border-collapse:collapse;margin:.6em 0}
th,td{border:1px solid #ccc;padding:.25em .55em;text-align:right;font-variant-numeric:tabular-nums}
th{background:#f5f5f5}th.row{text-align:left}td.text{text-align:left}
td.pass,span.pass{background:#c8e6c9}td.fail,span.fail{background:#f4b6b0}
td.na,span.na{background:#e4e4e4;color:#777}tr.sensitive td.text{background:#fde2e1;font-weight:600}
.legend span{display:inline-block;padding:.1em .6em;margin-right:.6em;border:1px solid #ccc}
.matrix td{min-width:5.5em;text-align:center}
.note{color:#555;font-size:.92em}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:.92em}
dt{font-weight:600;margin-top:.4em}dd{margin-left:1.5em}
"""


# --------------------------------------------------------------------------- public API


def render_html(evaluation, assessment=None, *, progress=False) -> str:
    """The release report of ``evaluation`` as one self-contained HTML document.

    Parameters
    ----------
    evaluation : Evaluation
        What :func:`relanon.metrics.scenarios.evaluate` returned. Its in-memory ``schema``,
        ``original`` and ``anonymized`` databases are needed for the pictures; without them (or
        without matplotlib) the report holds every figure but no picture, and says why.
    assessment : Assessment, optional
        What :func:`relanon.assess` returned: adds the attacks and their risk matrix.
    progress : bool or Progress, default False
        Show the drawing of the pictures as a step (a bar over the tables).

    Returns
    -------
    str
        The document. The same evaluation always gives the same text.

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.metrics.scenarios import evaluate
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "individual": True, "columns": {"age": "integer", "sex": "categorical"}}}})
    >>> people = {"people": pd.DataFrame({"id": range(30), "age": range(30), "sex": ["F", "M", "M"] * 10})}
    >>> page = render_html(evaluate(schema, people, people, progress=False))
    >>> page.startswith("<!DOCTYPE html>") and "people" in page
    True
    """
    if not isinstance(evaluation, Evaluation):
        raise ParameterError(
            "render_html expects the Evaluation returned by relanon.metrics.scenarios.evaluate, "
            f"got {type(evaluation).__name__}"
        )
    from relanon import __version__

    name = evaluation.schema.name if evaluation.schema is not None else None
    title = f"Release report: {name}" if name else "Release report"
    body = [
        f"<header><h1>{_e(title)}</h1>",
        ('<p class="audience">This report is for the people who decide whether the anonymized database '
        "may be released. It shows distributions of the <em>original</em> data: it is not itself part "
        "of the release and must not be published with it.</p></header>"),
        _sensitive_banner(evaluation),
        _contents(assessment is not None),
        _verdict_section(evaluation),
        _privacy_section(evaluation),
        attacks_section(assessment),
        _signal_section(evaluation),
        _links_section(evaluation),
        _details_section(evaluation),
        _pictures_section(evaluation, as_progress(progress)),
        _glossary_section(evaluation),
        f'<footer class="note"><p>Made by relanon {_e(__version__)}.</p></footer>',
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body>\n</html>\n"
    )


def write_report(evaluation, folder, *, inputs=(), overwrite: bool = False, files=None, assessment=None) -> Path:
    """Write ``report.html`` and ``metrics.json`` into ``folder``, atomically.

    Parameters
    ----------
    evaluation : Evaluation
        What :func:`relanon.metrics.scenarios.evaluate` returned.
    folder : str or Path
        The report's folder. It is created, or replaced whole when it holds nothing but a
        previous report; a folder holding other files is refused unless ``overwrite``.
    inputs : iterable of paths
        Where the data came from: writing over or inside them is refused.
    overwrite : bool, default False
        Replace the folder whole even when it holds other files.
    files : mapping of str to str, optional
        The report's files as :func:`render_report` made them (rendered again when not given).
    assessment : Assessment, optional
        What :func:`relanon.assess` returned: the attacks join the page and ``metrics.json``.

    Returns
    -------
    Path
        The path of ``report.html``.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> from relanon.metrics.scenarios import evaluate
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "individual": True, "columns": {"age": "integer", "sex": "categorical"}}}})
    >>> people = {"people": pd.DataFrame({"id": range(30), "age": range(30), "sex": ["F", "M", "M"] * 10})}
    >>> folder = Path(tempfile.mkdtemp()) / "review"
    >>> write_report(evaluate(schema, people, people, progress=False), folder).name
    'report.html'
    >>> sorted(p.name for p in folder.iterdir())
    ['metrics.json', 'report.html']
    """
    folder = Path(folder)
    check_outputs([report_output(folder, overwrite=overwrite)], inputs)
    files = render_report(evaluation, assessment) if files is None else files
    with atomic_directory(folder) as tmp:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
    return folder / REPORT_FILE


def render_report(evaluation, assessment=None, *, progress=False) -> dict[str, str]:
    """The report's files (file name -> text), rendered in memory: nothing is written.

    With an ``assessment`` (:func:`relanon.assess`), the page has an Attacks section and
    ``metrics.json`` holds the attacks under ``"assessment"``. ``progress`` shows the pictures
    being drawn (see :func:`render_html`).
    """
    metrics = evaluation.to_json() if assessment is None else json.dumps(
        {**evaluation.to_dict(), "assessment": assessment.to_dict()}, indent=2, default=str) + "\n"
    return {REPORT_FILE: render_html(evaluation, assessment, progress=progress), METRICS_FILE: metrics}


def report_output(folder, *, flag: str | None = None, overwrite: bool = False) -> FolderOutput:
    """The report folder as an output location: relanon's own when it holds only a report's files."""
    return FolderOutput(folder, own_entries=only_entries(REPORT_FILE, METRICS_FILE),
                        own="a report folder it made (report.html and metrics.json alone)",
                        what="the report", flag=flag, overwrite=overwrite)


# --------------------------------------------------------------------------- text sections


def _sensitive_banner(evaluation) -> str:
    if not evaluation.sensitive_choices:
        return ""
    items = "".join(f"<li>{_e(choice)}</li>" for choice in evaluation.sensitive_choices)
    return (
        '<div class="banner" role="alert"><p><strong>Warning: this release made choices that weaken '
        "privacy.</strong> With original_order matching, each anonymized child row keeps the parent of its "
        "original record, so the links are those of the real data: the least private method. Check the "
        f"privacy of the affected tables below before deciding.</p><ul>{items}</ul></div>"
    )


def _contents(attacks: bool = False) -> str:
    entries = [("verdict", "Verdict"), ("privacy", "Privacy"), *([("attacks", "Attacks")] if attacks else []),
               ("signal", "Signal"), ("links", "Links"),
               ("details", "Detailed metrics"), ("pictures", "Pictures"), ("glossary", "Glossary")]
    return "<nav><p>" + " | ".join(f'<a href="#{key}">{label}</a>' for key, label in entries) + "</p></nav>"


def _verdict_section(evaluation) -> str:
    failed = failures(evaluation)  # the list the terminal prints too
    if failed:
        shown = "".join(f"<li>{_e(failure_text(f))}</li>" for f in failed)
        count = "1 measure misses its target" if len(failed) == 1 else f"{len(failed)} measures miss their targets"
        verdict = (f'<p><span class="fail">{count}.</span> '
                   f"The tables below show them in red.</p><ul>{shown}</ul>")
    else:
        verdict = '<p><span class="pass">Every measure meets its target.</span></p>'
    notes = "".join(f"<li>{_e(note)}</li>" for note in evaluation.notes)
    notes = f'<p>Notes:</p><ul class="note">{notes}</ul>' if notes else ""
    return f'<section id="verdict"><h2>Verdict</h2>{verdict}{notes}</section>'


def _privacy_section(evaluation) -> str:
    matrix, passed = evaluation.privacy_matrix, evaluation.privacy_passed
    if matrix.empty:
        return ('<section id="privacy"><h2>Privacy</h2><p>No table is declared individual: privacy is '
                "measured for individual tables only.</p></section>")
    hidden = evaluation.privacy_headline == "hidden_rate"
    label = "hidden rate (%)" if hidden else "distance to closest"
    sentences = "".join(f"<li>{_e(text)}</li>" for text in privacy_sentences(evaluation))
    guide = (
        "<p>Rows are the individuals protected; columns are the tables that could leak information "
        "about them once linked to the row's table. The diagonal is the table alone.</p>"
    )
    return (
        '<section id="privacy"><h2>Privacy</h2>'
        f"<ul>{sentences}</ul>"
        f"<h3>Privacy matrix: {_e(label)}</h3>{guide}"
        + _matrix_grid(matrix, passed, lambda v: _format(evaluation.privacy_headline, v),
                       _cell_views(evaluation, "privacy"), "below target")
        + "</section>"
    )


def privacy_sentences(evaluation) -> list[str]:
    """The privacy of every individual table in words, one sentence each.

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.metrics.scenarios import evaluate
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "individual": True, "columns": {"age": "integer", "sex": "categorical"}}}})
    >>> people = {"people": pd.DataFrame({"id": range(30), "age": range(30), "sex": ["F", "M", "M"] * 10})}
    >>> privacy_sentences(evaluate(schema, people, people, progress=False))
    ['people: distance to closest 0.000 alone (row direct match protection 0.0 %, below its target of 90 %).']
    """
    matrix, passed = evaluation.privacy_matrix, evaluation.privacy_passed
    headline = evaluation.privacy_headline
    label = headline.replace("_", " ")
    unit = "%" if headline in PERCENT_METRICS else ""
    missed: dict = {}  # (table, reference) -> the privacy metrics of the cell that miss their target
    for failure in failures(evaluation):
        if failure.kind == "privacy":
            missed.setdefault((failure.table, failure.reference), []).append(failure)
    sentences = []
    for table in matrix.index:
        others = [c for c in matrix.columns if c != table]
        parts = []
        for column in [table, *others]:
            value = matrix.loc[table, column]
            if pd.isna(value):
                continue
            where = "alone" if column == table else f"with {column}"
            failed = missed.get((table, column), [])
            if not failed and _failing(passed.loc[table, column]):  # a matrix not made by evaluate: no figures
                reading = " (a privacy metric misses its target)"
            else:
                reading = _missed_text(failed, headline)
            parts.append(f"{_format(headline, value)}{unit} {where}{reading}")
        sentences.append(f"{table}: {label} {', '.join(parts)}." if parts else f"{table}: no privacy measure could be computed.")
    return sentences


def _missed_text(missed: list, headline: str) -> str:
    """What a cell's figure does not say: which of its privacy metrics miss their target, and how."""
    if not missed:
        return ""
    texts = []
    for failure in missed:
        value, target = figure(failure.value, failure.target)
        side = "below" if failure.value < failure.target else "above" if failure.value > failure.target else "at"
        unit = " %" if failure.metric in PERCENT_METRICS else ""
        if failure.metric == headline:
            texts.append(f"{side} its target of {target}{unit}")
        else:
            texts.append(f"{failure.metric.replace('_', ' ')} {value}{unit}, {side} its target of {target}{unit}")
    return f" ({'; '.join(dict.fromkeys(texts))})"


def _signal_section(evaluation) -> str:
    matrix = evaluation.signal_matrix
    if matrix.empty:
        return '<section id="signal"><h2>Signal</h2><p>No table was measured.</p></section>'
    targets = evaluation.targets
    guide = (
        "<p>Rows and columns are tables. The diagonal is the mean Hellinger distance of the table's "
        f"columns (target below {_e(targets.get('hellinger_mean'))}); a row above its child holds the "
        "Hellinger mean of the parent enriched with its children's aggregates; a row below its parent "
        "holds the link fidelity of the child joined with its parent: the mean, over every (child "
        "column, parent column) pair, of the correlation similarity or contingency similarity between "
        f"original and release (1 = children agree with their parents as in the original; target above "
        f"{_e(targets.get('link_fidelity'))}, or at least its noise floor, the score two halves of the "
        "original give each other). The correlation difference of that join is in the details.</p>"
    )
    return (
        f'<section id="signal"><h2>Signal</h2><h3>Signal matrix</h3>{guide}'
        + _matrix_grid(matrix, evaluation.signal_passed, lambda v: f"{v:.3g}", _cell_views(evaluation, "signal"),
                       "misses its target")
        + _floors_table(evaluation)
        + "</section>"
    )


def _floors_table(evaluation) -> str:
    """Each signal metric beside its noise floor and target, and why it passes or fails."""
    rows = []
    for kind, view, metric in evaluation.metrics:
        if kind != "signal" or metric.target is None:
            continue
        floor = "–" if metric.floor is None else _format(metric.name, metric.floor)
        allowed = "–" if metric.floor is None else _format(metric.name, metric.floor + metric.margin)
        sign = "<" if metric.direction == "lower" else ">"
        good_side = metric.value < metric.target if metric.direction == "lower" else metric.value > metric.target
        verdict = ("meets its target" if good_side else "within sampling noise" if metric.passed
                   else "misses its target beyond sampling noise")
        rows.append(
            f'<tr><td class="text">{_e(view)}</td><td class="text">{_e(metric.name.replace("_", " "))}</td>'
            f'<td class="{_state(metric.passed)}">{_e(_format(metric.name, metric.value))}</td>'
            f"<td>{_e(floor)}</td><td>{_e(allowed)}</td><td>{_e(sign)} {_e(f'{metric.target:g}')}</td>"
            f'<td class="text">{_e(verdict)}</td></tr>'
        )
    if not rows:
        return ""
    return (
        "<h3>Signal metrics beside their noise floor</h3>"
        "<p>The noise floor is what two random halves of the original table give each other (five seeded "
        "splits): what sampling alone costs a table of this size. A metric passes under its target, or up to the "
        "floor plus a margin: sqrt(floor&sup2; + target&sup2;) for distances (the loss of the release and "
        "sampling noise add in quadrature), floor + 1 point for impossible combinations.</p>"
        '<table><tr><th class="row">scenario</th><th class="row">metric</th><th>value</th><th>noise floor</th>'
        '<th>passes up to</th><th>target</th><th class="row">reading</th></tr>'
        + "".join(rows) + "</table>"
    )


def _matrix_grid(values: pd.DataFrame, passed: pd.DataFrame, fmt, views: dict, failing: str) -> str:
    header = "".join(f'<th scope="col">{_e(c)}</th>' for c in values.columns)
    rows = []
    for row in values.index:
        cells = []
        for column in values.columns:
            value, ok = values.loc[row, column], passed.loc[row, column]
            state = "na" if pd.isna(ok) else ("pass" if ok else "fail")
            text = "&ndash;" if pd.isna(value) else _e(fmt(value))
            title = "; ".join(views.get((row, column), ())) or "no scenario pairs these tables"
            cells.append(f'<td class="{state}" title="{_e(title)}">{text}</td>')
        rows.append(f'<tr><th class="row" scope="row">{_e(row)}</th>{"".join(cells)}</tr>')
    legend = (
        '<p class="legend"><span class="pass">meets every target</span>'
        f'<span class="fail">{_e(failing)}</span><span class="na">not applicable</span></p>'
    )
    return f'<table class="matrix"><tr><th></th>{header}</tr>{"".join(rows)}</table>{legend}'


def _cell_views(evaluation, kind: str) -> dict:
    """(table, reference) -> the scenario names behind the matrix cell."""
    cells: dict = {}
    if evaluation.details.empty:
        return cells
    for index in evaluation.details.index:
        entry = dict(zip(evaluation.details.index.names, index, strict=True))
        if entry["kind"] == kind:
            cells.setdefault((entry["table"], entry["reference"]), []).append(entry["view"])
    return cells


def _links_section(evaluation) -> str:
    relations = evaluation.relations
    if relations.empty:
        return '<section id="links"><h2>Links</h2><p>The schema has no links.</p></section>'
    run = {(r.child, r.column): r for r in evaluation.links}
    source = ("the method each link used in the run" if run else
              "the methods declared in the schema (the run that made the release was not given)")
    targets = evaluation.targets
    rows = []
    for r in relations.itertuples():
        report = run.get((r.child, r.column))
        method = report.method if report is not None else r.method
        linked = f"{report.n_linked:,} of {report.n_children:,}" if report is not None else "–"
        sensitive = method == "original_order"
        flag = " ⚠ least private: each child keeps the parent of its original record" if sensitive else ""
        similar = "na" if pd.isna(r.children_per_parent) else _state(similarity_passed(r.children_per_parent, floor_of(r)))
        rows.append(
            f'<tr class="{"sensitive" if sensitive else "plain"}">'
            f'<td class="text">{_e(_link_label(r.child, r.column, r.parent))}</td>'
            f'<td class="text">{_e(method + flag)}</td><td>{_e(linked)}</td>'
            f'<td class="{similar}">{_e(_format("children_per_parent", r.children_per_parent))}</td>'
            f'<td>{_e(_format("children_per_parent", floor_of(r)))}</td>'
            f"{_fidelity_cell(r, targets)}"
            f"<td>{_pair(r.mean_children_original, r.mean_children_anonymized, '.2f')}</td>"
            f"<td>{_pair(r.max_children_original, r.max_children_anonymized, 'd')}</td>"
            f'<td class="{_state(r.referential_integrity >= 100.0)}">{r.referential_integrity:.1f}</td></tr>'
        )
    header = (
        '<tr><th class="row">link (child.column -&gt; parent)</th><th class="row">matching method</th>'
        "<th>children linked</th>"
        f"<th>children per parent<br>similarity (&gt; {_e(targets['children_per_parent'])})</th>"
        "<th>noise floor<br>(two halves of the parents)</th>"
        f"<th>link fidelity<br>(&gt; {_e(targets.get('link_fidelity'))} or &ge; floor)</th>"
        "<th>mean children<br>original / anonymized</th><th>max children<br>original / anonymized</th>"
        "<th>referential integrity %<br>(= 100)</th></tr>"
    )
    return (
        f'<section id="links"><h2>Links</h2><p>The table shows {source}: minimum_distance (most private, '
        "the number of children per parent may drift), linear_sum (keeps the children-per-parent "
        "distribution), original_order (exact, least private).</p>"
        f'<table>{header}{"".join(rows)}</table></section>'
    )


def _fidelity_cell(row, targets) -> str:
    value, floor = getattr(row, "link_fidelity", float("nan")), getattr(row, "link_fidelity_floor", float("nan"))
    if pd.isna(value):
        return '<td class="na">&ndash;</td>'
    ok = value > targets.get("link_fidelity", 0.85) or (not pd.isna(floor) and value >= floor)
    shown = f"{value:.3f}" + ("" if pd.isna(floor) else f" (floor {floor:.3f})")
    return f'<td class="{_state(ok)}">{_e(shown)}</td>'


def floor_of(relation) -> float:
    """The children-per-parent noise floor of a relations row (NaN for an evaluation read from an older file)."""
    return getattr(relation, "children_per_parent_floor", float("nan"))


def _details_section(evaluation) -> str:
    details = evaluation.details
    if details.empty:
        return '<section id="details"><h2>Detailed metrics</h2><p>No metric was computed.</p></section>'
    by_key = {(kind, view, metric.name): metric for kind, view, metric in evaluation.metrics}
    parts = [('<section id="details"><h2>Detailed metrics</h2>'
             "<p>One row per table and scenario; green cells meet their target, red ones miss it.</p>")]
    for kind in ("privacy", "signal"):
        rows = details[details.index.get_level_values("kind") == kind]
        names = [c for c in rows.columns if rows[c].notna().any()]
        if not names:
            continue
        header = "".join(
            f"<th>{_e(name.replace('_', ' '))}<br>{_e(_target_text(by_key, kind, name))}</th>" for name in names
        )
        body = []
        for index, values in rows.iterrows():
            entry = dict(zip(rows.index.names, index, strict=True))
            cells = "".join(_detail_cell(by_key.get((kind, entry["view"], name)), name, values[name]) for name in names)
            body.append(
                f'<tr><td class="text">{_e(entry["table"])}</td><td class="text">{_e(entry["scenario"])}</td>'
                f'<td class="text">{_e(entry["reference"])}</td>{cells}</tr>'
            )
        parts.append(
            f"<h3>{kind.capitalize()}</h3><table><tr><th class=\"row\">table</th><th class=\"row\">scenario</th>"
            f'<th class="row">reference</th>{header}</tr>{"".join(body)}</table>'
        )
    parts.append("</section>")
    return "".join(parts)


def _target_text(by_key: dict, kind: str, name: str) -> str:
    metrics = [m for (k, _, n), m in by_key.items() if k == kind and n == name]
    metric = metrics[0] if metrics else None
    if metric is None or metric.target is None:
        return "(no target)"
    if len({m.target for m in metrics}) > 1:  # calibrated per view (against held-out people)
        return f"({'>' if metric.direction == 'higher' else '<'} per view)"
    return f"({'>' if metric.direction == 'higher' else '<'} {metric.target:g})"


def _detail_cell(metric, name: str, value) -> str:
    state = "na" if metric is None or metric.passed is None or pd.isna(value) else _state(metric.passed)
    return f'<td class="{state}">{_e(_format(name, value))}</td>'


def _glossary_section(evaluation) -> str:
    if not evaluation.descriptions:
        return ""
    items = []
    for name, sentence in evaluation.descriptions.items():
        target = evaluation.targets.get(name)
        aim = f" (target: {target:g})" if target is not None else ""
        items.append(f"<dt>{_e(name.replace('_', ' '))}{_e(aim)}</dt><dd>{_e(sentence)}</dd>")
    return f'<section id="glossary"><h2>Glossary</h2><dl>{"".join(items)}</dl></section>'


def _pair(original, anonymized, spec: str) -> str:
    return " / ".join("–" if pd.isna(v) else format(v, spec) for v in (original, anonymized))


def _link_label(child, column, parent) -> str:
    return f"{child}.{column} -> {parent}"


def _failing(flag) -> bool:
    """True for a failed check; False for a passed one and for a missing (not applicable) one."""
    return not pd.isna(flag) and not bool(flag)


def _state(ok) -> str:
    return "pass" if bool(ok) else "fail"


def _format(name: str, value) -> str:
    if value is None or (isinstance(value, float | np.floating) and math.isnan(value)):
        return "–"
    if name in PERCENT_METRICS:
        return f"{value:.1f}"
    if name in FRACTION_METRICS:
        return f"{value:.3f}"
    return f"{value:.3g}"


def _e(value) -> str:
    return html.escape(str(value), quote=True)


# --------------------------------------------------------------------------- pictures


def _pictures_section(evaluation, progress) -> str:
    head = '<section id="pictures"><h2>Pictures</h2>'
    if evaluation.schema is None or evaluation.original is None or evaluation.anonymized is None:
        return (head + "<p>The pictures need the original and anonymized databases, which this evaluation "
                "does not hold (an evaluation read back from metrics.json keeps only the figures).</p></section>")
    matplotlib = _matplotlib()
    if matplotlib is None:
        return (head + f"<p>The pictures need matplotlib, which is not installed: <code>{_e(INSTALL_HINT)}</code> "
                "installs it; the figures above are complete without it.</p></section>")
    parts = [head, ('<p>Original in blue, anonymized in orange. Shares are of all rows, missing values '
             "included.</p>")]
    # the user's style must not change the picture bytes; text from the data ($x^$, a column
    # named "$\\foo{x}$") is drawn as it is, never read as mathtext or TeX markup
    tables = list(evaluation.schema)
    with matplotlib.style.context("default"), matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}), \
            progress.step("report pictures", total=len(tables) + 1, unit="tables") as step:
        for table in tables:
            parts.append(_table_pictures(evaluation, table))
            step.advance()
        parts.append(_link_pictures(evaluation))
        step.detail = f"{len(tables)} tables and their links"

    parts.append("</section>")
    return "".join(parts)


def pictures(evaluation, table: str) -> dict:
    """The report's main pictures of one table, as matplotlib figures (a notebook shows them inline).

    Keys: ``"distributions"`` (each column, original vs anonymized, on the metrics' bins),
    ``"correlations"`` (numeric columns, when there are two or more), ``"factor space"`` (originals
    and avatars on the first two axes, when the table has two), and ``"children per parent"`` for
    each link whose child is ``table`` (``"children per parent: visits.patient_id -> patients"``).
    The figures are drawn as in the report, with matplotlib's default style.
    """
    matplotlib = _matplotlib()
    if matplotlib is None:
        raise ParameterError(f"the pictures need matplotlib: {INSTALL_HINT}")
    if evaluation.schema is None or evaluation.original is None or evaluation.anonymized is None:
        raise ParameterError("the pictures need the databases of the evaluation (an Evaluation from relanon.evaluate)")
    spec = evaluation.schema[table]
    original, released = evaluation.original[table], evaluation.anonymized[table]
    types = {c.name: c.type for c in spec.released_columns if c.name in original and c.name in released}
    figures = {}
    with matplotlib.style.context("default"), matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        distances, floors = _hellinger_per_column(evaluation, table)
        shown, _ = _columns_shown(list(types), distances)
        figures["distributions"] = _distributions_figure(original, released, {c: types[c] for c in shown},
                                                         distances, floors)
        numeric = [c for c, kind in types.items() if kind in NUMERIC_KINDS][:MAX_CORRELATION_COLUMNS]
        if len(numeric) >= 2:
            figures["correlations"] = _correlation_figure(original, released, {c: types[c] for c in numeric})
        factor = _factor_figure(original, released, types, spec)
        if not isinstance(factor, str):
            figures["factor space"] = factor
        for link in all_links(evaluation.schema):
            if link.child == table and link.parent in evaluation.original:
                counts = [children_per_parent(database, evaluation.schema, link)
                          for database in (evaluation.original, evaluation.anonymized)]
                label = _link_label(link.child, link.column, link.parent)
                figures[f"children per parent: {label}"] = _children_figure(*counts, link)
    return figures


def _matplotlib():
    try:
        import matplotlib
        import matplotlib.style  # not loaded by "import matplotlib" alone
    except ImportError:
        return None
    return matplotlib


def _table_pictures(evaluation, table) -> str:
    name = table.name
    original, released = evaluation.original.get(name), evaluation.anonymized.get(name)
    head = f'<h3 id="table-{_e(name)}">{_e(name)}</h3>'
    if original is None or released is None:
        return head + '<p class="note">The table is missing from one of the databases: no picture.</p>'
    types = {c.name: c.type for c in table.released_columns if c.name in original and c.name in released}
    if not types:
        return head + '<p class="note">No released column: no picture.</p>'
    if len(original) == 0 or len(released) == 0:
        return head + f'<p class="note">{len(original):,} original and {len(released):,} anonymized rows: no picture.</p>'
    parts = [head, f'<p class="note">{len(original):,} original rows, {len(released):,} anonymized rows.</p>']
    distances, floors = _hellinger_per_column(evaluation, name)
    shown, hidden = _columns_shown(list(types), distances)
    parts.append(_figure(_distributions_figure(original, released, {c: types[c] for c in shown}, distances, floors),
                         f"{name}: distribution of each column, original vs anonymized (H: Hellinger distance)"))
    if hidden:
        parts.append(f'<p class="note">{len(hidden)} more column{"s" if len(hidden) > 1 else ""}, closer to '
                     f"the original, not drawn: {_e(', '.join(hidden))}.</p>")
    numeric = [c for c, kind in types.items() if kind in NUMERIC_KINDS]
    if len(numeric) >= 2:
        drawn = numeric[:MAX_CORRELATION_COLUMNS]
        parts.append(_figure(_correlation_figure(original, released, {c: types[c] for c in drawn}),
                             f"{name}: correlations of the numeric columns (Pearson), original and anonymized"))
        if len(numeric) > len(drawn):
            parts.append(f'<p class="note">Only the first {len(drawn)} of {len(numeric)} numeric columns are drawn.</p>')
    parts.append(_factor_picture(original, released, types, table))
    return "".join(parts)


def _hellinger_per_column(evaluation, table: str) -> tuple[dict, dict]:
    """The Hellinger distance of every column of the table alone, and its noise floor."""
    for kind, view, metric in evaluation.metrics:
        if kind == "signal" and view == f"{STANDALONE}({table})" and metric.name == "hellinger_mean":
            return dict(metric.breakdown.get("per_column", {})), dict(metric.breakdown.get("floor_per_column", {}))
    return {}, {}


def _columns_shown(columns: list[str], distances: dict) -> tuple[list[str], list[str]]:
    """At most MAX_COLUMNS columns, those whose distributions moved most, in schema order."""
    if len(columns) <= MAX_COLUMNS:
        return columns, []
    ranked = sorted(columns, key=lambda c: (-distances.get(c, 0.0), columns.index(c)))
    kept = set(ranked[:MAX_COLUMNS])
    return [c for c in columns if c in kept], [c for c in columns if c not in kept]


def _figure(figure, caption: str) -> str:
    return (f'<figure><img alt="{_e(caption)}" src="{_png(figure)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def _png(figure) -> str:
    """The figure as a PNG data URI; no software stamp, so the bytes depend on the picture only."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _new_figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


# ---- distributions


@dataclass(frozen=True)
class _Shares:
    """What one distribution picture draws, on the shared bins of the metrics
    (:func:`relanon.metrics.signal.column_bins`): shares of all rows per bar or bin, and missing shares."""

    original: np.ndarray
    released: np.ndarray
    missing: tuple[float, float]
    labels: tuple[str, ...] = ()  # value bins: one per bar (missing is the last bar when present)
    edges: np.ndarray | None = None  # quantile bins: edges, the outer ones the original's range


def _shares(original: pd.Series, released: pd.Series, kind: str) -> _Shares:
    """The shares of a column on the bins of the Hellinger metric.

    Value bins (categoricals, numbers from a small set): the MAX_CATEGORIES values most frequent in
    the original, then "other" (the rest, and values the original never holds), then "missing".
    Quantile bins: one share per bin (released values beyond the original range in the end bins).
    """
    bins = column_bins(original, kind)
    o = bins.shares(column_values(original, kind))
    r = bins.shares(column_values(released, kind))
    missing = (float(o[-1]), float(r[-1]))
    if not bins.by_value:
        return _Shares(o[:-1], r[:-1], missing, edges=bins.edges)
    labels = [_value_label(v, kind) for v in bins.values]
    o_values, r_values = o[:-2], r[:-2]
    # ties between equally frequent values are broken by their text, so the order is stable
    order = np.lexsort((np.asarray(labels, dtype=object), -o_values))
    top, rest = order[:MAX_CATEGORIES], order[MAX_CATEGORIES:]
    o_shares, r_shares, shown = list(o_values[top]), list(r_values[top]), [labels[i] for i in top]
    o_other, r_other = float(o_values[rest].sum() + o[-2]), float(r_values[rest].sum() + r[-2])
    if len(rest) or r_other > 1e-12:
        o_shares.append(o_other)
        r_shares.append(r_other)
        shown.append("other")
    if missing[0] or missing[1]:
        o_shares.append(missing[0])
        r_shares.append(missing[1])
        shown.append("missing")
    return _Shares(np.array(o_shares), np.array(r_shares), missing, tuple(shown))


def _value_label(value, kind: str) -> str:
    if kind == "datetime":
        stamp = pd.Timestamp(float(value), unit="s")
        return _short(stamp.date() if stamp == stamp.normalize() else stamp)
    if kind in NUMERIC_KINDS:
        return _short(f"{float(value):g}")
    return _short(value)


def _distributions_figure(original: pd.DataFrame, released: pd.DataFrame, types: dict, distances: dict,
                          floors: dict | None = None):
    floors = floors or {}
    shares = {c: _shares(original[c], released[c], kind) for c, kind in types.items()}
    columns = list(types)
    per_row = 2 if len(columns) > 1 else 1
    n_rows = math.ceil(len(columns) / per_row)
    figure = _new_figure(5.6 * per_row, 2.9 * n_rows)
    # each panel owns a wide and a narrow grid column; the narrow one holds the missing bars of a numeric column
    grid = figure.add_gridspec(n_rows, 2 * per_row, width_ratios=[6, 1] * per_row)
    for position, column in enumerate(columns):
        row, slot = divmod(position, per_row)
        s = shares[column]
        numeric = s.edges is not None
        with_missing = numeric and (s.missing[0] > 0 or s.missing[1] > 0)  # bars show "missing" as a bar
        if with_missing:
            axes, missing_axes = figure.add_subplot(grid[row, 2 * slot]), figure.add_subplot(grid[row, 2 * slot + 1])
            _draw_missing(missing_axes, s.missing)
        else:
            axes = figure.add_subplot(grid[row, 2 * slot: 2 * slot + 2])
        if numeric:
            _draw_histogram(axes, s, types[column])
        else:
            _draw_bars(axes, s)
        distance = f", H = {distances[column]:.3f}" if column in distances else ""
        if column in floors:
            distance += f", floor {floors[column]:.3f}"
        axes.set_title(f"{column} ({types[column]}{distance})", fontsize=10)
        axes.tick_params(labelsize=8)
    _legend(figure)
    return figure


def _legend(figure) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=ORIGINAL_COLOUR, alpha=0.6, label="original"),
               Patch(color=ANONYMIZED_COLOUR, alpha=0.8, label="anonymized")]
    figure.legend(handles=handles, loc="outside upper center", ncols=2, fontsize=9, frameon=False)


def _draw_histogram(axes, s: _Shares, kind: str) -> None:
    """Quantile bins as a density histogram (share / width), so that the shape reads as usual."""
    edges = s.edges
    if kind == "datetime":
        import matplotlib.dates as mdates

        edges = mdates.date2num((edges * 1e6).round().astype("int64").astype("datetime64[us]"))
        locator = mdates.AutoDateLocator()
        axes.xaxis.set_major_locator(locator)
        axes.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    elif np.abs(edges).max() > 1e300:
        # matplotlib cannot place ticks on a span that overflows (values of +-1e308): draw in units of 1e300
        edges = edges / 1e300
        axes.set_xlabel("value / 1e300", fontsize=8)
    widths = np.diff(edges)
    span = float(edges[-1] - edges[0])
    widths = np.maximum(widths, span / 1000 if span > 0 else 1.0)  # a bin of one tied value still shows
    if span <= 0:
        edges = np.array([edges[0] - 0.5, edges[0] + 0.5])
    else:
        edges = np.concatenate([[edges[0]], edges[0] + np.cumsum(widths)])
    axes.stairs(s.original / widths, edges, fill=True, color=ORIGINAL_COLOUR, alpha=0.45, label="original")
    axes.stairs(s.released / widths, edges, color=ANONYMIZED_COLOUR, linewidth=1.8, label="anonymized")
    axes.set_ylabel("share / bin width", fontsize=8)


def _draw_missing(axes, missing: tuple[float, float]) -> None:
    axes.bar([0, 1], missing, color=[ORIGINAL_COLOUR, ANONYMIZED_COLOUR], alpha=0.8)
    axes.set_xticks([0.5], ["missing"], fontsize=8)
    axes.tick_params(labelsize=7)


def _draw_bars(axes, s: _Shares) -> None:
    positions = np.arange(len(s.labels))
    axes.bar(positions - 0.2, s.original, width=0.4, color=ORIGINAL_COLOUR, alpha=0.8, label="original")
    axes.bar(positions + 0.2, s.released, width=0.4, color=ANONYMIZED_COLOUR, alpha=0.8, label="anonymized")
    rotate = len(s.labels) > 4 or max((len(label) for label in s.labels), default=0) > 8
    axes.set_xticks(positions, s.labels, rotation=60 if rotate else 0, ha="right" if rotate else "center", fontsize=7)
    axes.set_ylabel("share of rows", fontsize=8)


def _short(value, width: int = 18) -> str:
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


# ---- correlations


def _correlation_figure(original: pd.DataFrame, released: pd.DataFrame, types: dict):
    matrices = [_correlations(frame, types) for frame in (original, released)]
    names = [_short(c, 14) for c in types]
    size = max(3.2, 0.45 * len(names) + 1.6)
    figure = _new_figure(2 * size + 0.8, size)
    axes = figure.subplots(1, 2)
    image = None
    for ax, matrix, title in zip(axes, matrices, ("original", "anonymized"), strict=True):
        image = ax.imshow(np.ma.masked_invalid(matrix), cmap="RdBu_r", vmin=-1.0, vmax=1.0)
        ax.set_title(title, fontsize=10)
        ticks = np.arange(len(names))
        ax.set_xticks(ticks, names, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(ticks, names, fontsize=7)
        if len(names) <= 10:
            for i, j in zip(*np.nonzero(~np.isnan(matrix)), strict=True):
                colour = "white" if abs(matrix[i, j]) > 0.6 else "black"  # readable on dark cells
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7, color=colour)
    figure.colorbar(image, ax=list(axes), shrink=0.8, label="Pearson correlation")
    return figure


def _correlations(frame: pd.DataFrame, types: dict) -> np.ndarray:
    values = pd.DataFrame({c: numeric_values(frame[c], kind) for c, kind in types.items()})
    return values.corr().to_numpy()


# ---- factor space


def _factor_picture(original: pd.DataFrame, released: pd.DataFrame, types: dict, table) -> str:
    figure = _factor_figure(original, released, types, table)
    if isinstance(figure, str):
        return f'<p class="note">{_e(figure)}</p>'
    sampled = " (samples)" if max(len(original), len(released)) > SCATTER_SAMPLE else ""
    return _figure(figure, f"{table.name}: first two dimensions of the factor space of the original table, "
                           f"originals and avatars{sampled}")


def _factor_figure(original: pd.DataFrame, released: pd.DataFrame, types: dict, table):
    """The scatter of originals and avatars on the first two axes, or why there is none (a sentence)."""
    weights = {c.name: c.weight for c in table.released_columns if c.name in types}
    try:
        space = FactorSpace(types, n_components=2, weights=weights, random_state=PICTURE_SEED, name=table.name)
        space.fit(_sample(original, FIT_SAMPLE))
        if space.n_components_ < 2:
            return f"{table.name}: the factor space has a single dimension: no scatter plot."
        o_coords = space.transform(_sample(original, SCATTER_SAMPLE))
        r_coords = space.transform(_sample(released, SCATTER_SAMPLE))
    except RelanonError as error:  # a picture is not worth losing the whole report
        return f"{table.name}: no factor-space picture ({error})."
    figure = _new_figure(6.4, 4.8)
    axes = figure.subplots()
    axes.scatter(o_coords[:, 0], o_coords[:, 1], s=8, color=ORIGINAL_COLOUR, alpha=0.5, linewidths=0, label="original")
    axes.scatter(r_coords[:, 0], r_coords[:, 1], s=8, color=ANONYMIZED_COLOUR, alpha=0.5, linewidths=0, label="anonymized")
    inertia = space.explained_inertia_
    axes.set_xlabel(f"dimension 1 ({100 * inertia[0]:.1f}% of inertia)", fontsize=9)
    axes.set_ylabel(f"dimension 2 ({100 * inertia[1]:.1f}% of inertia)", fontsize=9)
    axes.legend(fontsize=8, markerscale=3)
    return figure


def _sample(frame: pd.DataFrame, size: int) -> pd.DataFrame:
    """At most ``size`` rows, drawn with a fixed seed so the picture is the same every time."""
    if len(frame) <= size:
        return frame
    positions = np.sort(np.random.default_rng(PICTURE_SEED).choice(len(frame), size=size, replace=False))
    return frame.iloc[positions]


# ---- links


def _link_pictures(evaluation) -> str:
    links = all_links(evaluation.schema)
    if not links:
        return ""
    parts = ["<h3>Children per parent</h3>"]
    for link in links:
        if link.parent not in evaluation.original or link.child not in evaluation.original:
            continue
        counts = [children_per_parent(database, evaluation.schema, link)
                  for database in (evaluation.original, evaluation.anonymized)]
        parts.append(_figure(_children_figure(*counts, link),
                             f"{_link_label(link.child, link.column, link.parent)}: number of {link.child} rows "
                             f"per {link.parent} row"))
    return "".join(parts)


def _children_figure(original: np.ndarray, released: np.ndarray, link):
    figure = _new_figure(6.4, 3.2)
    axes = figure.subplots()
    shares = _shares(pd.Series(original, dtype="int64"), pd.Series(released, dtype="int64"), "integer")
    if shares.edges is None:
        _draw_bars(axes, shares)
    else:
        _draw_histogram(axes, shares, "integer")
    axes.set_xlabel(f"{link.child} rows per {link.parent} row", fontsize=9)
    axes.set_title(_link_label(link.child, link.column, link.parent), fontsize=10)
    axes.legend(fontsize=8)
    return figure
