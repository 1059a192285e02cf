"""The top-down run on a Dask cluster, from a partitioned Parquet database to a partitioned release.

The same steps as :func:`relanon.multitable.pipeline.anonymize`, table by table from the top of the schema
graph down, each spread over the workers: read and check (:mod:`~relanon.distributed.read`), enrich and
cut into random batches (:mod:`~relanon.distributed.enrich`), fit the factor space once from all batches
(:mod:`~relanon.distributed.space`), avatarize each batch and give it new keys
(:mod:`~relanon.distributed.avatars`), link to the parents (:mod:`~relanon.distributed.links`,
:mod:`~relanon.distributed.blocked`), and write the release, one part per batch. A table of one batch takes
the local engine's generators, so that a run whose tables all fit in one batch gives the local engine's
release, byte for byte.
"""

from __future__ import annotations

import contextlib
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import dask
import numpy as np

from relanon.common.atomic import atomic_directory
from relanon.common.errors import DataError, ParameterError, ResourceError
from relanon.common.progress import as_progress
from relanon.distributed import avatars as batches_out
from relanon.distributed import enrich as enrichment
from relanon.distributed import links, read
from relanon.distributed.blocked import BLOCK_CHILDREN, linear_sum
from relanon.distributed.cluster import cluster, import_distributed, peak_memory, worker_peaks
from relanon.distributed.cross_rules import obey_cross_rules_in_batches
from relanon.distributed.rare_values import TableFacts, table_facts
from relanon.distributed.space import finished_statistics, fit_space
from relanon.distributed.state import Released
from relanon.distributed.work import folder, parts_of, read_parts, work_folder, write
from relanon.engine.batches import DEFAULT_BATCH_SIZE, check_batch_size, partition_generator, rows_searched
from relanon.engine.column_rules import obey_rules, relation_of
from relanon.engine.generalize import generalized_detail, merge_generalized
from relanon.engine.space_statistics import distinct_cap
from relanon.multitable import policy
from relanon.multitable.keys import merge_key_shapes
from relanon.multitable.linking.anchoring import anchor_on_parents, anchored
from relanon.multitable.release import release_files
from relanon.multitable.results import LinkReport
from relanon.schema.graph import child_links, parent_links, topological_order
from relanon.schema.model import Schema
from relanon.stores.fingerprints import file_fingerprint, parquet_rows, with_fingerprints
from relanon.stores.outputs import NOTES_FILE, ReleaseFolder, check_outputs
from relanon.stores.partitioned import write_part

LINK_UNITS = {"linear_sum": "groups", "minimum_distance": "batches"}
"""What the progress of a link counts: blocks and repair groups solved, or batches of children linked."""


@dataclass
class NoteRelease:
    """What the release notes say of a table (:func:`relanon.multitable.release.release_notes`)."""

    method: str
    frame: range
    k: int | None
    column_rules: tuple = ()  # the rules every batch obeys (found per batch on the workers)
    generalized: tuple = ()  # rare values generalized, per column, over the batches


@dataclass
class DistributedResult:
    """A release made on the cluster: where it is and how it was made (no rows: they stay in the parts).

    ``releases`` and ``links`` feed the release notes as :class:`~relanon.multitable.pipeline.AnonymizationResult`
    does; ``tables`` gives each released table's rows; ``timings`` the seconds of each step.
    """

    schema: Schema
    location: Path
    tables: dict[str, int]
    links: list[LinkReport]
    sensitive_choices: list[str]
    releases: dict = field(repr=False)
    timings: dict = field(default_factory=dict, repr=False)
    batch_size: int = DEFAULT_BATCH_SIZE
    state: dict = field(default_factory=dict, repr=False)
    peaks: dict = field(default_factory=dict, repr=False)


