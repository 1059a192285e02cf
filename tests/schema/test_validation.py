"""Checking a database against its schema, and the dtypes a checked database has."""

from __future__ import annotations

import copy
import doctest
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relanon.schema.validation
from relanon.common.errors import DataError, ParameterError
from relanon.schema.model import load_schema
from relanon.schema.validation import (
    MISSING_MARKERS,
    check_database,
    coerce_database,
    coerce_table,
    database_problems,
    unconnected_tables,
)


def one_table(columns, primary_key="id"):
    return load_schema({"relanon": 1, "tables": {"t": {"primary_key": primary_key, "columns": columns}}})


def coerce(columns, data, *, from_text=True):
    """Coerce the columns of one table ``t`` given as text cells; return (frame, problems)."""
    schema = one_table(columns)
    frame = pd.DataFrame({"id": [str(i) for i in range(len(next(iter(data.values()))))], **data})
    return coerce_table(schema["t"], frame, from_text=from_text)


def parent_child(link_column="parent_id"):
    return load_schema(
        {
            "relanon": 1,
            "tables": {
                "parents": {"primary_key": "id", "columns": {"x": "continuous"}},
                "children": {
                    "primary_key": "id",
                    "foreign_keys": [{"column": link_column, "references": "parents"}],
                },
            },
        }
    )


def snapshot(database):
    return {name: (frame.copy(deep=True), frame.dtypes.copy()) for name, frame in database.items()}


def assert_unchanged(database, before):
    for name, (frame, dtypes) in before.items():
        pd.testing.assert_frame_equal(database[name], frame)
        pd.testing.assert_series_equal(database[name].dtypes, dtypes)


# --------------------------------------------------------------------------- each problem, with its message


def test_missing_table_is_named_with_what_was_given(clinic_database, clinic_schema):
    database = dict(clinic_database)
    database["patient"] = database.pop("patients")
    [problem] = [p for p in database_problems(clinic_schema, database) if p.table == "patients"]
    assert "not in the database" in problem.message
    assert "did you mean 'patient'?" in problem.message
    assert "(tables given: 'doctors', 'visits', 'patient')" in problem.message


def test_missing_column_suggests_the_undeclared_one(clinic_database, clinic_schema):
    database = dict(clinic_database, patients=clinic_database["patients"].rename(columns={"bmi": "BMI"}))
    problems = database_problems(clinic_schema, database)
    missing = next(p for p in problems if p.column == "bmi")
    assert missing.table == "patients"
    assert "declared column 'bmi' is not in the data (did you mean 'BMI'?)" in missing.message


def test_missing_key_columns_are_named_as_keys(clinic_database, clinic_schema):
    database = dict(clinic_database, visits=clinic_database["visits"].drop(columns=["visit_id", "doctor_id"]))
    messages = {p.column: p.message for p in database_problems(clinic_schema, database)}
    assert messages["visit_id"].startswith("the primary key column 'visit_id' is not in the data")
    assert messages["doctor_id"].startswith("the foreign key column 'doctor_id' is not in the data")


def test_undeclared_columns_are_listed_together_with_the_fix(clinic_database, clinic_schema):
    database = dict(clinic_database, patients=clinic_database["patients"].assign(email="a@b.c", phone="555", ssn="1"))
    [problem] = [p for p in database_problems(clinic_schema, database) if "not declared" in p.message]
    assert problem.table == "patients"
    assert "3 columns in the data are not declared in the schema: 'email', 'phone', 'ssn'" in problem.message
    assert "declare them in columns, or give them type drop" in problem.message


def test_a_column_given_twice_is_reported():
    frame = pd.DataFrame([[1, 2.0, 3.0]], columns=["id", "x", "x"])
    _, [problem] = coerce_table(one_table({"x": "continuous"})["t"], frame)
    assert (problem.column, problem.message) == ("x", "the column appears 2 times in the data; keep one")


def test_duplicated_primary_key_gives_count_and_first_values():
    schema = one_table({})
    frame = pd.DataFrame({"id": [1, 2, 2, 3, 3, 3, 4]})
    [problem] = database_problems(schema, {"t": frame})
    assert problem.column == "id"
    assert "2 duplicated values on 5 rows" in problem.message
    assert problem.examples == (2, 3)


def test_null_primary_key_gives_count_and_rows():
    [problem] = database_problems(one_table({}), {"t": pd.DataFrame({"id": ["1", "", "3", "NA"]})}, from_text=True)
    assert problem.column == "id"
    assert problem.message.startswith("2 rows have no primary key")
    assert "data rows 2, 4" in problem.message


