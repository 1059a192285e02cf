"""Link fidelity: does a child still agree with the parent it is linked to?

For a parent-child link, each child row is joined to its parent row, in the original database and in
the release, and every (child column, parent column) pair is compared between the two joins:

- two numeric-like columns (continuous, integer, datetime as seconds): *correlation similarity*
  ``1 - |r_original - r_released| / 2`` (Pearson; 1 = same correlation, 0 = opposite);
- any other pair: *contingency similarity* ``1 - TVD`` of the joint table, TVD the total variation
  distance ``sum_cells |p - q| / 2`` over the cells of the two columns' bins (categories as they
  are, numbers on bins fixed on the original: :func:`relanon.common.link_binning.bin_codes`), a missing value a bin of its own.

The link's score is the mean over its pairs (1 = every relation kept). A child that keeps its own
distribution but lands on a parent it does not fit (a yearly record after its person stopped
working) lowers the contingency and correlation of the pairs that tie them; the children-per-parent
distribution does not see it.

A pair with a column that holds one and the same value (or bin) in both joins has no relation to
keep: its joint table is the other column's distribution beside a constant, whose changes are the
tables' own (their Hellinger distances), not the link's. Such a pair is *not applicable* and left
out; a link with no other pair (a parent table of one row: every child joins the only parent) has
no score and no target.

The *noise floor* is the score that two random halves of the original give each other, the parents
split in two with their children (the seeded splits of :mod:`relanon.metrics.noise_floor`, averaged): the score a perfect release could
not beat at this size. A link passes when its score is above the target or at least its floor.
These are the measures of SDMetrics' Intertable Trends (correlation and contingency similarity
across a link), computed here on relanon's own binning.
"""

from __future__ import annotations

import copy
import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.common.binning import RowBins
from relanon.common.link_binning import binned_numbers
from relanon.engine.columns import NUMERIC_KINDS, numeric_values
from relanon.metrics.base import HIGHER, Metric
from relanon.metrics.noise_floor import DEFAULT_SPLITS, NOISE_FLOOR_SEED, noise_floor
from relanon.multitable.views import parent_positions
from relanon.schema.graph import Link
from relanon.schema.model import Schema

LINK_FIDELITY_TARGET = 0.85
NOT_APPLICABLE = "not applicable"
# Cells of a joint table counted in a table of every cell (:func:`total_variation`) rather than by sorting its rows'
# cells (at least as many as the rows compared): a few MB at most.
JOINT_TABLE_CELLS = 1 << 20

DESCRIPTION = (
    "Mean over every (child column, parent column) pair, after joining each child to its parent, of "
    "the correlation similarity (two numeric columns) or contingency similarity (1 - total variation "
    "distance of the joint table): 1 = children agree with their parents as in the original. A pair with a column "
    "that holds one and the same value on both sides (a single parent) has no relation to keep and is left out."
)


