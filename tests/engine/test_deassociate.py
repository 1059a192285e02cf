"""Tests of relanon.engine.deassociate: anatomization (seed 000's worked example and algorithm) and bucketization."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relanon.audit import group_l_diversity, k_anonymity, l_diversity
from relanon.common.errors import DataError, ParameterError
from relanon.engine.deassociate import anatomize, bucketize

SEED_COUNTS = {
    "None": 75,
    "Catholicism": 56,
    "Protestantism": 50,
    "Islam": 13,
    "Buddhism": 3,
    "Judaism": 2,
    "Eastern Orthodoxy": 1,
}


def seed_table() -> pd.DataFrame:
    """200 records with the religion counts of seed 000 ("None" is a religion here, not a missing value)."""
    rng = np.random.default_rng(7)
    religion = np.repeat(list(SEED_COUNTS), list(SEED_COUNTS.values()))
    return pd.DataFrame(
        {
            "id": np.arange(1, 201),
            "plz": rng.integers(1000, 99999, 200),
            "gender": rng.choice(["female", "male"], 200),
            "age": rng.integers(18, 80, 200),
            "religion": rng.permutation(religion),
        }
    )


def joined(result, original: pd.DataFrame, key: str = "id") -> pd.DataFrame:
    """The original sensitive value of each released record, with its group."""
    return result.qi_table[[key, "group_id"]].merge(original[[key, result.sensitive]], on=key, how="left")


def reference_anatomy(table: pd.DataFrame, sensitive: str, l: int, seed: int) -> dict:  # noqa: E741
    """Seed 000's R code, transliterated loop by loop (slow, for small tables): key -> group, 0 = suppressed."""
    rng = np.random.default_rng(seed)
    pool = table.iloc[rng.permutation(len(table))].reset_index(drop=True)
    value = [None if pd.isna(v) else v for v in pool[sensitive]]
    rank = {v: i for i, v in enumerate(sorted({v for v in value if v is not None}))}
    rank[None] = len(rank)  # missing last, as dplyr sorts NA
    group = [None] * len(pool)
    next_group = 0
    while True:
        remaining = {}
        for i, v in enumerate(value):
            if group[i] is None:
                remaining[v] = remaining.get(v, 0) + 1
        if len(remaining) < l:
            break
        next_group += 1
        top = sorted(remaining, key=lambda v: (-remaining[v], rank[v]))[:l]
        for v in top:
            first = next(i for i in range(len(pool)) if group[i] is None and value[i] == v)
            group[first] = next_group
    for i in [i for i in range(len(pool)) if group[i] is None]:
        open_groups = [g for g in range(1, next_group + 1) if not any(group[j] == g and value[j] == value[i] for j in range(len(pool)))]
        group[i] = open_groups[0] if open_groups else 0
    return dict(zip(pool["id"], group, strict=True))


# --------------------------------------------------------------------------- anatomization: seed 000's worked example


def test_seed_example_gives_100_groups_of_two_without_suppression():
    table = seed_table()
    result = anatomize(table, "religion", l=2, key="id", random_state=2026)
    assert result.n_groups == 100 and result.n_suppressed == 0 and result.eligible
    assert result.qi_table.groupby("group_id").size().eq(2).all()
    assert sorted(result.qi_table["group_id"].unique()) == list(range(1, 101))
    assert l_diversity(joined(result, table), "group_id", "religion", l=2).satisfies
    assert group_l_diversity(result.sensitive_table, "religion", l=2).satisfies


def test_seed_example_first_groups_pair_the_two_largest_religions():
    result = anatomize(seed_table(), "religion", l=2, key="id", random_state=2026)
    head = result.sensitive_table.head(6)
    assert head["group_id"].tolist() == [1, 1, 2, 2, 3, 3]
    assert head["religion"].tolist() == ["Catholicism", "None"] * 3
    assert head["count"].tolist() == [1] * 6


def test_l3_on_the_seed_counts_fails_eligibility_with_a_clear_message():
    with pytest.raises(DataError) as info:
        anatomize(seed_table(), "religion", l=3, key="id", random_state=1)
    message = str(info.value)
    assert "'None' is held by 75 records" in message
    assert "n/l = 200/3 = 66.67 (9 too many)" in message
    assert "allow_suppression=True" in message and "would drop 13 of the 200 records" in message