def test_orphan_foreign_keys_give_count_examples_and_parent():
    schema = parent_child()
    database = {
        "parents": pd.DataFrame({"id": [1, 2], "x": [0.5, 1.5]}),
        "children": pd.DataFrame({"id": [10, 11, 12, 13, 14], "parent_id": [1, 7, 7, 9, None]}),
    }
    [problem] = database_problems(schema, database)
    assert (problem.table, problem.column) == ("children", "parent_id")
    assert "3 rows refer to 2 values not found in the parent key parents.id" in problem.message
    assert problem.examples == (7, 9)


@pytest.mark.parametrize(
    ("declared", "cells", "message", "examples"),
    [
        ("integer", ["1", "abc", "2", "abc", "x"], "3 values are not numbers (declared integer)", ("abc", "x")),
        ("integer", ["1", "3.5", "2.0"], "1 value is not a whole number (declared integer)", ("3.5",)),
        ("continuous", ["1.5", "1,5", "", "n/a"], "1 value is not a number (declared continuous)", ("1,5",)),
        ("boolean", ["yes", "maybe", "NO", "perhaps"], "2 values are not true/false values", ("maybe", "perhaps")),
        ("datetime", ["2020-01-31", "2020-02-30", "soon"], "2 values are not dates (declared datetime)",
         ("2020-02-30", "soon")),
    ],
)
def test_values_that_do_not_fit_their_type_are_counted_with_examples(declared, cells, message, examples):
    coerced, [problem] = coerce({"v": declared}, {"v": cells})
    assert (problem.table, problem.column) == ("t", "v")
    assert problem.message.startswith(message)
    assert problem.examples == examples
    assert coerced["v"].isna().sum() >= len(examples)  # values that do not fit become missing


def test_type_problems_say_what_to_do():
    _, [as_integer] = coerce({"v": "integer"}, {"v": ["A12"]})
    _, [as_date] = coerce({"v": "datetime"}, {"v": ["someday"]})
    _, [as_flag] = coerce({"v": "boolean"}, {"v": ["2"]})
    assert "declare the column categorical if these are codes" in as_integer.message
    assert "ISO 8601" in as_date.message
    assert "true/false, 1/0 or yes/no" in as_flag.message


def test_numbers_written_with_a_comma_are_named_as_such():
    _, [commas] = coerce({"v": "continuous"}, {"v": ["58,77", "123,39", ""]})
    _, [thousands] = coerce({"v": "continuous"}, {"v": ["1,234.50", "12,500", "7"]})
    _, [mixed] = coerce({"v": "continuous"}, {"v": ["58,77", "abc"]})
    for problem in (commas, thousands):
        assert "written with a comma" in problem.message and "decimal point and no separator" in problem.message
    assert "written with a comma" not in mixed.message  # only when every bad value is a number with a comma


def test_numbers_in_a_datetime_column_are_a_problem():
    _, [problem] = coerce({"v": "datetime"}, {"v": [20200101.0, 1.5]}, from_text=False)
    assert problem.message.startswith("2 values are numbers, not dates")


def test_foreign_key_values_that_cannot_be_parent_keys_are_reported():
    schema = parent_child()
    database = {
        "parents": pd.DataFrame({"id": ["1", "2"], "x": ["0", "1"]}),
        "children": pd.DataFrame({"id": ["1", "2"], "parent_id": ["2", "P2"]}),
    }
    [problem] = database_problems(schema, database, from_text=True)
    assert problem.column == "parent_id"
    assert "1 value is not a whole number (foreign key to parents, whose keys are whole numbers)" in problem.message
    assert problem.examples == ("P2",)


def test_every_problem_is_reported_at_once(clinic_database, clinic_schema):
    patients = clinic_database["patients"].assign(age=["1", "x", "2", "3"], extra=0)
    patients.loc[3, "patient_id"] = 10
    visits = clinic_database["visits"].assign(patient_id=[10, 10, 11, 99, 12]).drop(columns="cost")
    database = {"patients": patients, "visits": visits}
    with pytest.raises(DataError) as caught:
        check_database(clinic_schema, database)
    found = {(p.table, p.column) for p in caught.value.problems}
    assert found == {
        ("doctors", None),  # missing table
        ("patients", None),  # undeclared column
        ("patients", "age"),  # not a number
        ("patients", "patient_id"),  # duplicated key
        ("visits", "cost"),  # missing column
        ("visits", "patient_id"),  # orphan
    }
    assert str(caught.value).startswith("the database does not fit its schema (6 problems):")
    assert isinstance(caught.value, ValueError)


