"""Bin codes of a column on two sides, with the shared bins of :mod:`relanon.common.binning`.

The link measures (link fidelity, and the dependence weights of anchored links) compare joint
tables of two columns; :func:`bin_codes` places both sides of a column in the bins that
:func:`relanon.common.binning.fit_bins` fixes on the original, the bins of the Hellinger metric and
of the report's pictures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.common.binning import fit_bins

NUMERIC_KINDS = ("continuous", "integer", "datetime")


def bin_codes(original: pd.Series, released: pd.Series, kind: str):
    """Bin codes of a column on both sides, bins fixed on the original (missing values: a bin of their own).

    Examples
    --------
    >>> o, r = bin_codes(pd.Series(["a", "b", "b"]), pd.Series(["b", "c", None]), "categorical")
    >>> o.tolist(), r.tolist()
    ([0, 1, 1], [1, 2, 3])
    """
    if kind not in NUMERIC_KINDS:
        bins = fit_bins(original.astype(object), numeric=False)
        return bins.codes(original.astype(object)), bins.codes(released.astype(object))
    o, r = binned_numbers(original, kind), binned_numbers(released, kind)
    bins = fit_bins(o, numeric=True)
    return bins.codes(o), bins.codes(r)


def binned_numbers(series: pd.Series, kind: str) -> np.ndarray:
    """The floats a number column is binned on with NaN for missing values; dates in seconds since the epoch."""
    if kind == "datetime":
        values = pd.to_datetime(series)
        if values.dt.tz is not None:
            values = values.dt.tz_convert("UTC").dt.tz_localize(None)
        seconds = (values - pd.Timestamp(0).as_unit(values.dt.unit)) / pd.Timedelta(seconds=1)
        return seconds.to_numpy(dtype=float, na_value=np.nan)
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
