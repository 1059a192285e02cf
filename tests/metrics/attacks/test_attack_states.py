"""Passed, inconclusive, failed: an attack that no release could pass with so few people is told apart
from a leak measured, in the attack, the risk matrix, the terminal and the report."""

import dataclasses
import json
import math

import pandas as pd
import pytest

from relanon import load_schema
from relanon.metrics.attacks.assessment import Assessment, risk_matrices
from relanon.metrics.attacks.confidence import probit, success_rate
from relanon.metrics.attacks.results import FAILED, INCONCLUSIVE, PASSED, attack_result, no_leak_risk
from relanon.present.attacks import attacks_section, attacks_text, risk_matrix_text, verdict_text


def result(main: float, control: float, n_main: int, n_control: int, view: str = "STANDALONE(doctors)",
           attack: str = "inference"):
    """An attack succeeding on a share ``main`` of ``n_main`` training people and ``control`` of ``n_control``."""
    return dataclasses.replace(
        attack_result(attack, "specialty", success_rate(round(main * n_main), n_main),
                      success_rate(round(control * n_control), n_control), success_rate(round(0.2 * n_main), n_main)),
        view=view)


def hand_no_leak_upper(share: float, n: int) -> float:
    """The no-leak upper bound by hand: Wilson rates, both groups at ``share`` with ``n`` attacks each."""
    z = probit(0.95)
    value = (share * n + z * z / 2) / (n + z * z)
    error = z / (n + z * z) * math.sqrt(share * n * (1 - share) + z * z / 4)
    # d risk / d main = 1 / (1 - c); d risk / d control = (main - 1) / (1 - c)**2 = -1 / (1 - c) at main = c
    return math.sqrt(2) * error / (1 - value)


def test_no_leak_at_100_people_is_inconclusive():
    attack = result(0.7, 0.7, 100, 100)
    assert hand_no_leak_upper(0.7, 100) == pytest.approx(0.4069, abs=1e-4)
    assert attack.floor == pytest.approx(hand_no_leak_upper(0.7, 100))
    assert attack.risk.value == 0.0 and attack.risk.high == pytest.approx(attack.floor)
    assert attack.passed is False and attack.state == INCONCLUSIVE


def test_no_leak_passes_with_enough_people():
    # at 70 % success on control people, 5,000 per group still cannot show 5 % (0.060); 10,000 can (0.042)
    assert result(0.7, 0.7, 5000, 5000).floor == pytest.approx(hand_no_leak_upper(0.7, 5000))
    assert result(0.7, 0.7, 5000, 5000).state == INCONCLUSIVE
    attack = result(0.7, 0.7, 10_000, 10_000)
    assert attack.floor == pytest.approx(hand_no_leak_upper(0.7, 10_000)) and attack.floor < 0.05
    assert attack.passed is True and attack.state == PASSED
    # at 30 % on control people, 5,000 per group suffice
    assert result(0.3, 0.3, 5000, 5000).state == PASSED


def test_a_clear_leak_at_100_people_fails():
    attack = result(0.95, 0.3, 100, 100)
    assert attack.risk.low > 0.5
    assert attack.state == FAILED and attack.passed is False


def test_a_small_excess_that_enough_people_could_rule_out_fails():
    # the floor (0.026) is below 5 %: the attack could have passed and did not, although its estimate is 0.04
    attack = result(0.33, 0.30, 5000, 5000)
    assert attack.floor < 0.05 and attack.risk.value < 0.05 <= attack.risk.high
    assert attack.state == FAILED


def test_the_floor_keeps_the_design_effect():
    main, control = success_rate(30, 400, design_effect=3.0), success_rate(20, 400, design_effect=3.0)
    floor = no_leak_risk(main, control, design_effect=3.0).high
    attack = attack_result("singling_out", "univariate", main, control, success_rate(1, 400),
                           details={"design_effect": 3.0})
    assert attack.floor == pytest.approx(floor)
    # a design effect of 3 counts a third of the attacks: the floor is wider than for independent attacks
    assert floor > no_leak_risk(main, control).high


def test_unmeasured_attacks_have_no_state():
    attack = result(0.5, 1.0, 100, 100)
    assert attack.state is None and attack.passed is None and math.isnan(attack.floor)
    assert attack.to_dict()["floor"] is None and attack.to_dict()["state"] is None


SCHEMA = load_schema({"relanon": 1, "tables": {
    "doctors": {"primary_key": "doctor_id", "individual": True, "columns": {"specialty": "categorical"}},
    "patients": {"primary_key": "patient_id", "individual": True, "columns": {"age": "integer"},
                 "foreign_keys": [{"column": "doctor_id", "references": "doctors"}]},
}})
CELLS = {"STANDALONE(doctors)": ("doctors", "doctors"), "TO_TOP_ENRICHED(doctors, patients)": ("doctors", "patients"),
         "STANDALONE(patients)": ("patients", "patients")}


