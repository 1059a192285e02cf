"""Rounds of an assessment: independent splits whose attacks are pooled into one result each."""

import dataclasses
import json
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from relanon import datasets
from relanon.cli import main
from relanon.common.errors import ParameterError
from relanon.metrics.attacks import assess, inference, linkability, singling_out
from relanon.metrics.attacks.confidence import residual_risk, success_rate
from relanon.metrics.attacks.results import LINKABILITY, attack_result, no_leak_risk
from relanon.metrics.attacks.rounds import pooled, rounds_needed, rounds_to_settle
from relanon.present.attacks import verdict_text
from relanon.schema.validation import check_database

KINDS = {"age": "integer", "town": "categorical", "smoker": "categorical", "income": "continuous"}


def _people(n, rng):
    age = rng.integers(18, 90, n)
    return pd.DataFrame({"age": age, "town": rng.choice([f"t{i}" for i in range(30)], n),
                         "smoker": np.where(rng.random(n) < 0.2 + (age > 50) * 0.3, "yes", "no"),
                         "income": (20_000 + 400 * age + rng.normal(0, 5_000, n)).round(0)})


def _round(seed, leak=False):
    """One round: training and control people of one population, a release that is an independent
    sample of it, or (``leak``) a copy of the training people."""
    rng = np.random.default_rng(seed)
    training, control = _people(300, rng), _people(300, rng)
    release = training.copy() if leak else _people(300, rng)
    return [singling_out(release, training, control, KINDS, mode="multivariate", n_attacks=200, random_state=seed),
            linkability(release, training, control, KINDS, split=(["age", "town"], ["smoker", "income"]),
                        random_state=seed),
            inference(release, training, control, KINDS, secret="smoker", random_state=seed)]


@pytest.fixture(scope="module")
def rounds():
    return [_round(seed) for seed in range(4)]


def _same(a, b):
    assert a.main == b.main and a.control == b.control and a.baseline == b.baseline
    assert a.risk == b.risk and a.floor == b.floor and a.notes == b.notes and a.evidence == b.evidence


def test_one_round_pooled_is_that_round(rounds):
    for result in rounds[0]:
        alone = pooled([result])
        _same(alone, result)
        assert alone.details["rounds"] == 1


def test_linkability_and_inference_pool_their_trials():
    def linked(hits, control_hits):
        return attack_result(LINKABILITY, "a | b", success_rate(hits, 100), success_rate(control_hits, 100),
                             success_rate(1, 100))

    both = pooled([linked(2, 0), linked(4, 1)])
    assert (both.main.n_success, both.main.n_attacks, both.control.n_success, both.control.n_attacks) == (6, 200, 1, 200)
    assert both.risk == residual_risk(success_rate(6, 200), success_rate(1, 200))
    assert both.baseline.n_success == 2 and both.details["rounds"] == 2


def test_singling_out_pools_raw_counts_and_the_design_effect(rounds):
    first, second = rounds[0][0], rounds[1][0]
    both = pooled([first, second])
    for key in ("predicates", "singling_out_training_person", "singling_out_control_person", "training_size"):
        assert both.details[key] == first.details[key] + second.details[key]
    weights = [r.details["singling_out_training_person"] + r.details["singling_out_control_person"]
               for r in (first, second)]
    expected = ((weights[0] * first.details["design_effect"] + weights[1] * second.details["design_effect"])
                / sum(weights)) if sum(weights) else 1.0
    assert both.details["design_effect"] == pytest.approx(expected)
    n = both.details["predicates"]
    assert both.main == success_rate(both.details["singling_out_training_person"], n, design_effect=expected)


def test_pooling_narrows_the_no_leak_bound_and_keeps_a_leak(rounds):
    """A release independent of its people: four rounds give a lower no-leak bound than one; a copy of
    the training people stays a leak."""
    for position in range(3):
        one, four = rounds[0][position], pooled([r[position] for r in rounds])
        assert four.main.n_attacks == sum(r[position].main.n_attacks for r in rounds)
        assert four.floor < one.floor
        assert four.risk.high < one.risk.high or four.risk.high < 0.05
    leaky = [_round(seed, leak=True) for seed in range(2)]
    copied = pooled([r[2] for r in leaky])
    assert copied.risk.low > 0.3  # inference of smoker from a copy of the training people


def test_no_leak_bound_of_pooled_rounds_is_the_bound_of_their_summed_trials():
    pooled_rates = success_rate(1560, 2000), success_rate(1552, 2000)
    result = attack_result(LINKABILITY, "a | b", *pooled_rates, success_rate(0, 2000))
    assert result.floor == no_leak_risk(*pooled_rates).high
    # the verdict's estimate of the rounds needed: the bound shrinks as one over the square root
    assert rounds_needed(result.floor, 1) > 1 and rounds_needed(0.01, 3) == 3


def test_only_the_same_attack_is_pooled(rounds):
    with pytest.raises(ParameterError, match="cannot pool different attacks"):
        pooled([rounds[0][1], rounds[0][2]])
    with pytest.raises(ParameterError, match="at least one round"):
        pooled([])
    other_view = dataclasses.replace(rounds[1][2], view="STANDALONE(other)")
    with pytest.raises(ParameterError, match="STANDALONE"):
        pooled([rounds[0][2], other_view])


