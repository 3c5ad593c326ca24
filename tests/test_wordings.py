"""Wordings outside the template inventory: 0.10-2.3 brokers (a file in them is older than 2.4),
masked values (never break a match), the Streams lifecycle and the Java libraries' listener lines."""

from __future__ import annotations

import re

from helpers import events_of

OLD_0_10 = """\
[2017-03-14 09:00:01,002] INFO [GroupCoordinator 1]: Preparing to restabilize group billing with old generation 3 (kafka.coordinator.GroupCoordinator)
[2017-03-14 09:00:04,010] INFO [GroupCoordinator 1]: Stabilized group billing generation 4 (kafka.coordinator.GroupCoordinator)
"""
OLD_1_X = """\
[2018-07-30 12:01:02,345] INFO [GroupCoordinator 0]: Preparing to rebalance group billing with old generation 4 (__consumer_offsets-12) (kafka.coordinator.group.GroupCoordinator)
[2018-07-30 12:01:05,345] INFO [GroupCoordinator 0]: Stabilized group billing generation 5 (__consumer_offsets-12) (kafka.coordinator.group.GroupCoordinator)
[2018-07-30 12:03:05,345] INFO [GroupCoordinator 0]: Member consumer-1-0f1e2d3c-aaaa-bbbb-cccc-111122223333 in group billing has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
"""


def _upper_bound(version: str) -> tuple[int, ...]:
    m = re.search(r"<(\d+)\.(\d+)", version)
    assert m, version
    return int(m.group(1)), int(m.group(2))


def test_old_broker_wordings_are_events_of_a_broker_older_than_2_4(tmp_path):
    for name, text, generations in (("b010.log", OLD_0_10, [3, 4]), ("b1x.log", OLD_1_X, [4, 5, None])):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        events, stats = events_of(path, base_date="2017-01-01")
        assert [e["event"] for e in events][:2] == ["rebalance.prepare", "rebalance.stabilized"]
        assert [e["generation"] for e in events] == generations
        assert {e["group"] for e in events} == {"billing"}
        assert _upper_bound(stats.files[0].kafka_version) <= (2, 4), stats.files[0].kafka_version
        assert stats.files[0].near_misses == 0


MASKED = """\
[2024-03-05 09:14:03,512] INFO [GroupCoordinator 1]: Preparing to rebalance group*** in state PreparingRebalance with old generation 41 (__consumer_offsets-17) (reason: removing member *** on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)
[2024-03-05 09:14:03,513] INFO [GroupCoordinator 1]: Member <redacted> in group <redacted> has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
[2024-03-05 09:14:06,519] INFO [GroupCoordinator 1]: Stabilized group*** generation 42 (__consumer_offsets-17) with 2 members (kafka.coordinator.group.GroupCoordinator)
[2024-03-05 09:14:06,530] INFO [Consumer clientId=***, groupId=***] Successfully joined group with generation Generation{generationId=42, memberId='***', protocol='range'} (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)
[2024-03-05 09:14:07,001] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=17] [GroupId***] Member*** fenced from the group because the member session expired. (org.apache.kafka.coordinator.group.GroupMetadataManager)
"""


def test_masked_values_never_break_a_match(tmp_path):
    path = tmp_path / "server.log"
    path.write_text(MASKED, encoding="utf-8")
    events, stats = events_of(path, base_date="2024-01-01")
    assert stats.files[0].near_misses == 0
    assert [(e["line"], e["event"]) for e in events] == [
        (1, "rebalance.prepare"), (2, "member.expired"), (3, "rebalance.stabilized"), (4, "join.success"),
        (5, "member.expired")]
    assert [e["group"] for e in events] == ["***", "<redacted>", "***", "***", "***"]
    assert [e["generation"] for e in events] == [41, None, 42, 42, None]
    assert events[1]["member"] == "<redacted>" and events[4]["member"] == "***"


def test_a_member_object_names_the_leaving_client_its_host_and_timeouts(tmp_path):
    line = ("[2023-10-02 09:14:03,512] INFO [GroupCoordinator 1]: Member MemberMetadata(memberId=consumer-x-1-6c52a1b2-"
            "1111-2222-3333-444455556666, groupInstanceId=Some(x-0), clientId=consumer-x-1, clientHost=/10.42.2.65, "
            "sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range, cooperative-sticky)) has "
            "left group x through explicit `LeaveGroup`; client reason: consumer poll timeout has expired. "
            "(kafka.coordinator.group.GroupCoordinator)\n")
    path = tmp_path / "server.log"
    path.write_text(line, encoding="utf-8")
    (event,), _ = events_of(path, base_date="2023-01-01")
    assert event["event"] == "member.leave"
    assert (event["member"], event["client"], event["client_host"], event["instance"]) == (
        "consumer-x-1-6c52a1b2-1111-2222-3333-444455556666", "consumer-x-1", "/10.42.2.65", "x-0")
    assert event["reason"] == "consumer poll timeout has expired."
    assert event["attrs"]["session_timeout_ms"] == "45000" and event["attrs"]["rebalance_timeout_ms"] == "300000"
    assert event["attrs"]["protocols"] == "range, cooperative-sticky"


def test_streams_lifecycle_lines_are_events(tmp_path):
    thread = "word-count-8c9d1e2f-0a1b-4c2d-9e3f-405162738495-StreamThread-1"
    client = "word-count-8c9d1e2f-0a1b-4c2d-9e3f-405162738495"
    text = "".join(f"[2024-03-05 09:14:0{i},000] INFO {prefix} {message} ({logger})\n" for i, (prefix, message, logger) in enumerate((
        (f"stream-client [{client}]", "Started 2 stream threads", "org.apache.kafka.streams.KafkaStreams"),
        (f"stream-thread [{thread}]", "Starting", "org.apache.kafka.streams.processor.internals.StreamThread"),
        (f"stream-client [{client}]", "Adding StreamThread-3, there will now be 3 live threads and the new cache size "
                                      "per thread is 3495253", "org.apache.kafka.streams.KafkaStreams"),
        (f"stream-client [{client}]", "Shutting down 3 stream threads", "org.apache.kafka.streams.KafkaStreams"),
        (f"stream-thread [{thread}]", "Shutdown complete", "org.apache.kafka.streams.processor.internals.StreamThread"),
        (f"stream-client [{client}]", "Shutdown 3 stream threads complete", "org.apache.kafka.streams.KafkaStreams"),
    )))
    path = tmp_path / "streams.log"
    path.write_text(text, encoding="utf-8")
    events, _ = events_of(path, base_date="2024-01-01")
    assert [e["event"] for e in events] == ["streams.client_started", "streams.thread_started", "streams.thread_added",
                                            "streams.client_stopping", "streams.thread_stopped", "streams.client_stopped"]
    assert {e["group"] for e in events} == {"word-count"}
    assert events[1]["thread"] == thread and events[4]["thread"] == thread


def test_another_threads_starting_or_shutdown_is_no_event_and_no_near_miss(tmp_path):
    path = tmp_path / "server.log"
    path.write_text("[2024-03-05 09:14:00,000] INFO [ExpirationReaper-1-Heartbeat]: Starting "
                    "(kafka.server.DelayedOperationPurgatory$ExpiredOperationReaper)\n"
                    "[2024-03-05 09:14:00,001] INFO [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Starting "
                    "(kafka.server.ReplicaFetcherThread)\n"
                    "[2024-03-05 09:15:00,001] INFO [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Shutdown completed "
                    "(kafka.server.ReplicaFetcherThread)\n", encoding="utf-8")
    events, stats = events_of(path, base_date="2024-01-01")
    assert events == [] and stats.files[0].near_misses == 0
