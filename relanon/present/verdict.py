"""The verdict in words: what failed, with figures that show why.

:func:`verdict_text` is what ``relanon anonymize``, ``demo`` and ``evaluate`` print at the end: both
summary matrices, then one line per measure that misses its target, then where the report is. The
lines come from :func:`relanon.metrics.failures.failures`, the list the report's verdict shows too,
so the terminal and the report name the same failures.

Figures are compared with their targets before rounding (the decision is the metric's own); they
are then shown with as many digits as it takes for the printed value to sit on the same side of the
printed target as the true one: ``0.1996 < 0.2``, never ``0.200 < 0.2``.
"""

from __future__ import annotations

import math
import re
import textwrap

import pandas as pd

from relanon.metrics.base import HIGHER
from relanon.metrics.failures import Failure, failures

__all__ = ["NO_PRIVACY", "failure_lines", "failure_text", "figure", "no_privacy_measured", "nothing_measured",
           "too_small_lines", "verdict_text", "view_label"]

NO_PRIVACY = ("no table is individual (`individual: true`), so no privacy measure was computed: mark the tables whose "
              "rows are people the release protects with `individual: true` (docs/guide/schema-file.md)")
"""Said instead of the privacy matrix, and instead of "every measure meets its target", when no table is individual."""

# Metrics read as percentages
PERCENT_METRICS = frozenset({
    "hidden_rate", "row_direct_match_protection", "column_direct_match_protection", "correlation_difference_ratio",
    "impossible_combinations", "impossible_pairs",
    "inference_categorical", "inference_continuous", "referential_integrity", "closer_to_training",
})
MAX_DIGITS = 15
COUNT_METRICS = frozenset({"rows_breaking_rule"})
"""Metrics that count rows, shown as whole numbers."""


def verdict_text(evaluation, report=None) -> str:
    """The end of a run in the terminal: the matrices, each failing measure, the report's location.

    Examples
    --------
    >>> import pandas as pd
    >>> from relanon.metrics.scenarios import evaluate
    >>> from relanon.schema.model import load_schema
    >>> schema = load_schema({"relanon": 1, "tables": {"people": {
    ...     "primary_key": "id", "individual": True, "columns": {"age": "integer", "sex": "categorical"}}}})
    >>> people = {"people": pd.DataFrame({"id": range(30), "age": range(30), "sex": ["F", "M", "M"] * 10})}
    >>> print(verdict_text(evaluate(schema, people, people, progress=False)).splitlines()[-2:])
    ['1 measure misses its target:', '  people: row direct match protection 0.0 % < 90 % (target)']
    """
    lines = [privacy_matrix_text(evaluation), "", signal_matrix_text(evaluation), "", *failure_lines(evaluation)]
    if report is not None:
        lines.append(f"report: {report}")
    return "\n".join(_wrapped("\n".join(lines).splitlines()))


