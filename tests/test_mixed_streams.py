"""Several sources in one stream (`cat broker.log app.log | rebalance-doctor analyze -`, `docker
compose logs`, `kubectl logs --prefix`): the layout and container prefix are decided per line, the
compose service or the pod/container is the host, and the events are those of the files read one
by one, in every chunking."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from itertools import zip_longest
from pathlib import Path

import pytest

from helpers import events_of
from rebalance_doctor.packgen.envelope import render

START = datetime(2024, 5, 1, 13, 45, 12, 345000, tzinfo=timezone.utc)
GC = "kafka.coordinator.group.GroupCoordinator"
CC = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
PREFIX = re.compile(r"^(?:\x1b\[\d+m)?[\w.-]+  \|(?:\x1b\[0m)? |^\[pod/[^\]]+\] (?:\S+Z )?")
FIELDS = ("ts", "event", "pattern", "group", "generation", "member", "client", "reason", "partitions", "thread",
          "level", "logger", "host")


def _broker(seconds: int, generation: int) -> list[str]:
    ts = START + timedelta(seconds=seconds)
    return [
        render("kafka", ts, "INFO", GC, f"[GroupCoordinator 1]: Preparing to rebalance group orders in state "
               f"PreparingRebalance with old generation {generation} (__consumer_offsets-17) (reason: removing member "
               f"consumer-orders-2-77aa on heartbeat expiration)", "executor-Heartbeat"),
        render("kafka", ts, "INFO", "kafka.log.LogCleaner", "Cleaner 0: Beginning cleaning of log __consumer_offsets-17",
               "kafka-log-cleaner-thread-0"),
        render("kafka", ts, "INFO", GC, f"[GroupCoordinator 1]: Stabilized group orders generation {generation + 1} "
               f"(__consumer_offsets-17) with 2 members", "executor-Rebalance"),
    ]


def _client(layout: str, seconds: int, generation: int, client: str = "consumer-orders-1") -> list[str]:
    ts = START + timedelta(seconds=seconds)
    prefix = f"[Consumer clientId={client}, groupId=orders] "
    return [
        render(layout, ts, "INFO", CC, prefix + "Request joining group due to: group is already rebalancing",
               "kafka-coordinator-heartbeat-thread | orders"),
        render(layout, ts, "ERROR", "com.example.OrderProcessor",
               "failed to process record\njava.lang.IllegalStateException: boom\n"
               "\tat com.example.OrderProcessor.process(OrderProcessor.java:42)", "main"),
        render(layout, ts, "INFO", CC, prefix + f"Successfully joined group with generation Generation{{generationId="
               f"{generation + 1}, memberId='{client}-6b1f', protocol='range'}}", "main"),
        render(layout, ts, "INFO", CC, prefix + "Updating assignment with\n\tAssigned partitions:                       "
               "[orders-0, orders-1]\n\tCurrent owned partitions:                  [orders-0]\n"
               "\tAdded partitions (assigned - owned):       [orders-1]\n"
               "\tRevoked partitions (owned - assigned):     []\n", "main"),
    ]


def _prefixed(prefix: str, records: list[str]) -> list[str]:
    return [prefix + line for record in records for line in record.split("\n")]


def _sources() -> dict[str, list[str]]:
    """Each source's lines: a broker log, a Spring Boot client log, docker compose output of two
    containers (colour codes as compose writes them), kubectl logs --prefix of two pods."""
    compose = []
    for seconds in range(0, 40, 10):
        compose += _prefixed("\x1b[36mkafka-2  |\x1b[0m ", _broker(seconds + 1, 50 + seconds))
        compose += _prefixed("\x1b[33morders-app-1  |\x1b[0m ", _client("spring-boot", seconds + 2, 50 + seconds,
                                                                       "consumer-orders-7"))
    kubectl = []
    for seconds in range(0, 40, 10):
        kubectl += _prefixed("[pod/payments-7d9f8c-xk2p4/app] 2024-05-01T13:45:12.345678901Z ",
                             _client("log4j2-pattern", seconds + 3, 70 + seconds, "consumer-payments-1"))
        kubectl += _prefixed("[pod/payments-7d9f8c-zz9q1/app] ", _client("logstash-json", seconds + 4, 70 + seconds,
                                                                          "consumer-payments-2"))
    return {
        "broker.log": [l for s in range(0, 40, 10) for r in _broker(s, 10 + s) for l in r.split("\n")],
        "app.log": [l for s in range(0, 40, 10) for r in _client("spring-boot", s + 5, 10 + s) for l in r.split("\n")],
        "compose.log": compose,
        "kubectl.log": kubectl,
    }


def _comparable(events: list[dict], line_shift: int = 0) -> list[tuple]:
    return sorted((e["line"] + line_shift,) + tuple(str(e[f]) for f in FIELDS) for e in events)


def _one_by_one(tmp_path: Path, sources: dict[str, list[str]], stream_host: str, **options) -> list[tuple]:
    """The events of each source read as a file of its own, with the line numbers they have in the
    concatenation; events of unprefixed sources take the stream's host."""
    expected, offset = [], 0
    for name, lines in sources.items():
        path = tmp_path / "one-by-one" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        events, stats = events_of(path, base_date="2024-05-01", **options)
        for event in events:
            if event["host"] == stats.files[0].host:   # the file's own host, not a prefix's
                event["host"] = stream_host
        expected += _comparable(events, offset)
        offset += len(lines)
    return sorted(expected)


