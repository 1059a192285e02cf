"""What every data store shares: the reader interface, and how a location and a failure are shown.

A location printed anywhere (a message, a log line, the report) goes through :func:`shown`, which
masks the password of a database URL: ``postgresql://me:***@db.example.org/clinic``.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pandas as pd

MASK = "***"
# the longest cell (and header name) relanon reads, in characters: a longer one is refused with this
# figure, so that a single cell never makes the memory of a run grow without bound (a text of a
# million characters is no category, and a free text is dropped, not anonymized)
MAX_CELL_CHARS = 1_000_000
# the most columns a table may have: every column costs a fixed time to read and type, and the factor
# space of ten thousand columns already needs more rows than most tables hold
MAX_COLUMNS = 10_000
_CREDENTIALS = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^:@/?#]*):(?P<secret>.*)@(?P<rest>[^@]*)$")
_PASSWORD_OPTION = re.compile(r"(?i)([?&]password=)[^&#]*")


class Store:
    """What a reader needs from a data store: the names of its tables and each table.

    Attributes
    ----------
    format : str
        ``"csv"``, ``"parquet"``, ``"sqlite"`` or ``"sql"``.
    text_storage : bool
        Whether values are stored as text (CSV, SQLite), so that the schema reads them as text:
        integer-looking codes are integers and empty cells are missing. A database server keeps
        its types (see :mod:`relanon.schema.validation`).
    """

    format = ""
    text_storage = True

    def __init__(self, location):
        self.location = location

    def names(self) -> list[str]:
        raise NotImplementedError

    def read(self, name: str, *, typed: bool) -> pd.DataFrame:
        """Table ``name``: raw text when ``typed`` (the schema will type it), else pandas' inference."""
        raise NotImplementedError

    def looked_for(self, name: str) -> str:
        return f"table {name!r}"

    def close(self) -> None:
        pass


def is_url(location) -> bool:
    return isinstance(location, str) and "://" in location


def masked(location) -> str:
    """``location`` as text, the password of a URL replaced by ``***`` (in the credentials or a
    ``password=`` option).

    Examples
    --------
    >>> masked("postgresql://me:s3cr@t@localhost:5432/clinic?schema=release")
    'postgresql://me:***@localhost:5432/clinic?schema=release'
    >>> masked("postgresql://me@localhost/clinic?password=s3cret&sslmode=require")
    'postgresql://me@localhost/clinic?password=***&sslmode=require'
    >>> masked("data/clinic.sqlite")
    'data/clinic.sqlite'
    """
    text = str(location)
    if not is_url(text):
        return text
    found = _CREDENTIALS.match(text.split("?", 1)[0])
    if found:
        query = text[len(text.split("?", 1)[0]):]
        text = f"{found['scheme']}{found['user']}:{MASK}@{found['rest']}{query}"
    return _PASSWORD_OPTION.sub(lambda m: m.group(1) + MASK, text)


def shown(location) -> str:
    """A location quoted for a message, without its password."""
    return repr(masked(location))


def secrets_of(location) -> list[str]:
    """The password(s) written in a URL, to be scrubbed from any text shown (driver messages)."""
    text = str(location)
    if not is_url(text):
        return []
    found = []
    credentials = _CREDENTIALS.match(text.split("?", 1)[0])
    if credentials and credentials["secret"]:
        found.append(credentials["secret"])
        try:  # the decoded form too: a driver may print it
            decoded = urlsplit(text).password
        except ValueError:
            decoded = None
        if decoded and decoded not in found:
            found.append(decoded)
    found += [m.group(0).split("=", 1)[1] for m in _PASSWORD_OPTION.finditer(text)]
    return [secret for secret in found if secret]


def reason(exc: BaseException, *, location=None) -> str:
    """The first line of an error's message, for a one-line error of relanon's own (no password)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return scrubbed(line, location)


def scrubbed(text: str, location) -> str:
    """``text`` with every password of ``location`` masked."""
    for secret in sorted(secrets_of(location) if location is not None else [], key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def quoted(name: str) -> str:
    """An SQL identifier in double quotes (SQLite, PostgreSQL)."""
    return '"' + name.replace('"', '""') + '"'


def plain_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """SQL readers give ``string[python]`` text; use pandas' default ``str`` like every other reader."""
    text = [c for c, dtype in frame.dtypes.items() if isinstance(dtype, pd.StringDtype) and dtype != "str"]
    return frame.astype(dict.fromkeys(text, "str")) if text else frame


def refuse_long_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` itself, or a :class:`ValueError` naming the first text column holding a cell longer than
    :data:`MAX_CELL_CHARS` (its row and length): such a cell is refused as soon as it is read."""
    for position, dtype in enumerate(frame.dtypes):
        if not (dtype == object or isinstance(dtype, pd.StringDtype)):
            continue
        values = frame.iloc[:, position]
        lengths = (values.str.len() if dtype != object
                   else values.map(lambda value: len(value) if isinstance(value, str | bytes) else 0))
        longest = lengths.max()
        if pd.notna(longest) and longest > MAX_CELL_CHARS:
            row = int(lengths.fillna(0).to_numpy().argmax())
            raise ValueError(f"column {str(frame.columns[position])!r} holds a cell of {int(longest):,} characters "
                             f"(data row {row + 1}), longer than the {MAX_CELL_CHARS:,} relanon reads in a cell; "
                             "shorten it, or remove the column first")
    return frame
