"""The timeline builder: rebalances, generations, outcomes, triggers and clock skew, from events."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rebalance_doctor.core.schema import empty_event
from rebalance_doctor.timeline import build_group
from rebalance_doctor.timeline.triggers import classify

T0 = datetime(2024, 3, 5, 10, 0, tzinfo=timezone.utc)
MEMBER_A = "consumer-g-1-6b1f2c3d-0000-4000-8000-000000000001"
MEMBER_B = "consumer-g-2-6b1f2c3d-0000-4000-8000-000000000002"


def ev(seconds: float, event: str, host: str = "broker-1", component: str = "broker", line: int = 1, **fields) -> dict:
    row = empty_event()
    row.update(ts=T0 + timedelta(seconds=seconds), source=f"{host}.log", line=line, host=host,
               component=component, event=event, group="g", message=f"{event} line", **fields)
    return row


def client(seconds, event, host, client_id, **fields):
    return ev(seconds, event, host=host, component="consumer", client=client_id, **fields)


def classic_round(start: float, old: int, reason: str, skew_b: float = 0.0, line: int = 1) -> list[dict]:
    """Broker prepare/stabilize/assignment and two members joining and syncing."""
    gen = old + 1
    return [
        ev(start, "rebalance.prepare", generation=old, reason=reason, line=line),
        client(start + 0.05 + skew_b, "join.requested", "node-b", "consumer-g-2", reason="group is already rebalancing"),
        ev(start + 1, "rebalance.stabilized", generation=gen, members=2, line=line + 1),
        client(start + 1.003, "join.success", "node-a", "consumer-g-1", generation=gen, member=MEMBER_A),
        client(start + 1.004 + skew_b, "join.success", "node-b", "consumer-g-2", generation=gen, member=MEMBER_B),
        ev(start + 1.05, "rebalance.assignment_received", generation=gen, leader=MEMBER_A, members=2, line=line + 2),
        client(start + 1.06, "sync.success", "node-a", "consumer-g-1", generation=gen, member=MEMBER_A),
        client(start + 1.061 + skew_b, "sync.success", "node-b", "consumer-g-2", generation=gen, member=MEMBER_B),
    ]


def build(events):
    return build_group("g", sorted(events, key=lambda e: e["ts"]))


def test_single_rebalance_has_generation_duration_leader_trigger():
    timeline = build(classic_round(0, 41, f"removing member {MEMBER_B} on heartbeat expiration"))
    [r] = timeline.rebalances
    assert (r.old_generation, r.generation, r.outcome) == (41, 42, "stable")
    assert r.trigger_kind == "heartbeat-expiration" and r.trigger_member == "consumer-g-2"
    assert r.leader == "consumer-g-1" and r.members == 2
    assert r.duration_ms == 1061
    assert r.symptoms == 1, "the member rejoining because the group is already rebalancing is a symptom"


def test_skewed_client_clock_is_estimated_and_corrected():
    events = classic_round(0, 41, "x", skew_b=30) + classic_round(120, 42, "y", skew_b=30, line=10)
    timeline = build(events)
    assert abs(timeline.skew_ms["node-b"] - 30000) < 10
    assert [r.generation for r in timeline.rebalances] == [42, 43]
    assert all(r.duration_ms < 2000 for r in timeline.rebalances), "corrected times keep rebalances short"
    assert any("node-b" in note for note in timeline.notes)


def test_small_offsets_are_network_latency_not_skew():
    timeline = build(classic_round(0, 41, "x", skew_b=0.01))
    assert timeline.skew_ms == {}


def test_client_only_logs_rebuild_generations_from_joins():
    events = [e for e in classic_round(0, 41, "x") if e["component"] != "broker"]
    timeline = build(events)
    [r] = timeline.rebalances
    assert r.generation == 42 and r.outcome == "stable" and r.old_generation is None
    assert r.members == 2
    assert any("only client logs" in n for n in timeline.notes)


def test_same_old_generation_prepared_again_is_a_failed_attempt():
    events = [ev(0, "rebalance.prepare", generation=41, reason=f"Adding new member {MEMBER_B} with group instance id None"),
              ev(60, "rebalance.prepare", generation=41, reason=f"Adding new member {MEMBER_B} with group instance id None", line=2),
              ev(61, "rebalance.stabilized", generation=42, members=2, line=3),
              ev(61.1, "rebalance.assignment_received", generation=42, leader=MEMBER_A, line=4)]
    timeline = build(events)
    assert [r.outcome for r in timeline.rebalances] == ["failed", "stable"]
    assert "41 again" in timeline.rebalances[0].failure


def test_sync_failure_marks_the_generation_failed_and_the_next_one_follows():
    events = classic_round(0, 41, "x")[:5] + [
        client(1.02, "sync.failed", "node-a", "consumer-g-1", generation=42, member=MEMBER_A,
               reason="The group began another rebalance. Need to re-join the group"),
        ev(1.01, "rebalance.prepare", generation=42, reason=f"Updating metadata for member {MEMBER_B} during CompletingRebalance", line=9),
    ] + classic_round(2, 42, "y", line=20)[2:]
    timeline = build(events)
    assert [(r.generation, r.outcome) for r in timeline.rebalances] == [(42, "failed"), (43, "stable")]


def test_static_member_rejoining_its_generation_is_not_a_rebalance():
    events = classic_round(0, 41, "x") + [
        client(300, "join.start", "node-b", "consumer-g-2"),
        ev(300.01, "member.join", instance="b", attrs={"replaced": MEMBER_B}, state="Stable", line=30),
        client(300.02, "join.success", "node-b", "consumer-g-2", generation=42, member=MEMBER_B),
        client(300.03, "sync.success", "node-b", "consumer-g-2", generation=42, member=MEMBER_B),
    ]
    assert [r.generation for r in build(events).rebalances] == [42]


def test_departure_without_a_rebalance_is_not_counted():
    events = [ev(0, "member.leave", member=MEMBER_A, reason="the consumer is being closed")]
    assert build(events).rebalances == []


def test_poll_timeout_is_the_root_cause_not_the_leave_it_causes():
    events = [client(0, "poll.timeout", "node-b", "consumer-g-2"),
              client(0.001, "leave.request", "node-b", "consumer-g-2", member=MEMBER_B, reason="consumer poll timeout has expired."),
              ev(0.003, "member.leave", member=MEMBER_B, reason="consumer poll timeout has expired."),
              ev(0.004, "rebalance.prepare", generation=41, reason=f"Removing member {MEMBER_B} on LeaveGroup; client reason: consumer poll timeout has expired."),
              ev(1, "rebalance.stabilized", generation=42, members=1, line=2),
              ev(1.1, "rebalance.assignment_received", generation=42, leader=MEMBER_A, line=3)]
    [r] = build(events).rebalances
    assert r.trigger_kind == "poll-timeout" and r.trigger_member == "consumer-g-2"
    assert r.left == ["consumer-g-2"]


def test_reason_classification_prefers_the_client_reason():
    assert classify("Updating metadata for member m-1 during Stable; client reason: triggered followup "
                    "rebalance scheduled for 0").kind == "followup"
    assert classify("Member m joining group during Stable; client reason: rebalance failed due to 'The group member "
                    "needs to have a valid member id before actually entering a consumer group.' "
                    "(MemberIdRequiredException)").kind == "new-member"
    found = classify("group is already rebalancing")
    assert found.symptom and found.kind == "already-rebalancing"
    assert classify("removing member m-1 on heartbeat expiration").member == "m-1"


def connect(seconds, event, host, client_id, **fields):
    return ev(seconds, event, host=host, component="connect", client=client_id, **fields)


def test_a_workers_late_assignment_report_is_not_a_return_into_its_generation():
    """Connect's herder logs "Joined group at generation N ... and got assignment" once the SyncGroup answered; it
    may come after the worker was asked to rejoin for N+1. That is N's assignment applied, not the worker coming
    back into N: the round the coordinator is preparing stays one rebalance, with its trigger."""
    worker_a, worker_b = "connect-1-6b1f2c3d-0000-4000-8000-000000000001", "connect-2-6b1f2c3d-0000-4000-8000-000000000002"

    def joined(at, gen, leader_too=True):
        return [connect(at, "join.success", "node-a", "connect-1", generation=gen, member=worker_a),
                connect(at + 0.001, "join.success", "node-b", "connect-2", generation=gen, member=worker_b),
                ev(at + 0.002, "rebalance.stabilized", generation=gen, members=2, line=10 * gen),
                ev(at + 0.005, "rebalance.assignment_received", generation=gen, leader=worker_a, line=10 * gen + 1),
                connect(at + 0.01, "sync.success", "node-a", "connect-1", generation=gen, member=worker_a),
                connect(at + 0.011, "sync.success", "node-b", "connect-2", generation=gen, member=worker_b)] + (
               [connect(at + 0.011, "join.success", "node-a", "connect-1", generation=gen, leader=worker_a)]
               if leader_too else [])

    events = [ev(0, "rebalance.prepare", generation=41, reason=f"Adding new member {worker_b} with group instance id None"),
              connect(0.01, "connect.rebalance_started", "node-b", "connect-2"),
              connect(0.01, "join.start", "node-b", "connect-2")] + joined(1, 42) + [
        connect(2, "connect.rebalance_started", "node-a", "connect-1"),
        connect(2, "join.start", "node-a", "connect-1"),
        ev(2.003, "rebalance.prepare", generation=42, line=50,
           reason=f"Leader {worker_a} re-joining group during Stable; client reason: "),
        connect(2.1, "join.requested", "node-b", "connect-2", reason="group is already rebalancing"),
        # worker b's herder applies generation 42's assignment only now, then starts rejoining
        connect(2.15, "join.success", "node-b", "connect-2", generation=42, leader=worker_a),
        connect(2.15, "connect.rebalance_started", "node-b", "connect-2"),
        connect(2.15, "join.start", "node-b", "connect-2"),
    ] + joined(3, 43)
    timeline = build(events)
    assert [(r.generation, r.outcome) for r in timeline.rebalances] == [(42, "stable"), (43, "stable")]
    second = timeline.rebalances[1]
    assert second.old_generation == 42 and second.trigger is not None and "re-joining" in second.trigger
    assert timeline.rejoins == []


MEMBER_C = "consumer-g-3-6b1f2c3d-0000-4000-8000-000000000003"


def _newcomer_joins_42() -> list[dict]:
    """A new member (node-c) joins: the coordinator prepares, node-a rejoins, both are in generation 42."""
    return [ev(0, "rebalance.prepare", generation=41, reason=f"Adding new member {MEMBER_C} with group instance id None"),
            client(0.01, "join.start", "node-c", "consumer-g-3"),
            client(0.5, "join.requested", "node-a", "consumer-g-1", reason="group is already rebalancing"),
            client(1.0, "join.success", "node-a", "consumer-g-1", generation=42, member=MEMBER_A),
            client(1.0, "join.success", "node-c", "consumer-g-3", generation=42, member=MEMBER_C)]


def test_coordinator_lines_before_it_stabilizes_a_generation_are_that_rebalance_s():
    """A member's sync of generation 42 comes, on its corrected clock, a millisecond before the coordinator removes
    the member that did not rejoin and stabilizes 42 (clocks within skew_min_ms are left as they are). The
    coordinator's lines share one clock: the removal comes before its own "Stabilized ... generation 42", in 42's
    join phase, so it is 42's departure, not a rebalance of its own."""
    events = _newcomer_joins_42() + [
              client(1.004, "sync.success", "node-a", "consumer-g-1", generation=42, member=MEMBER_A),
              ev(1.005, "member.expired", member=MEMBER_B, line=2),
              ev(1.006, "rebalance.stabilized", generation=42, members=2, line=3),
              ev(1.008, "rebalance.assignment_received", generation=42, leader=MEMBER_A, members=2, line=4),
              client(1.009, "sync.success", "node-c", "consumer-g-3", generation=42, member=MEMBER_C)]
    timeline = build(events)
    [r] = timeline.rebalances
    assert (r.generation, r.outcome) == (42, "stable")
    assert r.expired == ["consumer-g-2"]


