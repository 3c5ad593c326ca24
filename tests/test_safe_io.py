"""Issue 34 items 1, 2 and 7, issue 30 item 6 (signals): files that change while read, output
targets, signals, full disks, closed streams, inputs with nothing of Kafka. Each case runs the
command line in a real subprocess; each failed on a0fe02b.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, cli_process
from rebalance_doctor.core import sources
from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.local import read_events

LAYOUTS = REPO / "fixtures" / "layouts"
HOOK = REPO / "tests" / "changing_file.py"
HANG_GUARD_S = 300


@pytest.fixture
def big_log(tmp_path) -> Path:
    """A 4 MB Kafka broker log (the six-event story of the layout fixture, repeated)."""
    text = (LAYOUTS / "kafka.log").read_text()
    path = tmp_path / "server.log"
    path.write_text(text * (4_000_000 // len(text)))
    return path


def changing(action: str, path: Path, after: int, *args, cwd=None) -> subprocess.CompletedProcess:
    """The command line with ``path`` truncated or replaced once its reader got ``after`` bytes."""
    return subprocess.run([sys.executable, str(HOOK), action, str(path), str(after), "--", "rebalance-doctor",
                           *map(str, args)], capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=cwd)


# ---------------------------------------------------------------- 1. files that change while read

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_truncated_while_read_is_lost_with_its_bytes(big_log, tmp_path, jobs):
    size = big_log.stat().st_size
    other = tmp_path / "other.log"
    other.write_text((LAYOUTS / "kafka.log").read_text())
    stats = tmp_path / "stats.json"
    result = changing("truncate", big_log, 1_000_000, "events", big_log, other, "-o", tmp_path / "out.jsonl",
                      "--stats", stats, "-q", "--jobs", jobs)
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    accounting = json.loads(stats.read_text())
    assert accounting["input_lost"] is True
    first = next(f for f in accounting["files"] if f["source"].endswith("server.log"))
    assert first["lost"]["shrank"] + first["bytes"] == size        # every byte read or counted
    assert 1_000_000 <= first["bytes"] < size
    assert any("cut short while it was read" in p for p in first["problems"])
    assert "input lost: 2.8 MiB shrank" in result.stderr


def test_a_file_replaced_while_read_is_lost(big_log, tmp_path):
    stats = tmp_path / "stats.json"
    result = changing("replace", big_log, 1_000_000, "events", big_log, "-o", tmp_path / "out.jsonl",
                      "--stats", stats, "-q")
    assert result.returncode == 3, result.stderr
    accounting = json.loads(stats.read_text())
    new_size = big_log.stat().st_size
    assert accounting["lost"] == {"replaced": new_size}
    assert accounting["files"][0]["bytes"] == (tmp_path / "server.log.1").stat().st_size  # the old file, whole


def test_analyze_counts_a_truncation_too(big_log, tmp_path):
    result = changing("truncate", big_log, 1_000_000, "analyze", big_log, "--format", "json", "-q",
                      "--fail-on", "never")
    assert result.returncode == 3, result.stderr
    assert json.loads(result.stdout)["accounting"]["input_lost"] is True


def test_ranges_of_a_file_replaced_mid_read_are_lost_not_read_from_the_new_file(big_log, monkeypatch):
    """With --jobs, a file is read in byte ranges, each opened on its own: the ranges opened
    after a rotation hold another file, whose bytes at those offsets are not the planned file's."""
    size = big_log.stat().st_size
    opened = sources.Source.open
    state = {"opens": 0}

    def open_then_rotate(self):
        stream = opened(self)
        state["opens"] += 1
        if state["opens"] == 2:  # the first range (detection opened it once before)
            os.rename(big_log, str(big_log) + ".1")
            big_log.write_text("[2024-05-01 13:45:12,345] INFO new\n")
        return stream

    monkeypatch.setattr(sources.Source, "open", open_then_rotate)
    events, stats = read_events([str(big_log)], ReadOptions(split_bytes=1 << 20))
    (file,) = stats.files
    assert file.bytes == 1 << 20                               # the first range, from the file found
    assert file.lost["replaced"] == size - (1 << 20) + big_log.stat().st_size
    assert stats.lost_input() == ["server.log"]


