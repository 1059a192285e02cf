"""Text cells that a spreadsheet would run as a formula, neutralized in CSV releases.

A cell of a CSV file that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by
spreadsheets (Excel, LibreOffice, Google Sheets) as a formula: ``=HYPERLINK(...)`` or ``+cmd|...`` in a
category value would run when the release is opened (CSV injection). As the OWASP guidance on CSV
injection recommends, such a cell of a text column is written with a single quote before it
(``'=HYPERLINK(...)``): a spreadsheet shows the text, and runs nothing. A cell that is a plain number
(``-12``, ``+3.5``, ``-1e-3``) is data, not a formula, and is kept as it is; so are the columns of
numbers, booleans and dates. :class:`~relanon.common.options.CsvFormulas` ``keep`` writes the cells raw.

Parquet, SQLite and database releases are not opened by spreadsheets as text, and are written as they are.
"""

from __future__ import annotations

import re

import pandas as pd

from relanon.common.options import CsvFormulas, check_option

__all__ = ["FORMULA_STARTS", "formula_cells", "neutralized"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def formula_cells(values: pd.Series) -> pd.Series:
    """Which cells of a text column a spreadsheet would read as a formula (missing ones never).

    Examples
    --------
    >>> formula_cells(pd.Series(["=SUM(A1)", "-12", "-x", "ok", None, "@cmd"])).tolist()
    [True, False, True, False, False, True]
    """
    text = values.astype(object)
    return text.map(lambda v: isinstance(v, str) and v.startswith(FORMULA_STARTS) and _NUMBER.fullmatch(v) is None
                    ).astype(bool)


def neutralized(tables: dict[str, pd.DataFrame], policy=CsvFormulas.NEUTRALIZE) -> tuple[dict, dict]:
    """The tables with every formula-like cell of their text columns prefixed with ``'`` (unless ``policy``
    is ``"keep"``: then as they are), and the number of such cells per ``table.column``. The tables
    given are never modified.

    Examples
    --------
    >>> tables, changed = neutralized({"t": pd.DataFrame({"city": ["=1+1", "Lyon"], "n": [-1, 2]})})
    >>> tables["t"]["city"].tolist(), changed
    (["'=1+1", 'Lyon'], {'t.city': 1})
    """
    keep = check_option(policy, CsvFormulas, "csv_formulas") == CsvFormulas.KEEP
    out, changed = {}, {}
    for name, frame in tables.items():
        changes = {}
        for position, dtype in enumerate(frame.dtypes):
            if not (dtype == object or isinstance(dtype, pd.StringDtype)):
                continue
            values = frame.iloc[:, position]
            found = formula_cells(values).to_numpy()
            if found.any():
                changed[f"{name}.{frame.columns[position]}"] = int(found.sum())
                if keep:
                    continue
                fixed = values.astype(object).copy()
                fixed[found] = "'" + fixed[found].astype(str)
                changes[position] = pd.Series(fixed, index=values.index, dtype=values.dtype)
        if changes:
            frame = frame.copy()
            for position, column in changes.items():
                frame.isetitem(position, column)
        out[name] = frame
    return out, changed
