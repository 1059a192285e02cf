"""RowBins codes any rows of a column as fitting the bins on those rows alone would (fit_bins then codes)."""

import numpy as np
import pandas as pd
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


@pytest.mark.parametrize("name", ["doses", "heights", "missing"])
def test_number_codes_of_every_row_are_those_of_bins_fitted_on_the_column(name):
    values = columns()[name]
    released = np.concatenate([values[::-1][:500], [12.0, np.nan, 1e308, -np.inf]])
    bins = fit_bins(values, numeric=True)
    o, r, n_bins = RowBins(values, released, numeric=True).codes()
    assert n_bins == bins.n_bins
    assert np.array_equal(o, bins.codes(values)) and np.array_equal(r, bins.codes(released))
    o, r, _ = RowBins(values, numeric=True).halves().codes(None, np.arange(0, len(values), 3))
    assert np.array_equal(o, bins.codes(values)) and np.array_equal(r, bins.codes(values[::3]))


def test_repeated_or_unordered_rows_count_as_given():
    values = columns()["heights"]
    rows = np.array([5, 5, 5, 9, 2, 40, 41, 42, 43, 44, 45, 46, 47])
    o, _, n_bins = RowBins(values, numeric=True).codes(rows, rows)
    bins = fit_bins(values[rows], numeric=True)
    assert np.array_equal(o, bins.codes(values[rows])) and n_bins == bins.n_bins


def object_codes(bins, values):
    """Bins.codes looked up value by value among the bins' labels as Python objects."""
    index = pd.Index(np.asarray(values.array if isinstance(values, pd.Series) else values, dtype=object), dtype=object)
    codes = np.asarray(bins.values.get_indexer(index), dtype=np.int64)
    codes[codes < 0] = len(bins.values)
    codes[np.asarray(pd.isna(values), dtype=bool).reshape(-1)] = bins.n_bins - 1
    return codes


@pytest.mark.parametrize("values", [
    pd.Series(["b", "a", None, "c", "a", "b"] * 50, dtype="str"),
    pd.Series([True, False, True] * 30),
    pd.Series(pd.Categorical(["x", "y", None, "x"] * 20)),
    np.array([1, 1.0, True, "1", None, np.nan, 2, "a"] * 10, dtype=object),
    [3, "3", 3.0, None, "b", 4] * 10,
])
def test_label_codes_are_those_of_each_label_looked_up_as_an_object(values):
    # the distinct labels are looked up, then spread to every value: labels equal as Python objects share a code
    bins = fit_bins(values, numeric=False)
    index = pd.Index(np.asarray(values.array if isinstance(values, pd.Series) else values, dtype=object), dtype=object)
    present = index[~np.asarray(pd.isna(index), dtype=bool)]
    expected = pd.Index(present.unique())
    try:
        expected = expected.sort_values()
    except TypeError:
        pass
    assert bins.values.equals(expected) and list(map(type, bins.values)) == list(map(type, expected))
    released = ["a", "z", None, True, 1, 3.0, "c"] * 3
    for side in (values, released):
        assert np.array_equal(bins.codes(side), object_codes(bins, side))


def test_label_codes_of_halves_renumber_the_labels_held():
    values = np.array(["d", "a", None, "c", "b", "a", "e"] * 30, dtype=object)
    released = np.array(["a", "q", None, "e", "d"] * 7, dtype=object)
    row_bins = RowBins(values, released, numeric=False)
    for a, _ in half_splits(len(values), splits=3, random_state=2):
        rows = a[values[a] != "e"]  # a label of the column no row of the half holds
        o, r, n_bins = row_bins.codes(rows, np.arange(len(released)))
        bins = fit_bins(values[rows], numeric=False)
        assert n_bins == bins.n_bins
        assert np.array_equal(o, bins.codes(values[rows])) and np.array_equal(r, bins.codes(released))
