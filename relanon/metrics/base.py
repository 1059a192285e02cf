"""Metrics as small declarative objects: a name, a value, a target and which side of it is good."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pandas as pd

HIGHER = "higher"
LOWER = "lower"

# Default targets (DESIGN section 4; the inference targets are those of the avatar method's authors).
# The distances to the closest originals have no fixed target: a fixed one (0.2, 0.3) failed on every
# real table tried, since avatars live where originals are dense. `relanon assess` gives them one
# relative to people held out of the data (relanon.metrics.attacks.distances).
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

    Examples
    --------
    >>> Metric("hidden_rate", 95.0, 90.0, "higher", "Share of hidden originals.").passed
    True
    """

    name: str
    value: float
    target: float | None
    direction: str
    description: str
    breakdown: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if self.direction not in (HIGHER, LOWER):
            raise ValueError(f"direction must be {HIGHER!r} or {LOWER!r}, got {self.direction!r}")

    @property
    def passed(self) -> bool | None:
        """Whether the value is strictly on the good side of the target (None without a target)."""
        if self.target is None:
            return None
        if math.isnan(self.value):
            return False
        return self.value > self.target if self.direction == HIGHER else self.value < self.target

    def to_dict(self) -> dict:
        """Plain data for reports (JSON-ready)."""
        return {
            "name": self.name,
            "value": self.value,
            "target": self.target,
            "direction": self.direction,
            "passed": self.passed,
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
    return pd.DataFrame(rows, columns=["name", "value", "target", "direction", "passed"]).set_index("name")
