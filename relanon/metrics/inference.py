"""The inference attack of a single table's release (docs/guide/metrics.md): an attacker who knows some
values of a record reads its sensitive values off the closest avatar."""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.engine.columns import CATEGORICAL_KINDS, column_types, numeric_values
from relanon.engine.factor_space import FactorSpace
from relanon.engine.neighbours import cross_neighbours
from relanon.metrics.base import HIGHER, TARGETS, Metric

SPACE_SEED = 0
"""The start vector of the Lanczos iterations on wide tables: one metric space per table, here and in
:mod:`relanon.metrics.privacy`."""


def inference(original: pd.DataFrame, avatars: pd.DataFrame, columns, *, known, sensitive, ncp=None,
              rows=None) -> list[Metric]:
    """How badly an attacker guesses sensitive values from the avatars, knowing other values.

    The attacker knows the ``known`` columns of a record, finds the closest avatar on those columns
    (in a factor space of the known columns fitted on the originals) and reads its ``sensitive``
    values, as in the avatar method's authors' inference metrics. Higher is safer:

    - ``inference_categorical``: % of wrong guesses (a missing value guessed missing is right);
    - ``inference_continuous``: mean symmetric absolute percentage error
      ``200 * |guess - truth| / (|guess| + |truth|)`` (0 when both are 0 or both missing, 200 when
      only one is missing); datetimes are measured from the earliest original date.

    Each metric is the worst (lowest) over the sensitive columns of its kind; ``breakdown`` has
    every column.

    Parameters
    ----------
    known, sensitive : sequence of str
        Released columns known to the attacker, and the columns it tries to infer (disjoint).
    rows : array of int, optional
        Original positions attacked (default: all).

    Examples
    --------
    >>> o = pd.DataFrame({"age": [20, 40, 60], "smoker": ["no", "yes", "no"]})
    >>> a = pd.DataFrame({"age": [21, 41, 59], "smoker": ["no", "no", "no"]})
    >>> [round(m.value, 1) for m in inference(o, a, {"age": "integer", "smoker": "categorical"},
    ...                                       known=["age"], sensitive=["smoker"])]
    [33.3]
    """
    types, _ = column_types(columns)
    known, sensitive = list(known or ()), list(sensitive or ())
    unknown = [c for c in known + sensitive if c not in types]
    if unknown:
        raise ParameterError(f"known/sensitive columns must be released columns; unknown: {', '.join(map(str, unknown))}")
    if set(known) & set(sensitive):
        raise ParameterError(f"a column cannot be both known and sensitive: {', '.join(map(str, set(known) & set(sensitive)))}")
    if not known or not sensitive:
        raise ParameterError("the inference metrics need at least one known and one sensitive column")
    rows = np.arange(len(original)) if rows is None else np.asarray(rows, dtype=np.int64)
    space = FactorSpace({c: types[c] for c in known}, n_components=ncp, random_state=SPACE_SEED, name="original").fit(original)
    attacked = original.iloc[rows]
    closest = cross_neighbours(space.transform(avatars), space.transform(attacked), 1).indices[:, 0]
    scores: dict[str, dict] = {"inference_categorical": {}, "inference_continuous": {}}
    for column in sensitive:
        truth, guess = attacked[column], avatars[column].iloc[closest]
        if types[column] in CATEGORICAL_KINDS:
            scores["inference_categorical"][column] = _wrong_guesses(truth, guess)
        else:
            origin = np.nanmin(numeric_values(original[column], types[column])) if types[column] == "datetime" else 0.0
            scores["inference_continuous"][column] = _smape(
                numeric_values(truth, types[column]) - origin, numeric_values(guess, types[column]) - origin
            )
    descriptions = {
        "inference_categorical": "Share of wrong guesses of a sensitive categorical value by an attacker who knows "
        "other values of a record and reads them off its closest avatar (worst sensitive column).",
        "inference_continuous": "Mean percentage error of an attacker guessing a sensitive numeric value from the "
        "avatar closest on the known values (worst sensitive column).",
    }
    return [
        Metric(name, float(min(per_column.values())), TARGETS[name], HIGHER, descriptions[name],
               {"per_column": per_column, "known": known, "records": int(len(rows))})
        for name, per_column in scores.items() if per_column
    ]


def _wrong_guesses(truth: pd.Series, guess: pd.Series) -> float:
    t_missing, g_missing = pd.isna(truth).to_numpy(), pd.isna(guess).to_numpy()
    # missing as None, which compares: pandas' NA (a value released missing in a boolean column) does not
    t = np.where(t_missing, None, np.asarray(truth, dtype=object))
    g = np.where(g_missing, None, np.asarray(guess, dtype=object))
    right = np.where(t_missing | g_missing, t_missing & g_missing, t == g)
    return float(100.0 * (1.0 - right.mean())) if len(right) else float("nan")


def _smape(truth: np.ndarray, guess: np.ndarray) -> float:
    t_missing, g_missing = np.isnan(truth), np.isnan(guess)
    both = t_missing & g_missing
    one = t_missing ^ g_missing
    denominator = np.abs(truth) + np.abs(guess)
    with np.errstate(invalid="ignore", divide="ignore"):
        error = np.where(denominator > 0, 200.0 * np.abs(guess - truth) / denominator, 0.0)
    error = np.where(both, 0.0, np.where(one, 200.0, error))
    return float(error.mean()) if len(error) else float("nan")
