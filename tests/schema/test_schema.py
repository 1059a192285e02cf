"""The schema file: parsing, JSON Schema checks, meaning checks, round trip."""

import json

import pytest

from relanon.common.errors import SchemaError
from relanon.schema.graph import child_links, parent_links, top_tables
from relanon.schema.model import Anonymization, Column, ForeignKey, dump_schema, load_schema

EXAMPLE = """
relanon: 1
name: hospital
seed: 7
tables:
  doctors:
    primary_key: doctor_id
    individual: true
    columns: {specialty: categorical, age: integer}
  patients:
    primary_key: patient_id
    individual: true
    columns:
      age: integer
      sex: categorical
      zip_code: categorical
      bmi: continuous
      smoker: boolean
      birth_date: datetime
      full_name: drop
      weight_kg: {type: continuous, weight: 2.0}
    quasi_identifiers: [age, sex, zip_code]
    sensitive: [bmi]
    anonymize: {method: avatar, k: 10, ncp: 5}
  visits:
    primary_key: visit_id
    foreign_keys:
      - {column: patient_id, references: patients, link: linear_sum}
      - {column: doctor_id, references: doctors, link: minimum_distance}
    columns: {visit_date: datetime, reason: categorical, cost: continuous}
    source: visit_table
"""


def problems_of(text_or_mapping):
    with pytest.raises(SchemaError) as caught:
        load_schema(text_or_mapping)
    return [str(p) for p in caught.value.problems]


def one_problem(text_or_mapping):
    found = problems_of(text_or_mapping)
    assert len(found) == 1, found
    return found[0]


def minimal(**tables):
    return {"relanon": 1, "tables": tables}


def test_example_loads_with_every_field():
    schema = load_schema(EXAMPLE)
    assert schema.name == "hospital" and schema.seed == 7
    patients = schema["patients"]
    assert patients.individual and patients.primary_key == "patient_id"
    assert patients.column("weight_kg") == Column("weight_kg", "continuous", 2.0)
    assert patients.column("full_name").type == "drop"
    assert "full_name" not in [c.name for c in patients.released_columns]
    assert patients.quasi_identifiers == ("age", "sex", "zip_code")
    assert patients.anonymize == Anonymization("avatar", k=10, ncp=5)
    visits = schema["visits"]
    assert visits.foreign_keys == (
        ForeignKey("patient_id", "patients", "linear_sum"),
        ForeignKey("doctor_id", "doctors", "minimum_distance"),
    )
    assert visits.source_name == "visit_table"
    assert visits.output_columns == ("visit_id", "patient_id", "doctor_id", "visit_date", "reason", "cost")
    assert not schema["doctors"].foreign_keys


def test_defaults():
    schema = load_schema(minimal(t={"primary_key": "id", "foreign_keys": [{"column": "p", "references": "u"}]}, u={"primary_key": "id"}))
    table = schema["t"]
    assert table.foreign_keys[0].link == "linear_sum"
    assert table.anonymize.method == "avatar" and table.anonymize.k_or_default == 10
    assert not table.individual and table.source_name == "t"
    assert schema.seed is None


def test_round_trip_yaml_and_json(tmp_path):
    schema = load_schema(EXAMPLE)
    assert load_schema(dump_schema(schema)) == schema
    path = tmp_path / "schema.json"
    dump_schema(schema, path)
    assert json.loads(path.read_text())["tables"]["patients"]["columns"]["weight_kg"] == {"type": "continuous", "weight": 2.0}
    assert load_schema(path) == schema
    yaml_path = tmp_path / "schema.yaml"
    dump_schema(schema, yaml_path)
    assert load_schema(yaml_path) == schema


def test_missing_file_is_named():
    assert "no schema file at 'nowhere.yaml'" in one_problem("nowhere.yaml")


def test_unknown_key_suggests_the_close_one():
    assert one_problem(minimal(t={"primary_key": "id", "individal": True})) == (
        "t: unknown key 'individal' (did you mean 'individual'?)"
    )
    assert "unknown key 'seeed' (did you mean 'seed'?)" in one_problem({"relanon": 1, "seeed": 1, "tables": {"t": {"primary_key": "id"}}})


def test_unknown_type_suggests_the_close_one():
    message = one_problem(minimal(t={"primary_key": "id", "columns": {"age": "integr"}}))
    assert message.startswith("t.age: unknown type 'integr' (did you mean 'integer'?)")


def test_unknown_key_in_long_column_form():
    assert one_problem(minimal(t={"primary_key": "id", "columns": {"w": {"type": "continuous", "wieght": 2}}})) == (
        "t.w: unknown key 'wieght' (did you mean 'weight'?)"
    )


def test_composite_key_is_explained():
    assert "composite primary keys are not possible" in one_problem(minimal(t={"primary_key": ["a", "b"]}))


def test_missing_primary_key():
    assert one_problem(minimal(t={"columns": {"a": "integer"}})) == "t: 'primary_key' is required"


def test_wrong_format_version():
    assert "reads schema format 1" in one_problem({"relanon": 2, "tables": {"t": {"primary_key": "id"}}})


def test_column_declared_twice_in_yaml():
    text = "relanon: 1\ntables:\n  t:\n    primary_key: id\n    columns:\n      age: integer\n      age: continuous\n"
    assert one_problem(text) == "t.age: column 'age' declared twice (lines 6 and 7); keep one"