def _concatenated(tmp_path: Path, sources: dict[str, list[str]], name: str = "mixed.log") -> Path:
    path = tmp_path / name
    path.write_text("".join("\n".join(lines) + "\n" for lines in sources.values()))
    return path


def test_each_source_gives_events(tmp_path):
    for name, lines in _sources().items():
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        events, stats = events_of(path, base_date="2024-05-01")
        assert len(events) >= 8 and stats.files[0].near_misses == 0, name


def test_a_mixed_stream_gives_the_events_of_the_files_read_one_by_one(tmp_path):
    sources = _sources()
    mixed = _concatenated(tmp_path, sources)
    events, stats = events_of(mixed, base_date="2024-05-01")
    assert _comparable(events) == _one_by_one(tmp_path, sources, "mixed")
    assert {e["host"] for e in events} == {"mixed", "kafka-2", "orders-app-1", "payments-7d9f8c-xk2p4/app",
                                           "payments-7d9f8c-zz9q1/app"}
    layout = stats.files[0].layout
    assert "spring-boot" in layout and "in docker-compose" in layout and "colour codes removed" in layout


def test_a_mixed_stream_on_stdin_gives_the_events_of_the_files_read_one_by_one(tmp_path):
    """`cat broker.log app.log compose.log kubectl.log | rebalance-doctor events -`: the CLI reading
    the stream on stdin gives each source's events as the files read one by one, hosts included
    (the unprefixed sources take the stream's host, "stdin")."""
    import json
    import subprocess
    import sys

    sources = _sources()
    stream = "".join("\n".join(lines) + "\n" for lines in sources.values())
    out = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", "events", "-", "-q", "--date", "2024-05-01"],
                         input=stream.encode(), capture_output=True, check=True)
    columns = ("event", "pattern", "group", "generation", "member", "client", "reason", "partitions", "thread",
               "level", "logger", "host")
    got = sorted((e["line"], e["ts"]) + tuple(str(e[c]) for c in columns)
                 for e in map(json.loads, out.stdout.decode().splitlines()))
    expected, offset = [], 0
    for name, lines in sources.items():
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        events, stats = events_of(path, base_date="2024-05-01")
        for e in events:
            host = "stdin" if e["host"] == stats.files[0].host else e["host"]
            expected.append((e["line"] + offset, e["ts"].isoformat().replace("+00:00", "Z"))
                            + tuple(str(host if c == "host" else e[c]) for c in columns))
        offset += len(lines)
    assert len(got) >= 40 and got == sorted(expected)
    assert {row[-1] for row in got} == {"stdin", "kafka-2", "orders-app-1", "payments-7d9f8c-xk2p4/app",
                                        "payments-7d9f8c-zz9q1/app"}


ODD = "[GroupCoordinator 1]: Preparing to rebalance group orders in a wording no release wrote"


@pytest.mark.parametrize("line", [
    f"\x1b[36mkafka-2  |\x1b[0m [2024-05-01 13:46:00,000] INFO {ODD} ({GC})",                 # compose, colour codes
    f"[pod/kafka-2/kafka] 2024-05-01T13:46:00.000000000Z [2024-05-01 13:46:00,000] INFO {ODD} ({GC})",  # kubectl
    '{"@timestamp":"2024-05-01T13:46:00.000Z","level":"INFO","logger_name":"' + GC + '","message":"' + ODD + '"}',
    f"May  1 13:46:00 broker-1 kafka[812]: {ODD}",                                                # no layout of ours
], ids=["compose", "kubectl", "json", "syslog"])
def test_a_record_no_pattern_reads_is_a_near_miss_at_its_own_line(tmp_path, line):
    """In a mixed stream, a record that holds a pattern's gate but matches none is counted as a
    near miss, sampled with the stream's name and its own line number, and changes no other event."""
    sources = _sources()
    mixed = _concatenated(tmp_path, sources)
    before, _ = events_of(mixed, base_date="2024-05-01")
    lines = mixed.read_text().splitlines()
    at = len(sources["broker.log"]) + 1          # between the client log's first two records
    lines.insert(at, line)
    mixed.write_text("\n".join(lines) + "\n")
    after, stats = events_of(mixed, base_date="2024-05-01")
    file = stats.files[0]
    assert file.near_misses == 1
    (miss,) = file.near_miss_samples
    assert (miss.source, miss.line, miss.closest) == ("mixed.log", at + 1, "broker.rebalance.prepare")
    assert "no release wrote" in miss.text and "\n" not in miss.text
    assert _comparable(after) == sorted((n + (n > at), *rest) for n, *rest in _comparable(before))


