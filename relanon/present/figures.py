"""The report's figures, each drawn once: distributions, correlations, the factor space, children per parent.

Every figure is a matplotlib :class:`~matplotlib.figure.Figure` on a fixed layout: the place of each
axes is computed here, in inches, from what surrounds it (titles, tick labels measured with the font
they are drawn in), rather than by a layout engine. A layout engine (``constrained``, ``tight``) draws
the whole figure once to measure it and once more to paint it; a fixed layout paints it once. Bars are
drawn as one filled step outline per side rather than one rectangle per bar, which keeps a figure of
twelve panels to a few dozen artists.

matplotlib is imported only when a figure is drawn (the ``report`` extra), through its
object-oriented API on the Agg canvas: pyplot, its global figure list and the user's backend are never
touched.
"""

from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relanon.common.errors import RelanonError
from relanon.common.options import Method
from relanon.engine.columns import NUMERIC_KINDS, numeric_values
from relanon.engine.factor_space import FactorSpace
from relanon.metrics.signal import column_bins, column_values

logger = logging.getLogger(__name__)

MAX_CATEGORIES = 20  # bars per column binned by value, the rest grouped as "other"
SCATTER_SAMPLE = 5_000  # points per side in the factor-space picture
FIT_SAMPLE = 20_000  # original rows the picture's factor space is fitted on
PICTURE_SEED = 0
DPI = 80
ORIGINAL_COLOUR, ANONYMIZED_COLOUR = "#4c72b0", "#dd8452"

# the fixed layout, in inches: what each margin holds
POINT = 1 / 72
TICK_SPACE = 7 * POINT  # tick length and the pad between tick and label (3.5 pt each)
TITLE_SPACE = 0.42  # a 10 pt title above the axes, room for the y axis' offset text ("1e-5") beside it
LEGEND_BAND = 0.3  # the figure's legend above the panels of a distributions figure
PANEL_LEFT = 0.72  # a y label (8 pt) and tick labels of up to 7 characters (8 pt)
PANEL_RIGHT = 0.2  # half of a last horizontal tick label ("2024", "500")
MISSING_GAP = 0.42  # between a histogram and its narrow "missing" bars: their tick labels (7 pt)
ROTATION = 60  # degrees of the tick labels of bars with many or long labels


@dataclass(frozen=True)
class Shares:
    """What one distribution picture draws, on the shared bins of the metrics
    (:func:`relanon.metrics.signal.column_bins`): shares of all rows per bar or bin, and missing shares."""

    original: np.ndarray
    released: np.ndarray
    missing: tuple[float, float]
    labels: tuple[str, ...] = ()  # value bins: one per bar (missing is the last bar when present)
    edges: np.ndarray | None = None  # quantile bins: edges, the outer ones the original's range


def column_shares(original: pd.Series, released: pd.Series, kind: str) -> Shares:
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
        return Shares(o[:-1], r[:-1], missing, edges=bins.edges)
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
    return Shares(np.array(o_shares), np.array(r_shares), missing, tuple(shown))


def _value_label(value, kind: str) -> str:
    if kind == "datetime":
        stamp = pd.Timestamp(float(value), unit="s")
        return short(stamp.date() if stamp == stamp.normalize() else stamp)
    if kind in NUMERIC_KINDS:
        return short(f"{float(value):g}")
    return short(value)


def short(value, width: int = 18) -> str:
    """The text of ``value``, cut to ``width`` characters (an ellipsis ends a cut text)."""
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def sample_rows(frame: pd.DataFrame, size: int) -> pd.DataFrame:
    """At most ``size`` rows, drawn with a fixed seed so the picture is the same every time."""
    if len(frame) <= size:
        return frame
    positions = np.sort(np.random.default_rng(PICTURE_SEED).choice(len(frame), size=size, replace=False))
    return frame.iloc[positions]


# ---- the fixed layout


def _new_figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="none")


def _add_axes(figure, left: float, bottom: float, width: float, height: float):
    """Axes placed in inches from the figure's lower left corner."""
    fig_width, fig_height = figure.get_size_inches()
    return figure.add_axes((left / fig_width, bottom / fig_height, max(width, 0.1) / fig_width,
                            max(height, 0.1) / fig_height))