def test_a_database_that_fits_has_no_problem(clinic_database, clinic_schema):
    assert database_problems(clinic_schema, clinic_database) == []


def test_nullable_foreign_keys_and_unconnected_tables_are_allowed():
    schema = load_schema(
        {
            "relanon": 1,
            "tables": {
                "parents": {"primary_key": "id"},
                "children": {"primary_key": "id", "foreign_keys": [{"column": "p", "references": "parents"}]},
                "lonely": {"primary_key": "id"},
            },
        }
    )
    database = {
        "parents": pd.DataFrame({"id": [1]}),
        "children": pd.DataFrame({"id": [1, 2], "p": [1, None]}),
        "lonely": pd.DataFrame({"id": [5]}),
    }
    assert database_problems(schema, database) == []
    assert unconnected_tables(schema) == ["lonely"]
    assert check_database(schema, database)["children"]["p"].dtype == "Int64"


def test_coerce_table_refuses_what_is_not_a_frame():
    with pytest.raises(ParameterError, match="table 't': expected a pandas DataFrame, got dict"):
        coerce_table(one_table({})["t"], {"id": [1]})


# --------------------------------------------------------------------------- dtypes after coercion


def test_a_checked_database_keeps_its_dtypes_and_values(clinic_database, clinic_schema):
    checked = check_database(clinic_schema, clinic_database)
    assert list(checked) == ["doctors", "patients", "visits"]
    for name, frame in clinic_database.items():
        pd.testing.assert_frame_equal(checked[name], frame)


def test_text_cells_get_the_declared_dtypes(clinic_database, clinic_schema):
    as_text = {name: frame.astype("str").replace(["nan", "NaT"], "") for name, frame in clinic_database.items()}
    as_text["doctors"]["hired"] = ["2010-03-01T08:30:00Z", "2015-11-20 14:00:00+00:00", "2020-01-06 09:15:30Z"]
    checked = check_database(clinic_schema, as_text, from_text=True)
    for name, frame in clinic_database.items():
        pd.testing.assert_frame_equal(checked[name], frame)


def test_continuous_parses_text_and_keeps_infinities():
    coerced, problems = coerce({"v": "continuous"}, {"v": ["1.5", " 2 ", "-inf", "1e3", "", "NaN"]})
    assert problems == []
    assert coerced["v"].dtype == "float64"
    np.testing.assert_array_equal(coerced["v"], [1.5, 2.0, -np.inf, 1000.0, np.nan, np.nan])


def test_integer_is_int64_or_nullable_int64():
    full, _ = coerce({"v": "integer"}, {"v": [1.0, 3.0, -2.0]}, from_text=False)
    gaps, _ = coerce({"v": "integer"}, {"v": ["1", "", "9007199254740993"]})
    assert full["v"].dtype == "int64" and full["v"].tolist() == [1, 3, -2]
    assert gaps["v"].dtype == "Int64"
    assert gaps["v"].tolist() == [1, pd.NA, 9007199254740993]  # no float detour that would lose digits


@pytest.mark.parametrize("marker", [*MISSING_MARKERS, "na", "NULL", " none ", "nan"])
def test_every_missing_marker_is_missing_where_it_cannot_be_a_value(marker):
    cells = ["1", marker]
    coerced, problems = coerce(
        {"c": "continuous", "i": "integer", "b": "boolean", "d": "datetime"},
        {"c": cells, "i": cells, "b": cells, "d": ["2020-01-01", marker]},
    )
    assert problems == []
    assert coerced.iloc[1, 1:].isna().all()


def test_boolean_spellings_are_case_insensitive():
    words = ["True", "false", "1", "0", "YES", "no", "t", "F", "y", "N"]
    coerced, problems = coerce({"v": "boolean"}, {"v": words})
    assert problems == []
    assert coerced["v"].dtype == "bool"
    assert coerced["v"].tolist() == [True, False] * 5
    with_gaps, _ = coerce({"v": "boolean"}, {"v": ["true", ""]})
    assert with_gaps["v"].dtype == "boolean"
    numbers, _ = coerce({"v": "boolean"}, {"v": [1.0, 0.0, np.nan]}, from_text=False)
    assert numbers["v"].tolist() == [True, False, pd.NA]


