"""Presentation: the HTML report, terminal text and JSON. The only layer that formats.

- :mod:`~relanon.present.report`: the report's page and files (``report.html``, ``metrics.json``);
- :mod:`~relanon.present.sections` and :mod:`~relanon.present.charts`: what the page shows;
- :mod:`~relanon.present.verdict`, :mod:`~relanon.present.attacks`, :mod:`~relanon.present.audit`:
  terminal text (and JSON-ready data) of the evaluation, the attacks and the audit.
"""

from relanon.present.audit import audit_dict, audit_text
from relanon.present.charts import pictures
from relanon.present.report import render_html, render_report, write_report

__all__ = ["audit_dict", "audit_text", "pictures", "render_html", "render_report", "write_report"]
