"""The exit codes of every command (see :mod:`relanon.cli`), apart so that the parser starts without the library."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
