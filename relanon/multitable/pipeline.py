"""The multi-table run: tables are processed top-down, parents before children.

For each table, in the order of :func:`relanon.schema.graph.topological_order`:

1. *Enrichment*: the table's own released columns, plus each parent's released columns broadcast
   through the foreign key (prefixed ``<fk column>::``), plus, for each child link that uses
   ``linear_sum``, the number of children of each row (``count::<child>::<fk column>``), plus, for a
   foreign key holding missing values, whether the row has a parent (``<fk column>::present``).
   These internal names never replace a user column (see :func:`enrichment_names`).
2. *Avatarization* of the enriched table with the table's own ``k`` and ``ncp``; with several
   ``linear_sum`` child links, its drawn numbers of children are brought to their totals together
   (:func:`relanon.multitable.relinking.settle_counts`).
3. *Matching* of each parent link, in a factor space fitted on the parent's original columns, where
   the released parents and the avatar children's broadcast part are placed.
4. The broadcast, count and presence columns are dropped; each row gets a new primary key and its
   foreign keys the new keys of the matched parents.

Tables with ``anonymize: {method: keep}`` are released unchanged (keys included); their foreign keys
to anonymized parents are re-linked by their link method, since the parents' keys changed.
"""

from __future__ import annotations

import warnings
import zlib
from dataclasses import replace

import numpy as np
import pandas as pd

from relanon.common.errors import DataError, ParameterError, Problem
from relanon.common.progress import as_progress
from relanon.engine.avatar import avatarize
from relanon.engine.column_rules import find_rules, obey_rules
from relanon.engine.columns import NUMERIC_KINDS, numeric_values
from relanon.engine.deassociate import anatomize, bucketize
from relanon.engine.private_values import parent_codes
from relanon.engine.small_groups import COMBINATION_HOLDERS
from relanon.multitable.anchoring import anchor
from relanon.multitable.cross_rules import obey_cross_rules
from relanon.multitable.keys import new_keys
from relanon.multitable.relinking import relink, settle_counts
from relanon.multitable.results import AnonymizationResult, LinkReport, TableRelease
from relanon.schema.graph import about_people, child_links, parent_links, topological_order
from relanon.schema.model import Schema, Table
from relanon.schema.shapes import BUCKET_COLUMN, GROUP_COLUMN, bucket_column, companion_name, group_column
from relanon.schema.text_formats import formats_of, with_formats
from relanon.schema.validation import check_database

MIN_AVATAR_ROWS = 3  # the avatar method needs k >= 2 other records
ANCHOR_CHILDREN = True  # honour ``anchor: true`` links (switched off only to measure what anchoring does)


class SensitiveChoiceWarning(UserWarning):
    """A choice weakens privacy (``original_order`` matching, ``protect_sensitive: false``)."""


