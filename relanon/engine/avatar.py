"""Avatarization of one table (DESIGN section 2).

Each record is replaced by an *avatar*: a random, local mix of its ``k`` nearest other records in
the factor space of the table. Its numbers are weighted means of the neighbours' numbers; its
categorical part (categoricals, booleans, numbers from a few values, which values are missing) is
that of *one* neighbour drawn with the same weights, so every combination it carries is one an
original record carries, and missing values that go together stay together.
"""

from __future__ import annotations

import logging
import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.engine.columns import NUMERIC_KINDS, check_columns_present, column_types, numeric_values, restore_numeric
from relanon.engine.factor_space import FactorSpace
from relanon.engine.mixing import mixed_numbers, restored_spread
from relanon.engine.neighbours import Neighbours, cross_neighbours, self_neighbours
from relanon.engine.private_values import (
    among_eligible,
    bound_extremes,
    frequent_records,
    holder_counts,
    min_count_thresholds,
    rare_values,
    sensitive_donors,
)
from relanon.engine.small_groups import (
    COMBINATION_HOLDERS,
    TUPLE_RULE_BIAS,
    Shifts,
    column_families,
    counted_columns,
    family_donors,
    ordered_columns,
    rare_combination_records,
    shifted,
    small_group_shifts,
)
from relanon.schema import vocabulary

logger = logging.getLogger(__name__)

DEFAULT_K = vocabulary.DEFAULT_K["avatar"]
# Added to neighbour distances so that exact duplicates (distance 0) get a large, finite weight.
DISTANCE_EPSILON = 1e-9
MIN_ROWS = 3


class _Avatars(NamedTuple):
    avatars: pd.DataFrame
    pairing: np.ndarray


class AvatarResult(_Avatars):
    """The avatars of a table and the private link to the records they come from: ``(avatars, pairing)``.

    Attributes
    ----------
    avatars : pandas.DataFrame
        One avatar per original row: the avatarized columns in the table's column order and
        dtypes, rows shuffled, a fresh RangeIndex.
    pairing : numpy.ndarray of int64
        ``avatars.iloc[a]`` is the avatar of ``table.iloc[pairing[a]]``. Sensitive: it undoes the
        shuffle. Keep it in memory for the privacy metrics; never release it.
    ncp : int or None
        Number of factor-space axes the neighbours were searched in (not a tuple field).
    """

    def __new__(cls, avatars, pairing, ncp=None):
        result = super().__new__(cls, avatars, pairing)
        result.ncp = ncp
        return result


