"""What a de-associative method releases: the table's released shape and its companion table.

Anatomization releases a table without its sensitive column, plus a group id, and a companion
table ``<table>_sensitive`` (group id, sensitive value, count); bucketization adds a bucket id. The id
columns are named ``group_id`` and ``bucket_id``, or ``group_id_1``... when the table has a column of that
name (:func:`group_column`, :func:`bucket_column`).
Readers, validation and the release writer need these shapes without running the methods.
"""

from __future__ import annotations

from dataclasses import replace

from relanon.common.options import Method
from relanon.schema.model import Column, Table

GROUP_COLUMN = "group_id"
"""Column linking an anatomized table to its ``<table>_sensitive`` table."""

COUNT_COLUMN = "count"
"""Column of ``<table>_sensitive`` holding how often a value occurs in a group."""

BUCKET_COLUMN = "bucket_id"
"""Column of a bucketized table naming the bucket of each record."""


def group_column(table) -> str:
    """The group id column of ``table`` anatomized: :data:`GROUP_COLUMN`, or ``group_id_1``, ``group_id_2``...
    when the table has a column of that name (the first name free among its keys and columns).

    Examples
    --------
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {"primary_key": "id",
    ...     "columns": {"group_id": "categorical", "diag": "categorical"}, "quasi_identifiers": ["group_id"],
    ...     "anonymize": {"method": "anatomize", "sensitive": "diag"}}}})
    >>> group_column(schema["people"])
    'group_id_1'
    """
    return free_column(table, GROUP_COLUMN)


def bucket_column(table) -> str:
    """The bucket id column of ``table`` bucketized: :data:`BUCKET_COLUMN`, or ``bucket_id_1``... when taken."""
    return free_column(table, BUCKET_COLUMN)


def free_column(table, name: str) -> str:
    """``name``, or ``name_1``, ``name_2``... the first that is none of the table's keys and columns."""
    taken = set(table.all_columns)
    chosen, number = name, 0
    while chosen in taken:
        number += 1
        chosen = f"{name}_{number}"
    return chosen

def companion_name(table) -> str:
    """Name of the sensitive table released beside an anatomized table."""
    return f"{table.name}_sensitive"


def released_table(table):
    """The table as its de-associative method releases it.

    Anatomization removes the sensitive column and adds the group id; bucketization adds the
    bucket id. Other tables are returned unchanged.
    """
    method = table.anonymize.method
    if method == Method.ANATOMIZE:
        sensitive = table.anonymize.sensitive[0]
        columns = tuple(c for c in table.columns if c.name != sensitive)
        return replace(table, columns=(Column(group_column(table), "categorical"), *columns),
                       sensitive=tuple(s for s in table.sensitive if s != sensitive))
    if method == Method.BUCKETIZE:
        return replace(table, columns=(*table.columns, Column(bucket_column(table), "categorical")))
    return table


def companion_table(table):
    """The declaration of the sensitive table of an anatomized table: group id, value, count.

    Its "primary key" is the group id, which is not unique there: the table is checked for types
    only, not for key uniqueness.
    """
    sensitive = table.column(table.anonymize.sensitive[0])
    return Table(
        name=companion_name(table),
        primary_key=group_column(table),
        columns=(Column(sensitive.name, sensitive.type), Column(COUNT_COLUMN, "integer")),
    )


def looks_released(table, frame) -> bool:
    """Whether ``frame`` has the shape that ``table``'s de-associative method releases."""
    method = table.anonymize.method
    if method == Method.ANATOMIZE:
        return group_column(table) in frame.columns and table.anonymize.sensitive[0] not in frame.columns
    if method == Method.BUCKETIZE:
        return bucket_column(table) in frame.columns
    return False
