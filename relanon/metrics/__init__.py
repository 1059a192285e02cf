"""Privacy and signal metrics of a release.

``privacy(original, avatars, columns, pairing=...)`` and ``signal(original, avatars, columns)``
measure a single table; the individual metric functions are exposed for the multi-table scenarios.
"""

from relanon.metrics.base import HIGHER, LOWER, TARGETS, Metric, metrics_frame
from relanon.metrics.evaluation import EvaluatedData, Evaluation
from relanon.metrics.failures import Failure, failures
from relanon.metrics.inference import inference
from relanon.metrics.privacy import (
    closer_avatar_counts,
    closest_distances_ratio,
    column_direct_match_protection,
    distance_to_closest,
    hidden_rate,
    local_cloaking,
    metric_space,
    privacy,
    row_direct_match_protection,
)
from relanon.metrics.signal import (
    correlation_difference_ratio,
    hellinger_distance,
    hellinger_distances,
    signal,
)

__all__ = [
    "HIGHER",
    "LOWER",
    "TARGETS",
    "EvaluatedData",
    "Evaluation",
    "Failure",
    "Metric",
    "closer_avatar_counts",
    "closest_distances_ratio",
    "column_direct_match_protection",
    "correlation_difference_ratio",
    "distance_to_closest",
    "failures",
    "hellinger_distance",
    "hellinger_distances",
    "hidden_rate",
    "inference",
    "local_cloaking",
    "metric_space",
    "metrics_frame",
    "privacy",
    "row_direct_match_protection",
    "signal",
]