@pytest.fixture(scope="module")
def hospital():
    schema, db = datasets.hospital(scale=0.03, seed=4)
    return schema, check_database(schema, db)


@pytest.fixture(scope="module")
def single(hospital):
    """One round of assessment of ``hospital``, made once for the module: never modify it."""
    schema, db = hospital
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return assess(schema, db, random_state=2, n_predicates=150, progress=False)


def test_assess_pools_rounds_and_its_first_round_is_the_single_run(hospital, single):
    schema, db = hospital
    one = single
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        two = assess(schema, db, random_state=2, n_predicates=150, rounds=2, progress=False)
        again = assess(schema, db, random_state=2, n_predicates=150, rounds=2, progress=False)
    assert again.to_json() == two.to_json()  # seeded
    assert two.rounds == 2 and two.to_dict()["rounds"] == 2
    # the k of every avatar table, the verdict's lever against measured leaks (those of the schema)
    assert two.k == {t.name: t.anonymize.k for t in schema} and two.to_dict()["k"] == two.k
    # the first round is the single run: the same release measured
    assert one.evaluation.details.equals(two.evaluation.details)
    assert [(a.view, a.attack, a.target) for a in one.attacks] == [(a.view, a.attack, a.target) for a in two.attacks]
    for single, both in zip(one.attacks, two.attacks, strict=True):
        assert both.details["rounds"] == 2
        if single.attack != "singling_out":
            assert both.main.n_attacks == 2 * single.main.n_attacks  # the same sizes in each round
        assert both.main.n_success >= single.main.n_success
    assert "2 rounds of independent splits" in verdict_text(two)
    with pytest.raises(ParameterError, match="rounds"):
        assess(schema, db, rounds=0, progress=False)


def test_relanon_assess_rounds_option(tmp_path, capsys, monkeypatch):
    # the report without its pictures (drawing them is most of the command's time; tests/present checks them)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes "import matplotlib" fail
    folder = tmp_path / "demo"
    assert main(["demo", "--out", str(folder), "--scale", "0.02", "--data-only", "-q"]) == 0
    capsys.readouterr()
    assert main(["assess", str(folder / "schema.yaml"), "--data", str(folder / "original"), "--out",
                 str(tmp_path / "a"), "--rounds", "0"]) == 2
    assert "--rounds: expected a whole number >= 1" in capsys.readouterr().err
    code = main(["assess", str(folder / "schema.yaml"), "--data", str(folder / "original"), "--out",
                 str(tmp_path / "a"), "--seed", "3", "--predicates", "100", "--rounds", "2", "-q"])
    out = capsys.readouterr().out
    assert code in (0, 1) and "2 rounds of independent splits, their attacks pooled" in out
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["assessment"]["rounds"] == 2
    assert all(a["details"]["rounds"] == 2 for a in metrics["assessment"]["attacks"])


def test_a_note_made_from_counts_is_made_again_from_the_pooled_counts():
    rng = np.random.default_rng(3)
    training, control = _people(200, rng), _people(200, rng)
    few = {"age": "integer", "smoker": "categorical"}  # few distinct predicates: fewer than asked
    rounds = [singling_out(training.sample(200, random_state=s), training, control, few, mode="multivariate",
                           n_attacks=5000, random_state=s) for s in range(3)]
    assert all(any(n.startswith("only ") for n in r.notes) for r in rounds)
    both = pooled(rounds)
    shown = [n for n in both.notes if n.startswith("only ")]
    assert shown == [f"only {both.details['predicates']:,} of the 15,000 predicates asked for single out a released row"]


def test_the_verdict_says_how_many_rounds_would_settle_the_inconclusive_attacks(single):
    result = single
    assert result.inconclusive  # a 3 % demo: too few people
    needed = {}
    for attack in result.inconclusive:
        table = result.cells[attack.view][0]
        needed[table] = max(needed.get(table, 0), rounds_needed(attack.floor, 1))
    text = verdict_text(result)
    for table, n in needed.items():
        assert f"{table}: about {n}" in text  # per table
    practical = [n for n in needed.values() if n <= 20]
    if practical:
        assert f"--rounds {max(practical)})" in text
    if len(practical) < len(needed):
        assert "rounds would be needed: more than is practical" in text


def test_rounds_to_settle_a_failed_risk_whose_interval_reaches_0():
    # width 0.08: the bound below 5 % after (0.08 / 0.03)**2 = 7.1 rounds, above 0 only after (0.08 / 0.02)**2 = 16
    assert rounds_to_settle(0.02, 0.10) == 8
    assert rounds_to_settle(0.02, 0.10, rounds=2) == 15  # measured over 2 rounds: 2 * 7.1 = 14.2
    # a risk of 6 % can only be shown above 0: (0.14 / 0.06)**2 = 5.4
    assert rounds_to_settle(0.06, 0.20) == 6
    # a risk of 0 can only be shown below 5 %: (0.2 / 0.05)**2 = 16
    assert rounds_to_settle(0.0, 0.20) == 16
    assert rounds_to_settle(0.049, 0.5) == 85  # neither comes soon: the larger advice (more people) is the verdict's
    assert rounds_to_settle(0.02, 0.021) == 2  # at least one more round
