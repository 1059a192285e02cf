"""The errors relanon raises.

Every error derives from :class:`RelanonError` and from the built-in exception it refines,
so ``except ValueError`` keeps working for callers who do not know relanon.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a schema or a database, located as precisely as possible.

    Parameters
    ----------
    message : str
        What is wrong and what to do about it.
    table, column : str or None
        Where the problem is; ``None`` when it concerns the whole schema or table.
    examples : tuple
        A few offending values.
    """

    message: str
    table: str | None = None
    column: str | None = None
    examples: tuple = field(default=())

    @property
    def location(self) -> str:
        if self.table and self.column:
            return f"{self.table}.{self.column}"
        return self.table or self.column or "schema"

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}"
        if self.examples:
            text += f" (e.g. {format_examples(self.examples)})"
        return text


def format_examples(values, limit: int = 5) -> str:
    """A short, readable list of example values: ``'abc', 12, ... (3 more)``."""
    values = list(values)
    shown = ", ".join(repr(_plain(v)) for v in values[:limit])
    if len(values) > limit:
        shown += f", ... ({len(values) - limit} more)"
    return shown


def _plain(value):
    """numpy scalars print as ``np.int64(3)``; show them as plain Python values."""
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            return value
    return value


class RelanonError(Exception):
    """Base class of every error raised by relanon."""


class ProblemsError(RelanonError):
    """An error carrying every problem found, so that all can be fixed at once."""

    def __init__(self, headline: str, problems):
        self.problems = list(problems)
        self.headline = headline
        lines = [f"{headline} ({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}):"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class SchemaError(ProblemsError, ValueError):
    """The schema file is malformed or inconsistent."""


class DataError(ProblemsError, ValueError):
    """The database does not fit its schema (missing tables, bad keys, wrong types...)."""


class ParameterError(RelanonError, ValueError):
    """A parameter given to a relanon function is out of its range."""


class AuditError(RelanonError, ValueError):
    """An audit cannot be computed as asked (unknown or uncomparable quasi-identifiers...)."""


class StorageError(RelanonError, OSError):
    """A database cannot be read from or written to the given location."""


class ResourceError(RelanonError, MemoryError):
    """A run needs more of a machine than it has (a worker killed for lack of memory): the message says
    which setting to lower."""
