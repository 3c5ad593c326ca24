"""Byte accounting of plain files read in byte ranges: every byte read or counted, once.

A plain file bigger than the split size is read as ranges [start, end), each by its own reader
(with --jobs 2, in another process; with Spark, on an executor), and their stats are merged. A
range reads past its end to finish its last record and a little before its start; it counts only
the bytes it owns, so a file's ranges add up to the file: ``bytes`` is its size and ``unread``
(by reason) is exactly what one pass over it counts, whatever the split size. A line longer than
8 MiB is oversized by its length alone, so every range holding a piece of it counts that piece.
"""

from __future__ import annotations

import pytest

import hostile
from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.local import read_events

MiB = 1 << 20
LEAD = b"[2024-05-01 13:45:12,000] INFO [GroupCoordinator 1]: Preparing to rebalance group "


def identity(events: list[dict]) -> list[tuple]:
    return [(e["line"], e["event"], e["group"], e["generation"], e["message"]) for e in events]


def long_line(length: int, lead: bytes = LEAD, newline: bytes = b"\n") -> bytes:
    """A line of ``length`` bytes before its newline."""
    return lead + b"x" * (length - len(lead)) + newline


def read_split(path, split_bytes: int, jobs: int = 1):
    """The events and stats of a read in ranges of ``split_bytes``, and how many ranges were read."""
    units: list[int] = []
    events, stats = read_events([str(path)], ReadOptions(split_bytes=split_bytes, jobs=jobs), progress=units.append)
    return events, stats, len(units)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("split_bytes", [64 << 10, 100_003, 1 * MiB])
