"""Avatarization of one table (docs/method.md, "One table").

Each record is replaced by an *avatar*: a random, local mix of its ``k`` nearest other records in
the factor space of the table. Its numbers are weighted means of the neighbours' numbers; its
categorical part (categoricals, booleans, numbers from a few values, which values are missing) is
that of *one* neighbour drawn with the same weights, so every combination it carries is one an
original record carries, and missing values that go together stay together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.common.options import check_integer
from relanon.engine.avatar_neighbours import missing_pattern, neighbour_weights, pattern_neighbours
from relanon.engine.avatar_numbers import finished_numbers, numeric_avatar, spread_like_group, stretched_numbers
from relanon.engine.columns import NUMERIC_KINDS, check_columns_present, column_types, numeric_values
from relanon.engine.donors import sensitive_donors
from relanon.engine.factor_space import FactorSpace
from relanon.engine.generalize import Generalization, generalize
from relanon.engine.private_values import (
    among_eligible,
    bound_extremes,
    checked_facts,
    frequent_records,
    held_supports,
    min_count_thresholds,
    rare_values_missing,
    unreleasable_columns,
)
from relanon.engine.small_groups import (
    COMBINATION_HOLDERS,
    carried_columns,
    column_families,
    family_donors,
    ordered_columns,
    small_group_shifts,
    tuple_rule,
)
from relanon.schema.options import default, option

logger = logging.getLogger(__name__)

DEFAULT_K = default("anonymize", "k", "avatar")
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
    generalized : list of dict
        Per column whose rare values were generalized rather than erased, what was released instead
        (:meth:`relanon.engine.generalize.ColumnGeneralization.to_dict`; not a tuple field).
    """

    def __new__(cls, avatars, pairing, ncp=None, generalized=()):
        result = super().__new__(cls, avatars, pairing)
        result.ncp = ncp
        result.generalized = list(generalized)
        return result


@dataclass(frozen=True)
class RunHooks:
    """What a multi-table or batched run gives the avatar method besides the user's options
    (:func:`avatarize_in_run`); the defaults are those of a table avatarized on its own (:func:`avatarize`).

    Attributes
    ----------
    drawn : tuple of str
        Numeric columns whose avatar value is that of the drawn neighbour ``J_i``, as for
        categoricals, instead of the weighted mean: the column keeps its distribution (its tails
        included). The multi-table run uses it for the number of children of each row, whose
        distribution the ``linear_sum`` link is meant to keep.
    space : FactorSpace, optional
        A space already fitted on the whole table, of which the table given is a batch of rows (the batch
        engine, :mod:`relanon.engine.batches`, fits it once from all the partitions): the rows are
        projected in it, and neighbours searched among them, instead of fitting a space on the batch.
        Its column statistics (ranges, small sets of values) then hold for the avatars too.
    groups : array of int, shape (n_rows, n_parents), optional
        Each row's parents (codes, -1 for none): a sensitive value never comes from a row of the
        same parent.
    value_counts : Mapping[str, pandas.Series], optional
        For the rare-value rule when the table is a batch of a larger table: per categorical-like
        column, the number of records of the *whole* table holding each value (missing counted as a
        value, under a missing key; a value absent counts 0). A value is then frequent when the table
        holds it ``min_count`` times, whatever the batch holds. Other columns are counted in the batch.
    extremes : Mapping[str, tuple], optional
        Likewise, per numeric column, the ``min_count``-th smallest and largest present values of the
        whole table (:func:`relanon.engine.private_values.extreme_bounds`): the column's avatars are
        kept between them. Other columns are bounded by the batch's own values.
    small_groups : bool, default True
        With the rare-value rule: each avatar's numbers get a random shift of its group's spread (except
        numbers bound by an order to another column, such as a span's first and last years), and a tuple
        of categorical values (or a pair of them) held by fewer than ``combination_holders`` records is
        never drawn, counting the columns :func:`~relanon.engine.small_groups.counted_columns` chooses (those
        left out come from other neighbours; :mod:`relanon.engine.small_groups`). The multi-table run
        turns it on for the individual tables (people), whose records the attacks single out, and off below
        them (a visit's cost keeps its relation with the doctor's specialty). A batch of a larger table
        (``value_counts`` given) is shifted within the batch and skips the tuple rule (its combinations would be
        counted in the batch).
    shift_numbers : bool, default True
        With ``small_groups``: whether the numbers are shifted (the tuple rule applies either way). The
        multi-table run turns it off for a table whose children are anchored to it (``anchor: true``):
        a shifted person is a point no record is near, and her children, re-drawn from the children of
        the persons nearest to her, would not fit her span.
    restore_spread : bool, default True
        Give the mixed numbers back the spread the convex mix takes from them
        (:func:`relanon.engine.avatar_numbers.stretched_numbers`), except in the columns shifted like their
        small group; False keeps the plain mix (to measure what the stretch does).
    progress : callable, optional
        ``progress(done, total)``, called as the method's stages end (the factor space, the neighbours,
        the draw, the numbers, the sensitive values): the run's bar of the table's avatarization.
    """

    drawn: tuple[str, ...] = ()
    space: FactorSpace | None = None
    groups: np.ndarray | None = None
    value_counts: Mapping | None = None
    extremes: Mapping | None = None
    small_groups: bool = True
    shift_numbers: bool = True
    restore_spread: bool = True
    progress: Callable[[int, int], None] | None = None


