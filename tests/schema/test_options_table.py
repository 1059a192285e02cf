"""The table of options: the JSON Schema, the checks and the defaults come from it and agree with the model."""

from __future__ import annotations

import dataclasses
from importlib import resources

import numpy as np
import pytest

from relanon.common.errors import ParameterError, SchemaError
from relanon.common.options import check_integer
from relanon.schema.model import Anonymization, Column, load_schema
from relanon.schema.options import OPTIONS, default, json_schema_text, method_options, option, option_table, options
from relanon.schema.parsing import json_schema_problems
from relanon.schema.vocabulary import METHODS

REGENERATE = ("python -c \"from relanon.schema.options import json_schema_text; print(json_schema_text(), end='')\" "
              "> schemas/relanon.schema.json")


def test_the_committed_json_schema_is_the_one_made_from_the_table():
    committed = resources.files("relanon.schemas").joinpath("relanon.schema.json").read_text(encoding="utf-8")
    assert committed == json_schema_text(), f"schemas/relanon.schema.json is stale: regenerate it with {REGENERATE}"


def test_the_model_has_exactly_the_options_of_the_table():
    assert {f.name for f in dataclasses.fields(Anonymization)} == {o.name for o in options("anonymize")}
    assert {f.name for f in dataclasses.fields(Column)} - {"name"} == {o.name for o in options("column")}
    for method in METHODS:
        assert method_options(method) <= {f.name for f in dataclasses.fields(Anonymization)}


def test_the_defaults_are_the_tables():
    for method in METHODS:
        assert Anonymization(method=method).k_or_default == default("anonymize", "k", method)
    assert Anonymization().k_or_default == 10 and Anonymization(method="bucketize").k_or_default == 5
    assert Anonymization().l_or_default == default("anonymize", "l") == 2
    assert Anonymization().method == default("anonymize", "method")
    assert Column("x", "integer").weight == default("column", "weight")


def table_for(method: str, **anonymize) -> dict:
    """A table that ``method`` accepts, with ``anonymize`` options added."""
    spec = {"primary_key": "id", "individual": True, "columns": {"a": "integer", "s": "categorical"}}
    if method in ("anatomize", "bucketize"):
        spec["quasi_identifiers"] = ["a"]
        anonymize = {"sensitive": "s" if method == "anatomize" else ["s"], **anonymize}
    spec["anonymize"] = {"method": method, **anonymize} if method != "avatar" else anonymize
    return {"relanon": 1, "tables": {"t": spec}}


BOUNDED = [(o, method) for o in options("anonymize") if o.type == "integer" for method in o.methods]


@pytest.mark.parametrize(("declared", "method"), BOUNDED, ids=lambda v: getattr(v, "name", v))
def test_the_json_schema_and_the_model_agree_on_every_bound(declared, method):
    lowest = declared.lowest(method)
    schema = load_schema(table_for(method, **{declared.name: lowest}))
    assert getattr(schema["t"].anonymize, declared.name) == lowest
    below = table_for(method, **{declared.name: lowest - 1})
    assert [p.message for p in json_schema_problems(below)] == [declared.message(lowest - 1, method)]
    with pytest.raises(SchemaError) as error:
        load_schema(below)
    assert len(error.value.problems) == 1  # said once, by the JSON Schema, not again by the checks of meaning


def test_k_1_is_refused_for_the_avatar_method_whether_it_is_named_or_not():
    for spec in (table_for("avatar", k=1), {"relanon": 1, "tables": {"t": {"primary_key": "id", "anonymize":
                                                                             {"method": "avatar", "k": 1}}}}):
        with pytest.raises(SchemaError, match=r"t: anonymize.k must be an integer of at least 2 for the avatar "
                                              r"method, got 1"):
            load_schema(spec)
    assert load_schema(table_for("bucketize", k=1))["t"].anonymize.k == 1  # a bucket may hold one record


def test_a_bad_type_of_option_is_named_with_its_bounds():
    with pytest.raises(SchemaError, match=r"anonymize.l must be an integer of at least 2, got 'two'"):
        load_schema(table_for("anatomize", l="two"))
    with pytest.raises(SchemaError, match=r"seed must be an integer of at least 0, got -1"):
        load_schema({**table_for("avatar"), "seed": -1})
    with pytest.raises(SchemaError, match=r"t.a: weight must be a finite number above 0 and at most 1,000,000"):
        load_schema({"relanon": 1, "tables": {"t": {"primary_key": "id", "columns": {"a": {"type": "integer",
                                                                                         "weight": 2e6}}}}})


def test_the_reference_table_has_one_row_per_option_with_bounds_and_defaults():
    rows = {row["path"]: row for row in option_table()}
    assert len(rows) == len(OPTIONS)
    assert rows["anonymize.k"]["bounds"] == ">= 1; avatar: >= 2"
    assert rows["anonymize.k"]["default"] == "avatar: 10; bucketize: 5"
    assert rows["anonymize.combination_min_count"]["bounds"] == ">= 2"
    assert rows["foreign_keys[].link"]["bounds"] == "one of linear_sum, minimum_distance, original_order"
    assert rows["columns.<name>.weight"]["bounds"] == "> 0, <= 1e+06"
    assert rows["primary_key"]["required"] and not rows["seed"]["required"]
    assert all(row["description"] for row in rows.values())
    assert option("anonymize", "protect_sensitive").methods == ("avatar",)


def test_check_integer_takes_numpy_integers_and_refuses_booleans_and_fractions():
    assert check_integer(np.int32(4), "k", 2, 9) == 4 and type(check_integer(np.int64(4), "k")) is int
    for bad in (True, 2.0, "3", 1, 10):
        with pytest.raises(ParameterError, match=r"k must be an integer from 2 to 9, got"):
            check_integer(bad, "k", 2, 9)
