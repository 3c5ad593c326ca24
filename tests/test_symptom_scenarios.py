"""The symptom rules on the simulator stories that are theirs to answer (issue 16): a member that misses
rebalances because it hears of them too late (missed-rebalance names the setting), and a storm whose cause is
not in the collected logs (rebalance-storm says so and names the process without a log), and rebalances failed
by members outside the collected logs (failed-rebalance-loop). Each beside the healthy look-alike that must stay
quiet.
"""

from __future__ import annotations

import re

import pytest

from rebalance_doctor.diagnosis import analyze_events
from rebalance_doctor.rules import engine, missed_rebalance
from rebalance_doctor.rules.config import AnalysisConfig
from rebalance_doctor.sim.scenarios import run
from tests.helpers import events_of
from tests.test_diagnosis import _run, session_loss_then_lost_partitions


def _analyze(incident, tmp_path):
    directory = incident.write(tmp_path / f"{incident.truth.scenario}-{incident.truth.seed}")
    events, _ = events_of(directory)
    return analyze_events(events)


@pytest.mark.parametrize("kafka", ["2.4.0", "3.6.0"])
def test_heartbeats_sparser_than_the_rebalance_timeout_miss_rebalances(kafka, tmp_path):
    """2.4 brokers remove the members that did not rejoin silently, 3.6 says 'removed dynamic members who haven't
    joined': either way the answer is the heartbeat setting, not a busy member (rebalance-stall) nor the poll loop."""
    incident = run("heartbeat-misses-rebalance", 11, kafka)
    texts = incident.render()
    assert any("Giving away all assigned partitions as lost" in text for text in texts.values())
    assert not any("consumer poll timeout has expired" in text for text in texts.values())
    findings = _analyze(incident, tmp_path).findings
    head = findings[0]
    assert head.rule == "missed-rebalance" and head.severity in ("warning", "critical")
    assert "heartbeat.interval.ms=" in head.cause and "max.poll.interval.ms=" in head.cause
    assert "Lower heartbeat.interval.ms" in head.remediation and "max.poll.records" not in head.remediation
    assert head.caused["rebalances"], "the rebalances it missed and its returns are its chain's"
    heads = [f.rule for f in findings]
    assert "rebalance-stall" not in heads and "rebalance-storm" not in heads, heads
    assert all(f.severity == "info" for f in findings[1:]), heads


def test_tight_heartbeats_with_time_to_hear_are_healthy(tmp_path):
    """The look-alike: heartbeat.interval.ms above a third of the session, but well below max.poll.interval.ms."""
    for seed in range(1, 13):
        texts = run("healthy-tight-heartbeat", seed).render()
        dumps = "".join(texts.values())
        heartbeat = {int(v) for v in re.findall(r"heartbeat\.interval\.ms = (\d+)", dumps)}
        max_poll = {int(v) for v in re.findall(r"max\.poll\.interval\.ms = (\d+)", dumps)}
        if heartbeat and max_poll:
            assert min(max_poll) >= 2 * max(heartbeat) + 10_000, (seed, heartbeat, max_poll)
    findings = _analyze(run("healthy-tight-heartbeat", 1315664495), tmp_path).findings
    assert all(f.severity == "info" for f in findings), [(f.rule, f.severity) for f in findings]


def test_missed_rebalance_advice_follows_the_evidence_on_session_loss(tmp_path):
    """Its own advice (read when it stands alone) names the session, not max.poll.*, when the session expired."""
    analysis = _run(session_loss_then_lost_partitions, tmp_path)
    [timeline] = [g.timeline for g in analysis.groups]
    [finding] = missed_rebalance.check(timeline, engine.thresholds("missed-rebalance", AnalysisConfig()))
    assert "session" in finding.summary and "session" in finding.remediation
    assert "max.poll.records" not in finding.remediation and finding.cause is None


