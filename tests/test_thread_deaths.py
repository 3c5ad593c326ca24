"""The evidence shows the cause (issue 30, item 4): a StreamThread's death shows the exception it died with (its
first line, its root cause, the first frame in the application's code) in the terminal, Markdown, JSON and HTML;
a replacement the logs show (Kafka's REPLACE_THREAD, ksqlDB restarting the query's thread, a new StreamThread
starting while the dead one shuts down) is never "died without replacement"."""

from __future__ import annotations

from pathlib import Path

import pytest

import rebalance_doctor
from rebalance_doctor.classify import of
from rebalance_doctor.core.stacktrace import thrown
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parents[1]
DIED = REPO / "fixtures" / "incidents" / "streams-thread-died"
NPE = 'java.lang.NullPointerException: Cannot invoke "String.length()" because "value" is null'
FRAME = "com.example.streams.Enricher.apply(Enricher.java:42)"


def test_the_exception_a_thread_died_with_is_data_of_the_finding():
    """streams-thread-died: the application's handler logs "Uncaught exception in thread ..." with the
    StreamsException whose root cause is a NullPointerException in com.example.streams.Enricher (application.log
    192-200); the finding carries each part with its line, its cause and fix name them."""
    analysis = rebalance_doctor.analyze(str(DIED))
    head = analysis.findings[0]
    assert head.rule == "thread-died"
    [exception] = analysis.to_dict()["findings"][0]["exceptions"]
    assert exception == {
        "source": "search-7d9f4/application.log", "line": 192,
        "exception": "org.apache.kafka.streams.errors.StreamsException: Exception caught in process. taskId=0_0, "
                     "processor=KSTREAM-SOURCE-0000000000, topic=inventory-aggregator-input, partition=0, "
                     "offset=4711, stacktrace=java.lang.NullPointerException",
        "exception_line": 193, "root_cause": NPE, "root_cause_line": 199, "frame": FRAME, "frame_line": 200}
    assert NPE in head.cause and FRAME in head.cause
    assert head.remediation.startswith(f"Fix the java.lang.NullPointerException the thread died with at {FRAME} "
                                       "(search-7d9f4/application.log:200)")
    assert "search-7d9f4/application.log:192" in {e.ref() for e in head.evidence}


@pytest.mark.parametrize("fmt", ["human", "markdown", "html"])
def test_every_format_shows_the_exception(fmt, tmp_path: Path):
    if fmt == "html":
        page = tmp_path / "r.html"
        result = run_cli("analyze", str(DIED), "--html", str(page))
        text = page.read_text(encoding="utf-8").replace("&quot;", '"')
    else:
        result = run_cli("analyze", str(DIED), "--format", fmt, env={"COLUMNS": "200"})
        text = result.stdout.replace("\\_", "_")
    assert result.returncode == 1, result.stderr
    for part in (NPE, FRAME, "search-7d9f4/application.log:200", "StreamsException: Exception caught in process"):
        assert part in text, f"{fmt}: {part}"


def test_a_stack_trace_read_frame_by_frame():
    """Kafka's and the JVM's frames are passed over; the first frame of the application's code is where to look; a
    trace whose first line (the JVM's default handler) states the exception has it there."""
    record = {"source": "app.log", "line": 10, "message": "\n".join([
        "[2024-03-05 09:00:56,510] ERROR Uncaught exception in thread app-1f0e-StreamThread-1 (com.acme.App)",
        "org.apache.kafka.streams.errors.StreamsException: failed to process",
        "\tat org.apache.kafka.streams.processor.internals.StreamTask.process(StreamTask.java:750)",
        "\tat java.base/java.lang.Thread.run(Thread.java:840)",
        "Caused by: com.fasterxml.jackson.core.JsonParseException: Unexpected character ('}')",
        "\tat com.fasterxml.jackson.core.JsonParser._constructError(JsonParser.java:2391)",
        "\tat com.acme.orders.OrderSerde.deserialize(OrderSerde.java:31)",
        "\t... 12 more"])}
    t = thrown(record)
    assert (t.exception, t.exception_line) == ("org.apache.kafka.streams.errors.StreamsException: failed to process", 11)
    assert (t.root_cause, t.root_cause_line) == ("com.fasterxml.jackson.core.JsonParseException: Unexpected character "
                                                 "('}')", 14)
    # Jackson is not the JVM's nor Kafka's: a library the application ships is where its code starts.
    assert (t.frame, t.frame_line) == ("com.fasterxml.jackson.core.JsonParser._constructError(JsonParser.java:2391)", 15)
    jvm = {"source": "stderr.log", "line": 3, "message": 'Exception in thread "app-1f0e-StreamThread-2" '
                                                         "java.lang.IllegalStateException: unexpected null key"}
    assert thrown(jvm).exception == "java.lang.IllegalStateException: unexpected null key"
    assert thrown({"message": "[2024-03-05 09:00:56,510] INFO State transition from RUNNING to DEAD"}) is None


