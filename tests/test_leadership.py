"""Leader churn: the leadership moving because whoever leads cannot complete the assignment. Inputs are simulator
runs rendered through Kafka's templates of each release (Streams names its leader at INFO from 3.0)."""

from __future__ import annotations

import pytest

from tests.helpers import simulated as _analysed


@pytest.mark.parametrize("kafka", ["3.0.0", "3.6.0", "4.2.0"])
def test_streams_leaders_stuck_in_their_assignment_are_leader_churn(kafka, tmp_path):
    """Each leader blocks in its assignment past max.poll.interval.ms and leaves on poll timeout; the next member
    leads and blocks too. The answer is leader-churn as the cause (the assignment, not one member): the poll
    timeouts, the waits for the stuck leader and the failed attempts are folded into it, and the followers'
    SyncGroups that timed out waiting for the assignment are not taken for a coordinator problem."""
    _incident, analysis = _analysed("streams-leader-assignment-stuck", 3, kafka, tmp_path)
    [group] = analysis.groups
    first = analysis.findings[0]
    assert first.rule == "leader-churn" and first.severity in ("warning", "critical")
    assert "in the middle of their own assignment" in first.title
    assert first.cause and "max.poll.interval.ms" in first.cause and "assignment" in first.cause
    assert "max.poll.interval.ms" in first.remediation and "internal topics" in first.remediation
    top = {f.rule for f in analysis.findings if f.severity != "info"}
    assert top == {"leader-churn"}, top
    assert "poll-timeout" in {f["rule"] for f in first.caused["findings"]}
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
