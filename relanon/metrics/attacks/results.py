"""What an attack returns: plain data a user can read and type against."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from relanon.metrics.attacks.confidence import CONFIDENCE, Risk, SuccessRate, residual_risk, success_rate

SINGLING_OUT = "singling_out"
LINKABILITY = "linkability"
INFERENCE = "inference"
ATTACKS = (SINGLING_OUT, LINKABILITY, INFERENCE)

RISK_TARGET = 0.05
"""A release passes an attack when the upper bound of the risk's 95 % interval stays below 5 %."""

PASSED = "passed"
INCONCLUSIVE = "inconclusive"
FAILED = "failed"
STATES = (PASSED, INCONCLUSIVE, FAILED)
"""The states of an attack, from best to worst (see :attr:`AttackResult.state`)."""


@dataclass(frozen=True)
class AttackResult:
    """One attack against a release: its success on training and control people, and the risk.

    Attributes
    ----------
    attack : {"singling_out", "linkability", "inference"}
    target : str
        What was attacked: ``"univariate"``, ``"multivariate"``, the columns split of a
        linkability attack, the secret column of an inference attack.
    main : SuccessRate
        Success against the people the release was made from (training originals).
    control : SuccessRate
        Success of the same attack against people the release never saw (control originals).
    baseline : SuccessRate
        Success of an attacker guessing at random, for reference.
    risk : Risk
        ``(main - control) / (1 - control)``, bounded to [0, 1], with its confidence interval.
    view : str
        The table or view attacked (set by :func:`relanon.assess`).
    evidence : tuple of str
        What succeeded: the predicates that single out a training person, for example.
    notes : tuple of str
        What limits the reading (too few attacks, attack no better than random...).
    confidence : float
        Confidence level of the intervals.
    floor : float
        The no-leak upper bound: the upper bound of the risk a release that leaked nothing (success
        on training equal to the success on control) would show with the same numbers of attacks.
        At or above :data:`RISK_TARGET`, a release that leaked nothing could not pass this attack
        with these numbers of people.
        NaN when not measured.
    """

    attack: str
    target: str
    main: SuccessRate
    control: SuccessRate
    baseline: SuccessRate
    risk: Risk
    view: str = ""
    evidence: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    confidence: float = CONFIDENCE
    details: dict = field(default_factory=dict)
    floor: float = float("nan")

    @property
    def passed(self) -> bool | None:
        """Whether the risk's upper bound is below :data:`RISK_TARGET` (None when not measured)."""
        if math.isnan(self.risk.high):
            return None
        return self.risk.high < RISK_TARGET

    @property
    def state(self) -> str | None:
        """``"passed"``, ``"inconclusive"`` or ``"failed"`` (None when not measured).

        - passed: the risk's upper bound is below :data:`RISK_TARGET`;
        - inconclusive: it is not, but the point estimate is, and even a release that leaked
          nothing could not have shown an upper bound below the target with these numbers of
          attacks (:attr:`floor` at or above it): too few people to prove anything;
        - failed: otherwise, a leak measured (or one that could have been ruled out and was not).
        """
        if self.passed is None:
            return None
        if self.passed:
            return PASSED
        if self.risk.value < RISK_TARGET and self.floor >= RISK_TARGET:
            return INCONCLUSIVE
        return FAILED

    def to_dict(self) -> dict:
        """Plain, JSON-ready data."""
        return {
            "attack": self.attack,
            "target": self.target,
            "view": self.view,
            "risk": _nan_free(self.risk._asdict()),
            "main": _rate_dict(self.main),
            "control": _rate_dict(self.control),
            "baseline": _rate_dict(self.baseline),
            "confidence": self.confidence,
            "passed": self.passed,
            "state": self.state,
            "floor": None if math.isnan(self.floor) else self.floor,
            "evidence": list(self.evidence),
            "notes": list(self.notes),
            "details": self.details,
        }


NO_ATTACK = "no attack could be made"
NO_BETTER_THAN_RANDOM = "the attack does no better than random guessing on the training people: read its risk with care"
ALWAYS_ON_CONTROL = "the attack always succeeds on control people: the risk cannot be measured"


def computed_notes() -> tuple[str, ...]:
    """The notes :func:`attack_result` adds from the rates themselves (recomputed when results are pooled)."""
    return NO_ATTACK, NO_BETTER_THAN_RANDOM, ALWAYS_ON_CONTROL


def attack_result(attack: str, target: str, main: SuccessRate, control: SuccessRate, baseline: SuccessRate, *,
                  evidence=(), notes=(), confidence: float = CONFIDENCE, details=None) -> AttackResult:
    """Assemble an :class:`AttackResult`, with the notes that limit its reading."""
    notes = list(notes)
    if main.n_attacks == 0:
        notes.append(NO_ATTACK)
    elif not math.isnan(baseline.value) and main.value <= baseline.value:
        notes.append(NO_BETTER_THAN_RANDOM)
    if control.n_attacks and control.n_success >= control.n_attacks:
        notes.append(ALWAYS_ON_CONTROL)
    details = dict(details or {})
    risk = residual_risk(main, control, confidence=confidence)
    # singling out records the design effect its two rates were computed with
    floor = no_leak_risk(main, control, design_effect=details.get("design_effect", 1.0), confidence=confidence).high
    return AttackResult(attack, target, main, control, baseline, risk, evidence=tuple(evidence),
                        notes=tuple(notes), confidence=confidence, details=details, floor=floor)


def no_leak_risk(main: SuccessRate, control: SuccessRate, *, design_effect: float = 1.0,
                 confidence: float = CONFIDENCE) -> Risk:
    """The risk a release that leaked nothing would show: success on training equal to the control's.

    Same numbers of attacks as ``main`` and ``control``, same design effect. The upper bound of
    this risk (:attr:`AttackResult.floor`) is what a harmless release would show with these numbers
    of people; at or above the target, a bound above it proves nothing either way. (A release that
    does worse on its own people than on strangers has a narrower interval and may still pass.)

    Examples
    --------
    100 attacks per group, 70 % success on control people: even without a leak, the upper bound
    is 0.41; with 10,000 attacks per group it falls below 5 %.

    >>> from relanon.metrics.attacks.confidence import success_rate
    >>> round(no_leak_risk(success_rate(95, 100), success_rate(70, 100)).high, 3)
    0.407
    >>> round(no_leak_risk(success_rate(7000, 10000), success_rate(7000, 10000)).high, 3)
    0.042
    """
    if not main.n_attacks or math.isnan(control.share):
        nan = float("nan")
        return Risk(nan, nan, nan, nan)
    share = min(control.share, 1.0)
    same = success_rate(share * main.n_attacks, main.n_attacks, confidence, design_effect=design_effect)
    return residual_risk(same, control, confidence=confidence)


def _rate_dict(rate: SuccessRate) -> dict:
    return _nan_free({**rate._asdict(), "share": rate.share})


def _nan_free(values: dict) -> dict:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}
