"""Multi-table scenarios and summary matrices, on tiny databases worked out by hand."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from relanon.metrics.scenarios import evaluate
from relanon.multitable.pipeline import SensitiveChoiceWarning, anonymize
from relanon.multitable.results import AnonymizationResult, LinkReport, TableRelease
from relanon.multitable.views import views
from relanon.present.verdict import privacy_matrix_text
from relanon.schema.model import load_schema

SCHEMA = load_schema({"relanon": 1, "tables": {
    "patients": {"primary_key": "id", "individual": True, "columns": {"age": "continuous"}},
    "visits": {"primary_key": "id", "columns": {"cost": "continuous"},
               "foreign_keys": [{"column": "patient_id", "references": "patients"}]},
}})

ORIGINAL = {
    "patients": pd.DataFrame({"id": [1, 2, 3, 4], "age": [20.0, 30.0, 40.0, 50.0]}),
    "visits": pd.DataFrame({"id": [1, 2, 3, 4, 5, 6, 7, 8],
                            "patient_id": [1, 2, 3, 4, 4, 4, 4, 4],
                            "cost": [10.0, 20.0, 30.0, 40.0, 40.0, 40.0, 40.0, 40.0]}),
}
# the avatars of patients 1..4, in that order (pairing = identity), with new keys 11..14
ANONYMIZED = {
    "patients": pd.DataFrame({"id": [11, 12, 13, 14], "age": [31.0, 29.0, 41.0, 52.0]}),
    "visits": pd.DataFrame({"id": [1, 2, 3, 4, 5, 6, 7, 8],
                            "patient_id": [12, 11, 13, 14, 14, 14, 14, 12],
                            "cost": [10.0, 20.0, 30.0, 40.0, 40.0, 40.0, 40.0, 40.0]}),
}


def hand_made_result():
    releases = {
        "patients": TableRelease("patients", "avatar", ANONYMIZED["patients"], np.arange(4)),
        "visits": TableRelease("visits", "avatar", ANONYMIZED["visits"], np.arange(8)),
    }
    links = [LinkReport("patients", "visits", "patient_id", "linear_sum", 8, 8, 0.0)]
    return AnonymizationResult(ANONYMIZED, SCHEMA, links, [], ORIGINAL, releases)


def hidden_rate_by_hand(original: np.ndarray, avatars: np.ndarray) -> float:
    """Standardize on the originals (population std); an original with a strictly closer avatar is hidden,
    one with ``t`` avatars as close as its own (its own included) is found with probability 1 / t."""
    mean, std = original.mean(axis=0), original.std(axis=0)
    o, a = (original - mean) / std, (avatars - mean) / std
    d = np.linalg.norm(o[:, None, :] - a[None, :, :], axis=2)
    own = np.diag(d)
    closer = [(d[i] < own[i] - 1e-12).any() for i in range(len(o))]
    tied = [(np.abs(d[i] - own[i]) <= 1e-12).sum() for i in range(len(o))]
    return 100.0 * np.mean([1.0 if c else 1.0 - 1.0 / t for c, t in zip(closer, tied, strict=True)])


def test_enriched_views_are_built_from_each_side_own_links():
    original = {v.name: v for v in views(SCHEMA, ORIGINAL, "patients")}
    released = {v.name: v for v in views(SCHEMA, ANONYMIZED, "patients")}
    top = "TO_TOP_ENRICHED(patients, visits)"
    assert original[top].frame["visits.count"].tolist() == [1, 1, 1, 5]
    assert original[top].frame["visits.mean(cost)"].tolist() == [10.0, 20.0, 30.0, 40.0]
    assert released[top].frame["visits.count"].tolist() == [1, 2, 1, 4]
    assert released[top].frame["visits.mean(cost)"].tolist() == [20.0, 25.0, 30.0, 40.0]
    bottom = {v.name: v for v in views(SCHEMA, ANONYMIZED, "visits")}["TO_BOTTOM_PROPAGATED(visits, patients)"]
    assert bottom.frame["patients.age"].tolist() == [29.0, 31.0, 41.0, 52.0, 52.0, 52.0, 52.0, 29.0]


def test_hidden_rates_per_scenario_match_the_hand_computation():
    evaluation = evaluate(SCHEMA, ORIGINAL, ANONYMIZED, hand_made_result(), progress=False)
    hidden = evaluation.details["hidden_rate"].dropna().droplevel(["kind", "reference", "view"])
    # alone, in age only: 20 has the avatar 29 closer than its own 31 (hidden); 30 is as close to 29 as to
    # its own 31 (found half the time); 40 and 50 are closest to their own avatars: (1 + 1/2) / 4 hidden
    assert hidden[("patients", "STANDALONE")] == 37.5
    assert hidden_rate_by_hand(np.array([[20.0], [30.0], [40.0], [50.0]]),
                               np.array([[31.0], [29.0], [41.0], [52.0]])) == 37.5
    # with (age, visit count, mean visit cost) from each side's own links
    expected = hidden_rate_by_hand(
        np.array([[20, 1, 10], [30, 1, 20], [40, 1, 30], [50, 5, 40]], dtype=float),
        np.array([[31, 1, 20], [29, 2, 25], [41, 1, 30], [52, 4, 40]], dtype=float),
    )
    assert expected == 25.0  # only patient 2 is hidden now (by the avatar of patient 1)
    assert hidden[("patients", "TO_TOP_ENRICHED")] == expected


def test_summary_matrices_have_the_seed_shape():
    evaluation = evaluate(SCHEMA, ORIGINAL, ANONYMIZED, hand_made_result(), progress=False)
    matrix = evaluation.privacy_matrix
    assert list(matrix.index) == ["patients"] and list(matrix.columns) == ["patients", "visits"]
    assert matrix.loc["patients", "patients"] == 37.5 and matrix.loc["patients", "visits"] == 25.0
    assert evaluation.privacy_passed.loc["patients", "patients"] == False  # noqa: E712 - 37.5 % < 90 %
    signal = evaluation.signal_matrix
    assert list(signal.index) == list(signal.columns) == ["patients", "visits"]
    assert not np.isnan(signal.loc["patients", "visits"])  # TO_TOP_ENRICHED Hellinger
    assert not np.isnan(signal.loc["visits", "patients"])  # TO_BOTTOM_PROPAGATED correlations
    assert "patients" in privacy_matrix_text(evaluation) and "25.0!" in privacy_matrix_text(evaluation)


def test_relations_per_link():
    evaluation = evaluate(SCHEMA, ORIGINAL, ANONYMIZED, hand_made_result(), progress=False)
    row = evaluation.relations.iloc[0]
    assert row["referential_integrity"] == 100.0
    # children per parent: original [1, 1, 1, 5], anonymized [1, 2, 1, 4]; the empirical CDFs differ
    # most at 1 (0.75 vs 0.5) and at 4 (0.75 vs 1): KS statistic 0.25
    assert row["children_per_parent"] == pytest.approx(0.75)
    assert row["max_children_original"] == 5 and row["max_children_anonymized"] == 4
    broken = {name: frame.copy() for name, frame in ANONYMIZED.items()}
    broken["visits"].loc[0, "patient_id"] = 99
    worse = evaluate(SCHEMA, ORIGINAL, broken, progress=False).relations.iloc[0]
    assert worse["referential_integrity"] == 87.5 and not worse["passed"]


def test_without_the_run_the_pairing_metrics_are_left_out_and_said_so():
    evaluation = evaluate(SCHEMA, ORIGINAL, ANONYMIZED, progress=False)
    assert "hidden_rate" not in evaluation.details.columns
    assert "distance_to_closest" in evaluation.details.columns
    assert any("pairing" in note for note in evaluation.notes)
    assert evaluation.privacy_headline == "distance_to_closest"
    data = json.loads(evaluation.to_json())
    assert data["privacy_matrix"]["patients"]["patients"] == pytest.approx(evaluation.privacy_matrix.loc["patients", "patients"])


def test_three_tables_give_both_scenarios_to_the_middle_table():
    schema = load_schema({"relanon": 1, "tables": {
        "doctors": {"primary_key": "id", "individual": True, "columns": {"age": "continuous"}},
        "patients": {"primary_key": "id", "individual": True, "columns": {"age": "continuous"},
                     "foreign_keys": [{"column": "doctor_id", "references": "doctors"}]},
        "visits": {"primary_key": "id", "columns": {"cost": "continuous"},
                   "foreign_keys": [{"column": "patient_id", "references": "patients"}]},
    }})
    rng = np.random.default_rng(0)
    database = {
        "doctors": pd.DataFrame({"id": range(20), "age": rng.normal(50, 8, 20)}),
        "patients": pd.DataFrame({"id": range(100), "age": rng.normal(40, 15, 100), "doctor_id": rng.integers(0, 20, 100)}),
        "visits": pd.DataFrame({"id": range(300), "cost": rng.gamma(2, 30, 300), "patient_id": rng.integers(0, 100, 300)}),
    }
    evaluation = evaluate(schema, database, database, progress=False)
    names = set(evaluation.details.xs("privacy").index.get_level_values("view"))
    assert names == {
        "STANDALONE(doctors)", "TO_TOP_ENRICHED(doctors, patients)",
        "STANDALONE(patients)", "TO_TOP_ENRICHED(patients, visits)", "TO_BOTTOM_PROPAGATED(patients, doctors)",
    }
    assert evaluation.privacy_matrix.shape == (2, 3)
    assert np.isnan(evaluation.privacy_matrix.loc["doctors", "visits"])  # no scenario pairs them


def unique_visit_count_database(seed=0):
    """Patients with 0-4 visits, and one patient with a unique, very high number of visits."""
    rng = np.random.default_rng(seed)
    n = 400
    patients = pd.DataFrame({"id": np.arange(1, n + 1), "age": rng.integers(20, 80, n).astype(float),
                             "sex": rng.choice(["F", "M"], n)})
    counts = rng.integers(0, 5, n)
    counts[7] = 60
    visits = pd.DataFrame({"id": np.arange(1, counts.sum() + 1), "patient_id": np.repeat(patients["id"], counts),
                           "cost": rng.gamma(2, 40, counts.sum())})
    return patients, visits


@pytest.mark.parametrize("seed", [0, 1])
def test_original_order_is_less_private_across_links_than_minimum_distance(seed):
    patients, visits = unique_visit_count_database(seed)
    scores = {}
    for method in ("original_order", "minimum_distance"):
        schema = load_schema({"relanon": 1, "tables": {
            "patients": {"primary_key": "id", "individual": True,
                         "columns": {"age": "continuous", "sex": "categorical"}},
            "visits": {"primary_key": "id", "columns": {"cost": "continuous"},
                       "foreign_keys": [{"column": "patient_id", "references": "patients", "link": method}]},
        }})
        database = {"patients": patients, "visits": visits}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SensitiveChoiceWarning)
            result = anonymize(schema, database, random_state=seed, progress=False)
        evaluation = evaluate(schema, database, result.tables, result, progress=False)
        scores[method] = evaluation.privacy_matrix.loc["patients", "visits"]
        if method == "original_order":
            assert evaluation.sensitive_choices
            # the patient with 60 visits keeps them: her avatar is the only one with 60 visits
            released = result.tables["visits"]["patient_id"].value_counts()
            assert released.max() == 60
    assert scores["original_order"] < scores["minimum_distance"] - 5


def test_the_demo_evaluation_names_every_table(tiny_hospital_evaluation):
    evaluation = tiny_hospital_evaluation
    schema = evaluation.schema
    assert list(evaluation.privacy_matrix.index) == ["doctors", "patients"]
    assert list(evaluation.signal_matrix.index) == list(schema.tables)
    assert len(evaluation.relations) == 4 and (evaluation.relations["referential_integrity"] == 100).all()
    assert set(evaluation.relations["method"]) == {"linear_sum", "minimum_distance"}


# ---- tables and views too small to hold a distribution

ONE_COMPANY = load_schema({"relanon": 1, "tables": {
    "company": {"primary_key": "cid", "columns": {"name": "categorical"}, "anonymize": {"method": "keep"}},
    "staff": {"primary_key": "sid", "individual": True, "foreign_keys": [{"column": "cid", "references": "company"}],
              "columns": {"age": "continuous", "grade": "categorical"}},
}})


def _one_company(ages):
    return {"company": pd.DataFrame({"cid": [1], "name": ["acme"]}),
            "staff": pd.DataFrame({"sid": range(len(ages)), "cid": 1, "age": ages, "grade": ["a", "b"] * (len(ages) // 2)})}


def test_a_parent_of_one_row_enriched_with_its_children_is_not_applicable():
    from relanon.present.report import render_html
    from relanon.present.verdict import signal_matrix_text

    ages = np.arange(20, 60, 2.0)
    original, released = _one_company(ages), _one_company(ages + 0.5)
    evaluation = evaluate(ONE_COMPANY, original, released, progress=False)
    by_view = {(view, m.name): m for kind, view, m in evaluation.metrics if kind == "signal"}
    enriched = by_view[("TO_TOP_ENRICHED(company, staff)", "hellinger_mean")]
    # before: staff.mean(age) 40.0 vs 40.5 fell in disjoint one-value bins, a distance of 1.0, a mean of 0.25
    # over four columns, flagged above 0.1; one record carries no distribution
    assert np.isnan(enriched.value) and enriched.target is None and enriched.passed is None
    assert enriched.breakdown["per_column"] == {}
    assert "staff.mean(age)" in enriched.breakdown["not_applicable"]
    assert np.isnan(by_view[("STANDALONE(company)", "hellinger_mean")].value)
    assert by_view[("STANDALONE(staff)", "hellinger_mean")].target == 0.1  # twenty children are still measured
    assert evaluation.passed
    assert "fewer than 4 rows" in " ".join(evaluation.notes)
    text = signal_matrix_text(evaluation)
    assert text.splitlines()[2].split() == ["company", "n/a", "n/a"] and "n/a = not applicable" in text
    saved = json.loads(evaluation.to_json())
    entry = next(m for m in saved["metrics"] if m["view"] == "TO_TOP_ENRICHED(company, staff)")
    assert entry["target"] is None and entry["passed"] is None and "staff.mean(age)" in entry["breakdown"]["not_applicable"]
    assert '<td class="na" title="TO_TOP_ENRICHED(company, staff)">n/a</td>' in render_html(
        evaluation.without_data())


def test_a_table_of_one_row_says_its_privacy_is_not_computed():
    schema = load_schema({"relanon": 1, "tables": {"people": {
        "primary_key": "id", "individual": True, "columns": {"age": "continuous"}, "anonymize": {"method": "keep"}}}})
    one = {"people": pd.DataFrame({"id": [1], "age": [40.0]})}
    evaluation = evaluate(schema, one, one, progress=False)
    assert not [m for kind, _, m in evaluation.metrics if kind == "privacy"]
    assert any("people has 1 row: its privacy metrics need at least 2" in note for note in evaluation.notes)
    assert privacy_matrix_text(evaluation).splitlines()[-1].split() == ["people", "."]
