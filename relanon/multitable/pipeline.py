"""The multi-table run: tables are processed top-down, parents before children.

For each table, in the order of :func:`relanon.schema.graph.topological_order`:

1. *Enrichment*: the table's own released columns, plus each parent's released columns broadcast
   through the foreign key (prefixed ``<fk column>::``), plus, for each child link that uses
   ``linear_sum``, the number of children of each row (``count::<child>::<fk column>``), plus, for a
   foreign key holding missing values, whether the row has a parent (``<fk column>::present``).
   These internal names never replace a user column (see :func:`enrichment_names`).
2. *Avatarization* of the enriched table with the table's own ``k`` and ``ncp``; with several
   ``linear_sum`` child links, its drawn numbers of children are brought to their totals together
   (:func:`relanon.multitable.linking.counts.settle_counts`).
3. *Matching* of each parent link, in a factor space fitted on the parent's original columns, where
   the released parents and the avatar children's broadcast part are placed.
4. The broadcast, count and presence columns are dropped; each row gets a new primary key and its
   foreign keys the new keys of the matched parents.

Tables with ``anonymize: {method: keep}`` are released unchanged (keys included); their foreign keys
to anonymized parents are re-linked by their link method, since the parents' keys changed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from relanon.common.errors import DataError, ParameterError, Problem
from relanon.common.progress import as_progress
from relanon.engine.avatar import RunHooks, avatarize_in_run
from relanon.engine.column_rules import obey_rules
from relanon.engine.generalize import generalized_detail
from relanon.engine.private_values import parent_codes
from relanon.multitable.associations import keep_combinations_unique
from relanon.multitable.cross_rules import obey_cross_rules
from relanon.multitable.keys import new_keys
from relanon.multitable.linking.anchoring import anchor_on_parents, anchored
from relanon.multitable.linking.counts import settle_counts
from relanon.multitable.linking.foreign_keys import relink
from relanon.multitable.policy import (
    SensitiveChoiceWarning,
    avatar_settings,
    date_problems,
    deassociated_release,
    enrichment_names,
    sensitive_choices,
    size_problems,
    table_rules,
    table_seeds,
    value_problems,
)
from relanon.multitable.results import AnonymizationResult, LinkReport, TableRelease
from relanon.multitable.self_reference import relink_within
from relanon.schema.graph import child_links, parent_links, self_links, topological_order
from relanon.schema.model import Schema, Table
from relanon.schema.shapes import companion_name
from relanon.schema.text_formats import formats_of, with_formats
from relanon.schema.validation import check_database

LINK_UNITS = {"linear_sum": "groups", "minimum_distance": "children"}
"""What the progress of a link counts: groups of children solved exactly, or children placed."""


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
    problems = size_problems(schema, original) + value_problems(schema, original) + date_problems(schema, original)
    if problems:
        raise DataError("some tables cannot be anonymized as declared", problems)
    seeds = table_seeds(schema, schema.seed if random_state is None else random_state)
    releases: dict[str, TableRelease] = {}
    link_reports: list[LinkReport] = []
    order = topological_order(schema)
    for position, name in enumerate(order, start=1):
        table = schema[name]
        report.say(f"[{position}/{len(order)}] {name} ({len(original[name]):,} rows, {table.anonymize.method})")
        # spawn(6) gives the same first five streams as spawn(5)
        rng_avatar, rng_keys, rng_links, rng_anchor, rng_counts, rng_within = (
            np.random.default_rng(s) for s in seeds[name].spawn(6))
        releases[name] = _release_table(schema, table, original, releases, rng_avatar, rng_keys, report)
        if releases[name].method == "avatar":  # a parent's numbers of children on its links go together
            settle_counts(schema, name, original, releases[name], rng_counts)
        for link in parent_links(schema, name):
            with report.step(f"link {name}.{link.column} -> {link.parent} ({link.method})",
                             unit=LINK_UNITS.get(link.method, "steps")) as step:
                linked = relink(schema, link, original, releases, rng_links, progress=step)
                step.detail = f"{int(linked.notna().sum()):,} of {len(linked):,} rows linked"
            releases[name].frame[link.column] = linked
            link_reports.append(
                LinkReport(link.parent, name, link.column, link.method, len(linked), int(linked.notna().sum()),
                           report.timings[step.label])
            )
        for link in self_links(schema, name):  # a hierarchy inside the table, re-drawn among its released rows
            releases[name].frame[link.column] = relink_within(schema, link, original, releases[name], rng_within)
        if schema[name].association:
            changed, left = keep_combinations_unique(schema, name, original, releases, rng_within)
            if changed or left:
                report.say(f"{name}: {changed:,} links moved to keep combinations of parents unique"
                           + (f", {left:,} rows left on a repeated one" if left else ""))
        if anchored(schema, releases[name]):
            # the rows it re-draws aim at their avatar values: values that obey the rules, as the Dask
            # engine's avatars do (it applies them in each batch), so that one batch there is this release
            obey(releases[name])
            with report.step(f"{name}: anchor on linked parents", unit="rows") as step:
                step.detail = f"{anchor_on_parents(schema, name, releases, rng_anchor, progress=step):,} rows re-drawn"
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


def anonymization_problems(schema: Schema, original: dict) -> list[Problem]:
    """Every problem :func:`anonymize` would stop on in a database that fits its schema (``check_database``):
    tables too small for the avatar method, values it cannot code, and anatomization or bucketization
    settings the data cannot meet (each de-associative table is released as :func:`anonymize` would, and
    thrown away). What ``relanon validate --data`` reports beyond the schema's types and keys."""
    problems = size_problems(schema, original) + value_problems(schema, original) + date_problems(schema, original)
    for table in schema:
        if table.anonymize.method in ("anatomize", "bucketize"):
            try:
                deassociated_release(table, original[table.name], np.random.default_rng(0))
            except (DataError, ParameterError) as error:
                problems += getattr(error, "problems", None) or [Problem(str(error), table.name)]
    return problems


