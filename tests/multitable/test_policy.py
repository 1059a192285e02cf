"""Tests of relanon.multitable.policy: the per-table settings both engines read."""

from __future__ import annotations

import pytest

from relanon import datasets
from relanon.multitable import policy


@pytest.fixture(scope="module")
def hospital():
    return datasets.hospital(scale=0.02, seed=1)


def test_avatar_settings_gather_the_table_policy(hospital):
    schema, database = hospital
    types = {"age": "integer", "smoker": "boolean"}
    settings = policy.avatar_settings(schema, "patients", types, 1_000)
    assert settings.k == schema["patients"].anonymize.k_or_default
    assert settings.min_counts == policy.min_counts(schema, "patients", settings.k, types)
    assert list(settings.sensitive) == policy.sensitive_columns(schema, "patients", types)
    assert settings.small_groups == policy.small_group_rules(schema, "patients")


def test_avatar_settings_lower_k_below_the_rows_and_say_so(hospital):
    schema, _ = hospital
    k = schema["patients"].anonymize.k_or_default
    with pytest.warns(UserWarning, match=f"k lowered to {k - 1}"):
        settings = policy.avatar_settings(schema, "patients", {"age": "integer"}, k)
    assert settings.k == k - 1