def test_ranges_of_normal_lines_count_every_byte_once(tmp_path, split_bytes, jobs):
    # ~4 MiB of records, one in seven a stack trace: boundaries fall inside lines and records,
    # which the range before reads past its end to finish.
    body = hostile.kafka_log(20_000)
    path = tmp_path / "server.log"
    path.write_bytes(body)
    whole, whole_stats = read_events([str(path)], ReadOptions())
    split, stats, ranges = read_split(path, split_bytes, jobs)
    assert ranges == -(-len(body) // split_bytes) > 3
    read = stats.files[0]
    assert read.bytes == whole_stats.files[0].bytes == len(body) == stats.to_dict()["bytes"]
    assert read.unread == {} and read.lost == {}
    assert read.lines == body.count(b"\n")
    assert identity(split) == identity(whole)
    assert len(split) == hostile.events_in(20_000)


def _huge_line_file(tmp_path):
    before, after = hostile.kafka_log(70), hostile.kafka_log(70, start=70)
    huge = long_line(20 * MiB)
    path = tmp_path / "server.log"
    path.write_bytes(before + huge + after)
    return path, len(before), huge, before + huge + after


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("boundary", ["7 MiB + 3", "8 MiB", "after its newline", "before its newline"])
def test_a_huge_line_across_ranges_is_counted_oversized_once(tmp_path, boundary, jobs):
    path, start, huge, body = _huge_line_file(tmp_path)
    split_bytes = {"7 MiB + 3": 7 * MiB + 3, "8 MiB": 8 * MiB,
                   "after its newline": start + len(huge),       # the next range starts at a line start
                   "before its newline": start + len(huge) - 1}[boundary]  # its newline is the next range's
    whole, whole_stats = read_events([str(path)], ReadOptions())
    split, stats, ranges = read_split(path, split_bytes, jobs)
    assert ranges >= 2
    read = stats.files[0]
    assert read.bytes == len(body)
    assert read.unread == whole_stats.files[0].unread == {"oversized": len(huge)}
    assert read.lines == whole_stats.files[0].lines == body.count(b"\n")
    # The records before and after the line are read, with the line numbers of one pass.
    assert identity(split) == identity(whole)
    assert len(split) == hostile.events_in(70) + hostile.events_in(70, start=70)
    line = body[:start].count(b"\n") + 1
    assert [p for p in read.problems if "longer than 8 MiB" in p] == [f"line {line}: longer than 8 MiB, skipped"]


@pytest.mark.parametrize("shape", ["record line of 9 MiB", "record line of 11 MiB", "continuation line of 10 MiB",
                                   "last line of 9 MiB without newline", "record line of exactly 8 MiB"])
def test_a_line_is_oversized_by_its_length_wherever_chunks_and_ranges_are_cut(tmp_path, shape):
    # Lines a little over 8 MiB were kept or skipped depending on where the 4 MiB chunks happened
    # to be cut; a line of exactly 8 MiB is kept.
    records = hostile.kafka_log(700)
    after = hostile.kafka_log(70, start=700)
    line, oversized = {
        "record line of 9 MiB": (long_line(9 * MiB), 9 * MiB + 1),
        "record line of 11 MiB": (long_line(11 * MiB + 12345), 11 * MiB + 12346),
        "continuation line of 10 MiB": (long_line(10 * MiB, lead=b"\tat "), 10 * MiB + 1),
        "last line of 9 MiB without newline": (long_line(9 * MiB, newline=b""), 9 * MiB),
        "record line of exactly 8 MiB": (long_line(8 * MiB), 0),
    }[shape]
    body = records + line + (b"" if shape.startswith("last line") else after)
    path = tmp_path / "server.log"
    path.write_bytes(body)
    whole, whole_stats = read_events([str(path)], ReadOptions())
    expected = {"oversized": oversized} if oversized else {}
    assert whole_stats.files[0].bytes == len(body) and whole_stats.files[0].unread == expected
    for split_bytes in (3 * MiB + 7, 8 * MiB + 3, len(records) + len(line) // 2):
        split, stats, ranges = read_split(path, split_bytes)
        assert ranges >= 2
        read = stats.files[0]
        assert (read.bytes, read.unread, read.lines) == (len(body), expected, whole_stats.files[0].lines), split_bytes
        assert identity(split) == identity(whole), split_bytes


def _stack_trace_line_end(body: bytes) -> int:
    """The offset just after the first line of the first stack trace (inside a record)."""
    return body.index(b"java.lang.IllegalStateException: boom\n") + len(b"java.lang.IllegalStateException: boom\n")


@pytest.mark.parametrize("shift", [-1, 0, 1])
@pytest.mark.parametrize("where", ["a record's end", "a line end inside a record"])
def test_a_range_boundary_at_a_line_end(tmp_path, where, shift):
    # shift 0: the boundary is exactly at the line end (the next range starts at a line start);
    # -1: the newline is the next range's first byte; +1: the next range starts one byte into a line.
    if where == "a record's end":
        block = hostile.kafka_log(700)  # ends with a stack trace: every boundary is at a record's end
        body, split_bytes = block * 5, len(block) + shift
    else:
        body = hostile.kafka_log(7000)
        split_bytes = _stack_trace_line_end(body) + shift
    path = tmp_path / "server.log"
    path.write_bytes(body)
    whole, _ = read_events([str(path)], ReadOptions())
    split, stats, ranges = read_split(path, split_bytes)
    assert ranges >= 4
    read = stats.files[0]
    assert (read.bytes, read.unread, read.lines) == (len(body), {}, body.count(b"\n"))
    assert identity(split) == identity(whole)


def test_nul_regions_across_ranges_are_counted_once(tmp_path):
    # A binary region (NULs) near a boundary is read by two ranges (one past its end, one before
    # its start): only the range owning its bytes counts it.
    lines = hostile.kafka_log(7000).split(b"\n")
    for i in range(1000, len(lines), 97):
        lines[i] = b"\x00" * 300 + lines[i]
    body = b"\n".join(lines)
    path = tmp_path / "server.log"
    path.write_bytes(body)
    whole, _ = read_events([str(path)], ReadOptions())
    for split_bytes in (64 << 10, 50_000):
        split, stats, ranges = read_split(path, split_bytes)
        assert ranges > 20
        read = stats.files[0]
        assert (read.bytes, read.unread) == (len(body), {"binary": body.count(b"\x00")})
        assert identity(split) == identity(whole)


def test_spark_ranges_count_every_byte_once(spark, tmp_path):
    # The Spark engine runs the same reader on each range (read_unit) and merges the same stats.
    from rebalance_doctor.engines import spark as spark_engine

    before, after = hostile.kafka_log(70), hostile.kafka_log(3000, start=70)
    huge = long_line(10 * MiB)
    body = before + huge + after
    path = tmp_path / "server.log"
    path.write_bytes(body)
    options = ReadOptions(split_bytes=1 * MiB)
    assert len(spark_engine._plan(spark, [str(path)], options).units) > 10
    events, stats = spark_engine.collect_events(spark, [str(path)], options)
    read = stats.files[0]
    assert (read.bytes, read.unread, read.lines) == (len(body), {"oversized": len(huge)}, body.count(b"\n"))
    assert identity(events) == identity(read_events([str(path)], ReadOptions())[0])
