"""Signal (utility) metrics of a single table's release (docs/guide/metrics.md).

- Hellinger distance per column between the original and released distributions, on the bins of
  :mod:`relanon.common.binning` fixed on the original (one bin per value for categoricals and
  numbers from a small set, quantile bins otherwise, missing as a bin of its own; the report draws
  the same bins). Reported as mean and standard deviation (population) over columns.
- Correlation difference ratio: ``100 * mean_{i<j} |R_orig[i, j] - R_avatar[i, j]|`` over the pairs
  of numeric columns (continuous, integer and datetime; Pearson, pairwise complete observations),
  pairs where either correlation is undefined (a constant column) left out. Its breakdown also holds
  the ratio of released to original standard deviation of every numeric column.
- Impossible combinations: the share of released rows whose values over the categorical-like
  columns (categoricals, booleans and numbers from a small set: the columns binned by value) never
  occur together in the original, over all of them at once and over each pair.

A table or view of fewer than :data:`MIN_DISTRIBUTION_ROWS` rows has no distribution to compare: its
Hellinger distances are *not applicable* (no value, no target). One parent row enriched with its
children's mean scored 1.0 (a mean never falls exactly on the original one, so the one-bin
histograms disagree), and below four rows two halves cannot be compared either.

Each metric carries its noise floor (:mod:`relanon.metrics.noise_floor`): the value two random
halves of the original give each other. Distances pass within the floor plus a margin in quadrature
with the target; combination shares within the floor plus 1 point.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from relanon.common.binning import Bins, RowBins, code_shares, fit_bins, hellinger
from relanon.engine.columns import NUMERIC_KINDS, check_columns_present, column_types, numeric_values
from relanon.metrics.base import LOWER, TARGETS, Metric
from relanon.metrics.columns import TOO_SMALL_FLOOR, column_metrics
from relanon.metrics.noise_floor import MIN_ROWS, NOISE_FLOOR_SEED, noise_floor, quadrature_margin

COMBINATION_MARGIN = 1.0
"""Points (%) of impossible combinations tolerated above the half-versus-half share."""

MIN_DISTRIBUTION_ROWS = MIN_ROWS
"""Fewest rows (original and released) whose value distributions are compared: as many as the noise floor
needs (two rows per half); under it the Hellinger distances are not applicable."""

NOT_APPLICABLE = "not applicable"

MAX_COMBINATION_COLUMNS = 20
"""Pairs are measured among the first this many categorical-like columns (190 pairs at most)."""


# --------------------------------------------------------------------------- bins of a column


def column_values(series: pd.Series, kind: str):
    """What the bins of a column are fitted on and applied to: floats (dates as seconds), or labels."""
    return numeric_values(series, kind) if kind in NUMERIC_KINDS else series


def column_bins(series: pd.Series, kind: str) -> Bins:
    """The shared bins (:func:`relanon.common.binning.fit_bins`) of an original column of type ``kind``.

    Examples
    --------
    >>> column_bins(pd.Series([10.0, 20.0] * 10), "continuous").labels
    ['10.0', '20.0', 'other', 'missing']
    """
    return fit_bins(column_values(series, kind), numeric=kind in NUMERIC_KINDS)


# --------------------------------------------------------------------------- Hellinger


def hellinger_distance(original: pd.Series, released: pd.Series, kind: str) -> float:
    """Hellinger distance ``sqrt(sum_b (sqrt(p_b) - sqrt(q_b))^2 / 2)`` between two columns' distributions.

    The bins are those of :func:`column_bins`, fixed on the original. 0 for identical
    distributions, 1 for disjoint ones.

    Examples
    --------
    >>> round(hellinger_distance(pd.Series(["a", "b"]), pd.Series(["a", "a"]), "categorical"), 4)
    0.5412
    """
    bins = column_bins(original, kind)
    return hellinger(bins.shares(column_values(original, kind)), bins.shares(column_values(released, kind)))


def hellinger_distances(original: pd.DataFrame, released: pd.DataFrame, columns) -> dict:
    """Column name -> Hellinger distance, for every released column.

    Examples
    --------
    >>> o = pd.DataFrame({"g": ["a", "b"], "n": [1, 2]})
    >>> hellinger_distances(o, o, {"g": "categorical", "n": "integer"})
    {'g': 0.0, 'n': 0.0}
    """
    types, _ = column_types(columns)
    check_columns_present(original, types, "original")
    check_columns_present(released, types, "avatars")
    return {c: hellinger_distance(original[c], released[c], kind) for c, kind in types.items()}


def hellinger_metric(original: pd.DataFrame, released: pd.DataFrame, columns, *, floor: bool = True,
                     random_state=NOISE_FLOOR_SEED, description: str | None = None) -> Metric:
    """``hellinger_mean``: mean of the per-column distances, with its noise floor (per column too).

    With fewer than :data:`MIN_DISTRIBUTION_ROWS` rows on either side there is no distribution to
    compare: the value is NaN, there is no target, and the breakdown lists every column under
    ``not_applicable`` (``per_column`` is empty). When the noise floor itself exceeds
    :data:`relanon.metrics.columns.TOO_SMALL_FLOOR`, the table is too small to judge: the value is
    shown, without a target (``too_small`` and ``reason`` in the breakdown).

    Examples
    --------
    >>> o = pd.DataFrame({"g": ["a", "b"] * 10})
    >>> metric = hellinger_metric(o, o, {"g": "categorical"})
    >>> metric.value, metric.passed, metric.floor >= 0
    (0.0, True, True)
    >>> few = pd.DataFrame({"g": list("abcdef") * 2})   # halves of 12 rows of 6 values differ too much
    >>> judged = hellinger_metric(few, few, {"g": "categorical"})
    >>> judged.target, judged.passed, judged.breakdown["too_small"]
    (None, None, True)
    >>> one = hellinger_metric(o.head(1), o.tail(1), {"g": "categorical"})
    >>> one.value, one.target, one.passed, one.breakdown["not_applicable"]
    (nan, None, None, ['g'])
    """
    types, _ = column_types(columns)
    description = description or ("Mean over columns of the Hellinger distance between original and released "
                                  "value distributions (0 identical, 1 disjoint).")
    rows = min(len(original), len(released))
    if rows < MIN_DISTRIBUTION_ROWS:
        # one parent row enriched with its children's mean scored 1.0: a single value is no distribution
        return Metric("hellinger_mean", math.nan, None, LOWER, description,
                      {"per_column": {}, "not_applicable": list(types), "rows": rows,
                       "reason": f"fewer than {MIN_DISTRIBUTION_ROWS} rows: no distribution to compare"})
    if floor:  # the columns binned once, for the release and the halves of the original
        check_columns_present(original, types, "original")
        check_columns_present(released, types, "avatars")
        bins = {c: RowBins(column_values(original[c], kind), column_values(released[c], kind),
                           numeric=kind in NUMERIC_KINDS) for c, kind in types.items()}
        per_column = {c: _coded_hellinger(*row_bins.codes()) for c, row_bins in bins.items()}
    else:
        per_column = hellinger_distances(original, released, types)
    value = float(np.mean(list(per_column.values())))
    breakdown = {"per_column": per_column}
    floor_value = None
    if floor:
        floors = noise_floor(_halves_hellinger({c: row_bins.halves() for c, row_bins in bins.items()}), len(original),
                             random_state=random_state)
        if isinstance(floors.value, dict):
            breakdown["floor_per_column"] = floors.value
            floor_value = float(np.nanmean(list(floors.value.values())))
    if floor_value is not None and floor_value > TOO_SMALL_FLOOR:
        # two halves of the original differ more than any release could be asked to: no pass, no fail
        breakdown["too_small"] = True
        breakdown["reason"] = (f"{len(original)} rows: two random halves of the original differ by {floor_value:.2f} "
                               "(noise floor), too few rows to judge the distributions")
        return Metric("hellinger_mean", value, None, LOWER, description, breakdown, floor=floor_value)
    return _with_floor(Metric(
        "hellinger_mean", value, TARGETS["hellinger_mean"], LOWER, description, breakdown,
    ), floor_value)


def _coded_hellinger(original: np.ndarray, released: np.ndarray, n_bins: int) -> float:
    """:func:`hellinger_distance` of two sides' bin codes."""
    return hellinger(code_shares(original, n_bins), code_shares(released, n_bins))