def avatarize(table: pd.DataFrame, columns, *, k: int = DEFAULT_K, ncp: int | str | None = None, weights=None,
              random_state=None, name: str = "table", min_counts=None, sensitive=(),
              combination_holders: int = COMBINATION_HOLDERS) -> AvatarResult:
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
       combination is one ``J_i`` carries. With the tuple rule (:mod:`relanon.engine.small_groups`), the columns it
       leaves out are taken a family at a time (a city with its state) from other neighbours, drawn
       with the same weights among those whose values form with the avatar's pairs that
       ``combination_holders`` records hold, and a tuple no record or at least that many hold
       (:func:`relanon.engine.small_groups.family_donors`; ``J_i`` when none does).

    A table avatarized on its own takes the tuple rule and the shifts of small groups wherever
    ``min_counts`` sets counts above 1 (:class:`RunHooks`: the multi-table run chooses them per table).

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
    min_counts : int or Mapping[str, int], optional
        The rare-value rule (:mod:`relanon.engine.private_values`): a value held by fewer records
        than its column's count never reaches an avatar verbatim: it is first generalized to the most
        specific level that count of records holds (:mod:`relanon.engine.generalize`: a coarser column's
        value, a merged "other", the nearest value or a bucket's mean for numbers and dates), and is
        released missing only where no level holds it; a number is never put on a value of its support
        that fewer records hold. One number for every column, or some columns mapped to theirs (the
        others take ``k``). Default None: every value may be released (the published method).
    sensitive : collection of str, optional
        Columns decoded *leaving the column out*: their values come from a donor, a look-alike of
        the drawn neighbour ``J_i`` found without them, never from a record this avatar is one of
        the closest released rows to (:func:`relanon.engine.private_values.sensitive_donors`).
    combination_holders : int, default 2
        With the rare-value rule: the fewest records that must hold an avatar's tuple of categorical values
        (those whose ``min_count`` is above 1), and each pair of them, for the tuple to be drawn (the
        schema's ``anonymize.combination_min_count``). More lowers singling out by rare combinations and
        turns more of them down.

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
    return _avatarize(table, columns, RunHooks(), k=k, ncp=ncp, weights=weights, random_state=random_state,
                      name=name, min_counts=min_counts, sensitive=sensitive, combination_holders=combination_holders)


def avatarize_in_run(table: pd.DataFrame, columns, hooks: RunHooks, *, k: int = DEFAULT_K,
                     ncp: int | str | None = None, weights=None, random_state=None, name: str = "table",
                     min_counts=None, sensitive=(), combination_holders: int = COMBINATION_HOLDERS) -> AvatarResult:
    """:func:`avatarize` with what a multi-table or batched run adds (``hooks``, see :class:`RunHooks`).

    The other parameters are :func:`avatarize`'s; the avatars are :func:`avatarize`'s when ``hooks`` is
    ``RunHooks()``.
    """
    return _avatarize(table, columns, hooks, k=k, ncp=ncp, weights=weights, random_state=random_state, name=name,
                      min_counts=min_counts, sensitive=sensitive, combination_holders=combination_holders)


def _avatarize(table: pd.DataFrame, columns, hooks: RunHooks, *, k, ncp, weights, random_state, name, min_counts,
               sensitive, combination_holders) -> AvatarResult:
    # one level below both entries, so that the warnings' stacklevel names the caller of either
    drawn, space, groups = hooks.drawn, hooks.space, hooks.groups
    value_counts, extremes = hooks.value_counts, hooks.extremes
    small_groups, shift_numbers = hooks.small_groups, hooks.shift_numbers
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
    stages = 5 + bool(sensitive)

    def stage(done: int) -> None:
        if hooks.progress is not None:
            hooks.progress(done, stages)

    stage(0)
    if space is None:
        space = FactorSpace(types, n_components=ncp, weights=column_weights, random_state=space_rng, name=name)
        coords = space.fit_transform(table)
    else:
        coords = space.transform(table)
    stage(1)
    logger.info("table %r: searching %d neighbours in %d axes", name, k, space.n_components_)
    neighbours = pattern_neighbours(coords, missing_pattern(table, types), k)
    stage(2)
    weights_ = neighbour_weights(neighbours.distances, weight_rng)
    cumulative = np.cumsum(weights_, axis=1)
    cumulative[:, -1] = 1.0  # a draw of u < 1 always falls on a neighbour despite rounding

    logger.info("table %r: combining neighbours", name)
    thresholds = min_count_thresholds(min_counts, types, k, name)
    value_counts, extremes = checked_facts(value_counts, extremes, types, name)
    sensitive = [c for c in types if c in set(sensitive)]
    categorical = [c for c in types if types[c] not in NUMERIC_KINDS or space.statistics_[c].categorical_like]
    draw_indices, draw_cumulative = neighbours.indices, cumulative
    left: list = []
    generalized = (generalize(table, categorical, thresholds, value_counts=value_counts,
                              numeric=[c for c in categorical if types[c] in NUMERIC_KINDS])
                   if thresholds else Generalization(table, {}))
    # the categorical-like values are drawn from the records with their rare values generalized; the
    # neighbours were searched, and the numbers are mixed, on the original records
    table = generalized.table
    value_counts = generalized.level_counts(value_counts) if value_counts else value_counts
    # columns no value of which enough records hold: released as missing (below), left out of the draw's rule
    unreleasable = unreleasable_columns(table, categorical, thresholds, value_counts)
    if thresholds:
        others = [c for c in categorical if c not in sensitive and c not in unreleasable]
        frequent, relaxed = frequent_records(table, others, thresholds, value_counts), dict(thresholds)
        if small_groups and not value_counts:
            # a batch of a larger table (value counts given) would count its combinations in the batch alone:
            # the rule is left to one-machine runs
            frequent, left = tuple_rule(table, [c for c in others if thresholds[c] > 1], frequent,
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
    stage(3)
    # the columns left out of the tuple rule come from other neighbours, a family at a time, forming pairs that
    # several records hold: the drawn neighbour's own rare pairs of them do not reach the release together
    kept = [c for c in categorical if c not in unreleasable]
    taken = (family_donors(table, column_families(table, left), carried_columns(table, types, kept, left, sensitive),
                           chosen, draw_indices, draw_weights, family_rng, combination_holders) if left else {})
    # the released numbers about people (the rule's counts above 1) spread like their group's, except those
    # bound by an order to another column (a span: its shift could reverse it or leave its children outside)
    released = [c for c in types if thresholds.get(c, 1) > 1] if small_groups else []
    spread = _spread_columns(table, types, space, released, drawn, name) if shift_numbers else []
    shifts = (small_group_shifts(table, [c for c in kept if c in released and c not in sensitive], chosen,
                                 shift_rng, taken=taken) if spread else None)
    statistics = held_supports(table, types, space, thresholds, name)
    # the other mixed numbers get back the spread the convex mix takes from them
    stretched = (stretched_numbers(table, types, space, drawn, spread, neighbours.indices, weights_, chosen, name)
                 if hooks.restore_spread else {})
    out = {}
    for column in (c for c in table.columns if c in types):
        stats = statistics[column]
        if types[column] in NUMERIC_KINDS and column not in drawn and not stats.categorical_like:
            out[column] = numeric_avatar(table[column], neighbours.indices, weights_, chosen, stats, name,
                                          shifts if column in spread else None, stretched.get(column))
            if thresholds:
                out[column] = bound_extremes(out[column], table[column], thresholds[column], extremes.get(column))
        else:
            out[column] = table[column].take(taken.get(column, chosen)).reset_index(drop=True)
    stage(4)
    if sensitive:
        out.update(_sensitive_part(table, pd.DataFrame(out), space, chosen, sensitive, categorical, thresholds,
                                   k, donor_rng, name, groups, value_counts, extremes,
                                   shifts, spread, taken, statistics))
        stage(5)
    if thresholds:
        out.update(rare_values_missing(table, out, categorical, thresholds, value_counts, unreleasable, name))
    pairing = shuffle_rng.permutation(n)
    avatars = pd.DataFrame(out).take(pairing).reset_index(drop=True)
    stage(stages)
    return AvatarResult(avatars, pairing.astype(np.int64), ncp=space.n_components_,
                        generalized=[g.to_dict() for g in generalized.columns.values()])


def _sensitive_part(table, avatars, space, chosen, sensitive, categorical, thresholds, k, rng, name, groups,
                    value_counts, extremes, shifts, spread, taken, statistics) -> dict:
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
                mean = spread_like_group(numbers[column], mean, shifts)
            out[column] = finished_numbers(mean, np.isnan(numbers[column][found.pulled]), statistics[column])
            if thresholds:
                out[column] = bound_extremes(out[column], table[column], thresholds[column], extremes.get(column))
    return out


def _check_k(k, n: int, name: str) -> None:
    if n < MIN_ROWS:
        raise ParameterError(
            f"table {name!r} has {n} row{'s' if n != 1 else ''}, too few for the avatar method (it needs at "
            f"least {MIN_ROWS}: each avatar mixes k >= 2 other records). If the table holds no personal data, "
            "release it as is with `anonymize: {method: keep}`"
        )
    check_integer(k, f"table {name!r} has {n} rows: k", option("anonymize", "k").lowest("avatar"), n - 1,
                  context=" (the number of rows minus one)")


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


def _draw(indices: np.ndarray, cumulative: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One neighbour per row, drawn with the rows' weights (``cumulative`` holds their running sums)."""
    u = rng.random(len(indices))
    picked = np.minimum((cumulative < u[:, None]).sum(axis=1), indices.shape[1] - 1)
    return indices[np.arange(len(indices)), picked]
