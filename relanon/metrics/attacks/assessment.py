"""The assessment run: hold people out, anonymize the rest, attack the release with both groups.

:func:`assess` splits the people of every individual table into training and control people (the
control people leave with their descendant rows, :mod:`relanon.metrics.attacks.holdout`),
anonymizes the training database exactly as :func:`relanon.anonymize` does with the same seed, and
attacks the release on each individual table alone (``STANDALONE``) and on its views across links
(``TO_TOP_ENRICHED`` with its children's aggregates, ``TO_BOTTOM_PROPAGATED`` with its parents'
columns: the views of the privacy matrix) with every attack of :mod:`relanon.metrics.attacks.view_attacks`.

The release of a real run is never attacked this way: the control people must be people the
release never saw. The privacy and signal metrics of the training release are computed too, with
distance targets calibrated against the control people (:mod:`relanon.metrics.attacks.distances`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import zlib
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError, Problem, SchemaError
from relanon.common.options import DEFAULT_BUDGET_ROUNDS, DEFAULT_HOLDOUT
from relanon.common.plain import matrix_dict, plain
from relanon.common.progress import as_progress
from relanon.metrics.attacks.distances import CLOSER_TARGET, reference_distances
from relanon.metrics.attacks.holdout import split_database
from relanon.metrics.attacks.linkability import DEFAULT_TARGETS
from relanon.metrics.attacks.results import FAILED, INCONCLUSIVE, PASSED, RISK_TARGET, STATES, AttackResult
from relanon.metrics.attacks.rounds import PRACTICAL_ROUNDS, pooled, rounds_wanted
from relanon.metrics.attacks.singling_out import DEFAULT_ATTACKS, positive_integer
from relanon.metrics.attacks.view_attacks import attack_view
from relanon.metrics.evaluation import Evaluation
from relanon.metrics.scenarios import evaluate
from relanon.multitable.pipeline import anonymize
from relanon.multitable.policy import small_group_rules
from relanon.multitable.views import views
from relanon.schema.model import Schema
from relanon.schema.validation import check_database

CALIBRATED = ("closer_to_training", "distance_to_closest", "closest_distances_ratio")


@dataclass(eq=False)
class Assessment:
    """The attacks against a release made without the control people, and the metrics beside them.

    Attributes
    ----------
    attacks : list of AttackResult
        Every attack, each naming its view.
    distances : list of (str, Metric)
        Per view, the distance metrics calibrated against the control people.
    risk_matrix : DataFrame
        Rows: individual tables; columns: tables. The cell holds the risk of the attacks on the
        view pairing the two tables (diagonal: the table alone) with the highest upper bound among
        those of the cell's worst state (see ``risk_state``).
    risk_upper : DataFrame
        The upper bound of the 95 % interval of that risk.
    risk_passed : DataFrame
        Whether every attack of the cell has an upper bound below 5 %.
    risk_state : DataFrame
        The worst state of the cell's attacks (:attr:`AttackResult.state`): ``"failed"`` over
        ``"inconclusive"`` over ``"passed"``; missing where no attack was measured.
    evaluation : Evaluation
        Privacy and signal of the training release against the training people, the distance
        targets replaced by those calibrated against the control people.
    sizes : dict
        Individual table -> (training people, control people).
    holdout : float
    notes : list of str
    cells : dict
        View -> (individual table, table): the cell of the risk matrix each view fills.
    rounds : int
        Independent splits whose attacks are pooled (``sizes`` are those of one round).
    k : dict
        Table anonymized by the avatar method -> its ``k``: what the verdict advises to raise against a
        measured leak (more neighbours per avatar: a smoother release, less faithful).
    combination_min_count : dict
        Individual table anonymized by the avatar method -> the records that must hold an avatar's tuple of
        categories (``anonymize.combination_min_count``): what the verdict advises to raise against a
        measured multivariate singling out.
    """

    attacks: list
    distances: list
    risk_matrix: pd.DataFrame
    risk_upper: pd.DataFrame
    risk_passed: pd.DataFrame
    evaluation: Evaluation
    sizes: dict
    holdout: float
    notes: list = field(default_factory=list)
    risk_state: pd.DataFrame | None = None
    cells: dict = field(default_factory=dict)
    rounds: int = 1
    k: dict = field(default_factory=dict)
    combination_min_count: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Whether attacks were made and every one has a risk whose upper bound is below 5 % (an
        inconclusive attack does not pass, nor an attack that could not be made: nothing attacked
        proves nothing)."""
        return bool(self.attacks) and all(a.passed is True for a in self.attacks)

    @property
    def not_run(self) -> list[AttackResult]:
        """The attacks that could not be made (no person to attack: the risk is not measured)."""
        return [a for a in self.attacks if a.passed is None]

    @property
    def failures(self) -> list[AttackResult]:
        """The attacks that failed: a risk whose upper bound reaches 5 % and that is not inconclusive."""
        return [a for a in self.attacks if a.state == FAILED]

    @property
    def inconclusive(self) -> list[AttackResult]:
        """The attacks that cannot show a risk below 5 % with so few people, their point estimate below 5 %."""
        return [a for a in self.attacks if a.state == INCONCLUSIVE]

    @property
    def state(self) -> str:
        """The worst state of the attacks: ``"failed"``, ``"inconclusive"`` or ``"passed"``; inconclusive
        too when no attack, or some attack, could not be made."""
        if self.failures:
            return FAILED
        return INCONCLUSIVE if self.inconclusive or self.not_run or not self.attacks else PASSED

    def to_dict(self) -> dict:
        """Plain, JSON-ready data."""
        return plain({
            "holdout": self.holdout,
            "rounds": self.rounds,
            "k": self.k,
            "combination_min_count": self.combination_min_count,
            "risk_target": RISK_TARGET,
            "passed": self.passed,
            "state": self.state,
            "sizes": {t: {"training": s[0], "control": s[1]} for t, s in self.sizes.items()},
            "notes": self.notes,
            "risk_matrix": matrix_dict(self.risk_matrix),
            "risk_upper": matrix_dict(self.risk_upper),
            "risk_passed": matrix_dict(self.risk_passed),
            "risk_state": None if self.risk_state is None else matrix_dict(self.risk_state),
            "attacks": [a.to_dict() for a in self.attacks],
            "distances": [{"view": view, **metric.to_dict()} for view, metric in self.distances],
        })

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str) + "\n"


