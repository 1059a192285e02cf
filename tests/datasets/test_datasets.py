"""The demo hospital database: valid, deterministic, realistic, and holding its rare cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relanon.common.errors import ParameterError
from relanon.datasets import (
    DRUGS,
    RARE_SPECIALTY,
    REASONS,
    REFERENCE_DATE,
    demo_sizes,
    hospital,
    hospital_schema,
)
from relanon.schema.validation import check_database

EXPECTED_DTYPES = {
    "hospitals": {"hospital_id": "int64", "name": "str", "city": "str", "region": "str", "beds": "int64",
                  "university": "bool"},
    "doctors": {"doctor_id": "int64", "hospital_id": "int64", "full_name": "str", "specialty": "str", "sex": "str",
                "age": "int64", "hire_date": "datetime64[ns]"},
    "patients": {"patient_id": "int64", "full_name": "str", "sex": "str", "age": "int64",
                 "birth_date": "datetime64[ns]", "zip_code": "int64", "bmi": "float64", "smoker": "bool",
                 "blood_type": "str"},
    "visits": {"visit_id": "int64", "patient_id": "int64", "doctor_id": "int64", "visit_date": "datetime64[ns]",
               "reason": "str", "cost": "float64", "duration_min": "int64", "emergency": "bool"},
    "prescriptions": {"prescription_id": "int64", "visit_id": "int64", "drug": "str", "dose_mg": "float64",
                      "refills": "int64"},
}  # fmt: skip


@pytest.fixture(scope="module")
def demo():
    return hospital(scale=1.0, seed=0)


def visits_per_patient(db) -> pd.Series:
    patients = db["patients"]
    counts = db["visits"].groupby("patient_id").size()
    return counts.reindex(patients["patient_id"], fill_value=0).set_axis(patients.index)


def class_sizes(frame: pd.DataFrame, columns) -> pd.Series:
    """Size of each row's class over ``columns`` (missing values as a class of their own)."""
    return frame.groupby(list(columns), dropna=False)[frame.columns[0]].transform("size")


def lone_rare_doctors(db, schema) -> pd.DataFrame:
    """Doctors of the rare specialty who are its only doctor in their hospital, with the
    size of their class over the doctors' and their hospital's quasi-identifiers."""
    hospital_qis = list(schema["hospitals"].quasi_identifiers)
    doctors = db["doctors"].merge(db["hospitals"][["hospital_id", *hospital_qis]], on="hospital_id", how="left")
    doctors["propagated_class"] = class_sizes(doctors, [*schema["doctors"].quasi_identifiers, *hospital_qis])
    rare = doctors[doctors["specialty"] == RARE_SPECIALTY]
    per_hospital = rare.groupby("hospital_id")["doctor_id"].transform("size")
    return rare[per_hospital == 1]


# --------------------------------------------------------------------------- schema


def test_schema_file_declares_the_links_methods_and_roles():
    schema = hospital_schema()
    assert list(schema.tables) == ["hospitals", "doctors", "patients", "visits", "prescriptions"]
    links = {(t.name, fk.column): (fk.references, fk.link) for t in schema for fk in t.foreign_keys}
    assert links == {
        ("doctors", "hospital_id"): ("hospitals", "linear_sum"),
        ("visits", "patient_id"): ("patients", "linear_sum"),
        ("visits", "doctor_id"): ("doctors", "minimum_distance"),
        ("prescriptions", "visit_id"): ("visits", "linear_sum"),
    }
    assert schema.seed is not None
    assert [t.name for t in schema if t.individual] == ["doctors", "patients"]
    assert schema["patients"].column("full_name").type == "drop"
    assert schema["hospitals"].column("name").type == "drop"
    assert schema["patients"].column("zip_code").type == "categorical"
    assert schema["patients"].quasi_identifiers and schema["doctors"].quasi_identifiers
    assert schema["hospitals"].quasi_identifiers
    assert all(t.anonymize.method == "avatar" and t.anonymize.k for t in schema)


# --------------------------------------------------------------------------- validity and dtypes


def test_demo_is_valid_against_its_schema(demo):
    schema, db = demo
    coerced = check_database(schema, db)  # raises DataError listing any problem
    assert {name: len(frame) for name, frame in coerced.items()} == {name: len(frame) for name, frame in db.items()}


def test_demo_dtypes_follow_the_in_memory_conventions(demo):
    _, db = demo
    assert list(db) == list(EXPECTED_DTYPES)
    for name, frame in db.items():
        assert frame.dtypes.astype(str).to_dict() == EXPECTED_DTYPES[name], name


