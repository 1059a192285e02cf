"""The release report: one self-contained HTML page, and the metrics as JSON.

The page is for the people who decide whether a release goes out. It opens offline (inline CSS,
pictures as base64 PNG data URIs, no script, no font, no link to fetch) and shows, top down:

- a warning banner listing the choices that weaken privacy (``original_order`` matching, ``protect_sensitive: false``);
- the verdict, the privacy of every individual table in words, and the summary matrices as coloured
  grids (green: every metric of the scenario meets its target, red: one misses, grey: no scenario);
- the links with the matching method each used, and the detailed metrics per table and scenario;
- the pictures people look at rather than read: per column, the original and anonymized
  distributions; per table, the correlation matrices side by side and the first two factor-space
  dimensions of originals and avatars overlaid; per link, the children-per-parent histograms;
- a glossary explaining every metric in one sentence.

The pictures show original data, so the report itself is never part of the release. They need
matplotlib (the ``report`` extra); without it the page is written without pictures and says so.
matplotlib is imported only when pictures are drawn, through its object-oriented API on the Agg
canvas: pyplot, its global figure list and the user's backend are never touched.
"""

from __future__ import annotations

import json
from pathlib import Path

from relanon.common.atomic import atomic_directory
from relanon.common.errors import ParameterError, StorageError
from relanon.common.progress import as_progress
from relanon.common.version import __version__
from relanon.metrics.evaluation import Evaluation
from relanon.present.attacks import attacks_section, risk_matrix_text, verdict_text
from relanon.present.charts import pictures_section
from relanon.present.sections import (
    contents,
    details_section,
    escape,
    glossary_section,
    links_section,
    privacy_section,
    sensitive_banner,
    signal_section,
    verdict_section,
)
from relanon.stores.outputs import FolderOutput, check_outputs, only_entries