def run(client, schema: Schema, data, out, work, *, batch_size: int | None = None, random_state=None,
        progress=True, block_size: int | None = None) -> DistributedResult:
    """Anonymize the partitioned database at ``data`` into ``out`` with the workers of ``client``."""
    report = as_progress(progress)
    unsupported = [f"{table.name} ({'an association table' if table.association else 'a self-reference'})"
                   for table in schema if table.association or table.self_references]
    if unsupported:
        raise ParameterError(f"the Dask engine does not release association tables and self-references: "
                             f"{', '.join(unsupported)}; use the local engine (--engine local)")
    batch_size = check_batch_size(DEFAULT_BATCH_SIZE if batch_size is None else batch_size)
    seeds = policy.table_seeds(schema, schema.seed if random_state is None else random_state)
    tables = read.locate(schema, data)
    with report.step("read and check the parts") as step:
        read.load(client, schema, tables, work, seeds, batch_size)
        step.detail = f"{sum(t.rows for t in tables.values()):,} rows in {sum(len(t.parts) for t in tables.values())} parts"
    problems = policy.size_problems(schema, {name: range(t.rows) for name, t in tables.items()})
    if problems:
        raise DataError("some tables cannot be anonymized as declared", problems)
    released: dict[str, Released] = {}
    link_reports: list[LinkReport] = []
    order = topological_order(schema)
    for position, name in enumerate(order, start=1):
        table, source = schema[name], tables[name]
        method = table.anonymize.method
        report.say(f"[{position}/{len(order)}] {name} ({source.rows:,} rows, {method}, {source.n_batches} batch"
                   f"{'es' if source.n_batches > 1 else ''})")
        # the streams of the local engine (spawn(5) gives the first four of spawn(4)): avatars, keys, links, anchor, counts
        generators = [np.random.default_rng(s) for s in seeds[name].spawn(5)]
        columns = tuple(c for c in source.dtypes if c in set(table.output_columns))
        if method == "avatar":
            released[name] = _avatar_table(client, schema, name, tables, released, work, generators, report)
        elif method == "keep":
            released[name] = _kept(client, name, source, work, columns)
        else:
            released[name] = _deassociated(client, schema, name, source, work, generators[0], columns, batch_size, report)
        released[name].columns = columns
        _settle(client, schema, name, work, released, generators[4], report)
        link_reports += _links(client, schema, name, work, tables, released, generators[2], _seed_of(generators[2]),
                               block_size or BLOCK_CHILDREN, report)
        _anchor(client, schema, name, work, released, generators[3], report)
        _retire(client, schema, work, released)
    if any(fk.rules for table in schema for fk in table.foreign_keys):
        with report.step("rules across tables", unit="rules") as step:  # once every table is linked
            step.detail = "; ".join(obey_cross_rules_in_batches(client, schema, work, released, step))
    sensitive = policy.sensitive_choices(schema, link_reports)
    for message in sensitive:
        warnings.warn(message, policy.SensitiveChoiceWarning, stacklevel=2)
    result = DistributedResult(
        schema=schema, location=Path(out), tables={n: r.rows for n, r in released.items()}, links=link_reports,
        sensitive_choices=sensitive, releases={n: NoteRelease(r.method, range(r.rows), r.k, r.column_rules, r.generalized)
                                                       for n, r in released.items()},
        batch_size=batch_size, state=released,
    )
    with report.step("write the release") as step:
        _write(client, schema, work, released, result, out)
        step.detail = f"{sum(r.n_batches for r in released.values())} parts"
    result.timings = dict(report.timings)
    return result


# --------------------------------------------------------------------------- one table


