"""Real third-party excerpts (../shared/real-logs, read in place, never copied): every rebalance
record that a Java Kafka component (broker, consumer, Streams, Connect) wrote is recognised, with
no near miss, and group and generation are right wherever the line states them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import events_of

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


@pytest.mark.parametrize("number", JAVA)
def test_group_and_generation_are_right_where_stated(real_logs, number):
    path = next(real_logs.glob(f"{number}-*.log"))
    events, _ = events_of(path, base_date="2024-01-01")
    for event in events:
        first = event["message"].split("\n")[0]
        for rx in GENERATION:
            m = rx.search(first)
            if m:
                assert event["generation"] == int(m.group(1)), (event["line"], first[:200])
                break
        for rx in GROUP:
            m = rx.search(first)
            if m:
                assert event["group"] == m.group(1), (event["line"], first[:200])
                break


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


def test_wording_of_2_4_broker_lines_says_older_than_2_8(real_logs):
    path = next(real_logs.glob("001-*.log"))   # "Stabilized group ... (__consumer_offsets-25)": no member count yet
    events, stats = events_of(path, base_date="2024-01-01")
    assert stats.files[0].kafka_version == "<2.8"
    stabilized = next(e for e in events if e["event"] == "rebalance.stabilized")
    assert stabilized["attrs"]["kafka_wording"] == ">=2.4,<2.8"


def test_kafka_version_option_pins_every_file(real_logs):
    path = next(real_logs.glob("011-*.log"))
    events, stats = events_of(path, base_date="2024-01-01", kafka_version="4.0.0")
    assert stats.files[0].kafka_version == "4.0.0" and {e["kafka_version"] for e in events} == {"4.0.0"}
