"""Leader churn: the leadership moving because whoever leads cannot complete the assignment. Inputs are simulator
runs rendered through Kafka's templates of each release (Streams names its leader at INFO from 3.0)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rebalance_doctor
from tests.helpers import simulated as _analysed

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"


@pytest.mark.parametrize("kafka", ["3.0.0", "3.6.0", "4.2.0"])
def test_streams_leaders_stuck_in_their_assignment_are_leader_churn(kafka, tmp_path):
    """Each leader blocks in its assignment past session.timeout.ms; its heartbeats wait for the assignor, so the
    coordinator removes it on session expiry; the next member leads and blocks too. The answer is leader-churn as
    the cause (the assignment, not one member, so no member is named the culprit): the session expirations, the
    waits for the stuck leader and the failed attempts are folded into it, and the followers' SyncGroups that
    timed out waiting for the assignment are not taken for a coordinator problem."""
    _incident, analysis = _analysed("streams-leader-assignment-stuck", 3, kafka, tmp_path)
    [group] = analysis.groups
    first = analysis.findings[0]
    assert first.rule == "leader-churn" and first.severity in ("warning", "critical")
    assert "removed in the middle of its own assignment" in first.title
    assert first.cause and "session.timeout.ms" in first.cause and "assignment" in first.cause
    assert first.culprit is None and first.no_culprit
    assert "session.timeout.ms" in first.remediation and "internal topics" in first.remediation
    top = {f.rule for f in analysis.findings if f.severity != "info"}
    assert top == {"leader-churn"}, top
    assert "heartbeat-expiration" in {f["rule"] for f in first.caused["findings"]}
    took = next(x for x in first.figures if x.name == "assignment_ms")
    assert took.value > 300_000     # the stall is longer than max.poll.interval.ms=300000
    leaders = {r.leader for r in group.timeline.rebalances if r.leader}
    assert len(leaders) >= 3
    assert any("participating in this rebalance" in e.text for e in first.evidence)


@pytest.mark.parametrize("scenario,seed", [("healthy-streams-rolling-restart", 5), ("healthy-streams-scale-in", 6),
                                           ("healthy-rolling-restart", 7), ("poll-timeout-storm", 8)])
def test_a_leader_leaving_for_its_own_reasons_is_no_leader_churn(scenario, seed, tmp_path):
    """A leader closing in a rolling restart or a scale-in, or timing out while the group is stable, hands the
    leadership on legitimately: no leader-churn finding (the poll timeouts stay poll-timeout's)."""
    _incident, analysis = _analysed(scenario, seed, None, tmp_path)
    assert "leader-churn" not in {f.rule for f in analysis.findings}
    if scenario == "poll-timeout-storm":
        assert analysis.findings[0].rule == "poll-timeout"


@pytest.mark.parametrize("release", ["3.9.2", "4.2.1", "4.4.0"])
def test_real_leaders_whose_assignor_outlasts_the_session_are_removed_one_after_the_other(release):
    """Real Kafka (the lab): an application's own assignor looks the load up for 25 s against session.timeout.ms=10000.
    Each leader's heartbeats wait for its assignor, the coordinator removes it on heartbeat expiration, the next
    member leads and is removed too. The answer is the assignment (no member named), the expirations folded into
    it, and the assignment's length measured from the leader's own lines."""
    analysis = rebalance_doctor.analyze(str(LAB / f"assignor-slow-leader@{release}"))
    head = analysis.findings[0]
    assert head.rule == "leader-churn" and "session.timeout.ms" in head.cause
    assert head.culprit is None and head.no_culprit
    assert "heartbeat-expiration" in {f["rule"] for f in head.caused["findings"]}
    took = next(x for x in head.figures if x.name == "assignment_ms")
    assert 25_000 <= took.value < 26_000
    assert [e.text for e in took.evidence][0].find("Successfully joined group") >= 0
    assert {f.rule for f in analysis.findings if f.severity != "info"} == {"leader-churn"}
