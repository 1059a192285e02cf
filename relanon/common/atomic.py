"""Atomic outputs: everything is written under a temporary name, then renamed into place.

A reader never sees a half-written file or folder, and an output never lands on its input.

Temporaries sit beside their output as hidden ``.<name>.relanon-<pid>-<random>.tmp`` entries (the
folder an output replaces waits as ``.old`` until the new one is in place). A run that was killed
(``SIGKILL``, a power cut) leaves its temporary behind; the next run writing the same output removes
every such leftover whose process is no longer alive, and never touches one of a run still going.
Files and folders get the permissions of the user's umask, as if made by ``open`` and ``mkdir``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from relanon.common.errors import StorageError

_TAG = "relanon"
WORK_PREFIX = ".relanon-dask-"
_WORK_NAME = re.compile(re.escape(WORK_PREFIX) + r"(?P<host>[A-Za-z0-9_.]*)-(?P<pid>\d+)-[A-Za-z0-9_]+")
_TEMPORARY = re.compile(r"\..+\." + _TAG + r"-(?P<pid>\d+)-[^/]*\.(?:tmp|old)")


def refuse_overwriting_input(output, *inputs) -> None:
    """Raise :class:`StorageError` when ``output`` is, contains or lies inside one of ``inputs``."""
    for given in inputs:
        if given is None or is_url(given):
            continue
        if overlaps(output, given):
            raise StorageError(
                f"refusing to write to {str(output)!r}: it would overwrite or sit inside the input "
                f"{str(given)!r}; choose another output location"
            )


def overlaps(output, given) -> bool:
    """Whether ``output`` is ``given``, contains it, or lies inside it (symbolic and hard links followed)."""
    out, source = Path(output).resolve(), Path(given).resolve()
    if out == source or source.is_relative_to(out) or out.is_relative_to(source):
        return True
    with contextlib.suppress(OSError):
        return os.path.samefile(out, source)  # two names of one file (a hard link)
    return False


def is_url(location) -> bool:
    return isinstance(location, str) and "://" in location


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
    _make_parent(path)
    remove_stale_temporaries(path)
    try:
        fd, name = tempfile.mkstemp(prefix=_prefix(path), suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise StorageError(f"cannot write {str(path)!r}: {_reason(exc)}") from exc
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, 0o666 & ~umask())
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
    _make_parent(path)
    if path.exists() and not path.is_dir():
        raise StorageError(f"{str(path)!r} exists and is not a folder; choose a folder path for the output")
    remove_stale_temporaries(path)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=_prefix(path), suffix=".tmp", dir=path.parent))
    except OSError as exc:
        raise StorageError(f"cannot write {str(path)!r}: {_reason(exc)}") from exc
    try:
        os.chmod(tmp, 0o777 & ~umask())
        yield tmp
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=_prefix(path), suffix=".old", dir=path.parent))
            os.replace(path, old / "previous")
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def remove_stale_temporaries(path) -> list[Path]:
    """Remove the temporaries of ``path`` left by runs that are no longer alive; return them.

    The temporaries of a run still going (its process id is alive) are left alone, so two runs
    never delete each other's work.
    """
    path = Path(path)
    if not path.parent.is_dir():
        return []
    pattern = re.compile(re.escape(f".{path.name}.{_TAG}-") + r"(\d+)-[^/]*\.(?:tmp|old)")

    def stale(name: str) -> bool:
        match = pattern.fullmatch(name)
        return match is not None and not alive(int(match.group(1)))

    return _remove_stale(path.parent, stale)


def work_prefix() -> str:
    """The start of a run's private work folder name (:mod:`relanon.distributed.work`):
    ``.relanon-dask-<host>-<pid>-``, so that a later run tells a killed run's folder from a live one."""
    return f"{WORK_PREFIX}{_host()}-{os.getpid()}-"


def remove_leftovers(folder) -> list[Path]:
    """Remove what killed runs left in ``folder``: the temporaries of outputs (``.<name>.relanon-<pid>-...``)
    and the private work folders of the Dask engine (``.relanon-dask-<host>-<pid>-...``, which hold original
    rows and the link from each avatar to its original) whose process is gone; return them. A run still
    going, or a work folder made on another machine, is left alone; a work folder of a name no run makes
    is removed. ``relanon clean FOLDER`` runs this; every run of the Dask engine runs it where its work
    folder goes, and every output written runs it for that output's temporaries.
    """
    def stale(name: str) -> bool:
        if name.startswith(WORK_PREFIX):
            found = _WORK_NAME.fullmatch(name)
            return found is None or (found["host"] == _host() and not alive(int(found["pid"])))
        found = _TEMPORARY.fullmatch(name)
        return found is not None and not alive(int(found["pid"]))

    return _remove_stale(Path(folder), stale)


def _remove_stale(folder: Path, stale) -> list[Path]:
    """Remove the entries of ``folder`` whose name ``stale`` accepts (files or folders); return them."""
    try:
        entries = [entry for entry in folder.iterdir() if stale(entry.name)]
    except OSError:
        return []
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    return entries


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:40] or "host"


def umask() -> int:
    """The process's umask, read without changing it where the system allows."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: read it by setting it, and put it back at once
    os.umask(mask)
    return mask


def _prefix(path: Path) -> str:
    return f".{path.name}.{_TAG}-{os.getpid()}-"


def alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine may still be running (this one, or one we cannot tell)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # a process of another user, or a system that cannot tell: leave it alone
    return True


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create the folder {str(path.parent)!r} for {str(path)!r}: {_reason(exc)}") from exc


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__
