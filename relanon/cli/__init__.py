"""The ``relanon`` command line: parse, call the library, print, exit code.

Exit codes, the same for every command, so that a release job can gate on them:

- 0: the command did what it was asked and everything it checked holds;
- 1: the data or the release fails a check: ``validate`` found problems in the schema or the
  data, ``audit`` found a threshold missed or audited nothing (no individual table with quasi-identifiers);
- 2: the command could not run as asked: a wrong option, a missing or unreadable input, a schema
  or data that does not fit (outside ``validate``; ``assess`` with no individual table), an output location
  refused. Nothing is written.

Interrupted runs (Ctrl-C, ``SIGTERM``) remove their temporaries and exit 130 / 143. Every output is
checked (against every input, against each other, against what exists there) before any work.
"""

from __future__ import annotations

from relanon.cli.app import main
from relanon.cli.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TERMINATED", "EXIT_USAGE", "main"]

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
