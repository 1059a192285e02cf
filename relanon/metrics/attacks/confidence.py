"""Success rates of an attack and the privacy risk they imply, with 95 % confidence intervals.

An attack is a series of Bernoulli trials (each target guessed right or not). Its success rate is
estimated with the Wilson score interval (Wilson 1927), robust when the rate is near 0 or 1 or the
sample small, as anonymeter does. The risk compares the attack on people the release was made from
(*training*, the main attack) with the same attack on people it never saw (*control*):

    risk = (main - control) / (1 - control)

0 means the release tells nothing more about its own people than about anyone else of the
population; 1 means every attack that could succeed through the release did. The error of the
risk is propagated from the two rates' errors, and the risk and its interval are bounded to [0, 1].
"""

from __future__ import annotations

import math
from typing import NamedTuple

from scipy.stats import norm

from relanon.common.errors import ParameterError

CONFIDENCE = 0.95


class SuccessRate(NamedTuple):
    """An attack's success rate: Wilson estimate and its confidence interval.

    Attributes
    ----------
    value : float
        The Wilson point estimate ``(s + z**2 / 2) / (n + z**2)``; NaN without attacks.
    error : float
        Half-width of the interval.
    low, high : float
        The interval, bounded to [0, 1].
    n_success : float
        Successful attacks (a fraction after a size correction).
    n_attacks : int
        Attacks made.
    """

    value: float
    error: float
    low: float
    high: float
    n_success: float
    n_attacks: int

    @property
    def share(self) -> float:
        """The plain share ``n_success / n_attacks`` (NaN without attacks)."""
        return self.n_success / self.n_attacks if self.n_attacks else float("nan")


class Risk(NamedTuple):
    """A privacy risk: ``(main - control) / (1 - control)``, bounded to [0, 1], with its interval.

    Attributes
    ----------
    value : float
        The bounded point estimate (NaN when it cannot be measured: no attack, or the control
        attack always succeeds).
    low, high : float
        The confidence interval, bounded to [0, 1].
    raw : float
        The unbounded estimate (negative when control people are easier to attack).
    """

    value: float
    low: float
    high: float
    raw: float


def probit(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (1.96 for 0.95).

    Examples
    --------
    >>> round(probit(0.95), 4)
    1.96
    """
    if not 0 < confidence < 1:
        raise ParameterError(f"the confidence level must be between 0 and 1 (exclusive), got {confidence!r}")
    return float(norm.ppf(0.5 * (1.0 + confidence)))


def success_rate(n_success: float, n_attacks: int, confidence: float = CONFIDENCE, *,
                 design_effect: float = 1.0) -> SuccessRate:
    """Wilson estimate of a success rate, with its confidence interval.

    Parameters
    ----------
    n_success : float
        Successful attacks, between 0 and ``n_attacks`` (a fraction for an expected count).
    n_attacks : int
        Attacks made.
    confidence : float
        Confidence level of the interval.
    design_effect : float
        How much correlated attacks widen the interval (Kish): it is computed for
        ``n_attacks / design_effect`` independent attacks. 1 for independent attacks.

    Examples
    --------
    >>> rate = success_rate(50, 100)
    >>> round(rate.value, 3), round(rate.low, 3), round(rate.high, 3)
    (0.5, 0.404, 0.596)
    >>> round(success_rate(50, 100, design_effect=4.0).error / rate.error, 2)
    1.9
    >>> success_rate(0, 0).value
    nan
    """
    if n_attacks < 0 or n_success < 0 or n_success > n_attacks:
        raise ParameterError(f"successes must be between 0 and the number of attacks, got {n_success} of {n_attacks}")
    if not design_effect >= 1:
        raise ParameterError(f"design_effect must be at least 1, got {design_effect!r}")
    if n_attacks == 0:
        nan = float("nan")
        return SuccessRate(nan, nan, nan, nan, 0.0, 0)
    z = probit(confidence)
    z2 = z * z
    n, s = n_attacks / design_effect, n_success / design_effect
    denominator = n + z2
    error = (z / denominator) * math.sqrt(s * (n - s) / n + 0.25 * z2)
    value = (s + 0.5 * z2) / denominator
    return SuccessRate(value, error, _bounded(value - error), _bounded(value + error), float(n_success),
                       int(n_attacks))


def expected_rate(n_expected: float, n_attacks: int, confidence: float = CONFIDENCE, *,
                  design_effect: float = 1.0) -> SuccessRate:
    """A success rate known exactly rather than counted: the expected successes of a model with no
    unknown part (singling out's chance of success under a random split). Same point estimate as
    :func:`success_rate` for as many successes, so that equal rates give a risk of 0, and no error.

    Examples
    --------
    >>> rate = expected_rate(40.5, 200)
    >>> rate.value == success_rate(40.5, 200).value, rate.error, rate.low == rate.high == rate.value
    (True, 0.0, True)
    """
    counted = success_rate(n_expected, n_attacks, confidence, design_effect=design_effect)
    return counted._replace(error=0.0, low=counted.value, high=counted.value) if n_attacks else counted


def residual_risk(main: SuccessRate, control: SuccessRate, *, confidence: float = CONFIDENCE) -> Risk:
    """The risk ``(main - control) / (1 - control)`` with its propagated error, bounded to [0, 1].

    It cannot be measured (NaN) when every control attack succeeds: nothing is left to gain.

    Examples
    --------
    >>> risk = residual_risk(success_rate(90, 100), success_rate(10, 100))
    >>> round(risk.value, 2), risk.low < risk.value < risk.high
    (0.87, True)
    >>> residual_risk(success_rate(10, 100), success_rate(12, 100)).value
    0.0
    """
    if math.isnan(main.value) or math.isnan(control.value) or control.n_success >= control.n_attacks:
        nan = float("nan")
        return Risk(nan, nan, nan, nan)
    margin = 1.0 - control.value
    raw = (main.value - control.value) / margin
    d_main = 1.0 / margin
    d_control = (main.value - 1.0) / margin**2
    error = math.hypot(main.error * d_main, control.error * d_control)
    return Risk(_bounded(raw), _bounded(raw - error), _bounded(raw + error), raw)


def _bounded(value: float) -> float:
    return min(max(value, 0.0), 1.0)
