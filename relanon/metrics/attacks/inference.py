"""Inference: guessing a person's secret from the released row closest to what the attacker knows.

The attacker knows every other column of a person (``known``), finds the closest released row on
them (the mixed-type distance of :mod:`relanon.metrics.attacks.coding`, ties broken at random,
seeded) and reads its value of the ``secret`` column (anonymeter's method). A guess
is right when:

- categorical or boolean secret: it is the true value (a missing value guessed missing is right);
- continuous or integer secret: ``|guess - truth| <= tolerance * min(|truth|, span)`` (5 % by default):
  anonymeter's relative tolerance, except for numbers far from zero compared with their range (a
  year of construction: 5 % of 2004 is a century, every guess would be right);
- datetime secret: ``|guess - truth| <= tolerance * span`` with ``span`` the range of the column
  (a date has no natural zero to be relative to).

The random attacker reads the secret of a random released row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.metrics.attacks.coding import CodedFrames, code_frames, nearest
from relanon.metrics.attacks.confidence import CONFIDENCE, success_rate
from relanon.metrics.attacks.linkability import DEFAULT_TARGETS, sample_rows
from relanon.metrics.attacks.results import INFERENCE, AttackResult, attack_result

DEFAULT_TOLERANCE = 0.05


def inference(release: pd.DataFrame, training: pd.DataFrame, control: pd.DataFrame, columns, *, secret: str,
              known=None, n_attacks: int = DEFAULT_TARGETS, tolerance: float = DEFAULT_TOLERANCE, random_state=None,
              confidence: float = CONFIDENCE) -> AttackResult:
    """Run the inference attack on ``secret`` against a release.

    Parameters
    ----------
    release, training, control : DataFrame
        The released rows, the people they were made from, and people they never saw.
    columns : mapping of str to str
        The columns (known and secret) and their schema types.
    secret : str
        The column the attacker guesses.
    known : list of str, optional
        The columns the attacker knows (default: every other column).
    n_attacks : int
        People attacked in each group (a seeded sample when the group is larger).
    tolerance : float
        Relative error within which a numeric guess counts as right.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"age": rng.integers(20, 80, 300), "bmi": rng.normal(25, 4, 300),
    ...                        "smoker": rng.choice(["yes", "no"], 300)})
    >>> kinds = {"age": "integer", "bmi": "continuous", "smoker": "categorical"}
    >>> copy = inference(people[:200], people[:200], people[200:], kinds, secret="smoker", random_state=0)
    >>> copy.main.share, copy.risk.value > 0.8
    (1.0, True)
    """
    coded = code_frames({"release": release, "training": training, "control": control}, columns)
    rng = np.random.default_rng(random_state)
    j = int(coded.index([secret])[0])
    aux = coded.index([c for c in coded.columns if c != secret] if known is None else list(known))
    if j in set(aux.tolist()):
        raise ParameterError(f"the secret column {secret!r} cannot also be known to the attacker")
    if not len(aux):
        raise ParameterError("the inference attack needs at least one column known to the attacker")
    guesses = {}
    for group in ("training", "control"):
        rows = sample_rows(len(coded[group]), n_attacks, rng)
        (near,) = nearest(coded[group][rows], coded["release"], coded, [aux], random_state=rng)
        guesses[group] = (rows, near[:, 0])
    return inference_result(coded, j, guesses["training"], guesses["control"], rng, tolerance=tolerance,
                            confidence=confidence)


def inference_result(coded: CodedFrames, secret: int, main, control, rng, *, tolerance: float = DEFAULT_TOLERANCE,
                     confidence: float = CONFIDENCE) -> AttackResult:
    """Score the guesses: ``main`` and ``control`` are (attacked rows, released row read for each)."""
    if not tolerance >= 0:
        raise ParameterError(f"tolerance must be a non-negative number, got {tolerance!r}")
    released = coded["release"][:, secret]
    rows, read = main
    truth = coded["training"][rows, secret]
    main_right = right_guesses(coded, secret, released[read], truth, tolerance)
    control_rows, control_read = control
    control_right = right_guesses(coded, secret, released[control_read], coded["control"][control_rows, secret],
                                  tolerance)
    random = released[rng.integers(len(released), size=len(rows))] if len(released) else np.full(len(rows), np.nan)
    baseline_right = right_guesses(coded, secret, random, truth, tolerance)
    return attack_result(
        INFERENCE, coded.columns[secret],
        success_rate(int(main_right.sum()), len(main_right), confidence),
        success_rate(int(control_right.sum()), len(control_right), confidence),
        success_rate(int(baseline_right.sum()), len(baseline_right), confidence),
        confidence=confidence, details={"tolerance": float(tolerance), "type": coded.types[coded.columns[secret]]},
    )


def right_guesses(coded: CodedFrames, secret: int, guess: np.ndarray, truth: np.ndarray, tolerance: float) -> np.ndarray:
    """Whether each guess of the secret column counts as right (see the module's rules)."""
    guess_missing, truth_missing = np.isnan(guess), np.isnan(truth)
    both = guess_missing & truth_missing
    one = guess_missing ^ truth_missing
    if not coded.numeric[secret]:
        close = guess == truth
    else:
        kind = coded.types[coded.columns[secret]]
        span = coded.spans[secret]
        allowed = tolerance * (span if kind == "datetime" else np.minimum(np.abs(truth), span))
        with np.errstate(invalid="ignore"):
            close = np.abs(guess - truth) <= allowed
    return both | (~one & close)
