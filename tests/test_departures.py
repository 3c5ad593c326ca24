"""How members leave, as the classification reads it (classify/members.py, classify/operations.py).

A Kafka Streams consumer sends no LeaveGroup on close (internal.leave.group.on.close=false), so the
coordinator removes a cleanly closed instance on heartbeat expiration: a planned departure, never a
heartbeat-expiration finding; an instance that died (no shutdown lines) and expired is one. A member whose
process keeps dying and being started again is a restart loop (membership-flapping names it first), not a
series of session timeouts; autoscaling, rolling restarts and two-bounce upgrades are no loop.

Real inputs: incidents of the simulator rendered through Kafka's own templates at each release, and stories
in Kafka's wording (tests/stories.py).
"""

from __future__ import annotations

import pytest

from rebalance_doctor.classify import of
from rebalance_doctor.classify.operations import EXPIRED, PLANNED
from rebalance_doctor.packgen.inventory import VERSIONS
from rebalance_doctor.sim.scenarios import SCENARIOS
from tests.helpers import simulated
from tests.stories import ST, Broker, StreamsGroup, StreamsInstance, Story


_analysed = simulated


def _expiries(group) -> list:
    """Every removal on session timeout the classification placed in a rebalance, with its kind."""
    changes = of(group.timeline).changes
    return [d for change in changes.values() for d in change.departures
            if d.event["event"] in ("member.expired", "rebalance.prepare") and d.kind in (EXPIRED, PLANNED)]


def _warnings(analysis) -> list[str]:
    return [f"{f.rule}: {f.title}" for f in analysis.findings if f.severity != "info"]


def _releases(scenario: str) -> list[str]:
    low, high = SCENARIOS[scenario].versions
    return [v for v in VERSIONS if low <= v <= high]


# -- a Streams instance closed cleanly leaves by expiring --------------------------------------------------------
@pytest.mark.parametrize("kafka", _releases("healthy-streams-scale-in"))
def test_streams_instance_closed_cleanly_expires_as_a_planned_departure(kafka, tmp_path):
    """At every release the simulator renders the stream-client's and the StreamThreads' shutdown lines and the
    coordinator's removal one session.timeout.ms later: every such removal is planned, nothing warns."""
    _, analysis = _analysed("healthy-streams-scale-in", 16, kafka, tmp_path)
    [group] = analysis.groups
    expiries = _expiries(group)
    assert expiries, "the scale-in removes the closed instances on heartbeat expiration"
    assert {d.kind for d in expiries} == {PLANNED}, [(d.who, d.kind) for d in expiries]
    assert _warnings(analysis) == []


@pytest.mark.parametrize("kafka", _releases("healthy-streams-rolling-restart"))
def test_streams_rolling_restart_never_warns(kafka, tmp_path):
    _, analysis = _analysed("healthy-streams-rolling-restart", 16, kafka, tmp_path)
    assert _warnings(analysis) == []


def _streams_restarts(*clean: bool):
    """Three Streams instances; node2 restarted once per entry of `clean` (False: its process is killed)."""
    story = Story("catalog")
    group = StreamsGroup(story, Broker(story))
    instances = [StreamsInstance(story, f"node{i}", "catalog", i + 1, 10 + i) for i in range(3)]
    group.start_with(*instances)
    restarted = instances[2]
    for n, closed in enumerate(clean):
        group.tick(90)
        restarted = group.restart(restarted, 30 + n, followups=("stable",), clean=closed)
    return story


def test_streams_instance_that_died_and_expired_is_a_finding(tmp_path):
    """No shutdown lines: the process died; its removal is a heartbeat-expiration finding that says so."""
    analysis = _streams_restarts(False).analyze(tmp_path)
    head = analysis.findings[0]
    assert head.rule == "heartbeat-expiration" and head.culprit.host == "node2"
    assert "the process died" in head.summary


def test_streams_clean_restart_is_no_finding(tmp_path):
    analysis = _streams_restarts(True).analyze(tmp_path)
    assert _warnings(analysis) == []
    [group] = analysis.groups
    assert [d.kind for d in _expiries(group)] == [PLANNED]


def test_a_close_of_an_earlier_process_does_not_cover_a_later_death(tmp_path):
    """node2 closes cleanly and comes back (same Streams process id, so the same thread identity); its new
    process is then killed: only the second removal is a finding. A close belongs to the process that
    logged it (the member id the coordinator removes places the process)."""
    analysis = _streams_restarts(True, False).analyze(tmp_path)
    [group] = analysis.groups
    assert [d.kind for d in _expiries(group)] == [PLANNED, EXPIRED]
    head = analysis.findings[0]
    assert head.rule == "heartbeat-expiration" and "(1 time(s))" in head.title


