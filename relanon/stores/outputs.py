"""Where a command writes, checked before any work starts.

The rule, for every command and every output (``--out``, ``--json``, ``--report``):

- an output never is, contains or lies inside an input (the data folder or file, each table file,
  the schema file), nor another output of the same command;
- relanon replaces only what it recognizably wrote itself: a release folder (it holds relanon's
  ``release.json`` and nothing but the release's files), a report folder it made, a JSON file of the
  same kind it wrote. Anything else that exists is refused, with a message naming the path and the
  flag that allows replacing it (``--overwrite``); with that flag a folder is replaced whole, once
  the new one is complete;
- an existing SQLite file is refused unless ``--overwrite``, and even then only the release's own
  tables are replaced, in one transaction: its other tables are kept;
- a database schema (a URL, ``?schema=release``) is never the one the data was read from; one that
  is missing or empty is written, one holding a release relanon wrote (its ``relanon_files`` notes,
  and only the tables they name) is replaced whole, and one holding anything else is refused unless
  ``--overwrite``, which replaces only the release's own tables in it. All in one transaction;
- the place must be writable: a missing parent folder is fine (it is created), a parent that is a
  file, or a folder where nothing can be created, is refused before any work.

Each kind of output is an :class:`OutputLocation` whose :meth:`~OutputLocation.check` raises
:class:`~relanon.common.errors.StorageError`; :func:`check_outputs` checks several against the
inputs and each other. A database server (a URL) is one more kind: :class:`DatabaseUrl`, checked by
connecting to it (a wrong password or an unreachable server is refused before any work).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from relanon.common.atomic import is_url, overlaps
from relanon.common.errors import RelanonError, StorageError
from relanon.schema.model import load_schema
from relanon.stores.base import shown
from relanon.stores.sql import FILES_TABLE, SchemaContents, resolved_place, same_place, schema_contents

__all__ = [
    "DatabaseUrl",
    "FileOutput",
    "FolderOutput",
    "OutputLocation",
    "ReleaseFolder",
    "SqliteOutput",
    "check_outputs",
    "output_for_database",
]

NOTES_FILE = "release.json"
RELEASE_FILES = ("schema.yaml", NOTES_FILE, "WARNING-SENSITIVE-CHOICES.txt")  # notes relanon writes
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
SQLITE_HEADER = b"SQLite format 3\x00"
OVERWRITE_FLAG = "--overwrite"
_FOLDER_SUFFIX = {"csv": ".csv", "parquet": ".parquet"}


class OutputLocation:
    """A place a command writes to.

    Parameters
    ----------
    location : str or Path
        The path (or URL) given by the user.
    what : str
        What is written there, for messages ("the release", "the audit JSON").
    flag : str, optional
        The command-line option that named it ("--json"); messages name it.
    overwrite : bool
        Whether the user allowed replacing what exists there (``--overwrite``).
    """

    def __init__(self, location, *, what: str = "the output", flag: str | None = None, overwrite: bool = False):
        self.location = location
        self.what = what
        self.flag = flag
        self.overwrite = bool(overwrite)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.location)!r})"

    @property
    def path(self) -> Path:
        return Path(self.location)

    def check(self, inputs: Iterable = ()) -> None:
        """Raise :class:`StorageError` when writing here would touch an input, replace something relanon
        did not write (without ``overwrite``), or cannot succeed (a parent that is a file, no permission)."""
        for given in inputs:
            if given is not None and not is_url(given) and overlaps(self.location, given):
                raise StorageError(
                    f"refusing to write {self.what} to {self._shown}{self._by}: it would overwrite or sit "
                    f"inside the input {str(given)!r}; choose another location"
                )
        self._check_place()
        if self.path.exists() or self.path.is_symlink():
            self._check_existing()

    # ---- helpers for the kinds

    @property
    def _shown(self) -> str:
        return repr(str(self.location))

    @property
    def _by(self) -> str:
        return f" ({self.flag})" if self.flag else ""

    @property
    def _allow(self) -> str:
        return OVERWRITE_FLAG if self.flag else "overwrite=True"

    def _check_place(self) -> None:
        """The nearest existing folder above the output must be a folder where entries can be made."""
        path = self.path.absolute()
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise StorageError(
                f"cannot write {self.what} to {self._shown}{self._by}: {str(ancestor)!r} is a file, not a "
                "folder; choose another location"
            )
        try:  # the one sure test: make (and remove at once) an entry there
            probe = tempfile.mkdtemp(prefix=".relanon-probe-", dir=ancestor)
        except OSError as exc:
            raise StorageError(
                f"cannot write {self.what} to {self._shown}{self._by}: nothing can be created in "
                f"{str(ancestor)!r} ({exc.strerror or exc}); choose another location"
            ) from None
        os.rmdir(probe)

    def _check_existing(self) -> None:
        raise NotImplementedError

    def _refuse(self, reason: str, own: str, *, whole: str = "replace it") -> None:
        if self.overwrite:
            return
        raise StorageError(
            f"refusing to write {self.what} to {self._shown}{self._by}: {reason}. relanon replaces only "
            f"{own}: choose another location, or give {self._allow} to {whole}"
        )


class FolderOutput(OutputLocation):
    """A folder relanon makes as a whole (replaced whole when it is relanon's own, or with ``overwrite``).

    Parameters
    ----------
    own_entries : callable
        Given the existing folder, the names of the entries relanon did not write (empty when the
        folder is recognizably relanon's).
    own : str
        What relanon recognizes as its own, for messages ("a report folder it made").
    """

    def __init__(self, location, *, own_entries: Callable[[Path], list[str]], own: str,
                 whole: str = "replace the folder whole", **options):
        super().__init__(location, **options)
        self._own_entries = own_entries
        self._own = own
        self._whole = whole

    def _check_existing(self) -> None:
        path = self.path
        if not path.is_dir():
            raise StorageError(
                f"refusing to write {self.what} to {self._shown}{self._by}: it is a file, and {self.what} is a "
                "folder; choose a folder path"
            )
        foreign = self._own_entries(path)
        if foreign:
            self._refuse(f"the folder holds {_listed(foreign)}, which relanon did not write", self._own,
                         whole=self._whole)


class ReleaseFolder(FolderOutput):
    """A release (or database) folder of CSV or Parquet files.

    Recognized as relanon's own when it holds its ``release.json`` and nothing but table files of the
    format and the release notes.
    """

    def __init__(self, location, format: str = "csv", **options):
        options.setdefault("what", "the release")
        suffix = _FOLDER_SUFFIX.get(format, ".csv")
        super().__init__(location, own_entries=lambda path: release_folder_foreign_entries(path, suffix),
                         own="a release folder it wrote (one with its release.json)", **options)


class FileOutput(OutputLocation):
    """One file (a JSON report, a proposed schema).

    Parameters
    ----------
    recognize : callable, optional
        Given the existing file, whether relanon wrote it (then it is replaced). Without it, an
        existing file is always refused unless ``overwrite`` (a proposed schema the user may have
        edited).
    """

    def __init__(self, location, *, recognize: Callable[[Path], bool] | None = None, own: str | None = None,
                 **options):
        super().__init__(location, **options)
        self._recognize = recognize
        self._own = own or f"a file of this kind that it wrote ({self.what})"

    def _check_existing(self) -> None:
        if self.path.is_dir():
            raise StorageError(
                f"refusing to write {self.what} to {self._shown}{self._by}: it is a folder; give a file name"
            )
        if self._recognize is not None and _safely(self._recognize, self.path):
            return
        if self._recognize is None:
            self._refuse("the file exists", "files it knows it wrote, and never one you may have edited")
        else:
            self._refuse("the file exists and relanon did not write it", self._own)


class SqliteOutput(OutputLocation):
    """A SQLite file. An existing one is refused unless ``overwrite``; then only the release's own
    tables are replaced in it, in one transaction."""

    def __init__(self, location, **options):
        options.setdefault("what", "the release")
        super().__init__(location, **options)

    def _check_existing(self) -> None:
        path = self.path
        if path.is_dir():
            raise StorageError(
                f"refusing to write {self.what} to {self._shown}{self._by}: it is a folder; give a file name "
                f"such as {str(path / 'release.sqlite')!r}"
            )
        if path.stat().st_size == 0:
            return  # an empty file holds nothing to lose
        if not starts_like_sqlite(path):
            raise StorageError(
                f"refusing to write {self.what} to {self._shown}{self._by}: the file exists and is not a SQLite "
                "database; choose another file"
            )
        if not self.overwrite:
            raise StorageError(
                f"refusing to write {self.what} to {self._shown}{self._by}: the SQLite file already exists. "
                f"Give {self._allow} to replace the release's own tables in it (its other tables are kept), "
                "or choose another file"
            )
        try:
            connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                connection.close()
        except sqlite3.Error as exc:
            raise StorageError(
                f"cannot write {self.what} to {self._shown}{self._by}: the SQLite file cannot be read ({exc}); "
                "choose another file"
            ) from None


class DatabaseUrl(OutputLocation):
    """A schema of a database given by a SQLAlchemy URL (``postgresql://user@host/db?schema=release``).

    Refused when it is the schema an input was read from. :meth:`check` connects and looks at what
    the schema holds; the writer asks :meth:`replaced_tables` again inside its transaction.
    """

    def __init__(self, location, **options):
        options.setdefault("what", "the release")
        super().__init__(location, **options)

    @property
    def _shown(self) -> str:
        return shown(self.location)

    def check(self, inputs: Iterable = ()) -> None:
        """Refuse the schema an input is read from, by the URLs and then as the server resolves them (the
        schema ``search_path`` leads to, the database and cluster themselves), with or without ``overwrite``;
        then apply the output rule to what the schema holds."""
        urls = [given for given in inputs if given is not None and is_url(given)]
        same = next((given for given in urls if same_place(given, self.location)), None)
        if same is None and urls:
            output = resolved_place(self.location)
            same = next((given for given in urls if resolved_place(given) == output), None)
        if same is not None:
            raise StorageError(
                f"refusing to write {self.what} to {self._shown}{self._by}: it is the database schema the data "
                f"was read from ({shown(same)}), even with {self._allow}; write into a schema of its own "
                "(?schema=release in the URL)"
            )
        self.replaced_tables(None)(schema_contents(self.location))

    def replaced_tables(self, tables):
        """The rule, for the writer: given what the schema holds, the tables to drop before writing
        ``tables`` (the names written); raises :class:`StorageError` to refuse."""

        def decide(contents: SchemaContents) -> list[str]:
            if not contents.tables and not contents.views:
                return []
            if not contents.views and release_in_schema(contents):
                return list(contents.tables)  # a release relanon wrote: replaced whole
            names = sorted([*contents.tables, *contents.views])
            self._refuse(f"its schema holds {_listed(names, noun=('table', 'tables'))} that relanon did not write",
                         "a schema holding a release it wrote (with its relanon_files notes)",
                         whole="replace the release's own tables in it (its other tables are kept)")
            clash = sorted(set(contents.views) & set(tables or ()))
            if clash:
                raise StorageError(f"refusing to write {self.what} to {self._shown}{self._by}: the schema holds a "
                                   f"view named {clash[0]!r}; drop it or choose another schema")
            return sorted(set(contents.tables) & set(tables or ()))

        return decide


def release_in_schema(contents: SchemaContents) -> bool:
    """Whether a database schema holds only a release relanon wrote: its notes (``release.json`` and
    ``schema.yaml`` in ``relanon_files``) and the tables the schema names (and anatomized companions)."""
    files = contents.files or {}
    try:
        notes = json.loads(files.get(NOTES_FILE, ""))
        declared = load_schema(files.get(RELEASE_FILES[0], ""))
    except (ValueError, RelanonError):
        return False
    if not (isinstance(notes, dict) and "relanon" in notes and isinstance(notes.get("tables"), dict)):
        return False
    sources = {table.source_name for table in declared}
    own = {FILES_TABLE} | sources | {f"{source}_sensitive" for source in sources}
    return set(contents.tables) <= own


def check_outputs(outputs: Iterable[OutputLocation], inputs: Iterable = ()) -> None:
    """Check every output against the inputs and against the other outputs, before any work.

    Raises
    ------
    StorageError
        At the first output that cannot be written as asked.
    """
    outputs = [o for o in outputs if o is not None]
    inputs = [i for i in inputs if i is not None]
    for output in outputs:
        output.check(inputs)
    for position, output in enumerate(outputs):
        for other in outputs[position + 1:]:
            if is_url(output.location) or is_url(other.location):
                continue
            if overlaps(output.location, other.location):
                raise StorageError(
                    f"{output.what}{output._by} and {other.what}{other._by} would be written to "
                    f"{output._shown} and {other._shown}, one over or inside the other; give them separate places"
                )


def output_for_database(location, format: str, **options) -> OutputLocation:
    """The output location of a database written in ``format`` (``csv``, ``parquet``, ``sqlite``, ``sql``)."""
    if format == "sql" or is_url(location):
        return DatabaseUrl(location, **options)
    if format == "sqlite":
        return SqliteOutput(location, **options)
    return ReleaseFolder(location, format, **options)


# --------------------------------------------------------------------------- recognizing relanon's own


def release_folder_foreign_entries(path: Path, suffix: str) -> list[str]:
    """Entries of ``path`` that a release folder does not hold; all of them when it has no release.json."""
    entries = sorted(p.name for p in path.iterdir())
    if not entries:
        return []
    if not is_release_notes(path / NOTES_FILE):
        return entries
    return [n for n in entries if not (((path / n).is_file() and (n.lower().endswith(suffix) or n in RELEASE_FILES))
                                       or (suffix == ".parquet" and _parquet_directory(path / n)))]


def _parquet_directory(path: Path) -> bool:
    """A table of a partitioned release: a directory holding only Parquet files (as the Dask engine writes)."""
    if not path.is_dir() or path.is_symlink():
        return False
    return all(entry.is_file() and entry.name.lower().endswith(".parquet") for entry in path.iterdir())


def is_release_notes(path: Path) -> bool:
    """Whether ``path`` is the ``release.json`` relanon writes (a JSON object with its version and tables)."""
    data = _json_object(path)
    return data is not None and "relanon" in data and isinstance(data.get("tables"), dict)


def json_with_keys(*keys: str) -> Callable[[Path], bool]:
    """A recognizer of JSON files relanon wrote: an object holding every one of ``keys``."""

    def recognize(path: Path) -> bool:
        data = _json_object(path)
        return data is not None and all(key in data for key in keys)

    return recognize


def only_entries(*names: str) -> Callable[[Path], list[str]]:
    """For :class:`FolderOutput`: the entries of a folder that are not among ``names``."""
    allowed = set(names)
    return lambda path: sorted(p.name for p in path.iterdir() if p.name not in allowed)


def starts_like_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def remove_entries(folder: Path, names: Iterable[str]) -> None:
    """Remove the named entries of ``folder`` (files or folders); others are left alone."""
    for name in names:
        entry = folder / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.exists() or entry.is_symlink():
            entry.unlink()


def _json_object(path: Path) -> dict | None:
    try:
        if path.stat().st_size > 256 * 1024 * 1024:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _safely(recognize, path) -> bool:
    try:
        return bool(recognize(path))
    except (OSError, ValueError):
        return False


def _listed(names: list[str], limit: int = 5, noun=("entry", "entries")) -> str:
    quoted = ", ".join(repr(n) for n in names[:limit])
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return f"{len(names)} {noun[len(names) != 1]} ({quoted}{more})"