def test_coordinator_lines_before_it_stabilizes_stay_with_it_after_a_member_asked_for_a_followup():
    """The same, when a member's line asking for the followup (on its clock, a few ms early) already opened the next
    rebalance: the coordinator's removal before its "Stabilized ... generation 42" is still 42's."""
    events = _newcomer_joins_42() + [
              client(1.002, "sync.success", "node-a", "consumer-g-1", generation=42, member=MEMBER_A),
              client(1.003, "streams.followup.triggered", "node-a", "consumer-g-1"),
              client(1.003, "join.requested", "node-a", "consumer-g-1", reason="followup rebalance"),
              ev(1.006, "member.expired", member=MEMBER_B, line=2),
              ev(1.006, "rebalance.stabilized", generation=42, members=2, line=3),
              ev(1.008, "rebalance.assignment_received", generation=42, leader=MEMBER_A, members=2, line=4),
              client(1.009, "sync.success", "node-c", "consumer-g-3", generation=42, member=MEMBER_C),
              ev(1.5, "rebalance.prepare", generation=42, reason=f"Leader {MEMBER_A} re-joining group during Stable", line=5),
              ev(2, "rebalance.stabilized", generation=43, members=2, line=6),
              client(2.001, "join.success", "node-a", "consumer-g-1", generation=43, member=MEMBER_A),
              client(2.001, "join.success", "node-c", "consumer-g-3", generation=43, member=MEMBER_C),
              ev(2.005, "rebalance.assignment_received", generation=43, leader=MEMBER_A, members=2, line=7),
              client(2.01, "sync.success", "node-a", "consumer-g-1", generation=43, member=MEMBER_A)]
    timeline = build(events)
    assert [(r.generation, r.expired) for r in timeline.rebalances] == [(42, ["consumer-g-2"]), (43, [])]


