"""The report's pictures: distributions, correlations, the factor space and children per parent.

The pictures show original data, so the report itself is never part of the release. They need
matplotlib (the ``report`` extra); without it the page is written without pictures and says so.
matplotlib is imported only when pictures are drawn, through its object-oriented API on the Agg
canvas: pyplot, its global figure list and the user's backend are never touched.
"""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError, RelanonError
from relanon.common.options import Method
from relanon.engine.columns import NUMERIC_KINDS, numeric_values
from relanon.engine.factor_space import FactorSpace
from relanon.metrics.scenarios import children_per_parent
from relanon.metrics.signal import column_bins, column_values
from relanon.multitable.views import STANDALONE
from relanon.present.sections import escape, link_label
from relanon.schema.graph import all_links

logger = logging.getLogger(__name__)

INSTALL_HINT = 'pip install -e ".[report]" (from relanon\'s clone)'

MAX_COLUMNS = 12  # distribution pictures per table
MAX_CATEGORIES = 20  # bars per column binned by value, the rest grouped as "other"
MAX_CORRELATION_COLUMNS = 20
SCATTER_SAMPLE = 5_000  # points per side in the factor-space picture
FIT_SAMPLE = 20_000  # original rows the picture's factor space is fitted on
PICTURE_SEED = 0
DPI = 80
ORIGINAL_COLOUR, ANONYMIZED_COLOUR = "#4c72b0", "#dd8452"



def pictures_section(evaluation, progress) -> str:
    head = '<section id="pictures"><h2>Pictures</h2>'
    if evaluation.schema is None or evaluation.original is None or evaluation.anonymized is None:
        return (head + "<p>The pictures need the original and anonymized databases, which this evaluation "
                "does not hold (an evaluation read back from metrics.json keeps only the figures).</p></section>")
    matplotlib = _matplotlib()
    if matplotlib is None:
        return (head + f"<p>The pictures need matplotlib, which is not installed: <code>{escape(INSTALL_HINT)}</code> "
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
                label = link_label(link.child, link.column, link.parent)
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
    head = f'<h3 id="table-{escape(name)}">{escape(name)}</h3>'
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
                     f"the original, not drawn: {escape(', '.join(hidden))}.</p>")
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
    return (f'<figure><img alt="{escape(caption)}" src="{_png(figure)}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


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
        return f'<p class="note">{escape(figure)}</p>'
    sampled = " (samples)" if max(len(original), len(released)) > SCATTER_SAMPLE else ""
    return _figure(figure, f"{table.name}: first two dimensions of the factor space of the original table, "
                           f"originals and avatars{sampled}")


def _factor_figure(original: pd.DataFrame, released: pd.DataFrame, types: dict, table):
    """The scatter of originals and avatars on the first two axes, or why there is none (a sentence)."""
    method = table.anonymize.method
    if method != Method.AVATAR:
        # real records (keep copies them, anatomize and bucketize regroup them), never projected: the clouds
        # would show no release made there, and fitting two axes only to draw them warned about an ncp the
        # table does not have
        how = "as it is" if method == Method.KEEP else "with its original records"
        return f"{table.name} is released {how} (method {method}), not projected: no factor-space picture."
    weights = {c.name: c.weight for c in table.released_columns if c.name in types}
    try:
        space = FactorSpace(types, n_components=2, weights=weights, random_state=PICTURE_SEED, name=table.name)
        with _axes_warnings_of_the_picture(table.name):
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


@contextlib.contextmanager
def _axes_warnings_of_the_picture(name: str):
    """The space's warnings about the picture's two axes, said of the picture.

    Its two axes are the picture's own choice, not the table's ``ncp``: the space's warning, "ncp=2
    ends inside a group of equal eigenvalues: the neighbours depend on which basis ...; ncp: auto
    avoids it", sent a user whose release used ``ncp: auto`` (12 doctors) to a setting that changes
    nothing. What is true of the picture is said instead.
    """
    held = _Held()
    space_logger = logging.getLogger(FactorSpace.__module__)
    space_logger.addFilter(held)
    try:
        yield
    finally:
        space_logger.removeFilter(held)
    if held.records:
        logger.warning("table %r: the report's factor-space picture draws 2 axes out of a group of equal "
                       "eigenvalues: which 2 is arbitrary, so the clouds may be turned differently on another "
                       "machine; the release is not concerned (its ncp is chosen apart)", name)


class _Held(logging.Filter):
    """Keeps the records of a logger instead of letting them through."""

    def __init__(self):
        super().__init__()
        self.records = []

    def filter(self, record) -> bool:
        self.records.append(record)
        return False


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
                             f"{link_label(link.child, link.column, link.parent)}: number of {link.child} rows "
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
    axes.set_title(link_label(link.child, link.column, link.parent), fontsize=10)
    axes.legend(fontsize=8)
    return figure
