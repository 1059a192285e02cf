"""Anchor linked children on their parents: a child's values are re-drawn to agree with the parent
it was linked to.

After avatarization, a child agrees with its *own* copy of its parent's columns (a weighted mean of
its neighbours' parents, so every linear rule such as ``first_year <= year <= last_year`` holds
for it), but the link then gives it an avatar parent whose values differ from that copy: on the
careers database, without anchoring, the linked parent's first year differs from the copy by 2.7 years
on average and 19 % of the yearly records fall outside their person's span. Matching cannot close the
gap (matching on the span alone leaves 5 % outside, and loses the sector-occupation relation).

So the child is re-drawn *given* its linked parents, as an avatar of donors that fit them:

1. its query point is its own avatar values with, in place of its parent copy, the released values
   of the parents it is now linked to; the donors are, for each of the ``4k`` original parents
   nearest to the linked parents, its child nearest to the avatar, plus the ``4k`` nearest original
   children in the table's factor space. The parents are searched in a space of the parent columns
   each weighted by how much the children depend on it (:func:`dependence`): a nationality that no
   child follows does not push away the parents whose span fits (careers, scale 1: 3.2 % of the leaves
   outside their person's span, 4.5 % with every parent column weighted alike);
2. donor weights ``v`` (non-negative, summing to 1) are chosen so that the donors' parents
   reproduce the linked parents: ``sum_j v_j P_j = p`` for each numeric parent column (standardized)
   and ``sum_j v_j 1[P_j != p] = 0`` for each categorical one, by non-negative least squares,
   with a pull towards the avatar weights of the donors (``1/d * Exp(1) * 2^-rank``) so that the
   weights keep the avatar method's randomness wherever several solutions fit;
3. the child's numeric columns are the ``v``-weighted means of the donors' values, its categorical
   columns (and the numbers of its own children) those of one donor drawn with probabilities ``v``.
4. a row whose donors' parents cannot reproduce its linked parents (a relevance-weighted gap above
   ``REPAIR_TOLERANCE`` standard deviations: the linked parent lies outside what its donors' parents
   surround) is re-drawn once among ``REPAIR_DONORS`` times as many donors and keeps the closer of its
   two draws. And a row whose donors sharing the drawn donor's categories cannot reproduce the linked
   parents (while all its donors could) mixes its numbers over all its donors: the parents first.
   Careers, scale 0.3: with both, 1.5-2.4 % of the leaves and 0.13 % of the yearly records outside
   their person's span; without either, 1.7-3.6 % and 0.7-1.0 %.

When the parents are reproduced exactly, every linear rule that each original child obeys with its
parent holds for the re-drawn child with its linked parent (a weighted mean of values that satisfy
it), and every categorical combination across the link is one that an original child and its
parent carry. Each child still mixes several original children, none of them its own source.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from relanon.common.link_binning import bin_codes
from relanon.engine.avatar import neighbour_weights
from relanon.engine.columns import NUMERIC_KINDS, numeric_values, restore_numeric
from relanon.engine.factor_space import FactorSpace
from relanon.engine.neighbours import Neighbours, cross_neighbours
from relanon.multitable.results import TableRelease
from relanon.schema.graph import parent_links
from relanon.schema.model import Schema

ANCHOR_CHILDREN = True  # honour ``anchor: true`` links (switched off only to measure what anchoring does)
DONORS_PER_K = 4  # donor parents per neighbour of the avatar method: room to surround the linked parent
JOINT_DONORS = 1
KEEP_BELOW = 0.3
RELEVANCE_POWER = 1.0
SAME_CATEGORIES = 1
OWN_CATEGORY_WEIGHT = 10.0
OWN_WEIGHT = 1.0  # weight of the equations asking the donors for the child's own avatar values
MIN_RELEVANCE = 0.05  # the weight of a parent column that no child column follows
RELEVANCE_SAMPLE = 20_000  # rows (evenly spaced) on which the dependence on each parent column is measured
SMALL_GROUP = 64  # parents with up to this many children are searched from one padded table
PRIOR_WEIGHT = 0.005  # pull of the avatar weights against the fit to the parents (squared-error scale)
SUM_WEIGHT = 100.0  # weight of the equation sum(v) = 1
PARENT_WEIGHT = 30.0  # the parents first: the own values only choose among the weights that fit them
REPAIR_TOLERANCE = 0.02  # rows whose donors' parents stay farther than this from the linked parent...
REPAIR_DONORS = 3  # ...are searched again among this many times more donors (6 did no better)
CHUNK_CELLS = 2_000_000  # equations (rows x columns x donors) built and solved at a time: 16 MB a copy


def anchor(original: pd.DataFrame, targets: pd.DataFrame, types: dict, weights: dict, own: list, anchors: list,
           drawn: list = (), *, k: int, ncp: int | None, random_state=None, progress=None) -> pd.DataFrame:
    """New values of the ``own`` and ``drawn`` columns of each target row, re-drawn from donors.

    Parameters
    ----------
    original : DataFrame
        The original child rows enriched with their parents' columns (donors).
    targets : DataFrame
        The rows to re-draw: their avatar values in ``own`` and their linked parents' released
        values in ``anchors`` (same column names as in ``original``).
    types, weights : dict
        Schema type and weight of every column of ``own``, ``anchors`` and ``drawn``.
    own : list of str
        The child's own columns, re-drawn (numeric: weighted mean; others: one donor's value).
    anchors : list of str
        The parent columns the donors' parents must reproduce.
    drawn : list of str
        Numeric columns taken from the drawn donor (the numbers of the child's own children).
    k, ncp : int
        The child table's avatar parameters: ``DONORS_PER_K * k`` donors are searched in ``ncp`` axes.
    random_state : int or Generator
        Seeds the avatar weights and the donor draws.
    progress : callable, optional
        Called as ``progress(done, total)`` as blocks of rows are re-drawn: the target rows, then those
        searched again among more donors (which raise the total when they are known); the last call has
        ``done == total``.

    Returns
    -------
    DataFrame
        One row per target row (its index), columns ``own`` then ``drawn``, dtypes of ``original``.

    Examples
    --------
    >>> kids = pd.DataFrame({"year": [2000, 2001, 2010, 2011], "p::first": [2000, 2000, 2010, 2010]})
    >>> target = pd.DataFrame({"year": [2004], "p::first": [2010]})
    >>> out = anchor(kids, target, {"year": "integer", "p::first": "integer"}, {}, ["year"], ["p::first"],
    ...              k=2, ncp=None, random_state=0)
    >>> int(out["year"].iloc[0]) >= 2010
    True
    """
    first_rng, repair_rng = np.random.default_rng(random_state).spawn(2)
    own, anchors, drawn = list(own), list(anchors), list(drawn)
    if isinstance(ncp, int | np.integer) and ncp < 1:
        ncp = 1  # a table of constant columns was avatarized in no axis: its donors are found in one
    donors = max(2, DONORS_PER_K * k)
    n = len(targets)
    report = progress or (lambda done, total: None)
    out, residual = _redraw(original, targets, types, weights, own, anchors, drawn, donors, ncp, first_rng,
                            lambda done: report(done, n))
    off = np.flatnonzero(residual > REPAIR_TOLERANCE)
    if REPAIR_DONORS > 1 and off.size:
        # the donors' parents did not surround the linked parent: searched again among more of them
        again, closer = _redraw(original, targets.iloc[off], types, weights, own, anchors, drawn,
                                REPAIR_DONORS * donors, ncp, repair_rng, lambda done: report(n + done, n + off.size))
        better = closer < residual[off]
        for column in out.columns:
            values = out[column].copy()
            values.iloc[off[better]] = again[column].to_numpy()[better]
            out[column] = values
    return out


def _redraw(original, targets, types, weights, own, anchors, drawn, donors_wanted, ncp, rng, rows_done):
    """The re-drawn rows (see :func:`anchor`) and how far each row's donors' parents remain from its
    linked parent: the largest relevance-weighted gap over the parent columns (standard deviations
    for numbers, share of weight on another category otherwise). ``rows_done(n)`` is called after each
    block of rows."""
    weight_rng, draw_rng = rng.spawn(2)
    groups = original[anchors].groupby(anchors, dropna=False, sort=True).ngroup().to_numpy()
    n_groups = int(groups.max()) + 1
    representative = np.unique(groups, return_index=True)[1]

    anchor_weight, own_weight = dependence(original, own, anchors, types)
    relevance = dict(zip(anchors, anchor_weight, strict=True))
    parent_space = FactorSpace({c: types[c] for c in anchors}, n_components=_all_axes(original, anchors, types),
                               weights={c: weights.get(c, 1.0) * relevance[c] for c in anchors}).fit(original[anchors])
    m = min(n_groups, donors_wanted)
    # children linked to one parent ask the same question (Lahman: 5 batting lines a player): each
    # distinct point is searched once, its answer, which does not depend on the others asked, shared
    queries, asking = np.unique(parent_space.transform(targets[anchors]), axis=0, return_inverse=True)
    near = cross_neighbours(parent_space.transform(original[anchors].iloc[representative]), queries, k=m)
    near = Neighbours(near.distances[asking.ravel()], near.indices[asking.ravel()])
    own_space = FactorSpace({c: types[c] for c in own}, n_components=ncp,
                            weights={c: weights.get(c, 1.0) for c in own}).fit(original[own])
    donors, own_distance = _nearest_members(own_space.transform(original[own]), groups, n_groups,
                                            own_space.transform(targets[own]), near.indices)
    if JOINT_DONORS:
        # and the children nearest in the table's own factor space, parents included: own values
        # that are rare among the nearest parents' children (a maternity leave) stay within reach
        columns = own + anchors
        joint_space = FactorSpace({c: types[c] for c in columns}, n_components=ncp,
                                  weights={c: weights.get(c, 1.0) for c in columns}).fit(original[columns])
        joint = cross_neighbours(joint_space.transform(original[columns]), joint_space.transform(targets[columns]),
                                 k=min(m, len(original)))
        donors = np.concatenate([donors, joint.indices], axis=1)
        distance = np.concatenate([near.distances + own_distance, joint.distances], axis=1)
    else:
        distance = near.distances + own_distance
    prior = neighbour_weights(distance, weight_rng)
    parents = _Gaps(original, targets, anchors, types)
    categorical = [c for c in own if types[c] not in NUMERIC_KINDS]
    combo = None
    if SAME_CATEGORIES and categorical:
        combo = original[categorical].groupby(categorical, dropna=False, sort=True).ngroup().to_numpy()
    fit = _RowFit(parents, _Gaps(original, targets, own, types), anchor_weight, own_weight,
                  [types[c] not in NUMERIC_KINDS for c in own], combo, draw_rng)
    # the equations of every row and donor are built and solved a block of rows at a time: held whole,
    # they took (rows x columns x donors) doubles several times over (Lahman, 115,450 batting lines x 22
    # columns x 80 donors: 1.6 GB a copy). The rows are independent and the draws taken in row order, so
    # the blocks give the same bytes as one block.
    n, width = donors.shape
    v, chosen, residual = np.empty((n, width)), np.empty(n, dtype=np.int64), np.empty(n)
    step = max(1, CHUNK_CELLS // max(1, width * (len(anchors) + len(own))))
    for start in range(0, n, step):
        rows = slice(start, start + step)
        v[rows], chosen[rows], residual[rows] = fit(rows, donors[rows], prior[rows])
        rows_done(min(n, start + step))

    out = {}
    free = own_weight > OWN_WEIGHT * (1 - KEEP_BELOW) ** 2  # numbers that barely follow the parents
    for column, keep in zip(own + drawn, list(free) + [False] * len(drawn), strict=True):
        if keep and types[column] in NUMERIC_KINDS:
            out[column] = targets[column].reset_index(drop=True)
        elif types[column] in NUMERIC_KINDS and column not in drawn:
            out[column] = _weighted_mean(original[column], types[column], donors, v, chosen, own_space.statistics_[column])
        else:
            out[column] = original[column].take(chosen).reset_index(drop=True)
    return pd.DataFrame(out).set_axis(targets.index), residual


class _RowFit:
    """Steps 2-3 of :func:`anchor` for a block of rows: the donor weights ``v``, the drawn donor and the
    gap left between the donors' parents and the linked parent."""

    def __init__(self, parents, own, anchor_weight, own_weight, own_categorical, combo, draw_rng):
        self.parents, self.own = parents, own
        self.anchor_weight, self.own_weight = anchor_weight, own_weight
        self.own_categorical, self.combo, self.draw_rng = own_categorical, combo, draw_rng

    def __call__(self, rows, donors, prior):
        gaps = self.parents.gaps(rows, donors)
        mismatch = PARENT_WEIGHT * gaps * self.anchor_weight[None, :, None]
        # the child's own avatar values are asked for too, those that do not follow the parent firmly
        likeness = self.own.gaps(rows, donors) * self.own_weight[None, :, None]
        likeness[:, self.own_categorical] *= OWN_CATEGORY_WEIGHT
        equations = np.concatenate([mismatch, likeness], axis=1)
        del mismatch, likeness
        v = _fit_weights(equations, prior)
        chosen = _draw(donors, v, self.draw_rng)
        if self.combo is not None:
            # the numbers are then mixed among the donors that share the drawn donor's categories (a
            # dose among the doses of the same drug), with weights fitted again to the parents
            combo = self.combo
            shared = _fit_weights(equations, prior, usable=combo[donors] == combo[chosen][:, None])
            # unless those donors cannot reproduce the parents while all of them could: the parents first
            off = _residual(gaps, shared, self.anchor_weight)
            worse = (off > REPAIR_TOLERANCE) & (off > _residual(gaps, v, self.anchor_weight))
            v = np.where(worse[:, None], v, shared)
        return v, chosen, _residual(gaps, v, self.anchor_weight)


def _residual(gaps, v, anchor_weight) -> np.ndarray:
    """Per row, the largest relevance-weighted gap between the donors' parents (weights ``v``) and the
    linked parent."""
    return (np.abs(np.einsum("nrm,nm->nr", gaps, v)) * anchor_weight[None, :]).max(axis=1, initial=0.0)


def _all_axes(frame, columns, types) -> int:
    """Every informative axis of the parent columns: the donors' parents must match on all of them."""
    return max(1, sum(1 if types[c] in NUMERIC_KINDS else max(1, frame[c].nunique(dropna=False) - 1) for c in columns))


def _nearest_members(coords, groups, n_groups, queries, wanted, chunk_cells: int = 4_000_000):
    """For each query and each of its wanted groups, the group member nearest to the query.

    Returns ``(members, distances)``, both of the shape of ``wanted``. Groups of up to ``SMALL_GROUP``
    members are searched all at once from a padded table; larger ones one by one with a tree.
    """
    order = np.argsort(groups, kind="stable")
    sizes = np.bincount(groups, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    members = np.full(wanted.shape, -1, dtype=np.int64)
    distances = np.full(wanted.shape, np.inf)
    small = sizes[wanted] <= SMALL_GROUP
    width = int(min(SMALL_GROUP, sizes.max()))
    padded = np.full((n_groups, width), -1, dtype=np.int64)
    for g in np.flatnonzero(sizes <= SMALL_GROUP):
        padded[g, : sizes[g]] = order[starts[g]: starts[g] + sizes[g]]
    step = max(1, chunk_cells // max(1, wanted.shape[1] * width * coords.shape[1]))
    for start in range(0, len(queries), step):
        rows = slice(start, start + step)
        candidates = padded[wanted[rows]]  # (chunk, m, width)
        valid = (candidates >= 0) & small[rows][:, :, None]
        gap = coords[np.maximum(candidates, 0)] - queries[rows][:, None, None, :]
        d = np.where(valid, np.sqrt(np.einsum("qmwd,qmwd->qmw", gap, gap)), np.inf)
        best = d.argmin(axis=2)
        members[rows] = np.take_along_axis(candidates, best[:, :, None], axis=2)[:, :, 0]
        distances[rows] = np.take_along_axis(d, best[:, :, None], axis=2)[:, :, 0]
    for g in np.unique(wanted[~small]):
        where = np.nonzero(wanted == g)
        inside = order[starts[g]: starts[g] + sizes[g]]
        found = cross_neighbours(coords[inside], queries[where[0]], k=1)
        members[where] = inside[found.indices[:, 0]]
        distances[where] = found.distances[:, 0]
    return members, distances


def dependence(original: pd.DataFrame, own, anchors, types, *, sample: int = RELEVANCE_SAMPLE):
    """Weights of the equations: how firmly each parent column holds the child, and each child
    column is free of its parent.

    The association of two columns is their Cramer's V over the original rows (both binned,
    :func:`relanon.common.link_binning.bin_codes`). A parent column weighs its largest association
    with a child column (at least ``MIN_RELEVANCE``): one that no child column follows (a
    nationality) does not compete with those the children obey (the span their years lie in). A
    child column weighs ``OWN_WEIGHT * (1 - a)^2``, ``a`` its largest association with a parent
    column: the hours worked are asked of the donors, the year (which the span decides) is not.

    Returns ``(anchor_weights, own_weights)``.

    Examples
    --------
    >>> kids = pd.DataFrame({"year": [1, 2, 3, 4], "p::first": [1, 1, 3, 3], "p::noise": ["a", "b", "a", "b"]})
    >>> types = {"year": "integer", "p::first": "integer", "p::noise": "categorical"}
    >>> [w.round(2).tolist() for w in dependence(kids, ["year"], ["p::first", "p::noise"], types)]
    [[1.0, 0.71], [0.0]]
    """
    step = max(1, len(original) // sample)
    rows = original.iloc[::step]
    codes = {c: bin_codes(rows[c], rows[c].iloc[:0], types[c])[0] for c in list(own) + list(anchors)}
    v = np.array([[_cramers_v(codes[a], codes[c]) for c in own] for a in anchors]).reshape(len(anchors), len(own))
    anchor_weight = np.maximum(v.max(axis=1, initial=0.0), MIN_RELEVANCE) ** RELEVANCE_POWER
    own_weight = OWN_WEIGHT * (1 - v.max(axis=0, initial=0.0)) ** 2
    return anchor_weight, own_weight


def _cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    _, a = np.unique(a, return_inverse=True)
    _, b = np.unique(b, return_inverse=True)
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1.0)
    if min(table.shape) < 2:
        return 0.0
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return float(np.sqrt(chi2 / (table.sum() * (min(table.shape) - 1))))


class _Gaps:
    """How far each donor's value is from the target's, per column: standardized differences for
    numbers (0 where either is missing), 1 for another category. The columns are read once; the gaps are
    built for a block of rows at a time."""

    def __init__(self, original, targets, columns, types):
        self.columns = []
        for column in columns:
            if types[column] in NUMERIC_KINDS:
                values = numeric_values(original[column], types[column])
                wanted = numeric_values(targets[column], types[column])
                self.columns.append((values, wanted, np.nanstd(values) or 1.0))
            else:
                both = pd.concat([original[column], targets[column]], ignore_index=True).astype(object)
                codes, _ = pd.factorize(both, use_na_sentinel=False)
                self.columns.append((codes[: len(original)], codes[len(original):], None))

    def gaps(self, rows: slice, donors: np.ndarray) -> np.ndarray:
        """Shape (rows, columns, donors), for the target ``rows`` and their ``donors``."""
        out = np.zeros((donors.shape[0], len(self.columns), donors.shape[1]))
        for a, (mine, wanted, scale) in enumerate(self.columns):
            if scale is not None:
                difference = (mine[donors] - wanted[rows][:, None]) / scale
                out[:, a] = np.nan_to_num(difference)  # a missing value on either side asks nothing
            else:
                out[:, a] = mine[donors] != wanted[rows][:, None]
        return out


def _fit_weights(mismatch: np.ndarray, prior: np.ndarray, usable: np.ndarray | None = None) -> np.ndarray:
    """Non-negative donor weights summing to 1 that reproduce the parents, near the prior weights.

    Each row solves ``min ||M v||^2 + PRIOR_WEIGHT ||v - prior||^2 + SUM_WEIGHT^2 (sum v - 1)^2``,
    ``v >= 0``, by non-negative least squares.
    """
    n, r, m = mismatch.shape
    system = np.empty((r + 1 + m, m))
    target = np.zeros(r + 1 + m)
    target[r] = SUM_WEIGHT
    system[r] = SUM_WEIGHT
    system[r + 1:] = np.sqrt(PRIOR_WEIGHT) * np.eye(m)
    v = np.empty((n, m))
    for i in range(n):
        system[:r] = mismatch[i]
        target[r + 1:] = np.sqrt(PRIOR_WEIGHT) * prior[i]
        if usable is None:
            v[i] = nnls(system, target)[0]
        else:  # only the usable donors take weight
            v[i] = 0.0
            v[i, usable[i]] = nnls(system[:, usable[i]], target)[0]
    if usable is not None:
        prior = prior * usable
    total = v.sum(axis=1, keepdims=True)
    fallback = prior / prior.sum(axis=1, keepdims=True)
    return np.where(total > 0, v / np.where(total > 0, total, 1.0), fallback)


def _draw(donors: np.ndarray, v: np.ndarray, rng) -> np.ndarray:
    cumulative = np.cumsum(v, axis=1)
    cumulative[:, -1] = 1.0
    picked = np.minimum((cumulative < rng.random(len(v))[:, None]).sum(axis=1), v.shape[1] - 1)
    return donors[np.arange(len(donors)), picked]


def _weighted_mean(series, kind, donors, v, chosen, stats) -> pd.Series:
    values = numeric_values(series, kind)
    around = values[donors]
    present = ~np.isnan(around)
    kept = v * present
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.einsum("ij,ij->i", kept, np.where(present, around, 0.0)) / kept.sum(axis=1)
        low = np.where(present, around, np.inf).min(axis=1)
        high = np.where(present, around, -np.inf).max(axis=1)
        mean = np.clip(mean, low, high)
    return restore_numeric(mean, np.isnan(values[chosen]), stats)


def anchored(schema: Schema, release: TableRelease) -> bool:
    """Children re-drawn on their linked parents: avatar tables with a foreign key declared ``anchor: true``."""
    anchored = any(fk.anchor for fk in schema[release.name].foreign_keys)
    return (ANCHOR_CHILDREN and anchored and release.method == "avatar" and release.k is not None
            and len(release.frame) > 0 and release.enriched_types is not None)


def anchor_on_parents(schema: Schema, name: str, releases: dict, rng, progress=None) -> int:
    """Re-draw the released rows of ``name`` on the parents they are linked to (:func:`anchor`).

    The parents of the foreign keys declared ``anchor: true`` are reproduced; rows linked on every
    such key are re-drawn, the others keep their avatar values. Returns the number of rows re-drawn.
    ``progress(done, total)`` is called as blocks of rows are re-drawn (see :func:`anchor`).
    """
    release = releases[name]
    table = schema[name]
    types, weights = release.enriched_types, release.enriched_weights
    enriched, avatars = release.enriched_original, release.enriched_avatars
    own = [c.name for c in table.released_columns if c.name in types and c.name in release.frame.columns]
    names = release.internal_names
    drawn = [n for key, n in names.items() if key[0] == "count" and n in enriched.columns]
    targets = {c: avatars[c] for c in own}
    anchors, linked = [], np.ones(len(release.frame), dtype=bool)
    anchored = {fk.column for fk in table.foreign_keys if fk.anchor}
    for link in (link for link in parent_links(schema, name) if link.column in anchored):
        parent = releases[link.parent]
        keys = release.frame[link.column]
        linked &= keys.notna().to_numpy()
        rows = pd.Index(parent.frame[schema[link.parent].primary_key]).get_indexer(keys.to_numpy())
        for column in schema[link.parent].released_columns:
            target = names.get(("parent", link.column, column.name))
            if target in types and column.name in parent.frame.columns:
                values = parent.frame[column.name]
                targets[target] = pd.Series(pd.api.extensions.take(values.array, rows, allow_fill=True))
                anchors.append(target)
    if not anchors or not own or not linked.any():
        return 0
    targets = pd.DataFrame(targets).iloc[np.flatnonzero(linked)]
    redrawn = anchor(enriched, targets, types, weights, own, anchors, drawn, k=release.k, ncp=release.ncp,
                     random_state=rng, progress=progress)
    rows = np.flatnonzero(linked)
    for column in redrawn.columns:
        for frame in (release.frame, avatars) if column in own else (avatars,):
            if linked.all():
                frame[column] = redrawn[column].to_numpy() if frame[column].dtype == redrawn[column].dtype \
                    else redrawn[column].astype(frame[column].dtype).to_numpy()
            else:
                updated = frame[column].copy()
                updated.iloc[rows] = redrawn[column].to_numpy()
                frame[column] = updated
    return len(rows)
