"""Evidence whose group the logs do not name, and leaves whose reason they do not state, on real recordings.

The inputs are the lab's recordings (fixtures/lab: real brokers, real librdkafka and aiokafka consumers).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rebalance_doctor import api
from rebalance_doctor.api import NothingMatched

LAB = Path(__file__).resolve().parent.parent / "fixtures" / "lab"


@pytest.fixture()
def members_only(tmp_path: Path) -> Path:
    """librdkafka consumers at their default log level, without the broker's log: no line names the group."""
    for log in (LAB / "librdkafka-poll-timeout@4.4.0").glob("app-*.log"):
        shutil.copy(log, tmp_path / log.name)
    return tmp_path


def test_unnamed_lines_stay_per_process_without_group(members_only: Path):
    result = api.analyze([members_only])
    assert not result.groups
    [finding] = [f for f in result.findings if f.rule == "poll-timeout"]
    assert finding.group is None and finding.culprit.host == "app-2"


def test_one_group_option_takes_the_unnamed_lines(members_only: Path):
    result = api.analyze([members_only], groups=["orders"])
    assert [g.timeline.group for g in result.groups] == ["orders"]
    [finding] = [f for f in result.findings if f.rule == "poll-timeout"]
    assert finding.group == "orders" and finding.culprit.host == "app-2"
    figures = {f.name: f for f in finding.figures}
    assert figures["max.poll.interval.ms"].value == 20000
    # No rebalance is in these logs: the count is unknown, never 0.
    assert figures["rebalances_started"].value is None
    assert all((e.get("attrs") or {}).get("group_from") == "user" for e in result.event_rows if e.get("library"))


def test_several_group_options_assign_nothing(members_only: Path):
    with pytest.raises(NothingMatched):
        api.analyze([members_only], groups=["orders", "payments"])


def test_aiokafka_leave_and_rejoin_in_process_is_a_poll_timeout():
    result = api.analyze([LAB / "aiokafka-poll-timeout@4.4.0"])
    first = result.findings[0]
    assert first.rule == "poll-timeout" and first.culprit.host == "app-2"
    assert "joined again from the same process" in first.summary
    assert any(e.source == "app-2.log" and "joining group" in e.text for e in first.evidence)
    overrun = {f.name: f for f in first.figures}["overrun_ms"]
    assert 14_000 <= overrun.value <= 16_000      # the lab's 35 s stall minus max_poll_interval_ms=20000


def test_aiokafka_restart_with_stop_is_healthy():
    result = api.analyze([LAB / "aiokafka-healthy-rolling-restart@4.4.0"])
    assert not [f for f in result.findings if f.severity in ("warning", "critical")]
    operations = {r.operation for g in result.groups for r in g.timeline.rebalances}
    assert "poll-timeout" not in operations and "rolling-restart" in operations


def test_aiokafka_lines_carry_their_library():
    result = api.analyze([LAB / "aiokafka-poll-timeout@4.4.0"])
    libraries = {e.get("library") for e in result.event_rows if e.get("source") == "app-2.log" and e.get("library")}
    assert libraries == {"aiokafka"}
