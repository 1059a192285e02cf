"""Holding people out of a database: the training part that is anonymized, the control part that is not.

For each individual table, a seeded share of its rows (the *control* people) is held out with every
row descending from them (a patient leaves with her visits and their prescriptions). The training
database is what remains: the rows descending from no control person; it keeps its referential
integrity, since only descendants are removed with their ancestors.

The control people are drawn *balanced* (:func:`balanced_choice`): each class of the table's
quasi-identifiers keeps its share in both parts, within one person. A simple random draw can leave the
demo's 200 doctors with 4 training and 14 control psychiatrists: the release, made from 100 doctors,
cannot keep a specialty that 4 of them hold (fewer than ``min_count``, and too few for an avatar to
draw), so every control psychiatrist is guessed wrong while the training ones, fewer, are not attacked
on a specialty the release lacks. The risk then measures the luck of the split (inference of the
doctors' most frequent visit reason 0.05 to 0.40 over four seeds of a random draw), not what the
release tells about its own people; a release that knows no one (a fresh sample of the population,
without the categories fewer than 10 training people hold) shows risks of 0.06 to 0.24.

The control people are attacked through the views of their table (its children's aggregates, its
parents' columns), which must be built as the training people's are. A training patient whose
visit was with a control doctor lost that visit with the doctor; so a control patient's views are
built from the database without the rows held out for *other* tables (her visits with control
doctors are left out likewise), and both groups are measured alike.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.common.exact import exact_codes
from relanon.schema.graph import child_links, topological_order
from relanon.schema.model import Schema

MIN_TRAINING_ROWS = 3  # what the avatar method needs
MIN_CONTROL_ROWS = 1


@dataclass(frozen=True, eq=False)
class Holdout:
    """A database split into training and control people.

    Attributes
    ----------
    training : dict of DataFrame
        The database without the control people and their descendants: what is anonymized.
    control : dict of str to dict of DataFrame
        Per individual table with control people: the database their views are built from
        (without the rows held out for the other individual tables).
    control_rows : dict of str to numpy.ndarray
        Per individual table: positions of its control people in ``control[table][table]``.
    sizes : dict of str to (int, int)
        Per individual table: training and control people.
    notes : list of str
        Individual tables too small to hold people out.
    """

    training: dict
    control: dict
    control_rows: dict
    sizes: dict
    notes: list = field(default_factory=list)


def split_database(schema: Schema, database: Mapping[str, pd.DataFrame], *, holdout: float = 0.2,
                   random_state=None) -> Holdout:
    """Hold out ``holdout`` of the people of every individual table, with their descendants.

    Parameters
    ----------
    schema : Schema
    database : dict of DataFrame
        The checked database (as :func:`relanon.stores.read_database` returns it).
    holdout : float
        Share of the people of each individual table held out, in (0, 1).
    random_state : int, numpy.random.SeedSequence or None
        Seed of the draws; each table draws from its own stream (derived from its name).

    Examples
    --------
    >>> from relanon import datasets
    >>> schema, db = datasets.hospital(scale=0.02, seed=1)
    >>> split = split_database(schema, db, holdout=0.25, random_state=0)
    >>> split.sizes["patients"] == (len(db["patients"]) - round(0.25 * len(db["patients"])),
    ...                             round(0.25 * len(db["patients"])))
    True
    >>> len(split.training["visits"]) < len(db["visits"])
    True
    """
    if isinstance(holdout, bool) or not isinstance(holdout, int | float) or not 0 < holdout < 1:
        raise ParameterError(f"holdout must be a share between 0 and 1 (exclusive), e.g. 0.2; got {holdout!r}")
    entropy = _entropy(random_state)
    held: dict[str, dict[str, np.ndarray]] = {}
    sizes, notes = {}, []
    for table in schema:
        if not table.individual:
            continue
        n = len(database[table.name])
        n_control = int(round(holdout * n))
        if n_control < MIN_CONTROL_ROWS or n - n_control < MIN_TRAINING_ROWS:
            notes.append(f"{table.name} has {n} rows: too few to hold {holdout:.0%} of them out; it is not attacked")
            continue
        rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(zlib.crc32(table.name.encode()),)))
        mask = np.zeros(n, dtype=bool)
        mask[balanced_choice(database[table.name], balanced_columns(table), n_control, rng)] = True
        held[table.name] = _descendants(schema, database, table.name, mask)
        sizes[table.name] = (n - n_control, n_control)
    training = {name: _keep(database[name], ~_any(held, name, database)) for name in schema.tables}
    control, control_rows = {}, {}
    for name, masks in held.items():
        others = {other: m for other, m in held.items() if other != name}
        control[name] = {t: _keep(database[t], ~_any(others, t, database)) for t in schema.tables}
        kept = ~_any(others, name, database)
        control_rows[name] = np.flatnonzero(masks[name][kept])
    return Holdout(training, control, control_rows, sizes, notes)


def balanced_columns(table) -> list[str]:
    """The columns whose values the control people share with the training people in equal proportions:
    the table's quasi-identifiers, or, when it declares none, its categorical and boolean columns."""
    if table.quasi_identifiers:
        return list(table.quasi_identifiers)
    return [c.name for c in table.released_columns if c.type in ("categorical", "boolean")]


def balanced_choice(frame: pd.DataFrame, columns, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` rows of ``frame`` drawn at random, as evenly spread over the values of ``columns`` as can be.

    The rows are ordered by ``columns`` (lexicographically, missing values last, ties in a random
    order) and every ``len(frame) / size``-th row is taken from a random start (systematic sampling):
    each class of the columns' values keeps its share in the sample, within one row. Without
    columns, a simple random sample.

    Examples
    --------
    >>> people = pd.DataFrame({"job": ["nurse"] * 4 + ["judge"] * 2})
    >>> chosen = balanced_choice(people, ["job"], 3, np.random.default_rng(0))
    >>> people["job"].iloc[chosen].value_counts().to_dict()
    {'nurse': 2, 'judge': 1}
    """
    n = len(frame)
    order = rng.permutation(n)
    keys = [exact_codes(frame[c].iloc[order].reset_index(drop=True), sort=True)[0] for c in reversed(columns)]
    if keys:
        order = order[np.lexsort(keys)]
    start = rng.random()
    picks = np.floor((np.arange(size) + start) * n / size).astype(np.int64)
    return np.sort(order[np.minimum(picks, n - 1)])


def _descendants(schema: Schema, database, table: str, mask: np.ndarray) -> dict[str, np.ndarray]:
    """Rows of every table descending from the rows of ``table`` selected by ``mask``."""
    held = {name: np.zeros(len(database[name]), dtype=bool) for name in schema.tables}
    held[table] = mask.copy()
    for name in topological_order(schema):
        if not held[name].any():
            continue
        keys = database[name][schema[name].primary_key][held[name]]
        for link in child_links(schema, name):
            held[link.child] |= database[link.child][link.column].isin(keys).to_numpy()
    return held


def _any(held: dict, table: str, database) -> np.ndarray:
    out = np.zeros(len(database[table]), dtype=bool)
    for masks in held.values():
        out |= masks[table]
    return out


def _keep(frame: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    return frame[mask].reset_index(drop=True)


def _entropy(random_state) -> int:
    if isinstance(random_state, np.random.SeedSequence):
        return int(random_state.entropy)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63))
    return int(np.random.SeedSequence(random_state).entropy)
