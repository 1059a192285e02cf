"""relanon's attacks against anonymeter's figures on the same tables (tests/golden/make_anonymeter_golden.py).

The golden tables: 600 training people, 600 control people of the same population, and a release
that copies the training people with noise. anonymeter's success rates come with their 95 %
intervals; relanon's, computed with its own predicates and its own seeds, must fall inside them.
For singling out, the shares are those of anonymeter's definition (a predicate isolates one
person of a group on its own), which relanon keeps in ``details`` beside its population-wide
success (see relanon.metrics.attacks.singling_out).
"""

import json
from pathlib import Path

import pandas as pd
import pytest

from relanon.metrics.attacks import inference, linkability, singling_out

HERE = Path(__file__).parents[2] / "golden" / "anonymeter"
GOLDEN = json.loads((HERE / "answers.json").read_text(encoding="utf-8"))
TYPES = {"age": "integer", "sex": "categorical", "city": "categorical", "income": "continuous",
         "height": "continuous", "smoker": "categorical"}
SEEDS = (0, 1, 2)


def _tables():
    return tuple(pd.read_csv(HERE / f"{name}.csv") for name in ("release", "training", "control"))


def _case(attack, key=None, value=None):
    return next(c for c in GOLDEN["cases"] if c["attack"] == attack and (key is None or c[key] == value))


def _inside(ours: float, golden: dict) -> bool:
    return golden["value"] - golden["error"] <= ours <= golden["value"] + golden["error"]


def _golden_share(case, which):
    return {"value": case[f"n_{'success' if which == 'main' else 'control'}"] / case["n_attacks"][0 if which == "main" else 2],
            "error": case[which]["error"]}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_singling_out_rates_within_anonymeter_intervals(mode, seed):
    case = _case("singling_out", "mode", mode)
    result = singling_out(*_tables(), TYPES, mode=mode, n_attacks=GOLDEN["n_predicates"], n_columns=case["n_cols"],
                          random_state=seed)
    n = result.main.n_attacks
    assert n == case["n_attacks"][0]
    assert _inside(result.details["unique_in_training"] / n, _golden_share(case, "main"))
    assert _inside(result.details["unique_in_control"] / n, _golden_share(case, "control"))
    low, high = case["risk"]["ci"]
    assert low <= result.risk.value <= high


@pytest.mark.parametrize("seed", SEEDS)
def test_linkability_rates_within_anonymeter_intervals(seed):
    case = _case("linkability")
    result = linkability(*_tables(), TYPES, split=case["split"], random_state=seed)
    assert (result.main.n_attacks, result.control.n_attacks) == (case["n_attacks"][0], case["n_attacks"][2])
    assert _inside(result.main.share, _golden_share(case, "main"))
    assert _inside(result.control.share, _golden_share(case, "control"))
    assert case["risk"]["ci"][0] <= result.risk.value <= case["risk"]["ci"][1]


@pytest.mark.parametrize("secret", ["smoker", "income"])
def test_inference_rates_within_anonymeter_intervals(secret):
    case = _case("inference", "secret", secret)
    result = inference(*_tables(), TYPES, secret=secret, random_state=0)
    assert _inside(result.main.share, _golden_share(case, "main"))
    assert _inside(result.control.share, _golden_share(case, "control"))
    assert case["risk"]["ci"][0] <= result.risk.value <= case["risk"]["ci"][1]
    # the interval is anonymeter's: Wilson on the same counts gives the same width
    assert result.main.error == pytest.approx(case["main"]["error"], rel=0.1)