def test_a_file_that_grows_while_read_is_not_lost(big_log, tmp_path):
    # The growth a live log has: appended to, never cut. Nothing lost, exit 0.
    result = subprocess.run([sys.executable, "-c", f"""
import sys; sys.path.insert(0, {str(REPO)!r})
from rebalance_doctor.core import sources
opened = sources.Source.open
def grow(self):
    stream = opened(self)
    with open({str(big_log)!r}, "a") as f:
        f.write("[2024-05-01 13:45:12,345] INFO one more line\\n")
    return stream
sources.Source.open = grow
sys.argv = ["rebalance-doctor", "events", {str(big_log)!r}, "-o", {str(tmp_path / 'o.jsonl')!r}, "-q"]
from rebalance_doctor.cli.app import main
main()
"""], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr
    assert "lost" not in result.stderr


# ---------------------------------------------------------------- 2. outputs only where a file may be written

def _special_targets(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return ["/dev/full", str(tmp_path), str(fifo)]


@pytest.mark.parametrize("option", ["-o", "--stats", "--html"])
def test_a_device_fifo_or_directory_is_refused_never_replaced(tmp_path, option):
    log = LAYOUTS / "kafka.log"
    for target in _special_targets(tmp_path):
        command = "analyze" if option == "--html" else "events"
        result = cli_process(command, log, option, target, "-q", "--format", "jsonl" if command == "events" else "json")
        assert result.returncode == 2, (target, result.stderr)
        assert result.stderr.strip().splitlines()[-1].startswith(f"error: cannot write {target}: ")
        assert "Traceback" not in result.stderr
    assert Path("/dev/full").is_char_device()
    assert not [p for p in tmp_path.rglob("*.partial")]


def test_a_symlink_is_written_through_and_an_existing_mode_kept(tmp_path):
    private = tmp_path / "private.html"
    private.write_text("old")
    private.chmod(0o600)
    link = tmp_path / "report.html"
    link.symlink_to(private)
    result = cli_process("analyze", LAYOUTS / "kafka.log", "--html", link, "-q", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and link.resolve() == private
    assert (private.stat().st_mode & 0o777) == 0o600
    assert private.read_text().startswith("<!DOCTYPE html>") or "<html" in private.read_text()[:500]


def test_a_new_output_follows_the_umask(tmp_path):
    out = tmp_path / "events.jsonl"
    result = cli_process("events", LAYOUTS / "kafka.log", "-o", out, "-q", prefix=["sh", "-c", 'umask 077; exec "$@"', "sh"])
    assert result.returncode == 0, result.stderr
    assert (out.stat().st_mode & 0o777) == 0o600


def test_a_missing_input_writes_no_output(tmp_path):
    for command, option, target in (("events", "-o", tmp_path / "e.jsonl"), ("analyze", "--html", tmp_path / "r.html")):
        result = cli_process(command, LAYOUTS / "kafka.log", tmp_path / "missing.log", option, target, "-q")
        assert result.returncode == 2, result.stderr
        assert not target.exists()
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- 3. signals, full disks, closed streams

@pytest.mark.parametrize("command", ["events", "analyze"])
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("name, code", [("TERM", 143), ("HUP", 129), ("INT", 130)])
def test_a_signal_mid_read_ends_cleanly_and_leaves_nothing(big_log, tmp_path, command, jobs, name, code):
    """The signal goes to the whole process group from inside the read (as a CI cancel, a closed
    terminal or Ctrl-C sends it): exact, no sleeps."""
    other = tmp_path / "other.log"
    other.write_bytes(big_log.read_bytes())
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = ["-o", tmp_path / "out.parquet"] if command == "events" else ["--html", tmp_path / "r.html"]
    result = subprocess.run([sys.executable, str(HOOK), name, str(big_log), "1000000", "--", "rebalance-doctor",
                             command, str(big_log), str(other), *map(str, out), "-q", "--jobs", jobs],
                            capture_output=True, text=True, timeout=HANG_GUARD_S, start_new_session=True,
                            env={**os.environ, "TMPDIR": str(temporary)})
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert list(temporary.iterdir()) == []                       # no rebalance-doctor-* directory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.log", "server.log", "server.log.changed", "tmp"]


@pytest.mark.parametrize("args", [("events",), ("analyze", "--fail-on", "never"),
                                  ("analyze", "--fail-on", "never", "--format", "json")])
def test_standard_output_on_a_full_disk_is_exit_5(args):
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", args[0], str(LAYOUTS / "kafka.log"),
                                 *args[1:], "-q"], stdout=full, stderr=subprocess.PIPE, text=True,
                                timeout=HANG_GUARD_S, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 5, result.stderr
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("closed", ["stdout", "stderr"])
def test_a_closed_standard_stream_ends_without_a_traceback(tmp_path, closed):
    out = tmp_path / "events.jsonl"
    script = (f'{sys.executable} -m rebalance_doctor.cli events {LAYOUTS / "kafka.log"} -q -o {out} '
              + ('>&- 2>err' if closed == "stdout" else '2>&- >out'))
    result = subprocess.run(["sh", "-c", script], cwd=tmp_path, timeout=HANG_GUARD_S,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0
    assert len(out.read_text().splitlines()) == 6
    if closed == "stdout":
        assert "Traceback" not in (tmp_path / "err").read_text()


# ---------------------------------------------------------------- 4. nothing of Kafka; tar members that are not files

@pytest.mark.parametrize("command", ["analyze", "events"])
def test_input_with_no_kafka_line_is_a_usage_error_that_says_what_was_read(tmp_path, command):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("buy milk\nwater the plants\n")
    (notes / "hosts").write_text("127.0.0.1 localhost\n")
    out = tmp_path / "out.jsonl"
    result = cli_process(command, notes, "-q", *(["-o", out] if command == "events" else []))
    assert result.returncode == 2, result.stderr
    assert "error: no Kafka log line in the input: read 2 file(s), 3 lines" in result.stderr
    assert not out.exists()


def test_a_kafka_log_without_rebalances_is_not_a_usage_error(tmp_path):
    quiet = tmp_path / "server.log"
    quiet.write_text("[2024-05-01 13:45:12,345] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n")
    result = cli_process("analyze", quiet, "-q")
    assert result.returncode == 0, result.stderr


def test_tar_members_that_are_links_devices_or_fifos_are_listed_as_skipped(tmp_path):
    import io
    import tarfile

    bundle = tmp_path / "case.tar"
    log = (LAYOUTS / "kafka.log").read_bytes()
    with tarfile.open(bundle, "w") as tar:
        info = tarfile.TarInfo("broker-1/server.log")
        info.size = len(log)
        tar.addfile(info, io.BytesIO(log))
        for name, kind, link in (("current.log", tarfile.SYMTYPE, "broker-1/server.log"),
                                 ("hard.log", tarfile.LNKTYPE, "broker-1/server.log"),
                                 ("null", tarfile.CHRTYPE, ""), ("pipe", tarfile.FIFOTYPE, "")):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, link
            tar.addfile(info)
    stats = tmp_path / "stats.json"
    result = cli_process("events", bundle, "-q", "-o", tmp_path / "e.jsonl", "--stats", stats)
    assert result.returncode == 0, result.stderr
    skipped = {item["source"]: item["kind"] for item in json.loads(stats.read_text())["skipped"]}
    assert skipped == {"case.tar!current.log": "link", "case.tar!hard.log": "link", "case.tar!null": "not-log",
                       "case.tar!pipe": "not-log"}
