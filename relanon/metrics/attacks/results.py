"""What an attack returns: plain data a user can read and type against."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from relanon.metrics.attacks.confidence import CONFIDENCE, Risk, SuccessRate, residual_risk

SINGLING_OUT = "singling_out"
LINKABILITY = "linkability"
INFERENCE = "inference"
ATTACKS = (SINGLING_OUT, LINKABILITY, INFERENCE)

RISK_TARGET = 0.05
"""A release passes an attack when the upper bound of the risk's 95 % interval stays below 5 %."""


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

    @property
    def passed(self) -> bool | None:
        """Whether the risk's upper bound is below :data:`RISK_TARGET` (None when not measured)."""
        if math.isnan(self.risk.high):
            return None
        return self.risk.high < RISK_TARGET

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
            "evidence": list(self.evidence),
            "notes": list(self.notes),
            "details": self.details,
        }


def attack_result(attack: str, target: str, main: SuccessRate, control: SuccessRate, baseline: SuccessRate, *,
                  evidence=(), notes=(), confidence: float = CONFIDENCE, details=None,
                  covariance: float = 0.0) -> AttackResult:
    """Assemble an :class:`AttackResult`, with the notes that limit its reading."""
    notes = list(notes)
    if main.n_attacks == 0:
        notes.append("no attack could be made")
    elif not math.isnan(baseline.value) and main.value <= baseline.value:
        notes.append("the attack does no better than random guessing on the training people: read its risk with care")
    if control.n_attacks and control.n_success >= control.n_attacks:
        notes.append("the attack always succeeds on control people: the risk cannot be measured")
    risk = residual_risk(main, control, covariance=covariance, confidence=confidence)
    return AttackResult(attack, target, main, control, baseline, risk, evidence=tuple(evidence),
                        notes=tuple(notes), confidence=confidence, details=dict(details or {}))


def _rate_dict(rate: SuccessRate) -> dict:
    return _nan_free({**rate._asdict(), "share": rate.share})


def _nan_free(values: dict) -> dict:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}
