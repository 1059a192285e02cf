"""The database audit: k-anonymity, re-identification risk and l-diversity, per table and across links.

Records that share the same values on the quasi-identifiers (the columns an attacker may know) form
an *equivalence class*. The three measures all read the class sizes:

- k-anonymity: every class holds at least ``k`` records;
- re-identification risk: a record's risk is ``1 / its class size``; the maximum risk is
  ``1 / smallest class size``, the average risk the mean over records (``classes / records``);
- l-diversity (Xiao and Tao 2006): within each class no sensitive value covers more than ``1/l`` of the class
  (the frequency-based form); the distinct form only asks for ``l`` different values.

Values are compared exactly, as the R ``kanonvrf`` reference does: a missing value (None, NaN, NaT, pandas.NA) is a
value of its own and its rows are counted; numbers are equal only when stored equal (``-0.0`` and
``0.0`` are one value, ``0.1 + 0.2`` and ``0.3`` two); timestamps compare by instant, categoricals by
label. Columns that cannot be compared exactly are refused with an :class:`~relanon.common.errors.AuditError`.

:func:`audit_database` audits every table that declares quasi-identifiers, and for individual tables
the views joined with their children (``TO_TOP_ENRICHED``) and parents (``TO_BOTTOM_PROPAGATED``), as in
the multi-table scenarios: a patient who is not unique alone can become unique once her number of visits is known.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from relanon.audit.classes import class_keys, equivalence_classes, positive_int
from relanon.audit.measures import (
    KAnonymity,
    LDiversity,
    ReidentificationRisk,
    diversity_of,
    group_l_diversity,
    k_anonymity_of,
    risk_of,
)
from relanon.common.errors import AuditError, DataError, ParameterError, Problem, format_examples
from relanon.common.exact import uncomparable_reason
from relanon.common.options import Method
from relanon.multitable.views import STANDALONE, View, standalone, to_bottom_propagated, to_top_enriched
from relanon.schema.graph import child_links, parent_links
from relanon.schema.model import Schema
from relanon.schema.shapes import COUNT_COLUMN, group_column


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

    Rendered by :func:`relanon.present.audit.audit_dict` (JSON-ready data) and
    :func:`relanon.present.audit.audit_text` (terminal text).

    Attributes
    ----------
    views : tuple of ViewAudit
    k : int
    l : int or None
        Frequency-based l-diversity required of every sensitive column (``None``: reported only).
    max_risk : float or None
        Highest maximum re-identification risk accepted (``None``: reported only).
    individual_tables : tuple of str
        The schema's individual tables: an audit with no view of one of them audited nothing
        (:attr:`audited`), and does not pass.
    """

    views: tuple[ViewAudit, ...]
    k: int
    l: int | None = None  # noqa: E741
    max_risk: float | None = None
    individual_tables: tuple[str, ...] = ()

    @property
    def failures(self) -> dict[str, list[str]]:
        """View name -> why it fails, for the failing views that gate the release."""
        return {name: reasons for name, reasons in self.misses.items() if self.is_gating(name)}

    @property
    def misses(self) -> dict[str, list[str]]:
        """View name -> why it misses the thresholds, for every view (including those shown for information)."""
        out = {}
        for view in self.views:
            reasons = _view_failures(view, self.l is not None, self.max_risk)
            if reasons:
                out[view.name] = reasons
        return out

    def is_gating(self, name: str) -> bool:
        """Whether the view named ``name`` counts for :attr:`passed`."""
        return next(view.gating for view in self.views if view.name == name)

    @property
    def audited(self) -> bool:
        """Whether some view is of an individual table: without one, the audit measured no people."""
        return any(view.table in self.individual_tables for view in self.views)

    @property
    def not_audited(self) -> str | None:
        """Why nothing was audited (no table is individual, or none declares quasi-identifiers), or ``None``."""
        if self.audited:
            return None
        if not self.individual_tables:
            return ("no table is individual (`individual: true`), so no view is of people and none gates the release: "
                    "mark the tables whose rows are people the release protects with `individual: true` "
                    "(docs/guide/schema-file.md)")
        return (f"the individual tables ({', '.join(self.individual_tables)}) declare no quasi_identifiers: declare "
                "the columns an attacker may know as `quasi_identifiers` (docs/guide/schema-file.md)")

    @property
    def passed(self) -> bool:
        """Whether every view meets every threshold (what a release job gates on); ``False`` when nothing
        was audited (:attr:`not_audited` says why)."""
        return self.audited and not self.failures


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
        them from the release's ``release.json``, for the tables whose data matches its fingerprints:
        :func:`relanon.stores.notes.check_release`): audited for information, not gating, since a
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
    ...     "primary_key": "id", "individual": True, "columns": {"sex": "categorical"}, "quasi_identifiers": ["sex"]}}})
    >>> people = pd.DataFrame({"id": range(6), "sex": ["F"] * 3 + ["M"] * 3})
    >>> report = audit_database(schema, {"people": people}, k=3)
    >>> report.passed, [view.name for view in report.views]
    (True, ['STANDALONE(people)'])
    """
    if not isinstance(schema, Schema):
        raise ParameterError(f"schema must be a relanon Schema (load it with relanon.load_schema), got {type(schema).__name__}")
    if not isinstance(database, Mapping):
        raise ParameterError(f"database must be a dict of table name -> DataFrame, got {type(database).__name__}")
    k = positive_int(k, "k")
    if l is not None:
        l = positive_int(l, "l")  # noqa: E741
    if max_risk is not None and (isinstance(max_risk, bool) or not isinstance(max_risk, numbers.Real) or not 0 < max_risk <= 1):
        raise ParameterError(f"max_risk must be a number in (0, 1], got {max_risk!r}")
    synthetic = _synthetic_tables(schema, synthetic)
    _raise_missing(schema, database)
    views = []
    for table in schema:
        views += _table_audits(schema, database, table, k, l if l is not None else 2, table.name in synthetic)
    return AuditReport(views=tuple(views), k=k, l=l, max_risk=None if max_risk is None else float(max_risk),
                       individual_tables=tuple(table.name for table in schema if table.individual))


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
    return a.method == Method.ANATOMIZE and bool(a.sensitive) and a.sensitive[0] not in frame.columns and f"{table.name}_sensitive" in database


def _sensitive_columns(table, frame: pd.DataFrame, database) -> list[str]:
    names = list(dict.fromkeys((*table.sensitive, *table.anonymize.sensitive)))
    if _anatomized(table, frame, database):
        names.remove(table.anonymize.sensitive[0])
    return names


def _raise_missing(schema, database) -> None:
    problems = []
    for table in schema:
        if not table.quasi_identifiers and table.anonymize.method != Method.ANATOMIZE:
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
    if table.anonymize.method == Method.ANATOMIZE and column in table.anonymize.sensitive:
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
            own.append(group_column(table))
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
        classes = equivalence_classes(view.frame, names)
        diversity = {}
        if sensitive:
            keys = class_keys(view.frame, names, classes.first_rows)
            ones = np.ones(len(view.frame), dtype=np.int64)
            for column in sensitive:
                diversity[column] = diversity_of(classes.ids, frame[column], ones, keys, names, column, l)
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
                k_anonymity=k_anonymity_of(view.frame, names, classes, k),
                risk=risk_of(names, classes),
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
    _check_anatomy_consistent(table, frame, counts)
    return {sensitive: group_l_diversity(counts, sensitive, l, group_column=group_column(table))}


def _check_anatomy_consistent(table, frame: pd.DataFrame, counts: pd.DataFrame) -> None:
    name, group = table.name, group_column(table)
    sensitive_name = f"{name}_sensitive"
    missing = [c for c in (group, COUNT_COLUMN) if c not in counts.columns]
    if missing:
        raise DataError(
            "the anatomized release cannot be audited",
            [Problem(f"column absent; {sensitive_name} needs {group}, the sensitive column and {COUNT_COLUMN}", sensitive_name, c) for c in missing],
        )
    released = frame[group].value_counts(dropna=False)
    declared = pd.to_numeric(counts[COUNT_COLUMN], errors="coerce").groupby(counts[group], dropna=False).sum()
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
                    group,
                    tuple(differ.index[:5]),
                )
            ],
        )


