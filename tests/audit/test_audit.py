"""Tests of relanon.audit: seed 001 rule by rule, seed 002's risk, l-diversity, views across links."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relanon.audit import (
    SIZE_COLUMN,
    AuditReport,
    audit_database,
    group_l_diversity,
    k_anonymity,
    l_diversity,
    reidentification_risk,
)
from relanon.common.errors import AuditError, DataError, ParameterError
from relanon.common.exact import exact_codes, uncomparable_reason
from relanon.present.audit import audit_dict, audit_text
from relanon.schema.model import load_schema

GOLDEN = Path(__file__).parents[1] / "golden" / "pycanon"


def seed_frame() -> pd.DataFrame:
    return pd.DataFrame({"age": [25, 25, 25, 32, 32, 40], "sex": ["F", "F", "F", "M", "M", "M"]})


def sizes(table, columns) -> list[int]:
    """Class sizes, sorted, through the public result."""
    dist = reidentification_risk(table, columns).class_sizes
    return sorted(np.repeat(dist["class_size"], dist["n_classes"]).tolist())


# --------------------------------------------------------------------------- seed 001, its examples


def test_seed_example_k2_is_violated_with_its_exact_summary():
    res = k_anonymity(seed_frame(), ["age", "sex"], k=2)
    assert res.summary == "k=2: VIOLATED (min class size=1; 1/3 classes below threshold)"
    assert res.satisfies is False
    assert (res.k, res.min_class_size, res.n_classes, res.n_violations) == (2, 1, 3, 1)
    expected = pd.DataFrame({"age": [40], "sex": ["M"], ".n": [1]})
    pd.testing.assert_frame_equal(res.violating_classes, expected)


def test_seed_example_k1_always_holds_and_default_k5_does_not():
    assert k_anonymity(seed_frame(), ["age", "sex"], k=1).satisfies is True
    default = k_anonymity(seed_frame(), ["age", "sex"])
    assert default.k == 5 and default.satisfies is False


def test_seed_example_single_quasi_identifier():
    assert k_anonymity(seed_frame(), "sex", k=3).min_class_size == 3


def test_satisfied_summary_and_empty_violations():
    res = k_anonymity(seed_frame(), "sex", k=3)
    assert res.summary == "k=3: SATISFIED (min class size=3; 0/2 classes below threshold)"
    assert res.violating_classes.empty
    assert list(res.violating_classes.columns) == ["sex", SIZE_COLUMN]


# --------------------------------------------------------------------------- seed 001, rule by rule


def test_missing_values_of_every_kind_are_one_class_and_counted():
    col = pd.Series([None, np.nan, pd.NA, pd.NaT, "x", "x"], dtype=object)
    res = k_anonymity(pd.DataFrame({"ward": col}), "ward", k=3)
    assert res.n_classes == 2
    assert sizes(pd.DataFrame({"ward": col}), "ward") == [2, 4]
    missing_row = res.violating_classes
    assert missing_row[SIZE_COLUMN].tolist() == [2] and missing_row["ward"].tolist() == ["x"]


def test_missing_class_must_meet_the_threshold_like_any_other():
    table = pd.DataFrame({"age": [30.0] * 5 + [np.nan]})
    res = k_anonymity(table, "age", k=2)
    assert not res.satisfies and res.min_class_size == 1
    assert res.violating_classes["age"].isna().all()


def test_nan_is_missing_in_a_float_column():
    table = pd.DataFrame({"x": [np.nan, float("nan"), None, 1.0]})
    assert sizes(table, "x") == [1, 3]


def test_class_sizes_sum_to_the_row_count_with_missing_values_in_several_columns():
    table = pd.DataFrame({"a": [1, None, 2, None, 1, 3], "b": ["u", "v", None, None, "u", None]})
    dist = reidentification_risk(table, ["a", "b"]).class_sizes
    assert dist["n_records"].sum() == len(table)


def test_numbers_compare_exactly_as_stored():
    table = pd.DataFrame({"x": [0.1 + 0.2, 0.3, -0.0, 0.0]})
    assert k_anonymity(table, "x", k=1).n_classes == 3
    assert sizes(table, "x") == [1, 1, 2]


def test_float32_compares_as_stored():
    table = pd.DataFrame({"x": np.array([0.1, 0.1, -0.0, 0.0], dtype=np.float32)})
    assert sizes(table, "x") == [2, 2]


def test_timestamps_a_microsecond_apart_are_two_classes():
    base = pd.Timestamp("2024-03-01 10:00:00")
    table = pd.DataFrame({"t": [base, base + pd.Timedelta(microseconds=1), base, pd.NaT]})
    assert sizes(table, "t") == [1, 1, 2]


def test_durations_and_periods_compare_exactly():
    durations = pd.DataFrame({"d": pd.to_timedelta([1, 1, 2, None], unit="ns")})
    assert sizes(durations, "d") == [1, 1, 2]
    periods = pd.DataFrame({"p": pd.PeriodIndex(["2024-01", "2024-01", "2024-02"], freq="M")})
    assert sizes(periods, "p") == [1, 2]


def test_timezone_aware_timestamps_compare_by_instant():
    utc = pd.Timestamp("2024-01-01 00:00", tz="UTC")
    paris = pd.Timestamp("2024-01-01 01:00", tz="Europe/Paris")
    mixed = pd.DataFrame({"t": pd.Series([utc, paris, utc + pd.Timedelta(hours=1)], dtype=object)})
    assert sizes(mixed, "t") == [1, 2]
    aware = pd.DataFrame({"t": pd.to_datetime(["2024-01-01 00:00", "2024-01-01 00:00"]).tz_localize("Asia/Tokyo")})
    assert sizes(aware, "t") == [2]


def test_integer_boolean_string_and_bytes_columns_compare_by_value():
    table = pd.DataFrame(
        {
            "i": pd.array([1, 1, None, 2], dtype="Int64"),
            "b": pd.array([True, True, None, False], dtype="boolean"),
            "s": pd.Series(["a", "a", None, "b"], dtype="string"),
            "raw": pd.Series([b"\x00", b"\x00", None, b"\x01"], dtype=object),
        }
    )
    for column in table:
        assert sizes(table, column) == [1, 1, 2], column
    assert sizes(table, list(table.columns)) == [1, 1, 2]


def test_categorical_compares_by_label_whatever_the_category_order():
    labels = ["b", "a", "b", None]
    plain = pd.DataFrame({"c": labels})
    categorical = pd.DataFrame({"c": pd.Categorical(labels, categories=["z", "b", "a"])})
    assert sizes(categorical, "c") == sizes(plain, "c") == [1, 1, 2]


def test_missing_categorical_level_is_missing_and_the_string_NA_is_a_value():
    table = pd.DataFrame({"c": pd.Categorical(["NA", "NA", None, np.nan])})
    res = k_anonymity(table, "c", k=1)
    assert res.n_classes == 2
    assert sizes(table, "c") == [2, 2]
    strings = pd.DataFrame({"c": ["NA", None, "NA"]})
    assert sizes(strings, "c") == [1, 2]


def test_complex_numbers_compare_by_both_parts():
    table = pd.DataFrame({"z": [1 + 2j, 1 + 2j, 1 + 3j, 2 + 2j, complex(0, 0), complex(-0.0, 0.0)]})
    assert sizes(table, "z") == [1, 1, 2, 2]


def test_mixed_kinds_that_cannot_be_confused_are_distinct_values():
    table = pd.DataFrame({"v": pd.Series(["a", 7, "a", 7.0, None], dtype=object)})
    assert sizes(table, "v") == [1, 2, 2]


@pytest.mark.parametrize(
    "values, words",
    [
        ([[1, 2], [1, 2]], "lists"),
        ([{"a": 1}, {"a": 1}], "dicts"),
        ([{1}, {2}], "sets"),
        ([1, "1"], "look alike"),
        ([True, 1], "look alike"),
        ([pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-01", tz="UTC")], "timezone"),
        ([object(), object()], "no exact comparison"),
    ],
)
def test_columns_that_cannot_be_compared_exactly_are_refused_with_their_name(values, words):
    table = pd.DataFrame({"ok": range(len(values)), "bad": pd.Series(values, dtype=object)})
    with pytest.raises(AuditError, match=r"column 'bad'") as info:
        k_anonymity(table, ["ok", "bad"], k=1)
    assert words in str(info.value)


def test_nested_arrow_values_are_refused():
    nested = pd.Series([[1], [2]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    with pytest.raises(AuditError, match="nested Arrow"):
        k_anonymity(pd.DataFrame({"n": nested}), "n", k=1)


def test_a_column_name_used_twice_is_refused():
    table = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(AuditError, match="more than once"):
        k_anonymity(table, "a", k=1)


def test_unknown_quasi_identifiers_list_the_available_columns():
    with pytest.raises(AuditError, match=r"'ZIP'.*available columns: age, sex"):
        k_anonymity(seed_frame(), ["age", "ZIP"], k=2)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "5", None])
def test_k_must_be_a_positive_integer(k):
    with pytest.raises(ParameterError, match="k must be an integer of at least 1"):
        k_anonymity(seed_frame(), "sex", k=k)


def test_numpy_integer_k_is_accepted():
    assert k_anonymity(seed_frame(), "sex", k=np.int64(3)).satisfies


def test_quasi_identifiers_must_be_given():
    with pytest.raises(ParameterError, match="at least one quasi-identifier"):
        k_anonymity(seed_frame(), [], k=2)


def test_the_input_table_is_not_modified():
    table = pd.DataFrame({"a": [1.0, np.nan, 1.0], "b": pd.Categorical(["x", None, "x"])})
    before = table.copy()
    k_anonymity(table, ["a", "b"], k=2)
    reidentification_risk(table, ["a", "b"])
    l_diversity(table, "a", "b", l=2)
    pd.testing.assert_frame_equal(table, before)


def test_violating_classes_keep_the_column_dtypes_and_come_smallest_first():
    table = pd.DataFrame({"d": pd.to_datetime(["2024-01-01"] * 3 + ["2024-01-02"] * 2 + ["2024-01-03"])})
    res = k_anonymity(table, "d", k=3)
    assert res.violating_classes["d"].dtype == table["d"].dtype
    assert res.violating_classes[SIZE_COLUMN].tolist() == [1, 2]


def test_an_empty_table_has_no_class_and_holds_vacuously():
    res = k_anonymity(seed_frame().iloc[:0], ["age", "sex"], k=5)
    assert (res.satisfies, res.min_class_size, res.n_classes) == (True, None, 0)
    assert reidentification_risk(seed_frame().iloc[:0], "age").max_risk == 0.0


def test_exact_codes_put_missing_last_and_sort_on_request():
    codes, n = exact_codes(pd.Series(["b", None, "a", "b"]), sort=True)
    assert codes.tolist() == [1, 2, 0, 1] and n == 3


def test_uncomparable_reason_is_none_for_ordinary_columns():
    for column in seed_frame().columns:
        assert uncomparable_reason(seed_frame()[column]) is None


# --------------------------------------------------------------------------- re-identification risk (seed 002)


def test_seed_002_example_max_and_average_risk():
    table = pd.DataFrame({"qi": ["a"] * 3 + ["b"] * 4 + ["c"] * 5})
    risk = reidentification_risk(table, "qi")
    assert risk.max_risk == pytest.approx(1 / 3)
    assert risk.average_risk == pytest.approx(0.25)
    assert risk.unique_share == 0.0
    assert risk.class_sizes.to_dict("list") == {"class_size": [3, 4, 5], "n_classes": [1, 1, 1], "n_records": [3, 4, 5]}


def test_unique_records_give_full_risk():
    table = pd.DataFrame({"qi": ["a", "b", "c", "c"]})
    risk = reidentification_risk(table, "qi")
    assert risk.max_risk == 1.0
    assert risk.unique_share == 0.5
    assert risk.average_risk == pytest.approx((1 + 1 + 0.5 + 0.5) / 4)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["F", "M", None]), st.one_of(st.none(), st.integers(0, 3))),
        min_size=1,
        max_size=40,
    )
)
def test_risk_matches_an_independent_count_per_record(rows):
    table = pd.DataFrame(rows, columns=["sex", "band"]).astype({"band": "Int64"})
    per_record = table.groupby(["sex", "band"], dropna=False)["sex"].transform("size")
    risk = reidentification_risk(table, ["sex", "band"])
    assert risk.average_risk == pytest.approx((1 / per_record).mean())
    assert risk.max_risk == pytest.approx(1 / per_record.min())
    assert risk.unique_share == pytest.approx((per_record == 1).mean())
    assert k_anonymity(table, ["sex", "band"], k=2).min_class_size == per_record.min()


# --------------------------------------------------------------------------- pycanon golden answers


def golden_cases():
    return json.loads((GOLDEN / "answers.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: f"{c['table']}:{'+'.join(c['quasi_identifiers'])}")
def test_pycanon_agrees_on_min_class_size_and_average_risk(case):
    table = pd.read_csv(GOLDEN / case["table"])
    qis = case["quasi_identifiers"]
    ka = k_anonymity(table, qis, k=5)
    risk = reidentification_risk(table, qis)
    assert ka.min_class_size == case["k_anonymity"] == case["min_ec"]
    assert ka.n_classes == case["n_ec"]
    assert risk.max_risk == pytest.approx(case["max_rir"], rel=1e-12)
    # average risk over records = 1 / mean class size (pycanon's sizes_ec)
    assert risk.average_risk == pytest.approx(1 / case["mean_ec"], rel=1e-12)
    # pycanon's average_rir is the mean over *classes* of 1/size, a different quantity than seed 002's
    dist = risk.class_sizes
    per_class = (dist["n_classes"] / dist["class_size"]).sum() / dist["n_classes"].sum()
    assert per_class == pytest.approx(case["average_rir"], rel=1e-12)
    assert l_diversity(table, qis, case["sensitive"]).distinct_l == case["l_diversity"]


# --------------------------------------------------------------------------- l-diversity (seed 000)


def test_seed_000_group_of_three_is_distinct_but_not_frequency_2_diverse():
    table = pd.DataFrame({"g": [1, 1, 1], "religion": ["none", "none", "muslim"]})
    res = l_diversity(table, "g", "religion", l=2)
    assert res.satisfies_distinct and not res.satisfies
    assert res.max_share == pytest.approx(2 / 3)
    assert res.frequency_l == 1 and res.distinct_l == 2
    row = res.violating_classes.iloc[0]
    assert (row[".top"], row[".top_n"], row[".n"], row[".distinct"]) == ("none", 2, 3, 2)


def test_frequency_l_is_the_largest_l_that_holds():
    table = pd.DataFrame({"g": [1] * 6 + [2] * 3, "s": list("aabbcc") + list("xyz")})
    res = l_diversity(table, "g", "s", l=3)
    assert res.satisfies and res.frequency_l == 3 and res.distinct_l == 3
    assert not l_diversity(table, "g", "s", l=4).satisfies


def test_missing_sensitive_values_are_a_value_of_their_own():
    table = pd.DataFrame({"g": [1, 1, 1, 1], "s": [None, np.nan, "a", "b"]})
    res = l_diversity(table, "g", "s", l=2)
    assert res.distinct_l == 3 and res.satisfies  # missing twice = 2/4 = 1/2
    assert not l_diversity(table, "g", "s", l=3).satisfies


def test_worst_classes_come_first():
    table = pd.DataFrame({"g": [1, 1, 2, 2, 2, 3, 3], "s": ["a", "a", "a", "a", "b", "a", "b"]})
    res = l_diversity(table, "g", "s", l=2)
    assert res.violating_classes["g"].tolist() == [1, 2]
    assert res.violating_classes[".top_share"].tolist() == pytest.approx([1.0, 2 / 3])


def test_group_l_diversity_from_counts_matches_the_rows():
    rows = pd.DataFrame({"group_id": [1, 1, 1, 2, 2, 3, 3, 3, 3], "s": list("aab") + list("ab") + list("abcc")})
    counts = rows.groupby(["group_id", "s"]).size().rename("count").reset_index()
    from_counts = group_l_diversity(counts, "s", l=2)
    from_rows = l_diversity(rows, "group_id", "s", l=2)
    for attribute in ("satisfies", "satisfies_distinct", "distinct_l", "frequency_l", "max_share", "n_violations"):
        assert getattr(from_counts, attribute) == getattr(from_rows, attribute), attribute


def test_group_l_diversity_refuses_bad_counts():
    counts = pd.DataFrame({"group_id": [1, 1], "s": ["a", "b"], "count": [1, 0]})
    with pytest.raises(AuditError, match="positive whole counts"):
        group_l_diversity(counts, "s", l=2)


def test_sensitive_column_cannot_be_a_quasi_identifier():
    with pytest.raises(AuditError, match="both a quasi-identifier and the sensitive"):
        l_diversity(seed_frame(), ["age", "sex"], "sex")


# --------------------------------------------------------------------------- the database audit and its views

CLINIC = {
    "relanon": 1,
    "tables": {
        "hospitals": {"primary_key": "hospital_id", "columns": {"region": "categorical"}, "quasi_identifiers": ["region"]},
        "patients": {
            "primary_key": "patient_id",
            "individual": True,
            "foreign_keys": [{"column": "hospital_id", "references": "hospitals"}],
            "columns": {"sex": "categorical", "diagnosis": "categorical"},
            "quasi_identifiers": ["sex"],
            "sensitive": ["diagnosis"],
        },
        "visits": {
            "primary_key": "visit_id",
            "foreign_keys": [{"column": "patient_id", "references": "patients"}],
            "columns": {"reason": "categorical", "cost": "continuous"},
            "quasi_identifiers": ["reason", "cost"],
        },
    },
}


def clinic():
    hospitals = pd.DataFrame({"hospital_id": [10, 20], "region": ["north", "south"]})
    patients = pd.DataFrame(
        {
            "patient_id": [1, 2, 3, 4, 5, 6],
            "hospital_id": pd.array([10, 10, 10, 20, 20, None], dtype="Int64"),
            "sex": ["F", "F", "F", "M", "M", "M"],
            "diagnosis": ["flu", "flu", "cold", "flu", "cold", "cold"],
        }
    )
    # patient 1 has 3 visits, 2-5 one each, 6 none
    visits = pd.DataFrame(
        {
            "visit_id": range(100, 107),
            "patient_id": [1, 1, 1, 2, 3, 4, 5],
            "reason": ["b", "a", "b", "a", "a", "a", "b"],
            "cost": [10.0, 30.0, 20.0, 5.0, 5.0, 5.0, 7.0],
        }
    )
    return load_schema(CLINIC), {"hospitals": hospitals, "patients": patients, "visits": visits}


def view(report: AuditReport, name: str):
    return next(v for v in report.views if v.name == name)


def test_audit_names_every_view_like_the_metric_scenarios():
    schema, db = clinic()
    report = audit_database(schema, db, k=2)
    assert [v.name for v in report.views] == [
        "STANDALONE(hospitals)",
        "STANDALONE(patients)",
        "TO_TOP_ENRICHED(patients, visits)",
        "TO_BOTTOM_PROPAGATED(patients, hospitals)",
        "STANDALONE(visits)",  # visits declares quasi-identifiers: audited alone, not individual: no views
    ]


def test_to_top_enriched_adds_child_count_and_aggregates_of_child_quasi_identifiers():
    schema, db = clinic()
    enriched = view(audit_database(schema, db, k=2), "TO_TOP_ENRICHED(patients, visits)")
    assert enriched.quasi_identifiers == ("sex", "visits.count", "visits.mode(reason)", "visits.median(cost)")
    assert not enriched.k_anonymity.satisfies
    keys = enriched.k_anonymity.violating_classes
    # patient 1 (3 visits, mode b after a tie-free count, median 20) and patient 6 (no visit) are alone
    first = keys[keys["visits.count"] == 3].iloc[0]
    assert (first["sex"], first["visits.mode(reason)"], first["visits.median(cost)"]) == ("F", "b", 20.0)
    none = keys[keys["visits.count"] == 0].iloc[0]
    assert pd.isna(none["visits.mode(reason)"]) and pd.isna(none["visits.median(cost)"])


def test_a_person_not_unique_alone_becomes_unique_with_their_children():
    schema, db = clinic()
    report = audit_database(schema, db, k=3)
    assert view(report, "STANDALONE(patients)").k_anonymity.satisfies
    enriched = view(report, "TO_TOP_ENRICHED(patients, visits)")
    assert enriched.k_anonymity.min_class_size == 1
    assert enriched.risk.max_risk == 1.0


def test_mode_ties_go_to_the_smallest_value_whatever_the_row_order():
    schema, db = clinic()
    shuffled = dict(db, visits=db["visits"].iloc[::-1].reset_index(drop=True))
    first = view(audit_database(schema, db, k=2), "TO_TOP_ENRICHED(patients, visits)").k_anonymity.violating_classes
    second = view(audit_database(schema, shuffled, k=2), "TO_TOP_ENRICHED(patients, visits)").k_anonymity.violating_classes
    key = ["sex", "visits.count"]
    pd.testing.assert_frame_equal(first.sort_values(key).reset_index(drop=True), second.sort_values(key).reset_index(drop=True))


def test_to_bottom_propagated_adds_parent_quasi_identifiers_and_missing_for_no_parent():
    schema, db = clinic()
    propagated = view(audit_database(schema, db, k=2), "TO_BOTTOM_PROPAGATED(patients, hospitals)")
    assert propagated.quasi_identifiers == ("sex", "hospitals.region")
    keys = propagated.k_anonymity.violating_classes
    assert keys["hospitals.region"].isna().sum() == 1  # patient 6 without a hospital is a class of its own
    assert propagated.k_anonymity.n_classes == 3


def test_two_links_to_the_same_parent_give_two_views_named_with_the_column():
    schema = load_schema(
        {
            "relanon": 1,
            "tables": {
                "accounts": {"primary_key": "id", "columns": {"bank": "categorical"}, "quasi_identifiers": ["bank"]},
                "transfers": {
                    "primary_key": "id",
                    "individual": True,
                    "foreign_keys": [
                        {"column": "from_account", "references": "accounts"},
                        {"column": "to_account", "references": "accounts"},
                    ],
                    "columns": {"amount": "continuous"},
                    "quasi_identifiers": ["amount"],
                },
            },
        }
    )
    db = {
        "accounts": pd.DataFrame({"id": [1, 2], "bank": ["x", "y"]}),
        "transfers": pd.DataFrame({"id": [1, 2, 3], "from_account": [1, 1, 2], "to_account": [2, 2, 1], "amount": [5.0, 5.0, 5.0]}),
    }
    report = audit_database(schema, db, k=2)
    names = [v.name for v in report.views]
    assert "TO_BOTTOM_PROPAGATED(transfers, accounts via from_account)" in names
    assert "TO_BOTTOM_PROPAGATED(transfers, accounts via to_account)" in names
    via_from = view(report, "TO_BOTTOM_PROPAGATED(transfers, accounts via from_account)")
    assert via_from.quasi_identifiers == ("amount", "accounts[from_account].bank")
    assert via_from.k_anonymity.min_class_size == 1


def test_l_diversity_is_reported_per_sensitive_column_and_gates_only_when_asked():
    schema, db = clinic()
    lax = audit_database(schema, db, k=1)
    standalone = view(lax, "STANDALONE(patients)")
    assert standalone.l_diversity["diagnosis"].frequency_l == 1  # F: flu twice out of 3
    assert lax.passed
    strict = audit_database(schema, db, k=1, l=2)
    assert not strict.passed
    assert any("diagnosis" in reason for reason in strict.failures["STANDALONE(patients)"])


def test_max_risk_threshold_gates_the_report():
    schema, db = clinic()
    assert audit_database(schema, db, k=1).passed
    report = audit_database(schema, db, k=1, max_risk=0.5)
    assert not report.passed
    assert "max risk=100.00% above 50.00%" in report.failures["TO_TOP_ENRICHED(patients, visits)"]


def test_report_to_dict_is_json_ready_and_to_text_is_readable():
    schema, db = clinic()
    db["visits"]["cost"] = [10.0, 30.0, 20.0, 5.0, 5.0, np.nan, 7.0]
    report = audit_database(schema, db, k=2, l=2, max_risk=0.5)
    data = json.loads(json.dumps(audit_dict(report)))
    assert data["passed"] is False and data["thresholds"] == {"k": 2, "l": 2, "max_risk": 0.5}
    enriched = next(v for v in data["views"] if v["view"] == "TO_TOP_ENRICHED(patients, visits)")
    assert enriched["k_anonymity"]["min_class_size"] == 1
    assert {"sex": "M", "visits.count": 0, "visits.mode(reason)": None, "visits.median(cost)": None, ".n": 1} in enriched["k_anonymity"]["violating_classes"]
    text = audit_text(report)
    assert "TO_TOP_ENRICHED(patients, visits)" in text and "FAILED" in text
    assert text.rstrip().endswith("Result: FAILED (3 of 5 views fail)")  # 2 views of a non-individual table: info


def test_missing_tables_and_columns_are_all_reported():
    schema, db = clinic()
    broken = {"patients": db["patients"].drop(columns=["sex"]), "visits": db["visits"]}
    with pytest.raises(DataError) as info:
        audit_database(schema, broken, k=2)
    text = str(info.value)
    assert "hospitals" in text and "patients.sex" in text


@pytest.mark.parametrize("kwargs", [{"k": 0}, {"l": 0}, {"max_risk": 1.5}, {"max_risk": 0}])
def test_audit_parameters_are_checked(kwargs):
    schema, db = clinic()
    with pytest.raises(ParameterError):
        audit_database(schema, db, **kwargs)


def test_the_database_is_not_modified():
    schema, db = clinic()
    before = {name: frame.copy() for name, frame in db.items()}
    audit_database(schema, db, k=2, l=2)
    for name, frame in db.items():
        pd.testing.assert_frame_equal(frame, before[name])


def anatomized_schema():
    return load_schema(
        {
            "relanon": 1,
            "tables": {
                "people": {
                    "primary_key": "id",
                    "individual": True,
                    "columns": {"sex": "categorical", "religion": "categorical"},
                    "quasi_identifiers": ["sex"],
                    "anonymize": {"method": "anatomize", "sensitive": "religion", "l": 2},
                }
            },
        }
    )


def test_an_anatomized_release_is_checked_per_group_from_its_counts():
    from relanon.engine.deassociate import anatomize

    people = pd.DataFrame({"id": range(8), "sex": list("FFFFMMMM"), "religion": list("aabbccdd")})
    result = anatomize(people, "religion", l=2, key="id", random_state=0)
    release = {"people": result.qi_table, "people_sensitive": result.sensitive_table}
    report = audit_database(anatomized_schema(), release, k=2, l=2)
    standalone = view(report, "STANDALONE(people)")
    assert standalone.l_diversity["religion"].quasi_identifiers == ("group_id",)
    assert standalone.l_diversity["religion"].satisfies and report.passed
    # the same schema audits the original table by quasi-identifier class
    original = audit_database(anatomized_schema(), {"people": people}, k=2, l=2)
    assert view(original, "STANDALONE(people)").l_diversity["religion"].quasi_identifiers == ("sex",)


def test_an_inconsistent_anatomized_release_is_refused():
    people = pd.DataFrame({"id": [1, 2], "group_id": [1, 1], "sex": ["F", "M"]})
    counts = pd.DataFrame({"group_id": [1, 1], "religion": ["a", "b"], "count": [1, 2]})
    with pytest.raises(DataError, match="inconsistent"):
        audit_database(anatomized_schema(), {"people": people, "people_sensitive": counts}, k=1)


# --------------------------------------------------------------------------- the demo database


@pytest.fixture(scope="module")
def demo():
    datasets = pytest.importorskip("relanon.datasets")
    return datasets.hospital(scale=1.0, seed=0)


@pytest.mark.slow  # the property on a small database: test_a_person_not_unique_alone_becomes_unique_with_their_children
def test_demo_audit_reports_the_patient_with_a_unique_visit_count(demo):
    schema, db = demo
    report = audit_database(schema, db, k=5)
    assert view(report, "STANDALONE(patients)").k_anonymity.satisfies
    enriched = view(report, "TO_TOP_ENRICHED(patients, visits)")
    assert not enriched.k_anonymity.satisfies
    visit_counts = db["visits"]["patient_id"].value_counts()
    frequent = db["patients"].set_index("patient_id").loc[visit_counts.idxmax()]
    keys = enriched.k_anonymity.violating_classes
    alone = keys[(keys["visits.count"] == visit_counts.max()) & (keys["sex"] == frequent["sex"]) & (keys["blood_type"] == frequent["blood_type"])]
    assert alone[SIZE_COLUMN].tolist() == [1]
    assert "TO_TOP_ENRICHED(patients, visits)" in report.failures


@pytest.mark.slow  # the gate on a small database: test_relanon_audit_command_passes_when_thresholds_hold, test_outputs
def test_relanon_audit_command_gates_a_release_on_the_demo(demo, tmp_path, capsys):
    cli = pytest.importorskip("relanon.cli")
    io = pytest.importorskip("relanon.stores.io")
    from relanon.schema.model import dump_schema

    schema, db = demo
    schema_path = tmp_path / "hospital.yaml"
    dump_schema(schema, schema_path)
    data = io.write_database(db, tmp_path / "data", schema)
    out = tmp_path / "audit.json"
    code = cli.main(["audit", str(schema_path), "--data", str(data), "--k", "5", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 1
    assert "TO_TOP_ENRICHED(patients, visits)" in printed
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["passed"] is False
    enriched = next(v for v in written["views"] if v["view"] == "TO_TOP_ENRICHED(patients, visits)")
    assert enriched["passed"] is False


def test_relanon_audit_command_passes_when_thresholds_hold(tmp_path, capsys):
    cli = pytest.importorskip("relanon.cli")
    io = pytest.importorskip("relanon.stores.io")
    from relanon.schema.model import dump_schema

    schema = load_schema({"relanon": 1, "tables": {"people": {"primary_key": "id", "individual": True, "columns": {"sex": "categorical"}, "quasi_identifiers": ["sex"]}}})
    people = pd.DataFrame({"id": range(10), "sex": ["F", "M"] * 5})
    dump_schema(schema, tmp_path / "s.yaml")
    data = io.write_database({"people": people}, tmp_path / "data", schema)
    code = cli.main(["audit", str(tmp_path / "s.yaml"), "--data", str(data), "--k", "5", "--max-risk", "0.2"])
    assert code == 0
    assert "Result: PASSED" in capsys.readouterr().out


# --------------------------------------------------------------------------- scale


def test_a_large_table_is_audited_by_group_by_not_row_loops():
    rng = np.random.default_rng(0)
    n = 200_000
    table = pd.DataFrame(
        {
            "a": rng.integers(0, 90, n),
            "b": rng.choice(["F", "M"], n),
            "c": rng.normal(size=n).round(1),
            "d": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 30, n), unit="D"),
        }
    )
    res = k_anonymity(table, ["a", "b", "c", "d"], k=5)
    assert res.n_classes == table.drop_duplicates().shape[0]
    assert res.n_records == n
    assert datetime.date(2020, 1, 1) <= res.violating_classes["d"].min().date()


def test_an_anatomized_table_without_its_sensitive_table_is_explained():
    people = pd.DataFrame({"id": [1, 2], "group_id": [1, 1], "sex": ["F", "M"]})
    with pytest.raises(DataError, match="'people_sensitive': include that table"):
        audit_database(anatomized_schema(), {"people": people}, k=1)


def test_a_table_that_is_not_individual_is_audited_for_information_only():
    schema = load_schema({"relanon": 1, "tables": {
        "sites": {"primary_key": "id", "columns": {"region": "categorical"}, "quasi_identifiers": ["region"]},
        "people": {"primary_key": "id", "individual": True, "columns": {"sex": "categorical"},
                   "quasi_identifiers": ["sex"]},
    }})
    db = {"sites": pd.DataFrame({"id": [1, 2], "region": ["north", "south"]}),
          "people": pd.DataFrame({"id": range(4), "sex": ["F", "F", "M", "M"]})}
    report = audit_database(schema, db, k=2)
    assert report.passed and report.failures == {}
    assert "info" in audit_text(report) and "Result: PASSED" in audit_text(report)
    sites = next(v for v in audit_dict(report)["views"] if v["table"] == "sites")
    assert sites["gating"] is False and sites["passed"] is False


def test_an_audit_of_no_individual_table_audits_nothing_and_does_not_pass(tmp_path, capsys):
    cli = pytest.importorskip("relanon.cli")
    io = pytest.importorskip("relanon.stores.io")
    from relanon.schema.model import dump_schema

    schema = load_schema({"relanon": 1, "tables": {
        "sites": {"primary_key": "id", "columns": {"region": "categorical"}, "quasi_identifiers": ["region"]},
        "flights": {"primary_key": "id", "columns": {"delay": "integer"}},
    }})
    db = {"sites": pd.DataFrame({"id": range(10), "region": ["north", "south"] * 5}),
          "flights": pd.DataFrame({"id": range(4), "delay": [1, 2, 3, 4]})}
    report = audit_database(schema, db, k=2)
    assert not report.audited and not report.passed and report.failures == {}
    assert "no table is individual" in report.not_audited
    assert "Result: NOTHING AUDITED: no table is individual" in audit_text(report)
    assert "PASSED" not in audit_text(report)
    assert audit_dict(report)["audited"] is False and audit_dict(report)["passed"] is False
    dump_schema(schema, tmp_path / "s.yaml")
    data = io.write_database(db, tmp_path / "data", schema)
    assert cli.main(["audit", str(tmp_path / "s.yaml"), "--data", str(data), "--k", "2"]) == 1
    assert "NOTHING AUDITED" in capsys.readouterr().out


def test_an_audit_of_individual_tables_without_quasi_identifiers_audits_nothing():
    schema = load_schema({"relanon": 1, "tables": {
        "people": {"primary_key": "id", "individual": True, "columns": {"sex": "categorical"}}}})
    report = audit_database(schema, {"people": pd.DataFrame({"id": range(4), "sex": ["F", "M"] * 2})}, k=2)
    assert report.views == () and not report.passed
    assert "the individual tables (people) declare no quasi_identifiers" in audit_text(report)
