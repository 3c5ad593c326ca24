"""Every shipped layout is detected on its fixture, and every annotated record is recognised."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from helpers import events_of, expectations
from rebalance_doctor.core.conversion import ConversionError, compile_conversion
from rebalance_doctor.core.layouts import load_layouts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layouts"
CONTAINERS = {"kubernetes-strimzi": ("strimzi", "kubernetes"), "docker-compose-kafka": ("kafka", "docker-compose")}
STORY_START = datetime(2024, 5, 1, 13, 45, 12, 345000, tzinfo=timezone.utc)


def layout_fixtures():
    return sorted(FIXTURES.glob("*.log"))


def test_every_shipped_layout_has_a_fixture():
    # The non-Java clients' layouts have theirs under fixtures/clients/<client>/<layout>.log
    # (tests/test_clients.py checks them).
    names = {l.name for l in load_layouts().layouts}
    clients = {p.stem for p in (FIXTURES.parent / "clients").glob("*/*.log")}
    assert names <= {p.stem for p in layout_fixtures()} | clients


@pytest.mark.parametrize("path", layout_fixtures(), ids=lambda p: p.stem)
def test_layout_detected_and_records_recognised(path: Path):
    events, stats = events_of(path, base_date="2024-05-01")
    layout, container = CONTAINERS.get(path.stem, (path.stem, None))
    assert stats.files[0].layout == layout
    assert stats.files[0].container == container
    found = {e["line"]: e["pattern"] for e in events}
    assert found == expectations(path)
    prepare = next(e for e in events if e["pattern"] == "broker.rebalance.prepare")
    expected_ts = STORY_START.replace(hour=12) if path.stem == "spring-boot-3" else STORY_START  # written at +01:00
    assert prepare["ts"] == expected_ts
    assert prepare["group"] == "orders" and prepare["generation"] == 41
    join = next(e for e in events if e["pattern"] == "consumer.join.requested")
    assert (join["group"], join["client"], join["reason"]) == ("orders", "consumer-orders-1", "group is already rebalancing")
    assert join["logger"] == "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator" or "." in join["logger"]


def test_multiline_record_keeps_first_line_and_all_partitions():
    events, _ = events_of(FIXTURES / "kafka.log")
    update = next(e for e in events if e["event"] == "assignment.received")
    assert update["line"] == 11
    assert update["partitions"] == ["orders-0", "orders-1"]
    assert update["message"].count("\n") == 5


def test_stack_trace_is_one_record_not_an_event():
    events, stats = events_of(FIXTURES / "kafka.log")
    assert not any("IllegalStateException" in e["message"] for e in events)
    assert stats.files[0].near_misses == 0


@pytest.mark.parametrize("pattern,line,fields", [
    ("%d{ISO8601} %-5p [%t] %c - %m%n",
     "2024-05-01 13:45:12,345 INFO  [main] org.apache.kafka.clients.consumer.internals.ConsumerCoordinator - hello there",
     {"level": "INFO", "thread": "main", "logger": "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator", "msg": "hello there"}),
    ("%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} [%thread] %-5level %logger{36} - %msg%n",
     "2024-05-01T13:45:12.345+02:00 [kafka-coordinator-heartbeat-thread | g] WARN  o.a.k.c.c.i.ConsumerCoordinator - x - y",
     {"level": "WARN", "thread": "kafka-coordinator-heartbeat-thread | g", "msg": "x - y"}),
    ("%d %-5p %c{1}:%L - %m%n", "2024-05-01 13:45:12,345 ERROR x.ConsumerCoordinator:42 - boom",
     {"level": "ERROR", "msg": "boom"}),
])
def test_conversion_patterns_compile_and_split(pattern, line, fields):
    from rebalance_doctor.core.layouts import layout_from_pattern

    envelope = layout_from_pattern(pattern).split(line)
    assert envelope is not None
    for name, value in fields.items():
        assert getattr(envelope, name) == value


def test_layout_option_reads_a_custom_layout(tmp_path):
    log = tmp_path / "app.log"
    log.write_text("2024-05-01 13:45:12,345 | INFO | main | org.apache.kafka.clients.consumer.internals.ConsumerCoordinator | "
                   "[Consumer clientId=c-1, groupId=g] (Re-)joining group\n")
    events, stats = events_of(log, layout="%d | %p | %t | %c | %m%n")
    assert [e["pattern"] for e in events] == ["consumer.join.start"]
    assert events[0]["thread"] == "main" and events[0]["group"] == "g"


def test_conversion_without_message_is_rejected():
    with pytest.raises(ConversionError):
        compile_conversion("[%d] %p (%c)%n")


def test_broker_log_context_prefixes_are_not_taken_for_threads(tmp_path):
    # Most broker lines carry a log-context prefix in brackets where '[%t]' would stand; the
    # layout with a thread field would then join every line without one into the record above.
    noise = [
        "[Log partition=orders-3, dir=/var/kafka] Rolled new log segment at offset 1523 (kafka.log.LocalLog)",
        "[ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Truncating partition orders-1 (kafka.server.ReplicaFetcherThread)",
        "[Controller id=1] Processing automatic preferred replica leader election (kafka.controller.KafkaController)",
        "[GroupCoordinator 1]: Member c-1-77aa in group orders has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)",
        "Deleted log segment 1500 for partition orders-2 (kafka.log.LogManager)",
    ]
    dump = ["[2024-05-01 13:44:00,000] INFO KafkaConfig values: "]
    dump += [f"\tsetting.number.{n} = {n}" for n in range(30)] + [" (kafka.server.KafkaConfig)"]
    lines = [f"[2024-05-01 13:45:{i:02d},000] INFO {noise[3] if i % 8 == 0 else noise[i % 3]}" for i in range(40)]
    lines[20:20] = [f"[2024-05-01 13:45:59,000] INFO {noise[4]}"] * 3
    (tmp_path / "server.log").write_text("\n".join(dump + lines) + "\n")
    events, stats = events_of(tmp_path)
    assert stats.files[0].layout == "kafka"
    assert [e["line"] for e in events] == [33, 41, 49, 60, 68]
    assert all(e["event"] == "member.expired" for e in events)


def _java_layouts() -> tuple[str, ...]:
    from rebalance_doctor.packgen.render import LAYOUTS

    return LAYOUTS


@pytest.mark.parametrize("layout", _java_layouts())
def test_the_kafka_version_line_is_read_in_every_layout(tmp_path, layout):
    """AppInfoParser's `Kafka version:` and `Kafka commitId:` lines are events in every layout a
    Java client writes, and the version is the file's from the next record on."""
    from rebalance_doctor.packgen.envelope import render

    lines = [render(layout, STORY_START, "INFO", "org.apache.kafka.common.utils.AppInfoParser", message, "main")
             for message in ("Kafka version: 3.6.1", "Kafka commitId: 5e3c2b738d253ff5")]
    lines.append(render(layout, STORY_START, "INFO", "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator",
                        "[Consumer clientId=c-1, groupId=g] (Re-)joining group", "main"))
    path = tmp_path / "app.log"
    path.write_text("\n".join(lines) + "\n")
    events, stats = events_of(path, base_date="2024-05-01")
    assert [(e["line"], e["event"]) for e in events] == [(1, "client.version"), (2, "consumer.app_info_parser"),
                                                         (3, "join.start")]
    assert events[0]["attrs"]["version"] == "3.6.1" and events[2]["kafka_version"] == "3.6.1"
    assert stats.files[0].kafka_version == "3.6.1" and stats.files[0].near_misses == 0
