"""The result types: exported from the package, the measures apart from the data they were measured on."""

import dataclasses

import pandas as pd

import relanon
from relanon.schema.model import load_schema

RESULT_TYPES = ["AnonymizationResult", "Assessment", "AttackResult", "AuditReport", "AvatarResult", "EvaluatedData",
                "Evaluation", "Failure", "KAnonymity", "LDiversity", "LinkReport", "Metric", "ReidentificationRisk",
                "TableRelease", "ViewAudit"]


def test_every_result_type_is_exported_from_the_package():
    for name in RESULT_TYPES:
        assert name in relanon.__all__ and isinstance(getattr(relanon, name), type), name


def test_an_evaluation_keeps_the_data_apart_and_can_drop_it():
    schema = load_schema({"relanon": 1, "tables": {"people": {
        "primary_key": "id", "individual": True, "columns": {"age": "integer", "sex": "categorical"}}}})
    people = {"people": pd.DataFrame({"id": range(30), "age": range(30), "sex": ["F", "M", "M"] * 10})}
    evaluation = relanon.evaluate(schema, people, people, progress=False)
    assert isinstance(evaluation, relanon.Evaluation) and isinstance(evaluation.data, relanon.EvaluatedData)
    assert evaluation.original is people and evaluation.anonymized is people
    light = evaluation.without_data()
    assert light.data is None and light.original is None and light.anonymized is None
    assert light.to_dict() == evaluation.to_dict() and light.schema is schema
    assert "EvaluatedData" not in repr(evaluation) and "data=" not in repr(evaluation)
    user_fields = {f.name for f in dataclasses.fields(relanon.Evaluation)} - {"data", "schema"}
    assert not any(isinstance(getattr(evaluation, name), dict) and "people" in getattr(evaluation, name)
                   and isinstance(getattr(evaluation, name)["people"], pd.DataFrame) for name in user_fields)
