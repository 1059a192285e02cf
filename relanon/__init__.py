"""relanon: anonymize multi-table relational databases and audit their release.

The names a user needs::

    schema = relanon.load_schema("schema.yaml")
    database = relanon.read_database("data/", schema)
    result = relanon.anonymize(schema, database, random_state=7)
    evaluation = relanon.evaluate(schema, database, result.tables, result)
    relanon.write_release(result, "released/")
    report = relanon.audit_database(schema, result.tables, k=5)
    assessment = relanon.assess(schema, database, holdout=0.2, random_state=7)  # attacks vs held-out people

The results are small public types a user can type against: :class:`AnonymizationResult` (with its
:class:`LinkReport` per link and :class:`TableRelease` per table), :class:`Evaluation` (the measures;
the two databases apart, in :class:`EvaluatedData`, for the report's pictures), :class:`Metric` and
:class:`Failure`, :class:`Assessment` and :class:`AttackResult`, :class:`AuditReport` and its
:class:`ViewAudit`, :class:`KAnonymity`, :class:`ReidentificationRisk`, :class:`LDiversity`.
"""

from relanon import datasets, metrics
from relanon.audit import (
    AuditReport,
    KAnonymity,
    LDiversity,
    ReidentificationRisk,
    ViewAudit,
    audit_database,
    k_anonymity,
    l_diversity,
    reidentification_risk,
)
from relanon.common.errors import DataError, ParameterError, RelanonError, SchemaError
from relanon.common.version import __version__
from relanon.engine import AvatarResult, FactorSpace, anatomize, avatarize, bucketize
from relanon.metrics.attacks import Assessment, AttackResult, assess
from relanon.metrics.base import Metric
from relanon.metrics.evaluation import EvaluatedData, Evaluation
from relanon.metrics.failures import Failure
from relanon.metrics.scenarios import evaluate
from relanon.multitable import AnonymizationResult, LinkReport, TableRelease, anonymize, write_release
from relanon.schema import Schema, dump_schema, load_schema
from relanon.stores import read_database, write_database

__all__ = [
    "AnonymizationResult",
    "Assessment",
    "AttackResult",
    "AuditReport",
    "AvatarResult",
    "EvaluatedData",
    "Evaluation",
    "Failure",
    "KAnonymity",
    "LDiversity",
    "LinkReport",
    "Metric",
    "ReidentificationRisk",
    "TableRelease",
    "ViewAudit",
    "DataError",
    "FactorSpace",
    "ParameterError",
    "RelanonError",
    "Schema",
    "SchemaError",
    "__version__",
    "anatomize",
    "anonymize",
    "assess",
    "audit_database",
    "avatarize",
    "bucketize",
    "datasets",
    "dump_schema",
    "evaluate",
    "k_anonymity",
    "l_diversity",
    "load_schema",
    "metrics",
    "read_database",
    "reidentification_risk",
    "write_database",
    "write_release",
]
