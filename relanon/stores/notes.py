"""Reading back the notes relanon writes with a release (``release.json``...).

A folder holds them as files beside the tables; a SQLite file and a database schema in a server as
rows of the ``relanon_files`` table (``name``, ``content``). A database without notes (original data)
gives none.

:func:`check_release` reads which tables hold synthetic records *and* whether each table still is the
one relanon wrote (the fingerprints of :mod:`relanon.stores.fingerprints`): a ``release.json`` copied
beside other data, or kept beside a table changed since, vouches for nothing.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from relanon.common.errors import StorageError
from relanon.stores.base import is_url, shown
from relanon.stores.fingerprints import FINGERPRINTS, file_fingerprint, sql_fingerprint, sqlite_fingerprint
from relanon.stores.folder import FOLDER_SUFFIX, FolderStore
from relanon.stores.io import detect_format
from relanon.stores.outputs import FILES_TABLE, NOTES_FILE
from relanon.stores.sql import SqlDatabase


def read_note(location, name: str) -> str | None:
    """The text of the note ``name`` stored with the database at ``location``, or None.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "release.json").write_text('{"tables": {}}')
    >>> read_note(folder, "release.json"), read_note(folder, "other.txt")
    ('{"tables": {}}', None)
    """
    if is_url(location):
        store = SqlDatabase(location)
        try:
            return (store.files() or {}).get(name)
        finally:
            store.close()
    path = Path(str(location))
    if path.is_dir():
        note = path / name
        return note.read_text(encoding="utf-8") if note.is_file() else None
    if path.is_file():
        try:
            connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.Error:
            return None
        try:
            row = connection.execute(f'SELECT content FROM "{FILES_TABLE}" WHERE name = ?', (name,)).fetchone()
        except sqlite3.Error:  # not a SQLite file, or a database without notes
            return None
        finally:
            connection.close()
        return None if row is None else str(row[0])
    return None


def release_methods(location) -> dict[str, str]:
    """Table -> anonymization method, read from the release notes; empty when there are none.

    The methods are what ``release.json`` says, unchecked: :func:`check_release` also says which
    tables it does not describe.

    Raises
    ------
    StorageError
        When the notes exist but cannot be read as relanon wrote them.
    """
    return _methods(location, _notes(location))


def _notes(location) -> dict | None:
    text = read_note(location, NOTES_FILE)
    if text is None:
        return None
    try:
        notes = json.loads(text)
        if not isinstance(notes, dict) or not isinstance(notes["tables"], dict):
            raise TypeError("not a JSON object with its tables")
        return notes
    except (ValueError, KeyError, TypeError) as exc:
        raise _not_notes(location, exc) from exc


def _methods(location, notes: dict | None) -> dict[str, str]:
    if notes is None:
        return {}
    try:
        return {str(name): str(entry["method"]) for name, entry in notes["tables"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise _not_notes(location, exc) from exc


def _not_notes(location, exc) -> StorageError:
    return StorageError(f"{NOTES_FILE} in {shown(location)} is not the release notes relanon writes ({exc}); "
                        "remove it or restore it")


UNVERIFIED = ("{notes} holds no fingerprint of the tables (written by an older relanon, or edited): nothing shows "
              "that the data is the release relanon wrote; audited as real records (anonymize again to get a "
              "release that can be checked)")
CHANGED = ("{notes} does not describe this {what}: it was changed or replaced after relanon wrote it ({differs}); "
           "audited as real records")


@dataclass(frozen=True)
class ReleaseCheck:
    """What a release's notes say about its tables, checked against the data.

    Attributes
    ----------
    methods : dict of str to str
        Table -> anonymization method, as ``release.json`` says (empty without notes).
    unverified : dict of str to str
        Table -> why ``release.json`` cannot be believed about it (its data is not what relanon
        wrote, or the notes hold no fingerprint): the table is to be audited as real records.
    """

    methods: dict[str, str] = field(default_factory=dict)
    unverified: dict[str, str] = field(default_factory=dict)

    def synthetic(self, method: str) -> list[str]:
        """The tables made by ``method`` whose data is what relanon wrote."""
        return [name for name, made in self.methods.items() if made == method and name not in self.unverified]


def check_release(location, schema, *, format=None, database=None) -> ReleaseCheck:
    """The release notes at ``location`` and, for each table of ``schema`` they describe, whether its
    data still is what relanon wrote (the fingerprints in ``release.json``).

    Parameters
    ----------
    location : str or Path
        A folder of CSV or Parquet files, a SQLite file, or a SQLAlchemy URL.
    schema : Schema
        Tables are looked for under their ``source`` names (and ``<source>_sensitive``).
    format : {"csv", "parquet", "sqlite", "sql"}, optional
        Detected from ``location`` when not given.
    database : dict of str to pandas.DataFrame, optional
        The tables as read (:func:`relanon.stores.io.read_database`): their numbers of rows are shown
        beside those the notes give when a file differs.

    Raises
    ------
    StorageError
        When the notes exist but cannot be read as relanon wrote them.
    """
    notes = _notes(location)
    methods = _methods(location, notes)
    described = [table for table in schema if table.name in methods]
    if not described:
        return ReleaseCheck(methods)
    written = notes.get(FINGERPRINTS)
    if not isinstance(written, dict):
        return ReleaseCheck(methods, {t.name: UNVERIFIED.format(notes=NOTES_FILE) for t in described})
    unverified = {}
    rows = {t.source_name: len(database[t.name]) for t in described if database is not None and t.name in database}
    with _Fingerprinter(location, format, rows) as fingerprinter:
        for table in described:
            stored = [table.source_name, *([f"{table.source_name}_sensitive"]
                                           * (f"{table.source_name}_sensitive" in written))]
            for name in stored:
                why = fingerprinter.differs(name, written.get(name))
                if why is not None:
                    unverified[table.name] = why
                    break
    return ReleaseCheck(methods, unverified)


class _Fingerprinter:
    """Fingerprints of the tables of a store, computed as :mod:`relanon.stores.fingerprints` writes them."""

    def __init__(self, location, format, rows):
        self.location, self.store, self.connection, self.rows = location, None, None, rows
        self.format = format or detect_format(location)
        if self.format in FOLDER_SUFFIX:
            self.store = FolderStore(location, self.format)
        elif self.format == "sqlite":
            self.connection = sqlite3.connect(f"{Path(location).resolve().as_uri()}?mode=ro", uri=True)
        else:
            self.store = SqlDatabase(location)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self.connection is not None:
            self.connection.close()
        if self.store is not None:
            self.store.close()

    def differs(self, name: str, expected) -> str | None:
        """None when table ``name`` matches its fingerprint ``expected``, else what differs."""
        what = "file" if self.format in FOLDER_SUFFIX else "table"
        changed = lambda differs: CHANGED.format(notes=NOTES_FILE, what=what, differs=differs)  # noqa: E731
        if not isinstance(expected, dict):
            return changed(f"it holds no fingerprint of {what} {name!r}")
        try:
            actual = self._fingerprint(name)
        except (OSError, sqlite3.Error, StorageError) as exc:
            return changed(f"{what} {name!r} cannot be read to be checked: {exc}")
        if actual is None:
            return changed(f"no {what} {name!r} is there")
        if what == "file" and expected.get("file") != actual["file"]:
            return changed(f"it describes the file {expected.get('file')!r}, the table is read from {actual['file']!r}")
        key = "sha256" if what == "file" else "content_sha256"
        if expected.get(key) == actual[key]:
            return None
        differs = [f"{key} {str(actual[key])[:12]}... where {NOTES_FILE} says {str(expected.get(key))[:12]}..."]
        rows, said = actual.get("rows"), expected.get("rows")
        if isinstance(rows, int) and isinstance(said, int) and rows != said:
            differs.insert(0, f"{rows:,} rows where {NOTES_FILE} says {said:,}")
        return changed("; ".join(differs))

    def _fingerprint(self, name: str) -> dict | None:
        if self.format in FOLDER_SUFFIX:
            path = self.store.files.get(name)
            return None if path is None else file_fingerprint(path, self.rows.get(name))
        if self.format == "sqlite":
            found = self.connection.execute("SELECT 1 FROM sqlite_master WHERE name = ? AND type = 'table'",
                                            (name,)).fetchone()
            return None if found is None else sqlite_fingerprint(self.connection, name)
        if name not in self.store.names():
            return None
        return self.store._guarded(lambda: sql_fingerprint(self.store.sa, self.store.connection, name, self.store.schema),
                                   f"table {name!r} of")