def _avatar_table(client, schema, name, tables, released, work, generators, report) -> Released:
    table, source = schema[name], tables[name]
    allowed = {parent: set(state.columns) for parent, state in released.items()}
    spec = enrichment.layout(schema, name, allowed, source.nulls)
    many = source.n_batches > 1
    with report.step(f"{name}: enrich and cut into batches") as step:
        enrichment.enrich(client, schema, name, spec, tables, work)
        gathered, summaries = enrichment.gather_batches(client, schema, name, spec, tables, work,
                                                        distinct_cap(source.rows), many)
        sizes = [g["rows"] for g in gathered]
        step.detail = f"{len(spec.types)} columns, batches of {min(sizes):,} to {max(sizes):,} rows"
    statistics = space = None
    paths = [str(links.part(folder(work, "batches", name), b)) for b in range(source.n_batches)]
    if many and spec.types:
        with report.step(f"{name}: factor space from {source.n_batches} batches") as step:
            statistics = finished_statistics(client, paths, summaries)
            space = fit_space(client, paths, spec.types, statistics, ncp=table.anonymize.ncp, weights=spec.weights,
                              random_state=generators[0].spawn(1)[0], name=name,
                              rows_searched=rows_searched(source.rows, source.n_batches), rng=generators[0])
            step.detail = f"{space.n_components_} axes"
    settings = policy.avatar_settings(schema, name, spec.types, min(sizes)) if spec.types and min(sizes) else None
    k = settings.k if settings else None
    shape = gathered[0]["keys"]
    for other in gathered[1:]:
        shape = merge_key_shapes(shape, other["keys"])
    fks = tuple(link.column for link in parent_links(schema, name) if link.method == "original_order")
    thresholds = settings.min_counts if settings else None
    facts = TableFacts({}, {})
    if many and thresholds and any(t > 1 for t in thresholds.values()):
        # rare within a batch is not rare in the table: the rule counts values in the whole table
        with report.step(f"{name}: rare values counted over {source.n_batches} batches") as step:
            facts = table_facts(client, paths, spec.types, thresholds, summaries, statistics, spec.counts)
            step.detail = f"{len(facts.value_counts)} columns counted, {len(facts.extremes)} bounded"
    if many and table.individual and table.anonymize.combination_min_count is not None:
        warnings.warn(f"table {name!r}: combination_min_count {table.anonymize.combination_min_count} has no effect on "
                      f"a table of {source.n_batches} batches: the Dask engine leaves the rule of combinations out "
                      "(its pairs would be counted within each batch); anonymize the table on one machine, or "
                      "in one batch (--batch-size), to apply it", UserWarning, stacklevel=2)
    job = batches_out.BatchJob(table, spec.types, spec.weights, k, tuple(spec.counts), space, shape,
                               source.dtypes[table.primary_key], source.rows, fks, thresholds,
                               tuple(policy.sensitive_columns(schema, name, spec.types)), facts.value_counts or None,
                               facts.extremes or None, policy.small_group_rules(schema, name))
    if many:
        avatar_rngs = [partition_generator(_seed_of(generators[0]), "avatars", b) for b in range(source.n_batches)]
        key_rngs = [partition_generator(_seed_of(generators[1]), "keys", b) for b in range(source.n_batches)]
    else:
        avatar_rngs, key_rngs = [generators[0]], [generators[1]]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    with report.step(f"{name}: avatarize", unit="batches") as step:
        done = batches_out.avatarize_batches(client, job, work, offsets, avatar_rngs, key_rngs, progress=step)
        ncp = next((d["ncp"] for d in done if d["ncp"] is not None), None)
        step.detail = f"k={k}, {len(spec.types)} columns" if k is not None else "nothing to avatarize"
        everywhere, somewhere = rules_of_batches([d.get("rules", ()) for d in done])
        if everywhere:
            step.detail += f"; rules between columns obeyed: {'; '.join(map(str, everywhere))}"
        if somewhere:
            step.detail += ("; obeyed only in the batches whose rows obey them: "
                            + "; ".join(f"{rule} ({n} of {len(done)} batches)" for rule, n in somewhere.items()))
        generalized = tuple(merge_generalized([d.get("generalized", ()) for d in done]))
        step.detail += generalized_detail(generalized)
    return Released(name, "avatar", source.rows, sizes, spec.types, spec.weights, spec.internal, k, ncp, statistics,
                    column_rules=everywhere, generalized=generalized)


def rules_of_batches(found: list) -> tuple[tuple, dict[str, int]]:
    """The rules between columns found in every batch (the whole release obeys them: they go to the release
    notes, and anchored rows are repaired by them), and the others, as text, with the number of batches
    whose rows obey them; in order of first finding. A relation solved for another column in another batch
    (``total = cost + fee``, ``cost = -fee + total``) is one rule, in the form first found."""
    first: dict = {}
    counts: dict = {}
    for rules in found:
        for relation in dict.fromkeys(relation_of(rule) for rule in rules):
            counts[relation] = counts.get(relation, 0) + 1
        for rule in rules:
            first.setdefault(relation_of(rule), rule)
    everywhere = tuple(first[r] for r, n in counts.items() if n == len(found))
    return everywhere, {str(first[r]): n for r, n in counts.items() if n < len(found)}


def _seed_of(generator: np.random.Generator) -> np.random.SeedSequence:
    return generator.bit_generator.seed_seq


