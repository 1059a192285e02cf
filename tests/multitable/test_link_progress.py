"""The progress of long linking steps: reported by units of work through the callback the run passes, ending at the
total, without changing the result; nothing printed when quiet."""
from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.common.progress import Progress
from relanon.multitable.linking import match_linear_sum
from relanon.multitable.linking.anchoring import anchor
from relanon.multitable.linking.assignment import ARCS_SHARE, FLOW_SHARE
from relanon.multitable.linking.nearest import nearest_with_room


class Recorder:
    """A progress callback that keeps every call."""

    def __init__(self):
        self.calls = []

    def __call__(self, done, total):
        self.calls.append((done, total))


def _link(n_parents: int = 1_000, per_parent: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    parents = rng.normal(size=(n_parents, 4))
    counts = np.full(n_parents, per_parent)
    children = np.repeat(parents, per_parent, axis=0) + rng.normal(scale=0.3, size=(n_parents * per_parent, 4))
    return children, parents, counts


def _assert_moves_to_the_end(calls, at_least: int):
    done = [d for d, _ in calls]
    total = calls[-1][1]
    assert len(calls) >= at_least
    assert all(a <= b for a, b in zip(done, done[1:], strict=False))  # never backwards
    assert all(d <= t for d, t in calls)
    assert done[-1] == total > 0


def test_a_long_linear_sum_link_reports_its_blocks_repairs_and_flow_and_ends_at_the_total():
    children, parents, counts = _link()
    recorder = Recorder()
    with_progress = match_linear_sum(children, parents, counts, random_state=1, n_jobs=1, progress=recorder)
    # 3,000 children: blocks of at most 500 and 6 repair passes, then the candidate arcs and the flow
    _assert_moves_to_the_end(recorder.calls, at_least=8 * 7 + 2)
    groups = 8 * 7
    arcs, flow = groups + int(np.ceil(ARCS_SHARE * groups)), groups + int(np.ceil((ARCS_SHARE + FLOW_SHARE) * groups))
    assert [done for done, _ in recorder.calls[-3:]] == [groups, arcs, flow]
    assert {total for _, total in recorder.calls} == {flow}  # the time left counts the arcs and the flow from the start
    # the progress changes nothing: the same assignment as without it
    assert match_linear_sum(children, parents, counts, random_state=1, n_jobs=1).tolist() == with_progress.tolist()


def test_minimum_distance_reports_the_children_placed():
    children, parents, _ = _link(200, 5)
    recorder = Recorder()
    placed = nearest_with_room(children, parents, np.full(200, 6), progress=recorder)
    _assert_moves_to_the_end(recorder.calls, at_least=2)
    assert recorder.calls[-1] == (1_000, 1_000)
    assert placed.tolist() == nearest_with_room(children, parents, np.full(200, 6)).tolist()


def test_anchoring_reports_the_rows_redrawn():
    rng = np.random.default_rng(0)
    first = rng.integers(1990, 2010, 3_000)
    kids = pd.DataFrame({"year": first + rng.integers(0, 10, 3_000), "p::first": first})
    targets = pd.DataFrame({"year": rng.integers(1990, 2020, 2_500), "p::first": rng.integers(1990, 2010, 2_500)})
    types = {"year": "integer", "p::first": "integer"}
    recorder = Recorder()
    out = anchor(kids, targets, types, {}, ["year"], ["p::first"], k=5, ncp=None, random_state=0, progress=recorder)
    _assert_moves_to_the_end(recorder.calls, at_least=1)
    assert recorder.calls[0][1] == 2_500 <= recorder.calls[-1][1]
    again = anchor(kids, targets, types, {}, ["year"], ["p::first"], k=5, ncp=None, random_state=0)
    pd.testing.assert_frame_equal(out, again)


def test_the_bar_of_a_link_reaches_its_total_and_quiet_prints_nothing(capsys):
    children, parents, counts = _link(800)
    with Progress(bars=True).step("link", unit="groups") as step:
        match_linear_sum(children, parents, counts, random_state=1, n_jobs=1, progress=step)
        bar = step.bar
        assert bar.total > 1 and bar.n == bar.total
        bar.refresh()  # drawn at its end: tqdm redraws at most every 0.2 s, so how often it drew depends on the machine
    drawn = capsys.readouterr().err
    # the full bar, then the step's line
    assert f"{bar.total}/{bar.total} groups [" in drawn and drawn.splitlines()[-1].startswith("  link: ")
    with Progress(quiet=True, bars=True).step("link", unit="groups") as step:
        match_linear_sum(children, parents, counts, random_state=1, n_jobs=1, progress=step)
    assert capsys.readouterr() == ("", "")
