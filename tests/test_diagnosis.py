"""Issue 16's "What was seen", one case each: protocol-exact stories (tests/stories.py) and the diagnosis an
expert gives them. The table names the bullet, the reason, the chain heads (the first is the answer),
the symptom findings that must be folded into a head, and the rules that must not head a chain.
"""

from __future__ import annotations

import pytest

from rebalance_doctor.diagnosis import analyze_events
from rebalance_doctor.classify import of
from rebalance_doctor.rules import config as rule_config
from rebalance_doctor.rules import membership_flapping
from tests.helpers import events_of
from tests.stories import (Broker, ClassicGroup, Consumer, ConsumerProtocolGroup, StreamsGroup, StreamsInstance,
                           Story, uuid)

NOISY = ["rebalance-storm", "failed-rebalance-loop", "membership-flapping", "missed-rebalance", "leader-churn",
         "cooperative-followup-loop", "probing-rebalance-cadence"]


def cooperative_rolling_restart():
    story = Story("orders")
    group = ClassicGroup(story, Broker(story), protocol="cooperative-sticky")
    members = [group.consumer(f"node{i}", "consumer-orders-1", i) for i in (1, 2, 3)]
    group.start_with(*members)
    for i, c in enumerate(members):
        group.tick(60)
        group.restart(c, 10 + i, away_s=15)
    return story


def streams_scale_out_converging():
    story = Story("inventory")
    group = StreamsGroup(story, Broker(story))
    group.start_with(StreamsInstance(story, "node0", "inventory", 1, 11),
                     StreamsInstance(story, "node1", "inventory", 2, 12))
    group.tick(60)
    group.add(StreamsInstance(story, "node2", "inventory", 3, 13), ["cooperative", "probing", "probing", "probing",
                                                                    "stable"])
    return story


def streams_rolling_upgrade():
    story = Story("catalog")
    group = StreamsGroup(story, Broker(story))
    instances = [StreamsInstance(story, f"node{i}", "catalog", i + 1, 10 + i) for i in range(3)]
    group.start_with(*instances)
    for i, instance in enumerate(instances):
        group.tick(60)
        group.restart(instance, 20 + i)
    return story


def poll_timeouts(count: int = 4, config: bool = True, shared_client_id: bool = True):
    story = Story("payments")
    group = ClassicGroup(story, Broker(story), topic="payments")
    members = [group.consumer(f"node{i}", "consumer-payments-1" if shared_client_id else f"consumer-payments-{i}", i)
               for i in (1, 2, 3)]
    group.start_with(*members)
    slow = members[1]
    if config:
        slow.start({"max.poll.interval.ms": "300000", "max.poll.records": "500"})
    for i in range(count):
        group.tick(40)
        group.poll_timeout(slow)
        group.tick(45)
        slow.lost()
        slow = Consumer(story, slow.host, slow.client, f"{slow.client}-{uuid(50 + i)}")
        group.join(slow, start=False)
    return story


def broker_only_poll_timeouts():
    story = poll_timeouts(shared_client_id=False)
    story.files = {path: lines for path, lines in story.files.items() if path.startswith("broker")}
    return story


def session_loss_then_lost_partitions():
    story = Story("orders")
    group = ClassicGroup(story, Broker(story))
    members = [group.consumer(f"node{i}", f"consumer-orders-{i}", i) for i in (1, 2, 3)]
    group.start_with(*members)
    group.tick(10)
    group.join(group.consumer("node4", "consumer-orders-4", 4))
    group.tick(60)
    members[2].processing("still working")
    group.tick(50)
    group.expire(members[2])
    group.tick(5)
    members[2].heartbeat_unknown(41)
    members[2].lost()
    return story


def streams_session_loss():
    story = Story("ledger")
    group = StreamsGroup(story, Broker(story))
    instances = [StreamsInstance(story, f"node{i}", "ledger", i + 1, 10 + i) for i in range(3)]
    group.start_with(*instances)
    for _ in range(4):
        group.tick(120)
        group.lose_session(instances[2])
    return story


