"""Reading back the notes relanon writes with a release (``release.json``...).

A folder holds them as files beside the tables; a SQLite file and a database schema in a server as
rows of the ``relanon_files`` table (``name``, ``content``). A database without notes (original data)
gives none.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from relanon.common.errors import StorageError
from relanon.stores.base import is_url, shown
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

    Raises
    ------
    StorageError
        When the notes exist but cannot be read as relanon wrote them.
    """
    text = read_note(location, NOTES_FILE)
    if text is None:
        return {}
    try:
        tables = json.loads(text)["tables"]
        return {str(name): str(entry["method"]) for name, entry in tables.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StorageError(f"{NOTES_FILE} in {shown(location)} is not the release notes relanon writes ({exc}); "
                           "remove it or restore it") from exc
