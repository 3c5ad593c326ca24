"""Every log line the seed articles teach operators to grep for becomes the right event.

Each case is the seed's quoted template rendered in Kafka 3.6's real wording, layout and
logger (the broker's `[%d] %p %m (%c)%n`), plus the older or newer wording where Kafka changed
it, with the fields the line states.
"""

from __future__ import annotations

import pytest

from helpers import events_of

BROKER = "kafka.coordinator.group.GroupCoordinator"
NEW_BROKER = "org.apache.kafka.coordinator.group.GroupMetadataManager"
ABSTRACT = "org.apache.kafka.clients.consumer.internals.AbstractCoordinator"
ASSIGNOR = "org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor"
THREAD = "org.apache.kafka.streams.processor.internals.StreamThread"
STREAMS = "org.apache.kafka.streams.KafkaStreams"
CONSUMER = "[Consumer clientId=otter-app-2257-StreamThread-1-consumer, groupId=otter-app]"
STREAM_THREAD = "stream-thread [otter-app-2257-StreamThread-1]"
STREAM_CONSUMER = "stream-thread [otter-app-2257-StreamThread-1-consumer]"
STREAM_CLIENT = "stream-client [otter-app-2257]"
MEMBER = "otter-app-2257-StreamThread-1-consumer-5c1e"
GEN = "Generation{generationId=742, memberId='" + MEMBER + "', protocol='stream'}"

