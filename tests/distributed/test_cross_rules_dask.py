"""Rules across tables on the Dask engine: every declared rule holds in a release of several batches, and a
release of one batch is the local engine's."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from shop_and_league import shop_and_league  # noqa: E402

from relanon.common.progress import Progress  # noqa: E402
from relanon.distributed import anonymize_dataset  # noqa: E402
from relanon.metrics.scenarios import evaluate  # noqa: E402
from relanon.multitable.pipeline import anonymize  # noqa: E402
from relanon.multitable.release import write_release  # noqa: E402
from relanon.schema.cross_rules import broken_rows  # noqa: E402
from relanon.schema.model import load_schema  # noqa: E402
from relanon.schema.proposal import propose_schema  # noqa: E402
from relanon.stores.partitioned import write_part  # noqa: E402

SEED = 1


@pytest.fixture(scope="module")
def shop():
    database = shop_and_league()
    return propose_schema(database).schema, database  # init's defaults: copy, sum, count and within rules


def _parts(schema, database, folder, n_parts: int = 2):
    for table in schema:
        frame = database[table.name]
        for i, rows in enumerate(np.array_split(np.arange(len(frame)), n_parts)):
            write_part(frame.iloc[rows].reset_index(drop=True), folder / table.source_name, i)
    return folder


def test_gather_counted_reports_each_finished_task_and_keeps_the_order(one_worker):
    from relanon.distributed.cluster import gather_counted

    calls = []
    futures = [one_worker.submit(pow, i, 2, pure=False) for i in range(5)]
    assert gather_counted(one_worker, futures, lambda done, total: calls.append((done, total)), 3, 8) == [0, 1, 4, 9, 16]
    assert calls == [(4, 8), (5, 8), (6, 8), (7, 8), (8, 8)]


def _declared(schema) -> list:
    return [(table.name, fk, rule) for table in schema for fk in table.foreign_keys for rule in fk.rules]


@pytest.mark.slow  # two Dask runs and a local one on a small database (about 20 s)
def test_one_batch_of_the_dask_engine_obeys_the_rules_as_the_local_engine(shop, one_worker, tmp_path):
    schema, database = shop
    assert {rule.kind for _, _, rule in _declared(schema)} == {"copy", "sum", "count", "within"}
    with warnings.catch_warnings():  # small tables: what the rare-value rule does is said in warnings
        warnings.simplefilter("ignore")
        local = write_release(anonymize(schema, database, random_state=SEED, progress=False), tmp_path / "local",
                              format="parquet")
        anonymize_dataset(schema, _parts(schema, database, tmp_path / "parts"), tmp_path / "out", client=one_worker,
                          random_state=SEED, progress=False)
    for table in schema:
        expected = pd.read_parquet(local / f"{table.source_name}.parquet")
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / table.source_name / "part.00000.parquet"),
                                      expected)


@pytest.mark.slow
def test_every_rule_holds_in_a_release_of_several_batches(shop, one_worker, tmp_path, capsys):
    schema, database = shop
    spec = schema.to_dict()  # the Dask engine anchors tables of one batch only: the seasons are kept within by the rule
    for fk in spec["tables"]["seasons"]["foreign_keys"]:
        fk.pop("anchor", None)
    schema = load_schema(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = anonymize_dataset(schema, _parts(schema, database, tmp_path / "parts", 3), tmp_path / "out",
                                   client=one_worker, batch_size=100, block_size=200, random_state=SEED,
                                   progress=Progress(bars=True))
    several = {name for name, state in result.state.items() if state.n_batches > 1}
    assert {"invoices", "lines", "seasons"} <= several
    # the bar of a link between batches moves by the blocks and repair groups solved, then leaves its line
    shown = capsys.readouterr().err
    assert "link lines.invoice_id -> invoices (linear_sum): " in shown and " groups [" in shown
    assert "rules across tables (" in shown
    released = {table.name: pd.read_parquet(tmp_path / "out" / table.source_name) for table in schema}
    for name, fk, rule in _declared(schema):
        key = schema[fk.references].primary_key
        assert broken_rows(rule, database[name], database[fk.references], fk.column, key) == 0
        assert broken_rows(rule, released[name], released[fk.references], fk.column, key) == 0, rule
    # the verdict counts them on a Dask release as on a local one: none broken, as in the original
    evaluation = evaluate(schema, database, released, progress=False)
    assert (evaluation.relations["rules_broken"] == 0).all()
    counted = [rule for rules in evaluation.relations["rules"] if isinstance(rules, dict) for rule in rules]
    assert len(counted) == len(_declared(schema)) == 4
