"""Inputs: directories, rotation, codecs, bundles, stdin, hosts, byte ranges."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from helpers import events_of
from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.core import reader
from rebalance_doctor.core.sources import discover, infer_host
from rebalance_doctor.engines.local import read_events

LAYOUTS = Path(__file__).resolve().parents[1] / "fixtures" / "layouts"
KAFKA_LOG = (LAYOUTS / "kafka.log").read_bytes()


def patterns_of(events):
    return sorted((e["source"], e["line"], e["pattern"]) for e in events)


@pytest.fixture
def plain_events():
    events, _ = events_of(LAYOUTS / "kafka.log")
    return [(e["line"], e["pattern"], e["generation"], e["ts"]) for e in events]


@pytest.mark.parametrize("name,compress", [
    ("server.log.gz", gzip.compress),
    ("server.log.bz2", bz2.compress),
    ("server.log.xz", lzma.compress),
    ("server.log.1", lambda b: b),
    ("server.log.2023-10-12-11", lambda b: b),
])
def test_codecs_and_rotated_names_yield_the_same_events(tmp_path, plain_events, name, compress):
    (tmp_path / name).write_bytes(compress(KAFKA_LOG))
    events, stats = events_of(tmp_path)
    assert [(e["line"], e["pattern"], e["generation"], e["ts"]) for e in events] == plain_events
    assert stats.files[0].source == name


def test_zstd(tmp_path, plain_events):
    zstandard = pytest.importorskip("zstandard")
    (tmp_path / "server.log.zst").write_bytes(zstandard.ZstdCompressor().compress(KAFKA_LOG))
    events, _ = events_of(tmp_path)
    assert [(e["line"], e["pattern"], e["generation"], e["ts"]) for e in events] == plain_events


def test_zip_and_tar_bundles_are_read_without_unpacking(tmp_path, plain_events):
    with zipfile.ZipFile(tmp_path / "incident.zip", "w") as bundle:
        bundle.writestr("broker-1/server.log", KAFKA_LOG)
        bundle.writestr("broker-2/server.log.gz", gzip.compress(KAFKA_LOG))
    with tarfile.open(tmp_path / "more.tar.gz", "w:gz") as bundle:
        info = tarfile.TarInfo("app-node0/app.log")
        info.size = len(KAFKA_LOG)
        bundle.addfile(info, io.BytesIO(KAFKA_LOG))
    events, stats = events_of(tmp_path)
    by_source = {}
    for e in events:
        by_source.setdefault(e["source"], []).append((e["line"], e["pattern"], e["generation"], e["ts"]))
    assert set(by_source) == {"incident.zip!broker-1/server.log", "incident.zip!broker-2/server.log.gz",
                              "more.tar.gz!app-node0/app.log"}
    assert all(rows == plain_events for rows in by_source.values())
    hosts = {e["source"]: e["host"] for e in events}
    assert hosts["incident.zip!broker-2/server.log.gz"] == "broker-2"
    assert hosts["more.tar.gz!app-node0/app.log"] == "app-node0"


@pytest.mark.parametrize("outer", ["w", "w:gz"])
def test_a_zip_bigger_than_the_listing_head_inside_a_tar(tmp_path, plain_events, outer):
    """The tar member's listing keeps its first 4 KiB; reading the zip again must not stop there
    ("File is not a zip file" for any zip of more than 4 KiB inside a tar)."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_STORED) as bundle:
        for n in range(8):
            bundle.writestr(f"node{n}/server.log", KAFKA_LOG)
    assert len(inner.getvalue()) > 4 * 4096
    with tarfile.open(tmp_path / ("outer.tar" + (".gz" if outer == "w:gz" else "")), outer) as bundle:
        info = tarfile.TarInfo("bundle/inner.zip")
        info.size = len(inner.getvalue())
        bundle.addfile(info, io.BytesIO(inner.getvalue()))
    events, stats = events_of(tmp_path)
    assert not stats.skipped, stats.skipped
    assert len({e["source"] for e in events}) == 8
    assert [(e["line"], e["pattern"], e["generation"], e["ts"]) for e in events
            if e["source"].endswith("node0/server.log")] == plain_events


