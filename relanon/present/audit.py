"""The audit report as JSON-ready data and as terminal text (the audit itself computes, this module renders)."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pandas as pd

from relanon.audit.database import SYNTHETIC_NOTE, AuditReport, ViewAudit
from relanon.common.exact import CONTAINERS

SHOWN_CLASSES = 20
"""How many violating classes :func:`audit_dict` lists per check."""

# --------------------------------------------------------------------------- rendering


def _json_value(value):
    if value is None or (not isinstance(value, CONTAINERS) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp | datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    return str(value)


def _records(frame: pd.DataFrame, limit: int) -> list[dict]:
    head = frame.head(limit)
    return [{str(c): _json_value(v) for c, v in zip(head.columns, row, strict=True)} for row in head.itertuples(index=False)]


def _view_dict(view: ViewAudit, failures: list[str], max_classes: int) -> dict:
    out = {
        "view": view.name,
        "table": view.table,
        "scenario": view.scenario,
        "related": view.related,
        "via": view.via,
        "quasi_identifiers": list(view.quasi_identifiers),
        "gating": view.gating,
        "synthetic": view.synthetic,
        "passed": not failures,
        "failures": failures,
    }
    ka, risk = view.k_anonymity, view.risk
    if ka is not None:
        out["k_anonymity"] = {
            "satisfies": ka.satisfies,
            "k": ka.k,
            "min_class_size": ka.min_class_size,
            "n_classes": ka.n_classes,
            "n_violations": ka.n_violations,
            "summary": ka.summary,
            "violating_classes": _records(ka.violating_classes, max_classes),
        }
    if risk is not None:
        out["risk"] = {
            "n_records": risk.n_records,
            "max_risk": risk.max_risk,
            "average_risk": risk.average_risk,
            "unique_share": risk.unique_share,
            "class_sizes": _records(risk.class_sizes, len(risk.class_sizes)),
        }
    out["l_diversity"] = {
        name: {
            "per": list(d.quasi_identifiers),
            "l": d.l,
            "satisfies": d.satisfies,
            "satisfies_distinct": d.satisfies_distinct,
            "frequency_l": d.frequency_l,
            "distinct_l": d.distinct_l,
            "max_share": d.max_share,
            "n_classes": d.n_classes,
            "n_violations": d.n_violations,
            "summary": d.summary,
            "violating_classes": _records(d.violating_classes, max_classes),
        }
        for name, d in view.l_diversity.items()
    }
    return out


def audit_dict(report: AuditReport, max_classes: int = SHOWN_CLASSES) -> dict:
    """The audit report as plain JSON-ready data (at most ``max_classes`` violating classes per check).

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.audit import audit_database
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "columns": {"sex": "categorical"}, "quasi_identifiers": ["sex"]}}})
    >>> people = pd.DataFrame({"id": range(4), "sex": ["F", "F", "F", "M"]})
    >>> data = audit_dict(audit_database(schema, {"people": people}, k=2))
    >>> data["views"][0]["k_anonymity"]["min_class_size"], data["views"][0]["failures"]
    (1, ['k=2: VIOLATED (min class size=1; 1/2 classes below threshold)'])
    """
    misses = report.misses
    return {
        "thresholds": {"k": report.k, "l": report.l, "max_risk": report.max_risk},
        "passed": report.passed,
        "audited": report.audited,
        "not_audited": report.not_audited,
        "views": [_view_dict(view, misses.get(view.name, []), max_classes) for view in report.views],
    }


def audit_text(report: AuditReport, max_classes: int = 5) -> str:
    """Readable tables: one line per table and view, then the details of what failed."""
    failures = report.misses
    rules = [f"k={report.k}"]
    rules.append(f"l={report.l} (frequency-based)" if report.l is not None else "l not required")
    rules.append(f"max risk={report.max_risk:.2%}" if report.max_risk is not None else "max risk not required")
    header = ["view", "records", "classes", "min class", "max risk", "avg risk", "unique", "l", "result"]
    rows, tables = [], []
    for view in report.views:
        if view.table not in tables:
            tables.append(view.table)
            rows.append((view.table,))
        ka, risk = view.k_anonymity, view.risk
        ls = [f"{name}={d.frequency_l}" for name, d in view.l_diversity.items()]
        rows.append(
            (
                "  " + view.name,
                str(risk.n_records) if risk else "-",
                str(ka.n_classes) if ka else "-",
                str(ka.min_class_size) if ka and ka.min_class_size is not None else "-",
                f"{risk.max_risk:.2%}" if risk else "-",
                f"{risk.average_risk:.2%}" if risk else "-",
                f"{risk.unique_share:.2%}" if risk else "-",
                " ".join(ls) if ls else "-",
                ("FAILED" if view.gating else "info") if view.name in failures else
                ("info" if view.synthetic else "passed"),
            )
        )
    widths = [max([len(header[i])] + [len(r[i]) for r in rows if len(r) > 1]) for i in range(len(header))]
    lines = [f"relanon audit: {', '.join(rules)}", ""]
    lines.append("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    for row in rows:
        if len(row) == 1:
            lines.append(row[0])
        else:
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    lines.append("")
    lines.append("l: per sensitive column, the largest l for which no value covers more than 1/l of a class")
    if any(not view.gating and not view.synthetic for view in report.views):
        lines.append("info: the table is not individual (its rows are not people): shown, not required")
    if any(view.synthetic for view in report.views):
        synthetic = sorted({view.table for view in report.views if view.synthetic})
        lines.append(f"info ({', '.join(synthetic)}): {SYNTHETIC_NOTE}")
    for view in report.views:
        if view.name not in failures:
            continue
        reading = "misses the thresholds (information only: synthetic records)" if view.synthetic else \
            "misses the thresholds (information only)"
        lines += ["", f"{view.name} {'FAILED' if view.gating else reading}:"]
        lines += [f"  - {reason}" for reason in failures[view.name]]
        shown = []
        if view.k_anonymity is not None and not view.k_anonymity.satisfies:
            shown.append(("classes below k", view.k_anonymity.violating_classes, view.k_anonymity.n_violations))
        if report.l is not None:
            shown += [(f"classes not {d.l}-diverse in {name}", d.violating_classes, d.n_violations) for name, d in view.l_diversity.items() if not d.satisfies]
        for title, frame, total in shown:
            more = f", first {max_classes}" if total > max_classes else ""
            lines.append(f"  {title} ({total}{more}):")
            lines += ["    " + line for line in frame.head(max_classes).to_string(index=False).splitlines()]
    n_fail = sum(1 for name in failures if report.is_gating(name))
    verdict = "PASSED" if not n_fail else f"FAILED ({n_fail} of {len(report.views)} views fail)"
    if not report.audited:  # never PASSED when no person was audited
        verdict = f"NOTHING AUDITED: {report.not_audited}"
    lines += ["", f"Result: {verdict}"]
    return "\n".join(lines)