CASES = [
    # (why, level, message, logger, event, fields)
    ("seed: the broker's most useful line, with the reason",
     "INFO", "[GroupCoordinator 1]: Preparing to rebalance group otter-app in state PreparingRebalance with old "
     "generation 741 (__consumer_offsets-12) (reason: Adding new member " + MEMBER + " with group instance id "
     "None; client reason: rebalance failed due to MemberIdRequiredException)", BROKER, "rebalance.prepare",
     {"group": "otter-app", "state": "PreparingRebalance", "generation": 741}),
    ("the 3.6+ Java coordinator writes the same line without the partition",
     "INFO", "[GroupCoordinator id=1 topic=__consumer_offsets partition=12] Preparing to rebalance group otter-app "
     "in state PreparingRebalance with old generation 741 (reason: Leader " + MEMBER + " re-joining group during "
     "Stable; client reason: triggered followup rebalance scheduled for 0).", NEW_BROKER, "rebalance.prepare",
     {"group": "otter-app", "generation": 741}),
    ("seed: the client-side trigger",
     "INFO", CONSUMER + " Request joining group due to: group is already rebalancing", ABSTRACT,
     "join.requested", {"group": "otter-app", "reason": "group is already rebalancing"}),
    ("seed: a member id required first join",
     "INFO", CONSUMER + " Request joining group due to: rebalance failed due to 'The group member needs to have a "
     "valid member id before actually entering a consumer group.' (MemberIdRequiredException)", ABSTRACT,
     "join.requested", {"group": "otter-app"}),
    ("seed: the heartbeat thread could not reach the coordinator",
     "INFO", CONSUMER + " Group coordinator kafka-1:9092 (id: 2147483646 rack: null) is unavailable or invalid due "
     "to cause: session timed out without receiving a heartbeat response. isDisconnected: false. Rediscovery will be "
     "attempted.", ABSTRACT, "session.timeout", {"group": "otter-app"}),
    ("seed: a stalled heartbeat thread learns it was expired",
     "INFO", CONSUMER + " Attempt to heartbeat with " + GEN + " and group instance id Optional.empty failed due to "
     "UNKNOWN_MEMBER_ID, resetting generation", ABSTRACT, "heartbeat.failed",
     {"group": "otter-app", "generation": 742, "member": MEMBER}),
    ("seed: the broker removes a member on heartbeat expiration",
     "INFO", "[GroupCoordinator 1]: Preparing to rebalance group otter-app in state PreparingRebalance with old "
     "generation 742 (__consumer_offsets-12) (reason: removing member " + MEMBER + " on heartbeat expiration)",
     BROKER, "rebalance.prepare", {"group": "otter-app", "generation": 742, "member": MEMBER}),
    ("seed: the broker's member failed line",
     "INFO", "[GroupCoordinator 1]: Member " + MEMBER + " in group otter-app has failed, removing it from the group",
     BROKER, "member.expired", {"group": "otter-app", "member": MEMBER}),
    ("seed: a LeaveGroup seen by the broker, with the client's reason",
     "INFO", "[GroupCoordinator 1]: Preparing to rebalance group otter-app in state PreparingRebalance with old "
     "generation 742 (__consumer_offsets-12) (reason: Removing member " + MEMBER + " on LeaveGroup; client reason: "
     "the consumer is being closed)", BROKER, "rebalance.prepare", {"group": "otter-app", "member": MEMBER}),
    ("seed: the client sends LeaveGroup",
     "INFO", CONSUMER + " Member " + MEMBER + " sending LeaveGroup request to coordinator kafka-1:9092 (id: "
     "2147483646 rack: null) due to the consumer is being closed", ABSTRACT, "leave.request",
     {"group": "otter-app", "member": MEMBER, "reason": "the consumer is being closed"}),
    ("seed: the poll timeout warning",
     "WARN", CONSUMER + " consumer poll timeout has expired. This means the time between subsequent calls to poll() "
     "was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too "
     "much time processing messages. You can address this either by increasing max.poll.interval.ms or by reducing "
     "the maximum size of batches returned in poll() with max.poll.records.", ABSTRACT, "poll.timeout",
     {"group": "otter-app"}),
    ("seed: the LeaveGroup the heartbeat thread sends after a poll timeout",
     "INFO", CONSUMER + " Member " + MEMBER + " sending LeaveGroup request to coordinator kafka-1:9092 (id: "
     "2147483646 rack: null) due to consumer poll timeout has expired.", ABSTRACT, "leave.request",
     {"member": MEMBER, "reason": "consumer poll timeout has expired."}),
    ("seed: Streams triggers a scheduled followup",
     "INFO", STREAM_THREAD + " Triggering the followup rebalance scheduled for 1697000000000.", THREAD,
     "streams.followup.triggered", {"scheduled": "1697000000000"}),
    ("seed: cooperative followup after tasks change owner",
     "INFO", STREAM_CONSUMER + " Requesting followup rebalance be scheduled immediately by " + MEMBER + " due to "
     "tasks changing ownership.", ASSIGNOR, "streams.followup.cooperative", {"member": MEMBER}),
    ("seed: probing rebalance for warmup tasks",
     "INFO", STREAM_CONSUMER + " Requesting followup rebalance be scheduled by " + MEMBER + " for 1697000600000 ms "
     "to probe for caught-up replica tasks.", ASSIGNOR, "streams.followup.probing", {"member": MEMBER}),
    ("seed: the next probing rebalance is scheduled",
     "INFO", STREAM_CONSUMER + " Requested to schedule next probing rebalance at 1697000600000 to try for a more "
     "balanced assignment.", ASSIGNOR, "streams.followup.probing", {"scheduled": "1697000600000"}),
    ("seed: version probing during a rolling upgrade",
     "INFO", STREAM_CONSUMER + " Requested to schedule immediate rebalance due to version probing.", ASSIGNOR,
     "streams.followup.version_probing", {}),
    ("seed: a static member's endpoint changed",
     "INFO", STREAM_CONSUMER + " Requested to schedule immediate rebalance to update group with new host endpoint = "
     "otter-2:8080.", ASSIGNOR, "streams.followup.endpoint", {}),
    ("seed: an application-wide shutdown request",
     "WARN", STREAM_THREAD + " Detected that shutdown was requested. All clients in this app will now begin to "
     "shutdown", THREAD, "streams.shutdown_requested", {}),
    ("seed: the rebalance participants, with the member listing that follows",
     "INFO", STREAM_CONSUMER + " 2 client nodes and 4 consumers participating in this rebalance: \n"
     "8a1c-otter-1: [otter-app-2257-StreamThread-1-consumer-5c1e, otter-app-2257-StreamThread-2-consumer-77aa].\n"
     "b3d9-otter-2: [otter-app-c449-StreamThread-1-consumer-1f0e, otter-app-c449-StreamThread-2-consumer-9d2c].",
     ASSIGNOR, "streams.participants", {"nodes": 2, "consumers": 4}),
    ("seed: the SyncGroup of a superseded rebalance fails",
     "INFO", CONSUMER + " SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent "
     "generation was " + GEN, ABSTRACT, "sync.failed", {"group": "otter-app", "generation": 742, "member": MEMBER}),
    ("seed: the assignor's verdict, stable",
     "INFO", STREAM_CONSUMER + " Finished stable assignment of tasks, no followup rebalances required.", ASSIGNOR,
     "streams.assignment.stable", {}),
    ("seed: the assignor's verdict, unstable",
     "INFO", STREAM_CONSUMER + " Finished unstable assignment of tasks, a followup rebalance will be scheduled.",
     ASSIGNOR, "streams.assignment.unstable", {}),
    ("seed: a StreamThread replaced by the uncaught exception handler",
     "ERROR", STREAM_CLIENT + " Replacing thread in the streams uncaught exception handler", STREAMS,
     "streams.thread_replaced", {}),
]


def render(level: str, message: str, logger: str, second: int) -> str:
    return f"[2023-10-11 11:10:{second:02d},345] {level} {message} ({logger})\n"


@pytest.mark.parametrize("why, level, message, logger, event, fields", CASES, ids=[c[0] for c in CASES])
def test_seed_line_becomes_its_event(tmp_path, why, level, message, logger, event, fields):
    (tmp_path / "node0.log").write_text(render(level, message, logger, 57))
    events, stats = events_of(tmp_path)
    assert [e["event"] for e in events] == [event], why
    got = events[0]
    assert {k: got[k] for k in fields} == fields, why
    assert got["line"] == 1 and got["host"] == "node0" and got["level"] == level


def test_all_seed_lines_in_one_file_keep_their_line_numbers(tmp_path):
    text = "".join(render(*case[1:4], second) for second, case in enumerate(CASES))
    (tmp_path / "node0.log").write_text(text)
    events, stats = events_of(tmp_path)
    assert [e["event"] for e in events] == [case[4] for case in CASES]
    starts = [i + 1 for i, line in enumerate(text.splitlines()) if line.startswith("[2023")]
    assert [e["line"] for e in events] == starts
    assert sum(f.near_misses for f in stats.files) == 0
