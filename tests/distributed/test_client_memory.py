"""The Dask engine's client holds no rows: what grows with a table's rows is merged on the workers.

A table of several batches is summarized batch by batch (its distinct values, while fewer than the
table's cap, which grows with its rows), binned for its medians and coded into cross-products; gathered
on the client, these take memory in proportion to the rows (every batch's distinct values at once). They
are merged on the workers, in batch order, and the client receives only the merged ones.
"""
from __future__ import annotations

import threading
from functools import reduce

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from relanon.distributed import anonymize_dataset  # noqa: E402
from relanon.distributed.work import folded  # noqa: E402
from relanon.engine import space_statistics as stats  # noqa: E402
from relanon.schema.model import load_schema  # noqa: E402
from relanon.stores.partitioned import write_part  # noqa: E402

PEOPLE = {"relanon": 1, "name": "people", "tables": {"people": {
    "primary_key": "person_id", "individual": True,
    "columns": {"age": "integer", "sex": "categorical", "income": "continuous"},
    "anonymize": {"method": "avatar", "k": 5}}}}


@pytest.fixture(scope="module")
def in_process():
    """One worker in threads of this process: the client's own calls are those of the main thread."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _shifted(a, b):
    return a * 10 + b  # neither associative nor commutative: only the left fold in order gives it


def _same(x):
    return x


def test_folded_merges_in_the_order_of_the_parts_whatever_the_order_they_end(in_process):
    parts = [in_process.submit(_same, i, pure=False) for i in (3, 1, 4, 1, 5, 9)]
    assert folded(in_process, parts, _shifted).result() == reduce(_shifted, (3, 1, 4, 1, 5, 9)) == 314159
    assert folded(in_process, parts[:1], _shifted).result() == 3


def test_the_client_never_merges_the_statistics_of_a_tables_batches(in_process, tmp_path, monkeypatch):
    """2,400 people in 6 batches of 400: a continuous income of as many values as people (its median found
    by histograms over the batches), ages of 70 values (held by every batch's summary: below the cap); the
    summaries, histograms and cross-products of the batches are merged only by the worker (tasks run in
    its threads), never by the client (the main thread)."""
    rng = np.random.default_rng(0)
    n = 2400
    people = pd.DataFrame({"person_id": np.arange(1, n + 1), "age": rng.integers(18, 88, n),
                           "sex": rng.choice(["F", "M"], n).astype(object),
                           "income": np.round(rng.lognormal(10, 0.5, n), 2)})
    for i, rows in enumerate(np.array_split(np.arange(n), 3)):
        write_part(people.iloc[rows].reset_index(drop=True), tmp_path / "parts" / "people", i)
    by_client = []

    def spied(name, merge):
        def spy(*args, **kwargs):
            if threading.current_thread() is threading.main_thread():
                by_client.append(name)
            return merge(*args, **kwargs)
        return spy

    for name in ("merge_summaries", "merge_bins", "merge_moments"):
        monkeypatch.setattr(stats, name, spied(name, getattr(stats, name)))
    result = anonymize_dataset(load_schema(PEOPLE), tmp_path / "parts", tmp_path / "out", client=in_process,
                               batch_size=400, random_state=1, progress=False)
    state = result.state["people"]
    assert state.n_batches == 6 and state.statistics["income"].fill > 0
    assert by_client == []
    assert len(pd.read_parquet(tmp_path / "out" / "people")) == n