def test_a_kip848_members_local_epoch_is_not_the_group_epoch():
    """"Reconciling assignment with local epoch N" counts the assignments the client received (its LocalAssignment,
    +1 per new one): recorded on Kafka 4.4.0, member epoch 5 reconciles local epoch 2. The pack reads it as
    local_epoch; the line belongs to the epoch under way when it is written, not to epoch N (which would stretch
    epoch 2's window over every later reconciliation and make its members those of later epochs)."""
    member_a = "UUnoBTK4T4aE4ST6K8X95A"

    def kip848(seconds, event, **fields):
        return client(seconds, event, "node-a", "consumer-g-1", member=member_a, **fields)

    events = [ev(0, "member.join", member=member_a), ev(0.1, "group.epoch_bumped", generation=2, line=2),
              ev(0.2, "group.target_assignment", generation=2, line=3),
              kip848(0.5, "member.epoch_transition", generation=2, from_state="JOINING", state="RECONCILING"),
              kip848(0.6, "assignment.received", attrs={"local_epoch": "0"}),
              kip848(0.7, "member.epoch_transition", generation=2, from_state="ACKNOWLEDGING", state="STABLE"),
              ev(20, "group.epoch_bumped", generation=3, line=4), ev(20.1, "group.target_assignment", generation=3, line=5),
              kip848(21, "member.epoch_transition", generation=3, from_state="STABLE", state="RECONCILING"),
              kip848(21.1, "assignment.received", attrs={"local_epoch": "2"}),
              kip848(21.2, "member.epoch_transition", generation=3, from_state="ACKNOWLEDGING", state="STABLE")]
    timeline = build(events)
    assert timeline.protocol == "consumer"
    assert [r.generation for r in timeline.rebalances] == [2, 3]
    first, second = timeline.rebalances
    assert first.end < second.start, "epoch 2 ends when its member is STABLE, not at a later local epoch 2"
    assert [e["attrs"]["local_epoch"] for e in second.events if e["event"] == "assignment.received"] == ["2"]