def _records(lines: list[str]) -> list[list[str]]:
    """A prefixed source's lines grouped by record (continuations are indented, blank or an
    exception line behind the prefix)."""
    records: list[list[str]] = []
    for line in lines:
        body = PREFIX.sub("", line)
        if records and (body == "" or body.startswith(("\t", " ", "java.lang."))):
            records[-1].append(line)
        else:
            records.append([line])
    return records


def test_interleaved_record_by_record(tmp_path):
    """docker compose and kubectl interleave their containers' records."""
    sources = _sources()
    mixed = []
    for pair in zip_longest(_records(sources["compose.log"]), _records(sources["kubectl.log"]), fillvalue=[]):
        for record in pair:
            mixed.extend(record)
    path = tmp_path / "interleaved.log"
    path.write_text("\n".join(mixed) + "\n")
    events, _ = events_of(path, base_date="2024-05-01")
    expected = []
    for name in ("compose.log", "kubectl.log"):
        single = tmp_path / name
        single.write_text("\n".join(sources[name]) + "\n")
        expected += [tuple(str(e[f]) for f in FIELDS) for e in events_of(single, base_date="2024-05-01")[0]]
    assert len(events) >= 40
    assert sorted(tuple(str(e[f]) for f in FIELDS) for e in events) == sorted(expected)


def test_a_source_after_the_sample_is_read_per_line(tmp_path, monkeypatch):
    """A stream whose second source starts after the sample (the first 256 KiB) is still read
    with that source's layout, line by line."""
    from rebalance_doctor.core import reader

    monkeypatch.setattr(reader, "SAMPLE_BYTES", 2000)
    sources = _sources()
    del sources["compose.log"]   # its colour codes are decided from the sample
    mixed = _concatenated(tmp_path, sources)
    assert len("\n".join(sources["broker.log"])) > 2000
    events, stats = events_of(mixed, base_date="2024-05-01")
    assert stats.files[0].layout == "kafka"
    assert _comparable(events) == _one_by_one(tmp_path, sources, "mixed")


@pytest.mark.parametrize("split_bytes", [700, 4096])
def test_a_mixed_stream_split_in_byte_ranges_gives_the_same_events(tmp_path, split_bytes):
    sources = _sources()
    del sources["compose.log"]   # colour codes make a file be read whole: split the others
    mixed = _concatenated(tmp_path, sources)
    whole, _ = events_of(mixed, base_date="2024-05-01")
    for jobs in (1, 2):
        split, stats = events_of(mixed, base_date="2024-05-01", split_bytes=split_bytes, jobs=jobs)
        assert _comparable(split) == _comparable(whole)
        assert stats.files[0].lines == sum(len(lines) for lines in sources.values())


def test_host_option_overrides_the_prefixes(tmp_path):
    mixed = _concatenated(tmp_path, _sources())
    events, _ = events_of(mixed, base_date="2024-05-01", host="incident-7")
    assert {e["host"] for e in events} == {"incident-7"}


def test_host_tz_applies_to_a_compose_service(tmp_path):
    path = tmp_path / "compose.log"
    path.write_text("\n".join(_sources()["compose.log"]) + "\n")
    utc, _ = events_of(path)
    shifted, _ = events_of(path, host_tz={"kafka-2": "+02:00"})
    for a, b in zip(sorted(utc, key=lambda e: (e["host"], e["line"])), sorted(shifted, key=lambda e: (e["host"], e["line"]))):
        assert (a["ts"] - b["ts"]) == (timedelta(hours=2) if a["host"] == "kafka-2" else timedelta(0))


