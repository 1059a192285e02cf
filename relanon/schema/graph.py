"""The schema as a graph: tables are nodes, each foreign key an edge parent -> child.

A child may hold two foreign keys to the same parent (``transfers.from_account`` and
``transfers.to_account``), so the graph is a :class:`networkx.MultiDiGraph` whose edge key is
the foreign-key column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import networkx as nx

if TYPE_CHECKING:
    from relanon.schema.model import Schema


class Link(NamedTuple):
    """One foreign key seen as a link: ``child.column`` -> ``parent.primary_key``."""

    parent: str
    child: str
    column: str
    method: str


def schema_graph(schema: Schema) -> nx.MultiDiGraph:
    """The graph of the schema (unknown referenced tables are left out).

    Examples
    --------
    >>> from relanon.schema.model import load_schema
    >>> s = load_schema({"relanon": 1, "tables": {
    ...     "p": {"primary_key": "id"},
    ...     "c": {"primary_key": "id", "foreign_keys": [{"column": "p_id", "references": "p"}]}}})
    >>> list(schema_graph(s).edges(keys=True))
    [('p', 'c', 'p_id')]
    """
    graph = nx.MultiDiGraph(name=schema.name or "")
    for table in schema:
        graph.add_node(table.name, individual=table.individual)
    for table in schema:
        for fk in table.foreign_keys:
            if fk.references in schema.tables and fk.references != table.name:
                graph.add_edge(fk.references, table.name, key=fk.column, link=fk.link)
    return graph


def find_cycles(schema: Schema) -> list[list[str]]:
    """The cycles formed by foreign keys, each as the list of its tables in order."""
    simple = nx.DiGraph(schema_graph(schema))
    return [list(cycle) for cycle in nx.simple_cycles(simple)]


def topological_order(schema: Schema) -> list[str]:
    """Tables with every parent before its children; ties broken by order in the schema file."""
    order = {name: i for i, name in enumerate(schema.tables)}
    return list(nx.lexicographical_topological_sort(schema_graph(schema), key=order.__getitem__))


def parent_links(schema: Schema, table: str) -> list[Link]:
    """The links from ``table`` up to its parents, in the order of its foreign keys (self-references apart:
    :func:`self_links`)."""
    return [Link(fk.references, table, fk.column, fk.link) for fk in schema[table].foreign_keys
            if fk.references != table]


def self_links(schema: Schema, table: str) -> list[Link]:
    """The links from ``table`` to itself (a manager, a parent category): not edges of the graph, re-linked
    among the table's own released rows (:mod:`relanon.multitable.self_reference`)."""
    return [Link(table, table, fk.column, fk.link) for fk in schema[table].self_references]


def child_links(schema: Schema, table: str) -> list[Link]:
    """The links from ``table`` down to its children, in schema order."""
    return [
        Link(table, child.name, fk.column, fk.link)
        for child in schema
        for fk in child.foreign_keys
        if fk.references == table and child.name != table
    ]


def about_people(schema: Schema, name: str) -> bool:
    """Whether a table's rows describe people: it is individual, or lies below an individual table."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if schema[current].individual:
            return True
        for link in parent_links(schema, current):
            if link.parent not in seen:
                seen.add(link.parent)
                todo.append(link.parent)
    return False


SMALL_TABLE_FACTOR = 2


def too_small_for_k(schema: Schema, sizes) -> dict[str, str]:
    """What to say of each individual table released by the avatar method that holds fewer than ``2 k``
    people (``sizes``: table -> rows): one person cannot hide among ``k`` others there, and relanon lowers
    ``k`` to the rows but one, generalizes or merges every value fewer than ``k`` hold, and keeps numbers
    and dates between bounds ``k`` of them lie beyond (README, small groups).

    Examples
    --------
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"staff": {"primary_key": "id", "individual": True,
    ...                       "columns": {"born": "datetime"}}}})
    >>> too_small_for_k(schema, {"staff": 8})["staff"][:52]
    '8 people, fewer than 2 k = 20: no one can hide among'
    """
    said = {}
    for name, table in schema.tables.items():
        n, k = sizes.get(name, 0), table.anonymize.k_or_default
        if table.individual and table.anonymize.method == "avatar" and 0 < n < SMALL_TABLE_FACTOR * k:
            lowered = f"k is lowered to {n - 1}, " if n <= k else ""
            said[name] = (f"{n} people, fewer than {SMALL_TABLE_FACTOR} k = {SMALL_TABLE_FACTOR * k}: no "
                        f"one can hide among {k} others. relanon releases it anyway: {lowered}every value that fewer "
                        f"than {min(k, max(n - 1, 1))} people hold is generalized or merged (an interval's mean for "
                        "dates and numbers), and no released cell is one person's own value; check that the "
                        "release may still be published, or coarsen or drop its columns")
    return said


def all_links(schema: Schema) -> list[Link]:
    """Every link of the schema, children in topological order."""
    return [link for name in topological_order(schema) for link in parent_links(schema, name)]


def connected_groups(schema: Schema) -> list[list[str]]:
    """Groups of tables linked to each other; a table linked to none is a group of its own."""
    graph = schema_graph(schema).to_undirected(as_view=True)
    order = {name: i for i, name in enumerate(schema.tables)}
    groups = [sorted(group, key=order.__getitem__) for group in nx.connected_components(graph)]
    return sorted(groups, key=lambda g: order[g[0]])


def top_tables(schema: Schema) -> list[str]:
    """Tables without a parent."""
    return [t.name for t in schema if not parent_links(schema, t.name)]