def link_fidelity(schema: Schema, original, anonymized, link: Link, *, columns=None, n_splits: int = DEFAULT_SPLITS,
                  random_state=NOISE_FLOOR_SEED) -> Metric:
    """The link-fidelity score of one link, per pair in its breakdown, with its noise floor.

    Parameters
    ----------
    schema : Schema
        The schema shared by both databases.
    original, anonymized : dict of DataFrame
        The databases (typed as :func:`relanon.stores.io.read_database` returns them).
    link : Link
        The parent-child link (:func:`relanon.schema.graph.all_links`).
    columns : mapping of table name to column names, optional
        The columns compared (by default every released column present on both sides).
    n_splits : int
        Random halves of the original averaged into the noise floor (0: no floor).
    random_state : int or Generator
        Seed of the halves.

    Returns
    -------
    Metric
        ``link_fidelity``: value, target 0.85 (NaN without target when no column pair is compared),
        noise floor (margin 0: a release passes at the floor, since two halves differ more than the
        original and a release of its size); breakdown ``pairs`` (``"child ~ parent"`` -> similarity),
        ``measures`` (which measure each pair used) and ``noise_floor``.

    Examples
    --------
    >>> from relanon import datasets
    >>> from relanon.schema.graph import all_links
    >>> schema, db = datasets.careers(scale=0.02, seed=0)
    >>> link = all_links(schema)[0]
    >>> link_fidelity(schema, db, db, link, n_splits=0).value
    1.0
    """
    child_cols, parent_cols, types = _compared_columns(schema, original, anonymized, link, columns)
    o_child, o_parent, o_groups = joined(schema, original, link, child_cols, parent_cols)
    a_child, a_parent, _ = joined(schema, anonymized, link, child_cols, parent_cols)
    joins = _JoinColumns(o_child, o_parent, a_child, a_parent, types)  # each column read and binned once
    pairs, measures = joins.similarities(None, None)
    value = float(np.mean(list(pairs.values()))) if pairs else float("nan")
    floor = _halves_floor(joins.halves(), o_groups, n_splits, random_state) if pairs else float("nan")
    # no column on one side (a parent whose columns are all dropped), or every pair with a constant column
    # (a single parent): nothing to compare, nothing to fail
    return Metric(
        "link_fidelity", value, LINK_FIDELITY_TARGET if pairs else None, HIGHER, DESCRIPTION,
        {"pairs": pairs, "measures": measures, "noise_floor": floor,
         "not_applicable": [name for name, measure in measures.items() if measure == NOT_APPLICABLE],
         "link": f"{link.child}.{link.column} -> {link.parent}"},
        floor=floor, margin=0.0,
    )


def joined(schema: Schema, database, link: Link, child_columns, parent_columns):
    """Child rows that have a parent, their parent's columns beside them, and the parent's position.

    Returns ``(child_frame, parent_frame, parent_position)``, aligned row by row.
    """
    positions = parent_positions(schema, database, link)
    linked = np.flatnonzero(positions >= 0)
    child = database[link.child][list(child_columns)].iloc[linked].reset_index(drop=True)
    parent = database[link.parent][list(parent_columns)].iloc[positions[linked]].reset_index(drop=True)
    return child, parent, positions[linked]


def pair_similarities(original_child, original_parent, released_child, released_parent, types):
    """Similarity of every (child column, parent column) pair between two joins.

    ``types`` maps ``("child", column)`` and ``("parent", column)`` to schema types. Returns
    ``(pairs, measures)``: ``"child ~ parent"`` -> similarity, and -> ``"correlation"`` or
    ``"contingency"``. A pair with a column that holds one and the same value (or bin) in both
    joins is not scored: its measure is ``"not applicable"`` and it has no similarity.

    Examples
    --------
    >>> oc = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}); op = pd.DataFrame({"g": ["a", "a", "b", "b"]})
    >>> rc = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}); rp = pd.DataFrame({"g": ["a", "b", "a", "b"]})
    >>> pair_similarities(oc, op, rc, rp, {("child", "x"): "continuous", ("parent", "g"): "categorical"})
    ({'x ~ g': 0.5}, {'x ~ g': 'contingency'})

    A single parent: every child joins it, there is no relation to keep.

    >>> one = pd.DataFrame({"g": ["a"] * 4})
    >>> pair_similarities(oc, one, rc.iloc[::-1], one, {("child", "x"): "continuous", ("parent", "g"): "categorical"})
    ({}, {'x ~ g': 'not applicable'})
    """
    columns = _JoinColumns(original_child, original_parent, released_child, released_parent, types)
    return columns.similarities(None, None)


