"""Record assembly: which lines make one record, and what of it the patterns read.

A pattern reads the first line of a record's message (templates that span lines also read the
continuation lines that fit them), so no line that follows a record can unmake or make its event;
a line that continues no record (a Kibana date line, a print(), CLI output, a JSON line, another
source's line) is a record of its own, never glued to the one above.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import events_of, expectations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layouts"
FIELDS = ("event", "pattern", "group", "generation", "member", "client", "instance", "reason", "partitions",
          "thread", "level", "logger", "ts", "state", "error", "delay_ms")

# Lines found between records in logs as they are found: none of them belongs to a record.
FOREIGN = [
    "Jan 17, 2020 @ 15:54:24.877",                                                       # Kibana / Elastic export
    "2020-01-17T15:54:24.877Z\tINFO\tlog/harvester.go:302\tHarvester started for file: /var/log/kafka/server.log",  # filebeat
    "processed 42 records",                                                              # an application's print()
    "Warning: Consumer group 'orders' is rebalancing.",                                  # CLI output
    '{"level":"info","msg":"heartbeat ok","ts":1579276464.877}',                         # a JSON line among text lines
    "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG",    # kafka-consumer-groups output
    "",                                                                                  # a blank line
]


PREFIXES = ("kafka-1  | ", "2024-05-01T13:45:12.345678901Z ")


def _continues(line: str) -> bool:
    """Whether a fixture line continues the record above it (indented, blank, or a stack trace's
    exception line), behind the fixtures' container prefixes."""
    for prefix in PREFIXES:
        if line.startswith(prefix):
            line = line[len(prefix):]
    return line == "" or line.startswith(("\t", " ", "java.lang."))


def _record_starts(lines: list[str]) -> list[int]:
    """0-based indexes of the fixture lines that start a record, or annotate the record below."""
    return [i for i, line in enumerate(lines) if not _continues(line) and not (i and lines[i - 1].startswith("#expect:"))]


def _comparable(events: list[dict], line_of=lambda n: n) -> list[tuple]:
    return sorted((line_of(e["line"]),) + tuple(str(e[f]) for f in FIELDS) for e in events)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.log")), ids=lambda p: p.stem)
def test_foreign_lines_between_every_record_change_no_event(path: Path, tmp_path):
    """Deterministic interleaving: a foreign line of each kind in turn before every record of the
    layout fixture; the events are the same (fields and the lines they point to)."""
    lines = path.read_text().splitlines()
    starts = set(_record_starts(lines))
    mixed, new_line_of = [], {}
    for i, line in enumerate(lines):
        if i in starts:
            mixed.append(FOREIGN[len(mixed) % len(FOREIGN)])
        mixed.append(line)
        new_line_of[i + 1] = len(mixed)
    mixed.append(FOREIGN[0])
    target = tmp_path / path.name
    target.write_text("\n".join(mixed) + "\n")
    before, _ = events_of(path, base_date="2024-05-01")
    after, stats = events_of(target, base_date="2024-05-01", host=before[0]["host"])
    assert before and _comparable(after) == _comparable(before, new_line_of.__getitem__)
    assert stats.files[0].lines == len(mixed)
    assert stats.files[0].near_misses == 0


BROKER = ("[2020-01-17 15:54:24,877] INFO [GroupCoordinator 1]: Member consumer-2-6c52 in group orders has failed, "
          "removing it from the group (kafka.coordinator.group.GroupCoordinator)")
PREPARE = ("[2020-01-17 15:54:24,878] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state "
           "PreparingRebalance with old generation 7 (__consumer_offsets-3) (reason: removing member consumer-2-6c52 "
           "on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)")


@pytest.mark.parametrize("follower", [
    "Jan 17, 2020 @ 15:54:25.001",
    '{"@timestamp":"2020-01-17T15:54:25.001Z","message":"Request joining group due to: rebalance failed"}',
    "sending 3 records",
    "Warning: Consumer group 'orders' is rebalancing.",
    "",
    "java.lang.IllegalStateException: Request joining group due to: nothing",
    "\tat org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.poll(ConsumerCoordinator.java:1)",
    "\tRequest joining group due to: an indented line",
], ids=["kibana", "json", "print", "cli", "blank", "exception", "frame", "indented"])
def test_no_following_line_unmakes_or_makes_an_event(tmp_path, follower):
    log = tmp_path / "server.log"
    log.write_text("\n".join([BROKER, follower, PREPARE, follower]) + "\n")
    events, stats = events_of(log)
    broker = [e for e in events if e["logger"] == "kafka.coordinator.group.GroupCoordinator"]
    assert [(e["line"], e["event"]) for e in broker] == [(1, "member.expired"), (3, "rebalance.prepare")]
    assert broker[1]["generation"] == 7 and broker[1]["reason"] == "removing member consumer-2-6c52 on heartbeat expiration"
    # The follower never becomes part of what a broker record matched: no event names its words.
    assert not any(e["event"] == "join.requested" and e["line"] in (1, 3) for e in events)