def crash_loop_client_only():
    story = Story("orders")
    group = ClassicGroup(story, None)
    members = [group.consumer(f"node{i}", "consumer-orders-1", i) for i in (1, 2, 3)]
    group.start_with(*members)
    group.tick(10)
    flapping = group.restart(members[2], 30, away_s=5)
    for i in range(3):
        group.tick(30)
        flapping = group.restart(flapping, 31 + i, away_s=5)
    return story


def static_restarts(away_s: float, session_ms: int = 45000):
    """Static members restarting one after another; back within session.timeout.ms the coordinator lets
    them in without a rebalance ("will not trigger rebalance")."""
    story = Story("prices")
    broker = Broker(story)
    group = ClassicGroup(story, broker, topic="prices")
    members = [group.consumer(f"node{i}", f"consumer-prices-{i}", i, instance=f"prices-{i}") for i in (1, 2)]
    group.start_with(*members)
    group.tick(5)
    extra = group.consumer("node3", "consumer-prices-3", 3, instance="prices-3")
    group.join(extra)
    for i, member in enumerate(members + [extra]):
        group.tick(60)
        member.say("Member {} sending LeaveGroup request to coordinator {} due to the consumer is being closed"
                   .format(member.member, "broker-1:9092 (id: 2147483646 rack: null)")
                   if False else "Closing the Kafka consumer", logger="com.example.App")
        if away_s * 1000 < session_ms:
            group.tick(away_s)
            back = Consumer(story, member.host, member.client, f"{member.client}-{uuid(70 + i)}", member.instance)
            back.start({"group.instance.id": member.instance, "session.timeout.ms": str(session_ms)})
            back.joining()
            broker.static_back(member.instance, member.member)
            back.joined(group.gen)
            back.synced(group.gen)
            back.assigned(group.owned.get(member.member, []))
        else:
            group.tick(session_ms / 1000)
            group.expire(member)
            group.tick(away_s - session_ms / 1000)
            back = Consumer(story, member.host, member.client, f"{member.client}-{uuid(70 + i)}", member.instance)
            back.start({"group.instance.id": member.instance, "session.timeout.ms": str(session_ms)})
            group.join(back, start=False)
    return story


def streams_leader_churn_failing_syncs():
    """The seed's otter-app: the leader cannot complete the rebalances it leads (its SyncGroup fails: a
    member rejoins while it assigns), and another member takes over."""
    story = Story("otter-app")
    broker = Broker(story, host="broker-2")
    nodes = [StreamsInstance(story, f"node{i}", "otter-app", i + 1, 10 + i) for i in range(3)]
    gen = 738
    leaders = [nodes[1], nodes[2], nodes[1], nodes[0], nodes[0]]
    for k, leader in enumerate(leaders):
        story.at(60 * k)
        broker.rejoins(nodes[2].consumer.member, gen, "group is already rebalancing" if k else "rebalance enforced by user")
        for n in nodes:
            story.later(5)
            n.consumer.request_join("group is already rebalancing")
            n.consumer.joining()
        story.later(700)
        gen += 1
        broker.stabilized(gen, 3)
        for n in [leader] + [n for n in nodes if n is not leader]:
            n.consumer.joined(gen)
        listing = "\n".join(f"{n.node}: [{n.consumer.member}]" for n in nodes)
        leader.stream(f"3 client nodes and 3 consumers participating in this rebalance: \n{listing}.")
        if k < 3:
            # A member rejoins while the leader assigns: the group begins another rebalance before the SyncGroup.
            story.later(30)
            broker.say(f"Preparing to rebalance group otter-app in state PreparingRebalance with old generation {gen} "
                       f"(__consumer_offsets-17) (reason: Member {nodes[2].consumer.member} joining group during "
                       "CompletingRebalance; client reason: rebalance failed due to 'The group is rebalancing, so a "
                       "rejoin is needed.' (RebalanceInProgressException))")
            for n in nodes:
                n.consumer.say("SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent "
                               f"generation was {n.consumer.generation(gen)}", logger="org.apache.kafka.clients."
                               "consumer.internals.AbstractCoordinator")
            continue
        leader.stream("Finished stable assignment of tasks, no followup rebalances required.")
        broker.assignment(gen, leader.consumer.member, 3)
        for n in nodes:
            n.consumer.synced(gen)
    return story


