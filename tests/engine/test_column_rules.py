"""Rules between columns (relanon.engine.rule_finding, relanon.engine.column_rules): found only where they hold,
obeyed by every released row."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import relanon
from relanon.common.errors import SchemaError
from relanon.engine.column_rules import (
    CalendarDate,
    DateFromParts,
    DatePart,
    LinearRule,
    broken_rows,
    month_days,
    obey_rules,
)
from relanon.engine.rule_finding import find_rules
from relanon.multitable.release import release_notes
from relanon.schema.model import load_schema

N = 600


def timed_table(n: int = N, seed: int = 0) -> pd.DataFrame:
    """``hhmm = 100 * hour + minute``; a stamp with seconds whose month and day are columns; a departure whose
    date, hour and minute are all columns (with a constant year); a decimal ``total = cost + fee``."""
    rng = np.random.default_rng(seed)
    hour, minute = rng.integers(5, 23, n), rng.integers(0, 60, n)
    stamp = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 365 * 86400, n), unit="s")
    departure = (pd.Timestamp("2022-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D")
                 + pd.to_timedelta(rng.integers(0, 24, n), unit="h"))
    cost = np.round(rng.gamma(3.0, 40.0, n), 2)
    fee = rng.choice([5.0, 7.5, 12.0, 20.0, 2.5, 9.0], n)
    return pd.DataFrame({
        "id": np.arange(n), "hour": hour, "minute": minute, "hhmm": 100 * hour + minute,
        "carrier": rng.choice(list("ABCDEFG"), n),
        "stamp": stamp, "stamp_month": stamp.month.to_numpy(), "stamp_day": stamp.day.to_numpy(),
        "dep_date": departure, "dep_month": departure.month.to_numpy(), "dep_day": departure.day.to_numpy(),
        "dep_hour": departure.hour.to_numpy(),
        "cost": cost, "fee": fee, "total": cost + fee, "noise": rng.normal(size=n),
    })


TYPES = {"hour": "integer", "minute": "integer", "hhmm": "integer", "carrier": "categorical", "stamp": "datetime",
         "stamp_month": "integer", "stamp_day": "integer", "dep_date": "datetime", "dep_month": "integer",
         "dep_day": "integer", "dep_hour": "integer", "cost": "continuous", "fee": "continuous",
         "total": "continuous", "noise": "continuous"}


pytestmark = pytest.mark.filterwarnings("ignore:.*the rule of combinations:UserWarning")


def schema_for(types, *, individual=True, anonymize=None, name="t"):
    table = {"primary_key": "id", "individual": individual, "columns": dict(types)}
    if anonymize:
        table["anonymize"] = anonymize
    return load_schema({"relanon": 1, "seed": 3, "tables": {name: table}})


def test_finds_each_kind_and_derives_the_function_of_the_others():
    rules = find_rules(timed_table(), TYPES)
    assert LinearRule("hhmm", ("hour", "minute"), (100, 1)) in rules
    assert LinearRule("total", ("cost", "fee"), (1, 1)) in rules
    # the stamp has seconds: its parts are read off it
    assert DatePart("stamp_month", "stamp", "month") in rules and DatePart("stamp_day", "stamp", "day") in rules
    # the departure is its parts (the year constant, minute 0): it is made of them
    dated = [r for r in rules if isinstance(r, DateFromParts)]
    assert dated == [DateFromParts("dep_date", (("month", "dep_month"), ("day", "dep_day"), ("hour", "dep_hour")),
                                   (("year", 2022), ("minute", 0)))]
    assert all(count == 0 for count in broken_rows(timed_table(), rules).values())
    assert {r.target for r in rules} == {"hhmm", "total", "stamp_month", "stamp_day", "dep_date"}


def test_every_released_row_obeys_the_rules_in_the_column_dtypes():
    table = timed_table()
    schema = schema_for(TYPES)
    result = relanon.anonymize(schema, {"t": table}, random_state=5, progress=False)
    release = result.releases["t"]
    released = result.tables["t"]
    assert release.column_rules
    assert all(count == 0 for count in broken_rows(released, release.column_rules).values())
    assert all(count == 0 for count in broken_rows(release.enriched_avatars, release.column_rules).values())
    assert released[list(TYPES)].dtypes.to_dict() == result.original["t"][list(TYPES)].dtypes.to_dict()
    # without the rules the same release breaks them (the test can fail)
    off = relanon.anonymize(schema_for(TYPES, anonymize={"column_rules": False}), {"t": table}, random_state=5,
                            progress=False)
    assert off.releases["t"].column_rules == ()
    assert sum(broken_rows(off.tables["t"], release.column_rules).values()) > N // 4
    # the columns that are no rule's result are released as without the rules
    kept = [c for c in TYPES if c not in {r.target for r in release.column_rules}]
    pd.testing.assert_frame_equal(released[kept], off.tables["t"][kept])


def test_same_seed_same_release_and_input_untouched():
    table = timed_table()
    before = table.copy()
    first = relanon.anonymize(schema_for(TYPES), {"t": table}, random_state=11, progress=False).tables["t"]
    second = relanon.anonymize(schema_for(TYPES), {"t": table}, random_state=11, progress=False).tables["t"]
    pd.testing.assert_frame_equal(first, second)
    pd.testing.assert_frame_equal(table, before)


def test_relation_on_few_rows_or_all_but_one_row_or_of_constants_is_no_rule():
    table = timed_table(40)
    assert not [r for r in find_rules(table, TYPES) if isinstance(r, LinearRule)]  # 40 rows: too few
    table = timed_table()
    table["hhmm"] = table["hhmm"].astype("Int64")
    table.loc[30:, "hhmm"] = pd.NA  # 600 rows, but the relation is seen on 30 only
    assert not [r for r in find_rules(table, TYPES) if r.target == "hhmm"]
    table = timed_table()
    table.loc[17, "hhmm"] += 1  # one row breaks it
    assert not [r for r in find_rules(table, TYPES) if r.target == "hhmm"]
    constant = pd.DataFrame({"a": np.full(200, 3), "b": np.full(200, 4), "c": np.full(200, 7)})
    assert find_rules(constant, dict.fromkeys(constant, "integer")) == ()
    rng = np.random.default_rng(1)
    few = pd.DataFrame({"a": rng.integers(0, 2, 300), "b": rng.integers(0, 2, 300)})
    few["c"] = few["a"] + few["b"]  # three values: no column of so few values is a rule's result
    assert find_rules(few, dict.fromkeys(few, "integer")) == ()
    independent = pd.DataFrame({"x": rng.integers(0, 1000, 500), "y": rng.integers(0, 1000, 500),
                                "z": rng.integers(0, 1000, 500), "w": rng.normal(size=500)})
    assert find_rules(independent, dict.fromkeys(independent, "integer") | {"w": "continuous"}) == ()


def test_one_row_and_empty_tables_have_no_rules():
    table = timed_table()
    assert find_rules(table.iloc[:1], TYPES) == ()
    assert find_rules(table.iloc[:0], TYPES) == ()
    assert obey_rules(table.iloc[:0], [LinearRule("hhmm", ("hour", "minute"), (100, 1))]).empty


def test_calendar_of_named_columns_is_repaired_and_keeps_nullable_integers():
    rng = np.random.default_rng(2)
    n = 800
    born = pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 60 * 365, n), unit="D")
    table = pd.DataFrame({"id": np.arange(n), "birthYear": born.year, "birthMonth": born.month,
                          "birthDay": born.day, "weight": rng.normal(70, 10, n).round(1)})
    for column in ("birthYear", "birthMonth", "birthDay"):
        table[column] = table[column].astype("Int64")
    table.loc[rng.choice(n, 40, replace=False), "birthDay"] = pd.NA
    types = {"birthYear": "integer", "birthMonth": "integer", "birthDay": "integer", "weight": "continuous"}
    rules = find_rules(table, types)
    assert rules == (CalendarDate("birthYear", "birthMonth", "birthDay"),)
    released = relanon.anonymize(schema_for(types), {"t": table}, random_state=4, progress=False).tables["t"]
    assert released["birthDay"].dtype == "Int64" and released["birthDay"].isna().sum() > 0
    values = released[list(types)[:3]].dropna().astype("int64").to_numpy()
    assert (values[:, 2] <= month_days(values[:, 0], values[:, 1])).all()
    # invalid triples are clipped: Feb 29 of a common year becomes Feb 28, missing stays missing
    bad = pd.DataFrame({"birthYear": pd.array([2021, 2020, None], "Int64"), "birthMonth": pd.array([2, 2, 2], "Int64"),
                        "birthDay": pd.array([29, 29, 30], "Int64")})
    assert obey_rules(bad, rules)["birthDay"].tolist() == [28, 29, 30]
    # names alone do not make a calendar: invalid dates in the data mean no rule
    table.loc[0, ["birthMonth", "birthDay"]] = [2, 30]
    assert find_rules(table, types) == ()


def test_parts_read_on_the_clock_that_explains_them():
    rng = np.random.default_rng(3)
    n = 500
    utc = pd.Timestamp("2020-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 366 * 24 * 60, n), unit="min")
    local = utc.tz_convert("Europe/Paris")
    table = pd.DataFrame({"at": utc, "hour": local.hour, "minute_": rng.integers(0, 60, n)})
    rules = find_rules(table, {"at": "datetime", "hour": "integer", "minute_": "integer"})
    assert rules == (DatePart("hour", "at", "hour", "Europe/Paris"),)
    shifted = table.assign(at=table["at"] + pd.Timedelta(hours=5))
    assert broken_rows(obey_rules(shifted, rules), rules) == {rules[0]: 0}


def test_rules_are_said_in_the_notes_and_can_be_turned_off():
    table = timed_table()
    result = relanon.anonymize(schema_for(TYPES), {"t": table}, random_state=5, progress=False)
    notes = json.loads(json.dumps(release_notes(result)))
    assert "hhmm = 100 * hour + minute" in notes["tables"]["t"]["column_rules"]
    off = relanon.anonymize(schema_for(TYPES, anonymize={"column_rules": False}), {"t": table}, random_state=5,
                            progress=False)
    assert "column_rules" not in release_notes(off)["tables"]["t"]


def test_bad_column_rules_settings_are_schema_errors():
    with pytest.raises(SchemaError, match="column_rules"):
        schema_for(TYPES, anonymize={"column_rules": "no"})
    with pytest.raises(SchemaError, match="column_rules has no meaning for method 'keep'"):
        schema_for(TYPES, anonymize={"method": "keep", "column_rules": False})
    with pytest.raises(SchemaError, match="column_rule"):
        schema_for(TYPES, anonymize={"column_rule": False})


def test_the_dask_engine_obeys_the_rules_batch_by_batch(tmp_path):
    distributed = pytest.importorskip("distributed")
    from relanon.distributed import anonymize_dataset
    from relanon.stores.partitioned import write_part

    table = timed_table(900)
    for i, rows in enumerate(np.array_split(np.arange(len(table)), 2)):
        write_part(table.iloc[rows].reset_index(drop=True), tmp_path / "parts" / "t", i)
    rules = find_rules(table, TYPES)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        anonymize_dataset(schema_for(TYPES), tmp_path / "parts", tmp_path / "out", client=client, batch_size=450,
                          random_state=2, progress=False)
    released = pd.read_parquet(tmp_path / "out" / "t")
    assert len(released) == len(table)
    assert all(count == 0 for count in broken_rows(released, rules).values())
    # both batches obey the rules of the whole table: the release notes list them, as the local engine's do
    listed = json.loads((tmp_path / "out" / "release.json").read_text())["tables"]["t"]["column_rules"]
    assert "hhmm = 100 * hour + minute" in listed
    assert len(listed) == len(rules)  # each relation once, in the form the first batch found


def test_the_notes_of_a_batched_table_list_only_the_rules_every_batch_obeys():
    from relanon.distributed.run import rules_of_batches

    hhmm = LinearRule("hhmm", ("hour", "minute"), (100, 1))
    total, cost = LinearRule("total", ("cost", "fee"), (1, 1)), LinearRule("cost", ("fee", "total"), (-1, 1))
    double = LinearRule("d", ("e",), (2,))
    assert total.relation == cost.relation == (("cost", 1), ("fee", 1), ("total", -1))
    assert double.relation == (("d", 1), ("e", -2)) and LinearRule("e", ("d",), (2,)).relation != double.relation
    day = DatePart("day", "stamp", "day")
    everywhere, somewhere = rules_of_batches([[total, hhmm, day], [hhmm, cost], [cost, hhmm, double]])
    # the relation of total, cost and fee is found in every batch, solved for another column in two of them
    assert everywhere == (total, hhmm)
    assert somewhere == {"day = day of stamp": 1, "d = 2 * e": 1}
    assert rules_of_batches([[], []]) == ((), {})


def test_the_dask_engine_repairs_anchored_rows_as_the_local_engine_does(tmp_path):
    distributed = pytest.importorskip("distributed")
    from relanon.distributed import anonymize_dataset
    from relanon.multitable.release import write_release
    from relanon.stores.partitioned import write_part

    rng = np.random.default_rng(4)
    people = pd.DataFrame({"pid": np.arange(120), "born": rng.integers(1940, 2000, 120),
                           "sex": rng.choice(["F", "M"], 120)})
    records = timed_table(600, seed=4)[["id", "hour", "minute", "hhmm", "cost", "fee", "total"]]
    pid = rng.integers(0, 120, 600)
    records.insert(1, "pid", pid)
    # records that follow their person (the hour her birth year, the cost her sex): anchoring re-draws them
    records["hour"] = 5 + (people["born"].to_numpy()[pid] - 1940) // 4 + rng.integers(0, 3, 600)
    records["hhmm"] = 100 * records["hour"] + records["minute"]
    records["cost"] = np.round(np.where(people["sex"].to_numpy()[pid] == "F", 50.0, 200.0) + rng.gamma(2.0, 10.0, 600), 2)
    records["total"] = records["cost"] + records["fee"]
    types = {"hour": "integer", "minute": "integer", "hhmm": "integer", "cost": "continuous", "fee": "continuous",
             "total": "continuous"}
    schema = load_schema({"relanon": 1, "seed": 3, "tables": {
        "people": {"primary_key": "pid", "individual": True, "columns": {"born": "integer", "sex": "categorical"}},
        "records": {"primary_key": "id", "columns": types, "foreign_keys": [
            {"column": "pid", "references": "people", "link": "linear_sum", "anchor": True}]}}})
    database = {"people": people, "records": records}
    for name, frame in database.items():
        write_part(frame, tmp_path / "parts" / name, 0)
    local = write_release(relanon.anonymize(schema, database, random_state=2, progress=False), tmp_path / "local",
                          format="parquet")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        anonymize_dataset(schema, tmp_path / "parts", tmp_path / "out", client=client, random_state=2, progress=False)
    released = pd.read_parquet(tmp_path / "out" / "records" / "part.00000.parquet")
    assert all(count == 0 for count in broken_rows(released, find_rules(records, types)).values())
    pd.testing.assert_frame_equal(released, pd.read_parquet(local / "records.parquet"))