def test_datetimes_in_mixed_formats_are_parsed():
    cells = ["2021-03-04", "2021-03-04T10:20:30", "03/15/2021", "Mar 5, 2021", "2021-03-04 10:20:30.5", ""]
    coerced, problems = coerce({"v": "datetime"}, {"v": cells})
    assert problems == []
    assert coerced["v"].dtype == "datetime64[us]"
    expected = ["2021-03-04", "2021-03-04 10:20:30", "2021-03-15", "2021-03-05", "2021-03-04 10:20:30.5", None]
    pd.testing.assert_series_equal(coerced["v"], pd.Series(pd.to_datetime(expected, format="ISO8601"), name="v"))


def test_day_first_dates_are_recognised_from_the_column():
    coerced, problems = coerce({"v": "datetime"}, {"v": ["01/02/2021", "31/12/2021", "15.06.2020"]})
    assert problems == []
    assert coerced["v"].dt.strftime("%Y-%m-%d").tolist() == ["2021-02-01", "2021-12-31", "2020-06-15"]


def test_a_time_or_a_month_alone_is_not_a_date():
    # dateutil would give them today's date: a different result every day
    _, [problem] = coerce({"v": "datetime"}, {"v": ["2021-01-01", "10:30", "March"]})
    assert problem.examples == ("10:30", "March")


def test_aware_datetimes_stay_aware_and_mixed_offsets_meet_in_utc():
    paris = pd.Series(pd.to_datetime(["2021-01-01 10:00"]).tz_localize("Europe/Paris").as_unit("ns"))
    kept, _ = coerce({"v": "datetime"}, {"v": paris}, from_text=False)
    assert str(kept["v"].dtype) == "datetime64[ns, Europe/Paris]"  # unit and zone kept
    mixed, problems = coerce({"v": "datetime"}, {"v": ["2021-01-01T10:00:00+01:00", "2021-07-01 10:00:00+02:00"]})
    assert problems == []
    assert str(mixed["v"].dt.tz) == "UTC"
    assert mixed["v"].dt.hour.tolist() == [9, 8]


def test_categorical_codes_from_text_become_integers_unless_they_have_leading_zeros():
    coerced, problems = coerce(
        {"code": "categorical", "zip": "categorical", "word": "categorical", "gappy": "categorical"},
        {"code": ["3", "12", "-1"], "zip": ["01234", "75001", "13008"], "word": ["a", "", "b"],
         "gappy": ["1", "", "2"]},
    )
    assert problems == []
    assert coerced["code"].dtype == "int64" and coerced["code"].tolist() == [3, 12, -1]
    assert coerced["zip"].dtype == "str" and coerced["zip"].tolist() == ["01234", "75001", "13008"]
    assert coerced["word"].dtype == "str" and coerced["word"].isna().tolist() == [False, True, False]
    assert coerced["gappy"].dtype == "Int64"


def test_na_is_a_category_among_words_but_missing_among_integer_codes():
    coerced, _ = coerce(
        {"region": "categorical", "grade": "categorical"},
        {"region": ["EU", "NA", "", "AS"], "grade": ["1", "NA", "", "3"]},
    )
    assert coerced["region"].tolist()[:2] == ["EU", "NA"] and pd.isna(coerced["region"][2])
    assert coerced["grade"].dtype == "Int64"
    assert coerced["grade"].isna().tolist() == [False, True, True, False]


def test_categoricals_in_memory_are_kept_as_they_came():
    coerced, _ = coerce(
        {"s": "categorical", "n": "categorical", "f": "categorical", "r": "categorical"},
        {"s": ["1", "2", "NA"], "n": [1.0, np.nan, 3.0], "f": [0.5, 1.5, 1.0], "r": ["", "b", "c"]},
        from_text=False,
    )
    assert coerced["s"].tolist() == ["1", "2", "NA"]
    assert coerced["n"].dtype == "Int64"
    assert coerced["f"].dtype == "float64"
    assert coerced["r"].tolist() == ["", "b", "c"]


def test_foreign_keys_take_the_kind_of_their_parent_key():
    schema = parent_child()
    text_children = pd.DataFrame({"id": ["a", "b", "c"], "parent_id": ["12", "", "7"]})
    checked = check_database(
        schema, {"parents": pd.DataFrame({"id": [12, 7], "x": [1.0, 2.0]}), "children": text_children}
    )
    assert checked["children"]["parent_id"].dtype == "Int64"
    assert checked["children"]["parent_id"].tolist() == [12, pd.NA, 7]
    number_children = pd.DataFrame({"id": [1, 2], "parent_id": [12.0, np.nan]})
    checked = check_database(
        schema, {"parents": pd.DataFrame({"id": ["12", "x"], "x": [1.0, 2.0]}), "children": number_children}
    )
    assert checked["children"]["parent_id"].dtype == "str"
    assert checked["children"]["parent_id"].tolist()[0] == "12"


