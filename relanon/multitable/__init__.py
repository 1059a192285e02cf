"""Many tables: the top-down run, the links between anonymized tables, the scenario views, the release."""

from relanon.multitable.pipeline import anonymize
from relanon.multitable.release import write_release
from relanon.multitable.results import AnonymizationResult, LinkReport, TableRelease

__all__ = ["AnonymizationResult", "LinkReport", "TableRelease", "anonymize", "write_release"]