class _JoinColumns:
    """The columns of an original join and a released one, read once: numbers as floats, labels as codes
    of the bins fitted on the whole original column (:func:`relanon.common.binning.fit_bins`).

    :meth:`similarities` compares any rows of the original join (the rows that play the original) with
    any rows of the released one, each column binned on the first rows as
    :func:`relanon.common.link_binning.bin_codes` bins them: the noise floor compares two halves of the
    original join without reading or binning a frame again.
    """

    def __init__(self, original_child, original_parent, released_child, released_parent, types):
        self.child, self.parent, self.types = list(original_child.columns), list(original_parent.columns), types
        self.columns = {}
        for side, o_frame, r_frame in (("child", original_child, released_child),
                                       ("parent", original_parent, released_parent)):
            for column in o_frame.columns:
                self.columns[(side, column)] = _column(o_frame[column], r_frame[column], types[(side, column)])

    def halves(self) -> _JoinColumns:
        """The original join against itself: :meth:`similarities` then compares rows of the original with other
        rows of the original (its halves), as ``_JoinColumns(child, parent, child, parent, types)`` would."""
        twin = copy.copy(self)
        twin.columns = {key: column.halves() for key, column in self.columns.items()}
        return twin

    def similarities(self, original_rows, released_rows):
        """``(pairs, measures)`` of :func:`pair_similarities` between rows ``original_rows`` of the original
        join and rows ``released_rows`` of the released one (None: every row)."""
        pairs, measures = {}, {}
        codes, numbers = {}, {}
        for key, column in self.columns.items():
            codes[key] = column.codes(original_rows, released_rows)
            if column.numbers is not None:
                numbers[key] = (_rows(column.numbers[0], original_rows), _rows(column.numbers[1], released_rows))
        single = {key: _one_code(o, r) for key, (o, r) in codes.items()}
        for c in self.child:
            for p in self.parent:
                name = f"{c} ~ {p}"
                if single[("child", c)] or single[("parent", p)]:
                    measures[name] = NOT_APPLICABLE
                    continue
                kinds = self.types[("child", c)], self.types[("parent", p)]
                similarity = float("nan")
                if all(k in NUMERIC_KINDS for k in kinds):
                    (o_c, r_c), (o_p, r_p) = numbers[("child", c)], numbers[("parent", p)]
                    similarity = _correlation_similarity(_pearson(o_c, o_p), _pearson(r_c, r_p))
                    measures[name] = "correlation"
                if math.isnan(similarity):  # not two numbers, or a constant column: compare the joint tables
                    (o_c, r_c), (o_p, r_p) = codes[("child", c)], codes[("parent", p)]
                    similarity = 1.0 - total_variation(o_c, o_p, r_c, r_p)
                    measures[name] = "contingency"
                pairs[name] = similarity
        return pairs, measures


def total_variation(original_a, original_b, released_a, released_b) -> float:
    """Total variation distance between the joint distributions of two coded columns.

    Examples
    --------
    >>> total_variation(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([0, 0]), np.array([0, 0]))
    0.75

    Shares that sum to 1 only up to rounding still give a distance of exactly 1 when no cell is shared
    (summed naively they give 0.9999999999999999, and a link fidelity of 1.11e-16 instead of 0):

    >>> total_variation(np.arange(2), np.zeros(2), np.arange(2, 5), np.zeros(3))
    1.0
    """
    codes = [np.asarray(c).astype(np.int64, copy=False) for c in (original_a, original_b, released_a, released_b)]
    width = max((int(c.max()) for c in codes[1::2] if c.size), default=0) + 1
    height = max((int(c.max()) for c in codes[0::2] if c.size), default=0) + 1
    if height * width <= max(JOINT_TABLE_CELLS, len(codes[0]) + len(codes[2])):
        # a table of every cell, counted in one pass; the held cells, in order, are those of the sorted union below
        o_counts = np.bincount(codes[0] * width + codes[1], minlength=height * width)
        r_counts = np.bincount(codes[2] * width + codes[3], minlength=height * width)
        cells = np.flatnonzero(o_counts | r_counts)
        o_all = o_counts[cells].astype(np.float64) / max(len(codes[0]), 1)
        r_all = r_counts[cells].astype(np.float64) / max(len(codes[2]), 1)
    else:
        o_cells, o_shares = _joint_shares(codes[0], codes[1], width)
        r_cells, r_shares = _joint_shares(codes[2], codes[3], width)
        cells = np.union1d(o_cells, r_cells)  # every cell of either side, in the order of (a, b)
        o_all, r_all = np.zeros(len(cells)), np.zeros(len(cells))
        o_all[np.searchsorted(cells, o_cells)] = o_shares
        r_all[np.searchsorted(cells, r_cells)] = r_shares
    distance = float(np.abs(o_all - r_all).sum() / 2)
    return float(np.clip(round(distance, 12), 0.0, 1.0))  # the rounding errors of the shares, not a distance


