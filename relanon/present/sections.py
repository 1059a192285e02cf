"""The report's sections in words and tables: verdict, privacy, signal, links, details, glossary.

Each section is a function of the evaluation returning an HTML fragment; the pictures are drawn by
:mod:`relanon.present.charts` and the page assembled by :mod:`relanon.present.report`.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from relanon.common.options import LinkMethod
from relanon.metrics.base import REFERENTIAL_INTEGRITY_TARGET
from relanon.metrics.failures import failures
from relanon.metrics.scenarios import similarity_passed
from relanon.present.verdict import (
    NO_PRIVACY,
    PERCENT_METRICS,
    failure_text,
    figure,
    no_privacy_measured,
    too_small_lines,
)

# Percentages (PERCENT_METRICS, shared with the terminal) are shown with one decimal; the others with three
# significant digits...
# ...except these, compared with a target near 0 or 1, where 3 significant digits would round onto it.
FRACTION_METRICS = frozenset({"children_per_parent", "distance_to_closest", "closest_distances_ratio"})



def sensitive_banner(evaluation) -> str:
    if not evaluation.sensitive_choices:
        return ""
    items = "".join(f"<li>{escape(choice)}</li>" for choice in evaluation.sensitive_choices)
    return (
        '<div class="banner" role="alert"><p><strong>Warning: this release made choices that weaken '
        "privacy.</strong> Each is listed below with what it lets a reader learn. Check the privacy (and, "
        f"with relanon assess, the attacks) of the affected tables before deciding.</p><ul>{items}</ul></div>"
    )


def contents(attacks: bool = False) -> str:
    entries = [("verdict", "Verdict"), ("privacy", "Privacy"), *([("attacks", "Attacks")] if attacks else []),
               ("signal", "Signal"), ("links", "Links"),
               ("details", "Detailed metrics"), ("pictures", "Pictures"), ("glossary", "Glossary")]
    return "<nav><p>" + " | ".join(f'<a href="#{key}">{label}</a>' for key, label in entries) + "</p></nav>"


def verdict_section(evaluation) -> str:
    failed = failures(evaluation)  # the list the terminal prints too
    if failed:
        shown = "".join(f"<li>{escape(failure_text(f))}</li>" for f in failed)
        count = "1 measure misses its target" if len(failed) == 1 else f"{len(failed)} measures miss their targets"
        verdict = (f'<p><span class="fail">{count}.</span> '
                   f"The tables below show them in red.</p><ul>{shown}</ul>")
    elif no_privacy_measured(evaluation):  # never "every measure meets its target" when privacy was not measured
        verdict = '<p><span class="pass">Every other measure meets its target.</span></p>'
    else:
        verdict = '<p><span class="pass">Every measure meets its target.</span></p>'
    if no_privacy_measured(evaluation):
        verdict = f"<p>{escape(NO_PRIVACY[0].upper() + NO_PRIVACY[1:])}.</p>" + verdict
    small = too_small_lines(evaluation)
    if small:  # neither passed nor failed: said
        verdict += (f'<p><span class="na">{escape(small[0])}</span></p><ul>'
                    + "".join(f"<li>{escape(line.strip())}</li>" for line in small[1:]) + "</ul>")
    notes = "".join(f"<li>{escape(note)}</li>" for note in evaluation.notes)
    notes = f'<p>Notes:</p><ul class="note">{notes}</ul>' if notes else ""
    return f'<section id="verdict"><h2>Verdict</h2>{verdict}{notes}</section>'


def privacy_section(evaluation) -> str:
    matrix, passed = evaluation.privacy_matrix, evaluation.privacy_passed
    if matrix.empty:
        return ('<section id="privacy"><h2>Privacy</h2><p>No table is declared individual: privacy is '
                "measured for individual tables only.</p></section>")
    hidden = evaluation.privacy_headline == "hidden_rate"
    label = "hidden rate (%)" if hidden else "distance to closest"
    sentences = "".join(f"<li>{escape(text)}</li>" for text in privacy_sentences(evaluation))
    guide = (
        "<p>Rows are the individuals protected; columns are the tables that could leak information "
        "about them once linked to the row's table. The diagonal is the table alone.</p>"
    )
    return (
        '<section id="privacy"><h2>Privacy</h2>'
        f"<ul>{sentences}</ul>"
        f"<h3>Privacy matrix: {escape(label)}</h3>{guide}"
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


def signal_section(evaluation) -> str:
    matrix = evaluation.signal_matrix
    if matrix.empty:
        return '<section id="signal"><h2>Signal</h2><p>No table was measured.</p></section>'
    targets = evaluation.targets
    guide = (
        "<p>Rows and columns are tables. The diagonal is the mean Hellinger distance of the table's "
        f"columns (target below {escape(targets.get('hellinger_mean'))}); a row above its child holds the "
        "Hellinger mean of the parent enriched with its children's aggregates; a row below its parent "
        "holds the link fidelity of the child joined with its parent: the mean, over every (child "
        "column, parent column) pair, of the correlation similarity or contingency similarity between "
        f"original and release (1 = children agree with their parents as in the original; target above "
        f"{escape(targets.get('link_fidelity'))}, or at least its noise floor, the score two halves of the "
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
            f'<tr><td class="text">{escape(view)}</td><td class="text">{escape(metric.name.replace("_", " "))}</td>'
            f'<td class="{_state(metric.passed)}">{escape(_format(metric.name, metric.value))}</td>'
            f"<td>{escape(floor)}</td><td>{escape(allowed)}</td><td>{escape(sign)} {escape(f'{metric.target:g}')}</td>"
            f'<td class="text">{escape(verdict)}</td></tr>'
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


MAX_NAMED_COLUMNS = 6
"""Beyond this many columns, a matrix names its columns T1, T2... with a legend under it: it fits the page."""


def _matrix_grid(values: pd.DataFrame, passed: pd.DataFrame, fmt, views: dict, failing: str) -> str:
    # every row, only the columns holding a cell: with 11 tables most pairs have no scenario
    held = values.notna() | passed.notna()
    values = values.loc[:, held.any(axis=0)] if held.to_numpy().any() else values
    passed = passed.loc[values.index, values.columns]
    short = len(values.columns) > MAX_NAMED_COLUMNS
    names = {c: f"T{i}" if short else str(c) for i, c in enumerate(values.columns, start=1)}
    header = "".join(f'<th scope="col" title="{escape(c)}">{escape(names[c])}</th>' for c in values.columns)
    rows = []
    for row in values.index:
        cells = []
        for column in values.columns:
            value, ok = values.loc[row, column], passed.loc[row, column]
            state = "na" if pd.isna(ok) or pd.isna(value) and ok else ("pass" if ok else "fail")
            # a scenario measured with no figure (too few rows, a single parent) is not applicable
            text = ("&ndash;" if pd.isna(ok) else "n/a") if pd.isna(value) else escape(fmt(value))
            title = "; ".join(views.get((row, column), ())) or "no scenario pairs these tables"
            cells.append(f'<td class="{state}" title="{escape(title)}">{text}</td>')
        rows.append(f'<tr><th class="row" scope="row">{escape(row)}</th>{"".join(cells)}</tr>')
    legend = (
        '<p class="legend"><span class="pass">meets every target</span>'
        f'<span class="fail">{escape(failing)}</span><span class="na">not applicable</span></p>'
    )
    if short:
        legend += ('<p class="note">columns: ' + ", ".join(f"{escape(names[c])} {escape(c)}" for c in values.columns)
                   + "</p>")
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


def links_section(evaluation) -> str:
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
        sensitive = method == LinkMethod.ORIGINAL_ORDER
        flag = " ⚠ least private: each child keeps the parent of its original record" if sensitive else ""
        similar = "na" if pd.isna(r.children_per_parent) else _state(similarity_passed(r.children_per_parent, floor_of(r)))
        rows.append(
            f'<tr class="{"sensitive" if sensitive else "plain"}">'
            f'<td class="text">{escape(link_label(r.child, r.column, r.parent))}</td>'
            f'<td class="text">{escape(method + flag)}</td><td>{escape(linked)}</td>'
            f'<td class="{similar}">{escape(_format("children_per_parent", r.children_per_parent))}</td>'
            f'<td>{escape(_format("children_per_parent", floor_of(r)))}</td>'
            f"{_fidelity_cell(r, targets)}"
            f"<td>{_pair(r.mean_children_original, r.mean_children_anonymized, '.2f')}</td>"
            f"<td>{_pair(r.max_children_original, r.max_children_anonymized, 'd')}</td>"
            f'<td class="{_state(r.referential_integrity >= REFERENTIAL_INTEGRITY_TARGET)}">{r.referential_integrity:.1f}</td></tr>'
        )
    header = (
        '<tr><th class="row">link (child.column -&gt; parent)</th><th class="row">matching method</th>'
        "<th>children linked</th>"
        f"<th>children per parent<br>similarity (&gt; {escape(targets['children_per_parent'])})</th>"
        "<th>noise floor<br>(two halves of the parents)</th>"
        f"<th>link fidelity<br>(&gt; {escape(targets.get('link_fidelity'))} or &ge; floor)</th>"
        "<th>mean children<br>original / anonymized</th><th>max children<br>original / anonymized</th>"
        "<th>referential integrity %<br>(= 100)</th></tr>"
    )
    return (
        f'<section id="links"><h2>Links</h2><p>The table shows {source}: minimum_distance (most private, '
        "the number of children per parent may drift), linear_sum (keeps the children-per-parent "
        "distribution), original_order (exact, least private).</p>"
        f'<table>{header}{"".join(rows)}</table>{_rules_table(relations)}</section>'
    )


def _rules_table(relations) -> str:
    """The rules across tables the schema declares (schema.cross_rules): rows breaking each, original and release."""
    rows = [
        f'<tr><td class="text">{escape(link_label(r.child, r.column, r.parent))}</td><td class="text">{escape(rule)}</td>'
        f'<td>{before:,}</td><td class="{_state(released <= before)}">{released:,}</td></tr>'
        for r in relations.itertuples() if isinstance(getattr(r, "rules", None), dict)
        for rule, (before, released) in r.rules.items()
    ]
    if not rows:
        return ""
    return ("<h3>Rules across tables</h3><p>The rules the schema declares on its links (found by relanon init in the "
            "original): the rows that break each, in the original and in the release (no more than the original).</p>"
            '<table><tr><th class="row">link</th><th class="row">rule</th><th>rows breaking it<br>original</th>'
            f'<th>rows breaking it<br>anonymized</th></tr>{"".join(rows)}</table>')


def _fidelity_cell(row, targets) -> str:
    value, floor = getattr(row, "link_fidelity", float("nan")), getattr(row, "link_fidelity_floor", float("nan"))
    if pd.isna(value):
        return '<td class="na">&ndash;</td>'
    ok = value > targets.get("link_fidelity", 0.85) or (not pd.isna(floor) and value >= floor)
    shown = f"{value:.3f}" + ("" if pd.isna(floor) else f" (floor {floor:.3f})")
    return f'<td class="{_state(ok)}">{escape(shown)}</td>'


def floor_of(relation) -> float:
    """The children-per-parent noise floor of a relations row (NaN for an evaluation read from an older file)."""
    return getattr(relation, "children_per_parent_floor", float("nan"))


def details_section(evaluation) -> str:
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
            f"<th>{escape(name.replace('_', ' '))}<br>{escape(_target_text(by_key, kind, name))}</th>" for name in names
        )
        body = []
        for index, values in rows.iterrows():
            entry = dict(zip(rows.index.names, index, strict=True))
            cells = "".join(_detail_cell(by_key.get((kind, entry["view"], name)), name, values[name]) for name in names)
            body.append(
                f'<tr><td class="text">{escape(entry["table"])}</td><td class="text">{escape(entry["scenario"])}</td>'
                f'<td class="text">{escape(entry["reference"])}</td>{cells}</tr>'
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
    return f'<td class="{state}">{escape(_format(name, value))}</td>'


def glossary_section(evaluation) -> str:
    if not evaluation.descriptions:
        return ""
    items = []
    for name, sentence in evaluation.descriptions.items():
        target = evaluation.targets.get(name)
        aim = f" (target: {target:g})" if target is not None else ""
        items.append(f"<dt>{escape(name.replace('_', ' '))}{escape(aim)}</dt><dd>{escape(sentence)}</dd>")
    return f'<section id="glossary"><h2>Glossary</h2><dl>{"".join(items)}</dl></section>'


def _pair(original, anonymized, spec: str) -> str:
    return " / ".join("–" if pd.isna(v) else format(v, spec) for v in (original, anonymized))


def link_label(child, column, parent) -> str:
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


def escape(value) -> str:
    return html.escape(str(value), quote=True)


