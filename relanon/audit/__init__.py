"""Audits of a release of real records: k-anonymity, re-identification risk, l-diversity, across links.

- :mod:`~relanon.audit.classes`: the equivalence classes every measure reads;
- :mod:`~relanon.audit.measures`: k-anonymity, re-identification risk and l-diversity of one table;
- :mod:`~relanon.audit.database`: every table and its views across links, gated by thresholds.

The report is rendered (JSON-ready data, terminal text) by :mod:`relanon.present.audit`.
"""

from relanon.audit.classes import SIZE_COLUMN
from relanon.audit.database import AuditReport, ViewAudit, audit_database
from relanon.audit.measures import (
    KAnonymity,
    LDiversity,
    ReidentificationRisk,
    group_l_diversity,
    k_anonymity,
    l_diversity,
    reidentification_risk,
)

__all__ = [
    "SIZE_COLUMN",
    "AuditReport",
    "KAnonymity",
    "LDiversity",
    "ReidentificationRisk",
    "ViewAudit",
    "audit_database",
    "group_l_diversity",
    "k_anonymity",
    "l_diversity",
    "reidentification_risk",
]