def kip848_scale_out():
    story = Story("tracking")
    group = ConsumerProtocolGroup(story)
    group.members = ["gjWzAEmmRlOfypB2_GB_9Q"]
    story.at(10)
    group.join("6nc1qt8rSeyTwBh__vZELQ")
    story.at(70)
    group.join("Q2v8ak1mT1mD0KpQyV3n5w")
    return story


CASES = [
    # (id, bullet of issue 16's "What was seen", reason, story, chain heads in order, folded, not heads)
    ("1-cooperative-rolling-restart", "healthy operations warn",
     "each restart is a rebalance plus its cooperative followup: healthy, said so",
     cooperative_rolling_restart, ["healthy-operation"], [], NOISY),
    ("1-streams-scale-out-converging", "healthy operations warn; failed-rebalance-loop where nothing failed",
     "a new instance, a cooperative followup and 3 probes ending with a stable assignment",
     streams_scale_out_converging, ["healthy-operation"], [], NOISY),
    ("1-streams-rolling-upgrade", "healthy operations warn",
     "each instance restarts with version probing; its old member expires after it logged its shutdown",
     streams_rolling_upgrade, ["healthy-operation", "version-probing"], [], NOISY + ["heartbeat-expiration"]),
    ("3-missed-rebalance-on-expiry", "missed-rebalance fires on plain session-timeout expiries",
     "the member lost its session; its lost partitions are the expiry's consequence, not a missed rebalance",
     session_loss_then_lost_partitions, ["heartbeat-expiration"], ["missed-rebalance"],
     ["missed-rebalance", "poll-timeout"]),
    ("4-one-cause-poll-timeouts", "one cause, 3-6 findings of equal rank; a storm driven by repeated poll timeouts",
     "one member exceeding max.poll.interval.ms again and again is one chain: the timeouts, first",
     poll_timeouts, ["poll-timeout"], ["rebalance-storm", "membership-flapping", "missed-rebalance"],
     NOISY + ["heartbeat-expiration"]),
    ("4-streams-session-loss", "one cause, 3-6 findings; 'left 8 times' when it left 4",
     "an instance pausing past its session timeout four times: one chain, the session losses first",
     streams_session_loss, ["heartbeat-expiration"], ["membership-flapping"], NOISY + ["poll-timeout"]),
    ("8-crash-loop-client-logs-only", "missed: flapping seen only in client logs",
     "one member restarting again and again while the others do not, only the members' logs",
     crash_loop_client_only, ["membership-flapping"], [], ["rebalance-storm", "failed-rebalance-loop"]),
    ("8-poll-timeouts-broker-only", "missed: flapping seen only in broker logs (LeaveGroup poll timeouts)",
     "the coordinator's LeaveGroup reasons alone name the poll timeouts and who keeps coming back",
     broker_only_poll_timeouts, ["poll-timeout"], ["membership-flapping"], NOISY),
    ("8-streams-leader-churn-failing-syncs", "missed: leader churn in a Streams group whose SyncGroups keep failing",
     "the leadership moves while each leader's SyncGroup fails: one chain, the leader churn first",
     streams_leader_churn_failing_syncs, ["leader-churn"], ["failed-rebalance-loop"], ["rebalance-storm"]),
    ("6-static-restarts-within-timeout", "static membership is not understood",
     "static members back within session.timeout.ms: no rebalance, no phantom, only the scale-out before",
     lambda: static_restarts(away_s=20), ["healthy-operation"], [], NOISY + ["heartbeat-expiration"]),
    ("6-static-member-away-too-long", "a static member away longer than session.timeout.ms",
     "each static member stays away 80 s with session.timeout.ms=45000: its expiry is the harm",
     lambda: static_restarts(away_s=80), ["static-member-timeout"], [], ["poll-timeout", "heartbeat-expiration"]),
    ("7-kip848-scale-out", "KIP-848 groups are labelled classic; a STABLE epoch is shown incomplete",
     "members joining a consumer-protocol group: epochs reaching STABLE for every member",
     kip848_scale_out, ["healthy-operation"], [], NOISY),
]