def parent_groups(schema: Schema, name: str, frame: pd.DataFrame) -> np.ndarray | None:
    """Each row's parents as codes (one column per foreign key, -1 for none), or None without parents."""
    return parent_codes(frame, [link.column for link in parent_links(schema, name)])


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


def _avatar_release(schema, table: Table, original, released, rng_avatar, rng_keys, report) -> TableRelease:
    frame = original[table.name]
    enriched, types, weights = enrich(schema, table.name, original, released)
    internal = enrichment_names(schema, table.name)
    n = len(frame)
    k = ncp = None
    generalized = ()
    with report.step(f"{table.name}: avatarize", unit="stages") as step:
        if n == 0 or not types:
            avatars, pairing = enriched, rng_avatar.permutation(n)
            avatars = enriched.iloc[pairing].reset_index(drop=True)
            step.detail = "nothing to avatarize: rows only shuffled" if n else "empty table"
        else:
            settings = avatar_settings(schema, table.name, types, n)
            k = settings.k
            counts = [name for key, name in internal.items() if key[0] == "count" and name in enriched.columns]
            rules = dict(settings.small_groups)
            holders = rules.pop("combination_holders")
            result = avatarize_in_run(
                enriched, types, RunHooks(drawn=tuple(counts), groups=parent_groups(schema, table.name, frame), progress=step,
                                  **rules),
                k=k, ncp=table.anonymize.ncp, weights=weights, random_state=rng_avatar, name=table.name,
                min_counts=settings.min_counts, sensitive=list(settings.sensitive), combination_holders=holders,
            )
            avatars, pairing = result.avatars, np.asarray(result.pairing)
            ncp = getattr(result, "ncp", table.anonymize.ncp)
            generalized = tuple(getattr(result, "generalized", ()))
            step.detail = f"k={k}, {len(enriched.columns)} columns" + generalized_detail(generalized)
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
        generalized=generalized,
    )

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
