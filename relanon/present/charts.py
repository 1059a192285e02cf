"""The report's pictures section: which pictures each table and link gets, and their drawing.

The pictures show original data, so the report itself is never part of the release. They need
matplotlib (the ``report`` extra); without it the page is written without pictures and says so.
The section is planned first (every picture of every table and link, with its caption), then each
picture is drawn (:mod:`relanon.present.figures`), turned into a PNG and forgotten; the progress bar
advances by picture.

Drawing is matplotlib's Python code on one core. When the databases are large enough for it to pay
(:data:`PARALLEL_ROWS`) and the machine has more than one core, the pictures are drawn by forked worker
processes (at most :data:`MAX_WORKERS`), which inherit the plan instead of receiving the data, and send
back each picture's HTML with the log records and warnings its drawing raised, given out here in the
page's order. A picture is a function of its inputs alone (fixed seeds, fixed layout, no software stamp
in the PNG), so the page is the same bytes whichever process draws it; where ``fork`` does not exist,
the pictures are drawn here, and so are those a worker did not draw (no process or memory left for a fork,
a worker killed).
"""

from __future__ import annotations

import base64
import io
import logging
import multiprocessing
import os
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial

from relanon.common.errors import ParameterError
from relanon.engine.columns import NUMERIC_KINDS
from relanon.metrics.scenarios import children_per_parent
from relanon.multitable.views import STANDALONE
from relanon.present.figures import (
    DPI,
    SCATTER_SAMPLE,
    children_figure,
    correlation_figure,
    distributions_figure,
    factor_figure,
)
from relanon.present.sections import escape, link_label
from relanon.schema.graph import all_links

INSTALL_HINT = 'pip install -e ".[report]" (from relanon\'s clone)'

MAX_COLUMNS = 12  # distribution pictures per table
MAX_CORRELATION_COLUMNS = 20
# the user's style must not change the picture bytes; text from the data ($x^$, a column named
# "$\\foo{x}$") is drawn as it is, never read as mathtext or TeX markup
DRAWING_RC = {"text.parse_math": False, "text.usetex": False}
PARALLEL_ROWS = 20_000  # original rows from which the pictures are drawn by worker processes
MAX_WORKERS = 4


@dataclass(frozen=True)
class _Picture:
    """One picture of the section: what draws it (a figure, or a sentence saying why there is none)."""

    draw: Callable
    caption: str
    panels: int = 1  # how many axes it draws: the heaviest are handed to the workers first


def pictures_section(evaluation, progress) -> str:
    head = '<section id="pictures"><h2>Pictures</h2>'
    if evaluation.schema is None or evaluation.original is None or evaluation.anonymized is None:
        return (head + "<p>The pictures need the original and anonymized databases, which this evaluation "
                "does not hold (an evaluation read back from metrics.json keeps only the figures).</p></section>")
    matplotlib = _matplotlib()
    if matplotlib is None:
        return (head + f"<p>The pictures need matplotlib, which is not installed: <code>{escape(INSTALL_HINT)}</code> "
                "installs it; the figures above are complete without it.</p></section>")
    tables = list(evaluation.schema)
    plan = [part for table in tables for part in _table_parts(evaluation, table)] + _link_parts(evaluation)
    count = sum(isinstance(part, _Picture) for part in plan)
    parts = [head, ('<p>Original in blue, anonymized in orange. Shares are of all rows, missing values '
             "included.</p>")]
    with matplotlib.style.context("default"), matplotlib.rc_context(DRAWING_RC), \
            progress.step("report pictures", total=count, unit="pictures") as step:
        drawn = _draw_all([part for part in plan if isinstance(part, _Picture)], step,
                          sum(len(frame) for frame in evaluation.original.values()))
        parts += [drawn.pop(0) if isinstance(part, _Picture) else part for part in plan]
        step.detail = f"{count} pictures of {len(tables)} tables and their links"
    parts.append("</section>")
    return "".join(parts)


