"""The release audit: k-anonymity, re-identification risk and l-diversity, per table and across links.

Records that share the same values on the quasi-identifiers (the columns an attacker may know) form
an *equivalence class*. The three measures all read the class sizes:

- k-anonymity (seed 001): every class holds at least ``k`` records;
- re-identification risk (seed 002): a record's risk is ``1 / its class size``; the maximum risk is
  ``1 / smallest class size``, the average risk the mean over records (``classes / records``);
- l-diversity (seed 000): within each class no sensitive value covers more than ``1/l`` of the class
  (the frequency-based form); the distinct form only asks for ``l`` different values.

Values are compared exactly, as seed 001 specifies: a missing value (None, NaN, NaT, pandas.NA) is a
value of its own and its rows are counted; numbers are equal only when stored equal (``-0.0`` and
``0.0`` are one value, ``0.1 + 0.2`` and ``0.3`` two); timestamps compare by instant, categoricals by
label. Columns that cannot be compared exactly are refused with an :class:`~relanon.common.errors.AuditError`.

:func:`audit_database` audits every table that declares quasi-identifiers, and for individual tables
the views joined with their children (``TO_TOP_ENRICHED``) and parents (``TO_BOTTOM_PROPAGATED``), as
in seed 004: a patient who is not unique alone can become unique once their number of visits is known.
"""

from __future__ import annotations

import datetime
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from relanon.common.errors import (
    AuditError,
    DataError,
    ParameterError,
    Problem,
    format_examples,
)
from relanon.common.exact import _CONTAINERS, exact_codes, uncomparable_reason
from relanon.multitable.views import (
    STANDALONE,
    View,
    standalone,
    to_bottom_propagated,
    to_top_enriched,
)
from relanon.schema.graph import child_links, parent_links
from relanon.schema.model import Schema
from relanon.schema.shapes import COUNT_COLUMN, GROUP_COLUMN

SIZE_COLUMN = ".n"
"""Name of the class-size column of ``violating_classes`` (as in seed 001)."""

SHOWN_CLASSES = 20
"""How many violating classes :meth:`AuditReport.to_dict` lists per check."""


def _first_appearances(ids: np.ndarray) -> np.ndarray:
    """Row of the first appearance of each id, for ids numbered by first appearance (0, 1, 2...)."""
    return np.flatnonzero(np.diff(np.maximum.accumulate(ids), prepend=-1) > 0)


def _combine(codes: np.ndarray, more: np.ndarray, n_more: int) -> tuple[np.ndarray, int]:
    """Codes of the pairs (codes, more), renumbered by first appearance."""
    pairs = codes * n_more + more  # both < number of rows, so the product fits in int64
    combined, uniques = pd.factorize(pairs)
    return combined.astype(np.int64, copy=False), len(uniques)


@dataclass(frozen=True, eq=False)
class _Classes:
    """The equivalence classes of a table: a class id per row, sizes, first row of each class."""

    ids: np.ndarray
    sizes: np.ndarray
    first_rows: np.ndarray

    @property
    def n(self) -> int:
        return len(self.sizes)


def _quasi_identifier_list(quasi_identifiers) -> list[str]:
    if isinstance(quasi_identifiers, str):
        return [quasi_identifiers]
    if not isinstance(quasi_identifiers, Sequence | pd.Index | np.ndarray) or isinstance(quasi_identifiers, bytes):
        raise ParameterError(
            f"quasi_identifiers must be a column name or a list of column names, got {quasi_identifiers!r}"
        )
    names = list(quasi_identifiers)
    if not names:
        raise ParameterError("give at least one quasi-identifier column (quasi_identifiers is empty)")
    duplicated = sorted({str(n) for n in names if names.count(n) > 1})
    if duplicated:
        raise ParameterError(f"quasi-identifiers listed twice: {', '.join(duplicated)}; list each once")
    return names