def test_l3_with_suppression_allowed_reports_what_it_dropped():
    table = seed_table()
    result = anatomize(table, "religion", l=3, key="id", random_state=1, allow_suppression=True)
    assert not result.eligible
    assert result.too_frequent.to_dict("records") == [{"religion": "None", "count": 75, "limit": 66, "excess": 9}]
    assert result.n_suppressed == 13
    dropped = table.set_index("id").loc[result.suppressed, "religion"]
    assert set(dropped) == {"None"}
    assert group_l_diversity(result.sensitive_table, "religion", l=3).satisfies
    assert l_diversity(joined(result, table), "group_id", "religion", l=3).satisfies


def test_nothing_is_lost_kept_plus_suppressed_is_the_input():
    table = seed_table()
    result = anatomize(table, "religion", l=3, key="id", random_state=5, allow_suppression=True)
    kept = set(result.qi_table["id"])
    suppressed = set(result.suppressed)
    assert not kept & suppressed
    assert kept | suppressed == set(table["id"])
    assert result.sensitive_table["count"].sum() == len(kept)


def test_joining_the_two_tables_reproduces_the_per_group_value_counts():
    table = seed_table()
    result = anatomize(table, "religion", l=2, key="id", random_state=3)
    from_join = joined(result, table).groupby(["group_id", "religion"]).size().rename("count").reset_index()
    pd.testing.assert_frame_equal(from_join, result.sensitive_table)


def test_same_seed_same_groups_another_seed_other_groups():
    table = seed_table()
    first = anatomize(table, "religion", l=2, key="id", random_state=11)
    again = anatomize(table, "religion", l=2, key="id", random_state=11)
    other = anatomize(table, "religion", l=2, key="id", random_state=12)
    pd.testing.assert_frame_equal(first.qi_table, again.qi_table)
    pd.testing.assert_frame_equal(first.sensitive_table, again.sensitive_table)
    assert not first.qi_table["id"].equals(other.qi_table["id"])


def test_generator_random_state_is_accepted():
    result = anatomize(seed_table(), "religion", l=2, key="id", random_state=np.random.default_rng(0))
    assert result.n_groups == 100


def test_output_layout_and_order():
    table = seed_table()
    result = anatomize(table, "religion", l=2, key="id", random_state=0)
    assert list(result.qi_table.columns) == ["id", "group_id", "plz", "gender", "age"]
    assert list(result.sensitive_table.columns) == ["group_id", "religion", "count"]
    qi = result.qi_table
    assert qi.sort_values(["group_id", "id"]).index.tolist() == qi.index.tolist()
    assert result.qi_table["group_id"].dtype == np.int64 and result.sensitive_table["count"].dtype == np.int64
    merged = qi.merge(table, on="id", suffixes=("", "_original"))
    for column in ("plz", "gender", "age"):
        assert merged[column].equals(merged[f"{column}_original"])


def test_the_string_None_is_a_religion_and_real_missing_values_are_one_value_of_their_own():
    table = pd.DataFrame(
        {
            "id": range(8),
            "religion": pd.Series(["None", "None", None, np.nan, "Islam", "Islam", pd.NA, "Judaism"], dtype=object),
        }
    )
    result = anatomize(table, "religion", l=2, key="id", random_state=0)
    counts = result.sensitive_table.groupby(result.sensitive_table["religion"].fillna("<missing>"))["count"].sum()
    assert counts.to_dict() == {"<missing>": 3, "Islam": 2, "Judaism": 1, "None": 2}
    assert result.n_suppressed == 0
    assert group_l_diversity(result.sensitive_table, "religion", l=2).satisfies


def test_leftovers_go_to_the_first_group_without_their_value():
    # counts a:3 b:2 c:2 with l=2: three groups, one c left over, slotted into the first group without c
    table = pd.DataFrame({"id": range(7), "s": list("aaabbcc")})
    result = anatomize(table, "s", l=2, key="id", random_state=0)
    assert result.n_groups == 3 and result.n_suppressed == 0
    sizes = result.qi_table.groupby("group_id").size().tolist()
    assert sorted(sizes) == [2, 2, 3]
    assert group_l_diversity(result.sensitive_table, "s", l=2).satisfies
    expected = reference_anatomy(table, "s", 2, 0)
    assert dict(zip(result.qi_table["id"], result.qi_table["group_id"], strict=True)) == expected


