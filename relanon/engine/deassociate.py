"""De-associative methods: anatomization and bucketization (Xiao and Tao 2006).

They break the link between a person's quasi-identifiers and their sensitive values without
changing any value:

- :func:`anatomize` (Xiao and Tao 2006) splits a table in two: the quasi-identifier table (each
  record with a group id, no sensitive value) and the sensitive table (per group, how often each
  sensitive value occurs). Groups are formed from one record of each of the ``l`` currently largest
  buckets of sensitive values, so no value covers more than ``1/l`` of a group.
- :func:`bucketize` forms buckets of at least ``k`` records close on the quasi-identifiers and
  shuffles the sensitive values within each bucket.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relanon.common.errors import DataError, ParameterError, Problem, format_examples
from relanon.common.exact import exact_codes, uncomparable_reason
from relanon.common.options import check_integer
from relanon.schema.options import default, option
from relanon.schema.shapes import BUCKET_COLUMN, COUNT_COLUMN, GROUP_COLUMN


@dataclass(frozen=True, eq=False)
class Anatomy:
    """The two tables of an anatomized release, and what could not be released.

    Attributes
    ----------
    qi_table : pandas.DataFrame
        The key, the group id and every other column but the sensitive one, sorted by group
        (then by key).
    sensitive_table : pandas.DataFrame
        Group id, sensitive value and count, sorted by group then value.
    suppressed : pandas.Series
        Keys (index labels when no key column is given) of the records that fit in no group.
    n_groups : int
        Groups are numbered 1..n_groups in the order they were formed.
    l : int
    sensitive : str
    too_frequent : pandas.DataFrame
        The sensitive values held by more than ``n / l`` records (eligibility condition), with their
        ``count``, the ``limit`` ``floor(n / l)`` and the ``excess``; empty when eligible.
    """

    qi_table: pd.DataFrame
    sensitive_table: pd.DataFrame
    suppressed: pd.Series
    n_groups: int
    l: int  # noqa: E741 - the letter of l-diversity
    sensitive: str
    too_frequent: pd.DataFrame

    @property
    def n_suppressed(self) -> int:
        return len(self.suppressed)

    @property
    def eligible(self) -> bool:
        """Whether no sensitive value exceeds ``n / l`` (then every record is kept)."""
        return self.too_frequent.empty


def anatomize(
    table: pd.DataFrame,
    sensitive: str,
    l: int = default("anonymize", "l"),  # noqa: E741
    key: str | None = None,
    random_state=None,
    *,
    allow_suppression: bool = False,
    group_column: str = GROUP_COLUMN,
    count_column: str = COUNT_COLUMN,
) -> Anatomy:
    """Split ``table`` into a quasi-identifier table and a sensitive table, l-diverse per group.

    The algorithm of Xiao and Tao (2006):

    1. one bucket per sensitive value (a missing value is a value of its own);
    2. eligibility: no bucket may hold more than ``n / l`` records; otherwise the too frequent values
       are reported, and the table is anatomized only if ``allow_suppression``;
    3. the rows are shuffled once with the seeded generator;
    4. while at least ``l`` buckets hold records, a new group takes one record from each of the ``l``
       currently largest buckets (ties: the smaller value first);
    5. each leftover record goes to the first group that does not hold its value yet; a record that
       fits nowhere is suppressed.

    Every group then holds distinct values only, so none covers more than ``1/l`` of its group.

    Parameters
    ----------
    table : pandas.DataFrame
    sensitive : str
        The sensitive column.
    l : int, default 2
        Diversity level, at least 2.
    key : str, optional
        The primary-key column, kept in the quasi-identifier table and used to report suppressed
        records; without it the index labels play that role.
    random_state : int, numpy.random.Generator or None
        Seed of the one shuffle.
    allow_suppression : bool, default False
        Release the table even when some records must be suppressed.
    group_column, count_column : str
        Names of the group id and count columns of the output.

    Returns
    -------
    Anatomy

    Raises
    ------
    DataError
        The table is not eligible (values too frequent) and suppression is not allowed, or the
        sensitive column cannot be compared exactly, or the key is not unique.

    Examples
    --------
    >>> people = pd.DataFrame({"id": [1, 2, 3, 4], "age": [30, 41, 52, 63],
    ...                        "religion": ["None", "None", "Islam", "Catholicism"]})
    >>> result = anatomize(people, "religion", l=2, key="id", random_state=0)
    >>> result.n_groups, result.n_suppressed, list(result.qi_table.columns)
    (2, 0, ['id', 'group_id', 'age'])
    >>> result.sensitive_table["count"].tolist()
    [1, 1, 1, 1]
    """
    l = check_integer(l, "l", option("anonymize", "l").lowest("anatomize"))  # noqa: E741
    _check_anatomy_arguments(table, sensitive, key, group_column, count_column)
    values = table[sensitive]
    buckets, n_buckets = exact_codes(values, sort=True)  # bucket number = rank of its value
    sizes = np.bincount(buckets, minlength=n_buckets)
    n = len(table)
    too_frequent = _too_frequent(values, buckets, sizes, n, l)
    rng = np.random.default_rng(random_state)
    shuffled = rng.permutation(n)
    pick_bucket, pick_group, n_groups = _greedy_groups(sizes, l)
    group = _assign_records(buckets, sizes, shuffled, pick_bucket, pick_group, n_groups)
    suppressed_rows = np.flatnonzero(group < 0)
    if len(suppressed_rows) and not allow_suppression:
        raise DataError(
            f"the table cannot be anatomized with l={l} without suppressing records",
            _eligibility_problems(too_frequent, sensitive, n, l, len(suppressed_rows), n_buckets),
        )
    keys = table[key] if key is not None else table.index.to_series()
    return Anatomy(
        qi_table=_qi_table(table, sensitive, key, group, group_column),
        sensitive_table=_sensitive_table(values, buckets, n_buckets, group, sensitive, group_column, count_column),
        suppressed=keys.iloc[suppressed_rows].reset_index(drop=True),
        n_groups=n_groups,
        l=l,
        sensitive=sensitive,
        too_frequent=too_frequent,
    )


def _check_anatomy_arguments(table, sensitive, key, group_column, count_column) -> None:
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    available = ", ".join(map(str, table.columns))
    for role, name in (("sensitive column", sensitive), ("key column", key)):
        if name is not None and name not in table.columns:
            raise ParameterError(f"{role} {name!r} not found; available columns: {available}")
    if key is not None and key == sensitive:
        raise ParameterError(f"the key {key!r} cannot be the sensitive column")
    if group_column in table.columns:
        raise ParameterError(f"the table already has a column {group_column!r}; pass another group_column")
    if count_column in (group_column, sensitive):
        raise ParameterError(f"count_column {count_column!r} must differ from the group and sensitive columns")
    reason = uncomparable_reason(table[sensitive])
    if reason is not None:
        raise DataError("the table cannot be anatomized", [Problem(f"the sensitive values cannot be compared exactly: it {reason}", None, sensitive)])
    if key is not None:
        keys = table[key]
        repeated = keys[keys.duplicated(keep=False) & keys.notna()].unique()
        if keys.isna().any() or len(repeated):
            raise DataError(
                "the table cannot be anatomized",
                [Problem("the key must be unique and never missing; give the primary key column", None, key, tuple(repeated[:5]))],
            )


def _too_frequent(values: pd.Series, buckets, sizes, n: int, l: int) -> pd.DataFrame:  # noqa: E741
    over = np.flatnonzero(sizes * l > n)
    over = over[np.argsort(-sizes[over], kind="stable")]
    row_of_bucket = _row_per_bucket(buckets, len(sizes))
    limit = n // l
    return pd.DataFrame(
        {
            values.name: values.iloc[row_of_bucket[over]].reset_index(drop=True),
            "count": sizes[over].astype(np.int64),
            "limit": np.full(len(over), limit, dtype=np.int64),
            "excess": (sizes[over] - limit).astype(np.int64),
        }
    )


def _eligibility_problems(too_frequent: pd.DataFrame, sensitive, n: int, l: int, n_suppressed: int, n_values: int):  # noqa: E741
    advice = (
        f"lower l, generalize the column, or allow suppression (allow_suppression=True), which would drop "
        f"{n_suppressed} of the {n} records"
    )
    problems = [
        Problem(
            f"value {row[sensitive]!r} is held by {row['count']} records, more than n/l = {n}/{l} = {n / l:.4g} "
            f"({row['excess']} too many); {advice}",
            None,
            sensitive,
        )
        for _, row in too_frequent.iterrows()
    ]
    if n_values < l:
        problems.append(Problem(f"only {n_values} different values: l-diversity needs at least l={l}; {advice}", None, sensitive))
    return problems or [Problem(f"{n_suppressed} records fit in no group; {advice}", None, sensitive)]


def _greedy_groups(sizes: np.ndarray, l: int):  # noqa: E741
    """Form groups from one member of each of the ``l`` largest buckets, as long as ``l`` are non-empty.

    Returns ``(bucket, group)`` of every pick, in creation order, and the number of groups. Ties
    go to the smaller bucket number. While the ``l`` largest buckets stay strictly above the others,
    the same buckets are taken for several groups in one step; once every non-empty bucket holds the
    same count ``h``, the greedy choice cycles through them in order, which is formed at once.
    """
    heap = [(-int(size), bucket) for bucket, size in enumerate(sizes) if size > 0]
    heapq.heapify(heap)
    low = min((-negative for negative, _ in heap), default=0)  # a lower bound of the smallest count
    run_bucket, run_start, run_length = [], [], []
    n_groups = 0
    while len(heap) >= l and -heap[0][0] != low:
        top = [heapq.heappop(heap) for _ in range(l)]
        # the same l buckets stay the largest until the l-th comes down to the next one
        steps = max(1, heap[0][0] - top[-1][0]) if heap else -top[-1][0]
        for negative, bucket in top:
            run_bucket.append(bucket)
            run_start.append(n_groups)
            run_length.append(steps)
            if -negative > steps:
                heapq.heappush(heap, (negative + steps, bucket))
                low = min(low, -negative - steps)
        n_groups += steps
    lengths = np.asarray(run_length, dtype=np.int64)
    bucket = np.repeat(np.asarray(run_bucket, dtype=np.int64), lengths)
    group = np.repeat(np.asarray(run_start, dtype=np.int64) - np.cumsum(lengths) + lengths, lengths) + np.arange(len(bucket))
    if len(heap) >= l:  # every bucket left holds the same count: a round robin over them
        height = -heap[0][0]
        ring = np.sort(np.fromiter((b for _, b in heap), dtype=np.int64, count=len(heap)))
        rounds = height * len(ring) // l
        bucket = np.concatenate([bucket, np.tile(ring, height)[: rounds * l]])
        group = np.concatenate([group, n_groups + np.arange(rounds * l) // l])
        n_groups += rounds
    return bucket, group, n_groups


def _assign_records(buckets, sizes, shuffled, pick_bucket, pick_group, n_groups: int) -> np.ndarray:
    """Group (0-based) of every record, -1 when suppressed.

    Each bucket gives its records, in shuffled order, to its picks in group order; the rest are
    leftovers, placed in the first groups without their value.
    """
    n_buckets = len(sizes)
    rows = shuffled[np.argsort(buckets[shuffled], kind="stable")]  # by bucket, shuffled within
    bucket_of_row = buckets[rows]
    rank_in_bucket = np.arange(len(rows)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    order = np.lexsort((pick_group, pick_bucket))
    picks = np.bincount(pick_bucket, minlength=n_buckets)
    pick_start = np.cumsum(picks) - picks
    groups_by_bucket = pick_group[order]
    placed = rank_in_bucket < picks[bucket_of_row]
    group = np.full(len(buckets), -1, dtype=np.int64)
    group[rows[placed]] = groups_by_bucket[pick_start[bucket_of_row[placed]] + rank_in_bucket[placed]]
    for bucket in np.unique(bucket_of_row[~placed]):  # fewer than l buckets have leftovers
        leftovers = rows[~placed & (bucket_of_row == bucket)]
        taken = groups_by_bucket[pick_start[bucket] : pick_start[bucket] + picks[bucket]]
        free = np.setdiff1d(np.arange(n_groups), taken)
        fits = min(len(free), len(leftovers))
        group[leftovers[:fits]] = free[:fits]
    return group


def _row_per_bucket(buckets: np.ndarray, n_buckets: int) -> np.ndarray:
    """A row of each bucket, to show its value (all its rows hold equal values)."""
    rows = np.full(n_buckets, -1, dtype=np.int64)
    rows[buckets] = np.arange(len(buckets))
    return rows


def _qi_table(table, sensitive, key, group, group_column) -> pd.DataFrame:
    kept = np.flatnonzero(group >= 0)
    out = table.drop(columns=[sensitive]).iloc[kept]
    position = out.columns.get_loc(key) + 1 if key is not None else 0
    out.insert(position, group_column, group[kept] + 1)
    if key is None:
        return out.iloc[np.argsort(group[kept], kind="stable")]
    key_rank, _ = exact_codes(table[key].iloc[kept], sort=True)
    return out.iloc[np.lexsort((key_rank, group[kept]))].reset_index(drop=True)


def _sensitive_table(values, buckets, n_buckets, group, sensitive, group_column, count_column) -> pd.DataFrame:
    kept = group >= 0
    pairs, counts = np.unique(group[kept] * n_buckets + buckets[kept], return_counts=True)
    row_of_bucket = _row_per_bucket(buckets, n_buckets)
    return pd.DataFrame(
        {
            group_column: pairs // n_buckets + 1,
            sensitive: values.iloc[row_of_bucket[pairs % n_buckets]].reset_index(drop=True),
            count_column: counts.astype(np.int64),
        }
    )


# --------------------------------------------------------------------------- bucketization


def bucketize(
    table: pd.DataFrame,
    quasi_identifiers,
    sensitive,
    k: int = default("anonymize", "k", "bucketize"),
    random_state=None,
    *,
    bucket_column: str = BUCKET_COLUMN,
) -> pd.DataFrame:
    """Shuffle the sensitive values within buckets of at least ``k`` records close on the quasi-identifiers.

    The three steps of bucketization: the records are sorted on the quasi-identifiers (in the order
    given; missing values last; ties in random order) and cut into ``n // k`` consecutive buckets of
    ``k`` or a few more records (generalization); the quasi-identifiers keep their original values;
    the sensitive values are permuted at random within each bucket. Several sensitive columns move
    together, so a record keeps a consistent set of sensitive values.

    Parameters
    ----------
    table : pandas.DataFrame
    quasi_identifiers : str or list of str
    sensitive : str or list of str
    k : int, default 5
        Minimum bucket size.
    random_state : int, numpy.random.Generator or None
    bucket_column : str, default "bucket_id"

    Returns
    -------
    pandas.DataFrame
        The rows of ``table`` in their order, sensitive values shuffled within buckets, plus the
        bucket id (1, 2, ... in the order of the quasi-identifiers).

    Examples
    --------
    >>> people = pd.DataFrame({"age": [30, 31, 50, 52], "income": [10, 20, 30, 40]})
    >>> out = bucketize(people, "age", "income", k=2, random_state=0)
    >>> out["bucket_id"].tolist()
    [1, 1, 2, 2]
    >>> sorted(out["income"][:2]), sorted(out["income"][2:])
    ([10, 20], [30, 40])
    """
    k = check_integer(k, "k", option("anonymize", "k").lowest("bucketize"))
    quasi = _names(quasi_identifiers, "quasi_identifiers")
    secret = _names(sensitive, "sensitive")
    _check_bucketize_arguments(table, quasi, secret, k, bucket_column)
    rng = np.random.default_rng(random_state)
    n = len(table)
    ranks = [exact_codes(table[name], sort=True)[0] for name in quasi]
    ties = rng.permutation(n)
    sorted_rows = np.lexsort([ties, *reversed(ranks)])
    n_buckets = n // k
    sizes = np.full(n_buckets, n // n_buckets) + (np.arange(n_buckets) < n % n_buckets)
    bucket_of_sorted = np.repeat(np.arange(n_buckets), sizes)
    # a random order within each bucket: position p takes the sensitive values of source[p]
    source = sorted_rows[np.lexsort((rng.permutation(n), bucket_of_sorted))]
    donor = np.empty(n, dtype=np.int64)
    donor[sorted_rows] = source
    out = table.copy()
    for name in secret:
        out[name] = table[name].take(donor).set_axis(out.index)
    bucket = np.empty(n, dtype=np.int64)
    bucket[sorted_rows] = bucket_of_sorted + 1
    out[bucket_column] = bucket
    return out


def _check_bucketize_arguments(table, quasi, secret, k, bucket_column) -> None:
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    unknown = [name for name in (*quasi, *secret) if name not in table.columns]
    if unknown:
        raise ParameterError(f"columns {format_examples(unknown)} not found; available columns: {', '.join(map(str, table.columns))}")
    both = sorted(set(quasi) & set(secret))
    if both:
        raise ParameterError(f"column {both[0]!r} cannot be both a quasi-identifier and a sensitive column")
    if bucket_column in table.columns:
        raise ParameterError(f"the table already has a column {bucket_column!r}; pass another bucket_column")
    if len(table) < k:
        raise DataError(
            "the table cannot be bucketized",
            [Problem(f"the table has {len(table)} records, fewer than k={k}: no bucket of k records can be formed; lower k")],
        )
    for name in quasi:
        reason = uncomparable_reason(table[name])
        if reason is not None:
            raise DataError("the table cannot be bucketized", [Problem(f"the values cannot be ordered exactly: it {reason}", None, name)])


def _names(value, what: str) -> list[str]:
    names = [value] if isinstance(value, str) else list(value) if isinstance(value, list | tuple | pd.Index) else None
    if not names:
        raise ParameterError(f"{what} must be a column name or a non-empty list of column names, got {value!r}")
    return names