def test_kip848_client_only_logs_take_the_epochs_from_the_members_transitions():
    """Only the members' logs of a KIP-848 group: each new member epoch a member's state machine reaches opens the
    group's epoch (the reconciliation's local epoch is the client's own count, no epoch)."""
    member_a = "UUnoBTK4T4aE4ST6K8X95A"

    def kip848(seconds, event, **fields):
        return client(seconds, event, "node-a", "consumer-g-1", member=member_a, **fields)

    events = [kip848(0, "member.epoch_transition", generation=0, from_state="UNSUBSCRIBED", state="JOINING"),
              kip848(0.5, "member.epoch_transition", generation=4, from_state="JOINING", state="RECONCILING"),
              kip848(0.6, "assignment.received", attrs={"local_epoch": "0"}),
              kip848(0.7, "member.epoch_transition", generation=4, from_state="ACKNOWLEDGING", state="STABLE"),
              kip848(30, "member.epoch_transition", generation=6, from_state="STABLE", state="RECONCILING"),
              kip848(30.1, "assignment.received", attrs={"local_epoch": "1"}),
              kip848(30.2, "member.epoch_transition", generation=6, from_state="ACKNOWLEDGING", state="STABLE")]
    timeline = build(events)
    assert timeline.protocol == "consumer"
    assert [(r.generation, r.outcome) for r in timeline.rebalances] == [(4, "stable"), (6, "stable")]