@pytest.mark.parametrize("relative,host", [
    ("node0.log", "node0"),
    ("broker-1/server.log.2023-10-12-11", "broker-1"),
    ("logs/kafka-2/logs/server.log.3.gz", "kafka-2"),
    ("streams-app-7.log.1", "streams-app-7"),
    ("orders-service/application.2024-05-01.0.log.gz", "orders-service"),  # logback rolling names
    ("order-enricher/streams.json.log.1.gz", "order-enricher"),
    ("k8s/payments-7d9f8c-xk2p4.log", "payments-7d9f8c-xk2p4"),  # a pod name is a host
    ("node3/server.log.2024-01-02-03", "node3"),                    # log4j DailyRollingFileAppender
    ("node3/app-2024-01-02.1.log.gz", "node3"),                     # logback SizeAndTimeBased, date inside the name
    ("payments-2024-01-02.log", "payments"),
    ("payments_20240102.log.gz", "payments"),
    ("2024-01-02/payments.log", "payments"),                        # a day folder names no host
    ("2024-01-02/server.log", "localhost"),                        # (the input directory "incident" names none)
    ("2024-01-02.log", "localhost"),
])
def test_host_inference(relative, host):
    assert infer_host(relative, Path("/tmp/incident")) == host


@pytest.mark.parametrize("files,hosts", [
    # the same service on two machines: the directories are the hosts
    (["worker-a/payments.log", "worker-b/payments.log"], ["worker-a", "worker-b"]),
    # rolled files of one log keep the live file's host
    (["worker-a/payments.log", "worker-a/payments.log.1", "worker-a/payments-2024-01-02.1.log.gz",
      "worker-b/payments.log"], ["worker-a", "worker-a", "worker-a", "worker-b"]),
    # names that do not collide keep their own
    (["ops/node0.log", "ops/node1.log"], ["node0", "node1"]),
    (["a/logs/payments.log", "b/logs/payments.log"], ["a", "b"]),
    # day folders hold the same host's files
    (["2024-01-01/payments.log", "2024-01-02/payments.log"], ["payments", "payments"]),
])
def test_colliding_file_names_take_their_directories(tmp_path, files, hosts):
    for name in files:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(KAFKA_LOG)
    found = discover([str(tmp_path)])
    assert {s.name: s.host for s in found.sources} == dict(zip(files, hosts))
    events, _ = events_of(tmp_path)
    assert {e["source"]: e["host"] for e in events} == dict(zip(files, hosts))


def test_colliding_files_given_one_by_one(tmp_path):
    for name in ("worker-a/payments.log", "worker-b/payments.log"):
        (tmp_path / name).parent.mkdir()
        (tmp_path / name).write_bytes(KAFKA_LOG)
    found = discover([str(tmp_path / "worker-a/payments.log"), str(tmp_path / "worker-b/payments.log")])
    assert sorted(s.host for s in found.sources) == ["worker-a", "worker-b"]
    assert {s.host for s in discover([str(tmp_path / "worker-a/payments.log")]).sources} == {"payments"}


def test_host_override(tmp_path):
    (tmp_path / "node0.log").write_bytes(KAFKA_LOG)
    events, _ = events_of(tmp_path, host="prod-broker-9")
    assert {e["host"] for e in events} == {"prod-broker-9"}


def test_docker_compose_service_prefix(plain_events):
    events, stats = events_of(LAYOUTS / "docker-compose-kafka.log")
    assert stats.files[0].container == "docker-compose"
    assert [(e["line"], e["pattern"]) for e in events] == [(l, p) for l, p, _, _ in plain_events]


def test_stdin(plain_events):
    out = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", "events", "-", "-q"],
                         input=KAFKA_LOG, capture_output=True, check=True)
    lines = out.stdout.decode().splitlines()
    assert len(lines) == len(plain_events)
    assert '"source": "<stdin>"' in lines[0]


def test_byte_ranges_give_the_same_events_as_one_pass(tmp_path):
    # Many copies of the story, so that a small split size cuts through multi-line records.
    # Only the first range holds the "Kafka version:" line: later ranges must still carry it.
    version = b"[2024-05-01 13:40:00,000] INFO Kafka version: 3.6.1 (org.apache.kafka.common.utils.AppInfoParser)\n"
    body = version + KAFKA_LOG * 400
    (tmp_path / "server.log").write_bytes(body)
    whole, _ = read_events([str(tmp_path)], ReadOptions(jobs=1))
    split, stats = read_events([str(tmp_path)], ReadOptions(jobs=2, split_bytes=64 << 10))
    assert len(whole) == 400 * 6 + 1
    assert patterns_of(split) == patterns_of(whole)
    assert [e["message"] for e in split] == [e["message"] for e in whole]
    assert [e["line"] for e in split] == [e["line"] for e in whole]
    assert {e["kafka_version"] for e in split} == {e["kafka_version"] for e in whole} == {"3.6.1"}
    assert stats.files[0].lines == body.count(b"\n") and stats.files[0].kafka_version == "3.6.1"


