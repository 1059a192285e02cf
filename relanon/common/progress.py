"""Progress lines for long runs, silenced by ``quiet``.

The library reports through a :class:`Progress` object; the command line prints its lines to
standard error, a notebook sees them below the cell, ``quiet=True`` silences them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


class Progress:
    """Print timed progress lines.

    Parameters
    ----------
    quiet : bool
        When true, nothing is printed.
    write : callable, optional
        Where lines go (default: standard error).

    Examples
    --------
    >>> progress = Progress(quiet=True)
    >>> with progress.step("patients: avatarize"):
    ...     pass
    """

    def __init__(self, quiet: bool = False, write: Callable[[str], None] | None = None):
        self.quiet = quiet
        self._write = write or _to_stderr
        self.timings: dict[str, float] = {}

    def say(self, message: str) -> None:
        if not self.quiet:
            self._write(message)

    def step(self, label: str) -> _Step:
        """A context manager that prints ``label`` with its duration when it ends."""
        return _Step(self, label)


class _Step:
    def __init__(self, progress: Progress, label: str):
        self.progress, self.label, self.detail = progress, label, ""

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, kind, error, traceback):
        elapsed = time.perf_counter() - self.start
        self.progress.timings[self.label] = elapsed
        if error is None:
            detail = f" ({self.detail})" if self.detail else ""
            self.progress.say(f"  {self.label}{detail}: {elapsed:.1f} s")
        return False


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def as_progress(progress) -> Progress:
    """Accept a :class:`Progress`, ``True``/``False`` (shown/quiet) or ``None`` (shown)."""
    if isinstance(progress, Progress):
        return progress
    return Progress(quiet=progress is False)