def anonymize(schema: Schema, database, *, random_state=None, progress=True) -> AnonymizationResult:
    """Anonymize a whole database, table by table from the top of the schema graph down.

    Parameters
    ----------
    schema : Schema
        The database's schema (see :func:`relanon.load_schema`).
    database : dict of DataFrame
        The tables keyed by schema name. They are checked against the schema and never modified.
    random_state : int, numpy Generator or None
        Seed of the run; ``None`` uses the schema's ``seed`` (fresh randomness when it has none).
    progress : bool or Progress
        Print a line per table and link (``False`` to stay quiet).

    Returns
    -------
    AnonymizationResult

    Examples
    --------
    >>> from relanon import datasets
    >>> schema, db = datasets.hospital(scale=0.02, seed=1)
    >>> result = anonymize(schema, db, random_state=3, progress=False)
    >>> sorted(result.tables) == sorted(db)
    True
    """
    report = as_progress(progress)
    original = check_database(schema, database)
    problems = size_problems(schema, original) + value_problems(schema, original)  # before any long work
    if problems:
        raise DataError("some tables cannot be anonymized as declared", problems)
    seeds = table_seeds(schema, schema.seed if random_state is None else random_state)
    releases: dict[str, TableRelease] = {}
    link_reports: list[LinkReport] = []
    order = topological_order(schema)
    for position, name in enumerate(order, start=1):
        table = schema[name]
        report.say(f"[{position}/{len(order)}] {name} ({len(original[name]):,} rows, {table.anonymize.method})")
        # spawn(5) gives the same first four streams as spawn(4)
        rng_avatar, rng_keys, rng_links, rng_anchor, rng_counts = (np.random.default_rng(s) for s in seeds[name].spawn(5))
        releases[name] = _release_table(schema, table, original, releases, rng_avatar, rng_keys, report)
        if releases[name].method == "avatar":  # a parent's numbers of children on its links go together
            settle_counts(schema, name, original, releases[name], rng_counts)
        for link in parent_links(schema, name):
            with report.step(f"link {name}.{link.column} -> {link.parent} ({link.method})", unit="blocks") as step:
                linked = relink(schema, link, original, releases, rng_links, progress=step)
                step.detail = f"{int(linked.notna().sum()):,} of {len(linked):,} rows linked"
            releases[name].frame[link.column] = linked
            link_reports.append(
                LinkReport(link.parent, name, link.column, link.method, len(linked), int(linked.notna().sum()),
                           report.timings[step.label])
            )
        if anchored(schema, releases[name]):
            # the rows it re-draws aim at their avatar values: values that obey the rules, as the Dask
            # engine's avatars do (it applies them in each batch), so that one batch there is this release
            obey(releases[name])
            with report.step(f"{name}: anchor on linked parents") as step:
                step.detail = f"{anchor_on_parents(schema, name, releases, rng_anchor):,} rows re-drawn"
        if releases[name].column_rules:
            # after the links and the anchoring, which re-draw rows: every released row obeys the rules
            with report.step(f"{name}: rules between columns") as step:
                obey(releases[name])
                step.detail = "; ".join(map(str, releases[name].column_rules))
    if any(fk.rules for t in schema for fk in t.foreign_keys):
        with report.step("rules across tables") as step:  # once every table is linked: functions recomputed
            step.detail = "; ".join(obey_cross_rules(schema, {name: releases[name].frame for name in order}))
    sensitive = sensitive_choices(schema, link_reports)
    for message in sensitive:
        warnings.warn(message, SensitiveChoiceWarning, stacklevel=2)
    tables = {name: releases[name].frame for name in schema.tables}
    for name, release in releases.items():
        if release.companion is not None:
            tables[companion_name(schema[name])] = release.companion
    for name, release in releases.items():  # each released column is written as the input wrote it
        with_formats(release.frame, formats_of(original[name]))
        if release.companion is not None:
            with_formats(release.companion, formats_of(original[name]))
    return AnonymizationResult(
        tables=tables,
        schema=schema,
        links=link_reports,
        sensitive_choices=sensitive,
        original=original,
        releases=releases,
        timings=dict(report.timings),
    )


# --------------------------------------------------------------------------- preparation


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


def anonymization_problems(schema: Schema, original: dict) -> list[Problem]:
    """Every problem :func:`anonymize` would stop on in a database that fits its schema (``check_database``):
    tables too small for the avatar method, values it cannot code, and anatomization or bucketization
    settings the data cannot meet (each de-associative table is released as :func:`anonymize` would, and
    thrown away). What ``relanon validate --data`` reports beyond the schema's types and keys."""
    problems = size_problems(schema, original) + value_problems(schema, original)
    for table in schema:
        if table.anonymize.method in ("anatomize", "bucketize"):
            try:
                deassociated_release(table, original[table.name], np.random.default_rng(0))
            except (DataError, ParameterError) as error:
                problems += getattr(error, "problems", None) or [Problem(str(error), table.name)]
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
            stacklevel=3,
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
    """The small-group rules of :func:`relanon.engine.avatar.avatarize` for table ``name``: on for the
    individual tables, their numbers left unshifted when children are anchored to them, their tuples of
    categories held by the schema's ``combination_min_count`` records (2 by default)."""
    individual = schema[name].individual
    anchored_below = any(fk.anchor for child in schema for fk in child.foreign_keys if fk.references == name)
    holders = schema[name].anonymize.combination_min_count
    return {"small_groups": individual, "shift_numbers": individual and not anchored_below,
            "combination_holders": COMBINATION_HOLDERS if holders is None else holders}


def parent_groups(schema: Schema, name: str, frame: pd.DataFrame) -> np.ndarray | None:
    """Each row's parents as codes (one column per foreign key, -1 for none), or None without parents."""
    return parent_codes(frame, [link.column for link in parent_links(schema, name)])


