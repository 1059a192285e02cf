"""How a command-line run meets its terminal: warnings printed once, SIGTERM handled like Ctrl-C."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import warnings

from relanon.common.progress import print_line

__all__ = ["Terminated", "terminate_like_interrupt", "warnings_printed_once"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is so that every temporary is cleaned up as for Ctrl-C."""


@contextlib.contextmanager
def terminate_like_interrupt():
    """While a command runs, SIGTERM unwinds like Ctrl-C: every temporary is removed on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _OnceHandler(logging.Handler):
    def __init__(self, say):
        super().__init__(logging.WARNING)
        self.say = say

    def emit(self, record):
        self.say(record.getMessage())


@contextlib.contextmanager
def warnings_printed_once():
    """Warnings as ``warning: ...`` lines on standard error, each once, without source locations.

    relanon's own warnings (and any ``UserWarning``) are shown; numerical and deprecation warnings of
    the libraries underneath tell a user nothing to act on and are left out.
    """
    seen = set()

    def say(text) -> None:
        text = " ".join(str(text).split())
        if text and text not in seen:
            seen.add(text)
            print_line(f"warning: {text}", file=sys.stderr)  # above a live progress bar, if any

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, UserWarning):
            say(message)

    logger = logging.getLogger("relanon")
    handler = _OnceHandler(say)
    propagate = logger.propagate
    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        warnings.showwarning = show
        logger.addHandler(handler)
        logger.propagate = False
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.propagate = propagate
