"""Databases kept as a folder of files: one CSV or Parquet file per table (or, for Parquet, one
directory of parts per table, as Dask and Spark write them).

Reading: the separator guessed from the header, every cell as text when the schema types the
table. Writing: each column as the input wrote it when its format was learned at reading
(:mod:`relanon.schema.text_formats`: ``Y``/``N``, ``31/12/2020``, ``2013-01-01T11:00:00Z``,
``7.0``), else booleans as ``true``/``false``, floats in their shortest exact form; the whole
folder atomically with ``release.json`` written last.
"""

from __future__ import annotations

import contextlib
import csv
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from relanon.common.atomic import atomic_directory
from relanon.common.errors import StorageError
from relanon.schema.text_formats import as_text, float_text, formats_of, without_formats
from relanon.schema.validation import MISSING_MARKERS
from relanon.stores.base import MAX_CELL_CHARS, MAX_COLUMNS, Store, reason, refuse_long_cells
from relanon.stores.fingerprints import file_fingerprint, with_fingerprints
from relanon.stores.outputs import NOTES_FILE
from relanon.stores.partitioned import read_table, table_location
from relanon.stores.partitioned import table_names as partitioned_names

FOLDER_SUFFIX = {"csv": ".csv", "parquet": ".parquet"}
_SEPARATORS = (",", ";", "\t", "|")
_STR_DTYPES = {pa.string(): pd.StringDtype("pyarrow", na_value=np.nan)}
_MARKER_SPELLINGS = sorted({form for marker in MISSING_MARKERS for form in (marker, marker.lower(), marker.upper())})


class FolderStore(Store):
    """A folder holding one ``<name>.csv`` (or ``<name>.parquet``) file per table, or, for Parquet, one
    directory of Parquet files per table (:mod:`relanon.stores.partitioned`)."""

    def __init__(self, location, fmt: str):
        super().__init__(location)
        self.format, self.suffix = fmt, FOLDER_SUFFIX[fmt]
        path = Path(location)
        if not path.is_dir():
            what = "nothing" if not path.exists() else "a file"
            raise StorageError(
                f"cannot read {fmt.upper()} tables from {str(path)!r}: {what} is there, "
                f"a folder holding one {self.suffix} file per table is expected"
            )
        self.files = {file.name[: -len(self.suffix)]: file for file in files_with(path, self.suffix)}
        if fmt == "parquet":
            for name in partitioned_names(path):
                self.files.setdefault(name, table_location(path, name))

    def names(self) -> list[str]:
        return sorted(self.files)

    def looked_for(self, name: str) -> str:
        return f"file {name + self.suffix!r}"

    def read(self, name: str, *, typed: bool) -> pd.DataFrame:
        path = self.files[name]
        try:
            if self.format == "parquet" and path.is_dir():
                return refuse_long_cells(read_table(path))
            if self.format == "parquet":
                return refuse_long_cells(pd.read_parquet(path, engine="pyarrow"))
            return refuse_long_cells(read_csv(path, typed=typed))
        except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            raise StorageError(f"cannot read {str(path)!r}: {reason(exc)}") from exc