def test_a_version_stated_mid_range_does_not_depend_on_where_ranges_are_cut(tmp_path):
    # A restart after an upgrade states a new version far into the file: the events before that
    # line, also those of its own range, carry the version stated earlier, whatever the split.
    def stated(v):
        return f"[2024-05-01 13:40:00,000] INFO Kafka version: {v} (org.apache.kafka.common.utils.AppInfoParser)\n".encode()
    body = stated("3.6.1") + KAFKA_LOG * 300 + stated("3.7.0") + KAFKA_LOG * 100
    (tmp_path / "server.log").write_bytes(body)
    whole, _ = read_events([str(tmp_path)], ReadOptions(jobs=1))
    in_order = sorted(whole, key=lambda e: e["line"])
    versions = [e["kafka_version"] for e in in_order]
    assert versions == ["3.6.1"] * (300 * 6 + 1) + ["3.7.0"] * (100 * 6 + 1)
    for split_bytes in (64 << 10, 100 << 10, 1 << 20):
        split, stats = read_events([str(tmp_path)], ReadOptions(jobs=2, split_bytes=split_bytes))
        assert [(e["line"], e["kafka_version"]) for e in sorted(split, key=lambda e: e["line"])] == \
            [(e["line"], e["kafka_version"]) for e in in_order]
        assert stats.files[0].kafka_version == "3.7.0"


def test_a_long_run_of_lines_that_start_no_record_reads_once_and_counts_right(tmp_path):
    # A layout that changes mid-file: tens of thousands of lines that the detected (multi-line)
    # layout takes for continuation lines. Byte ranges must still give the whole-file line
    # numbers and line count, and each range read its own bytes plus a short tail, not run on
    # to the next record start (which re-read the growing carry on every chunk).
    run = b"2024-05-01T13:45:00.123Z INFO Rolled new log segment at offset 123 [kafka.log.LocalLog]\n"
    body = KAFKA_LOG * 150 + run * 60_000 + KAFKA_LOG * 2  # the head (layout detection) is Kafka's
    (tmp_path / "server.log").write_bytes(body)
    whole, _ = read_events([str(tmp_path)], ReadOptions(jobs=1))
    split_bytes = 256 << 10
    reader.work_bytes = 0
    split, stats = read_events([str(tmp_path)], ReadOptions(jobs=1, split_bytes=split_bytes))
    assert len(whole) == 152 * 6
    assert [(e["line"], e["pattern"]) for e in split] == [(e["line"], e["pattern"]) for e in whole]
    assert stats.files[0].lines == body.count(b"\n")
    assert stats.files[0].bytes == len(body)  # each byte counted by the one range that owns it
    assert reader.work_bytes < 2 * len(body)  # each range read its own bytes and a short tail


def test_jobs_2_with_fewer_readable_units_than_workers(tmp_path):
    (tmp_path / "a.log").write_bytes(b"\x00\x01binary\x00" * 100)
    (tmp_path / "b.log").write_bytes(KAFKA_LOG)
    events, stats = read_events([str(tmp_path)], ReadOptions(jobs=2))
    assert len(events) == 6
    assert [(s["source"], s["reason"].split(" ")[0]) for s in stats.skipped] == [("a.log", "binary")]


def test_directory_walk_is_sorted_and_skips_non_logs(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "x.log").write_bytes(KAFKA_LOG)
    (tmp_path / "a" / "y.log").write_bytes(KAFKA_LOG)
    (tmp_path / "notes.md").write_text("# incident notes: rebalance group orders\n")
    found = discover([str(tmp_path)])
    assert [s.name for s in found.sources] == ["a/y.log", "b/x.log"]
    assert [(s.source, s.reason) for s in found.skipped] == [("notes.md", "not a log file (by its extension)")]


def test_same_file_name_under_two_roots_keeps_its_own_line_numbers(tmp_path, plain_events):
    for root in ("incident-a", "incident-b"):
        (tmp_path / root / "broker-1").mkdir(parents=True)
        (tmp_path / root / "broker-1" / "server.log").write_bytes(KAFKA_LOG)
    events, stats = events_of(tmp_path / "incident-a", tmp_path / "incident-b")
    lines = sorted(e["line"] for e in events)
    assert lines == sorted([line for line, _, _, _ in plain_events] * 2)
    # Two inputs holding one name: each keeps its input in front, so evidence refs stay distinct.
    assert [f.source for f in stats.files] == [f"{tmp_path}/incident-a/broker-1/server.log",
                                               f"{tmp_path}/incident-b/broker-1/server.log"]
    assert [f.lines for f in stats.files] == [KAFKA_LOG.count(b"\n")] * 2
