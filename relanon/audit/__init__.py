"""Audits of a release of real records: k-anonymity, re-identification risk, l-diversity, across links."""

from relanon.audit.checks import (
    AuditReport,
    KAnonymity,
    LDiversity,
    ReidentificationRisk,
    ViewAudit,
    audit_database,
    group_l_diversity,
    k_anonymity,
    l_diversity,
    reidentification_risk,
)

__all__ = [
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
