"""Real third-party excerpts (../shared/real-logs, read in place, never copied): every rebalance
record that a Java Kafka component (broker, consumer, Streams, Connect) wrote is recognised, with
no near miss, and group and generation are right wherever the line states them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import assert_stated_group_and_generation, events_of

# The excerpts written by Java Kafka components (INDEX.md); the others are librdkafka, kafka-python,
# aiokafka, brod, ruby-kafka and kafka-go logs, whose lines no Kafka pack describes.
JAVA = ("001", "003", "011", "013", "015", "029", "031", "033", "035", "041", "043", "045", "051", "053", "057")
KAFKA_LOGGER = re.compile(r"org\.apache\.kafka\.|kafka\.coordinator\.|\bo\.a\.k\.|\"logger_name\":\"org\.apache\.kafka")
REBALANCE = re.compile(r"(?i)rebalanc|generation|joining group|joined group|synced group|SyncGroup|JoinGroup|heartbeat|"
                       r"LeaveGroup|revok|assigned partitions|group coordinator|State transition|assignment|fenced|"
                       r"transitioned|from the group|left the|joins the|group epoch|Stabilized|group metadata")
GENERATION = [re.compile(p) for p in (r"generationId=(\d+)", r"\bgeneration (\d+)\b", r"with epoch (\d+)\b",
                                      r"group epoch to (\d+)", r"assignment for epoch (\d+)")]
GROUP = [re.compile(p) for p in (r"groupId=([^,\]\s]+)", r"\[GroupId ([^\]]+)\]", r"\bgroup ([\w.-]+) (?:in state|generation|with generation|for generation)",
                                 r"for group ([\w.-]+)", r"in group ([\w.-]+)", r"metadata for ([\w.-]+) with generation")]


# What the Java excerpts' rebalance records are, line by line, from INDEX.md and a reading of each
# line: the event each must yield and the fields it states. Numbers are written here; a group or
# member is STATED: the event holds the value the line itself names (checked against the line, so
# no piece of the excerpts is copied here). Lines left out are not rebalance records (metadata,
# application output, "Creating ... client").
STATED = "stated"
RECORDS: dict[str, dict[int, tuple[str, dict[str, object]]]] = {
    "001": {  # 2.x broker: a member joins (gen 12 -> 13), another expires on heartbeat (13 -> 14)
        1: ("rebalance.prepare", {"group": STATED, "generation": 12, "member": STATED}),
        2: ("rebalance.stabilized", {"group": STATED, "generation": 13}),
        3: ("rebalance.assignment_received", {"group": STATED, "generation": 13}),
        4: ("member.expired", {"group": STATED, "member": STATED}),
        5: ("rebalance.prepare", {"group": STATED, "generation": 13, "member": STATED}),
    },
    "003": {n: ("member.expired", {"group": STATED, "member": STATED}) for n in (1, 2, 3)},  # Strimzi, mass expiry
    "011": {  # 3.8 AsyncKafkaConsumer (KIP-848): local epochs 0-4, the client's own count of assignments (3.8 prints epoch and member swapped)
        1: ("client.version", {}),
        4: ("coordinator.discovered", {"group": STATED, "client": STATED}),
        5: ("assignment.received", {"group": STATED, "local_epoch": "0", "member": STATED}),
        12: ("assignment.received", {"group": STATED, "local_epoch": "1", "member": STATED}),
        21: ("assignment.received", {"group": STATED, "local_epoch": "2", "member": STATED}),
        28: ("commit.failed", {"group": STATED}),
        32: ("assignment.received", {"group": STATED, "local_epoch": "3", "member": STATED}),
        39: ("partitions.revoked", {"group": STATED}),
        40: ("assignment.received", {"group": STATED, "local_epoch": "4", "member": STATED}),
        50: (None, {"group": STATED}),      # releasing the assignment before leaving: recognised, any event
        51: ("partitions.revoked", {"group": STATED}),
        52: ("leave.request", {"group": STATED}),
    },
    "013": {  # Connect worker: joined gen 76030, SyncGroup failed (another rebalance), rejoin requested
        1: ("join.start", {"group": STATED}),
        2: ("join.success", {"group": STATED, "generation": 76030, "member": STATED}),
        3: ("sync.failed", {"group": STATED, "generation": 76030, "member": STATED}),
        4: ("join.requested", {"group": STATED}),
    },
    "015": {  # Connect: config offset mismatch forces a rebalance, join/sync gen 18
        1: ("connect.config_mismatch", {"group": STATED}),
        2: ("connect.rebalance_started", {"group": STATED}),
        3: ("join.start", {"group": STATED}),
        4: ("join.success", {"group": STATED, "generation": 18, "member": STATED}),
        5: ("sync.success", {"group": STATED, "generation": 18, "member": STATED}),
    },
    "029": {  # spring-kafka app, custom bracket layout: generation 373
        1: ("join.start", {"group": STATED}),
        2: ("join.success", {"group": STATED, "generation": 373, "member": STATED}),
        3: ("sync.success", {"group": STATED, "generation": 373, "member": STATED}),
    },
    "031": {3: ("coordinator.discovered", {"group": STATED}), 4: ("join.start", {"group": STATED})},
    "033": {n: ("join.requested", {"group": STATED}) for n in (1, 2)},   # logstash JSON, heartbeat thread
    "035": {1: ("commit.failed", {"group": STATED}), 2: ("coordinator.discovered", {"group": STATED})},
    "041": {  # KIP-848 broker: target assignments for epochs 5 and 6, two members STABLE at epoch 6
        1: ("group.target_assignment", {"group": STATED, "generation": 5}),
        2: ("group.target_assignment", {"group": STATED, "generation": 6}),
        3: ("member.assignment", {"group": STATED, "generation": 6, "member": STATED}),
        4: ("member.assignment", {"group": STATED, "generation": 6, "member": STATED}),
    },
    "043": {  # Streams 2.3 start-up: thread starting, states, revocation and assignment blocks
        4: ("streams.thread_started", {"group": STATED, "thread": STATED}),
        5: ("streams.state", {"group": STATED, "thread": STATED}),
        6: ("streams.state", {"group": STATED, "thread": STATED}),
        7: ("partitions.revoked", {"group": STATED, "thread": STATED}),
        10: ("streams.state", {"group": STATED, "thread": STATED}),
        11: ("partitions.assigned", {"group": STATED, "thread": STATED}),
        16: ("streams.state", {"group": STATED, "thread": STATED}),
    },
    "045": {  # MirrorMaker 2 Connect worker, "%d %p %c: %m": rebalance, join at generation 64
        1: ("connect.rebalance_started", {"group": STATED}),
        2: ("join.start", {"group": STATED}),
        3: ("join.success", {"group": STATED, "generation": 64}),
    },
    "051": {  # broker: coordinator unload (5051) and load (5052), a join, then mass expiry
        1: ("coordinator.load", {"group": STATED, "generation": 5051}),
        2: ("coordinator.load", {"group": STATED, "generation": 5052}),
        3: ("rebalance.prepare", {"group": STATED, "generation": 5052, "member": STATED}),
        4: ("member.expired", {"group": STATED, "member": STATED}),
        5: ("member.expired", {"group": STATED, "member": STATED}),
    },
    "053": {  # reactor-kafka (DEBUG), US date layout: revoke and assign while paused
        4: ("partitions.revoked", {"partitions": STATED}),
        5: ("partitions.assigned", {"partitions": STATED}),
    },
    "057": {1: ("streams.thread_died", {"group": STATED, "thread": STATED})},   # "Failed to rebalance." in the exception
}


def stated_in(value: object, line: str) -> bool:
    """Whether ``value`` is what the line names: the whole value appears in it, between delimiters."""
    if isinstance(value, list):
        return bool(value) and all(stated_in(v, line) for v in value)
    if not isinstance(value, str) or not value:
        return False
    return re.search(r"(?:^|[\s\[(='\",:])" + re.escape(value) + r"(?=$|[\s\])',.;:-])", line) is not None


def excerpts(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*.log") if p.name[:3] in JAVA)


def test_the_java_excerpts_are_there(real_logs):
    assert len(excerpts(real_logs)) == len(JAVA)


@pytest.mark.parametrize("number", JAVA)
def test_every_rebalance_record_is_recognised(real_logs, number):
    path = next(real_logs.glob(f"{number}-*.log"))
    events, stats = events_of(path, base_date="2024-01-01")
    assert stats.files[0].near_misses == 0, [(m.line, m.closest, m.text[:160]) for m in stats.files[0].near_miss_samples]
    covered = set()
    for event in events:
        covered.update(range(event["line"], event["line"] + event["message"].count("\n") + 1))
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    missed = [(n, line[:200]) for n, line in enumerate(lines, start=1)
              if n not in covered and KAFKA_LOGGER.search(line) and REBALANCE.search(line)
              and not line.startswith((" ", "\t"))]
    assert not missed


def test_the_records_table_covers_every_java_excerpt():
    assert set(RECORDS) == set(JAVA)


@pytest.mark.parametrize("number", JAVA)
def test_each_rebalance_record_is_read_as_its_event_with_the_fields_it_states(real_logs, number):
    path = next(real_logs.glob(f"{number}-*.log"))
    events, _ = events_of(path, base_date="2024-01-01")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    by_line = {e["line"]: e for e in events}
    for line, (event_name, fields) in RECORDS[number].items():
        event = by_line.get(line)
        assert event is not None, f"{number}:{line} is not recognised"
        if event_name is not None:
            assert event["event"] == event_name, (number, line, event["event"], event["pattern"])
        record = "\n".join(lines[line - 1:line - 1 + event["message"].count("\n") + 1])
        for name, want in fields.items():
            have = event[name] if name in event else (event.get("attrs") or {}).get(name)
            if want == STATED:
                assert stated_in(have, record), (number, line, name, have)
            else:
                assert have == want, (number, line, name, have, want)


@pytest.mark.parametrize("number", JAVA)
def test_group_and_generation_are_right_where_stated(real_logs, number):
    path = next(real_logs.glob(f"{number}-*.log"))
    events, _ = events_of(path, base_date="2024-01-01")
    assert_stated_group_and_generation(events, GROUP, GENERATION)


def test_kafka_version_line_sets_the_files_version(real_logs):
    path = next(real_logs.glob("011-*.log"))
    events, stats = events_of(path, base_date="2024-01-01")
    assert stats.files[0].kafka_version == "3.8.1"
    assert {e["kafka_version"] for e in events if e["line"] > 1} == {"3.8.1"}


def test_without_a_version_line_the_wording_bounds_the_version(real_logs):
    path = next(real_logs.glob("041-*.log"))   # KIP-848 broker lines: the Java coordinator, 3.7 or newer
    events, stats = events_of(path, base_date="2024-01-01")
    assert stats.files[0].kafka_version == ">3.6"
    assert {e["kafka_version"] for e in events} == {">3.6"}


def test_wording_of_2_x_broker_lines_says_older_than_2_8(real_logs):
    path = next(real_logs.glob("001-*.log"))   # "Stabilized group ... (__consumer_offsets-25)": no member count yet
    events, stats = events_of(path, base_date="2024-01-01")
    # "Preparing ... in state ... (reason: ...)" is 2.1+, "Stabilized ... (__consumer_offsets-25)" without a
    # member count 0.11-2.7: a 2.1-2.7 broker.
    assert stats.files[0].kafka_version == ">2.0,<2.8"
    stabilized = next(e for e in events if e["event"] == "rebalance.stabilized")
    assert stabilized["attrs"]["kafka_wording"] == ">=0.11,<2.8"


def test_kafka_version_option_pins_every_file(real_logs):
    path = next(real_logs.glob("011-*.log"))
    events, stats = events_of(path, base_date="2024-01-01", kafka_version="4.0.0")
    assert stats.files[0].kafka_version == "4.0.0" and {e["kafka_version"] for e in events} == {"4.0.0"}
