"""The words of the schema file: column types, methods, link methods, and their limits.

At the bottom of the schema layer: the model, the parser and the checks of meaning share them.
"""

from __future__ import annotations

from relanon.common.options import LinkMethod, Method

COLUMN_TYPES = ("continuous", "integer", "categorical", "boolean", "datetime", "drop")
NUMERIC_TYPES = ("continuous", "integer", "datetime")
LINK_METHODS = tuple(m.value for m in LinkMethod)  # ("linear_sum", "minimum_distance", "original_order")
METHODS = tuple(m.value for m in Method)  # ("avatar", "keep", "anatomize", "bucketize")
FORMAT_VERSION = 1
MAX_WEIGHT = 1_000_000.0