def _wrapped(lines) -> list[str]:
    """Lines no wider than :data:`MAX_WIDTH`, a long one continued on indented lines (a matrix row never is)."""
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out += textwrap.wrap(line, MAX_WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [""]
    return out


def failure_lines(evaluation, kinds=None) -> list[str]:
    """A count, then one indented line per failing measure (of ``kinds`` only: ``("privacy",)``...)."""
    failed = [f for f in failures(evaluation) if kinds is None or f.kind in kinds]
    unmeasured = no_privacy_measured(evaluation) and (kinds is None or "privacy" in kinds)
    said = [NO_PRIVACY] if unmeasured else []  # never "every measure meets its target" when privacy was not measured
    if kinds is not None and unmeasured:
        kinds = [kind for kind in kinds if kind != "privacy"]
        if not kinds:
            return said
    if kinds is None or "signal" in kinds:
        said += too_small_lines(evaluation)
    what = "measure" if kinds is None else f"{' and '.join(kinds)} measure"
    if not failed and nothing_measured(evaluation):
        return [*said, f"no {what} could be computed (the tables are empty, or too small): nothing is shown"]
    if not failed:
        return [*said, f"every {'other ' if unmeasured and kinds is None else ''}{what} meets its target"]
    head = f"1 {what} misses its target:" if len(failed) == 1 else f"{len(failed)} {what}s miss their targets:"
    return [*said, head, *(f"  {failure_text(f)}" for f in failed)]


def nothing_measured(evaluation) -> bool:
    """True when no cell of the privacy and signal matrices holds a figure."""
    return all(frame is None or frame.isna().all().all()
               for frame in (evaluation.privacy_matrix, evaluation.signal_matrix))


def too_small_lines(evaluation) -> list[str]:
    """One line per view too small to judge: its distributions are shown, neither passed nor failed
    (:data:`relanon.metrics.columns.TOO_SMALL_FLOOR`)."""
    found = [f"{view}: hellinger mean {metric.value:.3g}, noise floor {metric.floor:.2f}"
             for kind, view, metric in evaluation.metrics
             if kind == "signal" and metric.name == "hellinger_mean" and metric.breakdown.get("too_small")]
    if not found:
        return []
    return ["too few rows to judge (two halves of the original differ more than a release may; not passed):",
            *(f"  {line}" for line in found)]


def no_privacy_measured(evaluation) -> bool:
    """True when the privacy matrix has no row: no table is individual, so no privacy measure exists."""
    return len(evaluation.privacy_matrix.index) == 0


def failure_text(failure: Failure) -> str:
    """One failing measure in a line: where, what, its value against its target (and noise floor).

    Examples
    --------
    >>> print(failure_text(Failure("privacy", "TO_TOP_ENRICHED(patients, visits)", "patients", "visits",
    ...                            "distance_to_closest", 0.04, 0.2, "higher")))
    patients x visits: distance to closest 0.0400 < 0.2 (target)
    >>> print(failure_text(Failure("signal", "STANDALONE(doctors)", "doctors", "doctors", "hellinger_mean",
    ...                            0.10004, 0.1, "lower")))
    doctors: hellinger mean 0.10004 > 0.1 (target)
    >>> print(failure_text(Failure("signal", "STANDALONE(doctors)", "doctors", "doctors", "hellinger_mean",
    ...                            0.203, 0.1, "lower", bound=0.156, floor=0.118)))
    doctors: hellinger mean 0.203 > 0.1 (target), and beyond sampling noise: passes up to 0.156 (noise floor 0.118)
    """
    name = failure.metric.replace("_", " ")
    unit = " %" if failure.metric in PERCENT_METRICS else ""
    value, target = figure(failure.value, failure.target)
    if failure.metric in COUNT_METRICS:  # rows: whole numbers
        value, target = f"{int(failure.value):,}", f"{int(failure.target):,}"
    sign = "<" if failure.value < failure.target else ">" if failure.value > failure.target else "="
    wanted = "" if sign != "=" else f", must be {'above' if failure.direction == HIGHER else 'below'}"
    text = f"{view_label(failure)}: {name} {value}{unit} {sign} {target}{unit} (target{wanted})"
    if failure.bound is not None:
        bound, _ = figure(failure.bound, failure.value)
        side = "down to" if failure.direction == HIGHER else "up to"
        floor = f" (noise floor {_fixed(failure.floor, _decimals(bound))})" if failure.floor is not None else ""
        text += f", and beyond sampling noise: passes {side} {bound}{unit}{floor}"
    return text


def view_label(failure: Failure) -> str:
    """``patients`` for a table alone, ``patients x visits`` across a link, the link itself for a link."""
    if failure.kind == "link":
        return failure.view
    via = re.search(r" via (\S+)\)$", failure.view)
    column = f".{failure.column}" if failure.column else ""
    if failure.table == failure.reference:
        return failure.table + column
    return f"{failure.table}{column} x {failure.reference}" + (f" (via {via.group(1)})" if via else "")


def figure(value: float, target: float) -> tuple[str, str]:
    """``value`` and ``target`` as text, ``value`` with the fewest digits (at least 3 significant)
    that keep it on its own side of the target.

    Examples
    --------
    >>> figure(0.19996, 0.2), figure(97.23, 90.0), figure(0.2, 0.2), figure(12345.6, 10.0)
    (('0.19996', '0.2'), ('97.2', '90'), ('0.200', '0.2'), ('12346', '10'))
    """
    target_text = f"{target:g}"
    if value is None or math.isnan(value):
        return "NaN", target_text
    truth = _side(value, target)
    for digits in range(3, MAX_DIGITS + 1):
        text = _significant(value, digits)
        if _side(float(text), target) == truth:
            return text, target_text
    return repr(float(value)), target_text


def _side(value: float, target: float) -> int:
    return (value > target) - (value < target)


def _significant(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits, in fixed notation for everyday magnitudes."""
    if value == 0 or not math.isfinite(value):
        return f"{value:.1f}" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    if not -5 <= magnitude < 12:
        return f"{value:.{digits - 1}e}"
    return _fixed(value, max(0, digits - 1 - magnitude))


def _fixed(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def privacy_matrix_text(evaluation) -> str:
    """The privacy summary matrix as text, failing cells marked with ``!``."""
    if no_privacy_measured(evaluation):
        return "privacy: not measured (no table is individual)"
    headline = evaluation.privacy_headline
    title = "hidden rate %" if headline == "hidden_rate" else "distance to closest"
    return _matrix_text(
        f"privacy ({title}; ! = a privacy metric of the scenario misses its target)",
        evaluation.privacy_matrix, evaluation.privacy_passed, "{:.1f}" if headline == "hidden_rate" else "{:.3f}",
    )


def signal_matrix_text(evaluation) -> str:
    """The signal summary matrix as text, failing cells marked with ``!``, ``n/a`` where nothing applies."""
    return _matrix_text(
        "signal (diagonal and parent->child: Hellinger mean, lower is better; child->parent: link fidelity, "
        "1 = as in the original; ! = a signal metric misses its target)",
        evaluation.signal_matrix, evaluation.signal_passed, "{:.3g}",
    )


MAX_WIDTH = 120
"""Widest line of a terminal matrix: beyond it, columns are named by short labels explained in a legend."""


def _matrix_text(title: str, values: pd.DataFrame, passed: pd.DataFrame, fmt: str) -> str:
    # every row (a table without a figure says so), only the columns holding a cell: 11 tables have few per row
    held = values.notna() | passed.notna()
    values = values.loc[:, held.any(axis=0)] if held.to_numpy().any() else values
    passed = passed.loc[values.index, values.columns]
    names = {c: str(c) for c in values.columns}
    legend = ""
    cell = max([len(fmt.format(v)) + 1 for v in values.to_numpy().ravel() if not pd.isna(v)] + [3])
    if _matrix_width(values, names, cell) > MAX_WIDTH:
        names = {c: f"T{i}" for i, c in enumerate(values.columns, start=1)}
        legend = "columns: " + ", ".join(f"{names[c]} {c}" for c in values.columns)
    width = max([len(n) for n in names.values()] + [cell, 8 if not legend else 0]) + 2
    label = max([len(str(i)) for i in values.index] + [5]) + 2
    lines = [title, " " * label + "".join(f"{names[c]:>{width}}" for c in values.columns)]
    not_applicable = False
    for row in values.index:
        cells = []
        for column in values.columns:
            value = values.loc[row, column]
            if pd.isna(value):
                # a scenario measured with no figure (too few rows, a single parent) is not applicable
                measured = not pd.isna(passed.loc[row, column])
                not_applicable |= measured
                cells.append(f"{'n/a' if measured else '.':>{width}}")
            else:
                flag = passed.loc[row, column]
                mark = "!" if not pd.isna(flag) and not bool(flag) else " "
                cells.append(f"{fmt.format(value) + mark:>{width}}")
        lines.append(f"{row:<{label}}" + "".join(cells))
    if not_applicable:
        lines.append("n/a = not applicable: nothing to compare (a table or view of fewer than 4 rows, a single parent)")
    if legend:
        lines += textwrap.wrap(legend, MAX_WIDTH, subsequent_indent="  ")
    return "\n".join(lines)


def _matrix_width(values: pd.DataFrame, names: dict, cell: int) -> int:
    width = max([len(n) for n in names.values()] + [cell, 8]) + 2
    return max([len(str(i)) for i in values.index] + [5]) + 2 + width * len(names)