def _halves_hellinger(bins: dict):
    """``metric(a, b)``: :func:`hellinger_distances` of rows ``a`` of the original against its rows ``b``, each
    column read and coded once for every pair of halves (``bins``: column -> the original's
    :class:`relanon.common.binning.RowBins` on both sides)."""

    def metric(a, b) -> dict:
        return {column: _coded_hellinger(*row_bins.codes(a, b)) for column, row_bins in bins.items()}

    return metric


# --------------------------------------------------------------------------- correlations


def correlation_difference_ratio(original: pd.DataFrame, released: pd.DataFrame, columns, *, floor: bool = False,
                                 random_state=NOISE_FLOOR_SEED) -> Metric:
    """``100 * mean_{i<j} |R_orig[i, j] - R_avatar[i, j]|`` over pairs of numeric columns (Pearson).

    The value is NaN when fewer than two numeric columns have defined correlations. The breakdown
    holds every pair and, per numeric column, the ratio of the released standard deviation to the
    original one (below 1: the release is narrower). With ``floor``, the noise floor is measured.

    Examples
    --------
    >>> o = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]})
    >>> r = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [3.0, 2.0, 1.0]})
    >>> correlation_difference_ratio(o, r, {"x": "continuous", "y": "continuous"}).value
    200.0
    """
    types, _ = column_types(columns)
    numeric = [c for c, kind in types.items() if kind in NUMERIC_KINDS]
    check_columns_present(original, numeric, "original")
    check_columns_present(released, numeric, "avatars")
    o_values, r_values = _numeric_frame(original, numeric, types), _numeric_frame(released, numeric, types)
    value, pairs = _correlation_difference(o_values, r_values)
    o_std, r_std = o_values.std(ddof=0), r_values.std(ddof=0)
    std_ratios = {c: float(r_std[c] / o_std[c]) for c in numeric if o_std[c] > 0 and not math.isnan(r_std[c])}
    floor_value = None
    if floor and not math.isnan(value):
        floor_value = noise_floor(
            lambda a, b: _correlation_difference(o_values.iloc[a], o_values.iloc[b])[0], len(o_values),
            random_state=random_state,
        ).value
    return _with_floor(Metric(
        "correlation_difference_ratio", value, TARGETS["correlation_difference_ratio"], LOWER,
        "Mean absolute difference, in percent, between the correlations of the numeric columns in the "
        "original and released tables.",
        {"pairs": pairs, "std_ratios": std_ratios},
    ), floor_value)


