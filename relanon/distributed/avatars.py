"""Batches avatarized on the workers, with their new keys; released tables written part by part.

Each batch of an enriched table is avatarized on its own in the table's shared factor space
(:func:`relanon.engine.avatar.avatarize_in_run` with the space in its hooks; a table of one batch fits its own, exactly as
the local engine does), gets its rows' new primary keys (:func:`relanon.multitable.keys.batch_keys`),
and is written to ``work/avatars/<table>/part.<batch>`` with, beside the avatar's columns, its release
position ``_pos`` and the table position ``_source`` of the record it comes from (private: it never
reaches the release).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from relanon.distributed.cluster import gather_counted
from relanon.distributed.read import ROW
from relanon.distributed.work import folder, read_parts, write
from relanon.engine.avatar import RunHooks, avatarize_in_run
from relanon.engine.column_rules import obey_rules
from relanon.engine.private_values import parent_codes
from relanon.engine.small_groups import COMBINATION_HOLDERS
from relanon.multitable.keys import KeyShape, batch_keys
from relanon.multitable.policy import table_rules
from relanon.schema.model import Table
from relanon.stores.partitioned import write_part

POS, SOURCE = "_pos", "_source"
SOURCE_FK = "__source::"  # the original foreign key of the record an avatar comes from (original_order links)


@dataclass(frozen=True)
class BatchJob:
    """What a worker needs to avatarize one batch of a table."""

    table: Table
    types: dict
    weights: dict
    k: int | None  # the table's k, lowered to what its smallest batch allows
    drawn: tuple
    space: object  # the shared FactorSpace, or None for a table of one batch
    keys: KeyShape
    key_dtype: object
    n_total: int
    source_fks: tuple  # foreign keys whose original value travels with the avatar (original_order links)
    min_counts: dict | None = None  # the rare-value rule (relanon.multitable.policy.min_counts)
    sensitive: tuple = ()  # columns decoded leaving the column out
    value_counts: dict | None = None  # the whole table's value counts, for the rule (relanon.distributed.rare_values)
    extremes: dict | None = None  # the whole table's min_count-th smallest and largest numbers, likewise
    small_groups: dict = field(default_factory=dict)  # relanon.multitable.policy.small_group_rules


def avatarize_batches(client, job: BatchJob, work, offsets, generators, key_generators, progress=None) -> list[dict]:
    """Avatarize every batch of ``job.table``; returns, per batch, its rows and the axes searched.
    ``progress(done, total)`` counts the batches as they are avatarized."""
    name = job.table.name
    scattered = client.scatter(job, broadcast=True)
    futures = [client.submit(_avatarize, scattered, str(folder(work, "batches", name, f"part.{b:05d}.parquet")),
                             str(folder(work, "avatars", name)), b, int(offset), rng, key_rng, pure=False)
               for b, (offset, rng, key_rng) in enumerate(zip(offsets, generators, key_generators, strict=True))]
    done = gather_counted(client, futures, progress, total=len(futures))
    # the workers' warnings (a column released missing for its rare values), once each, where the user reads
    # them: in a worker process they were printed with their source line, unlike every other warning
    for message in dict.fromkeys(message for d in done for message in d.pop("warnings", ())):
        warnings.warn(message, UserWarning, stacklevel=2)
    return done


def _avatarize(job: BatchJob, *args) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        done = _avatarize_batch(job, *args)
    done["warnings"] = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    return done


def _avatarize_batch(job: BatchJob, path, directory, batch: int, offset: int, rng, key_rng) -> dict:
    table = job.table
    frame = read_parts([path])
    n = len(frame)
    enriched = frame[list(job.types)]
    ncp, rules, generalized = None, (), []
    if n == 0 or not job.types:
        pairing = rng.permutation(n)
        avatars = enriched.iloc[pairing].reset_index(drop=True)
    else:
        rules = dict(job.small_groups)
        holders = rules.pop("combination_holders", COMBINATION_HOLDERS)
        hooks = RunHooks(drawn=tuple(job.drawn), space=job.space, groups=job_groups(job, frame),
                         value_counts=job.value_counts, extremes=job.extremes, **rules)
        result = avatarize_in_run(enriched, job.types, hooks, k=job.k, ncp=table.anonymize.ncp, weights=job.weights,
                                  random_state=rng, name=table.name, min_counts=job.min_counts,
                                  sensitive=list(job.sensitive), combination_holders=holders)
        avatars, pairing, ncp = result.avatars.reset_index(drop=True), np.asarray(result.pairing), result.ncp
        generalized = result.generalized
        # the rules the batch's original rows obey (found per batch: the whole table is never in one place)
        rules = table_rules(table, frame, job.types)
        avatars = obey_rules(avatars, rules)
    source_keys = frame[table.primary_key].to_numpy()[pairing]
    out = avatars.copy()
    out[table.primary_key] = batch_keys(job.keys, job.key_dtype, offset, source_keys, job.n_total, key_rng).to_numpy()
    out[table.primary_key] = out[table.primary_key].astype(job.key_dtype)
    out[POS] = np.arange(offset, offset + n, dtype=np.int64)
    out[SOURCE] = frame[ROW].to_numpy()[pairing]
    for fk in job.source_fks:
        out[SOURCE_FK + fk] = frame[fk].take(pairing).reset_index(drop=True)
    write(out, directory, batch)
    return {"rows": n, "ncp": ncp, "rules": list(rules), "generalized": generalized}


def job_groups(job: BatchJob, frame: pd.DataFrame):
    """The batch's parents as codes (sensitive values never come from a row of the same parent)."""
    return parent_codes(frame, job.table.foreign_key_columns) if job.sensitive else None


def write_release_parts(client, table: Table, work, target, n_batches: int, columns: list[str], fk_dtypes: dict):
    """Write the released table: per batch, its new keys, its foreign keys (from the links) and its
    released columns, in the order of the table's columns."""
    futures = [client.submit(_release_part, table, str(folder(work, "avatars", table.name)),
                             {fk: str(folder(work, "links", table.name, fk)) for fk in fk_dtypes},
                             str(target), b, columns, fk_dtypes, pure=False)
               for b in range(n_batches)]
    return client.gather(futures)


def _release_part(table: Table, avatars_dir, link_dirs: dict, target, batch: int, columns, fk_dtypes) -> int:
    avatars = read_parts([folder(avatars_dir, f"part.{batch:05d}.parquet")])
    released = pd.DataFrame(index=pd.RangeIndex(len(avatars)))
    for column in columns:
        if column in fk_dtypes:
            linked = read_parts([folder(link_dirs[column], f"part.{batch:05d}.parquet")])
            released[column] = linked[column].astype(fk_dtypes[column])
        else:
            released[column] = avatars[column]
    write_part(released, target, batch)
    return len(released)
