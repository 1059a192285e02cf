"""Shared fixtures: a small clinic database covering every column type, and its schema; the hospital demo and the
careers database at a tenth of their size and their releases; the hospital demo at 5 % of its size, its release and
its evaluation: made once per session."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings
from retail_database import retail_tables, write_retail_csv, write_retail_sqlite

from relanon import datasets
from relanon.metrics.scenarios import evaluate
from relanon.multitable.pipeline import SensitiveChoiceWarning, anonymize
from relanon.schema.model import load_schema

# Property tests draw their examples from a fixed seed: the same suite, the same examples, on every
# machine (an example found by chance once made the suite red; it is now a unit case).
settings.register_profile("relanon", derandomize=True)
settings.load_profile("relanon")

# scripts that produced the golden files, run once in their own environment (they import pycanon)
collect_ignore = ["golden"]

CLINIC_SCHEMA = {
    "relanon": 1,
    "name": "clinic",
    "tables": {
        "doctors": {
            "primary_key": "doctor_id",
            "individual": True,
            "columns": {"specialty": "categorical", "hired": "datetime", "senior": "boolean"},
        },
        "patients": {
            "primary_key": "patient_id",
            "individual": True,
            "columns": {
                "age": "integer",
                "bmi": "continuous",
                "smoker": "boolean",
                "born": "datetime",
                "zip": "categorical",
                "blood": "categorical",
                "name": "drop",
            },
        },
        "visits": {
            "primary_key": "visit_id",
            "foreign_keys": [
                {"column": "patient_id", "references": "patients"},
                {"column": "doctor_id", "references": "doctors", "link": "minimum_distance"},
            ],
            "columns": {"at": "datetime", "cost": "continuous", "severity": "categorical", "urgent": "boolean"},
        },
    },
}


@pytest.fixture(scope="session")
def retail(tmp_path_factory):
    """The retail database of ``tests/retail_database.py``, once per session: (tables, SQLite file declaring its keys, folder of CSV files without keys)."""
    folder = tmp_path_factory.mktemp("retail")
    tables = retail_tables()
    return tables, write_retail_sqlite(folder / "retail.sqlite", tables), write_retail_csv(folder / "csv", tables)


@pytest.fixture(scope="session")
def small_hospital():
    """The hospital demo at a tenth of its size (1,000 patients), made once per session: never modify it."""
    return datasets.hospital(scale=0.1, seed=0)


@pytest.fixture(scope="session")
def small_hospital_release(small_hospital):
    """:func:`small_hospital` anonymized with seed 5, once per session: never modify it."""
    return _released(small_hospital, seed=5, silenced=SensitiveChoiceWarning)


@pytest.fixture(scope="session")
def tiny_hospital():
    """The hospital demo at 5 % of its size (500 patients, seed 0), made once per session: never modify it."""
    return datasets.hospital(scale=0.05, seed=0)


@pytest.fixture(scope="session")
def tiny_hospital_release(tiny_hospital):
    """:func:`tiny_hospital` anonymized with seed 0, once per session: never modify it."""
    return _released(tiny_hospital, seed=0, silenced=Warning)


def _released(hospital, *, seed: int, silenced: type[Warning]):
    """A session's hospital demo anonymized with ``seed``, the warnings of category ``silenced`` unshown."""
    schema, database = hospital
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", silenced)
        return anonymize(schema, database, random_state=seed, progress=False)


@pytest.fixture(scope="session")
def tiny_hospital_evaluation(tiny_hospital, tiny_hospital_release):
    """:func:`tiny_hospital_release` evaluated with its links paired, as ``relanon anonymize`` does, once per
    session: never modify it."""
    schema, database = tiny_hospital
    return evaluate(schema, database, tiny_hospital_release.tables, tiny_hospital_release, progress=False)


@pytest.fixture(scope="session")
def small_careers():
    """The careers database at a tenth of its size (scale 0.1, seed 0), made once per session: never modify it."""
    return datasets.careers(scale=0.1, seed=0)


@pytest.fixture(scope="session")
def small_careers_release(small_careers):
    """:func:`small_careers` anonymized with seed 0 (its two links anchored), once per session: never modify it."""
    schema, database = small_careers
    return anonymize(schema, database, random_state=0, progress=False)


@pytest.fixture
def clinic_schema():
    """Three tables: doctors and patients (individuals), visits referring to both."""
    return load_schema(CLINIC_SCHEMA)


@pytest.fixture
def clinic_database():
    """A database with the dtypes a checked database has (see relanon.schema.validation).

    Holds missing values in every nullable type, an aware datetime, codes with leading zeros,
    the literal category ``"NA"``, an integer-coded category and a nullable foreign key.
    """
    doctors = pd.DataFrame(
        {
            "doctor_id": pd.Series(["D1", "D2", "D3"], dtype="str"),
            "specialty": pd.Series(["cardiology", "NA", "oncology"], dtype="str"),
            "hired": _dates(["2010-03-01 08:30", "2015-11-20 14:00", "2020-01-06 09:15:30"], tz="UTC"),
            "senior": np.array([True, False, True]),
        }
    )
    patients = pd.DataFrame(
        {
            "patient_id": np.array([10, 11, 12, 13], dtype="int64"),
            "age": pd.array([34, None, 71, 5], dtype="Int64"),
            "bmi": np.array([22.5, np.nan, 31.25, 1 / 3]),
            "smoker": pd.array([True, False, None, False], dtype="boolean"),
            "born": _dates(["1990-05-17", "1985-12-31", None, "2019-02-28"]),
            "zip": pd.Series(["01234", "75001", None, "13008"], dtype="str"),
            "blood": pd.Series(["A+", "O-", "AB+", None], dtype="str"),
            "name": pd.Series(["Ann", "Bob", "Cid", "Dee"], dtype="str"),
        }
    )
    visits = pd.DataFrame(
        {
            "visit_id": np.array([100, 101, 102, 103, 104], dtype="int64"),
            "patient_id": np.array([10, 10, 11, 13, 12], dtype="int64"),
            "doctor_id": pd.Series(["D1", "D2", None, "D1", "D3"], dtype="str"),
            "at": _dates(
                ["2021-01-04 09:00", "2021-02-11 16:45:10.25", "2021-03-01 00:00", None, "2022-07-14 23:59:59"]
            ),
            "cost": np.array([120.0, 80.5, np.inf, 0.1, np.nan]),
            "severity": pd.array([1, 3, None, 2, 1], dtype="Int64"),
            "urgent": np.array([False, True, False, False, True]),
        }
    )
    return {"doctors": doctors, "patients": patients, "visits": visits}


def _dates(texts, tz=None) -> pd.Series:
    return pd.Series(pd.to_datetime(texts, format="ISO8601")).dt.as_unit("us").dt.tz_localize(tz)
