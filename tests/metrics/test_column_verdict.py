"""Every column judged on its own: a broken column is named under a good table mean; too small a table is said to
be too small rather than passed; the avatars keep the spread of their mixed numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.engine.avatar import RunHooks, avatarize, avatarize_in_run
from relanon.metrics.columns import spread_figures
from relanon.metrics.failures import failures
from relanon.metrics.scenarios import evaluate
from relanon.present.verdict import failure_lines, verdict_text
from relanon.schema.model import load_schema


def people(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": range(n), **{f"c{i}": rng.choice(list("abcd"), n) for i in range(8)},
                         "x": rng.normal(50, 10, n), "y": rng.normal(0, 1, n)})


SCHEMA = load_schema({"relanon": 1, "tables": {"people": {"primary_key": "id", "columns": {
    **{f"c{i}": "categorical" for i in range(8)}, "x": "continuous", "y": "continuous"}}}})


def test_a_narrowed_column_is_named_under_a_passing_table_mean():
    original = people(3000)
    released = original.sample(frac=1.0, random_state=1).reset_index(drop=True)
    released["x"] = 50 + (released["x"] - 50) * 0.7  # tails emptied, spread shrunk
    evaluation = evaluate(SCHEMA, {"people": original}, {"people": released}, progress=False)
    mean = next(m for _, _, m in evaluation.metrics if m.name == "hellinger_mean")
    assert mean.passed  # the table's mean alone hides the column
    named = {(f.metric, f.column) for f in failures(evaluation)}
    assert {("hellinger_column", "x"), ("std_ratio_gap", "x"), ("tail_quantile_shift", "x")} <= named
    assert not {column for _, column in named} - {"x"}
    assert "people.x: std ratio gap 0.300 > 0.15 (target)" in verdict_text(evaluation)


def test_a_table_too_small_to_judge_is_said_so_not_passed():
    original = people(20)
    released = original.assign(c0=["a"] * 20)
    evaluation = evaluate(SCHEMA, {"people": original}, {"people": released}, progress=False)
    mean = next(m for _, _, m in evaluation.metrics if m.name == "hellinger_mean")
    assert mean.target is None and mean.passed is None and mean.breakdown["too_small"]
    lines = failure_lines(evaluation)
    assert any(line.startswith("too few rows to judge") for line in lines)
    assert any(line.startswith("  STANDALONE(people): hellinger mean") for line in lines)


def test_avatars_keep_the_spread_of_mixed_numbers_and_their_orders():
    rng = np.random.default_rng(3)
    n = 3000
    start = rng.normal(0, 1, n)
    table = pd.DataFrame({**{f"c{i}": rng.choice(list("abc"), n) for i in range(10)},
                          "start": start, "end": start + rng.exponential(1.0, n), "v": rng.normal(0, 1, n)})
    types = {**{f"c{i}": "categorical" for i in range(10)}, "start": "continuous", "end": "continuous",
             "v": "continuous"}
    plain = avatarize_in_run(table, types, RunHooks(restore_spread=False), k=10, random_state=1).avatars
    kept = avatarize(table, types, k=10, random_state=1).avatars
    for column in ("start", "end", "v"):
        narrow, wide = spread_figures(table[column], plain[column])[0], spread_figures(table[column], kept[column])[0]
        assert narrow < 0.85 and 0.85 <= wide <= 1.15, (column, narrow, wide)
    assert (kept["start"] <= kept["end"]).all()
    assert kept[["start", "end", "v"]].min().ge(table[["start", "end", "v"]].min()).all()