def assess(schema: Schema, database, *, holdout: float = DEFAULT_HOLDOUT, random_state=None,
           n_attacks: int = DEFAULT_TARGETS, n_predicates: int = DEFAULT_ATTACKS, sample_size: int | None = None,
           rounds: int | None = None, time_budget: float | None = None, progress=True) -> Assessment:
    """Measure what attackers learn from a release, against people it never saw.

    Parameters
    ----------
    schema : Schema
    database : dict of DataFrame
        The original database (it is checked against the schema and never modified).
    holdout : float
        Share of the people of each individual table held out as control people.
    random_state : int or None
        Seed: the training database of the first round is anonymized with it, as ``relanon anonymize
        --seed`` would; the holdout, the attacks and the other rounds draw from streams derived from it.
        ``None`` uses the schema's seed (fresh randomness when it has none).
    n_attacks : int
        People attacked per group by linkability and inference (a seeded sample beyond).
    n_predicates : int
        Singling-out predicates per mode.
    sample_size : int, optional
        Rows sampled per table for the distance metrics (default 10,000).
    rounds : int, optional
        Independent splits, each anonymized and attacked; every attack's trials are pooled over them
        (:mod:`relanon.metrics.attacks.rounds`): more rounds, narrower intervals, each round the time of
        one. The privacy and signal metrics are those of the first round. Default: chosen within
        ``time_budget``.
    time_budget : float, optional
        Seconds the assessment may take when ``rounds`` is not given (default: twice its first round). After
        each round it stops when every attack is settled (:func:`~relanon.metrics.attacks.rounds.rounds_wanted`),
        when settling them would take more rounds than the budget leaves or than is practical (the verdict then
        says INCONCLUSIVE, with the rounds or the people it would need), or when the next round would not fit.
        The rounds chosen depend on the machine's speed: ``Assessment.rounds`` says how many were run, and
        ``rounds=`` that many gives the same figures anywhere.
    progress : bool or Progress

    Returns
    -------
    Assessment

    Examples
    --------
    >>> from relanon import datasets
    >>> schema, db = datasets.hospital(scale=0.02, seed=1)
    >>> assessment = assess(schema, db, random_state=0, n_predicates=200, progress=False)
    >>> list(assessment.risk_matrix.index) == [t.name for t in schema if t.individual]
    True
    """
    require_individual_tables(schema)  # nothing to attack: said before the long run, not after it
    report = as_progress(progress)
    positive_integer(n_attacks, "n_attacks")  # checked before the long run, not after it
    positive_integer(n_predicates, "n_predicates")
    if rounds is not None:
        positive_integer(rounds, "rounds")
    if time_budget is not None and (isinstance(time_budget, bool) or not isinstance(time_budget, int | float)
                                    or not time_budget > 0):
        raise ParameterError(f"time_budget must be a positive number of seconds, got {time_budget!r}")
    checked = check_database(schema, database)
    seed = _seed(schema, random_state)
    options = {"n_attacks": n_attacks, "n_predicates": n_predicates, "sample_size": sample_size}
    found, started, number = [], time.perf_counter(), 0
    while rounds is None or number < rounds:
        if number:
            report.say(f"round {number + 1}" + (f" of {rounds}" if rounds else ""))
        # the first round is the run `anonymize --seed` makes; the others, seeds of their own
        found.append(_round(schema, checked, seed if number == 0 else _stream(seed, f"round {number + 1}"), holdout,
                            report, first=number == 0, **options))
        number += 1
        if rounds is None and not _more_rounds(found, time.perf_counter() - started, time_budget):
            break
    split, evaluation, distances, cells = found[0].split, found[0].evaluation, found[0].distances, found[0].cells
    attacks = _pooled_rounds([f.attacks for f in found])
    calibrated = calibrate(evaluation, distances, cells)
    risk_matrix, risk_upper, risk_passed, risk_state = risk_matrices(schema, attacks, cells)
    notes = list(split.notes)
    if any(s[1] < 100 for s in split.sizes.values()):
        small = ", ".join(f"{t} ({s[1]})" for t, s in split.sizes.items() if s[1] < 100)
        notes.append(f"few control people in {small}: the intervals are wide, and a risk below 5 % cannot be "
                     "shown with fewer than about 100 control people per round")
    return Assessment(attacks, distances, risk_matrix, risk_upper, risk_passed, calibrated, dict(split.sizes),
                      float(holdout), notes, risk_state, cells, len(found),
                      {t.name: t.anonymize.k_or_default for t in schema if t.anonymize.method == "avatar"},
                      {t.name: small_group_rules(schema, t.name)["combination_holders"] for t in schema
                       if t.anonymize.method == "avatar" and t.individual})


