"""The schema graph: edges, order, links, groups."""

from relanon.schema.graph import (
    Link,
    all_links,
    child_links,
    connected_groups,
    parent_links,
    schema_graph,
    top_tables,
    topological_order,
)
from relanon.schema.model import load_schema


def schema():
    return load_schema({"relanon": 1, "tables": {
        "prescriptions": {"primary_key": "id", "foreign_keys": [{"column": "visit_id", "references": "visits"}]},
        "visits": {"primary_key": "id", "foreign_keys": [
            {"column": "patient_id", "references": "patients"},
            {"column": "doctor_id", "references": "doctors", "link": "minimum_distance"},
        ]},
        "doctors": {"primary_key": "id", "foreign_keys": [{"column": "hospital_id", "references": "hospitals"}]},
        "hospitals": {"primary_key": "id"},
        "patients": {"primary_key": "id"},
        "accounts": {"primary_key": "id"},
        "transfers": {"primary_key": "id", "foreign_keys": [
            {"column": "from_account", "references": "accounts"},
            {"column": "to_account", "references": "accounts"},
        ]},
        "lonely": {"primary_key": "id"},
    }})


def test_one_edge_per_foreign_key_even_to_the_same_parent():
    graph = schema_graph(schema())
    assert graph.number_of_edges() == 6
    assert set(graph["accounts"]["transfers"]) == {"from_account", "to_account"}


def test_parents_come_before_children():
    order = topological_order(schema())
    for link in all_links(schema()):
        assert order.index(link.parent) < order.index(link.child)
    assert order[0] == "hospitals"  # among ready tables, the first in the file goes first


def test_links_in_both_directions():
    s = schema()
    assert parent_links(s, "visits") == [
        Link("patients", "visits", "patient_id", "linear_sum"),
        Link("doctors", "visits", "doctor_id", "minimum_distance"),
    ]
    assert child_links(s, "accounts") == [
        Link("accounts", "transfers", "from_account", "linear_sum"),
        Link("accounts", "transfers", "to_account", "linear_sum"),
    ]
    assert child_links(s, "prescriptions") == []


def test_groups_and_tops():
    s = schema()
    groups = connected_groups(s)
    assert ["lonely"] in groups and ["accounts", "transfers"] in groups
    assert len(groups) == 3
    assert set(top_tables(s)) == {"hospitals", "patients", "accounts", "lonely"}
