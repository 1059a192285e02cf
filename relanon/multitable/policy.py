"""The per-table policy of a run, one truth for both engines (the local :mod:`relanon.multitable.pipeline` and
the Dask :mod:`relanon.distributed.run`): each table's seed, its ``k``, the fewest holders of a released value,
the columns decoded as sensitive, the small-group rules, the internal names of its enriched columns, the rules
between its columns, the problems that stop a run before any long work, and the choices that weaken privacy.
"""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from relanon.common.errors import DataError, ParameterError, Problem
from relanon.engine.columns import NUMERIC_KINDS, numeric_values
from relanon.engine.deassociate import anatomize, bucketize
from relanon.engine.rule_finding import find_rules
from relanon.engine.small_groups import COMBINATION_HOLDERS
from relanon.multitable.results import TableRelease
from relanon.schema.graph import about_people, child_links, parent_links
from relanon.schema.model import Schema, Table
from relanon.schema.shapes import BUCKET_COLUMN, GROUP_COLUMN, bucket_column, group_column

MIN_AVATAR_ROWS = 3  # the avatar method needs k >= 2 other records


class SensitiveChoiceWarning(UserWarning):
    """A choice weakens privacy (``original_order`` matching, ``protect_sensitive: false``)."""


@dataclass(frozen=True)
class AvatarSettings:
    """How a table's enriched rows are avatarized, as both engines read the schema (:func:`avatar_settings`).

    ``k`` the table's neighbours (lowered below the rows), ``min_counts`` the fewest records holding a value
    an avatar may carry (per column, :func:`min_counts`), ``sensitive`` the columns decoded leaving the
    column out (:func:`sensitive_columns`), ``small_groups`` the small-group rules (:func:`small_group_rules`).
    """

    k: int
    min_counts: dict
    sensitive: tuple
    small_groups: dict


def avatar_settings(schema: Schema, name: str, types, n_rows: int) -> AvatarSettings:
    """The :class:`AvatarSettings` of table ``name`` whose enriched columns are ``types``, avatarized in sets of
    ``n_rows`` rows (the table, or its smallest batch)."""
    k = resolved_k(schema[name], n_rows)
    return AvatarSettings(k, min_counts(schema, name, k, types), tuple(sensitive_columns(schema, name, types)),
                          small_group_rules(schema, name))


def size_problems(schema: Schema, original: dict) -> list[Problem]:
    problems = []
    for table in schema:
        n = len(original[table.name])
        if table.anonymize.method == "avatar" and 0 < n < MIN_AVATAR_ROWS:
            problems.append(
                Problem(
                    f"the table has {n} row{'s' if n > 1 else ''}; the avatar method needs at least "
                    f"{MIN_AVATAR_ROWS} (each avatar mixes k >= 2 other records). If the table holds no "
                    "personal data, declare anonymize: {method: keep}",
                    table.name,
                )
            )
    return problems


def value_problems(schema: Schema, original: dict) -> list[Problem]:
    """Values the avatar method cannot code (infinite numbers), in every table it anonymizes: the check
    :func:`relanon.engine.columns.numeric_values` makes when the table is coded, made for all tables at once."""
    problems = []
    for table in schema:
        if table.anonymize.method != "avatar":
            continue
        frame = original[table.name]
        for column in table.released_columns:
            if column.type in NUMERIC_KINDS and column.name in frame.columns:
                try:
                    numeric_values(frame[column.name], column.type, table=table.name)
                except DataError as error:
                    problems += error.problems
    return problems


# the dates every step can compute with (pandas' nanosecond range; the report draws them too)
DATE_RANGE = (pd.Timestamp.min.ceil("D"), pd.Timestamp.max.floor("D"))


def date_problems(schema: Schema, original: dict) -> list[Problem]:
    """Dates outside :data:`DATE_RANGE` (1677-09-22 to 2262-04-11) in the released datetime columns of
    every table, each problem naming its table, column and rows (by primary key): read fine, they are
    refused before any work, since their differences and the report's axes overflow."""
    low, high = (np.datetime64(bound.to_datetime64(), "us") for bound in DATE_RANGE)
    problems = []
    for table in schema:
        frame = original[table.name]
        for column in table.released_columns:
            if column.type != "datetime" or column.name not in frame.columns:
                continue
            values = frame[column.name]
            if not pd.api.types.is_datetime64_any_dtype(values.dtype):
                continue
            naive = values.dt.tz_convert("UTC").dt.tz_localize(None) if values.dt.tz is not None else values
            ticks = naive.to_numpy(dtype="datetime64[us]")
            outside = ~np.isnat(ticks) & ((ticks < low) | (ticks > high))
            if not outside.any():
                continue
            keys = frame[table.primary_key].to_numpy()[outside] if table.primary_key in frame.columns else None
            rows = "" if keys is None else \
                f" with {table.primary_key} {', '.join(map(str, keys[:5]))}{', ...' if len(keys) > 5 else ''}"
            problems.append(Problem(
                f"{int(outside.sum())} date(s) outside {DATE_RANGE[0]:%Y-%m-%d} .. {DATE_RANGE[1]:%Y-%m-%d}, the "
                f"dates relanon computes with, in the rows{rows}; correct them, or replace a placeholder such as "
                "9999-12-31 by a missing value", table.name, column.name,
                tuple(str(v)[:10] for v in pd.unique(ticks[outside])[:5])))
    return problems


