"""RowBins codes any rows of a column as fitting the bins on those rows alone would (fit_bins then codes)."""

import numpy as np
import pytest

from relanon.common.binning import RowBins, fit_bins
from relanon.metrics.noise_floor import half_splits


def columns():
    rng = np.random.default_rng(0)
    n = 2_001
    doses = rng.choice([10.0, 20.0, 35.5, -0.0, 0.0], n)  # a small set of values: value bins
    doses[rng.random(n) < 0.1] = np.nan
    heights = rng.normal(170, 10, n).round(1)  # many values: quantile bins
    heights[rng.random(n) < 0.05] = np.nan
    heights[:3] = [np.inf, -np.inf, np.inf]
    return {"doses": doses, "heights": heights, "missing": np.full(n, np.nan)}


@pytest.mark.parametrize("name", ["doses", "heights", "missing"])
def test_number_codes_of_halves_are_those_of_bins_fitted_on_the_half(name):
    values = columns()[name]
    released = np.concatenate([values[::-1][:500], [12.0, np.nan, 1e308]])
    row_bins = RowBins(values, released, numeric=True)
    for a, b in half_splits(len(values), splits=3, random_state=1):
        o, r, n_bins = row_bins.codes(a, np.arange(len(released)))
        bins = fit_bins(values[a], numeric=True)
        assert n_bins == bins.n_bins
        assert np.array_equal(o, bins.codes(values[a])) and np.array_equal(r, bins.codes(released))
        o, r, n_bins = RowBins(values, numeric=True).codes(a, b)
        assert np.array_equal(r, bins.codes(values[b])) and n_bins == bins.n_bins


def test_repeated_or_unordered_rows_count_as_given():
    values = columns()["heights"]
    rows = np.array([5, 5, 5, 9, 2, 40, 41, 42, 43, 44, 45, 46, 47])
    o, _, n_bins = RowBins(values, numeric=True).codes(rows, rows)
    bins = fit_bins(values[rows], numeric=True)
    assert np.array_equal(o, bins.codes(values[rows])) and n_bins == bins.n_bins