def _kept(client, name, source, work, columns) -> Released:
    """A table released unchanged: its parts copied as they are (keys included)."""
    paths = parts_of(folder(work, "orig", name))
    client.gather([client.submit(_keep_part, str(p), list(columns), str(folder(work, "avatars", name)), i, pure=False)
                   for i, p in enumerate(paths)])
    return Released(name, "keep", source.rows, [p.rows for p in source.parts] or [0])


def _keep_part(path, columns, directory, index):
    frame = read_parts([path])
    out = frame[columns].copy()
    out[batches_out.POS] = frame[read.ROW].to_numpy()
    out[batches_out.SOURCE] = frame[read.ROW].to_numpy()
    write(out, directory, index)


def _deassociated(client, schema, name, source, work, rng, columns, batch_size, report) -> Released:
    table = schema[name]
    if source.rows > batch_size:
        raise ParameterError(
            f"table {name!r} ({source.rows:,} rows) is {table.anonymize.method}d: the Dask engine does so only for tables "
            f"of one batch (--batch-size {batch_size:,}); raise the batch size above its rows, or use the local engine")
    with report.step(f"{name}: {table.anonymize.method}"):
        rows, companion = client.submit(_deassociate_task, table, str(folder(work, "orig", name)),
                                        str(folder(work, "avatars", name)), rng, pure=False).result()
    return Released(name, table.anonymize.method, rows, [rows], k=table.anonymize.k_or_default, companion=companion)


def _deassociate_task(table, orig_dir, directory, rng):
    frame = read_parts(parts_of(orig_dir)).drop(columns=[read.ROW, read.BATCH])
    release = policy.deassociated_release(table, frame, rng)
    out = release.frame.copy()
    out[batches_out.POS] = np.arange(len(out))
    out[batches_out.SOURCE] = release.original_position
    write(out, directory, 0)
    return len(out), release.companion


# --------------------------------------------------------------------------- links and anchoring


def _links(client, schema, name, work, tables, released, rng, seed, block_size, report) -> list[LinkReport]:
    reports = []
    child = released[name]
    for link in parent_links(schema, name):
        parent = released[link.parent]
        if child.method != "avatar" and parent.method != "avatar" and not (child.single and parent.single):
            continue  # both released with their original keys: the foreign key stays as it is
        with report.step(f"link {name}.{link.column} -> {link.parent} ({link.method})",
                         unit=LINK_UNITS.get(link.method, "steps")) as step:
            if child.single and parent.single:
                values, rng = client.submit(links.one_piece, schema, link, str(work), child, parent, rng,
                                            pure=False).result()
                write(values.to_frame(link.column), folder(work, "links", name, link.column), 0)
                linked, dtype = int(values.notna().sum()), str(values.dtype)
            else:
                linked = _distributed_link(client, schema, link, work, child, parent, rng, seed, block_size, step)
                dtype = None
            child.fk_dtypes[link.column] = dtype or _foreign_key_dtype(
                tables[name], tables[link.parent], schema[link.parent].primary_key, link.column, linked)
            step.detail = f"{linked:,} of {child.rows:,} rows linked"
        reports.append(LinkReport(link.parent, name, link.column, link.method, child.rows, linked,
                                  report.timings[step.label]))
    return reports


def _distributed_link(client, schema, link, work, child, parent, rng, seed, block_size, progress=None) -> int:
    if child.method != "avatar" or parent.method != "avatar":
        raise ParameterError(
            f"link {link.child}.{link.column} -> {link.parent}: the Dask engine links tables of more than one batch "
            f"only when both are avatarized ({link.child}: {child.method}, {link.parent}: {parent.method}); raise "
            "--batch-size above the tables' sizes, or use the local engine")
    link_seed = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, len(link.column), *link.column.encode()))
    if link.method == "original_order":
        return links.original_order(client, schema, link, work, child, parent)
    space = links.link_space(client, schema, link, work, parent, rng)
    if link.method == "minimum_distance":
        return links.minimum_distance(client, schema, link, work, child, parent, space, link_seed, progress)
    return linear_sum(client, schema, link, work, child, parent, space, link_seed, block_size, progress)