# --------------------------------------------------------------------------- enrichment names


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


def enrich(schema: Schema, name: str, original: dict, released: dict | None = None):
    """The table enriched for avatarization: own columns, parents' columns, children counts.

    Returns ``(frame, types, weights)``; ``released`` (table name -> released column names) limits
    the broadcast to what each parent releases (an anatomized parent keeps its sensitive column out).
    Internal columns are named by :func:`enrichment_names`.
    """
    table = schema[name]
    frame = original[name]
    internal = enrichment_names(schema, name)
    parts = {c.name: frame[c.name] for c in table.released_columns}
    types = {c.name: c.type for c in table.released_columns}
    weights = {c.name: c.weight for c in table.released_columns}
    for link in parent_links(schema, name):
        parent = schema[link.parent]
        parent_frame = original[link.parent].set_index(parent.primary_key)
        keys = frame[link.column]
        allowed = released[link.parent] if released is not None else None
        for column in parent.released_columns:
            if allowed is not None and column.name not in allowed:
                continue
            target = internal[("parent", link.column, column.name)]
            parts[target] = parent_frame[column.name].reindex(keys.to_numpy()).set_axis(frame.index)
            types[target], weights[target] = column.type, column.weight
        if keys.isna().any():
            target = internal[("present", link.column)]
            parts[target] = keys.notna().to_numpy()
            types[target], weights[target] = "boolean", 1.0
    for link in child_links(schema, name):
        if link.method != "linear_sum":
            continue
        counts = original[link.child][link.column].value_counts()
        target = internal[("count", link.child, link.column)]
        parts[target] = counts.reindex(frame[table.primary_key].to_numpy(), fill_value=0).to_numpy().astype("int64")
        types[target], weights[target] = "integer", 1.0
    enriched = pd.DataFrame(parts, index=frame.index).reset_index(drop=True)
    return enriched, types, weights


# --------------------------------------------------------------------------- one table


def _release_table(schema, table: Table, original, releases, rng_avatar, rng_keys, report) -> TableRelease:
    method = table.anonymize.method
    if method == "keep":
        frame = original[table.name]
        columns = [c for c in frame.columns if c in set(table.output_columns)]
        return TableRelease(table.name, method, frame[columns].copy(), np.arange(len(frame)))
    if method == "avatar":
        released = {name: set(release.frame.columns) for name, release in releases.items()}
        return _avatar_release(schema, table, original, released, rng_avatar, rng_keys, report)
    with report.step(f"{table.name}: {method}"):
        return deassociated_release(table, original[table.name], rng_avatar)


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


def _avatar_release(schema, table: Table, original, released, rng_avatar, rng_keys, report) -> TableRelease:
    frame = original[table.name]
    enriched, types, weights = enrich(schema, table.name, original, released)
    internal = enrichment_names(schema, table.name)
    n = len(frame)
    k = ncp = None
    with report.step(f"{table.name}: avatarize") as step:
        if n == 0 or not types:
            avatars, pairing = enriched, rng_avatar.permutation(n)
            avatars = enriched.iloc[pairing].reset_index(drop=True)
            step.detail = "nothing to avatarize: rows only shuffled" if n else "empty table"
        else:
            k = resolved_k(table, n)
            counts = [name for key, name in internal.items() if key[0] == "count" and name in enriched.columns]
            result = avatarize(
                enriched, types, k=k, ncp=table.anonymize.ncp, weights=weights, random_state=rng_avatar,
                name=table.name, drawn=counts, min_counts=min_counts(schema, table.name, k, types),
                sensitive=sensitive_columns(schema, table.name, types), groups=parent_groups(schema, table.name, frame),
                **small_group_rules(schema, table.name),
            )
            avatars, pairing = result.avatars, np.asarray(result.pairing)
            ncp = getattr(result, "ncp", table.anonymize.ncp)
            step.detail = f"k={k}, {len(enriched.columns)} columns"
    avatars = avatars.reset_index(drop=True)
    rules = table_rules(table, frame, types) if k is not None else ()
    released = pd.DataFrame(index=pd.RangeIndex(n))
    source_keys = frame[table.primary_key].to_numpy()[pairing]
    output = set(table.output_columns)
    for column in frame.columns:
        if column == table.primary_key:
            released[column] = new_keys(frame[column], source_keys, rng_keys)
        elif column in table.foreign_key_columns:
            released[column] = pd.Series(None, index=released.index, dtype=object)  # set when linked
        elif column in output:
            released[column] = avatars[column]
    return TableRelease(
        table.name, "avatar", released, pairing, enriched_original=enriched, enriched_avatars=avatars,
        enriched_types=types, enriched_weights=weights, k=k, ncp=ncp, internal_names=internal, column_rules=rules,
    )


