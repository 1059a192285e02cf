"""Linking: each released child row gets a released parent, by the link's method.

The modules follow the steps of a link:

- :mod:`~relanon.multitable.linking.counts`: how many children each released parent receives
  (``linear_sum``), within the original's bounds and summing to the number of children;
- :mod:`~relanon.multitable.linking.candidates`: the factor space of the parent's columns in which
  children and parents are placed;
- :mod:`~relanon.multitable.linking.assignment`: the three methods (``linear_sum``, ``minimum_distance``,
  ``original_order``); :mod:`~relanon.multitable.linking.nearest` gives ``minimum_distance`` its rooms;
- :mod:`~relanon.multitable.linking.repair`: the exact re-solves of groups of children that never raise
  the total distance (also the Dask engine's border repair); :mod:`~relanon.multitable.linking.blocks`:
  the spatial blocks of a link spread over partitions;
- :mod:`~relanon.multitable.linking.anchoring`: linked children re-drawn to agree with their parents;
- :mod:`~relanon.multitable.linking.foreign_keys`: one link of a table, from the releases to the new foreign keys.

:mod:`~relanon.multitable.linking.inputs` checks the arguments of the public functions.
"""

from relanon.multitable.linking.assignment import (
    EXACT_LIMIT,
    SensitiveMatchWarning,
    match_linear_sum,
    match_minimum_distance,
    match_original_order,
    total_distance,
    uses_flow,
)
from relanon.multitable.linking.counts import (
    allocate_counts,
    count_bounds,
    count_rank,
    draw_towards_total,
    draw_towards_totals,
)
from relanon.multitable.linking.foreign_keys import relink
from relanon.multitable.linking.repair import blocked_settings, border_band, repair_assignment, repair_borders

__all__ = [
    "EXACT_LIMIT",
    "SensitiveMatchWarning",
    "allocate_counts",
    "blocked_settings",
    "border_band",
    "count_bounds",
    "count_rank",
    "draw_towards_total",
    "draw_towards_totals",
    "match_linear_sum",
    "match_minimum_distance",
    "match_original_order",
    "relink",
    "repair_assignment",
    "repair_borders",
    "total_distance",
    "uses_flow",
]
