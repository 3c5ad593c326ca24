"""Issue 21's regression corpus: damaged and hostile inputs, each case as it was reproduced on
154b961 (tests/hostile.py makes them). Every test here failed there.

Bounds (memory, time) are checked on a subprocess with RLIMIT_AS and a generous timeout that
only guards against a hang, and with work counters; nothing is timed.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import resource
import subprocess
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest

import hostile
from helpers import cli_process, events_of, run_cli
from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.local import read_events

REPO = Path(__file__).resolve().parents[1]
HANG_GUARD_S = 120  # far above what any of these takes; only a hang reaches it


def cli(*args, stdin=None, limit_mb: int | None = None, timeout: float = HANG_GUARD_S, env=None, cwd=None,
        unprivileged: bool = False, prefix: list[str] | None = None):
    """Run the command line in a subprocess (optionally under RLIMIT_AS, without root's right to
    read every file, or behind a ``prefix`` command), with a hang guard: for the bounds and for
    what only a process has (stdin, pipes, a working directory, limits). The other tests run the
    console script's main() in this process (``run_cli``)."""
    def limits():
        if unprivileged:
            drop_read_anything()
        if limit_mb:
            resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
    return cli_process(*args, stdin=stdin, timeout=timeout, preexec_fn=limits, cwd=cwd, env=env, prefix=prefix,
                       text=False)


def cli_here(*args):
    """The command line in this process (bytes out, as ``cli``)."""
    return run_cli(*args, text=False)


