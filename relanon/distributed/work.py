"""The run's working folder, and rows moved between partitions through it.

Every intermediate table of a Dask run (the typed originals, the enriched batches, the avatars, the
links) is a directory of Parquet parts in a private working folder, read and written by the workers:
no worker ever holds more than the parts of its task, whatever the size of the database, and the
folder is removed when the run ends (it holds the private link between avatars and originals). It
must lie where every worker can read and write (beside the output, which the workers write too).

:func:`split_rows` and :func:`gather_rows` move rows between partitions (a *shuffle*): each input
partition writes, per target group, the piece of its rows going there (``g00012/p00003.parquet``);
group 12 then reads its pieces in the order of the input partitions. The pieces a group receives,
and their order, depend only on the data, never on the workers or the order tasks ran in.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from relanon.common.atomic import WORK_PREFIX, remove_leftovers, work_prefix
from relanon.stores.partitioned import natural_key, part_name, write_part


@contextlib.contextmanager
def work_folder(beside=None, location=None):
    """A fresh private folder (``.relanon-dask-<host>-<pid>-<random>`` beside ``beside``, or inside
    ``location``), removed on exit, error or interruption included. The leftovers of runs killed
    beyond cleaning (``SIGKILL``, a power cut) in the same place are removed first
    (:func:`relanon.common.atomic.remove_leftovers`)."""
    parent = Path(location) if location is not None else (Path(beside).absolute().parent if beside else None)
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(parent if parent is not None else Path(tempfile.gettempdir()))
    path = Path(tempfile.mkdtemp(prefix=work_prefix(), dir=parent))
    os.chmod(path, stat.S_IRWXU)  # the pairing of avatars and originals passes through it
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def folder(root, *names) -> Path:
    return Path(root).joinpath(*[str(n) for n in names])


def parts_of(directory) -> list[Path]:
    """The Parquet parts of a directory, in order."""
    path = Path(directory)
    if not path.is_dir():
        return []
    return sorted((p for p in path.iterdir() if p.suffix == ".parquet"), key=lambda p: natural_key(p.name))


def read_parts(paths, columns=None) -> pd.DataFrame:
    frames = [pd.read_parquet(p, columns=columns) for p in paths]
    if not frames:
        return pd.DataFrame(columns=columns or [])
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def write(frame: pd.DataFrame, directory, index: int) -> str:
    return str(write_part(frame.reset_index(drop=True), directory, index))


def split_rows(frame: pd.DataFrame, groups: np.ndarray, directory, source: int) -> dict[int, int]:
    """Write the rows of ``frame`` going to each group (``groups[i]`` for row ``i``) as the piece of input
    partition ``source``; returns the rows sent to each group."""
    groups = np.asarray(groups, dtype=np.int64)
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    sent = {}
    for group in np.unique(sorted_groups):
        rows = order[np.searchsorted(sorted_groups, group, "left"):np.searchsorted(sorted_groups, group, "right")]
        write_part(frame.iloc[rows].reset_index(drop=True), Path(directory) / f"g{int(group):05d}", source)
        sent[int(group)] = len(rows)
    return sent


def gather_rows(directory, group: int, columns=None, like: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows every input partition sent to ``group``, in the order of the input partitions.

    A group that received nothing gets an empty frame with the columns and dtypes of ``like``.
    """
    frame = read_parts(parts_of(Path(directory) / f"g{int(group):05d}"), columns)
    if len(frame.columns) == 0 and like is not None:
        return like.iloc[:0].copy()
    return frame



def folded(client, futures: list, merge, **options):
    """The future of ``merge(...merge(merge(r0, r1), r2)..., rn)`` over the results of ``futures``, in their
    order, each merge a task on the workers.

    The client never holds the parts' results (a table's batches' statistics take memory in proportion
    to its rows): only what it asks of the merged one. Merges chained in a fixed order give the bytes of
    ``functools.reduce`` over the same parts, whatever the number of workers.
    """
    total = futures[0]
    for future in futures[1:]:
        total = client.submit(merge, total, future, pure=False, **options)
    return total


__all__ = ["WORK_PREFIX", "folded", "folder", "gather_rows", "part_name", "parts_of", "read_parts", "split_rows",
           "work_folder", "write"]
