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

import importlib
from typing import TYPE_CHECKING

from relanon.common.version import __version__

if TYPE_CHECKING:  # what the names are, for readers and tools; at run time they load when first used
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
    from relanon.engine import AvatarResult, FactorSpace, anatomize, avatarize, bucketize
    from relanon.metrics.attacks import Assessment, AttackResult, assess
    from relanon.metrics.base import Metric
    from relanon.metrics.evaluation import EvaluatedData, Evaluation
    from relanon.metrics.failures import Failure
    from relanon.metrics.scenarios import evaluate
    from relanon.multitable import AnonymizationResult, LinkReport, TableRelease, anonymize, write_release
    from relanon.schema import Schema, dump_schema, load_schema
    from relanon.stores import read_database, write_database

# where each public name lives: ``import relanon`` (and the command line's start) loads none of them,
# the first use of a name imports its module
_HOMES = {
    "anatomize": "relanon.engine",
    "AnonymizationResult": "relanon.multitable",
    "anonymize": "relanon.multitable",
    "assess": "relanon.metrics.attacks",
    "Assessment": "relanon.metrics.attacks",
    "AttackResult": "relanon.metrics.attacks",
    "audit_database": "relanon.audit",
    "AuditReport": "relanon.audit",
    "avatarize": "relanon.engine",
    "AvatarResult": "relanon.engine",
    "bucketize": "relanon.engine",
    "DataError": "relanon.common.errors",
    "datasets": "relanon.datasets",
    "dump_schema": "relanon.schema",
    "evaluate": "relanon.metrics.scenarios",
    "EvaluatedData": "relanon.metrics.evaluation",
    "Evaluation": "relanon.metrics.evaluation",
    "FactorSpace": "relanon.engine",
    "Failure": "relanon.metrics.failures",
    "k_anonymity": "relanon.audit",
    "KAnonymity": "relanon.audit",
    "l_diversity": "relanon.audit",
    "LDiversity": "relanon.audit",
    "LinkReport": "relanon.multitable",
    "load_schema": "relanon.schema",
    "Metric": "relanon.metrics.base",
    "metrics": "relanon.metrics",
    "ParameterError": "relanon.common.errors",
    "read_database": "relanon.stores",
    "reidentification_risk": "relanon.audit",
    "ReidentificationRisk": "relanon.audit",
    "RelanonError": "relanon.common.errors",
    "Schema": "relanon.schema",
    "SchemaError": "relanon.common.errors",
    "TableRelease": "relanon.multitable",
    "ViewAudit": "relanon.audit",
    "write_database": "relanon.stores",
    "write_release": "relanon.multitable",
}

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


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'relanon' has no attribute {name!r}")
    module = importlib.import_module(home)
    value = module if home == f"relanon.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