def _run(story_fn, tmp_path):
    return story_fn().analyze(tmp_path)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_issue_16_cases(case, tmp_path):
    name, bullet, reason, story, heads, folded, not_heads = case
    analysis = _run(story, tmp_path)
    findings = analysis.findings
    got = [f.rule for f in findings]
    assert got[:len(heads)] == heads, f"{name} ({reason}): heads {got}"
    inside = {x["rule"] for f in findings for x in f.caused.get("findings", [])}
    for rule in folded:
        assert rule in inside, f"{name} ({reason}): {rule} not folded; heads {got}, folded {inside}"
    for rule in not_heads:
        assert rule not in got, f"{name} ({reason}): {rule} must not head a chain; heads {got}"
    if heads[0] == "healthy-operation":
        assert all(f.severity == "info" for f in findings), f"{name}: a healthy operation never warns: {got}"


def test_healthy_note_says_what_happened(tmp_path):
    [note] = _run(cooperative_rolling_restart, tmp_path).findings
    assert note.title.startswith("healthy: rolling restart of 3 members (9 rebalances")
    assert "as expected" in note.summary and note.severity == "info" and note.cause


def test_poll_timeout_names_culprit_and_the_records_that_fit(tmp_path):
    [head] = _run(poll_timeouts, tmp_path).findings[:1]
    assert (head.culprit.host, head.culprit.client) == ("node2", "consumer-payments-1")
    assert head.culprit.label == "consumer-payments-1@node2"
    # The timeout fires 300 s after the last poll; the member polls again ~45 s later: a 345 s loop.
    assert "max.poll.interval.ms=300000" in head.summary and "records fit" in head.summary
    assert "lower max.poll.records to 434" in head.remediation
    figures = {f.name: f for f in head.figures}
    assert figures["advised.max.poll.records"].value == 434 and figures["max.poll.interval.ms"].value == 300000
    assert figures["advised.max.poll.interval.ms"].value >= figures["poll_loop_ms"].value > 300000
    assert head.caused["rebalances"] == list(range(1, 9)), "4 leaves and 4 returns"
    assert head.caused["members"], "the members that had to rejoin"
    assert head.cause.startswith("consumer-payments-1@node2 exceeded max.poll.interval.ms")


def test_storm_never_names_a_symptom_as_its_cause_nor_a_missing_finding(tmp_path):
    analysis = _run(poll_timeouts, tmp_path)
    [timeline] = [g.timeline for g in analysis.groups]
    from rebalance_doctor.rules import rebalance_storm

    storm = list(rebalance_storm.check(timeline, rule_config.defaults()["rebalance-storm"]))
    assert storm and "see the" not in storm[0].summary and "followup" not in storm[0].summary
    assert "members exceeding max.poll.interval.ms" in storm[0].summary


def test_streams_session_loss_counts_each_departure_once(tmp_path):
    analysis = _run(streams_session_loss, tmp_path)
    [timeline] = [g.timeline for g in analysis.groups]
    [flapping] = list(membership_flapping.check(timeline, rule_config.defaults()["membership-flapping"]))
    assert "left 4 times" in flapping.summary, flapping.summary


def test_session_loss_remediation_is_about_the_session_not_the_poll_loop(tmp_path):
    head = _run(session_loss_then_lost_partitions, tmp_path).findings[0]
    assert "process was alive but silent" in head.summary and "max.poll.interval.ms and max.poll.records change " \
                                                               "nothing" in head.summary
    assert "max.poll" not in head.remediation
    assert head.culprit.host == "node3"