def test_only_bmi_has_missing_values_about_ten_percent(demo):
    _, db = demo
    missing = {(t, c) for t, frame in db.items() for c in frame.columns if frame[c].isna().any()}
    assert missing == {("patients", "bmi")}
    assert 0.08 < db["patients"]["bmi"].isna().mean() < 0.12


def test_sizes_at_scale_one(demo):
    _, db = demo
    sizes = {name: len(frame) for name, frame in db.items()}
    assert sizes["hospitals"] == 20 and sizes["doctors"] == 200 and sizes["patients"] == 10_000
    assert 27_000 <= sizes["visits"] <= 33_000
    assert 45_000 <= sizes["prescriptions"] <= 55_000


@pytest.mark.slow  # 100,000 patients; the growth of each table: test_sizes_at_scale_one, test_tiny_scale_is_valid_...
def test_sizes_at_scale_ten():
    _, db = hospital(scale=10, seed=3)
    sizes = {name: len(frame) for name, frame in db.items()}
    assert sizes["patients"] == 100_000 and sizes["doctors"] == 2_000
    assert 20 < sizes["hospitals"] < 200  # grows more slowly than the rest
    assert 280_000 <= sizes["visits"] <= 320_000
    assert 450_000 <= sizes["prescriptions"] <= 550_000


def test_tiny_scale_is_valid_and_lowers_k():
    schema, db = hospital(scale=0.01, seed=0)
    check_database(schema, db)
    assert demo_sizes(0.01) == (3, 4, 100)
    for table in schema:
        assert 2 <= table.anonymize.k < len(db[table.name]), table.name
    assert schema["patients"].anonymize.k == hospital_schema()["patients"].anonymize.k


@pytest.mark.parametrize("scale", [0, -1, float("nan"), float("inf"), "1", True])
def test_bad_scale_is_refused(scale):
    with pytest.raises(ParameterError, match="scale"):
        hospital(scale=scale)


@pytest.mark.parametrize("seed", [-1, 1.5, "0", None])
def test_bad_seed_is_refused(seed):
    with pytest.raises(ParameterError, match="seed"):
        hospital(scale=0.01, seed=seed)


# --------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_tables_and_csv_bytes():
    _, first = hospital(scale=0.1, seed=7)
    np.random.seed(123)  # the global numpy state must play no part
    _, second = hospital(scale=0.1, seed=7)
    for name in first:
        pd.testing.assert_frame_equal(first[name], second[name])
        assert first[name].to_csv(index=False).encode() == second[name].to_csv(index=False).encode()


def test_another_seed_gives_other_data():
    _, first = hospital(scale=0.1, seed=7)
    _, other = hospital(scale=0.1, seed=8)
    for name in ("patients", "visits", "prescriptions"):
        assert not first[name].equals(other[name]), name


# --------------------------------------------------------------------------- keys and links


def test_keys_are_unique_and_every_foreign_key_points_to_a_parent(demo):
    schema, db = demo
    for table in schema:
        assert db[table.name][table.primary_key].is_unique
        for fk in table.foreign_keys:
            parent_keys = db[fk.references][schema[fk.references].primary_key]
            assert db[table.name][fk.column].isin(parent_keys).all(), (table.name, fk.column)


# --------------------------------------------------------------------------- realism


def test_birth_dates_agree_with_ages_at_the_reference_date(demo):
    _, db = demo
    reference = pd.Timestamp(REFERENCE_DATE)
    born = db["patients"]["birth_date"]
    had_birthday = (born.dt.month < reference.month) | (
        (born.dt.month == reference.month) & (born.dt.day <= reference.day)
    )
    age = reference.year - born.dt.year - (~had_birthday).astype(int)
    pd.testing.assert_series_equal(age.astype("int64"), db["patients"]["age"], check_names=False)
    assert born.lt(reference).all()


def test_correlations_the_metrics_will_look_for(demo):
    _, db = demo
    patients, visits = db["patients"], db["visits"]
    assert patients["age"].corr(patients["bmi"]) > 0.3
    assert visits["cost"].corr(visits["duration_min"]) > 0.7
    counts = visits_per_patient(db)
    assert counts[patients["smoker"]].mean() > 1.1 * counts[~patients["smoker"]].mean()
    children = patients["age"] < 15
    assert not patients.loc[children, "smoker"].any()