def pictures(evaluation, table: str) -> dict:
    """The report's main pictures of one table, as matplotlib figures (a notebook shows them inline).

    Keys: ``"distributions"`` (each column, original vs anonymized, on the metrics' bins),
    ``"correlations"`` (numeric columns, when there are two or more), ``"factor space"`` (originals
    and avatars on the first two axes, when the table has two and is projected: only for
    ``method: avatar``; ``keep``, ``anatomize`` and ``bucketize`` release original records), and ``"children per parent"`` for each link whose
    child is ``table`` (``"children per parent: visits.patient_id -> patients"``).
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
    with matplotlib.style.context("default"), matplotlib.rc_context(DRAWING_RC):
        distances, floors = _hellinger_per_column(evaluation, table)
        shown, _ = _columns_shown(list(types), distances)
        figures["distributions"] = distributions_figure(original, released, {c: types[c] for c in shown},
                                                        distances, floors)
        numeric = [c for c, kind in types.items() if kind in NUMERIC_KINDS][:MAX_CORRELATION_COLUMNS]
        if len(numeric) >= 2:
            figures["correlations"] = correlation_figure(original, released, {c: types[c] for c in numeric})
        factor = factor_figure(original, released, types, spec)
        if not isinstance(factor, str):
            figures["factor space"] = factor
        for link in all_links(evaluation.schema):
            if link.child == table and link.parent in evaluation.original:
                label = link_label(link.child, link.column, link.parent)
                figures[f"children per parent: {label}"] = _children(evaluation, link, label)
    return figures


def _matplotlib():
    try:
        import matplotlib
        import matplotlib.figure  # loaded once here rather than in each worker process
        import matplotlib.style  # not loaded by "import matplotlib" alone
    except ImportError:
        return None
    return matplotlib


def _table_parts(evaluation, table) -> list:
    """The HTML and the pictures of one table, in the order of the page."""
    name = table.name
    original, released = evaluation.original.get(name), evaluation.anonymized.get(name)
    head = f'<h3 id="table-{escape(name)}">{escape(name)}</h3>'
    if original is None or released is None:
        return [head + '<p class="note">The table is missing from one of the databases: no picture.</p>']
    types = {c.name: c.type for c in table.released_columns if c.name in original and c.name in released}
    if not types:
        return [head + '<p class="note">No released column: no picture.</p>']
    if len(original) == 0 or len(released) == 0:
        return [head + f'<p class="note">{len(original):,} original and {len(released):,} anonymized rows: no picture.</p>']
    parts = [head, f'<p class="note">{len(original):,} original rows, {len(released):,} anonymized rows.</p>']
    distances, floors = _hellinger_per_column(evaluation, name)
    shown, hidden = _columns_shown(list(types), distances)
    parts.append(_Picture(partial(distributions_figure, original, released, {c: types[c] for c in shown},
                                  distances, floors),
                          f"{name}: distribution of each column, original vs anonymized (H: Hellinger distance)",
                          len(shown)))
    if hidden:
        parts.append(f'<p class="note">{len(hidden)} more column{"s" if len(hidden) > 1 else ""}, closer to '
                     f"the original, not drawn: {escape(', '.join(hidden))}.</p>")
    numeric = [c for c, kind in types.items() if kind in NUMERIC_KINDS]
    if len(numeric) >= 2:
        drawn = numeric[:MAX_CORRELATION_COLUMNS]
        parts.append(_Picture(partial(correlation_figure, original, released, {c: types[c] for c in drawn}),
                              f"{name}: correlations of the numeric columns (Pearson), original and anonymized"))
        if len(numeric) > len(drawn):
            parts.append(f'<p class="note">Only the first {len(drawn)} of {len(numeric)} numeric columns are drawn.</p>')
    sampled = " (samples)" if max(len(original), len(released)) > SCATTER_SAMPLE else ""
    parts.append(_Picture(partial(factor_figure, original, released, types, table),
                          f"{name}: first two dimensions of the factor space of the original table, "
                          f"originals and avatars{sampled}"))
    return parts


def _link_parts(evaluation) -> list:
    links = all_links(evaluation.schema)
    if not links:
        return []
    parts: list = ["<h3>Children per parent</h3>"]
    for link in links:
        if link.parent not in evaluation.original or link.child not in evaluation.original:
            continue
        label = link_label(link.child, link.column, link.parent)
        parts.append(_Picture(partial(_children, evaluation, link, label),
                              f"{label}: number of {link.child} rows per {link.parent} row"))
    return parts


def _children(evaluation, link, label: str):
    counts = [children_per_parent(database, evaluation.schema, link)
              for database in (evaluation.original, evaluation.anonymized)]
    return children_figure(*counts, link, label)


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


def _draw_all(pictures: list[_Picture], step, rows: int) -> list[str]:
    """The HTML of each picture, in order; drawn by worker processes when it pays."""
    workers = min(MAX_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1,
                  len(pictures))
    done: dict[int, str] = {}
    if rows >= PARALLEL_ROWS and workers >= 2 and "fork" in multiprocessing.get_all_start_methods():
        _draw_in_workers(pictures, workers, step, done)
    for index, picture in enumerate(pictures):
        if index not in done:  # not drawn by a worker (none, or no process or memory left for one): drawn here
            done[index] = _drawn(picture)
            step.advance()
    return [done[index] for index in range(len(pictures))]


def _draw_in_workers(pictures: list[_Picture], workers: int, step, drawn: dict[int, str]) -> None:
    """Each picture's HTML in ``drawn``, by its index, drawn by forked workers; what their drawing logged and
    warned is given out here, in the page's order. If a fork fails or a worker dies, ``drawn`` keeps the
    pictures drawn until then."""
    _PLAN[:] = pictures  # what the forked workers inherit
    results: dict[int, tuple] = {}
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            heaviest_first = sorted(range(len(pictures)), key=lambda index: -pictures[index].panels)
            futures = {pool.submit(_draw_in_worker, index): index for index in heaviest_first}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                step.advance()
    except (OSError, BrokenProcessPool):  # no memory or process left for a fork: the rest is drawn by the caller
        pass
    finally:
        _PLAN.clear()
    for index in sorted(results):
        html, records, caught = results[index]
        for record in records:
            logging.getLogger(record.name).handle(record)
        for message, category, filename, lineno in caught:
            warnings.warn_explicit(message, category, filename, lineno)
        drawn[index] = html


_PLAN: list[_Picture] = []


def _draw_in_worker(index: int) -> tuple:
    """In a forked worker: the HTML of picture ``index`` of the plan, the log records of relanon's loggers
    and the warnings its drawing raised (given out again by the parent, in the page's order)."""
    held = _Records()
    package = logging.getLogger("relanon")
    package.addHandler(held)
    propagate, package.propagate = package.propagate, False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            html = _drawn(_PLAN[index])
    finally:
        package.removeHandler(held)
        package.propagate = propagate
    return html, held.records, [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


class _Records(logging.Handler):
    """Keeps the records it is given, made picklable (their message formatted, no traceback)."""

    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record) -> None:
        record.msg, record.args, record.exc_info, record.exc_text = record.getMessage(), None, None, None
        self.records.append(record)


def _drawn(picture: _Picture) -> str:
    """The picture as an HTML figure, or the sentence saying why there is none."""
    figure = picture.draw()
    if isinstance(figure, str):
        return f'<p class="note">{escape(figure)}</p>'
    return (f'<figure><img alt="{escape(picture.caption)}" src="{_png(figure)}">'
            f"<figcaption>{escape(picture.caption)}</figcaption></figure>")


def _png(figure) -> str:
    """The figure as a PNG data URI; no software stamp, so the bytes depend on the picture only."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
