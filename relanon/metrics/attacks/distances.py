"""Distance metrics with a held-out reference: how close avatars sit to their people, against strangers.

A fixed distance target (a median distance to the closest original above 0.2) says nothing about a
given table: on real tables avatars sit closer than that to *some* original by construction, since
they live where the originals are dense. With a control group, the reference comes from the data:

- ``closer_to_training``: the share (%) of avatars closer to a training person than to a control
  person, the training side subsampled to the control's size so that both sides are equally
  dense. About 50 % means the avatars know the training people no better than strangers of the
  same population; 100 % is a copy. Target: below 55 %.
- ``distance_to_closest`` (DCR): the median distance from an avatar to the closest training person,
  against the same median for the control people (each a stranger to the training people).
  Target: at least 90 % of the control's; none when the control's is 0 (half the strangers have an
  identical twin in the data: many identical rows), where a distance of 0 says nothing.
- ``closest_distances_ratio`` (NNDR): the median ratio of the distances to the two closest training
  people, against the control people's. Target: at least 90 % of the control's.

Distances are measured in the factor space of the training people (as the other privacy metrics).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.engine.factor_space import FactorSpace
from relanon.engine.neighbours import cross_neighbours
from relanon.metrics.base import HIGHER, LOWER, Metric

CLOSER_TARGET = 55.0
RELATIVE_TARGET = 0.9
DEFAULT_SAMPLE_SIZE = 10_000


def reference_distances(training: pd.DataFrame, control: pd.DataFrame, release: pd.DataFrame, columns, *,
                        ncp=None, sample_size: int = DEFAULT_SAMPLE_SIZE, random_state=None,
                        name: str = "table") -> list[Metric]:
    """The closer-to-training share, and DCR and NNDR against the control people's.

    Parameters
    ----------
    training, control, release : DataFrame
        The training people, the control people and the released rows, on the same columns.
    columns : mapping of str to str
        Column types.
    ncp : int, optional
        Axes of the factor space (the table's ``ncp``).
    sample_size : int
        Released rows measured at most (a seeded sample beyond).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"x": rng.normal(size=600), "y": rng.normal(size=600)})
    >>> kinds = {"x": "continuous", "y": "continuous"}
    >>> copy = reference_distances(people[:400], people[400:], people[:400], kinds, random_state=0)
    >>> [(m.name, m.passed) for m in copy]
    [('closer_to_training', False), ('distance_to_closest', False), ('closest_distances_ratio', False)]
    """
    rng = np.random.default_rng(random_state)
    space = FactorSpace(dict(columns), n_components=ncp, name=name).fit(training)
    t, c = space.transform(training), space.transform(control)
    released = release if len(release) <= sample_size else release.iloc[np.sort(rng.choice(len(release), sample_size, replace=False))]
    a = space.transform(released)
    if len(t) < 2 or len(c) < 1 or len(a) < 1:
        return []
    avatar_near = cross_neighbours(t, a, 2).distances
    control_near = cross_neighbours(t, c, 2).distances
    sub = np.sort(rng.choice(len(t), size=min(len(c), len(t)), replace=False))
    to_training = cross_neighbours(t[sub], a, 1).distances[:, 0]
    to_control = cross_neighbours(c, a, 1).distances[:, 0]
    closer = float(100.0 * (np.mean(to_training < to_control) + 0.5 * np.mean(to_training == to_control)))
    dcr, control_dcr = float(np.median(avatar_near[:, 0])), float(np.median(control_near[:, 0]))
    nndr, control_nndr = _median_ratio(avatar_near), _median_ratio(control_near)
    sizes = {"avatars": int(len(a)), "training": int(len(t)), "control": int(len(c))}
    return [
        Metric("closer_to_training", closer, CLOSER_TARGET, LOWER,
               "Share of avatars closer to a person of the data than to a person of the same population "
               "left out of it (equal numbers of each): about 50 % means no memorization, 100 % a copy.",
               {**sizes, "training_subsample": int(len(sub))}),
        # strangers at distance 0 (half the control people have an identical twin among the training
        # people): avatars at 0 tell nothing either, the measure has no target then
        Metric("distance_to_closest", dcr, RELATIVE_TARGET * control_dcr if control_dcr > 0 else None, HIGHER,
               "Median distance from an avatar to the closest person of the data; its target is 90 % of the same "
               "median for people left out of the data (strangers to it), none when that median is 0 (rows "
               "repeated in the data).",
               {**sizes, "control_value": control_dcr, "ratio_to_control": _ratio(dcr, control_dcr)}),
        Metric("closest_distances_ratio", nndr, RELATIVE_TARGET * control_nndr, HIGHER,
               "Median ratio of an avatar's distances to its closest and second closest people of the data; its "
               "target is 90 % of the same median for people left out of the data.",
               {**sizes, "control_value": control_nndr, "ratio_to_control": _ratio(nndr, control_nndr)}),
    ]


def _median_ratio(distances: np.ndarray) -> float:
    d1, d2 = distances[:, 0], distances[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(d2 > 0, d1 / d2, 1.0)
    return float(np.median(ratio))


def _ratio(value: float, reference: float) -> float:
    return value / reference if reference > 0 else float("nan")