def avatarize(table: pd.DataFrame, columns, *, k: int = DEFAULT_K, ncp: int | str | None = None, weights=None,
              random_state=None, name: str = "table", drawn=(), space: FactorSpace | None = None, min_counts=None,
              sensitive=(), groups=None, value_counts=None, extremes=None, small_groups: bool = True,
              shift_numbers: bool = True, combination_holders: int = COMBINATION_HOLDERS,
              restore_spread: bool = True) -> AvatarResult:
    """Replace every record of ``table`` by an avatar (Guillaudeux et al., 2023).

    1. The columns are projected in a :class:`~relanon.engine.factor_space.FactorSpace` fitted on the table
       (FAMD; missing values imputed, with temporary missing-value indicators).
    2. For each record ``i``, its ``k`` nearest other records ``j`` in the first ``ncp`` axes get the
       weights ``P_ij = 1 / (d_ij + 1e-9) * E_ij * 2 ** -r_ij`` with ``E_ij ~ Exp(1)`` and ``r_i`` a
       random permutation of 1..k, normalized to ``w_ij``.
    3. One neighbour ``J_i`` is drawn with probabilities ``w_ij``. The avatar of ``i`` takes, for a
       continuous, integer or datetime column, the weighted mean ``sum_j w_ij x_j`` over the
       neighbours whose value is present (integers rounded, datetimes rounded to the column's time
       step: dates stay dates; a column whose values come from a small set is put on the nearest
       value of that set), missing where ``J_i``'s value is missing. Its categorical and boolean
       values, and the numbers of columns with few distinct values, are those of ``J_i``: each
       column's modality mass ``sum_j w_ij 1[x_jc = m]`` holds in expectation and every
       combination is one ``J_i`` carries. With the tuple rule (``small_groups``), the columns it
       leaves out are taken a family at a time (a city with its state) from other neighbours, drawn
       with the same weights among those whose values form with the avatar's pairs that
       ``combination_holders`` records hold, and a tuple no record or at least that many hold
       (:func:`relanon.engine.small_groups.family_donors`; ``J_i`` when none does).

    Parameters
    ----------
    table : pandas.DataFrame
        The original records. Never modified.
    columns : Mapping[str, str] or sequence of relanon.schema.Column
        The columns to avatarize and their schema types. ``drop`` columns, and columns of ``table``
        not declared here (keys, for example), are neither avatarized nor returned.
    k : int, default 10
        Number of neighbours mixed into each avatar; ``2 <= k < len(table)``.
    ncp : int or "auto", default "auto"
        Number of axes of the neighbour search (see :class:`~relanon.engine.factor_space.FactorSpace`).
    weights : Mapping[str, float], optional
        Column weights in the factor space (default 1.0, or ``Column.weight``).
    random_state : int, numpy.random.Generator or None
        The seed; the same seed gives byte-identical avatars and pairing.
    name : str
        The table's name, used in error messages.
    drawn : collection of str, optional
        Numeric columns whose avatar value is that of the drawn neighbour ``J_i``, as for
        categoricals, instead of the weighted mean: the column keeps its distribution (its tails
        included). The multi-table run uses it for the number of children of each row, whose
        distribution the ``linear_sum`` link is meant to keep.
    space : FactorSpace, optional
        A space already fitted on the whole table, of which ``table`` is a batch of rows (the batch
        engine, :mod:`relanon.engine.batches`, fits it once from all the partitions): the rows are
        projected in it, and neighbours searched among them, instead of fitting a space on ``table``.
        Its column statistics (ranges, small sets of values) then hold for the avatars too.
    min_counts : int or Mapping[str, int], optional
        The rare-value rule (:mod:`relanon.engine.private_values`): a value held by fewer records
        than its column's count never reaches an avatar verbatim. One number for every column, or
        some columns mapped to theirs (the others take ``k``). Default None: every value may be
        released (the published method).
    sensitive : collection of str, optional
        Columns decoded *leaving the column out*: their values come from a donor, a look-alike of
        the drawn neighbour ``J_i`` found without them, never from a record this avatar is one of
        the closest released rows to (:func:`relanon.engine.private_values.sensitive_donors`).
    groups : array of int, shape (n_rows, n_parents), optional
        Each row's parents (codes, -1 for none): a sensitive value never comes from a row of the
        same parent.
    value_counts : Mapping[str, pandas.Series], optional
        For the rare-value rule when ``table`` is a batch of a larger table: per categorical-like
        column, the number of records of the *whole* table holding each value (missing counted as a
        value, under a missing key; a value absent counts 0). A value is then frequent when the table
        holds it ``min_count`` times, whatever the batch holds. Other columns are counted in ``table``.
    extremes : Mapping[str, tuple], optional
        Likewise, per numeric column, the ``min_count``-th smallest and largest present values of the
        whole table (:func:`relanon.engine.private_values.extreme_bounds`): the column's avatars are
        kept between them. Other columns are bounded by ``table``'s own values.
    small_groups : bool, default True
        With the rare-value rule: each avatar's numbers get a random shift of its group's spread (except
        numbers bound by an order to another column, such as a span's first and last years), and a tuple
        of categorical values (or a pair of them) held by fewer than ``combination_holders`` records is
        never drawn, counting the columns :func:`~relanon.engine.small_groups.counted_columns` chooses (those
        left out come from other neighbours, see 3.; :mod:`relanon.engine.small_groups`). The multi-table run
        turns it on for the individual tables (people), whose records the attacks single out, and off below
        them (a visit's cost keeps its relation with the doctor's specialty). A batch of a larger table
        (``value_counts`` given) is shifted within the batch and skips the tuple rule (its combinations would be
        counted in the batch).
    shift_numbers : bool, default True
        With ``small_groups``: whether the numbers are shifted (the tuple rule applies either way). The
        multi-table run turns it off for a table whose children are anchored to it (``anchor: true``):
        a shifted person is a point no record is near, and her children, re-drawn from the children of
        the persons nearest to her, no longer fit her span.
    combination_holders : int, default 2
        With ``small_groups``: the fewest records that must hold an avatar's tuple of categorical values
        (those whose ``min_count`` is above 1), and each pair of them, for the tuple to be drawn (the
        schema's ``anonymize.combination_min_count``). More lowers singling out by rare combinations and
        turns more of them down.

    restore_spread : bool, default True
        Give the mixed numbers back the spread the convex mix takes from them
        (:func:`relanon.engine.mixing.restored_spread`): each avatar's numbers are moved away from its
        neighbourhood's mean by one factor for the whole row, except in the columns shifted like their small
        group and in a row where that would reverse an order between two columns. False keeps the plain mix.

    Returns
    -------
    AvatarResult
        ``(avatars, pairing)``.

    Raises
    ------
    ParameterError
        If ``k`` is out of range, or the table has fewer than 3 rows: a table of one or two rows
        cannot be avatarized (each avatar mixes at least two *other* records); release it with
        ``anonymize: {method: keep}`` if it holds no personal data, or merge it with other data.
    DataError
        If a declared column is absent, holds infinite values or values that do not fit its type.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"age": rng.integers(20, 80, 50), "sex": rng.choice(["F", "M"], 50)})
    >>> avatars, pairing = avatarize(people, {"age": "integer", "sex": "categorical"}, k=5, random_state=1)
    >>> avatars.shape, avatars.dtypes.tolist() == people.dtypes.tolist(), sorted(pairing.tolist())[:3]
    ((50, 2), True, [0, 1, 2])
    """
    types, column_weights = column_types(columns, weights)
    if not types:
        raise ParameterError(f"table {name!r}: no column to avatarize (all are dropped or none declared)")
    check_columns_present(table, types, name)
    n = len(table)
    _check_k(k, n, name)
    # a fifth stream for the sensitive donors, a sixth for the shifts, a seventh for the columns left out of the
    # tuple rule: spawn(7) gives the same first streams as spawn(4), spawn(5) and spawn(6)
    space_rng, weight_rng, draw_rng, shuffle_rng, donor_rng, shift_rng, family_rng = (
        np.random.default_rng(random_state).spawn(7))

    logger.info("avatarizing table %r: %d rows, %d columns, k=%d", name, n, len(types), k)
    if space is None:
        space = FactorSpace(types, n_components=ncp, weights=column_weights, random_state=space_rng, name=name)
        coords = space.fit_transform(table)
    else:
        coords = space.transform(table)
    logger.info("table %r: searching %d neighbours in %d axes", name, k, space.n_components_)
    neighbours = pattern_neighbours(coords, missing_pattern(table, types), k)
    weights_ = neighbour_weights(neighbours.distances, weight_rng)
    cumulative = np.cumsum(weights_, axis=1)
    cumulative[:, -1] = 1.0  # a draw of u < 1 always falls on a neighbour despite rounding

    logger.info("table %r: combining neighbours", name)
    thresholds = min_count_thresholds(min_counts, types, k, name)
    value_counts, extremes = _table_facts(value_counts, extremes, types, name)
    sensitive = [c for c in types if c in set(sensitive)]
    categorical = [c for c in types if types[c] not in NUMERIC_KINDS or space.statistics_[c].categorical_like]
    draw_indices, draw_cumulative = neighbours.indices, cumulative
    left: list = []
    # columns no value of which enough records hold: released as missing (below), left out of the draw's rule
    unreleasable = _unreleasable(table, categorical, thresholds, value_counts)
    if thresholds:
        others = [c for c in categorical if c not in sensitive and c not in unreleasable]
        frequent, relaxed = frequent_records(table, others, thresholds, value_counts), dict(thresholds)
        if small_groups and not value_counts:
            # a batch of a larger table (value counts given) would count its combinations in the batch alone:
            # the rule is left to one-machine runs
            frequent, left = _tuple_rule(table, [c for c in others if thresholds[c] > 1], frequent,
                                         combination_holders, name)
        while not frequent.any() and max(relaxed.values(), default=1) > 1:
            # a small table where every record holds a rare value (20 doctors of 10 specialties): the
            # counts are halved until some records qualify, rather than giving up the rule
            relaxed = {c: max(1, v // 2) for c, v in relaxed.items()}
            frequent = frequent_records(table, others, relaxed, value_counts)
        if relaxed != thresholds:
            logger.info("table %r: every record holds a value that fewer than min_count records hold; min_count "
                        "lowered to %d for the draw (the values fewer hold are released as missing)", name,
                        max(relaxed.values(), default=1))
        draw_indices, draw_weights = among_eligible(frequent, neighbours.indices, weights_, coords, weight_rng,
                                                    neighbour_weights)
        draw_cumulative = np.cumsum(draw_weights, axis=1)
        draw_cumulative[:, -1] = 1.0
    chosen = _draw(draw_indices, draw_cumulative, draw_rng)
    # the columns left out of the tuple rule come from other neighbours, a family at a time, forming pairs that
    # several records hold: the drawn neighbour's own rare pairs of them do not reach the release together
    kept = [c for c in categorical if c not in unreleasable]
    taken = (family_donors(table, column_families(table, left), _carried(table, types, kept, left, sensitive),
                           chosen, draw_indices, draw_weights, family_rng, combination_holders) if left else {})
    # the released numbers about people (the rule's counts above 1) spread like their group's, except those
    # bound by an order to another column (a span: its shift could reverse it or leave its children outside)
    released = [c for c in types if thresholds.get(c, 1) > 1] if small_groups else []
    spread = _spread_columns(table, types, space, released, drawn, name) if shift_numbers else []
    shifts = (small_group_shifts(table, [c for c in kept if c in released and c not in sensitive], chosen,
                                 shift_rng, taken=taken) if spread else None)
    # the other mixed numbers get back the spread the convex mix takes from them (mixing.restored_spread)
    stretched = (_stretched_numbers(table, types, space, drawn, spread, neighbours.indices, weights_, chosen, name)
                 if restore_spread else {})
    out = {}
    for column in (c for c in table.columns if c in types):
        stats = space.statistics_[column]
        if types[column] in NUMERIC_KINDS and column not in drawn and not stats.categorical_like:
            out[column] = _numeric_avatar(table[column], neighbours.indices, weights_, chosen, stats, name,
                                          shifts if column in spread else None, stretched.get(column))
            if thresholds:
                out[column] = bound_extremes(out[column], table[column], thresholds[column], extremes.get(column))
        else:
            out[column] = table[column].take(taken.get(column, chosen)).reset_index(drop=True)
    if sensitive:
        out.update(_sensitive_part(table, pd.DataFrame(out), space, chosen, sensitive, categorical, thresholds,
                                   k, donor_rng, name, groups, value_counts, extremes,
                                   shifts, spread, taken))
    if thresholds:
        out.update(_rare_values_missing(table, out, categorical, thresholds, value_counts, unreleasable, name))
    pairing = shuffle_rng.permutation(n)
    avatars = pd.DataFrame(out).take(pairing).reset_index(drop=True)
    return AvatarResult(avatars, pairing.astype(np.int64), ncp=space.n_components_)


def _unreleasable(table, categorical, thresholds, value_counts) -> dict:
    """The categorical columns of which no value is held by the column's ``min_count`` records (a free text, a
    town that no more than three people share where ``min_count`` is 10), with the most records any value has:
    none of their values may be released."""
    found = {}
    for c in categorical:
        present = table[c].notna().to_numpy()
        if thresholds.get(c, 1) > 1 and holds_missing(table[c]) and present.any():
            most = int(holder_counts(table[c], (value_counts or {}).get(c))[present].max())
            if most < thresholds[c]:
                found[c] = most
    return found


def holds_missing(series: pd.Series) -> bool:
    """Whether a value of ``series`` can be made missing without changing its dtype (text, categories, decimal
    numbers): whole-number and boolean columns without missing values keep the rule's lowered counts instead."""
    dtype = series.dtype
    return not ((pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype))
                and not pd.api.types.is_extension_array_dtype(dtype))


def _rare_values_missing(table, out, categorical, thresholds, value_counts, unreleasable, name) -> dict:
    """The released categorical columns with every value that fewer than ``min_count`` records hold made
    missing, with a warning naming them. None is, unless no value of a column reaches ``min_count``
    (``unreleasable``) or every record held a rare value (the draw's counts were lowered)."""
    cleaned, notes, kept = {}, [], []
    for column in categorical:
        if thresholds.get(column, 1) <= 1 or column not in out:
            continue
        rare = rare_values(out[column], table[column], thresholds[column], (value_counts or {}).get(column))
        if not rare.any():
            continue
        counted = f"{int(rare.sum())} of {len(rare)} released values"
        if not holds_missing(table[column]):
            kept.append(f"{column} ({counted})")
            continue
        cleaned[column] = out[column].mask(rare)
        notes.append(f"{column} (min_count {thresholds[column]}; {counted} missing"
                     + (f": no value is held by that many records, the most held by {unreleasable[column]}"
                        if column in unreleasable else "") + ")")
    if notes:
        warnings.warn(f"table {name!r}: values that fewer than min_count records hold are released as missing in "
                      f"{'; '.join(notes)}. Coarsen such a column (a region instead of a town, a year instead of a "
                      "date), drop it (a free text, an identifier), or, if values that few people share may be "
                      "published, set its min_count lower in the schema",
                      UserWarning, stacklevel=3)
    if kept:
        warnings.warn(f"table {name!r}: every record held a value that fewer than min_count records hold, and the "
                      f"counts were lowered: values that fewer hold are released in {'; '.join(kept)}, whole-number or "
                      "yes/no columns without missing values. Coarsen or drop such a column, or lower its min_count "
                      "in the schema knowingly", UserWarning, stacklevel=3)
    return cleaned


def _tuple_rule(table, columns, frequent: np.ndarray, holders: int, name: str) -> tuple[np.ndarray, list]:
    """``frequent`` without the records whose tuple of the counted ``columns``, or a pair of it, fewer than
    ``holders`` records hold. The columns counted leave at least a tenth of ``frequent`` to give their categories
    and, at the default ``holders``, records that hold the other columns' values in its shares
    (:func:`relanon.engine.small_groups.counted_columns`); more holders, asked by the schema, may bend the shares
    (the signal shows by how much). A warning names the columns left out, which are taken from other neighbours
    (:func:`relanon.engine.small_groups.family_donors`). Returns the records that may give their categories and
    the columns left out."""
    bias = TUPLE_RULE_BIAS if holders <= COMBINATION_HOLDERS else 1.0
    counted = counted_columns(table, columns, frequent, holders, bias) if frequent.any() else list(columns)
    left = [c for c in columns if c not in counted]
    if left:
        warnings.warn(f"table {name!r}: the rule of combinations (combination_min_count {holders}) leaves out "
                      f"{', '.join(map(str, left))}: counted with the others, they would keep most records, or "
                      "records of one kind, from giving their categories, and bend the release's shares. They are "
                      "taken from other neighbours than the rest, where some neighbour's values form pairs that "
                      "several records hold, and otherwise from the drawn one: fewer or coarser categories (a "
                      "region, a year) keep them in the rule; relanon assess measures what is left",
                      UserWarning, stacklevel=3)
    return frequent & ~rare_combination_records(table, counted, holders), left


def _carried(table, types, categorical, left, sensitive) -> dict:
    """What an avatar carries from its drawn neighbour that the columns left out of the tuple rule must go with:
    the other categorical values and whether each number is missing."""
    carried = {c: table[c] for c in categorical if c not in left and c not in sensitive}
    carried.update({("missing", c): table[c].isna() for c in types if c not in categorical and c not in sensitive
                    and table[c].isna().any()})
    return carried


def _sensitive_part(table, avatars, space, chosen, sensitive, categorical, thresholds, k, rng, name, groups,
                    value_counts, extremes, shifts, spread, taken) -> dict:
    """The sensitive columns of the avatars, from their donors, numbers kept within their bounds (the whole
    table's counts and bounds when given: a batch of the Dask engine); the numbers of ``spread`` shifted like
    their small group's (:mod:`relanon.engine.small_groups`)."""
    eligible = (frequent_records(table, [c for c in categorical if c in sensitive], thresholds, value_counts)
                if thresholds else None)
    holders = max((thresholds.get(c, 1) for c in sensitive), default=1)
    numbers = {c: numeric_values(table[c], space.statistics_[c].kind, table=name) for c in sensitive
               if c not in categorical}
    found = sensitive_donors(table, avatars, space, chosen, sensitive, categorical, k, rng,
                             eligible=eligible, combination_holders=holders, numbers=numbers,
                             groups=None if groups is None else np.asarray(groups, dtype=np.int64).reshape(len(table), -1),
                             taken=taken)
    if found.counts["neither"]:
        logger.info("table %r: %d avatars take sensitive values forming a combination no original holds (no "
                    "look-alike shared their other values)", name, found.counts["neither"])
    out = {}
    for column in sensitive:
        if column in categorical:
            out[column] = table[column].take(found.donors).reset_index(drop=True)
        else:
            mean = found.numbers[column]
            if column in spread:
                mean = _spread_like_group(numbers[column], mean, shifts)
            out[column] = _finished(mean, np.isnan(numbers[column][found.pulled]), space.statistics_[column])
            if thresholds:
                out[column] = bound_extremes(out[column], table[column], thresholds[column], extremes.get(column))
    return out


def _table_facts(value_counts, extremes, types, name: str) -> tuple[dict, dict]:
    """The whole table's value counts and extremes as dicts, or a ParameterError naming unknown columns."""
    value_counts, extremes = dict(value_counts or {}), dict(extremes or {})
    for label, given in (("value_counts", value_counts), ("extremes", extremes)):
        unknown = sorted(set(given) - set(types))
        if unknown:
            raise ParameterError(f"table {name!r}: {label} names columns that are not avatarized: {unknown}")
    return value_counts, extremes


def neighbour_weights(distances: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The avatar weights ``w_ij`` of DESIGN 2.4, rows summing to 1.

    ``P_ij = 1 / (d_ij + eps) * E_ij * 2 ** -r_ij`` with ``E_ij ~ Exp(1)`` and ``r_i`` a random
    permutation of ``1..k``; ``w_ij = P_ij / sum_j P_ij``.

    Examples
    --------
    >>> w = neighbour_weights(np.array([[0.5, 1.0, 2.0]]), np.random.default_rng(0))
    >>> w.shape, bool(np.isclose(w.sum(), 1.0))
    ((1, 3), True)
    """
    n, k = distances.shape
    contributions = rng.exponential(1.0, size=(n, k))
    ranks = rng.permuted(np.tile(np.arange(1, k + 1, dtype=np.float64), (n, 1)), axis=1)
    raw = contributions * np.exp2(-ranks) / (distances + DISTANCE_EPSILON)
    return raw / raw.sum(axis=1, keepdims=True)


def missing_pattern(table: pd.DataFrame, types) -> np.ndarray:
    """Which of the columns holding missing values are missing, per row: shape (n, such columns)."""
    patterns = [table[c].isna().to_numpy() for c in types if table[c].isna().any()]
    return np.column_stack(patterns) if patterns else np.zeros((len(table), 0), dtype=bool)


def pattern_neighbours(coords: np.ndarray, pattern: np.ndarray, k: int) -> Neighbours:
    """The ``k`` nearest other records, those with the record's pattern of missing values first.

    Why: a record with a missing value sits apart in the factor space (its missing-value indicator
    is a rare modality, its value imputed), among fewer records than a complete one. Searched
    among all records, the k nearest of an incomplete record include complete ones while complete
    records almost never pick incomplete ones: incomplete records are chosen less often as
    neighbours (in-weight 0.66 against 1.04 for the demo's patients) and the avatars lose missing
    values (10 % of BMI missing became 7.7 %). Searched first among the records sharing its
    pattern, every record draws its neighbours from its own group, whose members are then chosen
    k times each on average: each column's missing share, and which columns are missing together,
    are kept in expectation. A pattern held by k records or fewer takes the rest of its neighbours
    from the patterns that differ in the fewest columns.

    Each pattern held by more than k records is searched on its own, in the factor space; the
    records of rarer patterns are searched among all records with the pattern appended to the
    coordinates, scaled beyond the diameter of the point cloud so that one pattern difference
    outweighs any distance in the factor space. The distances returned, which set the avatar
    weights, are those in the factor space alone.

    Examples
    --------
    >>> coords = np.array([[0.0], [0.1], [5.0], [5.1], [0.2]])
    >>> pattern = np.array([[False], [True], [False], [True], [True]])
    >>> pattern_neighbours(coords, pattern, 1).indices[:, 0].tolist()
    [2, 4, 0, 4, 1]
    """
    coords = np.asarray(coords, dtype=np.float64)
    if pattern.shape[1] == 0:
        return self_neighbours(coords, k)
    n = len(coords)
    group = _pattern_codes(pattern)
    order = np.argsort(group, kind="stable")
    starts = np.flatnonzero(np.diff(group[order], prepend=-1))
    sizes_sorted = np.diff(np.append(starts, n))
    sizes = np.empty(n, dtype=np.int64)
    distances, indices = np.empty((n, k)), np.empty((n, k), dtype=np.int64)
    for start, size in zip(starts, sizes_sorted, strict=True):
        rows = order[start:start + size]  # increasing positions: the stable sort keeps the table's order
        sizes[rows] = size
        if size > k:
            found = self_neighbours(coords[rows], k)
            distances[rows], indices[rows] = found.distances, rows[found.indices]
    rare = np.flatnonzero(sizes <= k)
    if rare.size:
        scale = 2.0 * float(np.sqrt(np.einsum("ij,ij->i", coords, coords).max(initial=0.0))) + 1.0
        search = np.hstack([coords, scale * pattern])
        found = cross_neighbours(search, search[rare], k + 1)
        is_self = found.indices == rare[:, None]
        is_self[~is_self.any(axis=1), k] = True  # the record itself beyond k + 1 duplicates: drop the farthest
        chosen = found.indices[~is_self].reshape(len(rare), k)
        differences = coords[rare][:, None, :] - coords[chosen]
        distances[rare], indices[rare] = np.sqrt(np.einsum("ijk,ijk->ij", differences, differences)), chosen
    return Neighbours(distances, indices)


def _pattern_codes(pattern: np.ndarray) -> np.ndarray:
    """One integer per distinct row of a boolean matrix (its bits, or a rank beyond 62 columns)."""
    if pattern.shape[1] <= 62:
        return pattern.astype(np.int64) @ (np.int64(1) << np.arange(pattern.shape[1], dtype=np.int64))
    return np.unique(pattern, axis=0, return_inverse=True)[1].reshape(-1)


def _check_k(k, n: int, name: str) -> None:
    if n < MIN_ROWS:
        raise ParameterError(
            f"table {name!r} has {n} row{'s' if n != 1 else ''}, too few for the avatar method (it needs at "
            f"least {MIN_ROWS}: each avatar mixes k >= 2 other records). If the table holds no personal data, "
            "release it as is with `anonymize: {method: keep}`"
        )
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 2 <= k < n:
        raise ParameterError(
            f"table {name!r} has {n} rows: k must be an integer from 2 to {n - 1} (the number of rows minus "
            f"one), got k={k!r}; the largest k allowed is {n - 1}"
        )


def _draw(indices: np.ndarray, cumulative: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One neighbour per row, drawn with the rows' weights (``cumulative`` holds their running sums)."""
    u = rng.random(len(indices))
    picked = np.minimum((cumulative < u[:, None]).sum(axis=1), indices.shape[1] - 1)
    return indices[np.arange(len(indices)), picked]


def _stretched_numbers(table, types, space, drawn, spread, indices, weights, chosen, name: str) -> dict:
    """Column -> mixed numbers given back their spread (:func:`relanon.engine.mixing.restored_spread`), for the
    mixed numeric columns that are not shifted like their small group (``spread``, already as wide as it). A row
    where the stretch would reverse an order that every original record obeys between two of them (a birth date
    before a visit date, broadcast from the parent) keeps its plain mix in those columns, which keeps the order."""
    columns = [c for c in types if types[c] in NUMERIC_KINDS and c not in drawn and c not in spread
               and not space.statistics_[c].categorical_like]
    values = {c: numeric_values(table[c], space.statistics_[c].kind, table=name) for c in columns}
    plain = {c: mixed_numbers(values[c], indices, weights, values[c][chosen]) for c in columns}
    out = {c: restored_spread(plain[c], values[c], indices, weights, space.statistics_[c].low,
                              space.statistics_[c].high) for c in columns}
    ordered = sorted(ordered_columns(values)) if len(columns) > 1 else []
    for a in ordered:
        for b in ordered:
            with np.errstate(invalid="ignore"):
                if a == b or (values[a] > values[b]).any():
                    continue
                reversed_ = out[a] > out[b]
            if reversed_.any():
                for column in (a, b):
                    out[column] = np.where(reversed_, plain[column], out[column])
    return out


def _numeric_avatar(series, indices, weights, chosen, stats, table, shifts: Shifts | None = None,
                    stretched: np.ndarray | None = None) -> pd.Series:
    """Weighted mean of the neighbours' present values moved half-way to the drawn neighbour's value,
    on the column's support; missing where the drawn neighbour's value is; with ``shifts``, shifted like
    the avatar's small group (:mod:`relanon.engine.small_groups`).

    The weighted mean alone shrinks the column's spread (standard deviations 0.56 to 0.70 of the
    original's on the demo's hospital beds, doctors' ages and visit dates): a mean of ``k`` values
    lies towards their middle. ``(1 - SPREAD) * mean + SPREAD * x_J``, with ``J`` the neighbour whose
    categories the avatar carries, is still a mix of the neighbours with weights summing to 1 (so the
    value stays within theirs), the same mix for every column of the row (so a linear rule that every
    original row obeys, ``start <= end``, still holds), and on average over the draw of ``J`` the same
    as the weighted mean; but it keeps more of the spread (0.78 for the demo's doctors' ages and visit
    dates at ``SPREAD = 0.5``) and ties the numbers to the categories they come with. ``stretched``, when
    given, replaces that mix: the same given back its spread (:func:`_stretched_numbers`).
    """
    values = numeric_values(series, stats.kind, table=table)
    mean = mixed_numbers(values, indices, weights, values[chosen]) if stretched is None else stretched
    if shifts is not None:
        mean = _spread_like_group(values, mean, shifts)
    return _finished(mean, np.isnan(values[chosen]), stats)


def _spread_columns(table: pd.DataFrame, types: dict, space: FactorSpace, released, drawn, name: str) -> list:
    """The numeric columns of ``released`` whose avatars get their small group's shift: not drawn (numbers
    of children), not decoded as categories, not bound by an order to another such column
    (:func:`relanon.engine.small_groups.ordered_columns`)."""
    numeric = {c: space.statistics_[c].kind for c in types if types[c] in NUMERIC_KINDS and c not in drawn
               and not space.statistics_[c].categorical_like}
    candidates = [c for c in released if c in numeric]
    if not candidates:
        return []
    ordered = ordered_columns({c: numeric_values(table[c], kind, table=name) for c, kind in numeric.items()})
    return [c for c in candidates if c not in ordered]


def _spread_like_group(values: np.ndarray, mean: np.ndarray, shifts: Shifts) -> np.ndarray:
    """Mixed numbers with their small group's shifts (:mod:`relanon.engine.small_groups`), the moved ones
    kept within the column's range (the others stay between their neighbours' values)."""
    mean, moved = shifted(values, mean, shifts)
    present = values[~np.isnan(values)]
    if len(present):
        with np.errstate(invalid="ignore"):
            mean = np.where(moved, np.clip(mean, present.min(), present.max()), mean)
    return mean


def _finished(mean: np.ndarray, missing: np.ndarray, stats) -> pd.Series:
    """Mixed numbers put on the column's support and back in its type, missing where ``missing``."""
    if stats.support is not None:
        mean = nearest_value(mean, stats.support)
    return restore_numeric(mean, missing, stats)


def nearest_value(values: np.ndarray, support: np.ndarray) -> np.ndarray:
    """Each value replaced by the nearest value of the sorted ``support`` (the lower one on a tie).

    Examples
    --------
    >>> nearest_value(np.array([12.0, 16.0, 34.0, np.nan]), np.array([10.0, 20.0, 50.0])).tolist()
    [10.0, 20.0, 20.0, nan]
    """
    out = np.full(values.shape, np.nan)
    present = ~np.isnan(values)
    x = values[present]
    upper = np.clip(np.searchsorted(support, x, side="left"), 0, len(support) - 1)
    lower = np.clip(upper - 1, 0, len(support) - 1)
    out[present] = np.where(np.abs(x - support[lower]) <= np.abs(support[upper] - x), support[lower], support[upper])
    return out
