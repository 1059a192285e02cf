"""Metrics as small declarative objects: a name, a value, a target and which side of it is good."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from relanon.common.options import Direction, check_option

HIGHER, LOWER = Direction.HIGHER.value, Direction.LOWER.value

# Default targets (docs/guide/metrics.md; the inference targets are those of the avatar method's authors).
# The distances to the closest originals have no fixed target: a fixed one (0.2, 0.3) failed on every
# real table tried, since avatars live where originals are dense. `relanon assess` gives them one
# relative to people held out of the data (relanon.metrics.attacks.distances).
REFERENTIAL_INTEGRITY_TARGET = 100.0
"""Share (%) of anonymized foreign keys that must point to an existing parent: all of them."""

TARGETS = {
    "hidden_rate": 90.0,
    "local_cloaking": 5.0,
    "distance_to_closest": None,
    "closest_distances_ratio": None,
    "row_direct_match_protection": 90.0,
    "inference_categorical": 10.0,
    "inference_continuous": 10.0,
    "hellinger_mean": 0.1,
    "correlation_difference_ratio": 10.0,
    "impossible_combinations": 1.0,
    "impossible_pairs": 1.0,
}


@dataclass(frozen=True)
class Metric:
    """One measured property of a release.

    Parameters
    ----------
    name : str
        Stable identifier (``hidden_rate``...).
    value : float
        The measure; NaN when it cannot be computed.
    target : float or None
        The threshold a safe/useful release passes; None for a figure shown for information.
    direction : {"higher", "lower"}
        Which side of the target is better.
    description : str
        One sentence a release reviewer understands.
    breakdown : Mapping
        Details (per column, per table...), plain data.
    floor : float or None
        The noise floor: the value two random halves of the original give each other
        (:mod:`relanon.metrics.noise_floor`); None when not measured.
    margin : float or None
        How far beyond the floor a value still passes.

    Examples
    --------
    >>> Metric("hidden_rate", 95.0, 90.0, "higher", "Share of hidden originals.").passed
    True
    >>> Metric("hellinger_mean", 0.25, 0.1, "lower", "Distance.", floor=0.24, margin=0.02).passed
    True
    """

    name: str
    value: float
    target: float | None
    direction: str
    description: str
    breakdown: Mapping = field(default_factory=dict)
    floor: float | None = None
    margin: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "direction", check_option(self.direction, Direction, "direction"))  # a plain str

    @property
    def passed(self) -> bool | None:
        """Whether the value is strictly on the good side of the target, or within the noise floor
        plus the margin (None without a target). A lower-is-better target of 0 (none) is met by 0."""
        if self.target is None:
            return None
        if math.isnan(self.value):
            return False
        if self.value > self.target if self.direction == HIGHER else self.value < self.target:
            return True
        if self.direction == LOWER and self.target == 0 and self.value == 0:
            return True
        return self.within_floor

    @property
    def within_floor(self) -> bool:
        """Whether the value is explained by sampling noise: within ``floor`` plus ``margin``."""
        if self.floor is None or self.margin is None or math.isnan(self.floor) or math.isnan(self.margin):
            return False
        if self.direction == HIGHER:
            return self.value >= self.floor - self.margin
        return self.value <= self.floor + self.margin

    def to_dict(self) -> dict:
        """Plain data for reports (JSON-ready)."""
        return {
            "name": self.name,
            "value": self.value,
            "target": self.target,
            "direction": self.direction,
            "passed": self.passed,
            "floor": self.floor,
            "margin": self.margin,
            "description": self.description,
            "breakdown": dict(self.breakdown),
        }


def metrics_frame(metrics: Iterable[Metric]) -> pd.DataFrame:
    """A table of metrics: one row each, with name, value, target, direction and passed.

    Examples
    --------
    >>> metrics_frame([Metric("dcr", 0.3, 0.2, "higher", "d")])[["value", "passed"]].to_dict("records")
    [{'value': 0.3, 'passed': True}]
    """
    rows = [{k: v for k, v in m.to_dict().items() if k not in ("breakdown", "description")} for m in metrics]
    columns = ["name", "value", "target", "direction", "passed", "floor", "margin"]
    return pd.DataFrame(rows, columns=columns).set_index("name")
