"""Values the run cannot compute with, found in every table before any work (and by ``relanon validate``):
numbers that are infinite, dates outside the range every step (and the report) computes with."""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.common.errors import DataError, Problem
from relanon.engine.columns import NUMERIC_KINDS, numeric_values
from relanon.schema.model import Schema

__all__ = ["DATE_RANGE", "date_problems", "value_problems"]


def value_problems(schema: Schema, original: dict) -> list[Problem]:
    """Values the avatar method cannot code (infinite numbers), in every table it anonymizes: the check
    :func:`relanon.engine.columns.numeric_values` makes when the table is coded, made for all tables at once."""
    problems = []
    for table in schema:
        if table.anonymize.method != "avatar":
            continue
        frame = original[table.name]
        for column in table.released_columns:
            if column.type in NUMERIC_KINDS and column.name in frame.columns:
                try:
                    numeric_values(frame[column.name], column.type, table=table.name)
                except DataError as error:
                    problems += error.problems
    return problems


# the dates every step can compute with (pandas' nanosecond range; the report draws them too)
DATE_RANGE = (pd.Timestamp.min.ceil("D"), pd.Timestamp.max.floor("D"))


def date_problems(schema: Schema, original: dict) -> list[Problem]:
    """Dates outside :data:`DATE_RANGE` (1677-09-22 to 2262-04-11) in the released datetime columns of
    every table, each problem naming its table, column and rows (by primary key): read fine, they are
    refused before any work, since their differences and the report's axes overflow."""
    low, high = (np.datetime64(bound.to_datetime64(), "us") for bound in DATE_RANGE)
    problems = []
    for table in schema:
        frame = original[table.name]
        for column in table.released_columns:
            if column.type != "datetime" or column.name not in frame.columns:
                continue
            values = frame[column.name]
            if not pd.api.types.is_datetime64_any_dtype(values.dtype):
                continue
            naive = values.dt.tz_convert("UTC").dt.tz_localize(None) if values.dt.tz is not None else values
            ticks = naive.to_numpy(dtype="datetime64[us]")
            outside = ~np.isnat(ticks) & ((ticks < low) | (ticks > high))
            if not outside.any():
                continue
            keys = frame[table.primary_key].to_numpy()[outside] if table.primary_key in frame.columns else None
            rows = "" if keys is None else \
                f" with {table.primary_key} {', '.join(map(str, keys[:5]))}{', ...' if len(keys) > 5 else ''}"
            problems.append(Problem(
                f"{int(outside.sum())} date(s) outside {DATE_RANGE[0]:%Y-%m-%d} .. {DATE_RANGE[1]:%Y-%m-%d}, the "
                f"dates relanon computes with, in the rows{rows}; correct them, or replace a placeholder such as "
                "9999-12-31 by a missing value", table.name, column.name,
                tuple(str(v)[:10] for v in pd.unique(ticks[outside])[:5])))
    return problems