def drop_read_anything() -> None:
    """In a child before exec: root gives up the capabilities that let it read any file
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) for good (the bounding set), so the process reads
    as the file modes say, like any user. Python stays runnable (it lives under /root here, where
    another uid could not run it). Nothing to drop for a user that is not root."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def unreadable(path: Path) -> Path:
    """``path`` made mode 000; the test is skipped when an unprivileged child could still read
    it (privileges cannot be dropped here)."""
    path.chmod(0)
    probe = subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'rb').read(1)"], capture_output=True,
                           preexec_fn=drop_read_anything, timeout=HANG_GUARD_S)
    if probe.returncode == 0:
        path.chmod(0o644)
        pytest.skip("cannot drop the privilege to read every file here")
    return path


def read_only_mount(directory: Path) -> list[str]:
    """A command prefix that runs the rest with ``directory`` a read-only filesystem (a tmpfs
    mounted read-only over it in a private user and mount namespace: EROFS, as on a read-only
    volume); skipped where namespaces are not allowed."""
    directory.mkdir(parents=True, exist_ok=True)
    prefix = ["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o ro none "$0" && exec "$@"', str(directory)]
    probe = subprocess.run([*prefix, "sh", "-c", f'touch "{directory}/x"'], capture_output=True, timeout=HANG_GUARD_S)
    if probe.returncode == 0 or b"Read-only file system" not in probe.stderr:
        pytest.skip(f"cannot mount a read-only filesystem here: {probe.stderr[-200:]!r}")
    return prefix


def identity(events):
    """What makes an event the same event, whatever file it came from."""
    return sorted((e["event"], e["pattern"], str(e["group"]), str(e["generation"]), str(e["ts"]), e["message"])
                  for e in events)


def reference(tmp_path: Path, data: bytes, name: str = "reference.log"):
    """The events of ``data`` read as an intact plain file."""
    directory = tmp_path / "reference"
    directory.mkdir(exist_ok=True)
    (directory / name).write_bytes(data)
    return events_of(directory / name)[0]


def decodable(data: bytes) -> bytes:
    """What zlib can decode of a (damaged) gzip stream, byte by byte: the exact intact prefix."""
    engine, out = zlib.decompressobj(31), []
    for i in range(len(data)):
        try:
            out.append(engine.decompress(data[i:i + 1]))
        except zlib.error:
            break
    return b"".join(out)


def skipped(stats):
    return {s["source"]: s for s in stats.skipped}


# ---------------------------------------------------------------- damaged compressed streams

def test_gzip_with_a_bad_crc_keeps_every_line_and_says_so(tmp_path):
    data = hostile.kafka_log(701)  # the last record is an event
    path = tmp_path / "server.log.gz"
    path.write_bytes(hostile.gzip_bad_crc(data))
    events, stats = events_of(path)
    assert identity(events) == identity(reference(tmp_path, data))
    assert stats.files[0].lines == data.count(b"\n")
    assert stats.files[0].lost == {"corrupt": 0}
    assert any("checksum" in p for p in stats.files[0].problems)


def test_gzip_corrupt_in_the_middle_keeps_everything_before_the_damage(tmp_path):
    first = hostile.kafka_log(7000)
    # A second member whose deflate data is garbage (an invalid block type), then a third.
    garbage = gzip.compress(b"")[:10] + b"\xff" * 4000
    packed = gzip.compress(first) + garbage + gzip.compress(hostile.kafka_log(70, start=7000))
    (tmp_path / "server.log.gz").write_bytes(packed)
    events, stats = events_of(tmp_path)
    assert identity(events) == identity(reference(tmp_path, first))
    assert stats.files[0].lost["corrupt"] == len(packed) - len(gzip.compress(first)) - 10
    assert "corrupt gzip data in member 2" in " ".join(stats.files[0].problems)


def test_gzip_flipped_bytes_are_a_checksum_problem_not_a_lost_file(tmp_path):
    packed = bytearray(gzip.compress(hostile.kafka_log(7000), compresslevel=1))
    middle = len(packed) // 2
    packed[middle:middle + 16] = bytes(16)  # deflate decodes it (to other bytes): the CRC tells
    (tmp_path / "server.log.gz").write_bytes(bytes(packed))
    events, stats = events_of(tmp_path)
    intact = decodable(bytes(packed))
    assert stats.files[0].bytes == len(intact)  # the damaged deflate data decodes to other bytes
    assert {tuple(x) for x in identity(reference(tmp_path, intact))} == {tuple(x) for x in identity(events)}
    assert stats.files[0].lost == {"corrupt": 0} and stats.lost_input()


def test_gzip_truncated_tail_keeps_the_last_whole_records(tmp_path):
    packed = gzip.compress(hostile.kafka_log(7000))
    cut = packed[: len(packed) * 6 // 10]
    (tmp_path / "server.log.gz").write_bytes(cut)
    events, stats = events_of(tmp_path)
    intact = decodable(cut)
    whole = intact[: intact.rfind(b"\n") + 1]
    assert {tuple(x) for x in identity(reference(tmp_path, whole))} <= {tuple(x) for x in identity(events)}
    assert stats.files[0].lost == {"truncated": 0}
    assert stats.files[0].unread == {"truncated": len(intact) - len(whole)}
    assert stats.files[0].bytes == len(intact)
    assert "truncated" in stats.files[0].problems[0]


@pytest.mark.parametrize("make", [hostile.make_xz_corrupt, hostile.make_zstd_corrupt])
def test_corrupt_xz_and_zstd_do_not_abort_the_run(tmp_path, make):
    damaged = make(tmp_path)
    if damaged is None:
        pytest.skip("zstandard is not installed")
    good = tmp_path / "good" / "node1.log"
    good.parent.mkdir()
    good.write_bytes(hostile.kafka_log(70))
    result = cli_here("events", tmp_path, "-q", "--stats", tmp_path / "stats.json")
    assert result.returncode == 3, result.stderr
    assert b"Traceback" not in result.stderr
    assert len(result.stdout.splitlines()) >= hostile.events_in(70)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["input_lost"] is True
    damaged_name = str(damaged.relative_to(tmp_path))
    entries = [f for f in stats["files"] if f["source"] == damaged_name] + \
              [s for s in stats["skipped"] if s["source"] == damaged_name]
    assert entries and ("corrupt" in json.dumps(entries))


def test_truncated_zstd_gets_a_note(tmp_path):
    path = hostile.make_zstd_truncated(tmp_path)
    if path is None:
        pytest.skip("zstandard is not installed")
    events, stats = events_of(path)
    assert events
    assert stats.files[0].lost == {"truncated": 0}
    assert "truncated" in " ".join(stats.files[0].problems)


def test_truncated_bz2_is_reported_as_truncated_input(tmp_path):
    path = hostile.make_bz2_truncated(tmp_path)
    result = cli_here("events", path, "-q")
    assert result.returncode == 3
    assert b"truncated" in result.stderr and b"Traceback" not in result.stderr


def test_a_zip_member_failing_its_crc_is_read_and_reported(tmp_path):
    data = hostile.kafka_log(70)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as bundle:
        bundle.writestr("broker-1/server.log", data)
    raw = bytearray(buffer.getvalue())
    at = raw.find(b"Preparing to rebalance group orders-3")
    raw[at:at + 9] = b"PREPARING"  # stored data changed: the CRC no longer matches
    (tmp_path / "bundle.zip").write_bytes(bytes(raw))
    events, stats = events_of(tmp_path)
    assert len(events) == hostile.events_in(70) - 1
    assert stats.files[0].lost == {"corrupt": 0}
    assert "fails its CRC" in stats.files[0].problems[0]


def test_a_zip_without_its_central_directory_is_reported_not_fatal(tmp_path):
    hostile.make_bad_zip(tmp_path)
    result = cli_here("events", tmp_path, "-q")
    assert result.returncode == 3 and b"unreadable zip archive" in result.stderr
    assert b"Traceback" not in result.stderr


# ---------------------------------------------------------------- binary regions, encodings, endings

def test_copytruncate_hole_skips_the_region_not_the_file(tmp_path):
    path = hostile.make_copytruncate(tmp_path, hole=3 << 20)
    events, stats = events_of(path)
    assert identity(events) == identity(reference(tmp_path, hostile.kafka_log(70)))
    assert stats.files[0].unread == {"binary": 3 << 20}
    assert stats.files[0].bytes == path.stat().st_size


def test_a_nul_byte_in_the_first_lines_does_not_make_the_file_binary(tmp_path):
    path = hostile.make_nul_in_head(tmp_path)
    events, stats = events_of(path)
    assert identity(events) == identity(reference(tmp_path, hostile.kafka_log(70)))
    assert [e["line"] for e in events] == [e["line"] for e in reference(tmp_path, hostile.kafka_log(70))]
    assert stats.files[0].unread == {"binary": 1}


def test_nul_runs_in_a_big_file_read_in_byte_ranges(tmp_path):
    # Past the head, in a file split into ranges: NULs are moved to the end of their line.
    body = hostile.kafka_log(7000)
    lines = body.split(b"\n")
    for i in range(1000, len(lines), 997):
        lines[i] = b"\x00" * 300 + lines[i]
    damaged = b"\n".join(lines)
    (tmp_path / "server.log").write_bytes(damaged)
    whole, stats = read_events([str(tmp_path)], ReadOptions(split_bytes=64 << 10))
    assert identity(whole) == identity(reference(tmp_path, body))
    assert [e["line"] for e in whole] == [e["line"] for e in reference(tmp_path, body)]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_with_a_byte_order_mark_is_decoded(tmp_path, encoding):
    path = hostile.make_utf16(tmp_path, encoding)
    events, stats = events_of(path)
    expected = reference(tmp_path, hostile.kafka_log(70))
    assert identity(events) == identity(expected)
    assert [e["line"] for e in events] == [e["line"] for e in expected]


def test_cr_only_line_ends_split_lines(tmp_path):
    path = hostile.make_cr_only(tmp_path)
    events, stats = events_of(path)
    expected = reference(tmp_path, hostile.kafka_log(70))
    assert identity(events) == identity(expected)
    assert [e["line"] for e in events] == [e["line"] for e in expected]


# ---------------------------------------------------------------- stdin, pipes, FIFOs, devices

def test_compressed_stdin_is_decompressed_by_its_magic_bytes(tmp_path):
    result = cli("events", "-", "-q", stdin=gzip.compress(hostile.kafka_log(70)))
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == hostile.events_in(70)
    assert b'"source": "<stdin>"' in result.stdout.splitlines()[0]


def test_a_pipe_is_read_once_whole(tmp_path):
    (tmp_path / "server.log").write_bytes(hostile.kafka_log(70))
    (tmp_path / "server.log.gz").write_bytes(gzip.compress(hostile.kafka_log(70)))
    for name in ("server.log", "server.log.gz"):
        command = (f"{sys.executable} -m rebalance_doctor.cli events <(cat {tmp_path / name}) -q "
                   f"--stats {tmp_path / 'stats.json'}")
        result = subprocess.run(["bash", "-c", command], capture_output=True, timeout=HANG_GUARD_S,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        assert result.returncode == 0, result.stderr
        assert len(result.stdout.splitlines()) == hostile.events_in(70)


def test_a_fifo_without_a_writer_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "incoming.log"
    os.mkfifo(fifo)
    result = cli("events", fifo, "-q", env={"REBALANCE_DOCTOR_FIFO_WAIT": "0.5"})
    assert result.returncode == 2
    assert b"a pipe nobody wrote to" in result.stderr


def test_a_fifo_with_a_writer_is_read(tmp_path):
    fifo = tmp_path / "incoming.log"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["bash", "-c", f"cat {tmp_path / 'src.log'} > {fifo}"])
    (tmp_path / "src.log").write_bytes(hostile.kafka_log(70))
    try:
        result = cli("events", fifo, "-q")
    finally:
        writer.wait(timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == hostile.events_in(70)


def test_a_device_is_refused(tmp_path):
    result = cli("events", "/dev/zero", "-q")
    assert result.returncode == 2 and b"character device" in result.stderr


# ---------------------------------------------------------------- bundles

def test_nested_archives_are_opened_and_members_keep_their_full_paths(tmp_path):
    path = hostile.make_nested(tmp_path)
    events, stats = events_of(path)
    names = sorted({e["source"] for e in events})
    assert names == ["support-case.zip!case/node-0.tar.gz!broker-0/server.log",
                     "support-case.zip!case/node-1.tar.gz!broker-1/server.log"]
    assert {e["host"] for e in events} == {"broker-0", "broker-1"}
    assert len(events) == 2 * hostile.events_in(70)


def test_two_members_with_the_same_name_stay_two(tmp_path):
    path = hostile.make_same_member_names(tmp_path)
    events, stats = events_of(path)
    assert sorted(f.source for f in stats.files) == ["bundle.tar!logs/server.log", "bundle.tar!logs/server.log#2"]
    expected = reference(tmp_path, hostile.kafka_log(70)) + reference(tmp_path, hostile.kafka_log(70, start=70), "b.log")
    assert identity(events) == identity(expected)


def test_a_truncated_tar_keeps_its_readable_members(tmp_path):
    path = hostile.make_truncated_tar(tmp_path)
    events, stats = events_of(path)
    by_source = {}
    for e in events:
        by_source.setdefault(e["source"], []).append(e)
    for k in (0, 1):
        whole = reference(tmp_path, hostile.kafka_log(700, start=700 * k), f"{k}.log")
        assert identity(by_source[f"bundle.tar.gz!broker-{k}/server.log"]) == identity(whole)
    assert skipped(stats)["bundle.tar.gz"]["kind"] == "truncated"
    assert stats.lost_input()


def test_archive_members_are_read_in_one_pass(tmp_path):
    from rebalance_doctor.core import bundles

    path = hostile.make_many_member_tar(tmp_path, members=300)
    bundles.restarts = 0
    events, stats = read_events([str(path)], ReadOptions())
    assert len(stats.files) == 300 and len(events) == 300 * hostile.events_in(7)
    # discovery lists the archive, then reads the head of each member; reading makes one more
    # pass (with --jobs 1 the reader follows the head sampling member by member)
    assert bundles.restarts <= 3


@pytest.mark.slow
def test_a_2000_member_bundle_does_not_take_quadratic_time(tmp_path):
    hostile.make_many_member_tar(tmp_path, members=2000)
    result = cli("events", tmp_path, "-q", "-o", "/dev/null")
    assert result.returncode == 0, result.stderr
    assert b"read 2000 file(s)" in result.stderr


# ---------------------------------------------------------------- bounded memory and work

def _gzip_of(line: bytes, size: int) -> bytes:
    member = gzip.compress(line * ((1 << 20) // len(line)), compresslevel=9)
    return member * (size >> 20)  # concatenated gzip members: one stream


def test_a_gzip_bomb_is_read_in_bounded_memory(tmp_path):
    noise = b"[2024-05-01 13:45:12,345] INFO Rolled new log segment at offset 1 (kafka.log.LocalLog)\n"
    (tmp_path / "bomb.log.gz").write_bytes(_gzip_of(noise, 1 << 30) + gzip.compress(hostile.kafka_log(70)))
    result = cli("events", tmp_path, "-q", "--stats", tmp_path / "stats.json", limit_mb=1024)
    assert result.returncode == 0, result.stderr[-2000:]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["bytes"] == (1 << 20) // len(noise) * len(noise) * 1024 + len(hostile.kafka_log(70))
    assert stats["events"] == hostile.events_in(70)


@pytest.mark.slow
def test_a_gzip_bomb_of_zeros_is_a_binary_region(tmp_path):
    (tmp_path / "zeros.log.gz").write_bytes(_gzip_of(b"\x00" * 4096, 1 << 30) + gzip.compress(hostile.kafka_log(70)))
    result = cli("events", tmp_path, "-q", "--stats", tmp_path / "stats.json", limit_mb=1024)
    assert result.returncode == 0, result.stderr[-2000:]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["unread"] == {"binary": 1 << 30}
    assert stats["events"] == hostile.events_in(70)


def test_a_long_line_after_a_record_start_is_read_once(tmp_path):
    from rebalance_doctor.core import reader

    path = hostile.long_line_after_record(tmp_path / "server.log", 40 << 20)
    reader.work_bytes = 0
    events, stats = events_of(path)
    assert len(events) == hostile.events_in(7) + hostile.events_in(7, start=14) + 1
    assert stats.files[0].unread["oversized"] > 30 << 20
    assert reader.work_bytes < 3 * path.stat().st_size  # each byte looked at a bounded number of times


def test_a_long_line_after_a_record_start_stays_in_bounded_memory(tmp_path):
    hostile.long_line_after_record(tmp_path / "server.log", 400 << 20)
    result = cli("events", tmp_path, "-q", "-o", "/dev/null", limit_mb=1024)
    assert result.returncode == 3, result.stderr[-2000:]  # the oversized line is lost input
    assert b"longer than 8 MiB, skipped" in result.stderr or b"input was lost" in result.stderr


def test_long_runs_of_spaces_are_read_and_counted(tmp_path):
    path = hostile.make_space_runs(tmp_path)
    result = cli("events", path, "-q", "--stats", tmp_path / "stats.json")
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["files"][0]["lines"] == 7
    assert stats["files"][0]["bytes"] == path.stat().st_size
    assert result.returncode in (0, 3)


def test_padded_spring_boot_lines_do_not_backtrack(tmp_path):
    path = tmp_path / "app.log"
    head = "2024-05-01 13:45:12.345  INFO 1 --- [           main] o.a.k.c.c.i.ConsumerCoordinator          : "
    good = (head + "[Consumer clientId=consumer-orders-1, groupId=orders] (Re-)joining group\n").encode()
    padded = ("2024-05-01 13:45:12.346  INFO" + " " * 20_000 + "1 -- [main] x : y\n").encode()
    path.write_bytes(padded * 40 + good * 40)
    result = cli("events", path, "-q", "--layout", "spring-boot")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 40


# ---------------------------------------------------------------- runs that used to abort

def test_a_pack_with_a_value_of_the_wrong_type_is_a_usage_error(tmp_path):
    (tmp_path / "bad.toml").write_text('pack = "x"\nversion = "1"\n[patterns."a.b"]\nevent = "e.f"\n'
                                       'gate = "gate here"\nvariants = "not a list"\npriority = "high"\n')
    result = cli_here("events", hostile.make_cr_only(tmp_path), "--packs", tmp_path / "bad.toml")
    assert result.returncode == 2
    assert b"a.b" in result.stderr and b"Traceback" not in result.stderr


@pytest.mark.parametrize("option", ["--stats", "--unmatched"])
def test_an_output_that_cannot_be_written_is_a_usage_error(tmp_path, option):
    path = hostile.make_cr_only(tmp_path)
    result = cli_here("events", path, "-q", "-o", tmp_path / "events.jsonl", option, tmp_path / "missing" / "out.json")
    assert result.returncode == 2
    assert b"cannot write" in result.stderr and b"Traceback" not in result.stderr
    # The run's outputs are all or nothing: the events file, written before, is not left behind.
    assert not (tmp_path / "events.jsonl").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


@pytest.mark.parametrize("option", ["--stats", "--unmatched"])
def test_an_unwritable_second_output_leaves_an_earlier_runs_files_as_they_were(tmp_path, option):
    path = hostile.make_cr_only(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "events.jsonl").write_text("an earlier run's events\n")
    result = cli_here("events", path, "-q", "-o", out / "events.jsonl", option, tmp_path / "missing" / "x.json")
    assert result.returncode == 2, result.stderr
    assert (out / "events.jsonl").read_text() == "an earlier run's events\n"
    assert [p.name for p in out.iterdir()] == ["events.jsonl"]


def test_a_read_only_destination_is_a_usage_error_and_leaves_no_output(tmp_path):
    """A read-only filesystem (EROFS) is a path the user chose, like a directory without
    permission: 2, as CONVENTIONS' usage error (another path is the fix); 5 stays for what the
    machine lacks (an extra, Java, Spark) and a disk that fills up while writing."""
    path = hostile.make_cr_only(tmp_path)
    read_only = tmp_path / "ro"
    prefix = read_only_mount(read_only)
    events = cli("events", path, "-q", "-o", read_only / "events.jsonl", prefix=prefix)
    assert events.returncode == 2, events.stderr
    assert f"cannot write {read_only / 'events.jsonl'}: Read-only file system".encode() in events.stderr
    assert b"Traceback" not in events.stderr
    # --stats on the read-only filesystem: the events file, on a writable one, is not left either.
    both = cli("events", path, "-q", "-o", tmp_path / "events.jsonl", "--stats", read_only / "stats.json",
               prefix=prefix)
    assert both.returncode == 2, both.stderr
    assert b"Read-only file system" in both.stderr and b"Traceback" not in both.stderr
    assert not (tmp_path / "events.jsonl").exists()
    report = cli("analyze", path, "-q", "--fail-on", "never", "--html", read_only / "report.html", prefix=prefix)
    assert report.returncode == 2, report.stderr
    assert b"Read-only file system" in report.stderr and b"Traceback" not in report.stderr


def test_the_help_says_which_code_an_unwritable_output_gets():
    for command in (["--help"], ["analyze", "--help"], ["events", "--help"]):
        text = b" ".join(cli_here(*command).stdout.split())
        assert b"read-only" in text, command
    readme = (REPO / "README.md").read_text()
    assert "a read-only filesystem" in readme


def test_deeply_nested_directories_do_not_exhaust_the_recursion_limit(tmp_path, monkeypatch):
    deep = tmp_path / "deep"
    deep.mkdir()
    # monkeypatch puts the suite's directory back: the tests after this one run
    # `python -m rebalance_doctor.cli` from it, which imports the tree under test.
    monkeypatch.chdir(deep)
    for _ in range(1100):  # one level at a time: pathlib's own mkdir(parents=True) recurses
        os.mkdir("d")
        os.chdir("d")
    Path("server.log").write_bytes(hostile.kafka_log(70))
    monkeypatch.chdir(tmp_path)
    try:
        result = cli("events", deep, "-q", cwd=tmp_path)
    finally:
        _take_apart(deep)
    assert b"Traceback" not in result.stderr and b"RecursionError" not in result.stderr
    assert result.returncode == 0, result.stderr[-500:]
    assert len(result.stdout.splitlines()) == hostile.events_in(70)


def _take_apart(top: Path) -> None:
    """Remove a tree of nested `d` directories bottom-up, one level at a time: shutil.rmtree recurses once per
    level, and pytest's removal of old base temp directories (a later run's) hit the recursion limit on it."""
    here = os.getcwd()
    os.chdir(top)
    levels = 0
    while os.path.isdir("d"):
        os.chdir("d")
        levels += 1
    for name in os.listdir("."):
        os.remove(name)
    for _ in range(levels):
        os.chdir("..")
        os.rmdir("d")
    os.chdir(here)


def test_the_output_is_never_read_as_input(tmp_path):
    (tmp_path / "node1.log").write_bytes(hostile.kafka_log(700))
    (tmp_path / "node2.log").write_bytes(hostile.kafka_log(700, start=700))
    out = tmp_path / "events.jsonl"
    for _ in range(2):
        result = cli_here("events", tmp_path, "-o", out, "--jobs", "2", "-q")
        assert result.returncode == 0, result.stderr
        assert len(out.read_text().splitlines()) == 2 * hostile.events_in(700)


def test_an_html_report_of_an_earlier_run_is_not_read_as_a_log(tmp_path):
    (tmp_path / "node1.log").write_bytes(hostile.kafka_log(700))
    report = tmp_path / "report.html"
    assert cli_here("analyze", tmp_path, "--html", report, "-q").returncode in (0, 1)
    result = cli_here("events", tmp_path, "-q")
    # Its lines each hold many records' text: read as a log it made a pattern give up (exit 3).
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == hostile.events_in(700)
    assert b"report.html: not a log file" in cli_here("events", tmp_path, "-o", tmp_path / "e.jsonl").stderr


def test_a_failed_run_leaves_no_output_that_looks_complete(tmp_path):
    for name in ("a.log", "b.log", "c.log"):
        (tmp_path / name).write_bytes(hostile.kafka_log(700))
    out = tmp_path / "out" / "events.parquet"
    out.parent.mkdir()
    code = ("import os, sys\n"
            "from rebalance_doctor.engines import local\n"
            "real = local.read_unit\n"
            "def dying(unit, options):\n"
            "    if unit.source.name == 'c.log':\n"
            "        os._exit(9)\n"
            "    return real(unit, options)\n"
            "local.read_unit = dying\n"
            "from rebalance_doctor.cli.app import main\n"
            f"sys.argv = ['rebalance-doctor', 'events', {str(tmp_path)!r}, '-o', {str(out)!r}, '--jobs', '2', '-q']\n"
            "main()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 4, result.stderr
    assert list(out.parent.iterdir()) == []


def test_an_internal_error_is_one_line_with_a_hint_and_the_traceback_only_with_debug(tmp_path):
    path = hostile.make_cr_only(tmp_path)
    code = ("import sys\n"
            "from rebalance_doctor.engines import local\n"
            "def broken(*args, **kwargs):\n"
            "    raise KeyError('a bug')\n"
            "local.read_events = broken\n"
            "from rebalance_doctor.cli.app import main\n"
            "sys.argv = ['rebalance-doctor'] + sys.argv[1:]\n"
            "main()\n")
    for debug in (False, True):
        args = (["--debug"] if debug else []) + ["analyze", str(path), "-q"]
        result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                                timeout=HANG_GUARD_S, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert result.returncode == 4
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "internal error (KeyError: 'a bug')" in errors[0] and "--debug" in errors[0]
        assert ("Traceback" in result.stderr) is debug


@pytest.mark.parametrize("args,code", [
    (["events", "{good}", "-q"], 0),
    (["events", "{good}", "{missing}", "-q"], 2),
    (["events", "{lost}", "-q"], 3),
    (["events", "{good}", "{lost}", "-q"], 3),
    (["analyze", "{good}", "{lost}", "-q", "--fail-on", "never"], 3),
    (["analyze", "{incident}", "{lost}", "-q"], 1),
    (["analyze", "{incident}", "{missing}", "-q"], 2),
    (["events", "{good}", "-q", "--tz", "Mars/Olympus"], 2),
    (["events", "{good}", "-q", "--date", "yesterday"], 2),
])
def test_exit_codes_follow_the_contract(tmp_path, args, code):
    paths = {"good": hostile.make_cr_only(tmp_path), "missing": tmp_path / "missing.log",
             "lost": hostile.make_gzip_truncated(tmp_path),
             "incident": REPO / "fixtures" / "incidents" / "poll-timeout-storm"}
    result = cli_here(*[a.format(**paths) for a in args])
    assert result.returncode == code, result.stderr.decode()[-1500:]
    assert b"Traceback" not in result.stderr


def test_exit_codes_are_in_the_help_of_every_command():
    for command in (["--help"], ["analyze", "--help"], ["events", "--help"]):
        result = cli_here(*command)
        text = b" ".join(result.stdout.split())
        assert b"3 input was lost" in text, command


# ---------------------------------------------------------------- terminal safety

RAW_CONTROLS = (b"\x1b]", b"\x1b[2J", b"\x1bc", b"\x07", b"\x9b", "\u202e".encode())


def cli_on_a_terminal(*args) -> tuple[int, bytes]:
    """Run the command line with stdout and stderr on a pseudo-terminal, as an operator sees it."""
    import pty

    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "rebalance_doctor.cli", *map(str, args)],
                               stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal,
                               env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"})
    os.close(terminal)
    output = b""
    while True:
        try:
            piece = os.read(controller, 1 << 16)
        except OSError:  # the terminal closed: the process is done
            break
        if not piece:
            break
        output += piece
    os.close(controller)
    return process.wait(timeout=HANG_GUARD_S), output


@pytest.mark.parametrize("command", [["analyze", "{dir}"], ["events", "{dir}", "-o", "{out}"],
                                     ["patterns", "test", "{line}"], ["events", "{missing}"]])
def test_log_text_never_reaches_the_terminal_raw(tmp_path, command):
    path = hostile.make_escapes(tmp_path)
    (path.parent / "evil\x1b]0;owned\x07.log").write_bytes(hostile.kafka_log(7))
    line = path.read_text().splitlines()[-1]
    values = {"dir": path.parent, "out": tmp_path / "events.jsonl", "line": line,
              "missing": tmp_path / "gone\x1b[2J.log"}
    code, output = cli_on_a_terminal(*[part.format(**values) for part in command])
    assert code in (0, 1, 2, 3), output[-2000:]
    # Colours of the tool's own (ESC [ ... m) are fine; what came from the log is not.
    for raw in RAW_CONTROLS:
        assert raw not in output, (raw, output[-800:])
    assert b"\\x1b" in output


# ---------------------------------------------------------------- a line that holds many records

# broker.rebalance.prepare as it shipped before: the group (.+?) and the reason (.*) stacked.
PREPARE_BEFORE = (r"Preparing to rebalance group(?:\x20|(?=\*))(?P<group>.+?) in state (?P<state>\w+) with old "
                  r"generation (?P<generation>-?\d+) \(__consumer_offsets-\d+\) \(reason: (?P<reason>(?:[^()]*?\b"
                  r"(?:[Mm]ember|Leader) (?P<member>[^\s,;()]+))?.*)\)\s*$")


def test_the_lint_rejects_free_repeats_stacked_on_one_path():
    from rebalance_doctor.core.regex_lint import lint

    assert lint(PREPARE_BEFORE).kind == "stacked"
    assert lint(r"^a (?:.*?) b (?:.*?) c$").kind == "stacked"
    assert lint(r"(?s)^a (?P<x>[\s\S]*?) b (?P<y>.+) c\.$").kind == "stacked"
    # A group name that alternatives share (the regex module allows it, Python's parser does not):
    # such a regex used to go unchecked.
    assert lint(r"^x (?:Some\((?P<i>[^()]*)\)|(?P<i>.*?)) y (?P<z>.+?)\]$").kind == "stacked"
    for fine in (r"^a (?P<x>.*?) b \d+$",                         # one free repeat
                 r"^a (?>(?P<x>.*?) b )(?P<y>.*?) c$",             # the earlier one sealed
                 r"^a (?P<x>.*?) b (?P<y>.*)\s*(?:\n[\s\S]*)?$",   # nothing must match after the last
                 r"^a (?P<x>[^()]*?) b (?P<y>.*?)\)$",            # a class that stops at its terminator
                 r"^a (?=.*?k=(?P<k>\d+))(?P<y>.*?) c$"):          # a lookahead is never backtracked into
        assert lint(fine) is None, fine


def test_generated_regexes_seal_every_free_repeat_but_the_last():
    import regex
    from rebalance_doctor.core.regex_lint import lint
    from rebalance_doctor.packgen.captures import seal_free_repeats

    generated = (r'^Group "(?P<group>[^"\n]*)" received op (?:.*?) in state (?:.*?) \(join state (?:.*?)\) for '
                 r'(?P<topic>.*?) \[(?:-?\d+)\]\s*(?:\n[\s\S]*)?$')
    sealed = seal_free_repeats(generated)
    assert sealed == (r'^Group "(?P<group>[^"\n]*)" received op (?>(?:.*?) in state )(?>(?:.*?) \(join state )'
                      r'(?>(?:.*?)\) for )(?P<topic>.*?) \[(?:-?\d+)\]\s*(?:\n[\s\S]*)?$')
    assert lint(generated).kind == "stacked" and lint(sealed) is None
    line = 'Group "orders" received op ASSIGN in state up (join state steady) for orders [7]'
    assert regex.search(sealed, line).groupdict() == regex.search(generated, line).groupdict()
    # An alternative that ends its group is sealed with the group and the text after it.
    branchy = (r"^tasks (?:(?P<t>\[[^\]]*\])|(?P<t>.*?)) to clients (?:(?P<c>\{(?>.*?\}))|(?P<c>.*?)) "
               r"with (?P<n>.*)\s*(?:\n[\s\S]*)?$")
    assert seal_free_repeats(branchy) == (r"^tasks (?>(?:(?P<t>\[[^\]]*\])|(?P<t>.*?)) to clients )"
                                          r"(?>(?:(?P<c>\{(?>.*?\}))|(?P<c>.*?)) with )(?P<n>.*)\s*(?:\n[\s\S]*)?$")


def test_a_line_holding_many_records_is_read_without_a_regex_timeout(tmp_path):
    """Before, broker.rebalance.prepare gave up on this line (1.3 s for its 40 records, over 10 s
    for 100: the 0.25 s timeout fired and was counted, exit 3); sealed, it fails in ~0.01 s."""
    path = hostile.make_many_records_line(tmp_path)
    result = cli_here("events", path, "-q", "--stats", tmp_path / "stats.json")
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["regex_timeouts"] == 0
    assert result.returncode == 0, result.stderr
    # The records around it are events; the line itself is a record no pattern reads (a near miss).
    assert len(result.stdout.splitlines()) == hostile.events_in(70) + hostile.events_in(70, start=71)


def test_the_shipped_prepare_pattern_reads_what_it_read_before():
    import regex
    from rebalance_doctor.core.packs import load_packs

    variant = load_packs([], include_default=True).patterns["broker.rebalance.prepare"].variants[0]
    for message in ("Preparing to rebalance group orders in state PreparingRebalance with old generation 41 "
                    "(__consumer_offsets-17) (reason: removing member consumer-orders-1-6b1f on heartbeat expiration)",
                    "Preparing to rebalance group my group in state Stable with old generation 3 (__consumer_offsets-1)"
                    " (reason: Adding new member m-1 with group instance id Some(i-1); client reason: x (y))"):
        assert regex.search(variant.regex_source, message).groupdict() == \
            regex.search(PREPARE_BEFORE, message).groupdict()
    assert variant.compiled.search(hostile.many_records_line().decode(), timeout=5) is None


# ---------------------------------------------------------------- an unreadable file, for real

def test_an_unreadable_file_is_named_counted_and_every_good_event_kept(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_bytes(hostile.kafka_log(70))
    (logs / "b.log").write_bytes(hostile.kafka_log(70, start=70))
    (logs / "secret.log").write_bytes(hostile.kafka_log(70, start=140))
    secret = unreadable(logs / "secret.log")
    result = cli("events", logs, "-o", tmp_path / "events.jsonl", "--stats", tmp_path / "stats.json",
                 unprivileged=True)
    assert result.returncode == 3, result.stderr  # input was lost (CONVENTIONS), nothing else holds
    assert b"Traceback" not in result.stderr
    said = [line for line in result.stderr.splitlines() if b"secret.log" in line and b"Permission denied" in line]
    assert said == [b"skipped: secret.log: cannot read: Permission denied"]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert [s for s in stats["skipped"] if s["source"] == "secret.log"] == [
        {"source": "secret.log", "reason": "cannot read: Permission denied", "kind": "unreadable",
         "bytes": secret.stat().st_size}]
    assert stats["input_lost"] is True
    events = (tmp_path / "events.jsonl").read_text().splitlines()
    assert len(events) == hostile.events_in(70) + hostile.events_in(70, start=70)


# ---------------------------------------------------------------- every damaged kind in one directory

@pytest.mark.slow
def test_events_and_analyze_on_every_damaged_kind_at_once(tmp_path):
    """Issue 21's "done when": one directory mixing every damaged kind with good files; every
    good event kept, every skipped byte accounted for, no traceback, the documented exit code,
    under 500 MB of address space (RLIMIT_AS: a bound, not a timing)."""
    mixed = tmp_path / "mixed"
    made = hostile.make_all(mixed)
    locked = mixed / "locked" / "server.log"
    locked.parent.mkdir()
    locked.write_bytes(hostile.kafka_log(70, start=700))
    unreadable(locked)
    fifo = mixed / "incoming.log"
    os.mkfifo(fifo)
    good = {"good/server.log": hostile.events_in(700), "cr-only/server.log": hostile.events_in(70),
            "many-records/server.log": hostile.events_in(70) + hostile.events_in(70, start=71),
            "nested/support-case.zip!case/node-0.tar.gz!broker-0/server.log": hostile.events_in(70)}
    kinds = {"gzip-bad-crc", "gzip-truncated", "xz-corrupt", "bz2-truncated", "copytruncate", "nul-in-head",
             "utf-16-le", "utf-16-be", "cr-only", "truncated-tar", "nested", "same-names", "bad-zip", "escapes",
             "space-runs", "many-records", "oversized"}
    assert kinds <= {p.relative_to(mixed).parts[0] for p in made}
    stats_file = tmp_path / "stats.json"
    for expected, with_fifo in ((2, True), (3, False)):
        if not with_fifo:
            fifo.unlink()
        events = cli("events", mixed, "-q", "-o", tmp_path / "events.jsonl", "--stats", stats_file, limit_mb=500,
                     unprivileged=True)
        # With the FIFO: 2 (a pipe in a directory cannot be a log: README's table), which comes
        # before 3; without it, 3: input was lost and nothing weighs more.
        assert events.returncode == expected, events.stderr[-2000:]
        assert b"Traceback" not in events.stderr and b"Error:" not in events.stderr
        stats = json.loads(stats_file.read_text())
        assert stats["regex_timeouts"] == 0
        per_file = {f["source"]: f for f in stats["files"]}
        for name, count in good.items():
            assert per_file[name]["events"] == count, name
        # Every byte of every plain file is read into a line or counted (unread: binary,
        # oversized, encoding, truncated), and every skipped file with its size.
        for path in made:
            name = path.relative_to(mixed).as_posix()
            if name in per_file and per_file[name]["codec"] in (None, "plain", "none"):
                assert per_file[name]["bytes"] == path.stat().st_size, name
        assert per_file["oversized/server.log"]["unread"]["oversized"] > 8 << 20
        assert per_file["copytruncate/server.log"]["unread"]["binary"] == 64 << 10
        skipped = {s["source"]: s for s in stats["skipped"]}
        assert skipped["locked/server.log"]["bytes"] == locked.stat().st_size
        assert skipped["bad-zip/bundle.zip"]["bytes"] == (mixed / "bad-zip" / "bundle.zip").stat().st_size
        for name in ("xz-corrupt/server.log.xz", "bz2-truncated/server.log.bz2"):
            assert skipped[name]["bytes"] == (mixed / name).stat().st_size, name
        damaged = {"gzip-bad-crc/server.log.gz": "corrupt", "gzip-truncated/server.log.gz": "truncated",
                   "zstd-truncated/server.log.zst": "truncated", "zstd-corrupt/server.log.zst": "corrupt"}
        for name, kind in damaged.items():
            if name in per_file:  # zstd only with the zstandard package
                assert kind in per_file[name]["lost"], name
        assert stats["input_lost"] is True
        all_events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
        assert len(all_events) == stats["events"] >= sum(good.values())
    analyze = cli("analyze", mixed, "-q", "--format", "json", "--fail-on", "never", limit_mb=500, unprivileged=True)
    assert analyze.returncode == 3, analyze.stderr[-2000:]
    assert b"Traceback" not in analyze.stderr
    report = json.loads(analyze.stdout)
    assert report["schema_version"]
    assert b"locked/server.log" in analyze.stderr


@pytest.mark.slow
def test_running_out_of_memory_is_the_machines_limit_not_a_bug(tmp_path):
    """Issue 34: out of memory was reported as "This is a bug". Under a 300 MB address-space limit the
    analysis of ~5,700 groups cannot fit: one line that says what narrows the run, exit 5 (the machine's
    limit, like a full disk), no traceback and no report file that looks complete."""
    log = tmp_path / "server.log"
    log.write_bytes(hostile.kafka_log(40000))
    out = tmp_path / "report.html"
    done = cli("analyze", log, "-q", "--jobs", "1", "--html", out, limit_mb=300)
    err = done.stderr.decode()
    assert done.returncode == 5, err
    assert "ran out of memory" in err and "--group" in err
    assert "Traceback" not in err and "bug" not in err
    assert not out.exists()
