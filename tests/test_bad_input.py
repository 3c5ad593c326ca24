"""Bad input gets a clear message and an accounting; nothing is silently lost; no traceback."""

from __future__ import annotations

import gzip
import io
import os
import zipfile
from pathlib import Path

import pytest

from helpers import events_of, run_cli

LAYOUTS = Path(__file__).resolve().parents[1] / "fixtures" / "layouts"
KAFKA_LOG = (LAYOUTS / "kafka.log").read_bytes()


def skipped(stats):
    return {s["source"]: s["reason"] for s in stats.skipped}


def test_binary_file_is_skipped_with_a_reason(tmp_path):
    (tmp_path / "core.dump").write_bytes(b"\x7fELF\x00\x00\x01" + os.urandom(4096))
    (tmp_path / "server.log").write_bytes(KAFKA_LOG)
    events, stats = events_of(tmp_path)
    assert len(events) == 6
    assert "binary file" in skipped(stats)["core.dump"]


def test_truncated_gzip_keeps_what_was_read_and_says_so(tmp_path):
    data = gzip.compress(KAFKA_LOG * 50)
    (tmp_path / "server.log.gz").write_bytes(data[: len(data) * 2 // 3])
    events, stats = events_of(tmp_path)
    assert 0 < len(events) < 300
    problems = stats.files[0].problems
    assert len(problems) == 1 and "truncated" in problems[0] and "kept" in problems[0]


def test_corrupt_gzip_header_is_skipped(tmp_path):
    (tmp_path / "server.log.gz").write_bytes(b"\x1f\x8b\x08\x00garbage-not-deflate" * 10)
    events, stats = events_of(tmp_path)
    assert events == []
    assert "server.log.gz" in skipped(stats)


def test_non_utf8_bytes_are_replaced_and_counted(tmp_path):
    latin1 = KAFKA_LOG.replace(b"group orders in state", "group ordérs in state".encode("latin-1"))
    (tmp_path / "server.log").write_bytes(latin1)
    events, stats = events_of(tmp_path)
    assert len(events) == 6
    assert events[0]["group"] == "ord\ufffdrs"
    assert stats.files[0].non_utf8_records == 1


def test_a_line_that_fills_a_whole_range_is_counted_once(tmp_path):
    # A 150 KB line covers the 64 KiB range [128 KiB, 192 KiB) and ends inside the 64 KiB that
    # range reads past its end: only the range holding its newline may count it.
    noise = b"[2024-05-01 13:45:12,000] INFO Rolled new log segment (kafka.log.LocalLog)\n"
    long_line = b"[2024-05-01 13:45:12,000] INFO " + b"x" * 150_000 + b" (kafka.log.LocalLog)\n"
    body = noise * (100_000 // len(noise)) + long_line + KAFKA_LOG
    (tmp_path / "server.log").write_bytes(body)
    whole, whole_stats = events_of(tmp_path)
    split, split_stats = events_of(tmp_path, split_bytes=64 << 10)
    assert [e["line"] for e in split] == [e["line"] for e in whole]
    assert split_stats.files[0].lines == whole_stats.files[0].lines == body.count(b"\n")


@pytest.mark.parametrize("split_mib", [64, 32, 20])
def test_huge_line_is_skipped_and_line_numbers_stay_right(tmp_path, split_mib):
    # 50 MB in one line: with ranges of 32 or 20 MiB it starts, crosses and ends in different ranges.
    huge = b"[2024-05-01 13:45:12,000] INFO " + b"x" * (50 << 20) + b" rebalance group (a.B)\n"
    (tmp_path / "server.log").write_bytes(huge + KAFKA_LOG)
    events, stats = events_of(tmp_path, split_bytes=split_mib << 20)
    assert [e["line"] for e in events] == [2 + 1, 5 + 1, 7 + 1, 9 + 1, 11 + 1, 21 + 1]
    assert stats.files[0].lines == 1 + KAFKA_LOG.count(b"\n")
    assert [p for p in stats.files[0].problems if "longer than 8 MiB" in p] == ["line 1: longer than 8 MiB, skipped"]


def test_pathological_line_does_not_hang(tmp_path):
    line = b"[2024-05-01 13:45:12,000] INFO [GroupCoordinator 1]: Preparing to rebalance group " + b"a " * 200000 + b"\n"
    (tmp_path / "server.log").write_bytes(line * 3)
    events, stats = events_of(tmp_path)
    assert stats.files[0].candidates == 3  # read, matched or counted as near misses, in bounded time


def test_empty_directory_and_empty_file(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_cli("events", str(tmp_path / "empty"), "-q")
    assert result.returncode == 2
    assert "nothing could be read" in result.stderr and "Traceback" not in result.stderr
    (tmp_path / "empty" / "server.log").write_bytes(b"")
    result = run_cli("events", str(tmp_path / "empty"))
    assert result.returncode == 2 and "server.log: empty file" in result.stderr


def test_an_archive_nested_too_deep_and_nothing_else_is_a_usage_error(tmp_path):
    # Five zips, one in the other: the tool opens three levels; the user must unpack the rest.
    data, name = KAFKA_LOG, "server.log"
    for level in range(5):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(name, data)
        data, name = buffer.getvalue(), f"level{level}.zip"
    (tmp_path / "nested.zip").write_bytes(data)
    result = run_cli("analyze", str(tmp_path / "nested.zip"), "-q", "--fail-on", "never")
    assert result.returncode == 2, result.stderr     # not 3: nothing was damaged
    assert "nothing could be read" in result.stderr and "nested deeper than 3 levels" in result.stderr
    # Beside a file that is read, the too-deep member is input lost (3), as before.
    (tmp_path / "server.log").write_bytes(KAFKA_LOG)
    result = run_cli("analyze", str(tmp_path), "-q", "--fail-on", "never")
    assert result.returncode == 3, result.stderr


def test_symlink_loop_and_broken_link(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "server.log").write_bytes(KAFKA_LOG)
    (tmp_path / "logs" / "loop").symlink_to(tmp_path / "logs")
    (tmp_path / "logs" / "dangling.log").symlink_to(tmp_path / "nowhere.log")
    events, stats = events_of(tmp_path / "logs")
    assert len(events) == 6
    reasons = " | ".join(skipped(stats).values())
    assert "loop" in reasons and "broken symbolic link" in reasons


def test_unreadable_file_is_reported(tmp_path, monkeypatch):
    (tmp_path / "server.log").write_bytes(KAFKA_LOG)
    (tmp_path / "secret.log").write_bytes(KAFKA_LOG)
    real_open = open

    def guarded(path, *args, **kwargs):
        if str(path).endswith("secret.log"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", guarded)
    events, stats = events_of(tmp_path)
    assert len(events) == 6
    assert "Permission denied" in skipped(stats)["secret.log"]


def test_unknown_layout_is_read_generically_and_warned(tmp_path):
    (tmp_path / "weird.log").write_text(
        "@@ 2024-05-01 13:45:12 :: [Consumer clientId=c-1, groupId=g] (Re-)joining group\n")
    events, stats = events_of(tmp_path)
    assert [e["pattern"] for e in events] == ["consumer.join.start"]
    assert events[0]["group"] == "g"
    assert stats.warnings and "layout not recognised" in stats.warnings[0]["message"]


def test_missing_input_and_bad_pack_give_exit_code_2_without_traceback(tmp_path):
    result = run_cli("events", str(tmp_path / "missing"))
    assert result.returncode == 2 and "no such file or directory" in result.stderr
    (tmp_path / "bad.toml").write_text('pack = "x"\nversion = "1"\n[patterns."a.b"]\nevent = "e.f"\ngate = "gate"\n')
    (tmp_path / "server.log").write_bytes(KAFKA_LOG)
    result = run_cli("events", str(tmp_path / "server.log"), "--packs", str(tmp_path / "bad.toml"))
    assert result.returncode == 2
    assert "a.b: a pattern needs at least one valid variant" in result.stderr
    assert "Traceback" not in result.stderr
