"""Every attack on one view of an individual table, its control people against its release.

A view is a table alone or seen across a link (:mod:`relanon.multitable.views`). On each view,
:func:`attack_view` makes:

- singling out, univariate and multivariate;
- linkability, for each split of the columns: the quasi-identifiers with what the view adds
  (the children's aggregates, the parent's columns) against the table's other columns; and the
  first half of the columns against the second;
- inference of every sensitive column of the table, and of the children's aggregate of every
  sensitive column of the child in a ``TO_TOP_ENRICHED`` view, from all the other columns.

The release, the training people and the control people are coded once, and the nearest released
rows of every attacked person are found once for all the column subsets the attacks need.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from relanon.metrics.attacks.coding import code_frames, nearest
from relanon.metrics.attacks.inference import DEFAULT_TOLERANCE, inference_result
from relanon.metrics.attacks.linkability import DEFAULT_TARGETS, linkability_result, sample_rows, split_text
from relanon.metrics.attacks.results import AttackResult
from relanon.metrics.attacks.singling_out import (
    DEFAULT_ATTACKS,
    DEFAULT_COLUMNS,
    MULTIVARIATE,
    UNIVARIATE,
    singling_out_coded,
)
from relanon.multitable.views import TO_TOP_ENRICHED, View
from relanon.schema.model import Schema


def attack_view(schema: Schema, view: View, control: pd.DataFrame, release: pd.DataFrame, rng, *,
                n_attacks: int = DEFAULT_TARGETS, n_predicates: int = DEFAULT_ATTACKS,
                tolerance: float = DEFAULT_TOLERANCE) -> list[AttackResult]:
    """Every attack on one view: singling out, linkability for each column split, inference of each secret."""
    coded = code_frames({"release": release, "training": view.frame, "control": control}, view.types)
    out = [singling_out_coded(coded, mode=mode, n_attacks=n_predicates, n_columns=DEFAULT_COLUMNS, random_state=rng)
           for mode in (UNIVARIATE, MULTIVARIATE)]
    if len(coded["release"]) == 0:
        return [dataclasses.replace(r, view=view.name) for r in out]
    splits = [(coded.index(a), coded.index(b)) for a, b in linkability_splits(schema, view)]
    secrets = [int(coded.index([s])[0]) for s in secret_columns(schema, view)]
    aux = [np.setdiff1d(np.arange(len(coded.columns)), [s]) for s in secrets]
    subsets = [part for split in splits for part in split] + aux
    found = {}
    for group in ("training", "control"):
        rows = sample_rows(len(coded[group]), n_attacks, rng)
        near = nearest(coded[group][rows], coded["release"], coded, subsets, random_state=rng) \
            if subsets and len(rows) else []
        found[group] = (rows, near)
    for i, (a, b) in enumerate(splits):
        main = found["training"][1][2 * i], found["training"][1][2 * i + 1]
        control_links = found["control"][1][2 * i], found["control"][1][2 * i + 1]
        out.append(linkability_result(coded, main, control_links, 1, rng, target=split_text(coded, a, b)))
    for i, secret in enumerate(secrets):
        k = 2 * len(splits) + i
        main = found["training"][0], found["training"][1][k][:, 0]
        control_guess = found["control"][0], found["control"][1][k][:, 0]
        out.append(inference_result(coded, secret, main, control_guess, rng, tolerance=tolerance))
    return [dataclasses.replace(r, view=view.name) for r in out]


def linkability_splits(schema: Schema, view: View) -> list[tuple[list[str], list[str]]]:
    """The column splits of the linkability attacks on a view (see the module's description)."""
    table = schema[view.table]
    columns = list(view.types)
    own = [c.name for c in table.released_columns if c.name in view.types]
    added = [c for c in columns if c not in own]
    known = [c for c in table.quasi_identifiers if c in own]
    splits = []
    if known or added:
        first, second = known + added, [c for c in own if c not in known]
        if first and second:
            splits.append((first, second))
    if len(columns) >= 2:
        middle = (len(columns) + 1) // 2
        halves = (columns[:middle], columns[middle:])
        if not any(set(halves[0]) in (set(a), set(b)) for a, b in splits):
            splits.append(halves)
    return splits


def secret_columns(schema: Schema, view: View) -> list[str]:
    """The sensitive columns of a view: the table's, and the aggregates of its child's sensitive columns."""
    secrets = [c for c in schema[view.table].sensitive if c in view.types]
    if view.scenario == TO_TOP_ENRICHED:
        child = schema[view.reference]
        secrets += [c for c in view.types if c not in schema[view.table].column_names
                    and any(c.endswith(f"({s})") for s in child.sensitive)]
    return secrets if len(view.types) > 1 else []