# A ksqlDB server's log (ksql-server.log, log4j `[%d] %p %m (%c:%L)%n`) when a persistent query's stream thread
# dies: QueryMetadataImpl.uncaughtHandler logs "Unhandled exception caught in streams thread {}. ({})" with the
# throwable, RetryEvent.backOff logs "Restarting query {} thread {} (attempt #{})", the handler returns
# REPLACE_THREAD, and Kafka Streams starts a new StreamThread (here StreamThread-5) while the dead one shuts down
# (confluentinc/ksql, ksqldb-engine/src/main/java/io/confluent/ksql/util/QueryMetadataImpl.java).
APP = "_confluent-ksql-default_query_CSAS_ORDERS_ENRICHED_7"
NODE = f"{APP}-4f1c2e9a-7d1b-4e55-9a0b-3c2d1e0f9a8b"
ST = "(org.apache.kafka.streams.processor.internals.StreamThread:235)"
KSQL = [
    f"[2024-03-05 09:14:01,002] INFO stream-thread [{NODE}-StreamThread-1] State transition from PARTITIONS_ASSIGNED "
    f"to RUNNING {ST}",
    f"[2024-03-05 09:14:02,998] ERROR Unhandled exception caught in streams thread {NODE}-StreamThread-1. (USER) "
    "(io.confluent.ksql.util.QueryMetadataImpl:208)",
    "org.apache.kafka.streams.errors.StreamsException: Error encountered sending record to topic ORDERS_ENRICHED for "
    "task 0_3 due to:",
    "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [ORDERS_ENRICHED]",
    "\tat org.apache.kafka.streams.processor.internals.RecordCollectorImpl.recordSendError(RecordCollectorImpl.java:246)",
    f"[2024-03-05 09:14:03,101] INFO Restarting query CSAS_ORDERS_ENRICHED_7 thread {NODE}-StreamThread-1 (attempt #1) "
    "(io.confluent.ksql.util.QueryMetadataImpl:436)",
    f"[2024-03-05 09:14:03,104] INFO stream-thread [{NODE}-StreamThread-1] State transition from RUNNING to "
    f"PENDING_SHUTDOWN {ST}",
    f"[2024-03-05 09:14:03,120] INFO stream-thread [{NODE}-StreamThread-5] State transition from CREATED to STARTING {ST}",
    f"[2024-03-05 09:14:03,180] INFO stream-thread [{NODE}-StreamThread-1] Shutdown complete "
    "(org.apache.kafka.streams.processor.internals.StreamThread:1164)",
    f"[2024-03-05 09:14:03,181] INFO stream-thread [{NODE}-StreamThread-1] State transition from PENDING_SHUTDOWN to "
    f"DEAD {ST}",
    f"[2024-03-05 09:14:03,412] INFO [Consumer clientId={NODE}-StreamThread-5-consumer, groupId={APP}] (Re-)joining "
    "group (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:535)",
]


def _ksql(tmp_path: Path, drop: tuple[str, ...] = ()):
    (tmp_path / "ksql-server.log").write_text("\n".join(l for l in KSQL if not any(d in l for d in drop)) + "\n")
    analysis = rebalance_doctor.analyze(str(tmp_path))
    [group] = analysis.groups
    assert group.timeline.group == APP
    return analysis


@pytest.mark.parametrize("drop", [(), ("StreamThread-5]",), ("Restarting query",)],
                         ids=["restart-and-new-thread", "restart-line-only", "new-thread-only"])
def test_a_ksqldb_query_restart_is_a_replacement(drop, tmp_path: Path):
    """ksqlDB restarting the query's thread, or the new StreamThread it starts, is a replacement: never "died
    without replacement", never the advice to return REPLACE_THREAD (which ksqlDB's handler does)."""
    analysis = _ksql(tmp_path, drop)
    [death] = of(analysis.groups[0].timeline).threads.deaths
    assert death.thread == f"{NODE}-StreamThread-1" and death.replaced is not None
    assert "thread-died" not in {f.rule for f in analysis.findings}
    for f in analysis.findings:
        assert "without replacement" not in f.title and "REPLACE_THREAD" not in f.remediation


def test_a_ksqldb_thread_death_without_a_restart_shows_its_exception(tmp_path: Path):
    """The same death with no sign of a restart (nor a new thread) is thread-died, with ksqlDB's exception."""
    analysis = _ksql(tmp_path, ("StreamThread-5]", "Restarting query"))
    head = analysis.findings[0]
    assert head.rule == "thread-died"
    assert [(t.exception, t.exception_line) for t in head.exceptions] == [
        ("org.apache.kafka.streams.errors.StreamsException: Error encountered sending record to topic ORDERS_ENRICHED "
         "for task 0_3 due to:", 3)]


def test_a_recorded_replacement_loop_shows_the_exception():
    """Real Kafka 4.2.1 (the lab): the application's processor throws; 'Replacing thread in the streams uncaught
    exception handler' carries the trace, its root cause and the application's frame."""
    analysis = rebalance_doctor.analyze(str(REPO / "fixtures" / "lab" / "streams-thread-replacement-loop@4.2.1"))
    head = analysis.findings[0]
    assert head.rule == "thread-replacement-loop"
    [t] = head.exceptions
    assert t.root_cause.startswith("java.lang.IllegalStateException: Order with an unknown currency")
    assert t.frame is not None and t.frame.startswith("LabStreams.")


def test_an_uncaught_exception_in_another_thread_is_no_streams_death(tmp_path: Path):
    """The same wording about a thread that is no StreamThread (a poll loop, main) is read as client.thread_died
    (no group, no Streams death) rather than left a near miss."""
    from tests.helpers import events_of

    (tmp_path / "app.log").write_text(
        "[2024-03-05 09:14:02,998] ERROR Uncaught exception in thread order-poller-1 (com.example.orders.App)\n"
        "java.lang.IllegalStateException: poison record at offset 118\n"
        "\tat com.example.orders.Poller.run(Poller.java:57)\n")
    (tmp_path / "stderr.log").write_text('Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n')
    events, stats = events_of(tmp_path / "app.log", tmp_path / "stderr.log")
    assert [(e["event"], e["thread"], e["group"], e["error"]) for e in events] == [
        ("client.thread_died", "order-poller-1", None, "java.lang.IllegalStateException"),
        ("client.thread_died", "main", None, "java.lang.OutOfMemoryError")]
    assert stats.near_misses == 0
    assert thrown(events[0]).frame == "com.example.orders.Poller.run(Poller.java:57)"
