"""Rules across tables: found by init in the original, kept in the release at init's defaults, named by the verdict
when broken on purpose."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from shop_and_league import shop_and_league

from relanon.metrics.failures import failures
from relanon.metrics.scenarios import evaluate
from relanon.multitable.pipeline import anonymize
from relanon.schema.cross_rules import CrossRule, broken_rows
from relanon.schema.model import load_schema
from relanon.schema.proposal import propose_schema


def rules_of(schema) -> dict:
    return {(t.name, fk.column): {str(r) for r in fk.rules} for t in schema for fk in t.foreign_keys if fk.rules}


def test_broken_rows_counts_each_kind():
    parent = pd.DataFrame({"id": [1, 2], "lo": [0, 5], "hi": [3, 9], "c": ["a", "b"], "n": [1, 3]})
    child = pd.DataFrame({"p": [1, 2, 2], "x": [4, 5, 9], "c": ["a", "a", "b"]})
    assert broken_rows(CrossRule("within", "x", ("lo", "hi")), child, parent, "p", "id") == 1  # 4 > 3
    assert broken_rows(CrossRule("copy", "c", ("c",)), child, parent, "p", "id") == 1
    assert broken_rows(CrossRule("count", None, ("n",)), child, parent, "p", "id") == 1  # parent 2 has 2
    assert broken_rows(CrossRule("sum", "x", ("n",)), child, parent, "p", "id") == 2


def test_init_proposes_the_rules_the_original_obeys_and_anchor_for_a_range():
    proposal = propose_schema(shop_and_league())
    found = rules_of(proposal.schema)
    assert found[("invoices", "customer_id")] == {"billing_country = parent.country"}
    assert found[("lines", "invoice_id")] == {"parent.total = sum of amount", "parent.n_lines = number of children"}
    assert found[("seasons", "player_id")] == {"parent.debut_year <= season_year <= parent.last_year"}
    anchored = {(t.name, fk.column) for t in proposal.schema for fk in t.foreign_keys if fk.anchor}
    assert anchored == {("seasons", "player_id")}
    assert "rules:" in proposal.to_yaml() and load_schema(proposal.schema.to_dict()) == proposal.schema


@pytest.mark.slow
def test_the_release_at_init_defaults_keeps_every_rule_and_the_verdict_names_a_broken_one():
    database = shop_and_league()
    schema = propose_schema(database).schema  # no manual edit
    assert len(rules_of(schema)) == 3
    with warnings.catch_warnings():  # small tables: what the rare-value rule does to them is said in warnings
        warnings.simplefilter("ignore")
        result = anonymize(schema, database, random_state=1, progress=False)
    released = result.tables
    for table in schema:
        for fk in table.foreign_keys:
            key = schema[fk.references].primary_key
            for rule in fk.rules:
                assert broken_rows(rule, result.original[table.name], result.original[fk.references], fk.column, key) == 0
                assert broken_rows(rule, released[table.name], released[fk.references], fk.column, key) == 0, rule
    evaluation = evaluate(schema, result.original, released, result, progress=False)
    assert not [f for f in failures(evaluation) if f.metric == "rows_breaking_rule"]
    assert (evaluation.relations["rules_broken"] == 0).all()

    broken = {name: frame.copy() for name, frame in released.items()}
    broken["invoices"].loc[broken["invoices"].index[:3], "total"] += 1.0
    broken["invoices"].loc[broken["invoices"].index[:2], "billing_country"] = "Atlantis"
    seasons = broken["seasons"]
    seasons.loc[seasons.index[:4], "season_year"] = 1900
    named = {f.view for f in failures(evaluate(schema, result.original, broken, result, progress=False))
             if f.metric == "rows_breaking_rule"}
    assert named == {"lines.invoice_id -> invoices: rule parent.total = sum of amount",
                     "invoices.customer_id -> customers: rule billing_country = parent.country",
                     "seasons.player_id -> players: rule parent.debut_year <= season_year <= parent.last_year"}


def test_a_table_released_as_it_is_is_never_rewritten_by_a_rule():
    from relanon.multitable.cross_rules import obey_cross_rules

    spec = {"relanon": 1, "tables": {
        "invoices": {"primary_key": "id", "columns": {"total": "continuous"}, "anonymize": {"method": "keep"}},
        "lines": {"primary_key": "id", "columns": {"amount": "continuous"}, "foreign_keys": [
            {"column": "invoice", "references": "invoices", "rules": [{"rule": "sum", "column": "amount", "parent": "total"}]}]}}}
    tables = {"invoices": pd.DataFrame({"id": [1, 2], "total": [9.0, 9.0]}),
              "lines": pd.DataFrame({"id": [1, 2], "invoice": [1, 2], "amount": [2.0, 3.0]})}
    assert obey_cross_rules(load_schema(spec), tables) == []
    assert tables["invoices"]["total"].tolist() == [9.0, 9.0]
    spec["tables"]["invoices"]["anonymize"] = {"method": "avatar"}
    assert len(obey_cross_rules(load_schema(spec), tables)) == 1
    assert tables["invoices"]["total"].tolist() == [2.0, 3.0]