# -- a crash loop is membership-flapping; orderly operations are not ------------------------------------------------
@pytest.mark.parametrize("kafka", ["2.4.0", "3.9.0", "4.2.0"])
def test_crash_loop_is_membership_flapping_naming_the_host(kafka, tmp_path):
    """A member killed and restarted again and again (no close, no LeaveGroup): its restarts without close are a
    restart loop, the answer is membership-flapping naming its host, not heartbeat-expiration. At 2.4 the client
    does not log its member id and every host uses the same client.id: the member's own process starts tell."""
    incident, analysis = _analysed("crash-loop", 7, kafka, tmp_path)
    [want] = [f for f in incident.truth.findings if f.first]
    head = analysis.findings[0]
    assert head.rule == "membership-flapping", [(f.rule, f.title) for f in analysis.findings]
    assert (head.culprit.host, head.culprit.client) == (want.culprit["host"], want.culprit["client"])
    assert head.cause and "restarts again and again" in head.cause
    [group] = analysis.groups
    loop = [r for r in group.timeline.rebalances if r.operation == "restart-loop"]
    assert loop and all(r.verdict == "harmful" and r.culprit.host == want.culprit["host"] for r in loop)


@pytest.mark.parametrize("scenario", ["healthy-eager-autoscaling", "healthy-eager-rolling-restarts",
                                      "healthy-cooperative-upgrade"])
@pytest.mark.parametrize("seed", [3, 16])
def test_orderly_operations_are_no_restart_loop(scenario, seed, tmp_path):
    """Autoscaling (members away while the group changes: scale-in, then scale-out), two rolling restarts and the
    two-bounce upgrade (every member restarted alike, in turn): expected, no loop, nothing warns."""
    _, analysis = _analysed(scenario, seed, None, tmp_path)
    for group in analysis.groups:
        assert [r.operation for r in group.timeline.rebalances if r.verdict != "expected"] == []
    assert _warnings(analysis) == []


@pytest.mark.parametrize("seed", [2078660773, 117353093, 1293733809])
def test_kip848_rolling_restart_beginning_the_window_is_healthy(seed, tmp_path):
    """A KIP-848 epoch lasts until every member reconciled, so a quick restart's leave and its process start fall
    in one epoch: that member left (`left the consumer group`, no reason logged) and started again, a restart, and
    its join in the next epoch is its return. The whole series is a rolling restart: the healthy note, no warning."""
    _incident, analysis = _analysed("healthy-kip848-rolling-restart", seed, None, tmp_path)
    [group] = analysis.groups
    rebalances = group.timeline.rebalances
    assert [f.rule for f in analysis.findings] == ["healthy-operation"]
    assert all(r.verdict == "expected" for r in rebalances)
    first_leave = next(r for r in rebalances if any(e["event"] == "member.leave" for e in r.events))
    assert first_leave.operation == "rolling-restart"
    assert rebalances[rebalances.index(first_leave) + 1].operation == "rolling-restart"


def test_a_restart_whose_return_no_line_names_is_a_restart_not_a_scale_in(tmp_path):
    """Issue 16, plan seed 1002: a two-bounce upgrade on 2.4.0 where one member's return is logged by no arrival
    line. It left (LeaveGroup, "the consumer is being closed") and its new process joined while the group was
    still PreparingRebalance for that leave: the coordinator logs no "Adding new member" then, a 2.4 broker logs
    the new member id at DEBUG only, and a 2.4 client's "Successfully joined group with generation 5" names none.
    Its own log (the process starting, the join) says it came back within that rebalance: a restart. Read as a
    member leaving for good, the other member's two restarts looked like one member restarting again and again
    (membership-flapping, "2 departures without a timeout explaining them") on a healthy upgrade."""
    incident, analysis = _analysed("healthy-cooperative-upgrade", 145878847, None, tmp_path)
    assert incident.truth.kafka == "2.4.0" and incident.truth.healthy
    [group] = analysis.groups
    rebalances = group.timeline.rebalances
    assert [(r.generation, r.operation) for r in rebalances if r.verdict != "expected"] == []
    assert "scale-in" not in [r.operation for r in rebalances]
    assert _warnings(analysis) == []
    assert [f.rule for f in analysis.findings] == ["healthy-operation"]


