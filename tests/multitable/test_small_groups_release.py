"""Small groups at the defaults: a database nobody tuned (docs/guide/small-groups.md).

A staff table of 8 people and a customers table of 60, with dates and categories held by one to three
people, released with the schema ``relanon init`` proposes: no category column of an individual table, nor
the dates of a table too small for its k, releases a value fewer than ``min_count`` (the table's k) originals
hold, and rare categories are generalized (a coarser column's level, then "other") rather than erased.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from relanon import anonymize
from relanon.metrics.scenarios import evaluate
from relanon.multitable.release import release_notes
from relanon.schema.proposal import propose_schema


def small_database(seed: int = 3) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    staff = pd.DataFrame({
        "staff_id": np.arange(1, 9),
        "birth_date": pd.to_datetime("1960-01-01") + pd.to_timedelta(rng.integers(0, 12_000, 8), unit="D"),
        "hire_date": pd.to_datetime("2005-01-01") + pd.to_timedelta(rng.integers(0, 5_000, 8), unit="D"),
        "title": ["Sales Agent"] * 5 + ["IT Staff", "Manager", "General Manager"],
    })
    # countries: two held by many, the others by one to three; the city tells the country
    countries = ["USA"] * 22 + ["Canada"] * 20 + ["Brazil"] * 3 + ["Chile"] * 2 + ["Norway"] * 3 + ["Poland"] * 2 \
        + ["India"] + ["Spain"] * 3 + ["Italy"] * 2 + ["Japan"] + ["Peru"]
    cities = {"USA": ["Boston", "Austin", "Tulsa"], "Canada": ["Toronto", "Ottawa"], "Brazil": ["Rio"],
              "Chile": ["Santiago"], "Norway": ["Oslo"], "Poland": ["Warsaw"], "India": ["Delhi"],
              "Spain": ["Madrid"], "Italy": ["Rome"], "Japan": ["Tokyo"], "Peru": ["Lima"]}
    city = [cities[c][i % len(cities[c])] for i, c in enumerate(countries)]
    customers = pd.DataFrame({
        "customer_id": np.arange(100, 160),
        "country": countries,
        "city": city,
        "signup": pd.to_datetime("2009-01-01") + pd.to_timedelta(rng.integers(0, 1_500, 60), unit="D"),
        "support_rep_id": rng.choice(staff["staff_id"], 60),
    })
    invoices = pd.DataFrame({
        "invoice_id": np.arange(1_000, 1_400),
        "customer_id": rng.choice(customers["customer_id"], 400),
        "total": np.round(rng.gamma(2.0, 4.0, 400), 2),
    })
    return {"staff": staff, "customers": customers, "invoices": invoices}


@pytest.fixture(scope="module")
def released():
    database = small_database()
    proposal = propose_schema(database, name="shop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = anonymize(proposal.schema, database, random_state=0, progress=False)
    return database, proposal, result


def held_by_few(original: pd.Series, released: pd.Series, threshold: int) -> pd.Series:
    counts = original.dropna().value_counts()
    held = released.dropna().map(counts).fillna(0)
    return released.dropna()[(held > 0) & (held < threshold)]


def test_no_category_or_date_value_of_a_few_people_is_released(released):
    database, proposal, result = released
    schema = proposal.schema
    assert schema["staff"].individual and schema["customers"].individual
    for name in ("staff", "customers"):
        n, k = len(database[name]), schema[name].anonymize.k_or_default
        threshold = min(k, n - 1)
        for column in schema[name].released_columns:
            # a mixed date (the customers' signups: 60 dates over 1,500 days) may land on a day one person holds
            # by chance, as often for a person outside the data: moving it off would tell who is in the data
            if column.type not in ("categorical", "boolean") and not (name == "staff" and column.type == "datetime"):
                continue
            leaked = held_by_few(database[name][column.name], result.tables[name][column.name], threshold)
            assert leaked.empty, f"{name}.{column.name} releases values fewer than {threshold} hold: {leaked.tolist()}"
            # present stays present: the missing share is the original's
            assert result.tables[name][column.name].isna().mean() == database[name][column.name].isna().mean()
    # the 8 staff members' dates: none is a person's own (they were all released as real ones when snapped)
    for column in ("birth_date", "hire_date"):
        assert not result.tables["staff"][column].isin(database["staff"][column]).any()


def test_rare_countries_are_generalized_not_erased_and_the_release_says_so(released):
    database, _, result = released
    country = result.tables["customers"]["country"]
    assert country.notna().all()
    assert set(country) <= {"USA", "Canada", "other"}
    assert (country == "other").any()
    said = {g["column"]: g for g in release_notes(result)["tables"]["customers"]["generalized"]}
    assert said["country"]["levels"]["other"]["how"] == "merged" and said["country"]["left_rare"] == 0


def test_the_verdict_measures_rare_values_and_names_small_tables(released):
    database, proposal, result = released
    evaluation = evaluate(proposal.schema, database, result.tables, result, progress=False)
    measured = {view: m for kind, view, m in evaluation.metrics if m.name == "rare_values_released"}
    assert measured["STANDALONE(customers)"].value == 0 and measured["STANDALONE(customers)"].passed
    signup = measured["STANDALONE(customers)"].breakdown["signup"]
    assert signup["mixed"] and signup["chance"] > 0  # read against the chance of a coincidence, not judged
    # init proposes k = 7 for 8 rows: 2 k = 14; init, the verdict's notes (and validate) name the table
    assert any(note.startswith("staff: 8 people, fewer than 2 k = 14") for note in evaluation.notes)
    assert any(str(note).startswith("staff: REVIEW: 8 people, fewer than 2 k = 14") for note in proposal.notes)
    assert any(note.startswith("customers.city:") and "other in USA (coarser: country" in note
               for note in evaluation.notes)
    # broken on purpose: the original released as it is fails the measure, naming the column
    leaked = evaluate(proposal.schema, database, database, progress=False)
    metric = next(m for kind, view, m in leaked.metrics
                  if m.name == "rare_values_released" and view == "STANDALONE(customers)")
    assert metric.passed is False and metric.breakdown["country"]["share"] > 0