def _more_rounds(found: list, elapsed: float, budget: float | None) -> bool:
    """Whether a round more is worth its time: some attack unsettled, the rounds that would settle them all
    within what the budget (default: twice the first round) leaves and :data:`PRACTICAL_ROUNDS`."""
    budget = budget if budget is not None else DEFAULT_BUDGET_ROUNDS * elapsed / len(found)
    affordable = int(budget // (elapsed / len(found)))
    wanted = rounds_wanted(_pooled_rounds([f.attacks for f in found]), len(found))
    return len(found) < wanted <= min(affordable, PRACTICAL_ROUNDS)


def require_individual_tables(schema: Schema) -> list[str]:
    """The individual tables of ``schema``, whose people the attacks target; a :class:`SchemaError`
    when there is none (the assessment would anonymize the database and attack no one).

    Examples
    --------
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"flights": {"primary_key": "id", "columns": {"delay": "integer"}}}})
    >>> require_individual_tables(schema)
    Traceback (most recent call last):
    ...
    relanon.common.errors.SchemaError: the schema cannot be assessed (1 problem):
      - schema: no table is individual (tables: flights), so there are no people to hold out and attack: mark each table whose rows are people the release protects (one row per person) with `individual: true` (docs/guide/schema-file.md)
    """
    individuals = [table.name for table in schema if table.individual]
    if not individuals:
        raise SchemaError("the schema cannot be assessed", [Problem(
            f"no table is individual (tables: {', '.join(schema.tables)}), so there are no people to hold out and "
            "attack: mark each table whose rows are people the release protects (one row per person) with "
            "`individual: true` (docs/guide/schema-file.md)")])
    return individuals


class _Round(NamedTuple):
    split: object
    evaluation: Evaluation | None
    attacks: list
    distances: list
    cells: dict


def _round(schema: Schema, checked, seed: int, holdout: float, report, *, first: bool, n_attacks: int,
           n_predicates: int, sample_size: int | None) -> _Round:
    """One round: split, anonymize the training people with ``seed``, attack the release. The first round
    also measures privacy and signal, and the distances calibrated against the control people."""
    split = split_database(schema, checked, holdout=holdout, random_state=_stream(seed, "holdout"))
    for name, (n_training, n_control) in split.sizes.items():
        report.say(f"holdout: {name}: {n_training:,} training and {n_control:,} control people")
    result = anonymize(schema, split.training, random_state=seed, progress=report)
    evaluation = (evaluate(schema, split.training, result.tables, result, sample_size=sample_size,
                           random_state=_stream(seed, "evaluate"), progress=report) if first else None)
    attacks, distances, cells = [], [], {}
    columns = _released_columns(schema, result.tables)
    for name in split.control:
        table = schema[name]
        trained = views(schema, split.training, name, columns)
        held = {v.name: v for v in views(schema, split.control[name], name, columns)}
        released = {v.name: v for v in views(schema, result.tables, name, columns)}
        for view in trained:
            if not view.types or view.name not in released:
                continue
            with report.step(f"attack {view.name}"):
                control = held[view.name].frame.iloc[split.control_rows[name]].reset_index(drop=True)
                rng = np.random.default_rng(_stream(seed, f"attack {view.name}"))
                attacks += attack_view(schema, view, control, released[view.name].frame, rng,
                                       n_attacks=n_attacks, n_predicates=n_predicates)
                if first:
                    metrics = reference_distances(view.frame, control, released[view.name].frame, view.types,
                                                  ncp=table.anonymize.ncp, random_state=rng, name=view.name,
                                                  **({"sample_size": sample_size} if sample_size else {}))
                    distances += [(view.name, m) for m in metrics]
                cells[view.name] = (view.table, view.reference)
    return _Round(split, evaluation, attacks, distances, cells)


def _pooled_rounds(rounds: list[list[AttackResult]]) -> list[AttackResult]:
    """Each attack of the first round pooled with the same attack of the other rounds."""
    if len(rounds) == 1:
        return rounds[0]
    by_key: dict = {}
    for found in rounds:
        for attack in found:
            by_key.setdefault((attack.view, attack.attack, attack.target), []).append(attack)
    return [pooled(by_key[(a.view, a.attack, a.target)]) for a in rounds[0]]


def calibrate(evaluation: Evaluation, distances: list, cells: dict) -> Evaluation:
    """The evaluation with the distance metrics of each view replaced by those calibrated against control."""
    by_view: dict[str, dict] = {}
    for view, metric in distances:
        by_view.setdefault(view, {})[metric.name] = metric
    metrics = []
    for kind, view, metric in evaluation.metrics:
        replaced = by_view.get(view, {}) if kind == "privacy" else {}
        metrics.append((kind, view, replaced.get(metric.name, metric)))
    for view, extra in by_view.items():
        if "closer_to_training" in extra:
            metrics.append(("privacy", view, extra["closer_to_training"]))
    details = evaluation.details.copy()
    for view, extra in by_view.items():
        rows = details.index.get_level_values("view") == view
        for name, metric in extra.items():
            details.loc[rows, name] = metric.value
    passed = evaluation.privacy_passed.copy()
    for cell in {cells[v] for v in by_view if v in cells}:
        names = [v for v, c in cells.items() if c == cell]
        passed.loc[cell] = all(m.passed is not False for kind, v, m in metrics if kind == "privacy" and v in names)
    # per view, relative to the control people: no single number (the descriptions say how)
    targets = {**evaluation.targets, "closer_to_training": CLOSER_TARGET, "distance_to_closest": None,
               "closest_distances_ratio": None}
    notes = evaluation.notes + [
        "distance targets are relative to the control people (people left out of the anonymized data): "
        "see closer_to_training, and the control's values in the breakdown of distance_to_closest and "
        "closest_distances_ratio"
    ]
    descriptions = {**evaluation.descriptions, **{m.name: m.description for _, m in distances}}
    return dataclasses.replace(evaluation, metrics=metrics, details=details, privacy_passed=passed, targets=targets,
                               notes=notes, descriptions=descriptions)


def risk_matrices(schema: Schema, attacks: list, cells: dict):
    """The risk matrices of :class:`Assessment`: shown risk, its upper bound, passed, worst state.

    ``cells`` maps each attacked view to its cell (individual table, table); an attack whose risk
    was not measured leaves its cell alone. A cell shows the attack that decides its state: among
    the attacks of the worst state, the one with the highest upper bound (so a failed cell never
    shows an inconclusive attack's wide interval).
    """
    individuals = [t.name for t in schema if t.individual]
    tables = list(schema.tables)
    index = pd.Index(individuals, name="individual table")
    value = pd.DataFrame(np.nan, index=index, columns=tables)
    upper = pd.DataFrame(np.nan, index=index, columns=tables)
    passed = pd.DataFrame(pd.NA, index=index, columns=tables, dtype="boolean")
    state = pd.DataFrame(None, index=index, columns=tables, dtype=object)
    shown: dict = {}
    for attack in attacks:
        cell = cells.get(attack.view)
        if cell is None or math.isnan(attack.risk.value):
            continue
        rank = (STATES.index(attack.state), attack.risk.high)
        if cell not in shown or rank > shown[cell]:
            shown[cell] = rank
            value.loc[cell], upper.loc[cell] = attack.risk.value, attack.risk.high
        ok = attack.passed is not False
        passed.loc[cell] = ok if pd.isna(passed.loc[cell]) else bool(passed.loc[cell]) and ok
        state.loc[cell] = worst_state(state.loc[cell], attack.state)
    return value, upper, passed, state


def worst_state(*states) -> str | None:
    """The worst of attack states: failed over inconclusive over passed; None when none is given.

    Examples
    --------
    >>> worst_state("passed", "inconclusive", None), worst_state("inconclusive", "failed"), worst_state(None)
    ('inconclusive', 'failed', None)
    """
    known = [s for s in states if s in STATES]
    return max(known, key=STATES.index) if known else None


def _released_columns(schema: Schema, release) -> dict[str, list[str]]:
    """Released columns present in the release (an anatomized table keeps its sensitive column apart)."""
    return {t.name: [c.name for c in t.released_columns if c.name in release[t.name].columns] for t in schema}


def _seed(schema: Schema, random_state) -> int:
    """The run's seed: the one given, else the schema's, else fresh entropy (drawn once)."""
    if random_state is None:
        random_state = schema.seed
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63))
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
    return int(random_state)


def _stream(seed: int, label: str) -> int:
    """An independent seed for one part of the assessment, derived from the run's seed and a label."""
    sequence = np.random.SeedSequence(seed, spawn_key=(zlib.crc32(label.encode("utf-8")),))
    return int(sequence.generate_state(1, np.uint64)[0])