def table_seeds(schema: Schema, random_state) -> dict[str, np.random.SeedSequence]:
    """One independent seed sequence per table, derived from its name, not from processing order."""
    if isinstance(random_state, np.random.Generator):
        entropy = int(random_state.integers(0, 2**63))
    elif isinstance(random_state, np.random.SeedSequence):
        entropy = random_state.entropy
    else:
        try:
            entropy = np.random.SeedSequence(random_state).entropy
        except (TypeError, ValueError):
            raise ParameterError(
                f"random_state must be a whole number >= 0, a numpy Generator or None, got {random_state!r}"
            ) from None
    return {
        name: np.random.SeedSequence(entropy, spawn_key=(zlib.crc32(name.encode("utf-8")),))
        for name in schema.tables
    }


def resolved_k(table: Table, n_rows: int) -> int:
    """The table's k, lowered to ``n_rows - 1`` (with a warning) when the table is smaller than k + 1."""
    k = table.anonymize.k_or_default
    if k >= n_rows >= MIN_AVATAR_ROWS:
        warnings.warn(
            f"table {table.name!r} has {n_rows} rows, fewer than k + 1 = {k + 1}: k lowered to {n_rows - 1}",
            stacklevel=4,
        )
        return n_rows - 1
    return k


def min_counts(schema: Schema, name: str, k: int, types) -> dict[str, int]:
    """Per avatarized column of a table, the fewest records that must hold a value for an avatar to carry it.

    The column's ``min_count`` when the schema sets one; otherwise the table's ``k`` for a table
    about people (:func:`about_people`) and 1 (every value) for reference data such as hospitals.
    A parent's columns broadcast into the table and the counts of children only steer the links
    and are never released as they are: 1.
    """
    table = schema[name]
    default = k if about_people(schema, name) else 1
    declared = {c.name: c.min_count for c in table.columns if getattr(c, "min_count", None) is not None}
    internal = set(enrichment_names(schema, name).values())
    return {c: 1 if c in internal else declared.get(c, default) for c in types}


def sensitive_columns(schema: Schema, name: str, types) -> list[str]:
    """The columns of the enriched table decoded leaving the column out: the table's declared
    sensitive columns, and the copies of the sensitive columns of its individual parents (a visit
    carrying its patient's ``smoker`` steered the link to a released patient with that value: inference
    of ``smoker`` from the patients' visits 0.26 on the demo, 0.03 with the copy decoded so). Copies
    from other parents (a prescription's visit) are left as they are: no attack reads that path, and
    decoding them cost the prescriptions' ``drug`` 0.06 of Hellinger distance. A table whose schema sets
    ``anonymize: {protect_sensitive: false}`` has neither its own columns nor their copies decoded so
    (:func:`unprotected_sensitive` says it in every output)."""
    internal = enrichment_names(schema, name)
    own = set(schema[name].sensitive) if schema[name].anonymize.protect_sensitive else set()
    parents = {internal[("parent", link.column, column)]
               for link in parent_links(schema, name)
               if schema[link.parent].individual and schema[link.parent].anonymize.protect_sensitive
               for column in schema[link.parent].sensitive if ("parent", link.column, column) in internal}
    return [c for c in types if c in own | parents]


def unprotected_sensitive(schema: Schema) -> list[str]:
    """The warnings of the tables whose sensitive columns are decoded like the others (``protect_sensitive:
    false``): each avatar then carries the sensitive values of its own neighbours."""
    return [
        f"{name} sets protect_sensitive: false: its sensitive columns ({', '.join(table.sensitive)}) are copied "
        f"from each avatar's own neighbours, so an attacker who knows a person's other columns can read her "
        f"values in the release; run relanon assess before publishing"
        for name, table in schema.tables.items()
        if table.anonymize.method == "avatar" and not table.anonymize.protect_sensitive and table.sensitive
    ]


def sensitive_choices(schema: Schema, links) -> list[str]:
    """Every choice of the run that weakens privacy, as the warnings to state in every output."""
    return unprotected_sensitive(schema) + [
        f"{r.child}.{r.column} -> {r.parent} used original_order: each anonymized {r.child} row keeps "
        f"the {r.parent} of its original record, which weakens privacy"
        for r in links
        if r.sensitive
    ]


