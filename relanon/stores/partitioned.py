"""Partitioned Parquet databases: one directory of Parquet files per table, as Dask and Spark write them.

A database is a folder; each table is a directory named after it (its schema ``source``) holding
``.parquet`` files (``part.0.parquet``, ``part-00000-<uuid>.snappy.parquet``...), possibly below
Hive-style subdirectories (``year=2024/``), whose values become a column. Files whose name starts with
``_`` or ``.`` (``_SUCCESS``, ``_metadata``, ``.crc`` checksums) are ignored. A table may also be a single
``<source>.parquet`` file. Files are read in the natural order of their paths (``part.2`` before
``part.10``), so the rows of a table always come in the same order.

Each file is one *part*; a file of more than :data:`PART_ROWS` rows is cut into parts along its row
groups. Every part is read on its own (:func:`read_part`), so no machine ever holds a whole table:
the Dask engine reads the parts on its workers. :func:`write_part` writes one part of a release as
``part.00000.parquet`` (five digits, so that every reader lists them in order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from relanon.common.errors import StorageError
from relanon.schema.text_formats import without_formats
from relanon.stores.base import reason

PART_ROWS = 1_000_000
"""Most rows of one part: a larger file is read in several parts, along its row groups."""

SUFFIX = ".parquet"
_IGNORED = (".", "_")


@dataclass(frozen=True)
class Part:
    """One piece of a table: a Parquet file, or some of its row groups."""

    path: str
    rows: int
    row_groups: tuple[int, ...] | None = None  # None: the whole file
    keys: tuple[tuple[str, object], ...] = ()  # Hive partition values of its directory


def natural_key(text: str) -> list:
    """Sort key putting ``part.2`` before ``part.10``.

    Examples
    --------
    >>> sorted(["part.10.parquet", "part.2.parquet"], key=natural_key)
    ['part.2.parquet', 'part.10.parquet']
    """
    return [int(piece) if piece.isdigit() else piece for piece in re.split(r"(\d+)", text)]


def table_location(folder, source: str) -> Path | None:
    """Where table ``source`` lies in ``folder``: its directory, its ``.parquet`` file, or None."""
    base = Path(folder)
    for candidate in (base / source, base / f"{source}{SUFFIX}"):
        if candidate.is_dir() and _has_parquet(candidate) or candidate.is_file():
            return candidate
    return None


def table_names(folder) -> list[str]:
    """The tables of a partitioned folder: directories holding Parquet files, and ``.parquet`` files."""
    base = Path(folder)
    try:
        entries = sorted(base.iterdir(), key=lambda p: natural_key(p.name))
    except OSError as exc:
        raise StorageError(f"cannot list the folder {str(base)!r}: {reason(exc)}") from None
    names = []
    for entry in entries:
        if entry.name.startswith(_IGNORED):
            continue
        if entry.is_dir() and _has_parquet(entry):
            names.append(entry.name)
        elif entry.is_file() and entry.suffix.lower() == SUFFIX:
            names.append(entry.name[: -len(SUFFIX)])
    return names


def is_partitioned(folder) -> bool:
    """Whether ``folder`` holds at least one table as a directory of Parquet files."""
    base = Path(folder)
    return base.is_dir() and any(e.is_dir() and not e.name.startswith(_IGNORED) and _has_parquet(e)
                                 for e in base.iterdir())


def list_parts(location, *, part_rows: int = PART_ROWS) -> list[Part]:
    """The parts of a table (a directory or a file), in the order its rows are read."""
    path = Path(location)
    try:
        dataset = ds.dataset(str(path), format="parquet", partitioning="hive" if path.is_dir() else None)
        fragments = sorted(dataset.get_fragments(), key=lambda f: natural_key(f.path))
        parts = []
        for fragment in fragments:
            keys = tuple(sorted(ds.get_partition_keys(fragment.partition_expression).items()))
            metadata = fragment.metadata
            if metadata.num_rows <= part_rows or metadata.num_row_groups <= 1:
                parts.append(Part(fragment.path, metadata.num_rows, None, keys))
                continue
            groups, rows = [], 0
            for group in range(metadata.num_row_groups):
                size = metadata.row_group(group).num_rows
                if groups and rows + size > part_rows:
                    parts.append(Part(fragment.path, rows, tuple(groups), keys))
                    groups, rows = [], 0
                groups.append(group)
                rows += size
            parts.append(Part(fragment.path, rows, tuple(groups), keys))
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise StorageError(f"cannot read the Parquet data set {str(path)!r}: {reason(exc)}") from exc
    return parts


def arrow_schema(location) -> pa.Schema:
    """The columns and types of a table (its files' schema, with Hive partition columns)."""
    path = Path(location)
    try:
        return ds.dataset(str(path), format="parquet", partitioning="hive" if path.is_dir() else None).schema
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise StorageError(f"cannot read the Parquet data set {str(path)!r}: {reason(exc)}") from exc


def read_part(part: Part, columns=None, schema: pa.Schema | None = None) -> pd.DataFrame:
    """One part as a DataFrame, with pandas' usual dtypes (those of :func:`pandas.read_parquet`).

    ``schema`` (the table's, from :func:`arrow_schema`) gives the types of the partition columns.
    """
    keys = dict(part.keys)
    wanted = None if columns is None else [c for c in columns if c not in keys]
    try:
        file = pq.ParquetFile(part.path)
        table = file.read(columns=wanted) if part.row_groups is None else file.read_row_groups(part.row_groups, columns=wanted)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise StorageError(f"cannot read {part.path!r}: {reason(exc)}") from exc
    for name, value in keys.items():
        if columns is not None and name not in columns:
            continue
        kind = schema.field(name).type if schema is not None and name in schema.names else None
        table = table.append_column(name, pa.array([value] * table.num_rows, type=kind))
    frame = table.to_pandas()
    return frame if columns is None else frame[[c for c in columns if c in frame.columns]]


def read_table(location, columns=None) -> pd.DataFrame:
    """A whole table (every part, in order) in memory: for tables that fit on one machine."""
    schema = arrow_schema(location)
    parts = [read_part(part, columns, schema) for part in list_parts(location)]
    if not parts:
        return schema.empty_table().to_pandas()
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def part_name(index: int) -> str:
    """The file name of part ``index`` of a release table.

    Examples
    --------
    >>> part_name(7)
    'part.00007.parquet'
    """
    return f"part.{index:05d}{SUFFIX}"


def write_part(frame: pd.DataFrame, folder, index: int) -> Path:
    """Write ``frame`` as part ``index`` of the table directory ``folder`` (made if missing)."""
    target = Path(folder) / part_name(index)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        without_formats(frame).to_parquet(target, engine="pyarrow", index=False)
    except (ValueError, TypeError, OSError, pa.ArrowException) as exc:
        raise StorageError(f"cannot write {str(target)!r}: {reason(exc)}") from exc
    return target


def _has_parquet(directory: Path) -> bool:
    try:
        for entry in directory.rglob(f"*{SUFFIX}"):
            relative = entry.relative_to(directory).parts
            if entry.is_file() and not any(piece.startswith(_IGNORED) for piece in relative):
                return True
    except OSError:
        return False
    return False
