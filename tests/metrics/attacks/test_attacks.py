"""The privacy attacks: statistics by hand, the attacker's distance against brute force, and releases
whose answer is known (a copy of the training people: risk near 1; an independent sample of the
same population: risk near 0)."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from relanon.common.errors import ParameterError
from relanon.metrics.attacks import inference, linkability, singling_out
from relanon.metrics.attacks.coding import code_frames, nearest
from relanon.metrics.attacks.confidence import probit, residual_risk, success_rate
from relanon.metrics.attacks.inference import right_guesses
from relanon.metrics.attacks.singling_out import (
    CAP,
    chance_of_one,
    count_matches,
    multivariate_predicates,
    predicate_text,
    random_predicates,
    univariate_predicates,
)

TYPES = {"age": "integer", "income": "continuous", "city": "categorical", "sex": "categorical",
         "smoker": "boolean", "birth": "datetime"}


def population(n: int, seed: int) -> pd.DataFrame:
    """People with correlated columns, a long-tailed city and a few missing values."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    weights = 1.0 / np.arange(1, 61) ** 1.1
    frame = pd.DataFrame({
        "age": age,
        "income": np.round(rng.lognormal(9.5 + age / 100, 0.4), 2),
        "city": rng.choice([f"c{i}" for i in range(60)], n, p=weights / weights.sum()),
        "sex": rng.choice(["F", "M"], n),
        "smoker": rng.random(n) < 0.15 + age / 200,
        "birth": pd.Timestamp("2024-01-01") - pd.to_timedelta(age * 365 + rng.integers(0, 365, n), unit="D"),
    })
    frame.loc[rng.random(n) < 0.05, "income"] = np.nan
    return frame


def groups(seed: int, n_training: int = 1200, n_control: int = 300, n_release: int = 1200):
    """Training and control people, and an independent sample of the same population."""
    people = population(n_training + n_control + n_release, seed)
    return (people.iloc[:n_training].reset_index(drop=True),
            people.iloc[n_training:n_training + n_control].reset_index(drop=True),
            people.iloc[n_training + n_control:].reset_index(drop=True))


# --------------------------------------------------------------------------- statistics


def test_wilson_rate_by_hand():
    z = probit(0.95)
    rate = success_rate(20, 100)
    assert rate.value == pytest.approx((20 + z * z / 2) / (100 + z * z))
    assert rate.error == pytest.approx(z / (100 + z * z) * math.sqrt(20 * 80 / 100 + z * z / 4))
    assert (rate.low, rate.high) == pytest.approx((rate.value - rate.error, rate.value + rate.error))
    assert rate.share == 0.2
    assert success_rate(0, 50).low == 0.0 and success_rate(50, 50).high == 1.0


def test_risk_by_hand_and_bounded():
    main, control = success_rate(60, 100), success_rate(20, 100)
    risk = residual_risk(main, control)
    raw = (main.value - control.value) / (1 - control.value)
    error = math.hypot(main.error / (1 - control.value), control.error * (main.value - 1) / (1 - control.value) ** 2)
    assert risk.raw == pytest.approx(raw)
    assert (risk.low, risk.high) == pytest.approx((raw - error, raw + error))
    below = residual_risk(success_rate(10, 100), success_rate(30, 100))
    assert below.raw < 0 and below.value == 0.0 and below.low == 0.0
    assert math.isnan(residual_risk(success_rate(5, 10), success_rate(10, 10)).value)


def test_a_rate_takes_an_expected_count():
    rate = success_rate(40.5, 200)
    z2 = probit(0.95) ** 2
    assert rate.n_success == 40.5
    assert rate.value == pytest.approx((40.5 + z2 / 2) / (200 + z2))
    with pytest.raises(ParameterError):
        success_rate(5, 4)


def test_chance_of_one_training_person_by_counting_splits():
    # 5 people, 3 of them training: every split of the 5 counted
    splits = list(itertools.combinations(range(5), 3))
    for matched in range(6):
        exact = sum(len(set(split) & set(range(matched))) == 1 for split in splits) / len(splits)
        assert chance_of_one(np.array([matched]), 3, 2)[0] == pytest.approx(exact)