def small_group_rules(schema: Schema, name: str) -> dict:
    """The small-group rules of :func:`relanon.engine.avatar.avatarize_in_run` for table ``name``
    (``small_groups``, ``shift_numbers`` and ``restore_spread`` of its :class:`~relanon.engine.avatar.RunHooks`,
    and ``combination_holders``): on for the individual tables, their numbers left unshifted when children are
    anchored to them, their tuples of categories held by the schema's ``combination_min_count`` records (2 by
    default). The spread of mixed numbers is restored except on either side of an anchored link: a stretched
    parent is a point no record is near, and a stretched child moves off the span its parent gives it, so that
    anchoring could not keep the children inside their parent's range."""
    individual = schema[name].individual
    anchored_below = any(fk.anchor for child in schema for fk in child.foreign_keys if fk.references == name)
    anchored_above = any(fk.anchor for fk in schema[name].foreign_keys)
    holders = schema[name].anonymize.combination_min_count
    return {"small_groups": individual, "shift_numbers": individual and not anchored_below,
            "restore_spread": not (anchored_below or anchored_above),
            "combination_holders": COMBINATION_HOLDERS if holders is None else holders}



def enrichment_names(schema: Schema, name: str) -> dict[tuple[str, ...], str]:
    """The internal columns of ``name``'s enriched table, each with a name no user column has.

    Keys are ``("parent", fk column, parent column)``, ``("present", fk column)`` and
    ``("count", child, fk column)``; names are ``<fk column>::<column>``, ``<fk column>::present`` and
    ``count::<child>::<fk column>``, prefixed with ``_`` as often as needed to differ from every
    column of the table and from each other (a user column named ``person_id::age`` is never
    overwritten, nor is a parent column named ``present``).
    """
    wanted = []
    for link in parent_links(schema, name):
        wanted += [(("parent", link.column, c.name), f"{link.column}::{c.name}") for c in schema[link.parent].released_columns]
        wanted.append((("present", link.column), f"{link.column}::present"))
    wanted += [(("count", link.child, link.column), f"count::{link.child}::{link.column}")
               for link in child_links(schema, name)]
    taken = set(schema[name].all_columns) | set(schema[name].column_names)
    names = {}
    for key, candidate in wanted:
        while candidate in taken:
            candidate = "_" + candidate
        taken.add(candidate)
        names[key] = candidate
    return names


def table_rules(table: Table, frame: pd.DataFrame, types) -> tuple:
    """The rules between the table's own released columns that its original rows obey
    (:func:`relanon.engine.rule_finding.find_rules`), none when the schema sets ``column_rules: false``."""
    if not table.anonymize.column_rules:
        return ()
    own = {c.name: c.type for c in table.released_columns if c.name in types and c.name in frame.columns}
    return find_rules(frame[list(own)], own)


def deassociated_release(table: Table, frame: pd.DataFrame, rng) -> TableRelease:
    """Anatomization or bucketization: original values and keys, links to sensitive values broken."""
    frame = frame[[c for c in frame.columns if c in set(table.output_columns)]]
    a = table.anonymize
    if a.method == "bucketize":
        column = _id_column(table, bucket_column(table), BUCKET_COLUMN, "bucket")
        try:
            released = bucketize(frame, list(table.quasi_identifiers), list(a.sensitive), k=a.k_or_default,
                                 random_state=rng, bucket_column=column)
        except DataError as error:  # name the table
            raise DataError(f"table {table.name!r} cannot be bucketized as declared",
                            [replace(p, table=table.name) for p in error.problems]) from None
        return TableRelease(table.name, a.method, released, np.arange(len(frame)), k=a.k_or_default)
    try:
        anatomy = anatomize(
            frame, a.sensitive[0], l=a.l_or_default, key=table.primary_key, random_state=rng,
            allow_suppression=a.allow_suppression, group_column=_id_column(table, group_column(table), GROUP_COLUMN, "group"),
        )
    except DataError as error:  # name the table, and say how to allow suppression in the schema
        problems = [
            replace(p, table=table.name, message=p.message.replace(
                "allow_suppression=True", "anonymize: {allow_suppression: true}"))
            for p in error.problems
        ]
        raise DataError(f"table {table.name!r} cannot be anatomized as declared", problems) from None
    keys = pd.Index(frame[table.primary_key].to_numpy())
    positions = keys.get_indexer(anatomy.qi_table[table.primary_key].to_numpy())
    return TableRelease(table.name, a.method, anatomy.qi_table.reset_index(drop=True), positions,
                        companion=anatomy.sensitive_table.reset_index(drop=True))


def _id_column(table: Table, name: str, usual: str, what: str) -> str:
    """The id column a de-associative method adds, said when the table's own column of the usual name moved it."""
    if name != usual:
        warnings.warn(f"table {table.name!r} has a column {usual!r} of its own: the {what} ids are released in a column "
                      f"{name!r}", stacklevel=3)
    return name
