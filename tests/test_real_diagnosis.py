"""The diagnosis of the real third-party excerpts (../shared/real-logs, read in place, never copied).

Each Java excerpt gets what an expert says from INDEX.md's ground truth, or stays quiet when it is
healthy. Where INDEX.md says the root cause is unknown, the test asserts what the lines show and that
no contradicting cause is named (no finding claims a poll timeout, a crash or a pause the lines do not
show). The excerpts whose cause issue 17's rules name get that rule's diagnosis: 003 mass-expiry, 013
sync-group-error-loop's note on the chronic generation, 015 connect-config-mismatch, 051 coordinator-churn,
057 thread-died.
"""

from __future__ import annotations

import pytest

from rebalance_doctor.diagnosis import analyze_events
from tests.helpers import events_of

GUESSES = ("died", "crash", "paused", "GC pause", "poll timeout", "exceeded max.poll.interval.ms")


def diagnose(real_logs, number: str):
    [path] = sorted(real_logs.glob(f"{number}-*.log"))
    events, _ = events_of(path, base_date="2024-01-01")
    return analyze_events(events)


def heads(analysis, group: str | None = None) -> list[str]:
    return [f.rule for g in analysis.groups if group is None or g.timeline.group == group for f in g.findings]


def warnings(analysis) -> list[str]:
    return [f"{f.rule}: {f.title}" for f in analysis.findings if f.severity != "info"]


def test_001_heartbeat_expiry_of_the_other_member(real_logs):
    """A new member joins (gen 12 -> 13, expected), ~95 s later the other member is removed on heartbeat
    expiration (gen 13 -> 14). Why it expired is unknown: no client log."""
    analysis = diagnose(real_logs, "001")
    [g] = analysis.groups
    assert [(r.operation, r.verdict) for r in g.timeline.rebalances] == [("scale-out", "expected"),
                                                                         ("session-timeout", "harmful")]
    [head] = g.findings
    assert head.rule == "heartbeat-expiration" and head.severity == "warning"
    assert head.culprit.member == "source-2cb8abb3-20e9-498f-9512-4f961a3e65b5"
    assert head.culprit.label == "source (member 2cb8abb3)", "two members share client.id source: the member id tells"
    assert "not known" in head.summary and not any(w in head.summary for w in ("the process died", "was alive"))


def test_003_several_members_of_several_groups_expire_in_the_same_second(real_logs):
    """Three members of two groups removed by one coordinator within 4 ms (root cause unknown): mass-expiry
    heads both groups and names the broker that removed them, with what the lines show (the groups, the
    members, the span); the per-member expiries are part of its chain; no process is said to have died."""
    analysis = diagnose(real_logs, "003")
    by_group = {g.timeline.group: g for g in analysis.groups}
    assert set(by_group) == {"agentsGroup-tpc-nca-ofa", "agentsGroup-tpc-nca-two"}
    for name, group in by_group.items():
        head = group.findings[0]
        assert head.rule == "mass-expiry", f"{name}: {[f.rule for f in group.findings]}"
        assert "3 members of 2 groups" in head.summary and "within 3 ms" in head.summary
        assert head.culprit.member is None and head.culprit.client is None, "a shared cause, not one member"
        assert "heartbeat-expiration" in [x["rule"] for x in head.caused["findings"]]
    ofa = by_group["agentsGroup-tpc-nca-ofa"].findings[0]
    assert set(ofa.caused["culprits"]) == {"consumer-agentsGroup-tpc-nca-ofa-36", "consumer-agentsGroup-tpc-nca-ofa-41"}
    for f in analysis.findings:
        assert "the process died" not in f.summary and "was alive" not in f.summary


def test_011_healthy_kip848_reconciliation_stays_quiet(real_logs):
    analysis = diagnose(real_logs, "011")
    [g] = analysis.groups
    assert warnings(analysis) == []
    assert {r.protocol for r in g.timeline.rebalances} == {"consumer"}
    # Five reconciliations of a new assignment (local epochs 0-4: the client's own count, no group epoch).
    assert [r.generation for r in g.timeline.rebalances] == [None] * 5
    assert all(r.verdict == "expected" for r in g.timeline.rebalances)
    assert heads(analysis) == ["healthy-operation"]


def test_041_healthy_kip848_target_assignments_stay_quiet(real_logs):
    analysis = diagnose(real_logs, "041")
    [g] = analysis.groups
    assert warnings(analysis) == []
    assert {r.protocol for r in g.timeline.rebalances} == {"consumer"}
    epoch6 = next(r for r in g.timeline.rebalances if r.generation == 6)
    assert epoch6.outcome == "stable", "both members reached STABLE at epoch 6"
    assert epoch6.operation == "scale-out" and epoch6.culprit.member == "6nc1qt8rSeyTwBh__vZELQ"


def test_043_streams_start_up_is_healthy(real_logs):
    analysis = diagnose(real_logs, "043")
    [g] = analysis.groups
    assert [(r.operation, r.verdict, r.outcome) for r in g.timeline.rebalances] == [("initial-join", "expected", "stable")]
    assert heads(analysis) == ["healthy-operation"] and warnings(analysis) == []


