"""Many tables: the top-down run, the links between anonymized tables, the scenario views, the release."""

from relanon.multitable.pipeline import AnonymizationResult, LinkReport, TableRelease, anonymize
from relanon.multitable.release import write_release

__all__ = ["AnonymizationResult", "LinkReport", "TableRelease", "anonymize", "write_release"]
