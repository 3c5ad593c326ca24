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
from tests.stories import Broker, StreamsGroup, StreamsInstance, Story


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
