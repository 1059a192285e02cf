"""Rounds of an assessment pooled: the same attacks on releases made from independent splits.

One split of the people into training and control people gives each attack as many trials as
there are people (linkability, inference) or predicates (singling out): with 100 control doctors,
an interval cannot be narrower than about 20 points, and a secret that strangers guess right 78 %
of the time keeps a no-leak bound of 7 % with 5,000 control patients. A *round* splits the people
again, at random and independently, anonymizes that training database with a seed of its own and
attacks its release. The rounds' trials are pooled: successes and attacks are summed per group, and
the risk and its interval are computed from the sums as for one round of that many trials.

This is sound because the rounds' splits are independent. A person's own ease of attack (an outlier
is singled out by any release) counts on the training side in some rounds and on the control side in
others: across independent splits, the difference it makes to ``success on training - success on
control`` has mean zero and is uncorrelated from one round to the next, as are the releases' and
the attacks' random draws. The pooled estimate's variance is then the rounds' variance divided by
their number, which the interval of the summed trials gives. Singling out keeps its correction for
predicates that isolate the same person (Kish's design effect, pooled as the rounds' sums of
``m**2`` over their sums of ``m``).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence

from relanon.common.errors import ParameterError
from relanon.metrics.attacks.confidence import expected_rate, success_rate
from relanon.metrics.attacks.results import RISK_TARGET, SINGLING_OUT, AttackResult, attack_result, computed_notes
from relanon.metrics.attacks.singling_out import few_predicates

# Predicates shown per pooled singling-out attack (those of the first rounds first).
SHOWN_EVIDENCE = 20
# Beyond this many rounds, the verdict asks for more people rather than more rounds.
PRACTICAL_ROUNDS = 20


def rounds_needed(floor: float, rounds: int = 1, target: float = RISK_TARGET) -> int:
    """About how many rounds would bring a no-leak bound of ``floor``, measured over ``rounds``, below
    ``target``: the bound shrinks as one over the square root of the trials.

    Examples
    --------
    >>> rounds_needed(0.074), rounds_needed(0.19), rounds_needed(0.03)
    (3, 15, 1)
    """
    if math.isnan(floor) or floor < target:
        return rounds
    return max(rounds + 1, math.ceil(rounds * (floor / target) ** 2))


def rounds_to_settle(risk: float, high: float, rounds: int = 1, target: float = RISK_TARGET) -> int:
    """About how many rounds would tell a failed risk whose interval reaches 0, measured over ``rounds``, from
    nothing or from a leak, if the risk is what it measures now: the rounds that bring its upper bound below
    ``target`` (no leak shown) or its lower bound above 0 (a leak shown), whichever comes first.

    The interval's half-width is taken as ``high - risk`` (the lower bound is cut at 0) and shrinks as one
    over the square root of the trials.

    Examples
    --------
    >>> rounds_to_settle(0.01, 0.07), rounds_to_settle(0.07, 0.16), rounds_to_settle(0.14, 0.38)
    (3, 2, 3)
    """
    width = high - risk
    if math.isnan(width) or width <= 0:
        return rounds
    needed = []
    if risk > 0:
        needed.append(rounds * (width / risk) ** 2)  # the lower bound above 0
    if risk < target:
        needed.append(rounds * (width / (target - risk)) ** 2)  # the upper bound below the target
    return max(rounds + 1, math.ceil(min(needed))) if needed else rounds


def rounds_wanted(attacks: Sequence[AttackResult], rounds: int) -> int:
    """The rounds, counting the ``rounds`` measured, that would settle every attack of ``attacks`` (pooled over
    ``rounds``): an inconclusive one's bound below the target (:func:`rounds_needed` of its no-leak bound), a
    failed one whose interval reaches 0 told from nothing or from a leak (:func:`rounds_to_settle`); ``rounds``
    when every attack is settled (passed, or a leak measured).

    Examples
    --------
    >>> from relanon.metrics.attacks.confidence import expected_rate, success_rate
    >>> from relanon.metrics.attacks.results import LINKABILITY, attack_result
    >>> settled = attack_result(LINKABILITY, "a | b", success_rate(0, 5000), success_rate(0, 5000), success_rate(0, 5000))
    >>> rounds_wanted([settled], 1)
    1
    """
    wanted = rounds
    for attack in attacks:
        if attack.state == "inconclusive":
            wanted = max(wanted, rounds_needed(attack.floor, rounds))
        elif attack.state == "failed" and attack.risk.low <= 0:
            wanted = max(wanted, rounds_to_settle(attack.risk.value, attack.risk.high, rounds))
    return wanted


def pooled(results: Sequence[AttackResult]) -> AttackResult:
    """One attack's results over several rounds, as one result of all their trials.

    Every result must be the same attack (kind, target and view) at the same confidence level. One
    result is returned unchanged but for ``details["rounds"]``.

    Examples
    --------
    >>> from relanon.metrics.attacks.confidence import expected_rate, success_rate
    >>> from relanon.metrics.attacks.results import LINKABILITY, attack_result
    >>> def linked(hits, control_hits):
    ...     rates = success_rate(hits, 100), success_rate(control_hits, 100), success_rate(0, 100)
    ...     return attack_result(LINKABILITY, "a | b", *rates)
    >>> both = pooled([linked(2, 0), linked(4, 1)])
    >>> both.main.n_success, both.main.n_attacks, both.control.n_success, both.details["rounds"]
    (6.0, 200, 1.0, 2)
    """
    if not results:
        raise ParameterError("pooled needs the results of at least one round")
    first = results[0]
    for other in results[1:]:
        if (other.attack, other.target, other.view, other.confidence) != (first.attack, first.target, first.view,
                                                                          first.confidence):
            raise ParameterError(f"cannot pool different attacks: {first.attack} {first.target!r} on {first.view} "
                                 f"and {other.attack} {other.target!r} on {other.view}")
    confidence = first.confidence
    baseline = success_rate(sum(r.baseline.n_success for r in results), sum(r.baseline.n_attacks for r in results),
                            confidence)
    # notes made from a round's counts are made again from the pooled counts
    few = {few_predicates(int(r.details["predicates"]), int(r.details["predicates_asked"]))
           for r in results if first.attack == SINGLING_OUT}
    notes = list(dict.fromkeys(n for r in results for n in r.notes if n not in few and n not in computed_notes()))
    evidence = list(dict.fromkeys(e for r in results for e in r.evidence))[:SHOWN_EVIDENCE]
    if first.attack == SINGLING_OUT:
        main, control, details = _singling_out(results, confidence)
        if any(n in few for r in results for n in r.notes):
            notes.append(few_predicates(details["predicates"], details["predicates_asked"]))
    else:
        main = success_rate(sum(r.main.n_success for r in results), sum(r.main.n_attacks for r in results), confidence)
        control = success_rate(sum(r.control.n_success for r in results), sum(r.control.n_attacks for r in results),
                               confidence)
        details = dict(first.details)
    result = attack_result(first.attack, first.target, main, control, baseline, evidence=evidence, notes=notes,
                           confidence=confidence, details={**details, "rounds": len(results)})
    return dataclasses.replace(result, view=first.view)


def _singling_out(results: Sequence[AttackResult], confidence: float):
    """Pooled rates of singling-out results (their details hold the raw counts)."""
    def total(key: str) -> int:
        return sum(int(r.details[key]) for r in results)

    n = total("predicates")
    training, control = total("singling_out_training_person"), total("singling_out_control_person")
    expected = sum(float(r.details["expected_without_memorization"]) for r in results)
    sizes = total("training_size"), total("control_size")
    # Kish: sum(m**2) / sum(m) per round, sum(m) being the round's predicates isolating one person
    weights = [int(r.details["singling_out_training_person"]) + int(r.details["singling_out_control_person"])
               for r in results]
    deff = (sum(w * float(r.details["design_effect"]) for w, r in zip(weights, results, strict=True)) / sum(weights)
            if sum(weights) else 1.0)
    main = success_rate(training, n, confidence, design_effect=deff)
    control_rate = expected_rate(expected, n, confidence, design_effect=deff)
    by_columns = Counter()
    for r in results:
        by_columns.update(r.details.get("succeeding_by_columns", {}))
    details = {
        "predicates": n,
        "predicates_asked": total("predicates_asked"),
        "singling_out_training_person": training,
        "expected_without_memorization": expected,
        "singling_out_control_person": control,
        "design_effect": deff,
        "unique_in_training": total("unique_in_training"),
        "unique_in_control": total("unique_in_control"),
        "unique_in_population": total("unique_in_population"),
        "training_size": sizes[0],
        "control_size": sizes[1],
        "succeeding_by_columns": dict(by_columns.most_common()),
    }
    return main, control_rate, details
