"""Privacy attacks against a release, the anonymeter way: singling out, linkability, inference.

Each attack is run twice with the same release: against the people it was made from (training)
and against people of the same population it never saw (control). The risk is the excess success
on training, ``(main - control) / (1 - control)``, with a 95 % confidence interval (Wilson).
:func:`relanon.assess` holds people out of a database, anonymizes the rest and runs every attack
on each individual table and its views across links.
"""

from relanon.metrics.attacks.assessment import Assessment, assess
from relanon.metrics.attacks.confidence import Risk, SuccessRate, residual_risk, success_rate
from relanon.metrics.attacks.inference import inference
from relanon.metrics.attacks.linkability import linkability
from relanon.metrics.attacks.results import ATTACKS, INFERENCE, LINKABILITY, RISK_TARGET, SINGLING_OUT, AttackResult
from relanon.metrics.attacks.singling_out import singling_out

__all__ = [
    "ATTACKS",
    "Assessment",
    "INFERENCE",
    "LINKABILITY",
    "RISK_TARGET",
    "SINGLING_OUT",
    "AttackResult",
    "Risk",
    "SuccessRate",
    "assess",
    "inference",
    "linkability",
    "residual_risk",
    "singling_out",
    "success_rate",
]
