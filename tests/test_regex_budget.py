"""The regex time budget (issue 34 item 6): a timeout bounds one record, a budget bounds a file and a run.

No timing assertion: the budgets are made small, and the accounting must say what was given up and why.
A `--layout` whose record-start regex backtracks (28 adjacent %X{k}: every split of a line between them is
tried) read a 70-line file for over 150 s on fe6ad67, unguarded inside the record bounds' composed regexes.
"""

from __future__ import annotations

import pytest

from rebalance_doctor.core import regex_guard
from rebalance_doctor.core.reader import bounds_of
from rebalance_doctor.core.layouts import layout_from_pattern
from tests.helpers import events_of

SLOW_LAYOUT = "%d " + "%X{k}" * 28 + " %p %m%n"
LINE = ("2024-03-05 10:00:{s:02d},003 a b c d e f g h i j k l m n o p q r s t u v w x y z Preparing to rebalance "
        "group g in state PreparingRebalance with old generation 1 (__consumer_offsets-1) (reason: x)\n")


def _write(path, lines=70):
    path.write_text("".join(LINE.format(s=i % 60) for i in range(lines)), encoding="utf-8")


@pytest.fixture
def small_budgets(monkeypatch):
    monkeypatch.setattr(regex_guard, "FILE_BUDGET_S", 0.3)
    monkeypatch.setattr(regex_guard, "RUN_BUDGET_S", 0.5)


def test_a_custom_layouts_start_regex_is_guarded_inside_the_record_bounds():
    layout = layout_from_pattern(SLOW_LAYOUT)
    assert isinstance(layout.start_regex(), regex_guard.GuardedStart)
    bounds = bounds_of([(layout, None)], _layouts(), _packs())
    assert isinstance(bounds.start, regex_guard.GuardedStart)
    assert isinstance(bounds.following, regex_guard.GuardedStart)


def test_a_file_that_spends_its_budget_says_what_was_given_up(tmp_path, small_budgets):
    _write(tmp_path / "app.log")
    _, stats = events_of(tmp_path / "app.log", layout=SLOW_LAYOUT)
    (file,) = stats.files
    assert file.regex_skipped > 0
    assert any("regex time budget spent (this file's 0.3 s" in p for p in file.problems), file.problems
    assert file.input_lost and stats.lost_input()
    assert stats.to_dict()["regex_skipped"] == file.regex_skipped


def test_the_run_budget_covers_every_file_and_a_new_run_starts_afresh(tmp_path, small_budgets):
    for name in ("a.log", "b.log", "c.log"):
        _write(tmp_path / name)
    _, stats = events_of(tmp_path, layout=SLOW_LAYOUT)
    said = [p for f in stats.files for p in f.problems if "regex time budget spent" in p]
    assert any("the run's 0.5 s (per process)" in p for p in said), said
    # Another run in the same process has its own budget: its first file spends the file's, not the run's.
    _, again = events_of(tmp_path / "a.log", layout=SLOW_LAYOUT)
    assert any("this file's 0.3 s" in p for p in again.files[0].problems)


def test_ordinary_logs_spend_nothing_of_it(tmp_path):
    (tmp_path / "server.log").write_text(
        "[2024-03-05 10:00:00,412] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state "
        "PreparingRebalance with old generation 12 (__consumer_offsets-13) (reason: Removing member orders-1-"
        "74c9df6a-cc01-4cdd-8474-031b7f26144b on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)\n",
        encoding="utf-8")
    events, stats = events_of(tmp_path)
    assert len(events) == 1 and stats.files[0].regex_skipped == 0 and not stats.lost_input()
    assert regex_guard.spent()[1] == 0.0   # a record examined in microseconds is not what the budget bounds


def test_only_slow_calls_spend_the_budget_and_only_their_cpu_time(tmp_path, small_budgets, monkeypatch):
    """A clock that says every call took 5 ms (a machine whose load stretches each record): 2,000 ordinary
    records spend nothing; the budget is spent by calls of SLOW_CALL_S or more."""
    ticks = iter(range(10**9))
    monkeypatch.setattr(regex_guard, "clock", lambda: next(ticks) * 0.0025)
    (tmp_path / "server.log").write_text("".join(
        f"[2024-03-05 10:{i // 60 % 60:02d}:{i % 60:02d},412] INFO [GroupCoordinator 1]: Preparing to rebalance group "
        f"payments in state PreparingRebalance with old generation {i} (__consumer_offsets-13) (reason: x) "
        "(kafka.coordinator.group.GroupCoordinator)\n" for i in range(2000)), encoding="utf-8")
    events, stats = events_of(tmp_path)
    assert len(events) == 2000 and not stats.lost_input() and regex_guard.spent()[1] == 0.0
    monkeypatch.setattr(regex_guard, "clock", lambda: next(ticks) * regex_guard.SLOW_CALL_S)
    events, stats = events_of(tmp_path)
    assert stats.lost_input() and any("regex time budget spent" in p for p in stats.files[0].problems)


def _layouts():
    from rebalance_doctor.core.layouts import load_layouts
    return load_layouts()


def _packs():
    from rebalance_doctor.core.packs import load_packs
    return load_packs()
