"""How many children each released parent receives on a ``linear_sum`` link: the first step of a link.

The avatarized parents carry a drawn number of children per link; those numbers are kept within the
original's bounds (:func:`count_bounds`), brought to the link's total with plausible counts
(:func:`draw_towards_total`, :func:`draw_towards_totals`, and :func:`settle_counts` for a parent's several
links at once) and rounded to whole numbers summing to the total (:func:`allocate_counts`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from relanon.common.errors import ParameterError, format_examples
from relanon.engine.neighbours import cross_neighbours
from relanon.multitable.linking.candidates import parent_space, project
from relanon.multitable.linking.inputs import as_count, as_float_vector, generator
from relanon.multitable.results import TableRelease
from relanon.schema.graph import Link, about_people, child_links
from relanon.schema.model import Schema, Table

COUNT_TAIL = 20  # the bounds of the numbers of children move at most 1/COUNT_TAIL of the parents at each end


def count_bounds(original_counts, min_count: int) -> tuple[float, float]:
    """The range a released number of children per parent is kept in: from the ``min_count``-th
    smallest to the ``min_count``-th largest original count.

    A number of children only a few parents have (the patient with far more visits than any other)
    would single that parent out if it were released as it is. The bound moves at most
    1/:data:`COUNT_TAIL` of the parents at each end (with fewer than ``COUNT_TAIL * min_count``
    parents it is lowered; below ``2 * COUNT_TAIL`` parents nothing moves).

    Examples
    --------
    >>> count_bounds([1] * 30 + [2] * 30 + [3] * 30 + [4] * 9 + [58], 5)
    (1.0, 4.0)
    >>> count_bounds([1, 9], 5)
    (1.0, 9.0)
    """
    counts = np.sort(np.maximum(np.nan_to_num(as_float_vector(original_counts, "original_counts")), 0.0))
    if counts.size == 0:
        return 0.0, 0.0
    bound = count_rank(len(counts), as_count(min_count, "min_count", minimum=1))
    if bound <= 1:
        return float(counts[0]), float(counts[-1])
    return float(counts[bound - 1]), float(counts[len(counts) - bound])


def count_rank(n_parents: int, min_count) -> int:
    """The rank of the order statistics :func:`count_bounds` keeps the counts between: ``min_count``,
    lowered to 1/:data:`COUNT_TAIL` of the parents (1 or less: nothing is bounded).

    Examples
    --------
    >>> count_rank(10_000, 10), count_rank(100, 10), count_rank(20, 10)
    (10, 5, 1)
    """
    return min(min_count or 1, n_parents // COUNT_TAIL)


def allocate_counts(expected, total: int, *, candidates=None, held=None, random_state=None) -> np.ndarray:
    """Whole numbers of children per parent, close to ``expected`` and summing to ``total``.

    Negative and missing expectations count as 0. With ``candidates`` (for each parent, counts
    that are as plausible for it as its expectation: those of its nearest original parents), the
    expectations are first brought towards ``total`` by replacing some of them with one of their
    parent's candidates (:func:`draw_towards_total`), so that a sum that is off by sampling noise
    (20 drawn counts summing to 122 children of 200) is corrected with plausible counts instead of
    stretching every count by the same factor, which distorts the distribution's shape. Then the
    expectations are scaled to sum to ``total`` and rounded by largest remainders (Hamilton's
    method): each parent gets the whole part of its share, and the children left over go one each
    to the parents with the largest fractional parts, ties broken at random. Every count is
    therefore within 1 of its scaled share, and a parent expected to have no child gets none. When
    every expectation is 0, the children are spread uniformly.

    Parameters
    ----------
    expected : array-like of float, shape (n_parents,)
        Expected (for example avatarized) number of children of each parent.
    total : int
        Number of children to allocate (the number of child rows).
    candidates : array-like of float, shape (n_parents, n_candidates), optional
        Other plausible counts of each parent, used before any scaling.
    held : array-like of float, shape (n_original_parents,), optional
        The original's numbers of children: a candidate is taken only while fewer parents hold it than
        in the original (:func:`draw_towards_totals`).
    random_state : int, numpy.random.Generator or None
        Breaks ties between equal fractional parts and orders the replacements.

    Returns
    -------
    numpy.ndarray of int64, shape (n_parents,)
        Non-negative counts summing exactly to ``total``.

    Examples
    --------
    >>> allocate_counts([2.6, 0.3, -1.0, 1.1], 4).tolist()
    [3, 0, 0, 1]
    >>> allocate_counts([0.0, 0.0], 3, random_state=0).sum()
    np.int64(3)
    """
    rng = generator(random_state)
    values = as_float_vector(expected, "expected")
    total = as_count(total, "total")
    if values.size == 0:
        if total:
            raise ParameterError(f"cannot allocate {total} children to no parent: give at least one parent")
        return np.zeros(0, dtype=np.int64)
    infinite = np.flatnonzero(np.isposinf(values))
    if infinite.size:
        raise ParameterError(
            f"expected counts must be finite, got +inf at positions {format_examples(infinite)}; "
            "replace them by a finite expectation"
        )
    values = np.where(np.isnan(values) | (values < 0), 0.0, values)
    if candidates is not None:
        values = draw_towards_total(values, candidates, total, held=held, random_state=rng)
    weight = values.sum()
    if weight <= 0:
        values, weight = np.ones_like(values), float(values.size)
    share = values / weight * total
    counts = np.floor(share).astype(np.int64)
    left = total - int(counts.sum())
    if left > 0:
        # fractional parts equal but for rounding noise are ties, broken at random
        remainder = np.round(share - counts, 9)
        tie_break = rng.random(values.size)
        order = np.lexsort((tie_break, -remainder))
        counts[order[:left]] += 1
    return counts


def draw_towards_total(expected, candidates, total: int, *, held=None, random_state=None,
                       passes: int = 3) -> np.ndarray:
    """Replace some expected counts by other plausible counts of their parent until they sum to ``total``.

    Parents are visited in a random order (``passes`` times at most); a parent's count is replaced
    by the one of its candidates that brings the sum closest to ``total`` without going past it,
    when one does. Every count stays one of its parent's plausible counts, so the distribution keeps
    its shape; what the candidates cannot close is left to the scaling of :func:`allocate_counts`.
    One link's case of :func:`draw_towards_totals` (``held``: the original's numbers of children, see there).

    Examples
    --------
    >>> draw_towards_total([1.0, 1.0, 1.0], [[1, 4], [1, 2], [1, 1]], 7, random_state=0).tolist()
    [4.0, 2.0, 1.0]
    """
    values = as_float_vector(expected, "expected")
    options = np.asarray(candidates, dtype=np.float64)
    if options.ndim != 2 or len(options) != len(values):
        raise ParameterError(f"candidates must have one row per parent ({len(values)}), got shape {options.shape}")
    held = None if held is None else as_float_vector(held, "held")[:, None]
    return draw_towards_totals(values[:, None], options[:, :, None], [total], held=held, random_state=random_state,
                               passes=passes)[:, 0]


def draw_towards_totals(expected, candidates, totals, *, held=None, random_state=None, passes: int = 3) -> np.ndarray:
    """Replace some parents' numbers of children, on all their links at once, by those of another
    plausible parent, until each link's numbers sum to its total.

    The numbers of children of one parent on its several links go together (an airport with many
    flights has many weather records): a parent's row of counts is replaced by one of its candidate
    rows (those of its nearest original parents) as a whole, never one link at a time. Parents are
    visited in a random order (``passes`` times at most); a candidate row is usable when it goes past
    no link's total and changes some count, and the one bringing the sums closest to the totals
    (relative to each total) is taken. What the candidates cannot close is left to each link's
    :func:`allocate_counts`.

    With ``held`` (the original parents' rows of counts, for parents whose counts are released as they
    are: reference lists), a row is taken only while the release holds it fewer times than the original:
    two airports near the same hub do not both take its flights, which would leave the other hub's flights
    to be spread by scaling.

    Parameters
    ----------
    expected : array-like of float, shape (n_parents, n_links)
        The drawn numbers of children of each parent on each link.
    candidates : array-like of float, shape (n_parents, n_candidates, n_links)
        Other plausible rows of counts of each parent; missing or negative values are never taken.
    totals : array-like of int, shape (n_links,)
        The number of children of each link.
    held : array-like of float, shape (n_original_parents, n_links), optional
        The original's rows of counts: a candidate row is taken only while fewer released parents
        hold it than original ones.
    random_state : int, numpy.random.Generator or None
        Orders the visits.
    passes : int
        Visits of every parent, at most.

    Returns
    -------
    numpy.ndarray of float, shape (n_parents, n_links)

    Examples
    --------
    >>> draw_towards_totals([[1, 1], [1, 1], [9, 5]], [[[1, 1], [9, 5]], [[1, 1], [9, 5]], [[9, 5], [1, 1]]],
    ...                     [19, 11], random_state=0).tolist()
    [[9.0, 5.0], [1.0, 1.0], [9.0, 5.0]]
    """
    rng = generator(random_state)
    values = np.array(expected, dtype=np.float64)
    options = np.asarray(candidates, dtype=np.float64)
    if values.ndim != 2 or options.ndim != 3 or options.shape[0] != len(values) or options.shape[2] != values.shape[1]:
        raise ParameterError(f"expected must be (parents, links) and candidates (parents, candidates, links): got "
                             f"shapes {values.shape} and {options.shape}")
    options = np.where(np.isfinite(options) & (options >= 0), options, np.nan)
    totals = np.asarray(totals, dtype=np.float64).reshape(-1)
    gap = totals - values.sum(axis=0)
    scale = np.maximum(totals, 1.0)
    room = None
    if held is not None:  # how many more parents may hold each row of counts
        room = Counter(map(tuple, np.asarray(held, dtype=np.float64).reshape(-1, values.shape[1]).tolist()))
        room.subtract(Counter(map(tuple, values.tolist())))
    for _ in range(passes):
        for parent in rng.permutation(len(values)):
            if np.all(np.abs(gap) < 0.5):
                return values
            change = options[parent] - values[parent]
            fits = (change == 0) | ((np.sign(change) == np.sign(gap)) & (np.abs(change) <= np.abs(gap) + 0.5))
            useful = fits.all(axis=1) & (change != 0).any(axis=1)
            if room is not None:
                useful &= np.array([room[row] > 0 for row in map(tuple, options[parent].tolist())])
            if not useful.any():
                continue
            gain = (np.abs(np.nan_to_num(change)) / scale).sum(axis=1)
            best = np.flatnonzero(useful)[np.argmax(gain[useful])]
            if room is not None:
                room[tuple(options[parent, best].tolist())] -= 1
                room[tuple(values[parent].tolist())] += 1
            values[parent] += change[best]
            gap -= change[best]
    return values


def settle_counts(schema: Schema, name: str, original: dict, release: TableRelease, rng) -> int:
    """Bring the drawn numbers of children of an avatar table's ``linear_sum`` child links to their
    totals together, when it has several such links; returns the number of rows whose counts changed.

    A parent's numbers of children on its links go together (an airport with many flights has many
    weather records; a person with many yearly records has many leaves): here a row of counts (every link
    at once) is replaced by the row of one of its nearest original parents (:func:`draw_towards_totals`),
    in the enriched avatars that :func:`relanon.multitable.linking.foreign_keys.relink` reads. Corrected one link
    at a time, in a random order per link, a parent's counts would not go together.
    """
    table = schema[name]
    links = [link for link in child_links(schema, name) if link.method == "linear_sum"]
    names = [release.internal_names.get(("count", link.child, link.column)) for link in links]
    avatars = release.enriched_avatars
    columns = {c.name: c.type for c in table.released_columns if c.name in release.frame.columns}
    if len(links) < 2 or avatars is None or not all(n in avatars for n in names) or not columns or not release.k:
        return 0
    parents = original[name]
    owned = np.column_stack([original_counts(link, original, table) for link in links])
    low, high = np.array([count_bounds(owned[:, i], count_holders(schema, link, release))
                          for i, link in enumerate(links)]).T
    expected = np.clip(np.column_stack([avatars[n].to_numpy(dtype=float) for n in names]), low, high)
    space = parent_space(table, parents, columns, rng)
    near = cross_neighbours(project(space, parents, columns), project(space, release.frame, columns),
                            k=min(release.k, len(parents)))
    held = None if about_people(schema, name) else np.clip(owned, low, high)  # reference lists: as they are
    settled = draw_towards_totals(expected, np.clip(owned[near.indices], low, high), owned.sum(axis=0),
                                          held=held, random_state=rng)
    for i, column in enumerate(names):
        avatars[column] = settled[:, i]
    return int((settled != expected).any(axis=1).sum())


def count_holders(schema: Schema, link: Link, parent: TableRelease) -> int:
    """The rank of the order statistics a released number of children per parent is kept between
    (:func:`count_bounds`): the parent's ``k`` when its rows are about people
    (a patient with far more visits than anyone is not released with her count), 1 for reference data
    (three airports holding every flight keep their flights: bounded by the tenth largest count, 0,
    the flights would be spread evenly over all 1,458 airports)."""
    return (parent.k or 1) if about_people(schema, link.parent) else 1


def in_order_of(values, keys, rng) -> np.ndarray:
    """``values`` handed out in the order of ``keys``: the smallest value where the key is smallest
    (ties at random).

    Examples
    --------
    >>> in_order_of([5, 1, 3], [0.2, 9.0, 4.0], np.random.default_rng(0)).tolist()
    [1, 5, 3]
    """
    keys = np.asarray(keys, dtype=float)
    out = np.empty(len(keys), dtype=np.asarray(values).dtype)
    out[np.lexsort((rng.random(len(keys)), keys))] = np.sort(values)
    return out


def plausible_counts(own_counts: np.ndarray, parents, space, parent_coords, columns, k) -> np.ndarray | None:
    """For each released parent, the numbers of children of its ``k`` nearest original parents.

    They let :func:`allocate_counts` correct a total that sampling noise
    moved (a few tens of parents) with counts a parent like this one has, rather than stretching.
    """
    if space is None or k is None or len(parents) < 2:
        return None
    near = cross_neighbours(project(space, parents, columns), parent_coords, k=min(k, len(parents)))
    return own_counts[near.indices]


def original_counts(link: Link, original, parent_table: Table) -> np.ndarray:
    """Number of children of each original parent (0 for none)."""
    counts = original[link.child][link.column].value_counts()
    keys = original[link.parent][parent_table.primary_key].to_numpy()
    return counts.reindex(keys, fill_value=0).to_numpy(dtype=float)


def expected_counts(link: Link, original, parent: TableRelease, parent_table: Table) -> np.ndarray:
    """Children expected per released parent row: avatarized for avatar parents, true otherwise."""
    name = parent.internal_names.get(("count", link.child, link.column))
    if parent.enriched_avatars is not None and name in parent.enriched_avatars:
        return parent.enriched_avatars[name].to_numpy(dtype=float)
    counts = original[link.child][link.column].value_counts()
    keys = parent.frame[parent_table.primary_key].to_numpy()
    return counts.reindex(keys, fill_value=0).to_numpy(dtype=float)