def test_a_storm_from_a_process_outside_the_logs_is_said_unexplained(tmp_path):
    incident = run("unlogged-member-storm", 3, "3.6.0")
    texts = incident.render()
    assert not any("GroupCoordinator" in text for text in texts.values()), "the coordinator's log is not collected"
    job = re.search(r"\((\S+-job), group\.id=", incident.truth.story)[1]
    assert not any(f"clientId={job}," in text for text in texts.values()), "nor the job's"
    findings = _analyze(incident, tmp_path).findings
    head = findings[0]
    assert head.rule == "rebalance-storm" and head.cause is None
    assert "no logged cause" in head.summary and f"client.id {job}" in head.summary
    assert head.culprit is not None and head.culprit.client == job
    assert head.remediation.startswith("Their cause is not in these logs: collect the coordinator's log")
    assert [f.rule for f in findings[1:]] in ([], ["eager-assignor"])


def test_rebalances_failed_by_members_outside_the_logs_are_the_answer(tmp_path):
    """Cooperative members with batches of seconds hold each SyncGroup phase open (2.6+: they keep processing while
    they rejoin and handle the JoinGroup response at their next poll); pods outside the collected logs join and
    leave meanwhile. The failed attempts are the answer, their cause said to be unlogged; the storm folds into them."""
    incident = run("unlogged-joins-fail-rebalances", 3, "3.6.0")
    texts = incident.render()
    assert not any("GroupCoordinator" in text for text in texts.values()), "the coordinator's log is not collected"
    failed = sum(text.count("SyncGroup failed: The group began another rebalance") for text in texts.values())
    assert failed >= 4
    findings = _analyze(incident, tmp_path).findings
    head = findings[0]
    assert head.rule == "failed-rebalance-loop" and head.severity in ("warning", "critical")
    assert "What interrupted them: not logged" in head.summary
    assert head.remediation.startswith("Find what joins and leaves the group outside these logs")
    # The leader's 'Finished assignment' maps name the pods' member ids: they share the service's default
    # client.id, but every collected process names its own member id, so the others are told apart by id.
    named = re.search(r"no collected log names as its own: client\.id (\S+) \((\d+) member id", head.summary)
    assert named is not None, head.summary
    own_ids = {m for text in texts.values() for m in re.findall(r"memberId='([^']+)'", text)}
    maps = [line for text in texts.values() for line in text.splitlines() if "Finished assignment for group" in line]
    outsiders = {m for line in maps for m in re.findall(r"[{ ]([^\s{},=]+)=Assignment\(", line)} - own_ids
    assert 2 <= int(named[2]) <= len(outsiders), "only ids that no collected log names (of the failed rounds)"
    assert all(m.startswith(named[1] + "-") for m in outsiders)
    assert head.culprit is None, "the service's members use that client.id too: naming it would point at them"
    # The pods' joins bring cooperative followups too: a symptom of the same churn, allowed beside it.
    assert all(f.severity == "info" or f.rule in ("cooperative-followup-loop", "rebalance-storm")
               for f in findings[1:]), [(f.rule, f.severity) for f in findings]


@pytest.mark.parametrize("scenario,seed", [("healthy-rolling-restart", 1), ("healthy-cooperative-scale-out", 3),
                                           ("healthy-autoscaling-client-logs-only", 1)])
def test_no_member_is_said_to_be_outside_the_logs_when_every_log_is_there(scenario, seed, tmp_path):
    """Restarts give members new member ids, each printed in the member's own log: none of them is an outsider."""
    from rebalance_doctor.classify import of
    from rebalance_doctor.classify.members import unlogged_assignees

    analysis = _analyze(run(scenario, seed), tmp_path)
    for group in analysis.groups:
        timeline = group.timeline
        assert unlogged_assignees(timeline, timeline.rebalances, of(timeline).members) == {}


@pytest.mark.parametrize("seed", [1, 2133894791, 204920075])
def test_autoscaling_seen_from_the_members_logs_only_is_healthy(seed, tmp_path):
    """The storm's look-alike: members come and go as often, without the coordinator's log, but each logs its own
    start and close. The last member scaled in and out each round is no restart loop: other members left and
    arrived between its departure and its return (the generations say so; 2133894791 and 204920075 of seed 1616
    were taken for membership flapping when only departure and arrival lines counted)."""
    findings = _analyze(run("healthy-autoscaling-client-logs-only", seed), tmp_path).findings
    assert findings[0].rule == "healthy-operation"
    assert all(f.severity == "info" for f in findings), [(f.rule, f.severity) for f in findings]