@settings(max_examples=80, deadline=None)
@given(
    counts=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    l=st.integers(2, 4),
    seed=st.integers(0, 2**16),
    with_missing=st.booleans(),
)
def test_fast_groups_equal_the_seed_algorithm_record_by_record(counts, l, seed, with_missing):  # noqa: E741
    values = [f"v{i}" for i in range(len(counts))]
    column = np.repeat(np.array(values, dtype=object), counts)
    if with_missing:
        column[column == values[-1]] = None
    table = pd.DataFrame({"id": np.arange(len(column)) * 10, "s": column})
    result = anatomize(table, "s", l=l, key="id", random_state=seed, allow_suppression=True)
    expected = reference_anatomy(table, "s", l, seed)
    got = dict(zip(result.qi_table["id"], result.qi_table["group_id"], strict=True))
    got.update(dict.fromkeys(result.suppressed, 0))
    assert got == expected
    if len(result.qi_table):
        assert l_diversity(joined(result, table), "group_id", "s", l=l).satisfies
    if result.eligible:
        assert result.n_suppressed == 0


def test_without_a_key_the_index_labels_identify_records():
    table = seed_table().set_index("id")
    result = anatomize(table, "religion", l=3, random_state=1, allow_suppression=True)
    assert result.qi_table.columns[0] == "group_id"
    assert set(result.qi_table.index) | set(result.suppressed) == set(table.index)


def test_the_input_is_not_modified():
    table = seed_table()
    before = table.copy()
    anatomize(table, "religion", l=3, key="id", random_state=1, allow_suppression=True)
    bucketize(table, ["age", "gender"], "religion", k=5, random_state=1)
    pd.testing.assert_frame_equal(table, before)


@pytest.mark.parametrize("l", [1, 0, 2.0, True, "2"])
def test_l_must_be_an_integer_of_at_least_2(l):  # noqa: E741
    with pytest.raises(ParameterError, match="l must be an integer of at least 2"):
        anatomize(seed_table(), "religion", l=l, key="id")


def test_bad_arguments_are_named():
    table = seed_table()
    with pytest.raises(ParameterError, match="'religon' not found; available columns: id, plz"):
        anatomize(table, "religon", key="id")
    with pytest.raises(ParameterError, match="already has a column 'age'"):
        anatomize(table, "religion", key="id", group_column="age")
    with pytest.raises(DataError, match="unique and never missing"):
        anatomize(table.assign(id=1), "religion", key="id")
    with pytest.raises(DataError, match="lists"):
        anatomize(table.assign(religion=[[1]] * 200), "religion", key="id")


def test_fewer_distinct_values_than_l_is_explained():
    table = pd.DataFrame({"id": range(4), "s": ["a", "a", "b", "b"]})
    with pytest.raises(DataError, match="only 2 different values: l-diversity needs at least l=3"):
        anatomize(table, "s", l=3, key="id")


def test_a_large_table_is_anatomized_without_row_loops():
    n = 200_000
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"id": np.arange(n), "s": rng.choice(list("ABCDEFG"), n, p=[0.3, 0.25, 0.2, 0.1, 0.08, 0.05, 0.02])})
    result = anatomize(table, "s", l=3, key="id", random_state=0)
    assert result.n_suppressed == 0 and result.n_groups == n // 3
    assert group_l_diversity(result.sensitive_table, "s", l=3).satisfies


# --------------------------------------------------------------------------- bucketization


def patients() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 103
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "age": pd.array(np.where(rng.random(n) < 0.05, None, rng.integers(18, 90, n)), dtype="Int64"),
            "sex": rng.choice(["F", "M"], n),
            "diagnosis": rng.choice(["flu", "cold", "asthma", "cancer"], n),
            "cost": rng.gamma(2, 100, n),
        }
    )


def test_every_bucket_holds_at_least_k_records():
    out = bucketize(patients(), ["age", "sex"], "diagnosis", k=5, random_state=0)
    check = k_anonymity(out, "bucket_id", k=5)
    assert check.satisfies and check.n_classes == 103 // 5
    assert out["bucket_id"].value_counts().max() <= 2 * 5 - 1