def test_a_range_that_starts_on_a_listing_line_leaves_it_to_its_record(tmp_path):
    """The line after "Final assignment of partitions to consumers:" belongs to that record
    whatever it holds; a byte range that begins on it must see the line before it to know."""
    head = ("[2024-05-01 13:45:12,345] DEBUG [Consumer clientId=consumer-orders-1, groupId=orders] Final assignment "
            "of partitions to consumers: \n")
    listing = "{consumer-2=[orders-0]} Member consumer-2 in group orders has failed, removing it from the group\n"
    before = "".join(_broker(0, 10)[i] + "\n" for i in range(3))
    after = "".join(line + "\n" for line in _broker(5, 11))
    path = tmp_path / "server.log"
    path.write_text(before + head + listing + after)
    whole, whole_stats = events_of(path, base_date="2024-05-01")
    cut = len((before + head).encode())
    split, split_stats = events_of(path, base_date="2024-05-01", split_bytes=cut)
    assert _comparable(split) == _comparable(whole)
    assert split_stats.files[0].near_misses == whole_stats.files[0].near_misses
    assert not any(e["line"] == 5 for e in whole)


@pytest.mark.parametrize("prefix,host", [
    ("kafka-2  | ", "kafka-2"),
    ("kafka-2  | 2024-05-01T13:45:12.345678901Z ", "kafka-2"),                    # docker compose logs -t
    ("\x1b[36mkafka-2  |\x1b[0m ", "kafka-2"),
    ("[pod/kafka-2/kafka] ", "kafka-2/kafka"),                                     # kubectl logs --prefix
    ("[pod/kafka-2/kafka] 2024-05-01T13:45:12.345678901Z ", "kafka-2/kafka"),      # ... --timestamps
    ("2024-05-01T13:45:12.345678901Z ", "server"),                                 # kubectl logs --timestamps
])
def test_container_prefixes_and_the_host_they_name(tmp_path, prefix, host):
    path = tmp_path / "server" / "server.log"
    path.parent.mkdir()
    path.write_text("\n".join(_prefixed(prefix, _broker(0, 10))) + "\n")
    events, stats = events_of(path)
    assert [(e["event"], e["host"]) for e in events] == [("rebalance.prepare", host), ("rebalance.stabilized", host)]


def test_the_spark_engine_reads_mixed_streams_as_the_local_one(spark, tmp_path):
    """Reading plans (several readers, colour codes, wrapped lines) travel to the executors in
    the units, and byte ranges of a mixed stream give the same events on both engines."""
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.engines import spark as spark_engine
    from rebalance_doctor.engines.local import read_events

    sources = _sources()
    (tmp_path / "in").mkdir()
    _concatenated(tmp_path / "in", sources, "mixed.log")
    plain = dict(sources)
    del plain["compose.log"]
    _concatenated(tmp_path / "in", plain, "mixed-plain.log")
    wrapped = [line[i:i + 80] for line in sources["broker.log"] for i in range(0, max(len(line), 1), 80)]
    (tmp_path / "in" / "wrapped.log").write_text("\n".join(wrapped) + "\n")
    options = ReadOptions(split_bytes=4096, base_date="2024-05-01")
    local, local_stats = read_events([str(tmp_path / "in")], options)
    remote, remote_stats = spark_engine.collect_events(spark, [str(tmp_path / "in")], options)
    key = lambda e: (e["source"], e["line"], e["event"])  # noqa: E731
    assert len(local) > 60
    assert [tuple(str(e[f]) for f in FIELDS) for e in sorted(remote, key=key)] == \
        [tuple(str(e[f]) for f in FIELDS) for e in sorted(local, key=key)]
    assert [(f.source, f.lines, f.layout) for f in remote_stats.files] == [(f.source, f.lines, f.layout) for f in local_stats.files]


@pytest.mark.parametrize("prefix", [
    "2026-12-07T00:41:22.072628972Z stderr F ",            # a CRI log file (what the kubelet keeps)
    "2026-12-07T00:41:22.072628972Z ",                     # kubectl logs --timestamps
    "app-2  | 2026-12-07T00:41:22.072628972Z ",            # docker compose logs -t
    "[pod/app-2/app] 2026-12-07T00:41:22.072628972Z ",     # kubectl logs --prefix --timestamps
])
def test_a_layout_without_time_takes_the_runtimes(tmp_path, prefix):
    # franz-go's BasicLogger writes no time (as recorded by the lab: fixtures/lab/franzgo-session-pause@4.4.0)
    path = tmp_path / "app.log"
    path.write_text(prefix + "[INFO] heartbeat errored; group: orders, err: UNKNOWN_MEMBER_ID: The coordinator "
                    "is not aware of this member.\n" + prefix + "[INFO] joining group; group: orders\n")
    events, stats = events_of(path)
    assert [e["ts"] for e in events] == [datetime(2026, 12, 7, 0, 41, 22, 72628, tzinfo=timezone.utc)] * 2
    assert stats.files[0].untimed_events == 0