def test_foreign_key_to_unknown_table():
    message = one_problem(minimal(v={"primary_key": "id", "foreign_keys": [{"column": "pid", "references": "patient"}]}, patients={"primary_key": "id"}))
    assert message.startswith("v.pid: the foreign key references unknown table 'patient' (did you mean 'patients'?)")


def test_self_reference_is_a_hierarchy_not_an_edge_of_the_graph():
    schema = load_schema(minimal(e={"primary_key": "id", "foreign_keys": [{"column": "boss", "references": "e"}]}))
    assert [fk.column for fk in schema["e"].self_references] == ["boss"]
    assert not parent_links(schema, "e") and not child_links(schema, "e") and "e" in top_tables(schema)


def test_cycle_names_the_tables_in_order():
    message = one_problem(minimal(
        a={"primary_key": "id", "foreign_keys": [{"column": "c_id", "references": "c"}]},
        b={"primary_key": "id", "foreign_keys": [{"column": "a_id", "references": "a"}]},
        c={"primary_key": "id", "foreign_keys": [{"column": "b_id", "references": "b"}]},
    ))
    assert "cycle" in message
    cycle = message.split("(")[1].split(")")[0].split(" -> ")
    assert cycle[0] == cycle[-1] and sorted(cycle[:-1]) == ["a", "b", "c"]
    # each table in the cycle is followed by one of its children
    parent_of = {"a": "c", "b": "a", "c": "b"}
    assert all(parent_of[child] == parent for parent, child in zip(cycle, cycle[1:], strict=False))


def test_keys_listed_under_columns():
    found = problems_of(minimal(
        p={"primary_key": "id", "columns": {"id": "integer"}},
        c={"primary_key": "cid", "foreign_keys": [{"column": "pid", "references": "p"}], "columns": {"pid": "integer"}},
    ))
    assert any(f.startswith("p.id: the primary key is listed under columns") for f in found)
    assert any(f.startswith("c.pid: the foreign key is listed under columns") for f in found)


def test_roles_must_name_released_columns():
    found = problems_of(minimal(t={
        "primary_key": "id",
        "columns": {"name": "drop", "age": "integer"},
        "quasi_identifiers": ["name", "agee", "id"],
    }))
    assert any(f.startswith("t.name: listed in quasi_identifiers but its type is drop") for f in found)
    assert any(f.startswith("t.agee: listed in quasi_identifiers but not declared in columns (did you mean 'age'?)") for f in found)
    assert any(f.startswith("t.id: the primary key is listed in quasi_identifiers") for f in found)


def test_method_parameters_are_checked():
    found = problems_of(minimal(
        a={"primary_key": "id", "anonymize": {"method": "keep", "k": 3}},
        b={"primary_key": "id", "anonymize": {"method": "avatar", "k": 1}},
        c={"primary_key": "id", "columns": {"x": "integer"}, "anonymize": {"method": "anatomize"}},
        d={"primary_key": "id", "columns": {"x": "integer"}, "anonymize": {"method": "bucketize", "sensitive": ["x"]}},
        e={"primary_key": "id", "anonymize": {"method": "avatr"}},
    ))
    assert any(f.startswith("a: anonymize.k has no meaning for method 'keep'") for f in found)
    assert any("anonymize.k must be an integer of at least 2" in f for f in found)
    assert any(f.startswith("c: method 'anatomize' needs anonymize.sensitive") for f in found)
    assert any(f.startswith("d: bucketize forms its buckets from the table's quasi_identifiers") for f in found)
    assert any("unknown value 'avatr' (did you mean 'avatar'?)" in f for f in found)


def test_every_problem_is_reported_at_once():
    found = problems_of("""
relanon: 1
tables:
  patients:
    primary_key: patient_id
    individal: true
    columns: {age: integr, patient_id: integer}
    quasi_identifiers: [zip]
  visits:
    primary_key: visit_id
    foreign_keys:
      - {column: patient_id, references: patient}
      - {column: patient_id, references: patients}
""")
    assert len(found) == 6, found
    for expected in ("individal", "integr", "primary key is listed under columns", "zip", "'patient'", "declared twice"):
        assert any(expected in f for f in found), expected


def test_two_foreign_keys_to_one_parent_are_allowed():
    schema = load_schema(minimal(
        accounts={"primary_key": "id"},
        transfers={"primary_key": "id", "foreign_keys": [
            {"column": "from_account", "references": "accounts"},
            {"column": "to_account", "references": "accounts"},
        ]},
    ))
    assert [fk.column for fk in schema["transfers"].foreign_keys] == ["from_account", "to_account"]


def test_schema_lookup_error_lists_tables():
    schema = load_schema(EXAMPLE)
    with pytest.raises(KeyError, match="tables: doctors, patients, visits"):
        schema["nurses"]


def test_published_json_schema_is_valid():
    import jsonschema

    from relanon.schema.parsing import json_schema

    jsonschema.Draft202012Validator.check_schema(json_schema())


def test_every_example_schema_loads():
    from pathlib import Path

    folder = Path(__file__).parents[2] / "schemas"
    examples = sorted(folder.glob("*.yaml"))
    assert {p.name for p in examples} >= {"hospital.yaml", "bank.yaml"}
    for path in examples:
        schema = load_schema(path)
        assert load_schema(dump_schema(schema)) == schema