def table_rules(table: Table, frame: pd.DataFrame, types) -> tuple:
    """The rules between the table's own released columns that its original rows obey
    (:func:`relanon.engine.column_rules.find_rules`), none when the schema sets ``column_rules: false``."""
    if not table.anonymize.column_rules:
        return ()
    own = {c.name: c.type for c in table.released_columns if c.name in types and c.name in frame.columns}
    return find_rules(frame[list(own)], own)


def obey(release: TableRelease) -> None:
    """Recompute, in place, the derived columns of a released table and of its enriched avatars (which the
    metrics read) from their released sources."""
    repaired = obey_rules(release.frame, release.column_rules)
    for rule in release.column_rules:
        release.frame[rule.target] = repaired[rule.target]
    if release.enriched_avatars is not None:
        repaired = obey_rules(release.enriched_avatars, release.column_rules)
        for rule in release.column_rules:
            release.enriched_avatars[rule.target] = repaired[rule.target]


# --------------------------------------------------------------------------- anchoring


def anchored(schema: Schema, release: TableRelease) -> bool:
    """Children re-drawn on their linked parents: avatar tables with a foreign key declared ``anchor: true``."""
    anchored = any(fk.anchor for fk in schema[release.name].foreign_keys)
    return (ANCHOR_CHILDREN and anchored and release.method == "avatar" and release.k is not None
            and len(release.frame) > 0 and release.enriched_types is not None)


def anchor_on_parents(schema: Schema, name: str, releases: dict, rng) -> int:
    """Re-draw the released rows of ``name`` on the parents they are linked to (:mod:`anchoring`).

    The parents of the foreign keys declared ``anchor: true`` are reproduced; rows linked on every
    such key are re-drawn, the others keep their avatar values. Returns the number of rows re-drawn.
    """
    release = releases[name]
    table = schema[name]
    types, weights = release.enriched_types, release.enriched_weights
    enriched, avatars = release.enriched_original, release.enriched_avatars
    own = [c.name for c in table.released_columns if c.name in types and c.name in release.frame.columns]
    names = release.internal_names
    drawn = [n for key, n in names.items() if key[0] == "count" and n in enriched.columns]
    targets = {c: avatars[c] for c in own}
    anchors, linked = [], np.ones(len(release.frame), dtype=bool)
    anchored = {fk.column for fk in table.foreign_keys if fk.anchor}
    for link in (link for link in parent_links(schema, name) if link.column in anchored):
        parent = releases[link.parent]
        keys = release.frame[link.column]
        linked &= keys.notna().to_numpy()
        rows = pd.Index(parent.frame[schema[link.parent].primary_key]).get_indexer(keys.to_numpy())
        for column in schema[link.parent].released_columns:
            target = names.get(("parent", link.column, column.name))
            if target in types and column.name in parent.frame.columns:
                values = parent.frame[column.name]
                targets[target] = pd.Series(pd.api.extensions.take(values.array, rows, allow_fill=True))
                anchors.append(target)
    if not anchors or not own or not linked.any():
        return 0
    targets = pd.DataFrame(targets).iloc[np.flatnonzero(linked)]
    redrawn = anchor(enriched, targets, types, weights, own, anchors, drawn, k=release.k, ncp=release.ncp,
                     random_state=rng)
    rows = np.flatnonzero(linked)
    for column in redrawn.columns:
        for frame in (release.frame, avatars) if column in own else (avatars,):
            if linked.all():
                frame[column] = redrawn[column].to_numpy() if frame[column].dtype == redrawn[column].dtype \
                    else redrawn[column].astype(frame[column].dtype).to_numpy()
            else:
                updated = frame[column].copy()
                updated.iloc[rows] = redrawn[column].to_numpy()
                frame[column] = updated
    return len(rows)