def test_static_rejoins_are_no_rebalances_and_no_clock_anchors(tmp_path):
    analysis = _run(lambda: static_restarts(away_s=20), tmp_path)
    [timeline] = [g.timeline for g in analysis.groups]
    assert [r.operation for r in timeline.rebalances] == ["scale-out"], "only the scale-out rebalanced"
    assert len(timeline.rejoins) == 3, "three static returns, recorded as such"
    assert timeline.skew_ms == {}, "no clock offset invented from the returns"
    assert timeline.rebalances[0].duration_ms < 2000


def test_static_member_away_too_long_is_told_to_raise_the_session_timeout(tmp_path):
    head = _run(lambda: static_restarts(away_s=80), tmp_path).findings[0]
    assert head.rule == "static-member-timeout" and "group.instance.id=prices-" in head.summary
    assert "Static member" in head.summary and "80.0s later, longer than session.timeout.ms=45000" in head.summary
    assert "Raise session.timeout.ms to 120000 ms (1.5 x the longest time away (80.0s)" in head.remediation
    assert "use static membership" not in head.remediation
    figures = {f.name: f for f in head.figures}
    assert figures["time_away_ms"].value == 80000 and figures["session.timeout.ms"].value == 45000


def test_kip848_protocol_and_stable_epochs(tmp_path):
    [timeline] = [g.timeline for g in _run(kip848_scale_out, tmp_path).groups]
    assert {r.protocol for r in timeline.rebalances} == {"consumer"}
    assert [r.outcome for r in timeline.rebalances] == ["stable", "stable"]
    assert [r.operation for r in timeline.rebalances] == ["scale-out", "scale-out"]


def test_same_file_name_in_two_directories_names_two_hosts(tmp_path):
    """worker-a/payments.log and worker-b/payments.log: two hosts, so the culprit's host is unambiguous."""
    story = Story("payments")
    group = ClassicGroup(story, Broker(story), topic="payments")
    a = group.consumer("worker-a", "consumer-payments-1", 1)
    b = group.consumer("worker-b", "consumer-payments-1", 2)
    a.path, b.path = "worker-a/payments.log", "worker-b/payments.log"
    group.start_with(a, b)
    group.tick(30)
    group.poll_timeout(b)
    events, _ = events_of(story.save(tmp_path))
    head = analyze_events(events).findings[0]
    assert head.rule == "poll-timeout" and head.culprit.host == "worker-b", head.culprit


def test_classification_reads_the_protocol_of_each_group(tmp_path):
    analysis = _run(streams_scale_out_converging, tmp_path)
    assert of(analysis.groups[0].timeline).protocol == "streams"


@pytest.mark.parametrize("scenario, seed", [("healthy-connect-bounce", 2025512658),
                                            ("healthy-streams-rolling-restart", 1952654539),
                                            ("healthy-streams-upgrade", 295040097)])
def test_a_round_whose_lines_interleave_across_clocks_stays_one_healthy_rebalance(tmp_path, scenario, seed):
    """Plan seed 7's two healthy incidents that lost their note: a worker's late assignment report read as a return
    into its old generation split a Connect round in two; a coordinator's removals logged just after a member's
    (corrected) sync, before the coordinator stabilized the generation, left a Streams restart without its
    departures (a new member id for a running member: 'crash'); the same when a member's followup request had
    already opened the next rebalance (gate seed 1616's healthy-streams-upgrade). Each rebalance is the truth's,
    and expected."""
    from tests.helpers import simulated

    incident, analysis = simulated(scenario, seed, None, tmp_path)
    assert analysis.findings[0].rule == "healthy-operation"
    [group] = analysis.groups
    truth = {r.generation: r.verdict for r in incident.truth.rebalances}
    assert {r.generation: r.verdict for r in group.timeline.rebalances} == truth