def _foreign_key_dtype(source: read.TableInput, parent: read.TableInput, parent_key: str, column: str,
                       linked: int) -> str:
    """As :func:`relanon.multitable.linking.foreign_keys.relink` decides it: integer parent keys give ``int64``, or
    ``Int64`` when some child has no parent; text keys keep the original foreign key's dtype."""
    original = source.dtypes[column]
    if parent.dtypes[parent_key] in ("int64", "Int64"):
        plain = original != "Int64" and not source.nulls.get(column, 0) and linked == source.rows
        return "int64" if plain else "Int64"
    return original


def _settle(client, schema, name, work, released, rng, report) -> None:
    """A table of one batch with several ``linear_sum`` child links has its rows of drawn counts settled
    together, as the local engine's (:func:`relanon.multitable.linking.counts.settle_counts`); a table of several
    batches keeps each link's counts, corrected apart by the links."""
    state = released[name]
    children = [link.child for link in child_links(schema, name) if link.method == "linear_sum"]
    if state.method != "avatar" or state.k is None or len(children) < 2:
        return
    if not state.single:
        report.say(f"  {name}: numbers of children on its {len(children)} linear_sum links corrected apart "
                   f"(the Dask engine settles them together for a table of one batch only)")
        return
    with report.step(f"{name}: numbers of children settled together") as step:
        changed = client.submit(links.settle_one_piece, schema, name, str(work), state, children, rng,
                                pure=False).result()
        step.detail = f"{changed:,} rows of counts replaced"


def _anchor(client, schema, name, work, released, rng, report) -> None:
    state = released[name]
    if state.method != "avatar" or not any(fk.anchor for fk in schema[name].foreign_keys) or state.k is None:
        return
    parents = [released[fk.references] for fk in schema[name].foreign_keys if fk.anchor]
    if not state.single or not all(p.single for p in parents):
        raise ParameterError(
            f"table {name!r} has anchored links (anchor: true): the Dask engine anchors tables of one batch only; "
            "raise --batch-size above the sizes of the table and its anchored parents, or use the local engine")
    with report.step(f"{name}: anchor on linked parents") as step:
        count = client.submit(_anchor_task, schema, name, str(work), released, rng, pure=False).result()
        step.detail = f"{count:,} rows re-drawn"


def _anchor_task(schema, name, work, released, rng) -> int:
    releases = {}
    for table in {name, *(fk.references for fk in schema[name].foreign_keys)}:
        releases[table] = links.table_release(work, released[table])
    child = releases[name]
    for fk in schema[name].foreign_keys:
        path = links.part(folder(work, "links", name, fk.column), 0)
        if path.exists():
            child.frame[fk.column] = read_parts([path])[fk.column].astype(released[name].fk_dtypes[fk.column])
    if not anchored(schema, child):
        return 0
    count = anchor_on_parents(schema, name, releases, rng)
    # the re-drawn rows obey the rules between columns again, as the local engine repairs them after anchoring
    repaired = obey_rules(child.enriched_avatars, released[name].column_rules)
    for rule in released[name].column_rules:
        child.enriched_avatars[rule.target] = repaired[rule.target]
    links.write_enriched_avatars(work, name, child.enriched_avatars)
    return count


# --------------------------------------------------------------------------- the work folder's minimum


PRIVATE_STEPS = ("orig", "batches", "pieces")  # a table's original rows, enriched or cut in pieces
LINK_STEPS = ("link", "routed", "to-parents")  # the intermediates of a child's links


def _retire(client, schema, work, released) -> None:
    """Remove from the work folder what no later step needs: a table's link intermediates once it is linked
    and anchored; its original rows, and the link from each of its avatars to its original record
    (``_source``, and the original foreign keys travelling with original_order links), once the table and
    all its children are done. The work folder then keeps only the released rows until the release is
    written; what a killed run leaves is removed by the next run (:func:`relanon.common.atomic.remove_leftovers`)."""
    for name in released:
        for step in LINK_STEPS:
            shutil.rmtree(folder(work, step, name), ignore_errors=True)
        done = all(link.child in released for link in child_links(schema, name))
        if not done or released[name].retired:
            continue
        for step in PRIVATE_STEPS:
            shutil.rmtree(folder(work, step, name), ignore_errors=True)
        client.gather([client.submit(_without_source, str(path), pure=False)
                       for path in parts_of(folder(work, "avatars", name))])
        released[name].retired = True