REPORT_FILE = "report.html"
METRICS_FILE = "metrics.json"

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1280px;padding:0 1.5em 3em;color:#222;line-height:1.45}
h1{margin-top:1em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
.audience{background:#eef3fb;border-left:4px solid #4c72b0;padding:.6em 1em}
.banner{background:#fde2e1;border:2px solid #c0392b;padding:.6em 1em;margin:1em 0}
.banner strong{color:#a93226}
table{border-collapse:collapse;margin:.6em 0;display:block;max-width:100%;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.25em .55em;text-align:right;font-variant-numeric:tabular-nums}
th{background:#f5f5f5}th.row{text-align:left}td.text{text-align:left}
td.pass,span.pass{background:#c8e6c9}td.fail,span.fail{background:#f4b6b0}
td.inconclusive,span.inconclusive{background:#fff0b3}
td.na,span.na{background:#e4e4e4;color:#777}tr.sensitive td.text{background:#fde2e1;font-weight:600}
.legend span{display:inline-block;padding:.1em .6em;margin-right:.6em;border:1px solid #ccc}
.matrix td{min-width:4em;text-align:center}
.note{color:#555;font-size:.92em}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:.92em}
dt{font-weight:600;margin-top:.4em}dd{margin-left:1.5em}
"""


# --------------------------------------------------------------------------- public API


def render_html(evaluation, assessment=None, *, progress=False) -> str:
    """The release report of ``evaluation`` as one self-contained HTML document.

    Parameters
    ----------
    evaluation : Evaluation
        What :func:`relanon.metrics.scenarios.evaluate` returned. Its in-memory ``schema``,
        ``original`` and ``anonymized`` databases are needed for the pictures; without them (or
        without matplotlib) the report holds every figure but no picture, and says why.
    assessment : Assessment, optional
        What :func:`relanon.assess` returned: adds the attacks and their risk matrix.
    progress : bool or Progress, default False
        Show the drawing of the pictures as a step (a bar that advances by picture).

    Returns
    -------
    str
        The document. The same evaluation always gives the same text.

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.metrics.scenarios import evaluate
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "individual": True, "columns": {"age": "integer", "sex": "categorical"}}}})
    >>> people = {"people": pd.DataFrame({"id": range(30), "age": range(30), "sex": ["F", "M", "M"] * 10})}
    >>> page = render_html(evaluate(schema, people, people, progress=False))
    >>> page.startswith("<!DOCTYPE html>") and "people" in page
    True
    """
    if not isinstance(evaluation, Evaluation):
        raise ParameterError(
            "render_html expects the Evaluation returned by relanon.metrics.scenarios.evaluate, "
            f"got {type(evaluation).__name__}"
        )
    name = evaluation.schema.name if evaluation.schema is not None else None
    title = f"Release report: {name}" if name else "Release report"
    body = [
        f"<header><h1>{escape(title)}</h1>",
        ('<p class="audience">This report is for the people who decide whether the anonymized database '
        "may be released. It shows distributions of the <em>original</em> data: it is not itself part "
        "of the release and must not be published with it.</p></header>"),
        sensitive_banner(evaluation),
        contents(assessment is not None),
        verdict_section(evaluation),
        privacy_section(evaluation),
        attacks_section(assessment),
        signal_section(evaluation),
        links_section(evaluation),
        details_section(evaluation),
        pictures_section(evaluation, as_progress(progress)),
        glossary_section(evaluation),
        f'<footer class="note"><p>Made by relanon {escape(__version__)}.</p></footer>',
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body>\n</html>\n"
    )


def write_report(evaluation, folder, *, inputs=(), overwrite: bool = False, files=None, assessment=None) -> Path:
    """Write ``report.html`` and ``metrics.json`` into ``folder``, atomically.

    Parameters
    ----------
    evaluation : Evaluation
        What :func:`relanon.metrics.scenarios.evaluate` returned.
    folder : str or Path
        The report's folder. It is created, or replaced whole when it holds nothing but a
        previous report; a folder holding other files is refused unless ``overwrite``.
    inputs : iterable of paths
        Where the data came from: writing over or inside them is refused.
    overwrite : bool, default False
        Replace the folder whole even when it holds other files.
    files : mapping of str to str, optional
        The report's files as :func:`render_report` made them (rendered again when not given).
    assessment : Assessment, optional
        What :func:`relanon.assess` returned: the attacks join the page and ``metrics.json``.

    Returns
    -------
    Path
        The path of ``report.html``.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> from relanon.metrics.scenarios import evaluate
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "individual": True, "columns": {"age": "integer", "sex": "categorical"}}}})
    >>> people = {"people": pd.DataFrame({"id": range(30), "age": range(30), "sex": ["F", "M", "M"] * 10})}
    >>> folder = Path(tempfile.mkdtemp()) / "review"
    >>> write_report(evaluate(schema, people, people, progress=False), folder).name
    'report.html'
    >>> sorted(p.name for p in folder.iterdir())
    ['metrics.json', 'report.html']
    """
    folder = Path(folder)
    check_outputs([report_output(folder, overwrite=overwrite)], inputs)
    files = render_report(evaluation, assessment) if files is None else files
    with atomic_directory(folder) as tmp:
        for name, text in files.items():
            try:
                (tmp / name).write_text(text, encoding="utf-8")
            except OSError as exc:  # a full disk, a quota: say where, nothing is left half-written
                raise StorageError(f"cannot write the report {str(folder / name)!r}: {exc.strerror or exc}; "
                                   "free some space there, or give another folder (--report / --out)") from None
    return folder / REPORT_FILE


def render_report(evaluation, assessment=None, *, progress=False) -> dict[str, str]:
    """The report's files (file name -> text), rendered in memory: nothing is written.

    With an ``assessment`` (:func:`relanon.assess`), the page has an Attacks section and
    ``metrics.json`` holds the attacks under ``"assessment"``. ``progress`` shows the pictures
    being drawn (see :func:`render_html`).
    """
    metrics = evaluation.to_json() if assessment is None else json.dumps(
        {**evaluation.to_dict(), "assessment": {**assessment.to_dict(), "verdict": verdict_text(assessment).splitlines(),
                                                "risk_matrix_text": risk_matrix_text(assessment).splitlines()}},
        indent=2, default=str) + "\n"
    return {REPORT_FILE: render_html(evaluation, assessment, progress=progress), METRICS_FILE: metrics}


def report_output(folder, *, flag: str | None = None, overwrite: bool = False) -> FolderOutput:
    """The report folder as an output location: relanon's own when it holds only a report's files."""
    return FolderOutput(folder, own_entries=only_entries(REPORT_FILE, METRICS_FILE),
                        own="a report folder it made (report.html and metrics.json alone)",
                        what="the report", flag=flag, overwrite=overwrite)