def test_another_clients_member_id_in_a_leaders_line_stays_that_clients():
    """A Streams leader's assignor names the consumer it moves a task from ("Removing task 0_0 from <member> active
    assignment"): that member id is the other client's (its own join line says so, and its id starts with its
    client.id), so the broker's removal of it is that client's departure, not the leader's."""
    rows = classic_round(0, 0, "Adding new member")
    rows.append(client(5, "streams.followup.cooperative", "node-a", "consumer-g-1", member=MEMBER_B))
    rows.append(ev(20, "member.expired", member=MEMBER_B, line=10))
    timeline = build(rows)
    removal = next(e for e in timeline.events if e["event"] == "member.expired")
    assert timeline.who(removal) == "consumer-g-2"


def test_a_streams_task_moved_through_a_standby_is_no_kip848_transition(tmp_path):
    """kafka-streams 3.1.2's leader in a real rolling upgrade (the lab's streams-rolling-upgrade): "Adding removed
    stateful active task ... before it is revoked in followup rebalance" is the classic assignor's line; read as a
    KIP-848 member's state transition it made the group a KIP-848 group and a session expiry a fencing."""
    from rebalance_doctor.timeline import build_group
    from tests.helpers import events_of

    log = tmp_path / "app-3.log"
    log.write_text(
        "2026-12-07 18:58:41,419 INFO  [order-counts-0a7e6828-9e38-498b-ba42-048848328401-StreamThread-1] "
        "org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor - stream-thread "
        "[order-counts-0a7e6828-9e38-498b-ba42-048848328401-StreamThread-1-consumer] Adding removed stateful active "
        "task 0_2 as a standby for order-counts-9da54d0b-b100-4576-b1e7-1182b2535690-StreamThread-1-consumer-"
        "dadf4f9c-af48-4b1a-8d28-e923f731332a before it is revoked in followup rebalance\n", encoding="utf-8")
    events, _ = events_of(log)
    (event,) = events
    assert event["event"] != "member.epoch_transition"
    assert build_group("order-counts", events).protocol == "classic"
