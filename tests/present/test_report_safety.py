"""Text from the data is never read as markup, and extreme numbers never break the report."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relanon.common.binning import fit_bins
from relanon.metrics.scenarios import evaluate
from relanon.present.report import render_html, write_report
from relanon.schema.model import load_schema

MARKUP = ["$x^$", "$\\foo{x}$", "<b>bold</b>", "$$", "\\", "{{x}}"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # statistics of values near the float limit overflow
def test_markup_and_extreme_values_in_the_data_make_a_complete_report(tmp_path):
    schema = load_schema({"relanon": 1, "tables": {"t": {
        "primary_key": "id", "individual": True,
        "columns": {"$a_b^c$": "categorical", "huge": "continuous", "size": "integer", "other": "continuous"}}}})
    n = 60
    rng = np.random.default_rng(0)
    huge = rng.normal(size=n)
    huge[:3] = [1e308, -1e308, 1e308]
    frame = pd.DataFrame({
        "id": np.arange(n),
        "$a_b^c$": pd.Series([MARKUP[i % len(MARKUP)] for i in range(n)], dtype="str"),
        "huge": huge,
        "size": rng.integers(0, 5, n),
        "other": rng.normal(size=n),
    })
    released = {"t": frame.sample(frac=1.0, random_state=1).reset_index(drop=True)}
    evaluation = evaluate(schema, {"t": frame}, released, progress=False)
    page = (write_report(evaluation, tmp_path / "review")).read_text()
    assert page.count("data:image/png;base64,") >= 3  # distributions, correlations, factor space: all drawn
    assert "<b>bold</b>" not in page
    assert page == render_html(evaluation)


def test_bin_edges_stay_finite_and_increasing_at_the_ends_of_the_float_range():
    for values in ([-1e308, 1e308] * 20, [1e308, 1e308], [-np.inf, 0.0, 1.0, np.inf], [np.inf], [1.7e308, 1.79e308] * 30,
                   np.concatenate([np.linspace(-1e308, 0.0, 100), np.linspace(0.0, 1e308, 100)])):
        bins = fit_bins(np.asarray(values, dtype=float), numeric=True)  # the report draws the metric's bins
        assert bins.shares(np.asarray(values, dtype=float)).sum() == 1.0
        if not bins.by_value:
            assert np.isfinite(bins.edges).all() and (np.diff(bins.edges) >= 0).all(), values
