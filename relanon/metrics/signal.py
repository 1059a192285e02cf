"""Signal (utility) metrics of a single table's release (DESIGN section 4).

- Hellinger distance per column between the original and released distributions: categoricals by
  modality; numeric columns on bins fixed on the original values (Sturges' number of equal-width
  bins over the original range; one bin per value for integers spanning fewer values than that);
  a missing value is a bin of its own; released values outside the original range fall in the end
  bins. Reported as mean and standard deviation (population) over columns.
- Correlation difference ratio: ``100 * mean_{i<j} |R_orig[i, j] - R_avatar[i, j]|`` over the pairs
  of numeric columns (continuous, integer and datetime; Pearson, pairwise complete observations),
  pairs where either correlation is undefined (a constant column) left out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.engine.factor_space import (
    NUMERIC_KINDS,
    check_columns_present,
    column_types,
    numeric_values,
)
from relanon.metrics.base import LOWER, TARGETS, Metric


def hellinger_distance(original: pd.Series, released: pd.Series, kind: str) -> float:
    """Hellinger distance ``sqrt(sum_b (sqrt(p_b) - sqrt(q_b))^2 / 2)`` between two columns' distributions.

    (Equal to ``sqrt(1 - sum_b sqrt(p_b q_b))``, in a form that is exactly 0 for equal shares.)

    0 for identical distributions, 1 for disjoint ones.

    Examples
    --------
    >>> round(hellinger_distance(pd.Series(["a", "b"]), pd.Series(["a", "a"]), "categorical"), 4)
    0.5412
    """
    if kind in NUMERIC_KINDS:
        p, q = _binned_shares(numeric_values(original, kind), numeric_values(released, kind), kind)
    else:
        p, q = _modality_shares(original, released)
    return float(np.sqrt(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2) / 2))


def _modality_shares(original: pd.Series, released: pd.Series):
    o = original.value_counts(dropna=False, normalize=True)
    r = released.value_counts(dropna=False, normalize=True)
    o.index, r.index = _missing_as_label(o.index), _missing_as_label(r.index)
    both = o.index.union(r.index, sort=False)
    return o.reindex(both, fill_value=0.0).to_numpy(), r.reindex(both, fill_value=0.0).to_numpy()


def _missing_as_label(index: pd.Index) -> pd.Index:
    """Give every missing value one hashable label so None/NaN/NA count as one modality."""
    values = np.asarray(index, dtype=object)
    values[pd.isna(index)] = "\0<missing>"
    return pd.Index(values, dtype=object)


def _binned_shares(original: np.ndarray, released: np.ndarray, kind: str):
    edges = _bin_edges(original[~np.isnan(original)], kind)
    return _shares_in_bins(original, edges), _shares_in_bins(released, edges)


def _bin_edges(observed: np.ndarray, kind: str) -> np.ndarray:
    if observed.size == 0:
        return np.array([0.0, 1.0])
    low, high = float(observed.min()), float(observed.max())
    sturges = int(np.ceil(np.log2(observed.size))) + 1
    if kind == "integer" and high - low + 1 <= sturges:
        return np.arange(low - 0.5, high + 1.0)
    if high == low:
        return np.array([low - 0.5, high + 0.5])
    return np.linspace(low, high, sturges + 1)


def _shares_in_bins(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Shares per bin, then the share of missing values; outside values go to the end bins."""
    missing = np.isnan(values)
    inside = np.clip(np.searchsorted(edges, values[~missing], side="right") - 1, 0, len(edges) - 2)
    counts = np.bincount(inside, minlength=len(edges) - 1).astype(np.float64)
    counts = np.append(counts, missing.sum())
    return counts / max(len(values), 1)


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


def correlation_difference_ratio(original: pd.DataFrame, released: pd.DataFrame, columns) -> Metric:
    """``100 * mean_{i<j} |R_orig[i, j] - R_avatar[i, j]|`` over pairs of numeric columns (Pearson).

    The value is NaN when fewer than two numeric columns have defined correlations.

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
    r_original = _correlations(original, numeric, types)
    r_released = _correlations(released, numeric, types)
    upper = np.triu_indices(len(numeric), k=1)
    differences = np.abs(r_original - r_released)[upper]
    defined = ~np.isnan(differences)
    value = float(100.0 * differences[defined].mean()) if defined.any() else float("nan")
    pairs = {f"{numeric[i]} ~ {numeric[j]}": float(d) for i, j, d in zip(*upper, differences, strict=True) if not np.isnan(d)}
    return Metric(
        "correlation_difference_ratio", value, TARGETS["correlation_difference_ratio"], LOWER,
        "Mean absolute difference, in percent, between the correlations of the numeric columns in the "
        "original and released tables.",
        {"pairs": pairs},
    )


def _correlations(frame: pd.DataFrame, numeric, types) -> np.ndarray:
    values = pd.DataFrame({c: numeric_values(frame[c], types[c]) for c in numeric})
    return values.corr().to_numpy() if numeric else np.zeros((0, 0))


def signal(original: pd.DataFrame, avatars: pd.DataFrame, columns) -> list[Metric]:
    """The signal metrics of a single table's release.

    Parameters
    ----------
    original, avatars : pandas.DataFrame
        The original and released records (row order does not matter).
    columns : Mapping[str, str] or sequence of relanon.schema.Column
        The released columns and their types (``drop`` ignored).

    Returns
    -------
    list of Metric
        ``hellinger_mean`` (per-column distances in its breakdown), ``hellinger_std`` (no target),
        and ``correlation_difference_ratio`` when at least two numeric columns have defined
        correlations.

    Examples
    --------
    >>> o = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [2.0, 1.0, 0.0], "g": ["a", "b", "a"]})
    >>> [(m.name, m.value) for m in signal(o, o, {"x": "continuous", "y": "continuous", "g": "categorical"})]
    [('hellinger_mean', 0.0), ('hellinger_std', 0.0), ('correlation_difference_ratio', 0.0)]
    """
    per_column = hellinger_distances(original, avatars, columns)
    values = np.array(list(per_column.values()))
    metrics = [
        Metric(
            "hellinger_mean", float(values.mean()), TARGETS["hellinger_mean"], LOWER,
            "Mean over columns of the Hellinger distance between original and released value "
            "distributions (0 identical, 1 disjoint).",
            {"per_column": per_column},
        ),
        Metric(
            "hellinger_std", float(values.std()), None, LOWER,
            "Spread over columns of the Hellinger distances: a high value flags a few badly kept columns.",
            {"per_column": per_column},
        ),
    ]
    correlations = correlation_difference_ratio(original, avatars, columns)
    if not np.isnan(correlations.value):
        metrics.append(correlations)
    return metrics
