"""Presentation: the HTML report, terminal text and JSON. The only layer that formats."""

from relanon.present.report import write_report

__all__ = ["write_report"]