def test_sensitive_values_are_only_shuffled_within_buckets():
    table = patients()
    out = bucketize(table, ["age", "sex"], ["diagnosis", "cost"], k=5, random_state=0)
    pd.testing.assert_frame_equal(out[["id", "age", "sex"]], table[["id", "age", "sex"]])
    for _, bucket in out.groupby("bucket_id"):
        original = table.loc[bucket.index]
        pairs = sorted(zip(bucket["diagnosis"], bucket["cost"], strict=True))
        assert pairs == sorted(zip(original["diagnosis"], original["cost"], strict=True))
    assert not out["diagnosis"].equals(table["diagnosis"])
    assert out["cost"].dtype == table["cost"].dtype and out["bucket_id"].dtype == np.int64


def test_buckets_follow_the_order_of_the_quasi_identifiers_missing_last():
    table = patients()
    out = bucketize(table, "age", "diagnosis", k=10, random_state=0)
    spans = out.groupby("bucket_id")["age"].agg(["min", "max"])
    present = spans.dropna()
    assert (present["max"].shift(1).dropna().to_numpy() <= present["min"].iloc[1:].to_numpy()).all()
    missing_buckets = out.loc[out["age"].isna(), "bucket_id"]
    assert missing_buckets.min() == out["bucket_id"].max()


def test_bucketize_is_reproducible_under_a_seed():
    table = patients()
    first = bucketize(table, ["age", "sex"], "diagnosis", k=5, random_state=42)
    pd.testing.assert_frame_equal(first, bucketize(table, ["age", "sex"], "diagnosis", k=5, random_state=42))
    assert not first["diagnosis"].equals(bucketize(table, ["age", "sex"], "diagnosis", k=5, random_state=43)["diagnosis"])


def test_bucketize_arguments_are_checked():
    table = patients()
    with pytest.raises(DataError, match="fewer than k=200"):
        bucketize(table, "age", "diagnosis", k=200)
    with pytest.raises(ParameterError, match="k must be an integer"):
        bucketize(table, "age", "diagnosis", k=0)
    with pytest.raises(ParameterError, match="both a quasi-identifier and a sensitive"):
        bucketize(table, ["age", "diagnosis"], "diagnosis")
    with pytest.raises(ParameterError, match="'weight'"):
        bucketize(table, "weight", "diagnosis")


def test_a_table_with_its_own_group_id_and_bucket_id_is_released_with_free_id_columns():
    from relanon.audit import audit_database
    from relanon.multitable.pipeline import anonymize
    from relanon.schema.model import load_schema
    from relanon.schema.validation import check_database

    schema = load_schema({"relanon": 1, "tables": {
        "people": {"primary_key": "id", "individual": True, "quasi_identifiers": ["age"],
                   "columns": {"age": "integer", "diag": "categorical", "group_id": "categorical"},
                   "anonymize": {"method": "anatomize", "sensitive": "diag"}},
        "others": {"primary_key": "id", "individual": True, "quasi_identifiers": ["age"],
                   "columns": {"age": "integer", "diag": "categorical", "bucket_id": "categorical"},
                   "anonymize": {"method": "bucketize", "sensitive": ["diag"], "k": 3}}}})
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": range(60), "age": rng.integers(20, 80, 60), "diag": ["a", "b", "c"] * 20})
    database = {"people": frame.assign(group_id=["x", "y"] * 30), "others": frame.assign(bucket_id=["x", "y"] * 30)}
    with pytest.warns(UserWarning, match=r"table 'people' has a column 'group_id' of its own.*'group_id_1'"):
        result = anonymize(schema, database, random_state=0, progress=False)
    people, others = result.tables["people"], result.tables["others"]
    assert "group_id_1" in people and (people["group_id"].isin(["x", "y"])).all()
    assert list(result.tables["people_sensitive"].columns) == ["group_id_1", "diag", "count"]
    assert "bucket_id_1" in others and (others["bucket_id"].isin(["x", "y"])).all()
    assert set(check_database(schema, result.tables)) >= {"people", "others"}  # the release reads back
    report = audit_database(schema, result.tables, k=1, l=2)
    assert next(v for v in report.views if v.table == "people").l_diversity["diag"].satisfies
