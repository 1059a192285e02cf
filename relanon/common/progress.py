"""Progress of long runs: a moving bar on a terminal, one line per step elsewhere, nothing when quiet.

The library reports through a :class:`Progress` object (every long function takes a ``progress``
argument). A run is a sequence of *steps*; a step that knows how much work it holds (the blocks of
a link, the tables of an evaluation) advances a bar with its rate and the time left, the others show
their elapsed time, refreshed every half second.

- On a terminal (standard error is a TTY), the step in progress is a bar at the bottom; when it ends
  it leaves one line, ``  label (detail): 12.3 s``, and the bar moves on to the next step.
- Elsewhere (a log file, CI, a notebook), only those lines are written: one per step, when it ends.
- ``quiet=True`` prints nothing; the timings are still recorded.

The bars are drawn by tqdm: a small, dependency-free library kept by a large community, the one
the scientific Python stack uses (pandas, scikit-learn's examples...). It computes rate and time left,
redraws cleanly over its own line, writes lines above a live bar (:func:`print_line`), and is
disabled with a flag. rich draws finer bars but brings its own console, markup language and two
dependencies (pygments, markdown-it-py) to a package that prints a few lines to standard error.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from tqdm import tqdm

__all__ = ["Progress", "as_progress", "format_duration", "print_line"]

REFRESH_SECONDS = 0.5  # how often an open bar redraws its clock when the work does not advance it
BAR_FORMAT = "  {desc}: {percentage:3.0f}%|{bar:24}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}, {rate_fmt}]"
CLOCK_FORMAT = "  {desc} ... {elapsed}"  # a step whose amount of work is unknown: its elapsed time


class Progress:
    """Report the steps of a long run.

    Parameters
    ----------
    quiet : bool
        When true, nothing is printed.
    write : callable, optional
        Where finished-step lines go (a list's ``append`` in tests). Given, no bar is drawn.
    bars : bool, optional
        Draw live bars; by default when standard error is a terminal (and ``write`` is not given).

    Attributes
    ----------
    timings : dict
        Step label -> seconds, for every step that ended.

    Examples
    --------
    >>> lines = []
    >>> progress = Progress(write=lines.append)
    >>> with progress.step("patients: avatarize", total=2, unit="stages") as step:
    ...     step.advance()
    ...     step.advance()
    ...     step.detail = "k=10"
    >>> lines[0].startswith("  patients: avatarize (k=10): ")
    True
    >>> Progress(quiet=True).step("anything").advance()  # quiet: nothing at all
    """

    def __init__(self, quiet: bool = False, write: Callable[[str], None] | None = None, *, bars: bool | None = None):
        self.quiet = quiet
        self._write = write
        if bars is None:
            bars = write is None and _is_terminal(sys.stderr)
        self.bars = bool(bars) and not quiet
        self.timings: dict[str, float] = {}
        self.started = time.perf_counter()
        self._open: list[_Step] = []
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None

    def say(self, message: str) -> None:
        """Print a line (above the live bar, if any)."""
        if self.quiet:
            return
        if self._write is not None:
            self._write(message)
        else:
            print_line(message)

    def step(self, label: str, total: int | None = None, unit: str = "steps") -> _Step:
        """A context manager for one step; it prints ``label`` with its duration when it ends.

        ``total`` is the amount of work in the step (known later: :meth:`_Step.update_to`); the step
        advances by :meth:`_Step.advance`, or by being called as ``step(done, total)``.
        """
        return _Step(self, label, total, unit)

    def elapsed(self) -> float:
        """Seconds since this object was made."""
        return time.perf_counter() - self.started

    # ---- the clock of open bars

    def _opened(self, step: _Step) -> None:
        with self._lock:
            self._open.append(step)
            if self._ticker is None or not self._ticker.is_alive():
                self._ticker = threading.Thread(target=self._tick, name="relanon-progress", daemon=True)
                self._ticker.start()

    def _closed(self, step: _Step) -> None:
        with self._lock:
            if step in self._open:
                self._open.remove(step)

    def _tick(self) -> None:
        while True:
            time.sleep(REFRESH_SECONDS)
            with self._lock:
                if not self._open:
                    self._ticker = None
                    return
                bars = [s.bar for s in self._open if s.bar is not None]
            for bar in bars:
                try:
                    bar.refresh()
                except Exception:  # a bar closed meanwhile: nothing to redraw  # noqa: BLE001
                    pass


class _Step:
    """One step of a run: a context manager, and a callback ``step(done, total)`` for the work inside."""

    def __init__(self, progress: Progress, label: str, total: int | None, unit: str):
        self.progress, self.label, self.detail = progress, label, ""
        self.total, self.unit = total, unit
        self.bar = None

    def __enter__(self):
        self.start = time.perf_counter()
        if self.progress.bars:
            self.bar = _bar(self.label, self.total, self.unit)
            self.progress._opened(self)
        return self

    def __exit__(self, kind, error, traceback):
        elapsed = time.perf_counter() - self.start
        self.progress.timings[self.label] = elapsed
        if self.bar is not None:
            self.progress._closed(self)
            self.bar.close()
            self.bar = None
        if error is None:
            detail = f" ({self.detail})" if self.detail else ""
            self.progress.say(f"  {self.label}{detail}: {elapsed:.1f} s")
        return False

    def advance(self, n: int = 1) -> None:
        """``n`` more units of the step's work are done."""
        if self.bar is not None:
            self.bar.update(n)

    def update_to(self, done: int, total: int | None = None) -> None:
        """``done`` units of ``total`` are done (the total may be learnt only now)."""
        if self.bar is None:
            return
        if total is not None and total != self.bar.total:
            self.bar.total = total
            self.bar.bar_format = BAR_FORMAT
        self.bar.update(done - self.bar.n)

    __call__ = update_to


def _bar(label: str, total: int | None, unit: str):
    return tqdm(
        total=total, desc=label, unit=unit, leave=False, file=sys.stderr, dynamic_ncols=True,
        bar_format=BAR_FORMAT if total else CLOCK_FORMAT, mininterval=0.2,
    )


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed streams
        return False


def print_line(message: str, file=None) -> None:
    """Print a line on standard error (or ``file``) above any live bar, which is redrawn below it."""
    tqdm.write(message, file=file or sys.stderr)
    (file or sys.stderr).flush()


def format_duration(seconds: float) -> str:
    """``12.3 s``, ``2 min 05 s``, ``1 h 02 min``.

    Examples
    --------
    >>> format_duration(12.34), format_duration(125), format_duration(3725)
    ('12.3 s', '2 min 05 s', '1 h 02 min')
    """
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def as_progress(progress) -> Progress:
    """Accept a :class:`Progress`, ``True``/``False`` (shown/quiet) or ``None`` (shown)."""
    if isinstance(progress, Progress):
        return progress
    return Progress(quiet=progress is False)
