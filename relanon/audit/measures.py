"""The three measures of a table over its quasi-identifiers: k-anonymity, re-identification risk, l-diversity.

- k-anonymity: every class holds at least ``k`` records;
- re-identification risk: a record's risk is ``1 / its class size``; the maximum risk is
  ``1 / smallest class size``, the average risk the mean over records (``classes / records``);
- l-diversity (Xiao and Tao 2006): within each class no sensitive value covers more than ``1/l`` of the class
  (the frequency-based form); the distinct form only asks for ``l`` different values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from relanon.audit.classes import (
    SIZE_COLUMN,
    Classes,
    check_columns,
    class_keys,
    combine_codes,
    equivalence_classes,
    first_appearances,
    positive_int,
    quasi_identifier_list,
)
from relanon.common.errors import AuditError, format_examples
from relanon.common.exact import exact_codes
from relanon.schema.shapes import COUNT_COLUMN, GROUP_COLUMN


@dataclass(frozen=True, eq=False)
class KAnonymity:
    """The k-anonymity of a table over its quasi-identifiers (the fields of the R ``kanonvrf`` reference's result).

    Attributes
    ----------
    satisfies : bool
        Every class holds at least ``k`` records.
    k : int
    min_class_size : int or None
        Size of the smallest class (``None`` for a table without rows).
    n_classes, n_violations : int
        Number of classes, and of classes smaller than ``k``.
    violating_classes : pandas.DataFrame
        The quasi-identifier values of the classes below ``k`` and their size (column ``.n``),
        smallest first; empty when none.
    summary : str
        One line, e.g. ``"k=2: VIOLATED (min class size=1; 1/3 classes below threshold)"``.
    n_records : int
    quasi_identifiers : tuple of str
    """

    satisfies: bool
    k: int
    min_class_size: int | None
    n_classes: int
    n_violations: int
    violating_classes: pd.DataFrame
    summary: str
    n_records: int
    quasi_identifiers: tuple[str, ...]


def k_anonymity(table: pd.DataFrame, quasi_identifiers, k: int = 5) -> KAnonymity:
    """Check whether every combination of quasi-identifier values occurs in at least ``k`` rows.

    Follows the R ``kanonvrf`` reference: missing values form classes of their own and are counted,
    values are compared exactly, every row belongs to one class.

    Parameters
    ----------
    table : pandas.DataFrame
    quasi_identifiers : str or list of str
    k : int, default 5
        Minimum class size (a positive integer).

    Returns
    -------
    KAnonymity

    Raises
    ------
    AuditError
        Unknown quasi-identifier (the message lists the available columns) or a column that cannot
        be compared exactly (lists, dicts, sets, confusable mixed types...).
    ParameterError
        ``k`` is not a positive integer.

    Examples
    --------
    >>> df = pd.DataFrame({"age": [25, 25, 25, 32, 32, 40], "sex": ["F", "F", "F", "M", "M", "M"]})
    >>> res = k_anonymity(df, ["age", "sex"], k=2)
    >>> res.summary
    'k=2: VIOLATED (min class size=1; 1/3 classes below threshold)'
    >>> res.violating_classes
       age sex  .n
    0   40   M   1
    >>> k_anonymity(df, "sex", k=3).min_class_size
    3
    """
    k = positive_int(k, "k")
    names = quasi_identifier_list(quasi_identifiers)
    check_columns(table, names, "quasi-identifiers", "table")
    classes = equivalence_classes(table, names)
    return k_anonymity_of(table, names, classes, k)


def k_anonymity_of(table: pd.DataFrame, names: list, classes: Classes, k: int) -> KAnonymity:
    sizes = classes.sizes
    below = np.flatnonzero(sizes < k)
    below = below[np.argsort(sizes[below], kind="stable")]
    violating = class_keys(table, names, classes.first_rows[below])
    violating[SIZE_COLUMN] = sizes[below]
    min_size = int(sizes.min()) if len(sizes) else None
    satisfies = len(below) == 0
    verdict = "SATISFIED" if satisfies else "VIOLATED"
    shown_min = min_size if min_size is not None else "none (no rows)"
    summary = f"k={k}: {verdict} (min class size={shown_min}; {len(below)}/{classes.n} classes below threshold)"
    return KAnonymity(
        satisfies=satisfies,
        k=k,
        min_class_size=min_size,
        n_classes=classes.n,
        n_violations=len(below),
        violating_classes=violating,
        summary=summary,
        n_records=len(table),
        quasi_identifiers=tuple(names),
    )


# --------------------------------------------------------------------------- re-identification risk


@dataclass(frozen=True, eq=False)
class ReidentificationRisk:
    """Re-identification risk from the class sizes.

    Attributes
    ----------
    max_risk : float
        ``1 / smallest class size`` (0 for a table without rows).
    average_risk : float
        Mean over records of ``1 / their class size``, which equals ``classes / records``.
    unique_share : float
        Share of records alone in their class.
    class_sizes : pandas.DataFrame
        The class-size distribution: ``class_size``, ``n_classes``, ``n_records``, smallest first.
    n_records, n_classes : int
    quasi_identifiers : tuple of str
    """

    max_risk: float
    average_risk: float
    unique_share: float
    class_sizes: pd.DataFrame
    n_records: int
    n_classes: int
    quasi_identifiers: tuple[str, ...]

    @property
    def summary(self) -> str:
        return (
            f"max risk={self.max_risk:.2%}, average risk={self.average_risk:.2%}, "
            f"unique records={self.unique_share:.2%} ({self.n_records} records, {self.n_classes} classes)"
        )


def reidentification_risk(table: pd.DataFrame, quasi_identifiers) -> ReidentificationRisk:
    """The risk that a record is re-identified from its quasi-identifiers.

    Parameters
    ----------
    table : pandas.DataFrame
    quasi_identifiers : str or list of str

    Returns
    -------
    ReidentificationRisk

    Examples
    --------
    >>> df = pd.DataFrame({"zip": ["75001"] * 3 + ["75002"] * 4 + ["75003"] * 5})
    >>> risk = reidentification_risk(df, "zip")
    >>> round(risk.max_risk, 4), risk.average_risk, risk.unique_share
    (0.3333, 0.25, 0.0)
    """
    names = quasi_identifier_list(quasi_identifiers)
    check_columns(table, names, "quasi-identifiers", "table")
    return risk_of(names, equivalence_classes(table, names))


def risk_of(names: list, classes: Classes) -> ReidentificationRisk:
    sizes, n = classes.sizes, int(classes.sizes.sum())
    values, counts = np.unique(sizes, return_counts=True)
    distribution = pd.DataFrame(
        {"class_size": values.astype(np.int64), "n_classes": counts.astype(np.int64), "n_records": (values * counts).astype(np.int64)}
    )
    return ReidentificationRisk(
        max_risk=float(1.0 / sizes.min()) if n else 0.0,
        average_risk=classes.n / n if n else 0.0,
        unique_share=float((sizes == 1).sum() / n) if n else 0.0,
        class_sizes=distribution,
        n_records=n,
        n_classes=classes.n,
        quasi_identifiers=tuple(names),
    )


# --------------------------------------------------------------------------- l-diversity

DISTINCT_COLUMN = ".distinct"
TOP_COLUMN = ".top"
TOP_COUNT_COLUMN = ".top_n"
TOP_SHARE_COLUMN = ".top_share"


@dataclass(frozen=True, eq=False)
class LDiversity:
    """The l-diversity of a sensitive column within the classes of the quasi-identifiers.

    Attributes
    ----------
    satisfies : bool
        Frequency-based l-diversity (Xiao and Tao 2006): in every class, no sensitive
        value covers more than ``1/l`` of the class.
    satisfies_distinct : bool
        Distinct l-diversity: every class holds at least ``l`` different values.
    l : int
    distinct_l : int
        Fewest different values in a class.
    frequency_l : int
        Largest ``l`` for which the frequency form holds: the minimum over classes of
        ``class size // count of its most frequent value``.
    max_share : float
        Largest share of a class taken by one value.
    n_classes, n_violations : int
        Classes, and classes failing the frequency form.
    violating_classes : pandas.DataFrame
        The failing classes, worst first: their keys, size ``.n``, number of different values
        ``.distinct``, most frequent value ``.top``, its count ``.top_n`` and share ``.top_share``.
    summary : str
    sensitive : str
    quasi_identifiers : tuple of str
    """

    satisfies: bool
    satisfies_distinct: bool
    l: int  # noqa: E741 - the letter of l-diversity
    distinct_l: int
    frequency_l: int
    max_share: float
    n_classes: int
    n_violations: int
    violating_classes: pd.DataFrame
    summary: str
    sensitive: str
    quasi_identifiers: tuple[str, ...]


def l_diversity(table: pd.DataFrame, quasi_identifiers, sensitive: str, l: int = 2) -> LDiversity:  # noqa: E741
    """Check that the sensitive values are diverse within every quasi-identifier class.

    A missing sensitive value is a value of its own, as in :func:`k_anonymity`.

    Parameters
    ----------
    table : pandas.DataFrame
    quasi_identifiers : str or list of str
    sensitive : str
        The sensitive column.
    l : int, default 2

    Returns
    -------
    LDiversity

    Examples
    --------
    >>> df = pd.DataFrame({"zip": ["a"] * 3 + ["b"] * 2, "religion": ["None", "None", "Islam", "None", "Islam"]})
    >>> res = l_diversity(df, "zip", "religion", l=2)
    >>> res.satisfies, res.satisfies_distinct, res.frequency_l
    (False, True, 1)
    >>> res.summary
    'l=2: VIOLATED (1/2 classes have a value above 1/2 of the class; worst share=66.67%; distinct l=2)'
    """
    l = positive_int(l, "l")  # noqa: E741
    names = quasi_identifier_list(quasi_identifiers)
    if sensitive in names:
        raise AuditError(f"column {sensitive!r} cannot be both a quasi-identifier and the sensitive column")
    check_columns(table, names, "quasi-identifiers", "table")
    check_columns(table, [sensitive], "sensitive column", "table")
    classes = equivalence_classes(table, names)
    keys = class_keys(table, names, classes.first_rows)
    return diversity_of(classes.ids, table[sensitive], np.ones(len(table), dtype=np.int64), keys, names, sensitive, l)


def group_l_diversity(
    sensitive_table: pd.DataFrame,
    sensitive: str,
    l: int = 2,  # noqa: E741
    *,
    group_column: str = GROUP_COLUMN,
    count_column: str = COUNT_COLUMN,
) -> LDiversity:
    """l-diversity of an anatomized release, per group, from its sensitive table of counts.

    Parameters
    ----------
    sensitive_table : pandas.DataFrame
        One row per (group, sensitive value) with the number of records, as made by
        :func:`relanon.engine.deassociate.anatomize`.
    sensitive : str
        The column of sensitive values.
    l : int, default 2
    group_column, count_column : str

    Returns
    -------
    LDiversity
        Its classes are the groups.

    Examples
    --------
    >>> counts = pd.DataFrame({"group_id": [1, 1, 2], "religion": ["None", "Islam", "None"], "count": [1, 1, 2]})
    >>> group_l_diversity(counts, "religion", l=2).summary
    'l=2: VIOLATED (1/2 classes have a value above 1/2 of the class; worst share=100.00%; distinct l=1)'
    """
    l = positive_int(l, "l")  # noqa: E741
    check_columns(sensitive_table, [group_column, sensitive, count_column], "columns", "sensitive table")
    counts = sensitive_table[count_column]
    numeric = pd.to_numeric(counts, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    bad = counts[~(numeric > 0) | (numeric % 1 != 0)]
    if len(bad):
        raise AuditError(
            f"column {count_column!r} of the sensitive table must hold positive whole counts; "
            f"found {len(bad)} other values (e.g. {format_examples(bad.iloc[:5])})"
        )
    groups = sensitive_table[group_column]
    if groups.isna().any():
        raise AuditError(f"column {group_column!r} of the sensitive table has missing group ids; every row needs one")
    ids, _ = exact_codes(groups)
    keys = sensitive_table[[group_column]].iloc[first_appearances(ids)].reset_index(drop=True)
    weights = numeric.astype(np.int64)
    return diversity_of(ids, sensitive_table[sensitive], weights, keys, [group_column], sensitive, l)


def diversity_of(class_ids, values: pd.Series, weights, keys: pd.DataFrame, names, sensitive, l) -> LDiversity:  # noqa: E741
    n_classes = len(keys)
    value_codes, n_values = exact_codes(values, sort=True)
    pair_ids, _ = combine_codes(class_ids, value_codes, n_values)
    pair_count = np.bincount(pair_ids, weights=weights).astype(np.int64)
    first_row_of_pair = first_appearances(pair_ids)
    pair_class = class_ids[first_row_of_pair]
    size = np.bincount(pair_class, weights=pair_count, minlength=n_classes).astype(np.int64)
    distinct = np.bincount(pair_class, minlength=n_classes)
    # most frequent value per class; ties go to the smallest value so the result ignores row order
    order = np.lexsort((value_codes[first_row_of_pair], -pair_count, pair_class))
    top_pair = order[np.flatnonzero(np.diff(pair_class[order], prepend=-1) > 0)]
    top_count = pair_count[top_pair]
    share = top_count / size
    failing = top_count * l > size
    frequency_l = int((size // top_count).min()) if n_classes else 0
    distinct_l = int(distinct.min()) if n_classes else 0
    max_share = float(share.max()) if n_classes else 0.0
    bad = np.flatnonzero(failing)
    bad = bad[np.lexsort((distinct[bad], -share[bad]))]
    violating = keys.iloc[bad].reset_index(drop=True)
    violating[SIZE_COLUMN] = size[bad]
    violating[DISTINCT_COLUMN] = distinct[bad]
    violating[TOP_COLUMN] = values.iloc[first_row_of_pair[top_pair[bad]]].reset_index(drop=True)
    violating[TOP_COUNT_COLUMN] = top_count[bad]
    violating[TOP_SHARE_COLUMN] = share[bad]
    satisfies = not failing.any()
    verdict = "SATISFIED" if satisfies else "VIOLATED"
    summary = (
        f"l={l}: {verdict} ({len(bad)}/{n_classes} classes have a value above 1/{l} of the class; "
        f"worst share={max_share:.2%}; distinct l={distinct_l})"
    )
    return LDiversity(
        satisfies=bool(satisfies),
        satisfies_distinct=bool(distinct_l >= l) if n_classes else True,
        l=l,
        distinct_l=distinct_l,
        frequency_l=frequency_l,
        max_share=max_share,
        n_classes=n_classes,
        n_violations=len(bad),
        violating_classes=violating,
        summary=summary,
        sensitive=sensitive,
        quasi_identifiers=tuple(names),
    )


# --------------------------------------------------------------------------- the database audit