def halves_noise_floor(child, parent, groups, types, n_splits: int = DEFAULT_SPLITS, random_state=NOISE_FLOOR_SEED) -> float:
    """The link score that two random halves of the original give each other (mean over splits).

    The parents are split in two halves by :func:`relanon.metrics.noise_floor.noise_floor` (the
    floor of every signal metric), each taking its children with it, and one half is scored
    against the other. NaN with no split or too few parents.
    """
    return _halves_floor(_JoinColumns(child, parent, child, parent, types), groups, n_splits, random_state)


def _halves_floor(columns: _JoinColumns, groups, n_splits: int, random_state) -> float:
    """:func:`halves_noise_floor` of the original join's ``columns`` (:meth:`_JoinColumns.halves`)."""
    parents, parent_of = np.unique(groups, return_inverse=True)
    if n_splits <= 0:
        return float("nan")

    def children(halves) -> np.ndarray:
        """The rows whose parent is one of the parents ``halves`` (positions among ``parents``)."""
        taken = np.zeros(parents.size, dtype=bool)
        taken[halves] = True
        return np.flatnonzero(taken[parent_of])

    def score(a, b):
        first, second = children(a), children(b)
        pairs, _ = columns.similarities(first, second)
        return float(np.mean(list(pairs.values()))) if pairs else float("nan")

    return float(noise_floor(score, parents.size, splits=n_splits, random_state=random_state).value)


# --------------------------------------------------------------------------- helpers


def _compared_columns(schema: Schema, original, anonymized, link: Link, columns):
    def shared(table):
        allowed = None if columns is None else set(columns.get(table, ()))
        return [c.name for c in schema[table].released_columns
                if c.name in original[table].columns and c.name in anonymized[table].columns
                and (allowed is None or c.name in allowed)]

    child_cols, parent_cols = shared(link.child), shared(link.parent)
    types = {("child", c): schema[link.child].column(c).type for c in child_cols}
    types.update({("parent", c): schema[link.parent].column(c).type for c in parent_cols})
    return child_cols, parent_cols, types


def _correlation_similarity(r_o: float, r_r: float) -> float:
    if math.isnan(r_o):
        return float("nan")
    if math.isnan(r_r):  # the release made a column constant: no correlation left
        r_r = 0.0
    return 1.0 - abs(r_o - r_r) / 2


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    keep = ~(np.isnan(a) | np.isnan(b))
    if not keep.all():  # no copy of two full columns
        a, b = a[keep], b[keep]
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def _joint_shares(a: np.ndarray, b: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The cells ``a * width + b`` held, sorted, and the share of the rows in each."""
    cells, counts = np.unique(a * width + b, return_counts=True)
    return cells, counts.astype(np.float64) / max(len(a), 1)


def _one_code(original: np.ndarray, released: np.ndarray) -> bool:
    """Whether two arrays of codes hold one code at most between them."""
    both = np.concatenate([original, released])
    return both.size == 0 or both.min() == both.max()


def _rows(values: np.ndarray, rows) -> np.ndarray:
    return values if rows is None else values[rows]


class _Column(NamedTuple):
    """One column of both joins (:class:`_JoinColumns`): its bins (:class:`relanon.common.binning.RowBins`,
    the bins of :func:`relanon.common.link_binning.bin_codes`), and for numbers the floats correlated."""

    bins: RowBins
    numbers: tuple | None

    def codes(self, original_rows, released_rows):
        """Bin codes of the rows compared, bins fitted on the original rows."""
        return self.bins.codes(original_rows, released_rows)[:2]

    def halves(self) -> _Column:
        """The original column on both sides."""
        return _Column(self.bins.halves(), None if self.numbers is None else (self.numbers[0], self.numbers[0]))


def _column(original: pd.Series, released: pd.Series, kind: str) -> _Column:
    if kind in NUMERIC_KINDS:
        return _Column(RowBins(binned_numbers(original, kind), binned_numbers(released, kind), numeric=True),
                       (numeric_values(original, kind), numeric_values(released, kind)))
    return _Column(RowBins(original, released, numeric=False), None)
