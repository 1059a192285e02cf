"""relanon's attacks against anonymeter's figures on the same tables (tests/golden/make_anonymeter_golden.py).

The golden tables: 600 training people, 600 control people of the same population, and a release
that copies the training people with noise. anonymeter's success rates come with their 95 %
intervals; relanon's, computed with its own predicates and its own seeds, must fall inside them.
For singling out, the shares of predicates isolating one person of each group on its own are
compared (relanon keeps the control's in ``details``: its control rate is an expectation, see
relanon.metrics.attacks.singling_out).

The 80 / 20 split (``split/``: 4,800 training people, 1,200 control people) holds the same noisy
copy and a release that knows nobody. There anonymeter extrapolates its control count with a
fitted curve, which reports a risk of 0.19 (interval 0.16 to 0.21) on the release that knows
nobody: the risks cannot agree, and relanon's must not. What must agree is the attack itself:
relanon's multivariate predicates single out a training person as often as anonymeter's.
"""

import json
from pathlib import Path

import numpy as np
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


def _split_tables(release):
    return tuple(pd.read_csv(HERE / "split" / f"{name}.csv.gz") for name in (release, "training", "control"))


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


@pytest.mark.parametrize("release", ["release", "independent"])
def test_multivariate_singling_out_on_the_80_20_split_as_strong_as_anonymeter(release):
    case = next(c for c in GOLDEN["split"]["cases"] if c["release"] == release)
    results = [singling_out(*_split_tables(release), TYPES, n_attacks=GOLDEN["split"]["n_predicates"],
                            n_columns=case["n_cols"], random_state=seed) for seed in SEEDS]
    assert all(r.main.n_attacks == case["n_attacks"][0] for r in results)
    # as many training people singled out as anonymeter's predicates do: two estimates, each with its error
    ours, theirs = np.mean([r.main.share for r in results]), _golden_share(case, "main")
    assert abs(ours - theirs["value"]) <= np.hypot(max(r.main.error for r in results), theirs["error"])
    if release == "independent":
        # a release that knows nobody: anonymeter's fitted control leaves a risk, relanon's exact one does not
        assert case["risk"]["ci"][0] > 0.1
        assert all(r.risk.low == 0.0 and r.risk.value < 0.05 for r in results)


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