def _without_source(path) -> None:
    """Rewrite one part of a table's avatars without the columns that lead back to the originals."""
    frame = read_parts([path])
    private = [c for c in frame.columns if c == batches_out.SOURCE or str(c).startswith(batches_out.SOURCE_FK)]
    if private:
        write_part(frame.drop(columns=private), Path(path).parent, int(Path(path).name.split(".")[1]))


# --------------------------------------------------------------------------- writing


def _write(client, schema, work, released, result, out) -> None:
    with atomic_directory(Path(out)) as tmp:
        fingerprints = {}
        for name, state in released.items():
            table = schema[name]
            batches_out.write_release_parts(client, table, work, tmp / table.source_name, state.n_batches,
                                            list(state.columns), state.fk_dtypes)
            if state.companion is not None:
                write_part(state.companion, tmp / f"{table.source_name}_sensitive", 0)
            for stored in (table.source_name, f"{table.source_name}_sensitive"):
                if (tmp / stored).is_dir():
                    fingerprints[stored] = file_fingerprint(tmp / stored, parquet_rows(tmp / stored))
        files = release_files(result)
        files[NOTES_FILE] = with_fingerprints(files[NOTES_FILE], fingerprints)  # what relanon audit checks
        for file_name, text in sorted(files.items(), key=lambda item: item[0] == NOTES_FILE):
            (tmp / file_name).write_text(text, encoding="utf-8")


def anonymize_dataset(schema: Schema, data, out, *, scheduler: str | None = None, workers: int | None = None,
                      batch_size: int | None = None, random_state=None, progress=True, overwrite: bool = False,
                      work_dir=None, client=None, block_size: int | None = None) -> DistributedResult:
    """Anonymize a partitioned Parquet database on a Dask cluster and write the release the same way.

    Parameters
    ----------
    schema : Schema
        The database's schema.
    data : str or Path
        A folder holding one directory of Parquet files per table (named after the table's ``source``),
        as Dask and Spark write them; every worker must be able to read it.
    out : str or Path
        The release folder (one directory of Parquet parts per table, and the release notes); written by
        the workers, atomically (it appears when complete).
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:8786``). Without it, a local cluster of
        ``workers`` processes is started (default: one per core) and stopped at the end.
    batch_size : int, optional
        Rows avatarized together (default :data:`~relanon.engine.batches.DEFAULT_BATCH_SIZE`): a table of
        at most this many rows is avatarized whole, as the local engine does.
    random_state : int or None
        Seed of the run (default: the schema's); the same seed gives the same bytes with any number of workers.
    block_size : int, optional
        Children per block of a ``linear_sum`` link spread over the workers (default
        :data:`~relanon.distributed.blocked.BLOCK_CHILDREN`).
    work_dir : str or Path, optional
        Where the run's private working folder goes (default: beside ``out``); removed at the end.
    client : distributed.Client, optional
        A client to use instead of connecting (then ``scheduler`` and ``workers`` are not used).

    Returns
    -------
    DistributedResult
        With ``peaks``: the peak memory of each worker and of this process, in bytes.
    """
    size = check_batch_size(DEFAULT_BATCH_SIZE if batch_size is None else batch_size)
    check_outputs([ReleaseFolder(out, "parquet", overwrite=overwrite)], [data])
    context = contextlib.nullcontext(client) if client is not None else cluster(scheduler, workers)
    # Dask turns text columns into pyarrow strings of its own (missing as pd.NA); keep pandas' dtypes,
    # those the local engine releases
    with context as active, work_folder(beside=out, location=work_dir) as work, \
            dask.config.set({"dataframe.convert-string": False}):
        try:
            result = run(active, schema, data, out, work, batch_size=batch_size, random_state=random_state,
                         progress=progress, block_size=block_size)
        except import_distributed().KilledWorker as error:
            raise ResourceError(
                f"a Dask worker died while running a task ({str(error).splitlines()[0][:160]}), most often for lack "
                f"of memory; try a smaller batch size (--batch-size {max(1, size // 2):,}, half the {size:,} used), "
                "fewer workers per machine, or workers with more memory") from None
        result.peaks = {"client": peak_memory(), **worker_peaks(active)}
    return result
