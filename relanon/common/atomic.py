"""Atomic outputs: everything is written under a temporary name, then renamed into place.

A reader never sees a half-written file or folder, and an output never lands on its input.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from relanon.common.errors import StorageError


def refuse_overwriting_input(output, *inputs) -> None:
    """Raise :class:`StorageError` when ``output`` is, contains or lies inside one of ``inputs``."""
    out = Path(output).resolve()
    for given in inputs:
        if given is None:
            continue
        source = Path(given).resolve()
        if out == source or source.is_relative_to(out) or (source.is_dir() and out.is_relative_to(source)):
            raise StorageError(
                f"refusing to write to {str(output)!r}: it would overwrite or sit inside the input "
                f"{str(given)!r}; choose another output location"
            )


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes_atomically(path: Path, data: bytes) -> None:
    with atomic_file(path) as tmp:
        tmp.write_bytes(data)


@contextlib.contextmanager
def atomic_file(path):
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_directory(path):
    """Yield a temporary folder beside ``path``; on success it takes the place of ``path``.

    An existing folder at ``path`` is replaced only once the new one is complete.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not path.is_dir():
        raise StorageError(f"{str(path)!r} exists and is not a folder; choose a folder path for the output")
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / "previous")
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