def _numeric_frame(frame: pd.DataFrame, numeric, types) -> pd.DataFrame:
    return pd.DataFrame({c: numeric_values(frame[c], types[c]) for c in numeric}, index=pd.RangeIndex(len(frame)))


def _correlation_difference(o_values: pd.DataFrame, r_values: pd.DataFrame) -> tuple[float, dict]:
    names = list(o_values.columns)
    r_original = o_values.corr().to_numpy() if names else np.zeros((0, 0))
    r_released = r_values.corr().to_numpy() if names else np.zeros((0, 0))
    upper = np.triu_indices(len(names), k=1)
    differences = np.abs(r_original - r_released)[upper]
    defined = ~np.isnan(differences)
    value = float(100.0 * differences[defined].mean()) if defined.any() else float("nan")
    pairs = {f"{names[i]} ~ {names[j]}": float(d) for i, j, d in zip(*upper, differences, strict=True) if not np.isnan(d)}
    return value, pairs


# --------------------------------------------------------------------------- combinations


def categorical_like(original: pd.DataFrame, columns) -> dict[str, tuple[str, Bins]]:
    """The columns binned by value (categoricals, booleans, numbers from a small set): ``{name: (type, bins)}``."""
    types, _ = column_types(columns)
    out = {}
    for column, kind in types.items():
        bins = column_bins(original[column], kind)
        if bins.by_value:
            out[column] = (kind, bins)
    return out