def test_the_control_rate_is_the_training_success_of_random_splits():
    # a release that knows nobody, people split at random again and again: on average the predicates single out
    # a training person exactly as often as the control rate says
    people = population(600, 8)
    release = population(400, 9)
    coded = code_frames({"release": release, "people": people}, TYPES)
    predicates = multivariate_predicates(coded["release"], coded, 300, 3, 30_000, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    main, control = [], []
    for _ in range(200):
        training = rng.permutation(600) < 480
        in_training = count_matches(coded["people"][training], predicates, cap=CAP)
        in_control = count_matches(coded["people"][~training], predicates, cap=CAP)
        main.append((in_training == 1).mean())
        control.append(chance_of_one(in_training + in_control, 480, 120).mean())
    assert np.ptp(control) < 1e-12  # the same people: the same expectation, whatever the split
    assert np.mean(main) == pytest.approx(control[0], abs=3 * np.std(main) / np.sqrt(len(main)))


# --------------------------------------------------------------------------- the attacker's distance


def _gower(a, b, coded, columns):
    total = 0.0
    for j in columns:
        if np.isnan(a[j]) or np.isnan(b[j]):
            total += 0.0 if np.isnan(a[j]) and np.isnan(b[j]) else 1.0
        elif coded.numeric[j]:
            total += abs(a[j] - b[j]) / coded.spans[j]
        else:
            total += float(a[j] != b[j])
    return total


def test_nearest_matches_brute_force_gower_with_missing_values():
    reference, queries = population(60, 1), population(25, 2)
    reference.loc[3, "city"] = None
    queries.loc[[0, 5], "city"] = None
    coded = code_frames({"r": reference, "q": queries}, TYPES)
    subsets = [[0, 1], [2, 3, 4], [0, 1, 2, 3, 5], list(range(6))]  # small subsets, and large ones (complements)
    found = nearest(coded["q"], coded["r"], coded, subsets, n_neighbors=3)
    for subset, result in zip(subsets, found, strict=True):
        for i, row in enumerate(coded["q"]):
            distances = np.array([_gower(row, other, coded, subset) for other in coded["r"]])
            expected = np.sort(distances)[:3]
            assert np.allclose(distances[result[i]], expected, atol=1e-5)


def test_nearest_breaks_ties_by_the_first_reference_row():
    reference = pd.DataFrame({"c": ["a", "a", "b", "a"]})
    coded = code_frames({"r": reference, "q": pd.DataFrame({"c": ["a"]})}, {"c": "categorical"})
    assert nearest(coded["q"], coded["r"], coded, [[0]])[0].tolist() == [[0]]


def test_coding_shares_codes_and_spans_across_frames():
    a = pd.DataFrame({"x": [1.0, 5.0], "c": ["u", "v"]})
    b = pd.DataFrame({"x": [9.0, np.nan], "c": ["v", None]})
    coded = code_frames({"a": a, "b": b}, {"x": "continuous", "c": "categorical"})
    assert coded.spans.tolist() == [8.0, 1.0]
    assert coded["a"][1, 1] == coded["b"][0, 1]  # "v" has one code in both frames
    assert np.isnan(coded["b"][1, 1]) and coded.value_label(1, coded["b"][0, 1]) == "v"


# --------------------------------------------------------------------------- singling out


def test_univariate_predicates_by_hand():
    release = pd.DataFrame({"x": [1.0, 2.0, 2.0, 5.0], "c": ["a", "b", "b", None]})
    coded = code_frames({"release": release}, {"x": "continuous", "c": "categorical"})
    predicates = univariate_predicates(coded["release"], coded, 100, np.random.default_rng(0))
    texts = {predicate_text(coded, predicates, q) for q in range(len(predicates[0]))}
    assert texts == {"x == 1", "x == 5", "x <= 1", "x >= 5", "c == 'a'", "c is missing"}
    assert (count_matches(coded["release"], predicates) == 1).all()


def test_capped_counts_are_exact_below_the_cap():
    data = population(2500, 3)
    coded = code_frames({"d": data}, TYPES)
    predicates = random_predicates(coded["d"], coded, 400, 2, np.random.default_rng(1))
    exact = count_matches(coded["d"], predicates)
    assert np.array_equal(count_matches(coded["d"], predicates, cap=2), np.minimum(exact, 2))
    assert np.array_equal(count_matches(coded["d"], predicates, cap=5), np.minimum(exact, 5))
    assert exact.max() > 2 and (exact == 1).any()


@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_singling_out_a_copy_of_the_training_people_is_flagged(mode):
    training, control, _ = groups(0)
    result = singling_out(training, training, control, TYPES, mode=mode, n_attacks=500, random_state=0)
    # every predicate singles out its training person; without memorization, fewer would
    assert result.main.share == 1.0 and result.control.share < 0.9
    assert result.risk.value > 0.95 and result.risk.low > 0.75
    assert result.passed is False


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_singling_out_an_independent_sample_shows_no_risk(seed):
    training, control, independent = groups(seed)
    for mode in ("univariate", "multivariate"):
        result = singling_out(independent, training, control, TYPES, mode=mode, n_attacks=500, random_state=seed)
        assert result.risk.low == 0.0, (mode, result.risk)
        assert result.risk.value < 0.1


def test_a_rare_value_copied_into_the_release_is_the_evidence():
    training, control, independent = groups(4)
    training.loc[7, "city"] = "Ushuaia"  # held by one person
    release = pd.concat([independent, training.iloc[[7]]], ignore_index=True)
    result = singling_out(release, training, control, TYPES, mode="univariate", n_attacks=5000, random_state=0)
    assert "city == 'Ushuaia'" in " ".join(result.evidence) or result.details["succeeding_by_columns"].get("city ==")


def test_singling_out_is_seeded():
    training, control, independent = groups(5)
    first = singling_out(independent, training, control, TYPES, n_attacks=200, random_state=3)
    assert first.to_dict() == singling_out(independent, training, control, TYPES, n_attacks=200, random_state=3).to_dict()
    assert first.evidence != singling_out(independent, training, control, TYPES, n_attacks=200, random_state=4).evidence


def test_singling_out_refuses_bad_parameters():
    training, control, independent = groups(6, 50, 20, 50)
    with pytest.raises(ParameterError, match="mode"):
        singling_out(independent, training, control, TYPES, mode="bivariate")
    with pytest.raises(ParameterError, match="n_attacks"):
        singling_out(independent, training, control, TYPES, n_attacks=0)


# --------------------------------------------------------------------------- linkability and inference

SPLIT = (["age", "income", "sex"], ["city", "smoker", "birth"])


def test_linkability_of_a_copy_is_flagged_and_of_an_independent_sample_is_not():
    training, control, independent = groups(7)
    copy = linkability(training, training, control, TYPES, split=SPLIT, random_state=0)
    assert copy.main.share > 0.9 and copy.control.share < 0.05 and copy.risk.low > 0.8
    fresh = linkability(independent, training, control, TYPES, split=SPLIT, random_state=0)
    assert fresh.risk.low == 0.0 and fresh.risk.value < 0.05


def test_linkability_through_identical_rows_is_luck():
    training, control, _ = groups(8, 400, 100)
    same = pd.concat([training.iloc[[0]]] * 400, ignore_index=True)
    result = linkability(same, training, control, TYPES, split=SPLIT, random_state=0)
    assert result.main.share < 0.02  # ties are broken at random, not towards a link


def test_linkability_needs_two_disjoint_column_sets():
    training, control, independent = groups(9, 50, 20, 50)
    with pytest.raises(ParameterError, match="disjoint"):
        linkability(independent, training, control, TYPES, split=(["age", "city"], ["city"]))


@pytest.mark.parametrize("secret", ["smoker", "income", "city"])
def test_inference_of_a_copy_is_flagged_and_of_an_independent_sample_is_not(secret):
    training, control, _ = groups(10)
    copy = inference(training, training, control, TYPES, secret=secret, random_state=0)
    assert copy.main.share > 0.95 and copy.risk.value > 0.8
    # independent samples: risks scatter around 0 (one in 40 intervals misses 0 by chance on each side)
    risks = [inference(independent, training, control, TYPES, secret=secret, random_state=seed).risk
             for seed, (training, control, independent) in enumerate(groups(20 + s) for s in range(5))]
    assert abs(np.mean([r.raw for r in risks])) < 0.04
    assert all(r.low < 0.05 for r in risks)


def test_right_guesses_by_hand():
    frames = {"a": pd.DataFrame({"x": [100.0, 0.0, np.nan, 50.0],
                                 "d": pd.to_datetime(["2000-01-01", "2000-01-11", "2000-01-21", "2000-04-10"]),
                                 "c": ["u", "v", None, "u"]})}
    coded = code_frames(frames, {"x": "continuous", "d": "datetime", "c": "categorical"})
    x, d, c = (coded["a"][:, j] for j in range(3))
    # numbers: within 5 % of the truth; missing guessed missing is right, one-sided missing is wrong
    assert right_guesses(coded, 0, np.array([104.0, 0.0, np.nan, 53.0]), x, 0.05).tolist() == [True, True, True, False]
    assert right_guesses(coded, 0, np.array([106.0, 0.1, 1.0, np.nan]), x, 0.05).tolist() == [False, False, False, False]
    # numbers far from zero against their span: 5 % of the span (10 years: half a year), not of the value (a century)
    years = code_frames({"a": pd.DataFrame({"y": [1995.0, 2000.0, 2005.0]})}, {"y": "integer"})
    y = years["a"][:, 0]
    assert right_guesses(years, 0, y + np.array([0.5, -0.25, 0.75]), y, 0.05).tolist() == [True, True, False]
    # dates: within 5 % of the column's span (100 days): 5 days
    day = 86400.0
    assert right_guesses(coded, 1, d + np.array([4, -5, 6, 0]) * day, d, 0.05).tolist() == [True, True, False, True]
    assert right_guesses(coded, 2, c[[3, 1, 2, 1]], c, 0.05).tolist() == [True, True, True, False]
