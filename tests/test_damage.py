"""Hypothesis hunts for damage that loses intact records or breaks the accounting.

A log of numbered, real-format Kafka records (tests/hostile.py) is damaged the ways logs are
found: truncated, bytes flipped, NUL runs inserted (copytruncate, crashes), CRLF line ends,
other services' records interleaved, compressed and the compressed bytes corrupted or cut,
nested in a bundle. Then:

* every record that is still intact in what an ideal reader could decode (its lines whole and
  in order, followed by a record start or the end) becomes the same event as in the clean log;
* the accounting adds up: the bytes of the decoded stream are the file's (or what a decoder
  makes of it), the NULs are the binary region, the cut-off piece of a line is counted.

The intact records are worked out here independently of the reader: the damaged bytes are
decoded with the standard library's decompressors, byte by byte where they fail.

A fixed ``max_examples`` keeps the suite's time fixed (CI runs it as is).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostile
from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.local import read_events

EXAMPLES = 60
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
START = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] +(?:INFO|WARN|ERROR) ")  # the layout's record start
FOREIGN = ("[{ts}] INFO [Controller id=1] Processed {n} partitions (kafka.controller.KafkaController)",
           "[{ts}] WARN [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] Error sending fetch request "
           "(sessionId=INVALID, epoch=INITIAL) to node {n} (kafka.server.ReplicaFetcherThread)")


@dataclass
class Case:
    records: list[list[bytes]]          # the clean log's records, each a list of lines (no newline)
    data: bytes = b""                   # the damaged file's bytes
    codec: str = "plain"
    bundle: str | None = None
    nuls: int = 0
    steps: list[str] = field(default_factory=list)


def records_of(count: int, start: int) -> list[list[bytes]]:
    return [hostile.record(i).encode().split(b"\n") for i in range(start, start + count)]


@st.composite
def damaged(draw) -> Case:
    case = Case(records_of(draw(st.integers(14, 140)), draw(st.integers(0, 700))))
    lines = [line for record in case.records for line in record]
    text_ops = draw(st.lists(st.sampled_from(["flip", "nul", "crlf", "foreign", "truncate"]), max_size=3))
    # Line-level damage first (it keeps track of the lines), then bytes.
    if "foreign" in text_ops:
        for _ in range(draw(st.integers(1, 5))):
            at = draw(st.sampled_from([i for i, l in enumerate(lines) if START.match(l)] + [len(lines)]))
            lines.insert(at, draw(st.sampled_from(FOREIGN)).format(ts=hostile.ts(9999), n=at).encode())
        case.steps.append("foreign")
    if "flip" in text_ops:
        k = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, max(len(lines[k]) - 1, 0)))
        new = draw(st.sampled_from(b"#xQ7}"))
        lines[k] = lines[k][:j] + bytes([new]) + lines[k][j + 1:]
        case.steps.append(f"flip {k}:{j}")
    newline = b"\r\n" if "crlf" in text_ops else b"\n"
    data = b"".join(line + newline for line in lines)
    if "nul" in text_ops:
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(data)))
            run = draw(st.sampled_from([1, 7, 300, 70_000]))
            data = data[:at] + b"\x00" * run + data[at:]
            case.nuls += run
        case.steps.append("nul")
    if "truncate" in text_ops:
        data = data[: draw(st.integers(len(data) // 3, len(data)))]
        case.steps.append("truncate")
    case.codec = draw(st.sampled_from(["plain", "plain", "gzip", "bz2", "xz"]))
    if case.codec != "plain":
        data = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[case.codec](data)
        corrupt = draw(st.sampled_from([None, "cut", "flip"]))
        if corrupt == "cut":
            data = data[: draw(st.integers(20, len(data)))]
        elif corrupt == "flip":
            at = draw(st.integers(min(20, len(data) - 1), len(data) - 1))
            data = data[:at] + bytes([data[at] ^ 0xA5]) + data[at + 1:]
        if corrupt:
            case.steps.append(f"{case.codec} {corrupt}")
    case.bundle = draw(st.sampled_from([None, None, None, "zip", "tar.gz"]))
    case.data = data
    return case


# ---------------------------------------------------------------- what an ideal reader sees

def ideal_decode(codec: str, data: bytes) -> tuple[bytes, bool]:
    """(the decoded bytes up to the first damage, whether the stream was damaged)."""
    if codec == "plain":
        return data, False
    if codec == "gzip":
        return _feed(lambda: zlib.decompressobj(31), data, zlib.error)
    if codec == "bz2":
        return _feed(bz2.BZ2Decompressor, data, OSError)
    return _feed(lzma.LZMADecompressor, data, lzma.LZMAError)


def _feed(make, data: bytes, error) -> tuple[bytes, bool]:
    """Decode members one after the other, byte by byte (the output before an error is kept; a
    gzip member whose trailer disagrees was decoded whole: the next member follows its trailer)."""
    out, engine, i, checksum = [], make(), 0, False
    while i < len(data):
        try:
            out.append(engine.decompress(data[i:i + 1]))
        except (error, EOFError) as exc:
            if "data check" in str(exc) or "length check" in str(exc):
                checksum, rest = True, data[i + (5 if "data check" in str(exc) else 1):]
                if not rest.strip(b"\x00"):
                    return b"".join(out), True
                engine, data, i = make(), rest, 0
                continue
            return b"".join(out), True
        i += 1
        if engine.eof:
            rest = engine.unused_data + data[i:]
            if not rest.strip(b"\x00"):
                return b"".join(out), checksum
            engine, data, i = make(), rest, 0
    return b"".join(out), True  # the input ended inside a member


def ideal_text(case: Case) -> tuple[bytes, bytes, bool]:
    """(the decoded stream, the text an ideal reader reads from it, whether it was damaged)."""
    decoded, damaged_stream = ideal_decode(case.codec, case.data)
    text = decoded.replace(b"\x00", b"").replace(b"\r\n", b"\n")
    ended = damaged_stream and not _whole_with_bad_checksum(case.codec, case.data)
    if ended and not text.endswith(b"\n"):
        text = text[: text.rfind(b"\n") + 1]  # the piece of a line the damage cuts off
    return decoded, text, damaged_stream


def _whole_with_bad_checksum(codec: str, data: bytes) -> bool:
    """A gzip stream that decodes to its end, but with a member failing its CRC."""
    if codec != "gzip":
        return False
    engine = zlib.decompressobj(-15)
    try:
        engine.decompress(data[10:])
    except zlib.error:
        return False
    return engine.eof and len(engine.unused_data) >= 8


def intact_records(case: Case, text: bytes) -> list[int]:
    """Indexes of the clean records found whole in the text, followed by a record start or the end."""
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    where = {line: i for i, line in enumerate(lines)}
    found = []
    for index, record in enumerate(case.records):
        at = where.get(record[0])
        if at is None or lines[at:at + len(record)] != record:
            continue
        following = at + len(record)
        if following == len(lines) or START.match(lines[following]):
            found.append(index)
    return found


def identity(event) -> tuple:
    return (event["event"], event["pattern"], event["group"], event["generation"], str(event["ts"]), event["message"])


def clean_events(tmp_path, case: Case) -> dict[int, list[tuple]]:
    """The events of each clean record (read from the clean log)."""
    directory = tmp_path / "clean"
    directory.mkdir(exist_ok=True)
    path = directory / "server.log"
    path.write_bytes(b"".join(b"\n".join(r) + b"\n" for r in case.records))
    events, _ = read_events([str(path)], ReadOptions())
    by_record: dict[int, list[tuple]] = {}
    first_lines = {}
    line = 1
    for index, record in enumerate(case.records):
        first_lines[line] = index
        line += len(record)
    for event in events:
        by_record.setdefault(first_lines[event["line"]], []).append(identity(event))
    return by_record


def write(tmp_path, case: Case):
    directory = tmp_path / "damaged"
    directory.mkdir(exist_ok=True)
    name = "server.log" + {"plain": "", "gzip": ".gz", "bz2": ".bz2", "xz": ".xz"}[case.codec]
    if case.bundle is None:
        (directory / name).write_bytes(case.data)
    elif case.bundle == "zip":
        with zipfile.ZipFile(directory / "bundle.zip", "w", zipfile.ZIP_DEFLATED) as bundle:
            bundle.writestr(f"broker-1/{name}", case.data)
    else:
        with tarfile.open(directory / "bundle.tar.gz", "w:gz") as bundle:
            info = tarfile.TarInfo(f"broker-1/{name}")
            info.size = len(case.data)
            bundle.addfile(info, io.BytesIO(case.data))
    return directory


@SETTINGS
@given(case=damaged())
def test_intact_records_stay_events_and_the_accounting_adds_up(tmp_path_factory, case):
    tmp_path = tmp_path_factory.mktemp("damage")
    decoded, text, damaged_stream = ideal_text(case)
    directory = write(tmp_path, case)
    events, stats = read_events([str(directory)], ReadOptions())
    got = {}
    for event in events:
        got[identity(event)] = got.get(identity(event), 0) + 1
    expected = clean_events(tmp_path, case)
    for index in intact_records(case, text):
        for wanted in expected.get(index, []):
            assert got.get(wanted, 0) >= 1, (case.steps, index, wanted)
    if not stats.files:  # nothing decodable: said why
        assert stats.skipped and (not text.strip() or damaged_stream), (case.steps, stats.skipped)
        return
    (read,) = stats.files
    assert read.bytes == len(decoded), case.steps
    assert read.unread.get("binary", 0) == decoded.count(b"\x00"), case.steps
    if damaged_stream:
        assert read.lost or read.unread.get("truncated") or decoded.endswith(b"\n") is False or read.problems
        assert stats.lost_input()
    cut = len(decoded.replace(b"\x00", b"")) - len(text) - decoded.count(b"\r\n")
    assert read.unread.get("truncated", 0) == max(cut, 0), case.steps
    assert sum(read.unread.values()) <= read.bytes


@SETTINGS
@given(case=damaged())
def test_the_engines_agree_on_damaged_input_split_in_ranges(tmp_path_factory, case):
    """The same damaged plain file read whole and in small byte ranges gives the same events."""
    if case.codec != "plain" or case.bundle is not None:
        return
    tmp_path = tmp_path_factory.mktemp("ranges")
    path = tmp_path / "server.log"
    path.write_bytes(case.data)
    whole, _ = read_events([str(path)], ReadOptions())
    split, _ = read_events([str(path)], ReadOptions(split_bytes=4096))
    assert sorted((e["line"], identity(e)) for e in whole) == sorted((e["line"], identity(e)) for e in split)


@SETTINGS
@given(case=damaged(), foreign=st.sampled_from([
    b'{"level":"INFO","logger":"com.example.Billing","message":"Committed 42 invoices for group=orders"}',
    b"\tat com.example.Other.run(Other.java:12)",
    b"Caused by: org.apache.kafka.common.errors.TimeoutException: Timeout expired",
    b"    at kafka.coordinator.group.GroupCoordinator.handleJoinGroup(GroupCoordinator.scala:182)",
]))
def test_no_following_line_unmakes_or_fabricates_an_event(tmp_path_factory, case, foreign):
    """The contract of issue 21 item 2 (built by the record assembly, 18a): a foreign line after
    every record neither unmakes an event nor makes one."""
    tmp_path = tmp_path_factory.mktemp("anchor")
    clean = b"".join(b"\n".join(r) + b"\n" for r in case.records)
    lines = clean.split(b"\n")
    mixed = b"\n".join(line + (b"\n" + foreign if START.match(line) else b"") for line in lines)
    (tmp_path / "a.log").write_bytes(clean)
    (tmp_path / "b.log").write_bytes(mixed)
    before, _ = read_events([str(tmp_path / "a.log")], ReadOptions())
    after, _ = read_events([str(tmp_path / "b.log")], ReadOptions())
    assert sorted(identity(e)[:5] for e in after) == sorted(identity(e)[:5] for e in before)