def test_primary_keys_from_text_are_integers_only_when_all_are_canonical():
    integers, _ = coerce({}, {"x": ["", ""]})
    codes = coerce_table(one_table({})["t"], pd.DataFrame({"id": ["007", "8"]}), from_text=True)[0]
    assert integers["id"].dtype == "int64"
    assert codes["id"].dtype == "str" and codes["id"].tolist() == ["007", "8"]


def test_object_columns_are_read_through_their_values():
    coerced, problems = coerce(
        {"n": "continuous", "b": "boolean", "c": "categorical"},
        {"n": pd.Series([1, 2.5, None], dtype=object), "b": pd.Series([True, None, False], dtype=object),
         "c": pd.Series(["x", 3, None], dtype=object)},
        from_text=False,
    )
    assert problems == []
    assert coerced["n"].dtype == "float64" and coerced["b"].dtype == "boolean"
    assert coerced["c"].tolist()[:2] == ["x", "3"]


def test_empty_tables_get_typed_columns():
    schema = one_table({"c": "continuous", "i": "integer", "b": "boolean", "d": "datetime", "k": "categorical"})
    frame = pd.DataFrame({name: pd.Series([], dtype="str") for name in ["id", "c", "i", "b", "d", "k"]})
    coerced = check_database(schema, {"t": frame}, from_text=True)["t"]
    assert coerced.dtypes.astype(str).tolist() == ["str", "float64", "int64", "bool", "datetime64[us]", "str"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**62), 2**62)), min_size=1, max_size=30))
def test_integers_written_as_text_come_back_exactly(values):
    cells = ["" if v is None else str(v) for v in values]
    coerced, problems = coerce({"v": "integer"}, {"v": cells})
    assert problems == []
    assert [None if pd.isna(v) else int(v) for v in coerced["v"]] == values


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(allow_nan=False), min_size=1, max_size=30))
def test_floats_written_as_text_come_back_exactly(values):
    coerced, _ = coerce({"v": "continuous"}, {"v": [repr(v) for v in values]})
    np.testing.assert_array_equal(coerced["v"].to_numpy(), np.array(values))


# --------------------------------------------------------------------------- the input is never modified


def test_checking_never_modifies_the_input(clinic_database, clinic_schema):
    as_text = {name: frame.astype("str") for name, frame in clinic_database.items()}
    for database, from_text in ((clinic_database, False), (as_text, True)):
        before = snapshot(database)
        keys = copy.copy(list(database))
        coerced, _ = coerce_database(clinic_schema, database, from_text=from_text)
        for frame in coerced.values():
            frame.iloc[:, 0] = frame.iloc[:, 0].iloc[::-1].to_numpy()  # writing to the output...
        assert_unchanged(database, before)  # ...does not reach the input either
        assert list(database) == keys


def test_the_index_is_kept():
    frame = pd.DataFrame({"id": ["1", "2"], "x": ["0.5", "1"]}, index=[7, 3])
    coerced, _ = coerce_table(one_table({"x": "continuous"})["t"], frame, from_text=True)
    assert coerced.index.tolist() == [7, 3]


# --------------------------------------------------------------------------- scale and documentation


@pytest.mark.slow
def test_a_million_text_rows_are_checked_in_seconds():
    n = 1_000_000
    rng = np.random.default_rng(0)
    schema = one_table({"age": "integer", "bmi": "continuous", "smoker": "boolean", "born": "datetime",
                        "zip": "categorical"})
    born = pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 25_000, n), unit="D")
    frame = pd.DataFrame(
        {
            "id": np.arange(n).astype(str),
            "age": rng.integers(0, 99, n).astype(str),
            "bmi": rng.normal(25, 4, n).astype(str),
            "smoker": rng.choice(["true", "false", ""], n),
            "born": born.strftime("%Y-%m-%d"),
            "zip": rng.choice(["01234", "75001", "13008"], n),
        }
    ).astype("str")
    start = time.perf_counter()
    checked = check_database(schema, {"t": frame}, from_text=True)["t"]
    assert time.perf_counter() - start < 10
    assert len(checked) == n and checked["born"].dtype == "datetime64[us]"


def test_docstring_examples_run():
    failures, tried = doctest.testmod(relanon.schema.validation, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried > 0 and failures == 0
