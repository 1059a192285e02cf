"""Properties of a run on random small databases: text keys, ties, missing values, any shape of schema.

For every generated schema and database the run never fails, every foreign key of the release
points to a released parent, row counts and dtypes are kept, the same seed gives the same bytes,
and the release reads back from CSV exactly as it was written.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relanon.multitable.pipeline import anonymize
from relanon.multitable.release import release_schema, write_release
from relanon.schema.model import load_schema
from relanon.schema.validation import check_database
from relanon.stores.io import read_database

TYPES = ("integer", "continuous", "categorical", "boolean", "datetime")
# Text that breaks naive code: separators, quotes, markup, non-ASCII, missing markers as categories.
WORDS = ("a", "b", "a,b", 'say "hi"', "$x^$", "été", "NA", " pad ", "日本")


@st.composite
def databases(draw):
    """A schema of 1 to 3 tables (each table's parent among the earlier ones) and matching data."""
    n_tables = draw(st.integers(1, 3))
    tables, frames = {}, {}
    for t in range(n_tables):
        name = f"t{t}"
        rows = draw(st.integers(3, 14))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        text_keys = draw(st.booleans())
        key = f"{name}_id"
        if text_keys:  # unpatterned text: released as random UUIDs
            keys = [f"{draw(st.sampled_from(WORDS))}-{i}-{rng.integers(1000)}" for i in range(rows)]
        else:
            keys = list(rng.permutation(1000)[:rows] + 1)
        frame = {key: pd.Series(keys, dtype="str" if text_keys else "int64")}
        columns = {}
        for c in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(TYPES))
            pool = draw(st.integers(1, 3))  # few distinct values: ties everywhere
            frame[f"c{c}"] = _values(kind, rows, pool, rng, missing=draw(st.booleans()))
            columns[f"c{c}"] = kind
        foreign_keys = []
        if t > 0 and draw(st.booleans()):
            parent = f"t{draw(st.integers(0, t - 1))}"
            parent_keys = frames[parent][f"{parent}_id"]
            chosen = parent_keys.iloc[rng.integers(0, len(parent_keys), rows)].reset_index(drop=True)
            if draw(st.booleans()):
                chosen = chosen.astype(object).where(rng.random(rows) > 0.3)
                chosen = chosen.astype("Int64") if parent_keys.dtype == "int64" else chosen.astype("str")
            frame[f"{parent}_ref"] = chosen
            link = draw(st.sampled_from(["linear_sum", "minimum_distance"]))
            foreign_keys.append({"column": f"{parent}_ref", "references": parent, "link": link})
        tables[name] = {"primary_key": key, "columns": columns, "foreign_keys": foreign_keys,
                        "individual": True, "anonymize": {"k": draw(st.integers(2, 4))}}
        frames[name] = pd.DataFrame(frame)
    return load_schema({"relanon": 1, "tables": tables}), frames


def _values(kind, rows, pool, rng, missing):
    pick = rng.integers(0, pool, rows)
    if kind == "integer":
        values = pd.array(np.array([3, -7, 10**9])[pick], dtype="Int64")
    elif kind == "continuous":
        values = pd.array(np.array([0.1, -2.5, 1e6])[pick], dtype="Float64")
    elif kind == "categorical":
        values = pd.array(np.array(WORDS, dtype=object)[rng.permutation(len(WORDS))[:pool]][pick], dtype="str")
    elif kind == "boolean":
        values = pd.array(np.array([True, False, True])[pick], dtype="boolean")
    else:
        values = pd.array(pd.to_datetime(np.array(["2020-01-01", "2021-06-15", "1999-12-31"])[pick]))
    series = pd.Series(values)
    if missing and rows > 3:
        series[0] = None
    return series


def _csv_bytes(tables) -> dict:
    return {name: frame.to_csv(index=False).encode() for name, frame in tables.items()}


def _made_missing(released: pd.Series, original: pd.Series) -> bool:
    """Whether ``released`` is ``original``'s kind of column made nullable: values that fewer than ``min_count``
    records hold (a tiny table's every value) are released missing, and whole numbers or booleans without a
    missing value take their nullable dtype."""
    same_kind = ((pd.api.types.is_bool_dtype(released) and pd.api.types.is_bool_dtype(original))
                 or (pd.api.types.is_integer_dtype(released) and pd.api.types.is_integer_dtype(original)))
    return same_kind and released.isna().any() and not original.isna().any()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(databases(), st.integers(0, 2**31 - 1))
def test_a_run_on_any_small_database_keeps_its_shape_links_and_bytes(database, seed):
    schema, frames = database
    checked = check_database(schema, frames)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # k lowered on tables smaller than k + 1
        first = anonymize(schema, frames, random_state=seed, progress=False)
        second = anonymize(schema, frames, random_state=seed, progress=False)
    for table in schema:
        released, original = first.tables[table.name], checked[table.name]
        assert len(released) == len(original)
        for column in table.output_columns:
            assert released[column].dtype == original[column].dtype or (
                column in table.foreign_key_columns and released[column].dtype.kind == original[column].dtype.kind
            ) or _made_missing(released[column], original[column]), (
                table.name, column, released[column].dtype, original[column].dtype)
        for fk in table.foreign_keys:
            parent_keys = set(first.tables[fk.references][schema[fk.references].primary_key])
            linked = released[fk.column].dropna()
            assert linked.isin(parent_keys).all()  # referential integrity 100 %
            if not original[fk.column].isna().any():
                assert released[fk.column].notna().all()  # every child that had a parent has one
        assert released[table.primary_key].is_unique
    assert _csv_bytes(first.tables) == _csv_bytes(second.tables)  # same seed, same bytes


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(databases())
def test_a_release_reads_back_from_csv_as_written(tmp_path_factory, database):
    schema, frames = database
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = anonymize(schema, frames, random_state=1, progress=False)
    folder = write_release(result, tmp_path_factory.mktemp("release") / "out")
    back = read_database(folder, release_schema(result))
    for name, frame in result.tables.items():
        pd.testing.assert_frame_equal(back[name], frame, check_dtype=False, check_exact=True)
