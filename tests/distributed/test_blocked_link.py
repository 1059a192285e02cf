"""The Dask engine's ``linear_sum`` link cut into blocks: every block is solved with the settings one machine
uses for the whole link, the minimum-cost flow included (run up to ``FLOW_LIMIT`` children, decided on the whole
link). The limit is lowered so that a link of about 5,000 children in two blocks lies above it."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from relanon.distributed import blocked  # noqa: E402
from relanon.distributed.links import PARENT, part  # noqa: E402
from relanon.distributed.work import read_parts, write  # noqa: E402
from relanon.engine.batches import partition_generator  # noqa: E402
from relanon.multitable import linking  # noqa: E402
from relanon.multitable.linking import assignment  # noqa: E402

SEED = np.random.SeedSequence(3)


def _coords(rows: pd.DataFrame, prefix: str) -> np.ndarray:
    return rows[[f"{prefix}{j}" for j in range(3)]].to_numpy()


def _write_link(base, n_parents: int = 1_400) -> int:
    """Children around their parents in 3 axes, and the parents' slots, as two parts each in the engine's
    layout; returns the number of children."""
    rng = np.random.default_rng(0)
    parents = rng.standard_normal((n_parents, 3))
    slot_parent = np.repeat(np.arange(n_parents), rng.poisson(3, n_parents))
    children = parents[rng.permutation(slot_parent)] + 0.4 * rng.standard_normal((len(slot_parent), 3))
    for side, column, ids, points in (("children", blocked.POS, np.arange(len(children)), children),
                                      ("slots", PARENT, slot_parent, parents[slot_parent])):
        for i, rows in enumerate(np.array_split(np.arange(len(points)), 2)):
            frame = pd.DataFrame({column: ids[rows], **{f"c{j}": points[rows, j] for j in range(3)}})
            write(frame, base / side, i)
    return len(children)


@pytest.mark.parametrize("flow_limit, flow", [(3_000, False), (10**6, True)], ids=["above", "within"])
def test_every_block_is_solved_with_the_whole_links_settings(one_worker, tmp_path, monkeypatch, flow_limit, flow):
    monkeypatch.setattr(assignment, "FLOW_LIMIT", flow_limit)  # the in-process worker sees it
    n = _write_link(tmp_path)
    block_children = -(-n // 2)
    assert n > 3_000 >= block_children > linking.EXACT_LIMIT  # above the lowered limit, blocks below it
    sample = read_parts([part(tmp_path / "children", i) for i in range(2)])[[f"c{j}" for j in range(3)]].to_numpy()
    blocked.solve_blocks(one_worker, tmp_path, 2, 2, n, sample, SEED, block_children)
    size, passes = linking.blocked_settings(n)
    flow_changes = []
    for g in range(2):
        # a block assigns its children to its slots: the parents it holds, as many times as they are chosen
        rows = read_parts([part(tmp_path / "assign-0", g)])
        parents, chosen, counts = np.unique(rows[PARENT].to_numpy(), return_inverse=True, return_counts=True)
        parent_coords = np.zeros((len(parents), 3))
        parent_coords[chosen] = _coords(rows, "p")
        solved = {with_flow: linking.match_linear_sum(_coords(rows, "c"), parent_coords, counts,
                                                      random_state=partition_generator(SEED, "block", g),
                                                      block_size=size, repair_passes=passes, flow=with_flow)
                  for with_flow in (False, True)}
        np.testing.assert_array_equal(chosen, solved[flow])
        flow_changes.append(not np.array_equal(solved[False], solved[True]))
    assert any(flow_changes)  # the flow changes these blocks: the two settings are told apart