def combination_shares(original: pd.DataFrame, released: pd.DataFrame, binned: dict) -> dict:
    """Share (%) of released rows whose combination of values never occurs in the original.

    Returns ``{"all": share over every column of ``binned``, "a ~ b": share over that pair, ...}``
    (pairs among the first :data:`MAX_COMBINATION_COLUMNS` columns); ``binned`` comes from
    :func:`categorical_like`. Missing is a value; a value the original never holds makes the
    combination impossible. Empty with fewer than two columns.

    Examples
    --------
    >>> o = pd.DataFrame({"city": ["Lyon", "Lille"] * 5, "region": ["ARA", "HDF"] * 5})
    >>> r = pd.DataFrame({"city": ["Lyon", "Lille", "Lyon", "Lille"], "region": ["ARA", "HDF", "HDF", "HDF"]})
    >>> combination_shares(o, r, categorical_like(o, {"city": "categorical", "region": "categorical"}))
    {'all': 25.0, 'city ~ region': 25.0}
    """
    if len(binned) < 2:
        return {}
    return _combination_shares({
        c: (bins.codes(column_values(original[c], kind)), bins.codes(column_values(released[c], kind)), bins.n_bins)
        for c, (kind, bins) in binned.items()
    })


def _combination_shares(codes: dict) -> dict:
    """:func:`combination_shares` of coded columns: name -> (original codes, released codes, number of bins)."""
    binned = list(codes)
    out = {"all": _unseen_share(list(codes.values()))}
    for a, b in itertools.combinations(list(binned)[:MAX_COMBINATION_COLUMNS], 2):
        out[f"{a} ~ {b}"] = _unseen_share([codes[a], codes[b]])
    return out


def _unseen_share(codes: list) -> float:
    """Share (%) of released rows whose joint code never occurs among the original rows."""
    n_o = len(codes[0][0])
    joint = None
    for o, r, size in codes:
        both = np.concatenate([o, r])
        joint = both if joint is None else pd.factorize(joint * np.int64(size) + both)[0]
    if len(joint) == n_o:
        return float("nan")
    # joint codes are positions among the distinct codes (0, 1, ...): those of the original rows marked in a table
    held = np.zeros(int(joint.max()) + 1, dtype=bool)
    held[joint[:n_o]] = True
    return float(100.0 * (~held[joint[n_o:]]).mean())


def combination_metrics(original: pd.DataFrame, released: pd.DataFrame, columns, *, floor: bool = True,
                        random_state=NOISE_FLOOR_SEED) -> list[Metric]:
    """``impossible_combinations`` (all categorical-like columns at once) and ``impossible_pairs``.

    ``impossible_pairs`` is the pair whose share exceeds its own half-versus-half share the most;
    every pair is in the breakdown with its floor. Empty when fewer than two columns are
    categorical-like.

    Examples
    --------
    >>> o = pd.DataFrame({"city": ["Lyon", "Lille"] * 10, "region": ["ARA", "HDF"] * 10})
    >>> r = o.assign(region=["HDF", "ARA"] * 10)
    >>> [(m.name, m.value, m.passed) for m in combination_metrics(o, r, {"city": "categorical", "region": "categorical"})]
    [('impossible_combinations', 100.0, False), ('impossible_pairs', 100.0, False)]
    """
    types, _ = column_types(columns)
    binned = categorical_like(original, types)
    shares = combination_shares(original, released, binned)
    if not shares:
        return []
    floors = {key: math.nan for key in shares}
    if floor:
        # the bins are the whole original's: each column is coded once, each half takes its rows' codes
        coded = {c: (bins.codes(column_values(original[c], kind)), bins.n_bins) for c, (kind, bins) in binned.items()}
        found = noise_floor(lambda a, b: _combination_shares({c: (o[a], o[b], n) for c, (o, n) in coded.items()}),
                            len(original), random_state=random_state).value
        floors = found if isinstance(found, dict) else floors
    pairs = {key: {"value": v, "floor": floors.get(key, math.nan)} for key, v in shares.items() if key != "all"}
    worst = max(pairs, key=lambda key: (_excess(pairs[key]), key))
    common = {"columns": list(binned)}
    return [
        _combination_metric(
            "impossible_combinations", shares["all"], floors.get("all", math.nan),
            "Share (%) of released rows whose values over all the categorical-like columns together never occur "
            "together in the original (a city in another region), beside the share between two halves of the original.",
            common,
        ),
        _combination_metric(
            "impossible_pairs", pairs[worst]["value"], pairs[worst]["floor"],
            "Share (%) of released rows whose pair of categorical-like values never occurs in the original, for the "
            "pair furthest above its half-versus-half share.",
            {**common, "pair": worst, "pairs": pairs},
        ),
    ]