def assessment_of(attacks, sizes) -> Assessment:
    value, upper, passed, state = risk_matrices(SCHEMA, attacks, CELLS)
    return Assessment(attacks, [], value, upper, passed, None, sizes, 0.5, [], state, CELLS)


def test_a_small_table_without_leak_is_unproven():
    attacks = [result(0.7, 0.7, 100, 100), result(0.4, 0.41, 100, 100, attack="linkability"),
               result(0.5, 0.5, 100, 100, view="TO_TOP_ENRICHED(doctors, patients)"),
               result(0.3, 0.3, 5000, 5000, view="STANDALONE(patients)")]
    assessment = assessment_of(attacks, {"doctors": (100, 100), "patients": (5000, 5000)})
    assert [a.state for a in attacks] == [INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE, PASSED]
    assert assessment.state == INCONCLUSIVE and not assessment.passed and assessment.failures == []
    assert assessment.risk_state.loc["doctors", "doctors"] == INCONCLUSIVE
    assert assessment.risk_state.loc["patients", "patients"] == PASSED
    assert not assessment.risk_passed.loc["doctors", "doctors"]  # risk_passed keeps its meaning
    text = risk_matrix_text(assessment)
    assert "? = inconclusive" in text
    row = next(line for line in text.splitlines() if line.startswith("doctors"))
    assert row.count("?") == 2 and "!" not in row
    verdict = verdict_text(assessment)
    assert "INCONCLUSIVE: 3 of 4 attacks cannot show a risk below 5 %" in verdict
    assert "doctors: 100 control people" in verdict and "patients:" not in verdict.splitlines()[-1]
    assert "their point estimates are below 5 %" in verdict and "RISK" not in verdict
    lines = attacks_text(assessment).splitlines()
    assert sum(line.rstrip().endswith("attacks)") and "?" in line for line in lines) == 3
    assert attacks_text(assessment, only_failed=True) == ""
    page = attacks_section(assessment)
    assert page.count('<td class="inconclusive">') == 2 + 3  # two matrix cells, three attacks
    assert '<span class="inconclusive">' in page
    data = json.loads(json.dumps(assessment.to_dict(), default=str))
    assert data["state"] == INCONCLUSIVE and data["risk_state"]["doctors"]["patients"] == INCONCLUSIVE
    assert data["attacks"][0]["state"] == INCONCLUSIVE and data["attacks"][0]["floor"] == pytest.approx(attacks[0].floor)


def test_a_cell_takes_the_worst_state_of_its_attacks():
    attacks = [result(0.7, 0.7, 100, 100), result(0.95, 0.3, 100, 100, attack="linkability"),
               result(0.3, 0.3, 5000, 5000, view="STANDALONE(patients)")]
    assessment = assessment_of(attacks, {"doctors": (100, 100), "patients": (5000, 5000)})
    assert assessment.risk_state.loc["doctors", "doctors"] == FAILED
    assert pd.isna(assessment.risk_state.loc["doctors", "patients"])
    assert assessment.state == FAILED and assessment.failures == [attacks[1]] and assessment.inconclusive == [attacks[0]]
    row = next(line for line in risk_matrix_text(assessment).splitlines() if line.startswith("doctors"))
    assert "!" in row and "?" not in row
    verdict = verdict_text(assessment)
    assert "RISK: 1 of 3 attacks" in verdict and "1 more cannot show a risk below 5 %" in verdict
    assert "INCONCLUSIVE:" not in verdict
    failed_only = attacks_text(assessment, only_failed=True)
    assert "linkability" in failed_only and "inference" not in failed_only


def test_a_failed_cell_shows_its_failed_attack_not_a_wider_inconclusive_one():
    small_excess = result(0.33, 0.30, 5000, 5000, attack="linkability")
    attacks = [result(0.7, 0.7, 100, 100), small_excess]
    assert small_excess.state == FAILED and small_excess.risk.high < attacks[0].risk.high
    assessment = assessment_of(attacks, {"doctors": (100, 100), "patients": (5000, 5000)})
    assert assessment.risk_state.loc["doctors", "doctors"] == FAILED
    assert assessment.risk_upper.loc["doctors", "doctors"] == pytest.approx(small_excess.risk.high)
    assert assessment.risk_matrix.loc["doctors", "doctors"] == pytest.approx(small_excess.risk.value)


def test_every_attack_passing_is_passed():
    assessment = assessment_of([result(0.3, 0.3, 5000, 5000, view="STANDALONE(patients)")],
                               {"doctors": (100, 100), "patients": (5000, 5000)})
    assert assessment.passed and assessment.state == PASSED
    assert "PASSED" in verdict_text(assessment) and "?" not in risk_matrix_text(assessment).splitlines()[-1]


