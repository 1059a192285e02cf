"""Fingerprints of the tables of a release, written in its ``release.json`` and checked by ``relanon audit``.

``release.json`` says how each table was made (which tables hold synthetic records); the audit gates a
table on that. So that a ``release.json`` copied beside other data (the original records) or kept
beside a table changed after the release cannot vouch for them, it records under ``"written"`` a
fingerprint of every table as relanon wrote it, keyed by its name in the store:

- a table file of a folder (CSV, Parquet): ``{"file": "people.csv", "rows": 120, "sha256": ...}``,
  the SHA-256 of the file's bytes; a table stored as a directory of Parquet parts (Dask engine):
  ``{"file": "people", "rows": ..., "sha256": ...}``, over the parts' names and bytes;
- a table of a SQLite file or of a database server, where there are no file bytes:
  ``{"table": "people", "rows": 120, "content_sha256": ...}``, a digest of the rows as the database
  returns them (``SELECT *``: column names, then each row's values), independent of the row order.
  It is computed inside the writing transaction and again, the same way, by the audit.

Nothing in a fingerprint depends on the time or the place of the run: the same seed gives the same
``release.json``.
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import json
import math
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from relanon.stores.base import quoted
from relanon.stores.outputs import NOTES_FILE

FINGERPRINTS = "written"
"""The key of ``release.json`` holding the fingerprints (stored name -> fingerprint)."""

_CHUNK = 1 << 20
_MODULUS = 1 << 256
_FETCH_ROWS = 10_000


def file_fingerprint(path: Path, rows: int | None = None) -> dict:
    """The fingerprint of a table file (or of a directory of Parquet parts, over their names and bytes)."""
    digest = hashlib.sha256()
    if path.is_dir():
        for part in sorted(p for p in path.rglob("*") if p.is_file()):
            name = part.relative_to(path).as_posix().encode("utf-8")
            digest.update(len(name).to_bytes(8, "big") + name + part.stat().st_size.to_bytes(8, "big"))
            _hash_file(digest, part)
    else:
        _hash_file(digest, path)
    entry = {"file": path.name}
    if rows is not None:
        entry["rows"] = int(rows)
    entry["sha256"] = digest.hexdigest()
    return entry


def parquet_rows(path: Path) -> int:
    """The number of rows of a directory of Parquet parts (from their metadata)."""
    return sum(pq.ParquetFile(part).metadata.num_rows for part in sorted(path.rglob("*.parquet")) if part.is_file())


def _hash_file(digest, path: Path) -> None:
    with open(path, "rb") as file:
        while block := file.read(_CHUNK):
            digest.update(block)


def rows_fingerprint(name: str, columns, rows) -> dict:
    """The fingerprint of a database table from its column names and its rows (an iterable of batches
    of row tuples, as a driver fetches them): an order-independent digest of the rows."""
    total, count = 0, 0
    for batch in rows:
        for row in batch:
            text = json.dumps([_canonical(value) for value in row], ensure_ascii=False, separators=(",", ":"))
            total = (total + int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")) % _MODULUS
            count += 1
    header = json.dumps([str(c) for c in columns], ensure_ascii=False)
    content = hashlib.sha256(header.encode("utf-8") + b"\n" + count.to_bytes(8, "big") + total.to_bytes(32, "big"))
    return {"table": name, "rows": count, "content_sha256": content.hexdigest()}


def _canonical(value):
    """A driver's value as text that does not depend on the session (an aware time as UTC)."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return "datetime:" + value.astimezone(datetime.UTC).isoformat()
    if isinstance(value, float) and math.isnan(value):
        return "float:nan"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes:" + bytes(value).hex()
    if isinstance(value, decimal.Decimal):
        return "decimal:" + str(value)
    return f"{type(value).__name__}:{value!r}"


def sqlite_fingerprint(connection, name: str) -> dict:
    """The fingerprint of table ``name`` read through a ``sqlite3`` connection."""
    cursor = connection.execute(f"SELECT * FROM {quoted(name)}")
    columns = [d[0] for d in cursor.description or ()]
    return rows_fingerprint(name, columns, iter(lambda: cursor.fetchmany(_FETCH_ROWS), []))


def sql_fingerprint(sa, connection, name: str, schema: str | None) -> dict:
    """The fingerprint of table ``name`` read through a SQLAlchemy connection."""
    query = sa.select(sa.literal_column("*")).select_from(sa.table(name, schema=schema))
    result = connection.execute(query)
    columns = list(result.keys())
    return rows_fingerprint(name, columns, iter(lambda: result.fetchmany(_FETCH_ROWS), []))


def with_fingerprints(notes: str, fingerprints: dict[str, dict]) -> str:
    """The text of ``release.json`` with the fingerprints of the tables written (sorted by name)."""
    try:
        data = json.loads(notes)
    except ValueError:
        return notes
    if not isinstance(data, dict):  # not the notes relanon writes: left as given
        return notes
    data[FINGERPRINTS] = {name: fingerprints[name] for name in sorted(fingerprints)}
    return json.dumps(data, indent=2) + "\n"


def fingerprinted_notes(notes: pd.DataFrame, fingerprints: dict[str, dict]) -> pd.DataFrame:
    """The notes table of a database (``name``, ``content``) with the fingerprints in its ``release.json``."""
    content = [with_fingerprints(text, fingerprints) if name == NOTES_FILE else text
               for name, text in zip(notes["name"], notes["content"], strict=True)]
    return notes.assign(content=content)