def _excess(entry: dict) -> float:
    floor = 0.0 if math.isnan(entry["floor"]) else entry["floor"]
    return entry["value"] - floor


def _combination_metric(name, value, floor, description, breakdown) -> Metric:
    has_floor = not math.isnan(floor)
    return Metric(name, value, TARGETS[name], LOWER, description, breakdown,
                  floor=floor if has_floor else None, margin=COMBINATION_MARGIN if has_floor else None)


def _with_floor(metric: Metric, floor: float | None) -> Metric:
    if floor is None or math.isnan(floor):
        return metric
    return Metric(metric.name, metric.value, metric.target, metric.direction, metric.description, metric.breakdown,
                  floor=floor, margin=quadrature_margin(floor, metric.target))


# --------------------------------------------------------------------------- all at once


def signal(original: pd.DataFrame, avatars: pd.DataFrame, columns, *, floor: bool = True,
           random_state=NOISE_FLOOR_SEED) -> list[Metric]:
    """The signal metrics of a single table's release.

    Parameters
    ----------
    original, avatars : pandas.DataFrame
        The original and released records (row order does not matter).
    columns : Mapping[str, str] or sequence of relanon.schema.Column
        The released columns and their types (``drop`` ignored).
    floor : bool, default True
        Measure the noise floor of each metric (two random halves of the original, seeded).
    random_state : int or Generator
        Seed of the halves.

    Returns
    -------
    list of Metric
        ``hellinger_mean`` (per-column distances and floors in its breakdown), ``hellinger_std`` (no
        target), with ``floor`` the columns judged one by one (:mod:`relanon.metrics.columns`:
        ``hellinger_column``, ``std_ratio_gap``, ``tail_quantile_shift``), ``correlation_difference_ratio``
        when at least two numeric columns have defined correlations, ``impossible_combinations`` and
        ``impossible_pairs`` when at least two columns are categorical-like.

    Examples
    --------
    >>> o = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [2.0, 1.0, 0.0, 0.5], "g": ["a", "b", "a", "b"]})
    >>> [(m.name, m.value) for m in signal(o, o, {"x": "continuous", "y": "continuous", "g": "categorical"})
    ...  if m.name != "hellinger_column"]  # 4 rows: too few to judge a column (its value is NaN, no target)
    [('hellinger_mean', 0.0), ('hellinger_std', 0.0), ('std_ratio_gap', 0.0), ('tail_quantile_shift', 0.0), ('correlation_difference_ratio', 0.0)]
    """
    hellinger_mean = hellinger_metric(original, avatars, columns, floor=floor, random_state=random_state)
    per_column = hellinger_mean.breakdown["per_column"]
    metrics = [
        hellinger_mean,
        Metric(
            "hellinger_std", float(np.std(list(per_column.values()))) if per_column else math.nan, None, LOWER,
            "Spread over columns of the Hellinger distances: a high value flags a few badly kept columns.",
            {"per_column": per_column, **{k: v for k, v in hellinger_mean.breakdown.items() if k == "not_applicable"}},
        ),
    ]
    if floor:  # every column against its own floor: the table's mean hides a broken column
        metrics += column_metrics(original, avatars, columns, hellinger_mean, random_state=random_state)
    correlations = correlation_difference_ratio(original, avatars, columns, floor=floor, random_state=random_state)
    if not np.isnan(correlations.value):
        metrics.append(correlations)
    metrics += combination_metrics(original, avatars, columns, floor=floor, random_state=random_state)
    return metrics