def _text_size(labels, fontsize: float) -> tuple[float, float]:
    """The width of the widest label and the height of a line, in inches, in the font they are drawn in."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    font = FontProperties(size=fontsize)
    widest = max((text_to_path.get_text_width_height_descent(str(label), font, ismath=False)[0]
                  for label in labels if str(label)), default=0.0)
    return widest * POINT, 1.2 * fontsize * POINT


def _title(axes, text: str) -> None:
    """A 10 pt title at a fixed place above the axes, raised over the y axis' multiplier ("1e-5") if any.

    Left to matplotlib, the title's place is found at drawing by measuring every tick label of the axes.
    """
    formatter = axes.yaxis.get_major_formatter()
    formatter.set_locs(axes.yaxis.get_majorticklocs())
    axes.set_title(text, fontsize=10, y=1.0, pad=18 if formatter.get_offset() else 6)


def _bar_labels_depth(labels: tuple[str, ...]) -> tuple[float, bool]:
    """How far the tick labels of bars reach below their axes (inches), and whether they are turned."""
    rotate = len(labels) > 4 or max((len(label) for label in labels), default=0) > 8
    width, line = _text_size(labels, 7)
    if not rotate:
        return TICK_SPACE + line, False
    angle = math.radians(ROTATION)
    return TICK_SPACE + width * math.sin(angle) + line * math.cos(angle), True


# ---- distributions


def distributions_figure(original: pd.DataFrame, released: pd.DataFrame, types: dict, distances: dict,
                         floors: dict | None = None):
    """Each column of ``types``, original vs anonymized, in panels of two per row under one legend."""
    floors = floors or {}
    shares = {c: column_shares(original[c], released[c], kind) for c, kind in types.items()}
    columns = list(types)
    per_row = 2 if len(columns) > 1 else 1
    n_rows = math.ceil(len(columns) / per_row)
    cell_width, cell_height = 5.6, 2.9
    figure = _new_figure(cell_width * per_row, cell_height * n_rows)
    depths = [_panel_depth(shares[c], types[c]) for c in columns]
    row_height = (cell_height * n_rows - LEGEND_BAND) / n_rows
    for position, column in enumerate(columns):
        row, slot = divmod(position, per_row)
        bottom_space = max(depths[row * per_row: row * per_row + per_row]) + 0.08
        bottom = (n_rows - 1 - row) * row_height + bottom_space
        height = row_height - bottom_space - TITLE_SPACE
        left = slot * cell_width + PANEL_LEFT
        width = cell_width - PANEL_LEFT - PANEL_RIGHT
        s = shares[column]
        numeric = s.edges is not None
        if numeric and (s.missing[0] > 0 or s.missing[1] > 0):  # bars show "missing" as a bar
            main = (width - MISSING_GAP) * 6 / 7
            _draw_missing(_add_axes(figure, left + main + MISSING_GAP, bottom, width - main - MISSING_GAP, height),
                          s.missing)
            width = main
        axes = _add_axes(figure, left, bottom, width, height)
        if numeric:
            _draw_histogram(axes, s, types[column])
        else:
            _draw_bars(axes, s)
        distance = f", H = {distances[column]:.3f}" if column in distances else ""
        if column in floors:
            distance += f", floor {floors[column]:.3f}"
        _title(axes, f"{column} ({types[column]}{distance})")
        axes.tick_params(labelsize=8)
    _legend(figure)
    return figure


def _panel_depth(s: Shares, kind: str) -> float:
    """How far below its axes a distribution panel writes (tick labels, an offset or a unit line)."""
    if s.edges is None:
        return _bar_labels_depth(s.labels)[0]
    line = 1.2 * 8 * POINT
    depth = TICK_SPACE + line
    if kind == "datetime" or np.abs(s.edges).max() > 1e300:  # the dates' offset ("2021-Mar"), or "value / 1e300"
        depth += line + 4 * POINT
    return depth


def _legend(figure) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=ORIGINAL_COLOUR, alpha=0.6, label="original"),
               Patch(color=ANONYMIZED_COLOUR, alpha=0.8, label="anonymized")]
    figure.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1.0), ncols=2, fontsize=9,
                  frameon=False)


def _draw_histogram(axes, s: Shares, kind: str) -> None:
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


def _draw_bars(axes, s: Shares) -> None:
    """Side-by-side bars, each side one filled outline: bars of width 0.4 on either side of their label."""
    positions = np.arange(len(s.labels))
    for offset, values, colour, label in ((-0.4, s.original, ORIGINAL_COLOUR, "original"),
                                          (0.0, s.released, ANONYMIZED_COLOUR, "anonymized")):
        if len(values) == 0:  # a table without rows: an empty side, still named in the legend
            axes.bar([], [], color=colour, alpha=0.8, label=label)
            continue
        edges = np.column_stack([positions + offset, positions + offset + 0.4]).ravel()
        heights = np.column_stack([values, np.zeros(len(values))]).ravel()[:-1]  # nothing between two bars
        axes.stairs(heights, edges, fill=True, color=colour, alpha=0.8, linewidth=0, label=label)
    _, rotate = _bar_labels_depth(s.labels)
    axes.set_xticks(positions, s.labels, rotation=ROTATION if rotate else 0, ha="right" if rotate else "center",
                    fontsize=7)
    axes.set_ylabel("share of rows", fontsize=8)


# ---- correlations


def correlation_figure(original: pd.DataFrame, released: pd.DataFrame, types: dict):
    """The Pearson correlations of the numeric columns, original and anonymized side by side."""
    matrices = [_correlations(frame, types) for frame in (original, released)]
    names = [short(c, 14) for c in types]
    size = max(3.2, 0.45 * len(names) + 1.6)
    fig_width = 2 * size + 0.8
    figure = _new_figure(fig_width, size)
    label_width, line = _text_size(names, 7)
    angle = math.radians(ROTATION)
    bottom = TICK_SPACE + label_width * math.sin(angle) + line * math.cos(angle) + 0.08
    left = TICK_SPACE + label_width + 0.08
    colour_bar = 0.15 + 0.9  # the bar, its tick labels and its label
    side = min(size - bottom - TITLE_SPACE, (fig_width - 2 * left - 0.2 - colour_bar) / 2)
    start = (fig_width - (2 * (left + side) + 0.2 + colour_bar)) / 2
    image = None
    for index, (matrix, title) in enumerate(zip(matrices, ("original", "anonymized"), strict=True)):
        ax = _add_axes(figure, start + left + index * (left + side), bottom, side, side)
        image = ax.imshow(np.ma.masked_invalid(matrix), cmap="RdBu_r", vmin=-1.0, vmax=1.0)
        _title(ax, title)
        ticks = np.arange(len(names))
        ax.set_xticks(ticks, names, rotation=ROTATION, ha="right", fontsize=7)
        ax.set_yticks(ticks, names, fontsize=7)
        if len(names) <= 10:
            for i, j in zip(*np.nonzero(~np.isnan(matrix)), strict=True):
                colour = "white" if abs(matrix[i, j]) > 0.6 else "black"  # readable on dark cells
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7, color=colour)
    bar_left = start + 2 * (left + side) + 0.2
    bar = _add_axes(figure, bar_left, bottom + 0.1 * side, 0.15, 0.8 * side)
    figure.colorbar(image, cax=bar, label="Pearson correlation")
    return figure


def _correlations(frame: pd.DataFrame, types: dict) -> np.ndarray:
    values = pd.DataFrame({c: numeric_values(frame[c], kind) for c, kind in types.items()})
    return values.corr().to_numpy()


# ---- factor space


def factor_figure(original: pd.DataFrame, released: pd.DataFrame, types: dict, table):
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
            space.fit(sample_rows(original, FIT_SAMPLE))
        if space.n_components_ < 2:
            return f"{table.name}: the factor space has a single dimension: no scatter plot."
        o_coords = space.transform(sample_rows(original, SCATTER_SAMPLE))
        r_coords = space.transform(sample_rows(released, SCATTER_SAMPLE))
    except RelanonError as error:  # a picture is not worth losing the whole report
        return f"{table.name}: no factor-space picture ({error})."
    figure = _new_figure(6.4, 4.8)
    axes = _add_axes(figure, 0.85, 0.6, 6.4 - 0.85 - 0.2, 4.8 - 0.6 - 0.15)
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
    avoids it", would send a user whose release used ``ncp: auto`` (12 doctors) to a setting that
    changes nothing. What is true of the picture is said instead.
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


# ---- links


def children_figure(original: np.ndarray, released: np.ndarray, link, label: str):
    """The number of children per parent of ``link``, original vs anonymized, on the metrics' bins."""
    figure = _new_figure(6.4, 3.2)
    shares = column_shares(pd.Series(original, dtype="int64"), pd.Series(released, dtype="int64"), "integer")
    line = 1.2 * 9 * POINT
    depth = _bar_labels_depth(shares.labels)[0] if shares.edges is None else TICK_SPACE + 1.2 * 10 * POINT
    bottom = depth + line + 4 * POINT + 0.08
    axes = _add_axes(figure, 0.85, bottom, 6.4 - 0.85 - 0.2, 3.2 - bottom - 0.35)
    if shares.edges is None:
        _draw_bars(axes, shares)
    else:
        _draw_histogram(axes, shares, "integer")
    axes.set_xlabel(f"{link.child} rows per {link.parent} row", fontsize=9)
    _title(axes, label)
    axes.legend(fontsize=8)
    return figure
