"""Progress: bars with time left on a terminal, one line per step elsewhere, nothing when quiet."""

from __future__ import annotations

import io
import re
import time

import numpy as np

from relanon.common import progress as progress_module
from relanon.common.progress import Progress, format_duration
from relanon.multitable.linking import match_linear_sum
from relanon.multitable.linking.assignment import ARCS_SHARE, FLOW_SHARE


def test_one_line_per_step_off_a_terminal(capsys):
    progress = Progress()  # pytest's standard error is no terminal
    assert not progress.bars
    with progress.step("link visits.patient_id -> patients", unit="blocks") as step:
        for done in range(5):
            step(done + 1, 5)
        step.detail = "5 of 5 rows linked"
    err = capsys.readouterr().err
    assert err.splitlines() == [line for line in err.splitlines() if line]
    assert len(err.splitlines()) == 1
    assert re.fullmatch(r"  link visits\.patient_id -> patients \(5 of 5 rows linked\): \d+\.\d s\n", err)


def test_quiet_prints_nothing_and_still_times(capsys):
    progress = Progress(quiet=True, bars=True)
    with progress.step("evaluate patients", total=3) as step:
        step.advance(3)
    progress.say("anything")
    assert capsys.readouterr().err == ""
    assert "evaluate patients" in progress.timings


def test_a_bar_shows_rate_and_time_left_then_leaves_one_line(monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(progress_module.sys, "stderr", terminal)
    progress = Progress(bars=True)
    with progress.step("link prescriptions.visit_id -> visits", unit="blocks") as step:
        for done in range(1, 41):
            step(done, 40)
            time.sleep(0.01)
        drawn = terminal.getvalue()
    assert re.search(r"link prescriptions\.visit_id -> visits: +\d+%\|.*\| \d+/40 blocks \[00:00<00:\d\d, ", drawn)
    last = terminal.getvalue().split("\r")[-1].split("\n")
    assert re.fullmatch(r"  link prescriptions\.visit_id -> visits: \d+\.\d s", [x for x in last if x.strip()][-1])


def test_a_step_of_unknown_size_shows_its_clock(monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(progress_module.sys, "stderr", terminal)
    monkeypatch.setattr(progress_module, "REFRESH_SECONDS", 0.05)
    progress = Progress(bars=True)
    with progress.step("patients: avatarize"):
        time.sleep(0.3)  # nothing advances the step: the clock is redrawn by itself
        drawn = terminal.getvalue()
    assert drawn.count("patients: avatarize ... 00:00") >= 2


def test_warnings_go_above_the_bar(monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(progress_module.sys, "stderr", terminal)
    progress = Progress(bars=True)
    with progress.step("read the data", total=2) as step:
        step.advance()
        progress_module.print_line("warning: something to know")
        step.advance()
    assert "warning: something to know\n" in terminal.getvalue()


def test_linear_sum_reports_every_block_repair_pass_arcs_and_flow():
    rng = np.random.default_rng(0)
    parents, children = rng.normal(size=(300, 2)), rng.normal(size=(3000, 2))
    counts = np.full(300, 10)
    calls = []
    match_linear_sum(children, parents, counts, random_state=0, block_size=500, repair_passes=2, n_jobs=1,
                     progress=lambda done, total: calls.append((done, total)))
    totals = {total for _, total in calls}
    assert len(totals) == 1
    [total] = totals
    groups = 8 * 3  # 3,000 children cut into 8 blocks of at most 500, solved once and repaired twice
    arcs = groups + int(np.ceil(ARCS_SHARE * groups))  # then the candidate arcs and the flow, counted in groups
    assert total == groups + int(np.ceil((ARCS_SHARE + FLOW_SHARE) * groups))
    assert [done for done, _ in calls] == [*range(1, groups + 1), arcs, total]


def test_linear_sum_counts_each_pricing_round_as_a_flow():
    rng = np.random.default_rng(0)
    parents, children = rng.normal(size=(300, 2)), rng.normal(size=(3000, 2))
    calls = []
    match_linear_sum(children, parents, np.full(300, 10), random_state=0, block_size=500, repair_passes=2, n_jobs=1,
                     pricing_rounds=2, progress=lambda done, total: calls.append((done, total)))
    groups = 8 * 3
    total = groups + int(np.ceil((ARCS_SHARE + 3 * FLOW_SHARE) * groups))  # the flow and two rounds
    assert {t for _, t in calls} == {total}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == total


def test_small_links_report_one_exact_solve():
    calls = []
    match_linear_sum([[0.0], [0.2], [5.0]], [[0.0], [5.0]], [1, 2], progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (1, 1)


def test_durations_read_as_people_say_them():
    assert [format_duration(s) for s in (0.04, 59.94, 60, 3599, 7260)] == [
        "0.0 s", "59.9 s", "1 min 00 s", "59 min 59 s", "2 h 01 min"]
