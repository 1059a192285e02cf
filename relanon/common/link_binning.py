"""Bins of a column on two sides, fixed on the original: the binning of the link measures.

Stand-in for the shared binning helper of issue 10 (``relanon.common.binning``), which the
Hellinger metric and the report's pictures will use: when it lands, :func:`bin_codes` should become
a call to it, so that one rule bins every column everywhere.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

NUMERIC_KINDS = ("continuous", "integer", "datetime")
MAX_VALUE_BINS = 20  # a numeric column with at most this many distinct values: one bin per value
QUANTILE_BINS = 10


def bin_codes(original: pd.Series, released: pd.Series, kind: str):
    """Bin codes of a column on both sides, bins fixed on the original; -1 for a missing value.

    Categories and booleans are their own bins; a numeric or date column with at most
    ``MAX_VALUE_BINS`` distinct values gets a bin per value (a released value goes to the nearest
    one), otherwise the deciles of the original cut it.

    Examples
    --------
    >>> o, r = bin_codes(pd.Series([1, 2, 2, 3]), pd.Series([2, 3, 5, None]), "integer")
    >>> o.tolist(), r.tolist()
    ([0, 1, 1, 2], [1, 2, 2, -1])
    """
    if kind not in NUMERIC_KINDS:
        both = pd.concat([original, released], ignore_index=True).astype(object)
        codes, _ = pd.factorize(both, use_na_sentinel=True)
        return codes[: len(original)], codes[len(original):]
    o, r = _numbers(original, kind), _numbers(released, kind)
    present = o[~np.isnan(o)]
    observed = np.unique(present)
    if observed.size <= MAX_VALUE_BINS:
        edges = (observed[1:] + observed[:-1]) / 2  # midpoints: a value goes to the nearest original value
    else:
        edges = np.unique(np.quantile(present, np.linspace(0, 1, QUANTILE_BINS + 1)[1:-1]))
    return tuple(np.where(np.isnan(v), -1, np.searchsorted(edges, np.nan_to_num(v), side="right")) for v in (o, r))


def _numbers(series: pd.Series, kind: str) -> np.ndarray:
    if kind == "datetime":
        values = pd.to_datetime(series)
        if values.dt.tz is not None:
            values = values.dt.tz_convert("UTC").dt.tz_localize(None)
        return values.to_numpy(dtype="datetime64[ns]").astype("int64").astype(float) * np.where(values.isna(), np.nan, 1.0)
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
