"""Many tables: the top-down run, the links between anonymized tables, the scenario views, the release."""

from relanon.multitable.pipeline import AnonymizationResult, anonymize
from relanon.multitable.release import write_release

__all__ = ["AnonymizationResult", "anonymize", "write_release"]