def test_a_foreign_line_with_kafka_wording_is_its_own_record(tmp_path):
    """A JSON line among broker lines is read on its own line (and with its own line number)."""
    log = tmp_path / "server.log"
    json_line = ('{"@timestamp":"2020-01-17T15:54:25.001Z","level":"INFO","logger_name":"org.apache.kafka.clients.'
                 'consumer.internals.ConsumerCoordinator","message":"[Consumer clientId=c-1, groupId=orders] Request '
                 'joining group due to: need to re-join with the given member-id"}')
    log.write_text("\n".join([BROKER, json_line, PREPARE]) + "\n")
    events, _ = events_of(log)
    events.sort(key=lambda e: e["line"])
    assert [(e["line"], e["event"]) for e in events] == [(1, "member.expired"), (2, "join.requested"), (3, "rebalance.prepare")]
    assert "\n" not in events[0]["message"]
    # ... and with the layout that reads that line (logstash JSON), not the broker file's.
    joined = events[1]
    assert (joined["group"], joined["client"], joined["reason"]) == ("orders", "c-1", "need to re-join with the given member-id")
    assert joined["logger"].endswith("ConsumerCoordinator") and joined["ts"].isoformat() == "2020-01-17T15:54:25.001000+00:00"


@pytest.mark.parametrize("layout", ["kafka", "spring-boot", "log4j-iso-thread", "logback-default", "docker-compose-kafka",
                                    "kubernetes-strimzi", "level-first"])
def test_spanning_template_reads_its_indented_block_not_what_follows(tmp_path, layout):
    """"Updating assignment with" spans tab-indented lines; a foreign line after it changes nothing."""
    path = FIXTURES / f"{layout}.log"
    lines = path.read_text().splitlines()
    at = next(n for n, pattern in expectations(path).items() if pattern == "consumer.assignment.update")
    block_end = at
    while block_end < len(lines) and _continues(lines[block_end]):
        block_end += 1
    mixed = lines[:block_end] + ["Jan 17, 2020 @ 15:54:24.877", "print: assignment received"] + lines[block_end:]
    target = tmp_path / path.name
    target.write_text("\n".join(mixed) + "\n")
    events, _ = events_of(target, base_date="2024-05-01")
    update = next(e for e in events if e["pattern"] == "consumer.assignment.update")
    assert update["line"] == at and update["partitions"] == ["orders-0", "orders-1"]
    assert "Jan 17" not in update["message"] and "print:" not in update["message"]


def test_stack_trace_stays_in_the_message_but_never_matches(tmp_path):
    """A record whose first line holds no gate is no event, whatever its stack trace says."""
    log = tmp_path / "app.log"
    log.write_text(
        "[2024-05-01 13:45:18,345] ERROR failed to process record (com.example.OrderProcessor)\n"
        "org.apache.kafka.clients.consumer.CommitFailedException: Offset commit cannot be completed since the consumer "
        "is not part of an active group for auto partition assignment; Request joining group due to: x\n"
        "\tat org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.sendOffsetCommitRequest(ConsumerCoordinator.java:1)\n"
        + PREPARE + "\n"
        "org.apache.kafka.common.errors.TimeoutException: Stabilized group orders generation 99\n")
    events, stats = events_of(log)
    assert [(e["line"], e["event"], e["generation"]) for e in events] == [(4, "rebalance.prepare", 7)]
    assert events[0]["message"].endswith("Stabilized group orders generation 99")   # kept as evidence
    assert stats.files[0].near_misses == 0


def test_an_exception_reading_pattern_reads_the_exception(tmp_path):
    """streams.thread.failed_rebalance (reads = "exception"): Kafka states the event in the exception."""
    log = tmp_path / "streams.log"
    thread = "app-92665673-8057-4ee8-8619-bffd3670817d-StreamThread-2"
    log.write_text(
        f"[2019-11-27 11:28:59,965] ERROR [{thread}] stream-thread [{thread}] Encountered the following unexpected Kafka "
        "exception during processing, this usually indicate Streams internal errors: "
        "(org.apache.kafka.streams.processor.internals.StreamThread)\n"
        f"org.apache.kafka.streams.errors.StreamsException: stream-thread [{thread}] Failed to rebalance.\n"
        "\tat org.apache.kafka.streams.processor.internals.StreamThread.pollRequests(StreamThread.java:852)\n")
    events, _ = events_of(log)
    assert [(e["line"], e["event"], e["error"]) for e in events] == [(1, "streams.thread_died", "org.apache.kafka.streams.errors.StreamsException")]


