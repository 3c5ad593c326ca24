"""Cooperative followups: the second round of an incremental cooperative rebalance only hands out what the first
revoked. Inputs are simulator runs rendered through Kafka's templates of each release."""

from __future__ import annotations

import pytest

from rebalance_doctor.classify import of
from tests.helpers import simulated as _analysed


@pytest.mark.parametrize("kafka", ["2.4.0", "2.8.0", "3.6.0", "4.2.0"])
def test_a_cooperative_assignor_whose_rounds_never_converge_is_the_answer(kafka, tmp_path):
    """An application's own cooperative assignor (its name says nothing of the protocol) moves a partition at every
    round: each followup revokes again with the same members. The protocol is read from the members' own
    'need to revoke partitions' lines; every followup after the first is harmful; the loop finding comes first and
    names the assignor's run as the cause, the storm is folded into it, and nothing calls the group healthy."""
    incident, analysis = _analysed("cooperative-assignor-never-converges", 5, kafka, tmp_path)
    [group] = analysis.groups
    rebalances = group.timeline.rebalances
    assert of(group.timeline).protocol == "cooperative"
    by_index = {r.index: r for r in rebalances}
    followups = [r for r in rebalances if r.operation == "cooperative-followup"]
    again = [r for r in followups if r.cause_index in by_index
             and by_index[r.cause_index].operation == "cooperative-followup"]
    assert len(again) >= 3 and all(r.verdict == "harmful" for r in again)
    assert all(r.verdict == "expected" for r in followups if r not in again), "the first followup is the protocol"
    truth = {r.generation: r.verdict for r in incident.truth.rebalances}
    assert all(r.verdict == truth[r.generation] for r in rebalances if r.generation in truth)
    first = analysis.findings[0]
    assert first.rule == "cooperative-followup-loop" and first.severity in ("warning", "critical")
    assert "never converge" in first.title and first.cause and "assignor" in first.cause
    assert "LagBalancingAssignor" in first.summary
    assert "healthy-operation" not in {f.rule for f in analysis.findings}
    assert {f["rule"] for f in first.caused["findings"]} <= {"rebalance-storm"}
    assert any("revoke" in e.text.lower() for e in first.evidence)


@pytest.mark.parametrize("scenario,seed", [("healthy-cooperative-scale-out", 3), ("healthy-rolling-restart", 4),
                                           ("healthy-cooperative-upgrade", 2), ("healthy-streams-probing", 392343547)])
def test_followups_that_settle_are_expected(scenario, seed, tmp_path):
    """A followup that hands out what the round before revoked settles the group (a Streams assignor balancing over a
    few immediate followups after a probe too): expected, no loop finding, the healthy note."""
    _incident, analysis = _analysed(scenario, seed, None, tmp_path)
    [group] = analysis.groups
    assert all(r.verdict == "expected" for r in group.timeline.rebalances
               if r.operation in ("cooperative-followup", "probing-followup"))
    assert [f.rule for f in analysis.findings if f.severity != "info"] == []
    assert "healthy-operation" in {f.rule for f in analysis.findings}


def test_a_revocation_deferred_by_a_failed_sync_is_not_a_new_move(tmp_path):
    """A rolling restart (cooperative-sticky, 3.6): the restarted member joins, the leader revokes and rejoins at
    once, and the other members' SyncGroup of that round fails ("The group began another rebalance"): they never
    received its assignment, still own what it took from them, and revoke it one round late, in the followup. The
    followup of that followup completes the first move: expected, no loop finding, the healthy note. (Before, the
    revocation in the followup read as the assignor moving partitions again with the same members.)"""
    _incident, analysis = _analysed("healthy-heartbeat-at-a-third", 1414722175, None, tmp_path)
    [group] = analysis.groups
    timeline = group.timeline
    by_index = {r.index: r for r in timeline.rebalances}
    again = [r for r in timeline.rebalances if r.operation == "cooperative-followup"
             and by_index.get(r.cause_index) is not None and by_index[r.cause_index].operation == "cooperative-followup"]
    # In each member's own log: its SyncGroup of generation g failed, then it synced g + 1 and revoked partitions.
    missed: dict = {}          # member -> the generation whose SyncGroup failed last
    synced: dict = {}          # member -> (the generation it synced, the one it missed just before)
    late: set = set()          # generations a member revoked in after missing the one before
    for e in timeline.events:
        who, text = timeline.who(e), e.get("message") or ""
        if e["event"] == "sync.failed":
            missed[who] = e.get("generation")
        elif e["event"] == "sync.success":
            synced[who] = (e.get("generation"), missed.pop(who, None))
        elif e["event"] == "assignment.received" and who in synced and synced[who][1] is not None \
                and "Revoked partitions (owned - assigned):     []" not in text and "Revoked partitions" in text:
            late.add(synced[who][0])
    generations = {r.generation: r for r in again}
    deferred = [g + 1 for g in late if g + 1 in generations]   # the followup each late revocation needed
    assert deferred, "a followup of a followup whose revokers missed the round before"
    assert all(r.verdict == "expected" for r in again)
    assert [f.rule for f in analysis.findings if f.severity != "info"] == []
    assert "healthy-operation" in {f.rule for f in analysis.findings}


def test_logs_that_begin_in_the_middle_of_a_rebalance_say_nothing_of_its_cause(tmp_path):
    """The collected logs begin inside a rebalance: before its first join, only a member saying the group is
    rebalancing (its heartbeat failed) and revoking to rejoin; no coordinator line prepared it. That rebalance is
    truncated, not an unexplained one: the rolling restart after it is the group's story, told healthy."""
    _incident, analysis = _analysed("healthy-tight-heartbeat", 1315664495, None, tmp_path)
    [group] = analysis.groups
    first = group.timeline.rebalances[0]
    assert first.truncated and first.operation == "unknown"
    before = [e for e in group.timeline.events if e["ts"] < first.start]
    assert before and all(e["event"] == "heartbeat.failed" for e in before)
    assert [f.rule for f in analysis.findings if f.severity != "info"] == []
    assert analysis.findings[0].rule == "healthy-operation"