def test_the_verdict_tells_failed_attacks_whose_interval_reaches_0():
    """10 % against 2 % of 50 doctors: a risk of 0.08 whose interval reaches 0 fails (it could have been shown
    below 5 % and was not) but may be too few people; 95 % against 30 % is a leak whatever the numbers."""
    noisy, leak = result(0.10, 0.02, 50, 50), result(0.95, 0.3, 100, 100, attack="linkability")
    assert noisy.state == FAILED and noisy.risk.low == 0 and leak.risk.low > 0
    verdict = verdict_text(assessment_of([noisy, leak], {"doctors": (100, 100)}))
    assert "RISK: 2 of 2 attacks" in verdict and "more about its own people than about others (1 of them); the " \
        "other 1 has an interval that reaches 0: a leak or too few people" in verdict
    only_noisy = verdict_text(assessment_of([noisy], {"doctors": (100, 100)}))
    assert "their intervals reach 0: a leak or too few people" in only_noisy and "own people" not in only_noisy
    # how many rounds would settle it, if the risk is what it measures now: the upper bound's distance to the
    # risk shrinks as one over the square root of the rounds, until it is below the risk (a leak shown) or
    # below 5 % minus the risk (nothing shown)
    width = noisy.risk.high - noisy.risk.value
    settle = math.ceil(min((width / noisy.risk.value) ** 2, (width / (0.05 - noisy.risk.value)) ** 2 if
                           noisy.risk.value < 0.05 else math.inf))
    assert 1 < settle <= 20
    assert f"(about {settle} rounds if the risks are what they measure now: --rounds {settle})" in only_noisy
    hopeless = result(0.2, 0.15, 20, 20)  # 5 points of risk, 20 people: about 29 rounds
    assert hopeless.state == FAILED and "more than is practical, hold out more people" in verdict_text(
        assessment_of([hopeless], {"doctors": (100, 100)}))
    only_leak = verdict_text(assessment_of([leak], {"doctors": (100, 100)}))
    assert "reach 0" not in only_leak and "more about its own people than about others" in only_leak


def test_the_verdict_names_the_k_to_raise_against_measured_leaks_only():
    """A leak whose interval stays above 0 is answered by the k of the avatar tables its view reads; an
    interval reaching 0 is answered by more rounds, not by a smoother release."""
    leak = result(0.95, 0.3, 100, 100, view="TO_TOP_ENRICHED(doctors, patients)", attack="linkability")
    noisy = result(0.10, 0.02, 50, 50)
    both = dataclasses.replace(assessment_of([noisy, leak], {"doctors": (100, 100)}), k={"doctors": 10, "patients": 20})
    text = verdict_text(both)
    assert "(1 of them: raise k of the tables they read (doctors: k=10, patients: k=20) and assess again" in text
    # what raising k costs, said with the advice: a min_count that follows k turns rare values down
    assert "a min_count left to follow k and more holders asked of a combination turn more rare values down" in text
    assert "combination_min_count" not in text  # a linkability: the tuple rule is not its lever
    alone = dataclasses.replace(assessment_of([leak], {"doctors": (100, 100)}), k={"patients": 20})
    # doctors kept as they are: no k to raise
    assert "than about others; to lower the risks, raise k of the tables they read (patients: k=20)" in \
        verdict_text(alone)
    unsettled = dataclasses.replace(assessment_of([noisy], {"doctors": (100, 100)}), k={"doctors": 10})
    assert "raise k" not in verdict_text(unsettled)


def test_the_verdict_names_combination_min_count_against_a_measured_multivariate_singling_out():
    singled = dataclasses.replace(result(0.30, 0.05, 400, 400, view="TO_TOP_ENRICHED(doctors, patients)",
                                         attack="singling_out"), target="multivariate (3 columns)")
    univariate = dataclasses.replace(singled, target="univariate")
    leaky = dataclasses.replace(assessment_of([singled], {"doctors": (100, 100)}), k={"doctors": 10, "patients": 20},
                                combination_min_count={"doctors": 2})
    assert ("to lower the risks, raise k of the tables they read (doctors: k=10, patients: k=20) and, against "
            "singling out by "
            "combinations, raise anonymize.combination_min_count (doctors: 2) and assess again") in verdict_text(leaky)
    assert leaky.to_dict()["combination_min_count"] == {"doctors": 2}
    # a univariate predicate is one rare value (min_count's matter), and a table kept as it is has no tuple rule
    assert "combination_min_count" not in verdict_text(dataclasses.replace(leaky, attacks=[univariate]))
    assert "combination_min_count" not in verdict_text(dataclasses.replace(leaky, combination_min_count={}))
