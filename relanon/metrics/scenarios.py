"""Multi-table evaluation: privacy and signal per table and across links, and the summary matrices.

Scenarios (docs/guide/verdict.md), each computed on the original database and on the anonymized one, every side
with its own links (see :mod:`relanon.multitable.views`):

- privacy, for every individual table T: ``STANDALONE(T)``, ``TO_TOP_ENRICHED(T, C)`` for each child
  C, ``TO_BOTTOM_PROPAGATED(T, P)`` for each parent P;
- signal, for every table: ``STANDALONE`` (Hellinger, correlation difference ratio),
  ``TO_TOP_ENRICHED`` for parents (Hellinger of the enriched table), ``TO_BOTTOM_PROPAGATED`` for
  children: the link fidelity of every (child column, parent column) pair after the join
  (:mod:`relanon.metrics.links`; the headline of the link's cell), and the correlation difference
  ratio of the table plus its parent's columns as a detail;
- relations, for every link: the children-per-parent distribution (1 - Kolmogorov-Smirnov statistic,
  mean and max side by side), the link fidelity with its noise floor, referential integrity, and the rows
  breaking each rule across the link the schema declares (:mod:`relanon.schema.cross_rules`), in the
  original and in the release (a release may break a rule no more often than its original).

The hidden rate and the local cloaking need the private pairing of anonymized and original rows,
which only the run that produced the release holds (:class:`relanon.multitable.pipeline.AnonymizationResult`);
without it the other metrics are computed and the evaluation says which are missing.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from relanon.common.options import Method
from relanon.common.progress import as_progress
from relanon.metrics.base import HIGHER, REFERENTIAL_INTEGRITY_TARGET, TARGETS, Metric
from relanon.metrics.evaluation import PRIVACY_HEADLINES, EvaluatedData, Evaluation
from relanon.metrics.links import LINK_FIDELITY_TARGET, link_fidelity
from relanon.metrics.noise_floor import noise_floor, quadrature_margin
from relanon.metrics.privacy import DEFAULT_SAMPLE_SIZE, privacy
from relanon.metrics.rare_values import rare_values_released
from relanon.metrics.signal import MIN_DISTRIBUTION_ROWS, correlation_difference_ratio, hellinger_metric, signal
from relanon.multitable.policy import min_counts
from relanon.multitable.views import STANDALONE, TO_BOTTOM_PROPAGATED, TO_TOP_ENRICHED, View, views
from relanon.schema.cross_rules import broken_rows
from relanon.schema.graph import all_links, too_small_for_k
from relanon.schema.model import Schema

METRICS_SEED = 0
"""Seed of the metrics' samples and noise-floor halves when none is given: the same release gets the
same figures from ``relanon anonymize``, ``demo``, ``evaluate`` and ``report``."""

# The parts of the evaluation bar one view's privacy counts for: its distance searches take most of a view's time.
PRIVACY_PARTS = 10
PAIRING_METRICS = ("hidden_rate", "local_cloaking")
TARGETS = {**TARGETS, "children_per_parent": 0.9, "referential_integrity": REFERENTIAL_INTEGRITY_TARGET,
           "link_fidelity": LINK_FIDELITY_TARGET}


def evaluate(schema: Schema, original, anonymized, result=None, *, sample_size: int | None = None,
             random_state=METRICS_SEED, progress=True) -> Evaluation:
    """Measure privacy and signal of an anonymized database, per table and across links.

    Parameters
    ----------
    schema : Schema
        The schema shared by both databases.
    original, anonymized : dict of DataFrame
        The databases, typed as :func:`relanon.stores.io.read_database` returns them.
    result : AnonymizationResult, optional
        The run that produced ``anonymized``; it holds the private pairing that the hidden rate and
        local cloaking need, and the link methods used.
    sample_size : int, optional
        Rows sampled (seeded) per table for the distance metrics (default 10,000); every row is used
        in smaller tables.
    random_state : int or Generator, default METRICS_SEED
        Seed of the samples (never the run's seed: the figures of a release must not depend on it).
    progress : bool or Progress
        Print a line per table (``False`` to stay quiet).

    Examples
    --------
    >>> from relanon import anonymize, datasets
    >>> schema, db = datasets.hospital(scale=0.02, seed=1)
    >>> result = anonymize(schema, db, random_state=0, progress=False)
    >>> evaluation = evaluate(schema, db, result.tables, result, progress=False)
    >>> list(evaluation.privacy_matrix.index) == [t.name for t in schema if t.individual]
    True
    """
    report = as_progress(progress)
    if result is not None:
        original = result.original
    sample_size = DEFAULT_SAMPLE_SIZE if sample_size is None else sample_size
    rng = np.random.default_rng(random_state)
    records, notes = [], _method_notes(schema)
    columns = _shared_columns(schema, original, anonymized)
    for table in schema:
        if len(original[table.name]) == 0:
            continue
        with report.step(f"evaluate {table.name}", unit="parts") as step:
            pairing = _pairing(result, table.name, len(original[table.name]), len(anonymized[table.name]))
            original_views = {v.name: v for v in views(schema, original, table.name, columns)}
            released_views = {v.name: v for v in views(schema, anonymized, table.name, columns)}
            # the bar moves after each measure of each view (signal, link fidelity: a part each) and, within
            # a view's privacy (PRIVACY_PARTS parts), as its distance searches advance
            total = sum(PRIVACY_PARTS * table.individual + 1 + (v.scenario == TO_BOTTOM_PROPAGATED)
                        for v in original_views.values())
            done = 0
            step(done, total)
            for name, view in original_views.items():
                released = released_views[name]
                if table.individual:
                    start = done
                    records += [
                        ("privacy", view, m)
                        for m in _privacy(schema, view, released, pairing, table, sample_size, rng,
                                          lambda d, of, start=start, total=total: step(start + PRIVACY_PARTS * d // max(of, 1), total))
                    ]
                    done += PRIVACY_PARTS
                    step(done, total)
                records += [("signal", view, m) for m in _signal(view, released)]
                done += 1
                step(done, total)
                if view.scenario == TO_BOTTOM_PROPAGATED:
                    records.append(("signal", view, link_fidelity(
                        schema, original, anonymized, view.link, columns=columns)))
                    done += 1
                    step(done, total)
    if result is None and any(t.individual for t in schema):
        notes.append(
            "hidden rate and local cloaking need the private pairing of anonymized and original rows, "
            "held only by the run that made the release (relanon anonymize): they are not computed here"
        )
    notes += _small_notes(schema, original, records) + generalized_notes(result)
    relations = _relations(schema, original, anonymized, result, records)
    details = _details(records)
    privacy_matrix, privacy_passed = _privacy_matrix(schema, records)
    signal_matrix, signal_passed = _signal_matrix(schema, records)
    descriptions = {m.name: m.description for _, _, m in records}
    return Evaluation(
        details=details,
        metrics=[(kind, view.name, metric) for kind, view, metric in records],
        relations=relations,
        privacy_matrix=privacy_matrix,
        privacy_passed=privacy_passed,
        signal_matrix=signal_matrix,
        signal_passed=signal_passed,
        targets=dict(TARGETS),
        notes=notes,
        links=list(result.links) if result is not None else [],
        sensitive_choices=list(result.sensitive_choices) if result is not None else [],
        descriptions={**descriptions, **RELATION_DESCRIPTIONS},
        schema=schema,
        data=EvaluatedData(original, anonymized),
    )


# --------------------------------------------------------------------------- per view


def _shared_columns(schema: Schema, original, anonymized) -> dict[str, list[str]]:
    """The released columns present on both sides (an anatomized table has no sensitive column)."""
    return {
        t.name: [c.name for c in t.released_columns
                 if c.name in original[t.name].columns and c.name in anonymized[t.name].columns]
        for t in schema
    }


def _method_notes(schema: Schema) -> list[str]:
    notes = []
    for table in schema:
        method = table.anonymize.method
        if method == Method.KEEP:
            notes.append(f"{table.name} is released unchanged (method keep): its privacy metrics describe no protection")
        elif method in (Method.ANATOMIZE, Method.BUCKETIZE):
            notes.append(
                f"{table.name} is released with its original records ({method}): it protects the link between "
                f"them and {', '.join(table.anonymize.sensitive)}, not the records; read its l-diversity in "
                "`relanon audit` rather than its hidden rate"
            )
    return notes


def _small_notes(schema: Schema, original, records) -> list[str]:
    """Say what too few rows left unmeasured, rather than let an empty cell read as a pass."""
    notes = [
        f"{t.name} has 1 row: its privacy metrics need at least 2 (a record has no other to be compared with) "
        "and are not computed" for t in schema if t.individual and len(original[t.name]) == 1
    ]
    notes += [f"{name}: {message}" for name, message in
              too_small_for_k(schema, {t.name: len(original[t.name]) for t in schema}).items()]
    small = [view.name for kind, view, metric in records if kind == "signal" and metric.name == "hellinger_mean"
             and metric.breakdown.get("not_applicable")]
    if small:
        notes.append(f"{', '.join(small)}: fewer than {MIN_DISTRIBUTION_ROWS} rows, no distribution to compare: "
                     "the Hellinger distance is not applicable (no value, no target)")
    return notes


def generalized_notes(result) -> list[str]:
    """What the release says of the rare values it generalized rather than erased (release.json's
    ``generalized``), one note per column."""
    notes = []
    for name, release in (result.releases.items() if result is not None else ()):
        for g in getattr(release, "generalized", ()):
            levels = ", ".join(f"{label!s} ({level['how']}, {level['records']} records)"
                               for label, level in list(g["levels"].items())[:5])
            more = f" and {len(g['levels']) - 5} more" if len(g["levels"]) > 5 else ""
            left = f"; {g['left_rare']} left missing (no level held by enough)" if g["left_rare"] else ""
            notes.append(f"{name}.{g['column']}: {g['rare_records']} records hold one of {g['rare_values']} values "
                         f"that fewer than {g['min_count']} people hold: released as {levels}{more}{left}")
    return notes


def _pairing(result, table: str, n_original: int, n_released: int):
    """Original position of each released row, when the run's result is known and rows correspond."""
    if result is None or table not in result.releases:
        return None
    positions = np.asarray(result.releases[table].original_position)
    if n_original != n_released or len(positions) != n_released or (positions < 0).any():
        return None
    return positions


def _privacy(schema: Schema, view: View, released: View, pairing, table, sample_size, rng, progress=None) -> list[Metric]:
    if len(view.frame) < 2 or len(released.frame) < 1 or not view.types:
        return []
    known, sensitive = _inference_roles(view, table)
    metrics = privacy(
        view.frame, released.frame, view.types, pairing=pairing, ncp=table.anonymize.ncp, weights=_view_weights(schema, view),
        sample_size=sample_size, random_state=rng, known=known, sensitive=sensitive, name=view.name,
        progress=progress,
    )
    if view.scenario == STANDALONE and table.anonymize.method == Method.AVATAR:
        # the rule of rare values, checked on the release: the counts the run used (min_count, default k)
        k = min(table.anonymize.k_or_default, max(len(view.frame) - 1, 1))  # as the run lowered it
        counts = min_counts(schema, table.name, k, view.types)
        metrics.append(rare_values_released(view.frame, released.frame, view.types, counts))
    return metrics


def _view_weights(schema: Schema, view: View) -> dict[str, float]:
    """The schema's column weights for a view's columns: its own, and a parent's broadcast ones
    (aggregates of children keep weight 1), so the privacy metrics measure distances in the space
    the avatarization searched."""
    weights = {c.name: c.weight for c in schema[view.table].released_columns}
    if view.scenario == TO_BOTTOM_PROPAGATED:
        prefix = f"{view.reference}[{view.via}]" if view.via else view.reference
        weights.update({f"{prefix}.{c.name}": c.weight for c in schema[view.reference].released_columns})
    return {name: weight for name, weight in weights.items() if name in view.types}


def _inference_roles(view: View, table):
    """The inference attack of the standalone view: quasi-identifiers known, sensitive columns guessed."""
    if view.scenario != STANDALONE:
        return None, None
    known = [c for c in table.quasi_identifiers if c in view.types]
    sensitive = [c for c in table.sensitive if c in view.types and c not in known]
    return (known, sensitive) if known and sensitive else (None, None)


def _signal(view: View, released: View) -> list[Metric]:
    if len(released.frame) == 0 or not view.types:
        return []
    if view.scenario == STANDALONE:
        return signal(view.frame, released.frame, view.types)
    if view.scenario == TO_TOP_ENRICHED:
        return [hellinger_metric(
            view.frame, released.frame, view.types,
            description="Mean Hellinger distance over the columns of the table enriched with its children's "
            "aggregates (count, means, most frequent values).",
        )]
    metric = correlation_difference_ratio(view.frame, released.frame, view.types, floor=True)
    return [] if math.isnan(metric.value) else [metric]


# --------------------------------------------------------------------------- relations

RELATION_DESCRIPTIONS = {
    "children_per_parent": "1 - Kolmogorov-Smirnov statistic between the original and anonymized numbers "
    "of children per parent row (1 = same distribution); passes within the value two halves of the original "
    "parents give each other (the noise floor).",
    "referential_integrity": "Share of anonymized foreign-key values that point to an existing parent key.",
    "link_fidelity_floor": "Link fidelity that two random halves of the original give each other (parents split "
    "with their children): a release at or above it keeps the relations as well as the data's size allows.",
}


def _relations(schema: Schema, original, anonymized, result, records=()) -> pd.DataFrame:
    methods = {(r.child, r.column): r.method for r in result.links} if result is not None else {}
    fidelity = {(view.link.child, view.link.column): metric for kind, view, metric in records
                if metric.name == "link_fidelity"}
    rows = []
    for link in all_links(schema):
        parent_key = schema[link.parent].primary_key
        o_counts = _children_per_parent(original, link, parent_key)
        a_counts = _children_per_parent(anonymized, link, parent_key)
        fk = anonymized[link.child][link.column]
        present = fk.dropna()
        integrity = 100.0 * present.isin(anonymized[link.parent][parent_key]).mean() if len(present) else 100.0
        similarity = 1.0 - ks_statistic(o_counts, a_counts) if len(o_counts) and len(a_counts) else float("nan")
        # two halves of the parents, each with its children: what sampling alone does to the similarity
        floor = noise_floor(lambda a, b, counts=o_counts: 1.0 - ks_statistic(counts[a], counts[b]), len(o_counts)).value
        rows.append({
            "parent": link.parent,
            "child": link.child,
            "column": link.column,
            "method": methods.get((link.child, link.column), link.method),
            "children_per_parent": similarity,
            "children_per_parent_floor": floor,
            "mean_children_original": float(o_counts.mean()) if len(o_counts) else float("nan"),
            "mean_children_anonymized": float(a_counts.mean()) if len(a_counts) else float("nan"),
            "max_children_original": int(o_counts.max()) if len(o_counts) else 0,
            "max_children_anonymized": int(a_counts.max()) if len(a_counts) else 0,
            "share_without_parent_original": float(original[link.child][link.column].isna().mean()) if len(fk) else 0.0,
            "share_without_parent_anonymized": float(fk.isna().mean()) if len(fk) else 0.0,
            "link_fidelity": fidelity[key].value if (key := (link.child, link.column)) in fidelity else float("nan"),
            "link_fidelity_floor": fidelity[key].floor if key in fidelity else float("nan"),
            "referential_integrity": float(integrity),
            **_rule_counts(schema, original, anonymized, link),
        })
    frame = pd.DataFrame(rows)
    if len(frame):
        similar = [similarity_passed(value, floor) for value, floor in
                   zip(frame["children_per_parent"], frame["children_per_parent_floor"], strict=True)]
        kept = [all(released <= before for before, released in counts.values()) for counts in frame["rules"]]
        frame["passed"] = ((frame["referential_integrity"] >= REFERENTIAL_INTEGRITY_TARGET) & np.array(similar, dtype=bool)
                           & np.array(kept, dtype=bool))
    return frame


def _rule_counts(schema: Schema, original, anonymized, link) -> dict:
    """The rules the link declares (:mod:`relanon.schema.cross_rules`): rows breaking each, original then release."""
    fk = next(fk for fk in schema[link.child].foreign_keys if fk.column == link.column)
    key = schema[link.parent].primary_key
    counts = {str(rule): [broken_rows(rule, database[link.child], database[link.parent], link.column, key)
                          for database in (original, anonymized)] for rule in fk.rules}
    return {"rules": counts, "rules_broken": sum(c[1] for c in counts.values()),
            "rules_broken_original": sum(c[0] for c in counts.values())}


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic ``max_x |F_a(x) - F_b(x)|`` (as scipy's ``ks_2samp``).

    Examples
    --------
    >>> ks_statistic(np.array([1, 2, 3, 4]), np.array([3, 4, 5, 6]))
    0.5
    """
    a, b = np.sort(a), np.sort(b)
    points = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, points, side="right") / len(a)
    cdf_b = np.searchsorted(b, points, side="right") / len(b)
    return float(np.max(np.abs(cdf_a - cdf_b)))


def similarity_passed(value: float, floor: float) -> bool:
    """Whether a children-per-parent similarity passes: above its target, or within its noise floor.

    The Kolmogorov-Smirnov statistic ``1 - similarity`` is a distance: it passes up to
    ``sqrt(floor_distance^2 + (1 - target)^2)``, as the signal distances do
    (:func:`relanon.metrics.noise_floor.quadrature_margin`). Twenty hospitals whose halves differ by
    0.35 pass at 0.75; 10,000 patients must reach 0.9.

    Examples
    --------
    >>> similarity_passed(0.75, 0.65), similarity_passed(0.75, 0.97), similarity_passed(float("nan"), 0.5)
    (True, False, True)
    """
    target = TARGETS["children_per_parent"]
    if math.isnan(value):
        return True
    if value > target:
        return True
    if math.isnan(floor):
        return False
    distance, floor_distance = 1.0 - value, 1.0 - floor
    return distance <= floor_distance + quadrature_margin(floor_distance, 1.0 - target)


def _children_per_parent(database, link, parent_key: str) -> np.ndarray:
    keys = database[link.parent][parent_key]
    counts = database[link.child][link.column].value_counts()
    return counts.reindex(keys.to_numpy(), fill_value=0).to_numpy()


def children_per_parent(database, schema: Schema, link) -> np.ndarray:
    """Number of children of every parent row across ``link`` (0 for parents without children)."""
    return _children_per_parent(database, link, schema[link.parent].primary_key)


# --------------------------------------------------------------------------- assembling


def _details(records) -> pd.DataFrame:
    rows: dict[tuple, dict] = {}
    for kind, view, metric in records:
        key = (kind, view.table, view.scenario, view.reference, view.name)
        rows.setdefault(key, {})[metric.name] = metric.value
    index = pd.MultiIndex.from_tuples(list(rows), names=["kind", "table", "scenario", "reference", "view"])
    return pd.DataFrame(list(rows.values()), index=index)


def _privacy_matrix(schema: Schema, records):
    individuals = [t.name for t in schema if t.individual]
    tables = list(schema.tables)
    values = pd.DataFrame(np.nan, index=pd.Index(individuals, name="individual table"), columns=tables)
    passed = pd.DataFrame(pd.NA, index=values.index, columns=tables, dtype="boolean")
    by_view: dict[str, list[Metric]] = {}
    views_of: dict[str, View] = {}
    for kind, view, metric in records:
        if kind == "privacy":
            by_view.setdefault(view.name, []).append(metric)
            views_of[view.name] = view
    measured = {m.name for metrics in by_view.values() for m in metrics}
    chosen = next((h for h in PRIVACY_HEADLINES if h in measured), PRIVACY_HEADLINES[0])
    values.attrs["headline"] = chosen
    for name, metrics in by_view.items():
        view = views_of[name]
        headline = next((m.value for m in metrics if m.name == chosen), np.nan)
        ok = all(m.passed is not False for m in metrics)
        cell = (view.table, view.reference)
        previous = values.loc[cell]
        # two links between the same tables: the cell shows the worse of the two
        if pd.isna(previous) or (not pd.isna(headline) and headline < previous):
            values.loc[cell] = headline
        passed.loc[cell] = ok if pd.isna(passed.loc[cell]) else bool(passed.loc[cell]) and ok
    return values, passed


def _signal_matrix(schema: Schema, records):
    tables = list(schema.tables)
    values = pd.DataFrame(np.nan, index=pd.Index(tables, name="table"), columns=tables)
    passed = pd.DataFrame(pd.NA, index=values.index, columns=tables, dtype="boolean")
    headline = {STANDALONE: "hellinger_mean", TO_TOP_ENRICHED: "hellinger_mean",
                TO_BOTTOM_PROPAGATED: "link_fidelity"}
    for kind, view, metric in records:
        if kind != "signal":
            continue
        cell = (view.table, view.reference)
        # every signal metric of the scenario marks its cell, as in the privacy matrix (the lines of the
        # verdict then name it): a table whose correlations drift is marked, whatever its Hellinger
        ok = metric.passed is not False
        passed.loc[cell] = ok if pd.isna(passed.loc[cell]) else bool(passed.loc[cell]) and ok
        if metric.name != headline[view.scenario]:
            continue
        # two links between the same tables: the cell shows the worse of the two
        previous = values.loc[cell]
        worse = pd.isna(previous) or (metric.value < previous if metric.direction == HIGHER else metric.value > previous)
        if worse:
            values.loc[cell] = metric.value
    return values, passed