def read_csv(path: Path, *, typed: bool) -> pd.DataFrame:
    # index_col=False: a row longer than the header must not silently turn the first column
    # into an index and shift every value; pandas warns instead, and the warning is an error here
    options = dict(sep=_separator(path), encoding="utf-8-sig", index_col=False)
    _check_header(path, options["sep"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            if typed:
                # every cell as text: the schema, not pandas, decides what a value is
                return pd.read_csv(path, dtype="str", keep_default_na=False, na_filter=False, **options)
            return pd.read_csv(path, keep_default_na=False, na_values=_MARKER_SPELLINGS, **options)
        except pd.errors.ParserWarning:
            raise ValueError("a row has more fields than the header line") from None


def _check_header(path: Path, sep: str) -> None:
    """Refuse an empty file, and a header naming a column twice: pandas would rename the second
    ``name.1``, and the schema would be told of a column the file does not have. One pass over the
    header, whatever its number of columns; a header field longer than :data:`MAX_CELL_CHARS` is refused."""
    with open(path, encoding="utf-8-sig", newline="") as file, _field_limit(MAX_CELL_CHARS):
        try:
            header = next(csv.reader(file, delimiter=sep), [])
        except csv.Error as exc:
            if "field limit" not in str(exc):
                raise ValueError(f"the header line cannot be read ({exc})") from None
            raise ValueError(f"a field of the header line is longer than {MAX_CELL_CHARS:,} characters, the "
                             "longest cell relanon reads; shorten the column names") from None
    if not header:
        raise ValueError("the file is empty; a table needs at least its header line (the names of its columns)")
    if len(header) > MAX_COLUMNS:
        raise ValueError(f"the header line names {len(header):,} columns, more than the {MAX_COLUMNS:,} a table may "
                         "have; keep the columns to anonymize (split the table, or remove the others first)")
    counts = Counter(header)
    twice = sorted(name for name, count in counts.items() if name and count > 1)  # empty ones: Unnamed: n
    if twice:
        names = ", ".join(repr(name) for name in twice)
        raise ValueError(f"the header line names {'columns' if len(twice) > 1 else 'column'} {names} more than once; "
                         "give each column its own name")


@contextlib.contextmanager
def _field_limit(limit: int):
    """The csv module's longest field (process-wide, 128 KiB by default) raised to ``limit`` for a block."""
    previous = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _separator(path: Path) -> str:
    """The separator of a CSV file, guessed from its header line (commas unless clearly not)."""
    with open(path, encoding="utf-8-sig", errors="replace") as file:
        header = file.readline()
    counts = {sep: header.count(sep) for sep in _SEPARATORS}
    best = max(counts, key=counts.get)
    return best if counts[best] > counts[","] else ","


def write_folder(tables: dict[str, pd.DataFrame], path: Path, fmt: str, files: dict[str, str]) -> None:
    suffix = FOLDER_SUFFIX[fmt]
    clashes = sorted(set(files) & {f"{name}{suffix}" for name in tables})
    if clashes or any(Path(name).name != name or name.startswith(".") for name in files):
        raise StorageError(f"cannot write the notes {sorted(files)} beside the tables; rename them")
    files = dict(files)
    with atomic_directory(path) as tmp:
        fingerprints = {}
        for name, frame in tables.items():
            target = tmp / f"{name}{suffix}"
            try:
                if fmt == "parquet":
                    without_formats(frame).to_parquet(target, engine="pyarrow", index=False)
                else:
                    _as_csv_text(frame).to_csv(target, index=False, encoding="utf-8", lineterminator="\n")
                fingerprints[name] = file_fingerprint(target, len(frame))
            except (ValueError, TypeError, OSError) as exc:
                raise StorageError(f"cannot write table {name!r} as {fmt.upper()} to {str(path)!r}: {reason(exc)}") from exc
        if NOTES_FILE in files:  # the release notes vouch for these very files (relanon audit checks them)
            files[NOTES_FILE] = with_fingerprints(files[NOTES_FILE], fingerprints)
        # the notes last, release.json the very last: a folder holding it is complete
        for name in sorted(files, key=lambda n: n == NOTES_FILE):
            try:
                (tmp / name).write_text(files[name], encoding="utf-8")
            except OSError as exc:
                raise StorageError(f"cannot write {name!r} in {str(path)!r}: {reason(exc)}") from exc


def _as_csv_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Each column in the format the input wrote it (:mod:`relanon.schema.text_formats`), else
    booleans as ``true``/``false``, floats in their shortest exact form; pandas writes the rest well."""
    formats = formats_of(frame)
    changes = {}
    for position, (column, dtype) in enumerate(frame.dtypes.items()):
        values = frame.iloc[:, position]
        spec = formats.get(column)
        text = as_text(values, spec) if spec is not None else None
        if text is not None:
            changes[column] = text
        elif pd.api.types.is_bool_dtype(dtype):
            changes[column] = _boolean_words(values)
        elif pd.api.types.is_float_dtype(dtype):
            changes[column] = float_text(values, _shortest_text(values), spec)
    return frame.assign(**changes) if changes else frame


def _boolean_words(values: pd.Series) -> pd.Series:
    words = np.where(values.fillna(False).to_numpy(dtype=bool), "true", "false")
    return pd.Series(words, index=values.index, dtype="str").where(values.notna())


def _shortest_text(values: pd.Series) -> pd.Series:
    """Floats as the shortest text that reads back exactly (``0.1``, ``1e+20``, ``inf``).

    pyarrow formats them ten times faster than ``to_csv``; missing values stay missing.
    """
    text = pc.cast(pa.array(values, from_pandas=True, type=pa.float64()), pa.string())
    return pd.Series(text.to_pandas(types_mapper=_STR_DTYPES.get), index=values.index)


def files_with(folder: Path, suffix: str) -> list[Path]:
    try:
        return sorted(
            p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == suffix and not p.name.startswith(".")
        )
    except OSError as exc:
        raise StorageError(f"cannot list the folder {str(folder)!r}: {reason(exc)}") from None
