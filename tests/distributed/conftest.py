"""The Dask engine's tests share one in-process worker per module (starting a cluster costs seconds)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def one_worker():
    """A cluster of one worker thread in this process: the bytes it writes are those of any number of workers."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