def test_near_miss_names_the_records_first_line(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("Jan 17, 2020 @ 15:54:24.877\n"
                   "[2020-01-17 15:54:24,877] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in a way "
                   "no release ever wrote (kafka.coordinator.group.GroupCoordinator)\n"
                   "\tat somewhere\n")
    _, stats = events_of(log)
    file = stats.files[0]
    assert file.near_misses == 1
    assert file.near_miss_samples[0].line == 2 and file.near_miss_samples[0].text.startswith("[2020-01-17 15:54:24,877]")


# --- lines as terminals and exports leave them: hard wrapping, colour codes --------------------

def _wrap(lines: list[str], width: int) -> list[str]:
    out = []
    for line in lines:
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return out


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("layout", ["kafka", "spring-boot", "log4j2-pattern", "kubernetes-strimzi", "quarkus"])
def test_hard_wrapped_lines_are_joined_again(tmp_path, layout, width):
    """A log copied from a terminal or an issue, every line cut at 80 or 200 columns: the width is
    found from the file, the lines are joined, and events keep the file's own line numbers."""
    path = FIXTURES / f"{layout}.log"
    lines = [l for l in path.read_text().splitlines() if not l.startswith("#expect:")]
    wrapped, first_piece = [], {}
    for number, line in enumerate(lines, start=1):
        first_piece[number] = len(wrapped) + 1
        wrapped.extend(_wrap([line], width))
    assert max(len(l) for l in wrapped) == width
    plain, wrapped_file = tmp_path / "plain" / path.name, tmp_path / "wrapped" / path.name
    for target, content in ((plain, lines), (wrapped_file, wrapped)):
        target.parent.mkdir()
        target.write_text("\n".join(content) + "\n")
    before, _ = events_of(plain, base_date="2024-05-01", host="h")
    after, stats = events_of(wrapped_file, base_date="2024-05-01", host="h")
    assert len(before) == 6
    assert _comparable(after) == _comparable(before, first_piece.__getitem__)
    assert stats.files[0].lines == len(wrapped) and f"unwrapped at {width} columns" in stats.files[0].layout


def test_lines_of_one_length_are_not_taken_for_wrapping(tmp_path):
    """Records that all happen to be as long as the longest line (one shape, one length) are
    complete lines, not wrapped ones."""
    from rebalance_doctor.core.linefix import wrap_width

    same_shape = [f"[12:49:3{i}.206I||<0.1560.0>] Group member (g,coor=<0.1560.0>,generation=4040{i}):".encode()
                  for i in range(6)]
    assert wrap_width(same_shape) == 0
    header_then_message = [l for pair in zip(same_shape, [b"re-joining group, reason:unknown_member_id"] * 6) for l in pair]
    assert wrap_width(header_then_message) == 0
    assert wrap_width([BROKER.encode(), PREPARE.encode()] * 3) == 0


@pytest.mark.parametrize("escape", ["\x1b", "ESC"], ids=["esc-byte", "esc-text"])
def test_colour_codes_of_docker_compose_are_removed(tmp_path, escape):
    path = FIXTURES / "docker-compose-kafka.log"
    coloured = []
    for line in path.read_text().splitlines():
        if line.startswith("kafka-1  | "):
            line = f"{escape}[36mkafka-1  |{escape}[0m " + line[len("kafka-1  | "):]
        coloured.append(line)
    target = tmp_path / "compose.log"
    target.write_text("\n".join(coloured) + "\n")
    before, _ = events_of(path)
    after, stats = events_of(target)
    assert _comparable(after) == _comparable(before) and len(after) == 6
    assert {e["host"] for e in after} == {"kafka-1"}
    assert stats.files[0].container == "docker-compose" and "colour codes removed" in stats.files[0].layout
    assert not any(escape in e["message"] for e in after)


@pytest.mark.parametrize("indent", ["    ", "        ", "  "], ids=["4-spaces", "8-spaces", "2-spaces"])
@pytest.mark.parametrize("layout", ["kafka", "spring-boot", "log4j2-pattern", "logstash-json"])
def test_space_indented_blocks_read_like_tab_indented_ones(tmp_path, layout, indent):
    """Kafka indents its multi-line blocks with tabs; shippers and exports often turn them into 4
    or 8 spaces. The spanning templates read them the same."""
    from datetime import datetime, timezone

    from rebalance_doctor.packgen.envelope import render

    ts = datetime(2024, 5, 1, 13, 45, 17, 345000, tzinfo=timezone.utc)
    cc = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
    st = "org.apache.kafka.streams.processor.internals.StreamThread"
    thread = "app-225712b8-b54d-4043-a7e1-c489ee4f8fd5-StreamThread-1"
    records = [
        render(layout, ts, "INFO", cc, "[Consumer clientId=consumer-orders-1, groupId=orders] Updating assignment with\n"
               f"{indent}Assigned partitions:                       [orders-0, orders-1]\n"
               f"{indent}Current owned partitions:                  [orders-0]\n"
               f"{indent}Added partitions (assigned - owned):       [orders-1]\n"
               f"{indent}Revoked partitions (owned - assigned):     []\n", "main"),
        render(layout, ts, "INFO", st, f"stream-thread [{thread}] partition assignment took 29 ms.\n"
               f"{indent}current active tasks: [0_0, 0_1]\n{indent}current standby tasks: []\n"
               f"{indent}previous active tasks: []\n", thread),
    ]
    log = tmp_path / "app.log"
    log.write_text("\n".join(records) + "\n")
    events, stats = events_of(log)
    found = {e["event"]: e for e in events}
    assert found["assignment.received"]["partitions"] == ["orders-0", "orders-1"]
    assert found["partitions.assigned"]["tasks"] == ["0_0", "0_1"] and found["partitions.assigned"]["delay_ms"] == 29
    assert stats.files[0].near_misses == 0


def test_whitespace_only_lines_inside_a_block(tmp_path):
    """A block whose layout ends every line with two spaces (`%m  %n`) leaves a line of spaces
    after it; it continues the record and changes nothing (011's layout)."""
    log = tmp_path / "consumer.log"
    log.write_text(
        "INFO - 2024-11-11 09:37:20,706 - org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:962 - "
        "[Consumer clientId=c-1, groupId=g] Updating assignment with\n"
        "\tAssigned partitions:                       [t-0]\n"
        "  \n"
        "\tRevoked partitions (owned - assigned):     []\n"
        "  \n")
    events, stats = events_of(log)
    assert [(e["event"], e["partitions"]) for e in events] == [("assignment.received", ["t-0"])]
    assert not stats.files[0].problems


@pytest.mark.parametrize("layout", ["kafka", "spring-boot", "log4j2-pattern"])
def test_a_java_map_on_its_own_line_is_no_json_record(tmp_path, layout):
    """AbstractStickyAssignor's INFO "Final assignment of partitions to consumers: \\n{}" puts a
    Java map (`{consumer-1=[orders-0], ...}`) at the start of a line, once per rebalance the leader
    computes. Such lines are not JSON records: a log with several rebalances is read with its own
    layout alone and every assignment is an event (they were split off as logstash JSON records
    and each "Final assignment" became a near miss)."""
    from datetime import datetime, timedelta, timezone

    from rebalance_doctor.packgen.envelope import render

    cc = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
    sa = "org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor"
    prefix = "[Consumer clientId=consumer-orders-1, groupId=orders] "
    start = datetime(2024, 5, 1, 13, 45, 12, 345000, tzinfo=timezone.utc)
    records = []
    for k in range(5):
        ts = start + timedelta(minutes=k)
        member = "consumer-orders-1-6b1f"
        records += [
            render(layout, ts, "INFO", cc, prefix + f"Successfully joined group with generation Generation{{generationId="
                   f"{10 + k}, memberId='{member}', protocol='cooperative-sticky'}}", "main"),
            render(layout, ts, "INFO", sa, f"Final assignment of partitions to consumers: \n{{{member}=[orders-0, "
                   f"orders-1], consumer-orders-2-77aa=[orders-2]}}", "main"),
            render(layout, ts, "INFO", "com.example.Worker", "processed 42 records", "main"),
        ]
    log = tmp_path / "app.log"
    log.write_text("\n".join(records) + "\n")
    events, stats = events_of(log, base_date="2024-05-01")
    assert stats.files[0].layout == layout and stats.files[0].near_misses == 0
    assert [(e["line"], e["event"]) for e in events] == [
        (line, event) for k in range(5) for line, event in ((1 + 4 * k, "join.success"),
                                                            (2 + 4 * k, "assignment.computed"))]