def test_051_mass_expiry_after_the_coordinator_reloads_the_group(real_logs):
    """The coordinator unloads the group, reloads it 3.5 min later, and 30.000 s after the load both members
    are removed at the same instant: loading a group restarts every member's session timer, so these are
    the members whose heartbeats never reached the reloaded coordinator (issue 17: the coordinator moved and
    the clients did not follow), not processes that stopped. Why the coordinator moved is not in the lines."""
    analysis = diagnose(real_logs, "051")
    [g] = analysis.groups
    [head] = g.findings
    assert head.rule == "coordinator-churn" and head.severity == "warning"
    assert set(head.caused["culprits"]) == {"d75ae538-e997-488a-a27a-8ea716f6672e", "4f481c4c-6238-4463-843e-4cbdc29b6b4f"}
    assert "removed 30.0s after" in head.summary and "did not follow" in head.summary
    assert "Loading group metadata" in head.evidence[0].text
    assert "unloaded it at 08:33:00" in head.summary
    assert [r.operation for r in g.timeline.rebalances] == ["coordinator-move"]
    assert not any(w in head.summary for w in ("the process died", "GC pause", "poll timeout"))


@pytest.mark.parametrize("number", ["013", "029", "031", "033", "045", "053"])
def test_unknown_causes_are_not_invented(real_logs, number):
    """INDEX.md: root cause unknown (or a cause no rule of this issue covers). No finding names a poll
    timeout, a crash or a pause, and nothing warns about an expected operation."""
    analysis = diagnose(real_logs, number)
    for f in analysis.findings:
        text = f"{f.title} {f.summary} {f.cause or ''}"
        assert not any(guess in text for guess in GUESSES), f"{number}: {f.rule} guesses: {text[:300]}"
        assert f.rule not in ("poll-timeout", "heartbeat-expiration", "rebalance-storm", "membership-flapping")


def test_015_a_worker_that_read_nothing_of_the_config_topic_forces_rebalances(real_logs):
    """INDEX.md: "Current config state offset -1 does not match group assignment 1. Forcing rebalance." then
    join/sync generation 18; root cause unknown. What the line shows, by the herder's protocol: after
    reading the config topic to the end the worker's offset is still -1 while the leader's assignment
    names offset 1: it read nothing of the config topic, and it forced the rebalance to generation 18
    (issue 17: connect-config-mismatch). Why it read nothing is not in the lines: no guess about it."""
    analysis = diagnose(real_logs, "015")
    [head] = analysis.findings
    assert head.rule == "connect-config-mismatch" and head.severity == "warning"
    assert head.culprit.client == "connect-adminclient-producer"
    assert "-1 against the assignment's 1" in head.summary and "read nothing" in head.summary
    assert "Forcing rebalance" in head.evidence[0].text
    assert [(r.generation, r.operation, r.verdict) for g in analysis.groups for r in g.timeline.rebalances] == \
        [(18, "config-mismatch", "harmful")]
    assert head.caused["rebalances"] == [r.index for g in analysis.groups for r in g.timeline.rebalances]
    assert "config.storage.topic" in head.remediation


def test_057_a_stream_thread_died_of_failed_to_rebalance(real_logs):
    """INDEX.md: KAFKA-9231, "Streams threads may die from recoverable errors with EOS enabled": the thread
    dies with "Failed to rebalance." (issue 17: thread-died; nothing in the excerpt replaces it)."""
    analysis = diagnose(real_logs, "057")
    [head] = analysis.findings
    assert head.rule == "thread-died" and head.severity == "warning"
    assert head.culprit.client == "stream-soak-test-92665673-8057-4ee8-8619-bffd3670817d-StreamThread-2"
    assert "StreamsException" in head.summary and "not replaced" in head.summary
    assert head.evidence[0].line == 1 and "unexpected Kafka exception" in head.evidence[0].text
    assert not any(w in head.summary for w in ("poll timeout", "GC pause", "session timeout"))


def test_013_the_failed_syncgroup_is_seen_without_a_cause(real_logs):
    """INDEX.md: generation 76030, SyncGroup failed because "the group began another rebalance"; root cause
    unknown. What the lines show: one failed SyncGroup (another rebalance began: no error of its own, no loop
    in the window) at a generation that says the group rebalanced tens of thousands of times before
    (issue 17: said by sync-group-error-loop as an info note); no cause is named, nothing warns."""
    [g] = diagnose(real_logs, "013").groups
    failed = [r for r in g.timeline.rebalances if r.outcome == "failed"]
    assert failed and "began another rebalance" in failed[0].failure
    assert failed[0].verdict == "unknown"
    [note] = g.findings
    assert note.rule == "sync-group-error-loop" and note.severity == "info" and note.cause is None
    assert "generation 76030" in note.title and "before these logs" in note.summary
    assert "not a loop" in note.summary


def test_035_commit_failed_after_a_rebalance_is_a_missed_rebalance_without_a_named_cause(real_logs):
    analysis = diagnose(real_logs, "035")
    [head] = analysis.findings
    assert head.rule == "missed-rebalance" and head.cause is None
    assert head.culprit.client == "consumer-8dac1751-9c4e-4dc1-bc6f-c356c1a31c37-3"