def _streams_restart_cut_before_the_expiry(clean: bool):
    """node2's Streams process stops (clean: its shutdown lines; else killed, none) and starts again (the same
    process id from its state directory, a new member id); the logs end while the coordinator still waits for the
    old member id, which no LeaveGroup removed (a Streams consumer sends none on close)."""
    story = Story("catalog")
    broker = Broker(story)
    group = StreamsGroup(story, broker)
    instances = [StreamsInstance(story, f"node{i}", "catalog", i + 1, 10 + i) for i in range(3)]
    group.start_with(*instances)
    group.rebalance(None, ["stable"])
    group.tick(60)
    old = instances[2]
    if clean:
        old.client_state("RUNNING", "PENDING_SHUTDOWN")
        old.thread_state("RUNNING", "PENDING_SHUTDOWN")
    else:
        old.stream("Processed 1000 total records", logger=ST)
    group.tick(5)
    new = StreamsInstance(story, old.host, old.app, 3, 40)
    new.client_state("CREATED", "REBALANCING")
    new.thread_state("CREATED", "STARTING")
    reason = f"need to re-join with the given member-id: {new.consumer.member}"
    new.consumer.request_join(reason)
    new.consumer.joining()
    broker.new_member(new.consumer.member, group.gen, reason)
    for other in instances[:2]:
        story.later(3)
        other.consumer.request_join("group is already rebalancing")
        other.consumer.joining()
    return story


def test_a_streams_instance_closed_and_started_again_is_a_restart_not_a_crash(tmp_path):
    """Kafka 4.4.0 lab (streams-healthy-rolling-restart): the instance logged its shutdown (PENDING_SHUTDOWN), its
    new process joined with a new member id while the old id was still in the group (no LeaveGroup on close): a
    restart on purpose, expected; read as a process that started again without leaving, it was a crash."""
    analysis = _streams_restart_cut_before_the_expiry(clean=True).analyze(tmp_path / "clean")
    [group] = analysis.groups
    last = group.timeline.rebalances[-1]
    assert (last.operation, last.verdict, last.culprit.host) == ("rolling-restart", "expected", "node2")
    assert _warnings(analysis) == []
    killed = _streams_restart_cut_before_the_expiry(clean=False).analyze(tmp_path / "killed")
    [group] = killed.groups
    last = group.timeline.rebalances[-1]
    assert (last.operation, last.verdict) == ("crash", "harmful"), "no shutdown line: the process died"



def _at(seconds: float):
    from datetime import datetime, timedelta, timezone
    return datetime(2026, 12, 6, 4, 39, tzinfo=timezone.utc) + timedelta(seconds=seconds)


def test_a_stream_thread_started_in_a_running_client_is_no_process_restart():
    """Kafka 4.4.0 lab (streams-thread-replacement-loop): REPLACE_THREAD starts a new StreamThread in the running
    client, under the dead thread's name once (StreamThread-2 again); each thread's start is several lines apart (its
    consumer's config dump, then CREATED -> STARTING). Read as process restarts without close they made a restart
    loop and membership-flapping. A thread restarts with its client's process: only the client's restarts count."""
    from rebalance_doctor.classify.members import Member, Members
    node = "catalog-00000000-0000-4000-8000-000000000001"
    thread = f"{node}-StreamThread-2"
    members = Members()
    members.by_identity[node] = Member(node, starts=[_at(20.3)], own_times=[_at(20.3), _at(50)])
    members.by_identity[thread] = Member(thread, starts=[_at(20.25), _at(20.33), _at(62.82), _at(62.85)],
                                         closes=[_at(47.8)],
                                         own_times=[_at(20.26), _at(20.4), _at(30), _at(62.83), _at(62.9)])
    assert members.restarts_without_close(thread) == []
    members.by_identity[node].starts.append(_at(90))          # the client's process starts again, no close logged
    members.by_identity[node].own_times.append(_at(91))
    assert members.restarts_without_close(thread) == [_at(90)]


def test_partitions_lost_by_a_closing_consumer_are_no_missed_rebalance():
    """A StreamThread at PENDING_SHUTDOWN whose consumer closes while the group rebalances gives its partitions up as
    lost ("at state PENDING_SHUTDOWN: partitions [...] lost due to missed rebalance"): that is its leave. The same
    line from a thread of a later process that logged no close is a missed rebalance."""
    from rebalance_doctor.classify.members import Member, Members
    from rebalance_doctor.rules.missed_rebalance import _closing
    thread = "catalog-00000000-0000-4000-8000-000000000001-StreamThread-1"
    members = Members()
    members.by_identity[thread] = Member(thread, starts=[_at(20), _at(100)], closes=[_at(62.8)])
    assert _closing(members, thread, _at(63.06))
    assert not _closing(members, thread, _at(30))
    assert not _closing(members, thread, _at(120)), "a close of an earlier process says nothing of this one"
