"""Singling out: predicates read off the release that isolate exactly one real person.

The attacker writes predicates that hold for exactly one row of the release, hoping they hold for
exactly one person of the source data too (Cohen and Nissim 2020; anonymeter):

- *univariate*: a value held by a single released row (``town == 'Brest'``), the smallest or largest
  value of a numeric column (``age >= 97``), the only missing value of a column;
- *multivariate*: from a random released row and ``n_columns`` random columns, the conjunction of its
  values (``==`` for categories, ``>=`` above the column's median and ``<=`` below it for numbers,
  so that the predicate reaches for the tail, ``is missing`` for a missing value): anonymeter's
  predicates, drawn the same way.

A predicate succeeds, as in anonymeter, when exactly one training person (one of the people the
release was made from) satisfies it. Rows are people: two identical records are two people, and a
predicate matching both singles out neither (anonymeter drops duplicate records first).

What would the same predicates achieve were the release to know nobody? The training people are
a random share of the people attacked (training and control together), drawn without looking at
the predicates; a predicate that ``k`` of those people satisfy then singles out a training person
with the hypergeometric chance ``P(exactly 1 of the k is a training person)``: ``p`` for ``k = 1``
(``p`` the training share, 0.8 by default), ``2 p (1 - p)`` for ``k = 2``, and so on. The control
rate is the mean of these chances over the predicates: the training success expected without
memorization, exact given the predicates and the people, with no model fitted. (anonymeter
counts the predicates isolating a control person among the control people alone, then brings
that count to the training group's size by extrapolating a fitted curve, which leaves risks of
0.08 to 0.19 on releases that know nobody with an 80 / 20 split: docs/guide/attacks.md.) The
risk ``(main - control) / (1 - control)`` is then 1 on a copy of the training people, and about 0
on a release independent of them.

The control rate has no error: given the predicates and the people, it is exact. The risk's
interval is the success's on training (Wilson, with Kish's design effect for predicates isolating
the same person), wider than the scatter of the risk over random splits: cautious.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
from scipy.stats import hypergeom

from relanon.common.options import check_integer, check_option
from relanon.metrics.attacks.coding import CodedFrames, code_frames
from relanon.metrics.attacks.confidence import CONFIDENCE, expected_rate, success_rate
from relanon.metrics.attacks.results import SINGLING_OUT, AttackResult, attack_result

UNIVARIATE, MULTIVARIATE = "univariate", "multivariate"
MODES = (UNIVARIATE, MULTIVARIATE)
DEFAULT_ATTACKS = 2_000
DEFAULT_COLUMNS = 3
EVALUATED_CELLS = 20_000_000  # rows x predicates compared at once
ROWS_PER_PASS = 1_000  # capped counts: rows read before dropping the predicates already at the cap
# People counted per predicate and group: beyond, the chance that exactly one of them is a training person is
# below 1e-15 for any training share of at least half (and is read at the cap, an over-estimate).
CAP = 64
SHOWN_PREDICATES = 20

# operators of a condition; ANY pads a predicate with fewer conditions
ANY, EQ, NE, LT, GT, LE, GE, MISSING, PRESENT = range(9)
SYMBOLS = {EQ: "==", NE: "!=", LT: "<", GT: ">", LE: "<=", GE: ">="}


def singling_out(release: pd.DataFrame, training: pd.DataFrame, control: pd.DataFrame, columns, *,
                 mode: str = MULTIVARIATE, n_attacks: int = DEFAULT_ATTACKS, n_columns: int = DEFAULT_COLUMNS,
                 max_attempts: int | None = None, random_state=None, confidence: float = CONFIDENCE) -> AttackResult:
    """Run the singling-out attack of ``mode`` against a release.

    Parameters
    ----------
    release : DataFrame
        The released records: the attacker's only source.
    training, control : DataFrame
        The people the release was made from, and people of the same population it never saw.
    columns : mapping of str to str
        The attacked columns and their schema types.
    mode : {"univariate", "multivariate"}
    n_attacks : int
        Predicates drawn (univariate: at most this many, among every candidate).
    n_columns : int
        Columns per multivariate predicate.
    max_attempts : int, optional
        Released rows tried for multivariate predicates (default ``100 * n_attacks``).
    random_state : int or numpy.random.Generator
        Seed of the predicates drawn.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"age": rng.integers(18, 90, 400), "town": rng.choice(list("abcdefghij"), 400)})
    >>> training, control = people.iloc[:300], people.iloc[300:]
    >>> leaky = singling_out(training, training, control, {"age": "integer", "town": "categorical"},
    ...                      n_columns=2, random_state=0)
    >>> leaky.risk.value > 0.5
    True
    """
    return singling_out_coded(code_frames({"release": release, "training": training, "control": control}, columns),
                              mode=mode, n_attacks=n_attacks, n_columns=n_columns, max_attempts=max_attempts,
                              random_state=random_state, confidence=confidence)


def singling_out_coded(coded: CodedFrames, *, mode: str = MULTIVARIATE, n_attacks: int = DEFAULT_ATTACKS,
                       n_columns: int = DEFAULT_COLUMNS, max_attempts: int | None = None, random_state=None,
                       confidence: float = CONFIDENCE) -> AttackResult:
    """:func:`singling_out` on frames already coded (``release``, ``training``, ``control``)."""
    check_option(mode, MODES, "mode")
    positive_integer(n_attacks, "n_attacks")
    positive_integer(n_columns, "n_columns")
    rng = np.random.default_rng(random_state)
    release, training, control = coded["release"], coded["training"], coded["control"]
    width = 1 if mode == UNIVARIATE else min(n_columns, len(coded.columns))
    if len(release) == 0 or len(coded.columns) == 0:
        predicates = _empty(width)
    elif mode == UNIVARIATE:
        predicates = univariate_predicates(release, coded, n_attacks, rng)
    else:
        attempts = 100 * n_attacks if max_attempts is None else max_attempts
        predicates = multivariate_predicates(release, coded, n_attacks, width, attempts, rng)
    n = len(predicates[0])
    training_counts = count_matches(training, predicates, cap=CAP)
    control_counts = count_matches(control, predicates, cap=CAP)
    succeeded = training_counts == 1
    control_succeeded = (control_counts == 1) & (training_counts == 0)
    expected = chance_of_one(training_counts + control_counts, len(training), len(control))
    deff = design_effect(training, control, predicates, succeeded, control_succeeded)
    baseline = random_predicates(release, coded, n_attacks, width, rng) if len(release) and width else _empty(width)
    n_baseline = int((count_matches(training, baseline, cap=2) == 1).sum())
    texts = [predicate_text(coded, predicates, q) for q in np.flatnonzero(succeeded)]
    by_columns = Counter(" & ".join(_condition_head(coded, predicates, q, s) for s in range(width)
                                    if predicates[1][q, s] != ANY) for q in np.flatnonzero(succeeded))
    notes = [few_predicates(n, n_attacks)] if n < n_attacks and mode == MULTIVARIATE else []
    return attack_result(
        SINGLING_OUT, mode if mode == UNIVARIATE else f"{mode} ({width} columns)",
        success_rate(int(succeeded.sum()), n, confidence, design_effect=deff),
        expected_rate(float(expected.sum()), n, confidence, design_effect=deff),
        success_rate(n_baseline, len(baseline[0]), confidence),
        evidence=texts[:SHOWN_PREDICATES], notes=notes, confidence=confidence,
        details={
            "predicates": n,
            "predicates_asked": int(n_attacks),
            "singling_out_training_person": int(succeeded.sum()),
            "expected_without_memorization": float(expected.sum()),
            "singling_out_control_person": int(control_succeeded.sum()),
            "design_effect": deff,
            "unique_in_training": int((training_counts == 1).sum()),
            "unique_in_control": int((control_counts == 1).sum()),
            "unique_in_population": int((training_counts + control_counts == 1).sum()),
            "training_size": int(len(training)),
            "control_size": int(len(control)),
            "succeeding_by_columns": dict(by_columns.most_common()),
        },
    )


def chance_of_one(matched: np.ndarray, n_training: int, n_control: int) -> np.ndarray:
    """The chance that exactly one of ``matched`` people is a training person, were the ``n_training``
    training people drawn at random among the ``n_training + n_control`` people (hypergeometric).

    Examples
    --------
    >>> chance_of_one(np.array([0, 1, 2]), 80, 20).round(3)
    array([0.   , 0.8  , 0.323])
    """
    matched = np.asarray(matched, dtype=np.int64)
    if n_training == 0:
        return np.zeros(len(matched))
    return hypergeom.pmf(1, n_training + n_control, np.minimum(matched, n_training + n_control), n_training)


def few_predicates(n: int, asked: int) -> str:
    """The note of a multivariate attack that found fewer predicates singling out a released row than asked."""
    return f"only {n:,} of the {asked:,} predicates asked for single out a released row"


# --------------------------------------------------------------------------- predicates


def univariate_predicates(release: np.ndarray, coded: CodedFrames, n_attacks: int, rng) -> tuple:
    """Every one-condition predicate that singles out a released row (a seeded sample of ``n_attacks``)."""
    columns, ops, values = [], [], []
    for j in range(release.shape[1]):
        column = release[:, j]
        missing = np.isnan(column)
        if missing.sum() == 1:
            columns.append(j), ops.append(MISSING), values.append(np.nan)
        present = column[~missing]
        if not len(present):
            continue
        uniques, counts = np.unique(present, return_counts=True)
        rare = uniques[counts == 1]
        columns += [j] * len(rare)
        ops += [EQ] * len(rare)
        values += rare.tolist()
        if coded.numeric[j]:
            for op, extreme, count in ((LE, uniques[0], counts[0]), (GE, uniques[-1], counts[-1])):
                if count == 1 and len(uniques) > 1:  # the extreme singles out a released row
                    columns.append(j), ops.append(op), values.append(float(extreme))
    predicates = (np.array(columns, dtype=np.int64)[:, None], np.array(ops, dtype=np.int64)[:, None],
                  np.array(values, dtype=np.float64)[:, None])
    if len(columns) > n_attacks:
        chosen = np.sort(rng.choice(len(columns), size=n_attacks, replace=False))
        predicates = tuple(part[chosen] for part in predicates)
    return predicates


def multivariate_predicates(release: np.ndarray, coded: CodedFrames, n_attacks: int, width: int, max_attempts: int,
                            rng) -> tuple:
    """Up to ``n_attacks`` distinct predicates on ``width`` columns, each singling out a released row."""
    n_rows, n_cols = release.shape
    medians = np.array([np.nanmedian(release[:, j]) if coded.numeric[j] and not np.isnan(release[:, j]).all()
                        else np.nan for j in range(n_cols)])
    batch = max(1, min(1000, EVALUATED_CELLS // max(n_rows, 1)))
    seen, kept = set(), []
    attempts = 0
    while len(kept) < n_attacks and attempts < max_attempts:
        size = min(batch, max_attempts - attempts)
        attempts += size
        rows = rng.integers(n_rows, size=size)
        cols = np.sort(np.argsort(rng.random((size, n_cols)), axis=1)[:, :width], axis=1)
        values = release[rows[:, None], cols]
        numeric = coded.numeric[cols]
        ops = np.where(np.isnan(values), MISSING, np.where(numeric, np.where(values > medians[cols], GE, LE), EQ))
        candidates = (cols, ops, values)
        unique = count_matches(release, candidates, cap=2) == 1
        for q in np.flatnonzero(unique):
            key = (tuple(cols[q]), tuple(ops[q]), tuple(np.nan_to_num(values[q], nan=np.inf)))
            if key not in seen:
                seen.add(key)
                kept.append((cols[q], ops[q], values[q]))
                if len(kept) == n_attacks:
                    break
    if not kept:
        return _empty(width)
    return tuple(np.array([k[i] for k in kept]) for i in range(3))


def random_predicates(release: np.ndarray, coded: CodedFrames, n: int, width: int, rng) -> tuple:
    """The baseline attacker's predicates: random columns, random released values, random operators."""
    n_cols = release.shape[1]
    cols = np.sort(np.argsort(rng.random((n, n_cols)), axis=1)[:, :width], axis=1)
    values = np.empty((n, width))
    ops = np.empty((n, width), dtype=np.int64)
    uniques = [np.unique(release[:, j]) for j in range(n_cols)]  # NaN, when present, is one of them
    for s in range(width):
        for j in np.unique(cols[:, s]):
            rows = np.flatnonzero(cols[:, s] == j)
            candidates = uniques[j]
            values[rows, s] = candidates[rng.integers(len(candidates), size=len(rows))]
            choices = np.array([EQ, NE, LT, GT, LE, GE] if coded.numeric[j] else [EQ, NE])
            ops[rows, s] = choices[rng.integers(len(choices), size=len(rows))]
    missing = np.isnan(values)
    ops = np.where(missing, np.where(ops == EQ, MISSING, PRESENT), ops)
    return cols, ops, values