def _check_columns(table: pd.DataFrame, columns: list, role: str, where: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"the {where} must be a pandas DataFrame, got {type(table).__name__}")
    unknown = [c for c in columns if c not in table.columns]
    if unknown:
        available = ", ".join(map(str, table.columns)) or "none"
        raise AuditError(
            f"{role} {format_examples(unknown)} not found in the {where}; available columns: {available}"
        )
    repeated = [c for c in columns if isinstance(table[c], pd.DataFrame)]
    if repeated:
        raise AuditError(
            f"column {repeated[0]!r} appears more than once in the {where}; rename the copies so that "
            "each column has one name"
        )
    for column in columns:
        reason = uncomparable_reason(table[column])
        if reason is not None:
            raise AuditError(f"column {column!r} of the {where} cannot be compared exactly: it {reason}")


def _classes(table: pd.DataFrame, quasi_identifiers: list) -> _Classes:
    n = len(table)
    ids, n_ids = np.zeros(n, dtype=np.int64), 1
    for column in quasi_identifiers:
        codes, n_codes = exact_codes(table[column])
        ids, n_ids = _combine(ids, codes, n_codes)
    if n == 0:
        return _Classes(ids, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    return _Classes(ids, np.bincount(ids, minlength=n_ids), _first_appearances(ids))


def _class_keys(table: pd.DataFrame, quasi_identifiers: list, rows: np.ndarray) -> pd.DataFrame:
    return table[quasi_identifiers].iloc[rows].reset_index(drop=True)


def _positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(f"{name} must be an integer of at least {minimum}, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------- k-anonymity


@dataclass(frozen=True, eq=False)
class KAnonymity:
    """The k-anonymity of a table over its quasi-identifiers (the fields of seed 001's result).

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

    Follows seed 001 (R ``kanonvrf``): missing values form classes of their own and are counted,
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
    k = _positive_int(k, "k")
    names = _quasi_identifier_list(quasi_identifiers)
    _check_columns(table, names, "quasi-identifiers", "table")
    classes = _classes(table, names)
    return _k_anonymity(table, names, classes, k)


def _k_anonymity(table: pd.DataFrame, names: list, classes: _Classes, k: int) -> KAnonymity:
    sizes = classes.sizes
    below = np.flatnonzero(sizes < k)
    below = below[np.argsort(sizes[below], kind="stable")]
    violating = _class_keys(table, names, classes.first_rows[below])
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
    """Re-identification risk from the class sizes (seed 002).

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
    """The risk that a record is re-identified from its quasi-identifiers (seed 002).

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
    names = _quasi_identifier_list(quasi_identifiers)
    _check_columns(table, names, "quasi-identifiers", "table")
    return _risk(names, _classes(table, names))


def _risk(names: list, classes: _Classes) -> ReidentificationRisk:
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
        Frequency-based l-diversity (seed 000, Xiao and Tao 2006): in every class, no sensitive
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
    l = _positive_int(l, "l")  # noqa: E741
    names = _quasi_identifier_list(quasi_identifiers)
    if sensitive in names:
        raise AuditError(f"column {sensitive!r} cannot be both a quasi-identifier and the sensitive column")
    _check_columns(table, names, "quasi-identifiers", "table")
    _check_columns(table, [sensitive], "sensitive column", "table")
    classes = _classes(table, names)
    keys = _class_keys(table, names, classes.first_rows)
    return _diversity(classes.ids, table[sensitive], np.ones(len(table), dtype=np.int64), keys, names, sensitive, l)


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
    l = _positive_int(l, "l")  # noqa: E741
    _check_columns(sensitive_table, [group_column, sensitive, count_column], "columns", "sensitive table")
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
    keys = sensitive_table[[group_column]].iloc[_first_appearances(ids)].reset_index(drop=True)
    weights = numeric.astype(np.int64)
    return _diversity(ids, sensitive_table[sensitive], weights, keys, [group_column], sensitive, l)


def _diversity(class_ids, values: pd.Series, weights, keys: pd.DataFrame, names, sensitive, l) -> LDiversity:  # noqa: E741
    n_classes = len(keys)
    value_codes, n_values = exact_codes(values, sort=True)
    pair_ids, _ = _combine(class_ids, value_codes, n_values)
    pair_count = np.bincount(pair_ids, weights=weights).astype(np.int64)
    first_row_of_pair = _first_appearances(pair_ids)
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


@dataclass(frozen=True, eq=False)
class ViewAudit:
    """The audit of one table or view: its k-anonymity, risk and l-diversity.

    Attributes
    ----------
    name : str
        E.g. ``"TO_TOP_ENRICHED(patients, visits)"``.
    table : str
        The audited table (whose rows are the records).
    scenario : str
        ``STANDALONE``, ``TO_TOP_ENRICHED`` or ``TO_BOTTOM_PROPAGATED``.
    related : str or None
        The child (``TO_TOP_ENRICHED``) or parent (``TO_BOTTOM_PROPAGATED``) table.
    via : str or None
        The foreign-key column, named when the two tables are linked more than once.
    quasi_identifiers : tuple of str
        The columns of the view compared.
    k_anonymity : KAnonymity or None
    risk : ReidentificationRisk or None
        ``None`` only for an anatomized table without quasi-identifiers (l-diversity alone).
    l_diversity : dict of str to LDiversity
        Per sensitive column; for an anatomized release, computed per group of ``<table>_sensitive``.
    gating : bool
        Whether the view counts for :attr:`AuditReport.passed`: views of individual tables do; a
        table whose rows are not people (``individual: false``) is audited for information only,
        and so is a table of synthetic records (``synthetic``).
    synthetic : bool
        The table's records are synthetic (made by the avatar method): no record is a person, a
        record is unique by construction, and k-anonymity and uniqueness are shown for information.
        Their privacy is measured by attacks against held-out people (``relanon assess``).
    """

    name: str
    table: str
    scenario: str
    related: str | None
    via: str | None
    quasi_identifiers: tuple[str, ...]
    k_anonymity: KAnonymity | None
    risk: ReidentificationRisk | None
    l_diversity: Mapping[str, LDiversity] = field(default_factory=dict)
    gating: bool = True
    synthetic: bool = False


SYNTHETIC_NOTE = (
    "records made by the avatar method are synthetic: each is unique by construction and none is a person, so "
    "k-anonymity and uniqueness are shown for information only; measure their privacy with `relanon assess` "
    "(singling out, linkability and inference against people held out of the data)"
)


@dataclass(frozen=True, eq=False)
class AuditReport:
    """Every view audited, with the thresholds they are held to.

    Attributes
    ----------
    views : tuple of ViewAudit
    k : int
    l : int or None
        Frequency-based l-diversity required of every sensitive column (``None``: reported only).
    max_risk : float or None
        Highest maximum re-identification risk accepted (``None``: reported only).
    """

    views: tuple[ViewAudit, ...]
    k: int
    l: int | None = None  # noqa: E741
    max_risk: float | None = None

    @property
    def failures(self) -> dict[str, list[str]]:
        """View name -> why it fails, for the failing views that gate the release."""
        return {name: reasons for name, reasons in self._misses().items() if self._gating(name)}

    def _misses(self) -> dict[str, list[str]]:
        out = {}
        for view in self.views:
            reasons = _view_failures(view, self.l is not None, self.max_risk)
            if reasons:
                out[view.name] = reasons
        return out

    def _gating(self, name: str) -> bool:
        return next(view.gating for view in self.views if view.name == name)

    @property
    def passed(self) -> bool:
        """Whether every view meets every threshold (what a release job gates on)."""
        return not self.failures

    def to_dict(self, max_classes: int = SHOWN_CLASSES) -> dict:
        """The report as plain JSON-ready data (at most ``max_classes`` violating classes per check)."""
        misses = self._misses()
        return {
            "thresholds": {"k": self.k, "l": self.l, "max_risk": self.max_risk},
            "passed": self.passed,
            "views": [_view_dict(view, misses.get(view.name, []), max_classes) for view in self.views],
        }

    def to_text(self, max_classes: int = 5) -> str:
        """Readable tables: one line per table and view, then the details of what failed."""
        return _report_text(self, max_classes)


def _view_failures(view: ViewAudit, gate_l: bool, max_risk: float | None) -> list[str]:
    out = []
    if view.k_anonymity is not None and not view.k_anonymity.satisfies:
        out.append(view.k_anonymity.summary)
    if max_risk is not None and view.risk is not None and view.risk.max_risk > max_risk:
        out.append(f"max risk={view.risk.max_risk:.2%} above {max_risk:.2%}")
    if gate_l:
        out += [f"{name}: {result.summary}" for name, result in view.l_diversity.items() if not result.satisfies]
    return out


def audit_database(
    schema: Schema,
    database: Mapping[str, pd.DataFrame],
    k: int = 5,
    l: int | None = None,  # noqa: E741
    max_risk: float | None = None,
    synthetic=None,
) -> AuditReport:
    """Audit every table that declares quasi-identifiers, and the views across its links.

    For each table with ``quasi_identifiers``: ``STANDALONE(T)``. For each *individual* table
    with quasi-identifiers, also:

    - ``TO_TOP_ENRICHED(T, C)`` for each child link: T's quasi-identifiers plus the number of C rows
      per T row (``C.count``, 0 for none) and, for each quasi-identifier declared on C, an aggregate
      over the T row's children: the median for continuous, integer and datetime columns
      (``C.median(col)``), the most frequent value for the others (``C.mode(col)``, ties to the
      smallest); missing when the row has no child;
    - ``TO_BOTTOM_PROPAGATED(T, P)`` for each parent link whose parent declares quasi-identifiers:
      T's quasi-identifiers plus P's (``P.col``), missing for a child without parent.

    A child linked twice to the same parent gives two views, named with the foreign key
    (``TO_BOTTOM_PROPAGATED(transfers, accounts via from_account)``). Sensitive columns (the table's
    ``sensitive`` role and its ``anonymize.sensitive``) are checked for l-diversity in every view of
    their table. For an anatomized release (the sensitive column absent from the table, a
    ``<table>_sensitive`` table present), l-diversity is checked per group from the counts.

    Parameters
    ----------
    schema : relanon.schema.Schema
    database : dict of str to pandas.DataFrame
        The original or the anonymized database (same schema).
    k : int, default 5
    l : int, optional
        Required frequency-based l-diversity; without it, l-diversity is computed at l=2 and
        reported only.
    max_risk : float, optional
        Highest accepted maximum re-identification risk, in (0, 1].
    synthetic : collection of str, optional
        Tables whose records are synthetic (released by the avatar method; ``relanon audit`` reads
        them from the release's ``release.json``): audited for information, not gating, since a
        synthetic record is unique by construction and is no person. Tables released with their
        real records (``keep``, anatomized, bucketized) and original data gate as usual.

    Returns
    -------
    AuditReport

    Raises
    ------
    DataError
        A table or column the audit needs is missing, or an anatomized release is inconsistent.

    Examples
    --------
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "columns": {"sex": "categorical"}, "quasi_identifiers": ["sex"]}}})
    >>> people = pd.DataFrame({"id": range(6), "sex": ["F"] * 3 + ["M"] * 3})
    >>> report = audit_database(schema, {"people": people}, k=3)
    >>> report.passed, [view.name for view in report.views]
    (True, ['STANDALONE(people)'])
    """
    if not isinstance(schema, Schema):
        raise ParameterError(f"schema must be a relanon Schema (load it with relanon.load_schema), got {type(schema).__name__}")
    if not isinstance(database, Mapping):
        raise ParameterError(f"database must be a dict of table name -> DataFrame, got {type(database).__name__}")
    k = _positive_int(k, "k")
    if l is not None:
        l = _positive_int(l, "l")  # noqa: E741
    if max_risk is not None and (isinstance(max_risk, bool) or not isinstance(max_risk, numbers.Real) or not 0 < max_risk <= 1):
        raise ParameterError(f"max_risk must be a number in (0, 1], got {max_risk!r}")
    synthetic = _synthetic_tables(schema, synthetic)
    _raise_missing(schema, database)
    views = []
    for table in schema:
        views += _table_audits(schema, database, table, k, l if l is not None else 2, table.name in synthetic)
    return AuditReport(views=tuple(views), k=k, l=l, max_risk=None if max_risk is None else float(max_risk))


def _synthetic_tables(schema, synthetic) -> frozenset:
    if synthetic is None:
        return frozenset()
    if isinstance(synthetic, str):
        synthetic = [synthetic]
    names = frozenset(synthetic)
    unknown = sorted(names - set(schema.tables))
    if unknown:
        raise ParameterError(f"synthetic names tables absent from the schema: {format_examples(unknown)}; "
                             f"tables: {format_examples(list(schema.tables), 10)}")
    return names


def _anatomized(table, frame: pd.DataFrame, database) -> bool:
    a = table.anonymize
    return a.method == "anatomize" and bool(a.sensitive) and a.sensitive[0] not in frame.columns and f"{table.name}_sensitive" in database


def _sensitive_columns(table, frame: pd.DataFrame, database) -> list[str]:
    names = list(dict.fromkeys((*table.sensitive, *table.anonymize.sensitive)))
    if _anatomized(table, frame, database):
        names.remove(table.anonymize.sensitive[0])
    return names


def _raise_missing(schema, database) -> None:
    problems = []
    for table in schema:
        if not table.quasi_identifiers and table.anonymize.method != "anatomize":
            continue
        needed = _needed_tables(schema, table)
        for name in needed:
            if name not in database:
                problems.append(Problem(f"the audit needs this table, absent from the database (tables: {', '.join(map(str, database)) or 'none'})", name))
            elif not isinstance(database[name], pd.DataFrame):
                problems.append(Problem(f"expected a DataFrame, got {type(database[name]).__name__}", name))
        for name, columns in _needed_columns(schema, table, database).items():
            frame = database.get(name)
            if isinstance(frame, pd.DataFrame):
                missing = [c for c in dict.fromkeys(columns) if c not in frame.columns]
                for column in missing:
                    problems.append(Problem(_missing_column_message(schema[name], column), name, column))
    if problems:
        unique = list(dict.fromkeys(problems))
        raise DataError("the database cannot be audited", unique)


def _missing_column_message(table, column: str) -> str:
    message = "the audit needs this column, absent from the table"
    if table.anonymize.method == "anatomize" and column in table.anonymize.sensitive:
        message += f"; an anatomized release carries it in a table {table.name + '_sensitive'!r}: include that table"
    return message


def _needed_tables(schema, table) -> list[str]:
    names = [table.name]
    if table.individual and table.quasi_identifiers:
        names += [link.child for link in child_links(schema, table.name)]
        names += [link.parent for link in parent_links(schema, table.name) if schema[link.parent].quasi_identifiers]
    return names


def _needed_columns(schema, table, database) -> dict[str, list[str]]:
    frame = database.get(table.name)
    own = list(table.quasi_identifiers)
    if isinstance(frame, pd.DataFrame):
        own += _sensitive_columns(table, frame, database)
        if _anatomized(table, frame, database):
            own.append(GROUP_COLUMN)
    needed = {table.name: own}
    if table.individual and table.quasi_identifiers:
        for link in child_links(schema, table.name):
            needed[table.name] = needed[table.name] + [table.primary_key]
            needed.setdefault(link.child, []).extend([link.column, *schema[link.child].quasi_identifiers])
        for link in parent_links(schema, table.name):
            parent = schema[link.parent]
            if parent.quasi_identifiers:
                needed[table.name] = needed[table.name] + [link.column]
                needed.setdefault(link.parent, []).extend([parent.primary_key, *parent.quasi_identifiers])
    return needed


def _table_audits(schema, database, table, k: int, l: int, synthetic: bool = False) -> list[ViewAudit]:  # noqa: E741
    frame = database[table.name]
    anatomized = _anatomized(table, frame, database)
    if not table.quasi_identifiers:
        if not anatomized:
            return []
        diversity = _anatomy_diversity(table, frame, database, l)
        name = f"{STANDALONE}({table.name})"
        return [ViewAudit(name, table.name, STANDALONE, None, None, (), None, None, diversity,
                          table.individual and not synthetic, synthetic)]
    sensitive = _sensitive_columns(table, frame, database)
    for column in sensitive:
        _refuse_uncomparable(frame[column], table.name, column)
    audits = []
    for view in _audit_views(schema, database, table):
        names = list(view.frame.columns)
        for column in names:
            reason = uncomparable_reason(view.frame[column])
            if reason is not None:
                raise AuditError(f"{view.name}: column {column!r} cannot be compared exactly: it {reason}")
        classes = _classes(view.frame, names)
        diversity = {}
        if sensitive:
            keys = _class_keys(view.frame, names, classes.first_rows)
            ones = np.ones(len(view.frame), dtype=np.int64)
            for column in sensitive:
                diversity[column] = _diversity(classes.ids, frame[column], ones, keys, names, column, l)
        if anatomized and view.scenario == STANDALONE:
            diversity.update(_anatomy_diversity(table, frame, database, l))
        audits.append(
            ViewAudit(
                name=view.name,
                table=table.name,
                scenario=view.scenario,
                related=None if view.scenario == STANDALONE else view.reference,
                via=view.via,
                quasi_identifiers=tuple(names),
                k_anonymity=_k_anonymity(view.frame, names, classes, k),
                risk=_risk(names, classes),
                l_diversity=diversity,
                gating=table.individual and not synthetic,
                synthetic=synthetic,
            )
        )
    return audits


def _audit_views(schema, database, table) -> list[View]:
    """The views of an audited table, over quasi-identifiers only (medians for children's numbers)."""
    qis = {t.name: list(t.quasi_identifiers) for t in schema}
    out = [standalone(schema, database, table.name, qis)]
    if not table.individual:
        return out
    for link in child_links(schema, table.name):
        for column in schema[link.child].quasi_identifiers:
            _refuse_uncomparable(database[link.child][column], link.child, column)
        out.append(to_top_enriched(schema, database, link, qis, numeric="median"))
    for link in parent_links(schema, table.name):
        if schema[link.parent].quasi_identifiers:  # otherwise the view adds nothing to STANDALONE
            out.append(to_bottom_propagated(schema, database, link, qis))
    return out


def _refuse_uncomparable(values: pd.Series, table: str, column: str) -> None:
    reason = uncomparable_reason(values)
    if reason is not None:
        raise AuditError(f"column {column!r} of table {table!r} cannot be compared exactly: it {reason}")


def _anatomy_diversity(table, frame: pd.DataFrame, database, l: int) -> dict[str, LDiversity]:  # noqa: E741
    sensitive = table.anonymize.sensitive[0]
    counts = database[f"{table.name}_sensitive"]
    _check_anatomy_consistent(table.name, frame, counts)
    return {sensitive: group_l_diversity(counts, sensitive, l)}


def _check_anatomy_consistent(name: str, frame: pd.DataFrame, counts: pd.DataFrame) -> None:
    sensitive_name = f"{name}_sensitive"
    missing = [c for c in (GROUP_COLUMN, COUNT_COLUMN) if c not in counts.columns]
    if missing:
        raise DataError(
            "the anatomized release cannot be audited",
            [Problem(f"column absent; {sensitive_name} needs {GROUP_COLUMN}, the sensitive column and {COUNT_COLUMN}", sensitive_name, c) for c in missing],
        )
    released = frame[GROUP_COLUMN].value_counts(dropna=False)
    declared = pd.to_numeric(counts[COUNT_COLUMN], errors="coerce").groupby(counts[GROUP_COLUMN], dropna=False).sum()
    both = pd.concat([released.rename("rows"), declared.rename("counted")], axis=1).fillna(0)
    differ = both[both["rows"] != both["counted"]]
    if len(differ):
        raise DataError(
            "the anatomized release is inconsistent",
            [
                Problem(
                    f"{len(differ)} groups have a number of rows in {name} different from their total count in "
                    f"{sensitive_name}; release the two tables made by the same anatomization",
                    name,
                    GROUP_COLUMN,
                    tuple(differ.index[:5]),
                )
            ],
        )


# --------------------------------------------------------------------------- rendering


def _json_value(value):
    if value is None or (not isinstance(value, _CONTAINERS) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp | datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    return str(value)


def _records(frame: pd.DataFrame, limit: int) -> list[dict]:
    head = frame.head(limit)
    return [{str(c): _json_value(v) for c, v in zip(head.columns, row, strict=True)} for row in head.itertuples(index=False)]


def _view_dict(view: ViewAudit, failures: list[str], max_classes: int) -> dict:
    out = {
        "view": view.name,
        "table": view.table,
        "scenario": view.scenario,
        "related": view.related,
        "via": view.via,
        "quasi_identifiers": list(view.quasi_identifiers),
        "gating": view.gating,
        "synthetic": view.synthetic,
        "passed": not failures,
        "failures": failures,
    }
    ka, risk = view.k_anonymity, view.risk
    if ka is not None:
        out["k_anonymity"] = {
            "satisfies": ka.satisfies,
            "k": ka.k,
            "min_class_size": ka.min_class_size,
            "n_classes": ka.n_classes,
            "n_violations": ka.n_violations,
            "summary": ka.summary,
            "violating_classes": _records(ka.violating_classes, max_classes),
        }
    if risk is not None:
        out["risk"] = {
            "n_records": risk.n_records,
            "max_risk": risk.max_risk,
            "average_risk": risk.average_risk,
            "unique_share": risk.unique_share,
            "class_sizes": _records(risk.class_sizes, len(risk.class_sizes)),
        }
    out["l_diversity"] = {
        name: {
            "per": list(d.quasi_identifiers),
            "l": d.l,
            "satisfies": d.satisfies,
            "satisfies_distinct": d.satisfies_distinct,
            "frequency_l": d.frequency_l,
            "distinct_l": d.distinct_l,
            "max_share": d.max_share,
            "n_classes": d.n_classes,
            "n_violations": d.n_violations,
            "summary": d.summary,
            "violating_classes": _records(d.violating_classes, max_classes),
        }
        for name, d in view.l_diversity.items()
    }
    return out


def _report_text(report: AuditReport, max_classes: int) -> str:
    failures = report._misses()
    rules = [f"k={report.k}"]
    rules.append(f"l={report.l} (frequency-based)" if report.l is not None else "l not required")
    rules.append(f"max risk={report.max_risk:.2%}" if report.max_risk is not None else "max risk not required")
    header = ["view", "records", "classes", "min class", "max risk", "avg risk", "unique", "l", "result"]
    rows, tables = [], []
    for view in report.views:
        if view.table not in tables:
            tables.append(view.table)
            rows.append((view.table,))
        ka, risk = view.k_anonymity, view.risk
        ls = [f"{name}={d.frequency_l}" for name, d in view.l_diversity.items()]
        rows.append(
            (
                "  " + view.name,
                str(risk.n_records) if risk else "-",
                str(ka.n_classes) if ka else "-",
                str(ka.min_class_size) if ka and ka.min_class_size is not None else "-",
                f"{risk.max_risk:.2%}" if risk else "-",
                f"{risk.average_risk:.2%}" if risk else "-",
                f"{risk.unique_share:.2%}" if risk else "-",
                " ".join(ls) if ls else "-",
                ("FAILED" if view.gating else "info") if view.name in failures else
                ("info" if view.synthetic else "passed"),
            )
        )
    widths = [max([len(header[i])] + [len(r[i]) for r in rows if len(r) > 1]) for i in range(len(header))]
    lines = [f"relanon audit: {', '.join(rules)}", ""]
    lines.append("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    for row in rows:
        if len(row) == 1:
            lines.append(row[0])
        else:
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    lines.append("")
    lines.append("l: per sensitive column, the largest l for which no value covers more than 1/l of a class")
    if any(not view.gating and not view.synthetic for view in report.views):
        lines.append("info: the table is not individual (its rows are not people): shown, not required")
    if any(view.synthetic for view in report.views):
        synthetic = sorted({view.table for view in report.views if view.synthetic})
        lines.append(f"info ({', '.join(synthetic)}): {SYNTHETIC_NOTE}")
    for view in report.views:
        if view.name not in failures:
            continue
        reading = "misses the thresholds (information only: synthetic records)" if view.synthetic else \
            "misses the thresholds (information only)"
        lines += ["", f"{view.name} {'FAILED' if view.gating else reading}:"]
        lines += [f"  - {reason}" for reason in failures[view.name]]
        shown = []
        if view.k_anonymity is not None and not view.k_anonymity.satisfies:
            shown.append(("classes below k", view.k_anonymity.violating_classes, view.k_anonymity.n_violations))
        if report.l is not None:
            shown += [(f"classes not {d.l}-diverse in {name}", d.violating_classes, d.n_violations) for name, d in view.l_diversity.items() if not d.satisfies]
        for title, frame, total in shown:
            more = f", first {max_classes}" if total > max_classes else ""
            lines.append(f"  {title} ({total}{more}):")
            lines += ["    " + line for line in frame.head(max_classes).to_string(index=False).splitlines()]
    n_fail = sum(1 for name in failures if report._gating(name))
    verdict = "PASSED" if not n_fail else f"FAILED ({n_fail} of {len(report.views)} views fail)"
    lines += ["", f"Result: {verdict}"]
    return "\n".join(lines)
