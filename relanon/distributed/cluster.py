"""A Dask cluster to run on: an existing one (its scheduler's address), or a local one started here.

Dask is an optional dependency (the ``dask`` extra: ``pip install -e ".[dask]"``): it is imported only by
:func:`import_distributed`, which names the extra to install when it is missing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import sys

from relanon.common.errors import ParameterError, StorageError
from relanon.common.options import check_integer

EXTRA = '-e ".[dask]"'  # relanon is installed from its clone
CONNECT_SECONDS = 30


def import_distributed():
    """The ``distributed`` module, or a :class:`ParameterError` saying how to install it."""
    try:
        import dask  # noqa: F401
        import dask.dataframe  # noqa: F401
        import distributed
    except ImportError as error:
        raise ParameterError(
            f"the Dask engine needs Dask and its distributed scheduler, which are not installed ({error}); "
            f"install them from relanon's clone with: pip install {EXTRA}"
        ) from None
    return distributed


def gather_counted(client, futures, progress=None, done: int = 0, total: int | None = None) -> list:
    """The results of ``futures``, in their order, calling ``progress(done + i, total)`` as the ``i``-th of them
    finishes (in whatever order the workers finish them: only the count is reported)."""
    if progress is not None:
        for finished, _ in enumerate(import_distributed().as_completed(futures), start=1):
            progress(done + finished, total)
    return client.gather(futures)


def default_workers() -> int:
    """Workers of a local cluster unless told: one per core this process may use."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores)


@contextlib.contextmanager
def cluster(scheduler: str | None = None, workers: int | None = None, *, memory_limit="auto"):
    """A :class:`distributed.Client`: connected to ``scheduler`` (``tcp://host:8786``), or to a
    :class:`distributed.LocalCluster` of ``workers`` processes of one thread each, closed on exit."""
    distributed = import_distributed()
    if scheduler is not None and workers is not None:
        raise ParameterError("give either a scheduler address (an existing cluster) or a number of workers "
                             "(a local cluster), not both")
    if workers is not None:
        check_integer(workers, "the number of workers", minimum=1)
    if scheduler is not None:
        try:
            client = distributed.Client(scheduler, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError) as error:
            raise StorageError(f"cannot reach the Dask scheduler at {scheduler!r} ({error}); start it "
                               "(dask scheduler) or give its address as tcp://host:8786") from None
        try:
            yield client
        finally:
            client.close()
        return
    local = distributed.LocalCluster(
        n_workers=workers or default_workers(), threads_per_worker=1, processes=True, dashboard_address=None,
        memory_limit=memory_limit, silence_logs=logging.ERROR,
    )
    client = distributed.Client(local)
    try:
        yield client
    finally:
        client.close()
        local.close()


def peak_memory() -> int:
    """The largest resident memory this process has held, in bytes (Linux reports kilobytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def worker_peaks(client) -> dict[str, int]:
    """The peak resident memory of each worker process, in bytes, by worker address."""
    return dict(client.run(peak_memory))