def count_matches(data: np.ndarray, predicates: tuple, *, cap: int | None = None) -> np.ndarray:
    """Number of rows of ``data`` satisfying each predicate (a conjunction of conditions).

    With ``cap``, the counts are ``min(count, cap)`` and counting stops for a predicate once it
    reaches ``cap`` (``cap=2`` tells whether a predicate singles out, and skips most of the rows
    for predicates matching many).
    """
    cols, ops, values = predicates
    n_predicates = len(cols)
    counts = np.zeros(n_predicates, dtype=np.int64)
    if n_predicates == 0 or len(data) == 0:
        return counts
    by_column = np.ascontiguousarray(data.T)  # a column's values contiguous: conditions read whole rows of it
    rows = len(data) if cap is None else min(len(data), ROWS_PER_PASS)
    for row_start in range(0, len(data), rows):
        part = by_column[:, row_start:row_start + rows]
        alive = np.arange(n_predicates) if cap is None else np.flatnonzero(counts < cap)
        batch = max(1, EVALUATED_CELLS // part.shape[1])
        for start in range(0, len(alive), batch):
            which = alive[start:start + batch]
            counts[which] += _satisfied(part, cols[which], ops[which], values[which]).sum(axis=1)
    return counts if cap is None else np.minimum(counts, cap)


def _satisfied(by_column: np.ndarray, cols: np.ndarray, ops: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(predicates x rows) whether each row satisfies each predicate; ``by_column`` is (columns x rows)."""
    holds = np.ones((len(cols), by_column.shape[1]), dtype=bool)
    for s in range(cols.shape[1]):
        for op in np.unique(ops[:, s]):
            if op == ANY:
                continue
            which = np.flatnonzero(ops[:, s] == op)
            x = by_column[cols[which, s]]
            v = values[which, s][:, None]
            with np.errstate(invalid="ignore"):
                if op == EQ:
                    test = x == v
                elif op == NE:
                    test = (x != v) & ~np.isnan(x)
                elif op == LT:
                    test = x < v
                elif op == GT:
                    test = x > v
                elif op == LE:
                    test = x <= v
                elif op == GE:
                    test = x >= v
                elif op == MISSING:
                    test = np.isnan(x)
                else:
                    test = ~np.isnan(x)
            if len(which) == len(cols):
                holds &= test
            else:
                holds[which] &= test
    return holds


def _empty(width: int) -> tuple:
    return (np.empty((0, width), dtype=np.int64), np.empty((0, width), dtype=np.int64), np.empty((0, width)))


def design_effect(training: np.ndarray, control: np.ndarray, predicates: tuple, succeeded: np.ndarray,
                  control_succeeded: np.ndarray) -> float:
    """Kish's design effect of predicates that single out the same person: ``sum(m**2) / sum(m)``.

    Predicates isolating one person succeed or fail together (on training if she is a training
    person, not if she is a control person), so ``m`` of them count as much as one trial weighted
    ``m``. The rates' intervals are those of ``n / deff`` independent predicates (1 when no two
    predicates isolate the same person). ``benchmarks/rounds_calibration.py`` measures the
    intervals on releases that know nobody.
    """
    people = np.concatenate([matched_rows(training, _subset(predicates, succeeded)),
                             len(training) + matched_rows(control, _subset(predicates, control_succeeded))])
    if not len(people):
        return 1.0
    sizes = np.bincount(people)
    sizes = sizes[sizes > 0].astype(np.float64)
    return float((sizes**2).sum() / sizes.sum())


def matched_rows(data: np.ndarray, predicates: tuple) -> np.ndarray:
    """For predicates matching at least one row of ``data``: the first such row."""
    cols = predicates[0]
    out = np.empty(len(cols), dtype=np.int64)
    if not len(cols):
        return out
    by_column = np.ascontiguousarray(data.T)
    batch = max(1, EVALUATED_CELLS // max(len(data), 1))
    for start in range(0, len(cols), batch):
        stop = min(start + batch, len(cols))
        part = tuple(p[start:stop] for p in predicates)
        out[start:stop] = np.argmax(_satisfied(by_column, *part), axis=1)
    return out


def _subset(predicates: tuple, mask: np.ndarray) -> tuple:
    return tuple(p[mask] for p in predicates)


# --------------------------------------------------------------------------- display


def predicate_text(coded: CodedFrames, predicates: tuple, q: int) -> str:
    """A predicate as a reader sees it: ``town == 'Brest' & age >= 97``."""
    cols, ops, values = predicates
    return " & ".join(_condition(coded, int(cols[q, s]), int(ops[q, s]), values[q, s])
                      for s in range(cols.shape[1]) if ops[q, s] != ANY)


def _condition(coded: CodedFrames, j: int, op: int, value: float) -> str:
    name = coded.columns[j]
    if op == MISSING:
        return f"{name} is missing"
    if op == PRESENT:
        return f"{name} is present"
    label = coded.value_label(j, value)
    shown = label.isoformat() if isinstance(label, pd.Timestamp) else (f"{label:.10g}" if isinstance(label, float) else repr(label))
    return f"{name} {SYMBOLS[op]} {shown}"


def _condition_head(coded: CodedFrames, predicates: tuple, q: int, s: int) -> str:
    cols, ops, _ = predicates
    op = int(ops[q, s])
    symbol = {MISSING: "is missing", PRESENT: "is present"}.get(op) or SYMBOLS[op]
    return f"{coded.columns[int(cols[q, s])]} {symbol}"


def positive_integer(value, name: str) -> None:
    check_integer(value, name, minimum=1)