def test_drugs_follow_the_reason_and_reasons_the_specialty(demo):
    _, db = demo
    visits = db["visits"].merge(db["doctors"][["doctor_id", "specialty"]], on="doctor_id")
    expected_specialty = visits["reason"].map({r: spec[0] for r, spec in REASONS.items()})
    assert (visits["specialty"] == expected_specialty).all()
    pairs = db["prescriptions"].merge(db["visits"][["visit_id", "reason"]], on="visit_id")
    allowed = pd.DataFrame([(reason, drug) for reason, spec in REASONS.items() for drug in spec[5]],
                           columns=["reason", "drug"])  # fmt: skip
    assert (pairs.merge(allowed, how="left", indicator=True)["_merge"] == "both").all()
    assert set(db["prescriptions"]["drug"]) <= set(DRUGS)
    chronic = db["prescriptions"]["drug"].map({d: v[1] for d, v in DRUGS.items()})
    assert db["prescriptions"].loc[~chronic, "refills"].max() <= 1
    assert db["prescriptions"]["refills"].nunique() > 10  # an integer, not a handful of codes


def test_visit_dates_are_possible(demo):
    _, db = demo
    visits = db["visits"].merge(db["patients"][["patient_id", "birth_date", "sex"]], on="patient_id")
    visits = visits.merge(db["doctors"][["doctor_id", "hire_date"]], on="doctor_id")
    assert (visits["visit_date"] >= visits["birth_date"]).all()
    assert (visits["visit_date"] >= visits["hire_date"]).all()
    assert (visits["visit_date"] < pd.Timestamp(REFERENCE_DATE)).all()
    assert set(visits.loc[visits["reason"] == "prenatal care", "sex"]) == {"F"}
    assert db["visits"]["visit_date"].is_monotonic_increasing  # visit numbers follow the calendar


# --------------------------------------------------------------------------- rare cases and audit roles


def test_patients_are_5_anonymous_alone(demo):
    schema, db = demo
    assert class_sizes(db["patients"], schema["patients"].quasi_identifiers).min() >= 5


def test_the_high_visit_patient_is_unique_once_visits_are_counted(demo):
    schema, db = demo
    counts = visits_per_patient(db)
    top, runner_up = counts.sort_values(ascending=False).iloc[:2]
    assert top >= 2 * runner_up
    enriched = db["patients"].assign(n_visits=counts)
    sizes = class_sizes(enriched, [*schema["patients"].quasi_identifiers, "n_visits"])
    assert sizes[counts.idxmax()] == 1


def test_women_visit_more_than_men_on_average(demo):
    _, db = demo
    counts = visits_per_patient(db)
    by_sex = counts.groupby(db["patients"]["sex"]).mean()
    assert by_sex["F"] > 1.15 * by_sex["M"]


def test_doctors_are_5_anonymous_alone(demo):
    schema, db = demo
    assert class_sizes(db["doctors"], schema["doctors"].quasi_identifiers).min() >= 5


def test_a_hospital_with_a_single_rare_specialist_makes_them_unique(demo):
    schema, db = demo
    lone = lone_rare_doctors(db, schema)
    assert len(lone) >= 1
    assert (lone["propagated_class"] == 1).any()


@pytest.mark.parametrize("seed", range(5))
def test_rare_cases_survive_a_tiny_scale(seed):
    schema, db = hospital(scale=0.01, seed=seed)
    counts = visits_per_patient(db)
    top, runner_up = counts.sort_values(ascending=False).iloc[:2]
    assert top > runner_up
    by_sex = counts.groupby(db["patients"]["sex"]).mean()
    assert by_sex["F"] > by_sex["M"]
    assert (lone_rare_doctors(db, schema)["propagated_class"] == 1).any()


@pytest.mark.slow  # two more demos of 10,000 patients; other seeds at a tiny scale: test_rare_cases_survive_a_tiny_scale
@pytest.mark.parametrize("seed", [1, 2])
def test_audit_roles_hold_for_other_seeds(seed):
    schema, db = hospital(scale=1.0, seed=seed)
    assert class_sizes(db["patients"], schema["patients"].quasi_identifiers).min() >= 5
    assert class_sizes(db["doctors"], schema["doctors"].quasi_identifiers).min() >= 5
    counts = visits_per_patient(db)
    enriched = db["patients"].assign(n_visits=counts)
    assert class_sizes(enriched, [*schema["patients"].quasi_identifiers, "n_visits"])[counts.idxmax()] == 1
    assert (lone_rare_doctors(db, schema)["propagated_class"] == 1).any()
