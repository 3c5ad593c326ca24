"""`analyze --follow`: real growing, rotated and streamed inputs, written while the command follows them.

The command runs as a subprocess (signals and pipes are the process's); its stdout and stderr are
read by threads as it writes them. Each wait has a generous bound (WAIT_S) and asserts what
happened, never how fast: a finding shows after its deciding line is written and not before.
Incident lines come from fixtures/incidents/poll-timeout-storm/node2.log, whose line 4 is the
first poll timeout (the deciding line of the poll-timeout finding) and which holds 5 in all.
"""

from __future__ import annotations

import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from helpers import REPO, events_of

NODE2 = REPO / "fixtures" / "incidents" / "poll-timeout-storm" / "node2.log"
LINES = NODE2.read_bytes().splitlines(keepends=True)
DECIDING = 4        # line 4: "consumer poll timeout has expired"
WAIT_S = 30.0       # a hang guard for each expected output, far above what it takes
QUIET_S = 1.0       # how long "nothing appeared" is watched for (several ticks and quiet periods)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals and non-blocking pipes")


class Following:
    """`rebalance-doctor analyze --follow ARGS` in a subprocess, its output lines collected as they come."""

    def __init__(self, *args, stdin=None):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen([sys.executable, "-m", "rebalance_doctor.cli", "analyze", "--follow", *map(str, args)],
                                        stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                        cwd=REPO, text=True)
        self.out: list[tuple[float, str]] = []
        self.err: list[tuple[float, str]] = []
        self._seen = queue.Queue()
        self._threads = [threading.Thread(target=self._collect, args=(s, into), daemon=True)
                         for s, into in ((self.process.stdout, self.out), (self.process.stderr, self.err))]
        for thread in self._threads:
            thread.start()
        self.wait_for(lambda t: t.startswith("following "), self.err)   # what was there is read; following now

    def _collect(self, stream, into) -> None:
        for text in stream:
            into.append((time.monotonic(), text.rstrip("\n")))
            self._seen.put(None)

    def wait_for(self, predicate, lines=None, timeout: float = WAIT_S) -> tuple[float, str]:
        """The first line (of stdout, or ``lines``) that ``predicate`` accepts, with the time it came."""
        lines = self.out if lines is None else lines
        deadline = time.monotonic() + timeout
        while True:
            for when, text in list(lines):
                if predicate(text):
                    return when, text
            if self.process.poll() is not None and all(not t.is_alive() for t in self._threads):
                raise AssertionError(f"the command ended ({self.process.returncode}) first:\n{self.text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"not seen within {timeout} s:\n{self.text()}")
            try:
                self._seen.get(timeout=0.05)
            except queue.Empty:
                pass

    def stop(self, signum=signal.SIGINT) -> int:
        self.process.send_signal(signum)
        code = self.process.wait(timeout=WAIT_S)
        for thread in self._threads:
            thread.join(timeout=WAIT_S)
        return code

    def text(self) -> str:
        return ("stdout:\n" + "\n".join(t for _, t in self.out) + "\nstderr:\n" + "\n".join(t for _, t in self.err))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def following():
    started = []

    def start(*args, **kwargs) -> Following:
        f = Following(*args, **kwargs)
        started.append(f)
        return f

    yield start
    for f in started:
        f.kill()


def append(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as out:
        out.writelines(lines)


def poll_timeout(text: str, count: int | None = None) -> bool:
    return "poll-timeout" in text and (count is None or f"{count} poll timeout(s)" in text)


def test_a_finding_shows_once_its_deciding_line_is_written_and_ctrl_c_prints_the_final_report(tmp_path, following):
    log = tmp_path / "node2.log"
    append(log, LINES[:DECIDING - 1])
    run = following(log)
    # The lines before the deciding one are read (the accounting will say so) and decide nothing.
    time.sleep(QUIET_S)
    assert not any(poll_timeout(t) for _, t in run.out), run.text()
    written = time.monotonic()
    append(log, [LINES[DECIDING - 1]])
    shown, text = run.wait_for(poll_timeout)
    assert shown >= written
    assert shown - written < 5.0, f"the finding came {shown - written:.2f} s after its line"
    assert text.startswith("NEW") and "warning poll-timeout in group payments" in text
    assert "1 poll timeout(s)" in text
    # The incident goes on: the same finding is updated, never printed as new again.
    for line in LINES[DECIDING:]:
        append(log, [line])
    run.wait_for(lambda t: poll_timeout(t, 5))
    code = run.stop(signal.SIGINT)
    finding_lines = [t for _, t in run.out if poll_timeout(t) and t.split()[0] in ("NEW", "UPDATED")]
    assert [t.split()[0] for t in finding_lines].count("NEW") == 1, run.text()
    assert all(t.split()[0] == "UPDATED" for t in finding_lines[1:])
    # Ctrl-C: the usual report, and the exit code it earns (1: a finding at warning or above).
    assert code == 1, run.text()
    out = "\n".join(t for _, t in run.out)
    assert "ANSWER   CRITICAL poll-timeout in group payments" in out
    assert any("read 1 file(s)" in t and "138 lines" in t for _, t in run.err), run.text()


def test_json_lines_and_sigterm(tmp_path, following):
    log = tmp_path / "node2.log"
    append(log, LINES[:40])
    run = following(log, "--format", "json")
    _, text = run.wait_for(lambda t: t.startswith("{") and '"poll-timeout"' in t)
    row = json.loads(text)
    assert row["state"] == "new" and row["rule"] == "poll-timeout" and row["group"] == "payments"
    append(log, LINES[40:])
    _, text = run.wait_for(lambda t: '"updated"' in t and "5 poll timeout(s)" in t)
    assert json.loads(text)["culprit"]["client"] == "consumer-payments-1"
    code = run.stop(signal.SIGTERM)
    assert code == 1, run.text()
    document = json.loads(run.out[-1][1])   # the final report: analyze's JSON document, on its own line
    assert document["answer"]["rule"] == "poll-timeout"
    for _, line in run.out[:-1]:
        assert json.loads(line)["state"] in ("new", "updated", "withdrawn")


def test_copytruncate_rotation_keeps_following(tmp_path, following):
    log = tmp_path / "node2.log"
    append(log, LINES[:20])
    run = following(log)
    run.wait_for(lambda t: poll_timeout(t, 1))
    # logrotate's copytruncate: a copy, then the file cut to 0 bytes in place; the writer goes on.
    shutil.copy(log, tmp_path / "node2.log.1")
    os.truncate(log, 0)
    run.wait_for(lambda t: "cut short" in t, run.err)
    append(log, LINES[20:])
    run.wait_for(lambda t: poll_timeout(t, 5))
    assert run.stop() == 1
    out = "\n".join(t for _, t in run.out)
    assert "node2.log#2:" in out or "node2.log#2" in "\n".join(t for _, t in run.err), run.text()


def test_copytruncate_then_written_past_the_old_size_before_the_next_poll(tmp_path, following):
    log = tmp_path / "node2.log"
    append(log, LINES[:20])
    run = following(log)
    run.wait_for(lambda t: poll_timeout(t, 1))
    run.process.send_signal(signal.SIGSTOP)   # no poll while the file is cut and written past its old size
    try:
        shutil.copy(log, tmp_path / "node2.log.1")
        os.truncate(log, 0)
        append(log, LINES[20:])
        assert log.stat().st_size > len(b"".join(LINES[:20]))
    finally:
        run.process.send_signal(signal.SIGCONT)
    run.wait_for(lambda t: "cut short" in t and "written again" in t, run.err)
    run.wait_for(lambda t: poll_timeout(t, 5))     # every line after the cut read from its start
    assert run.stop() == 1


def test_rename_rotation_in_a_followed_directory(tmp_path, following):
    log = tmp_path / "node2.log"
    append(log, LINES[:20])
    run = following(tmp_path, "--format", "json")
    run.wait_for(lambda t: '"poll-timeout"' in t and "1 poll timeout(s)" in t)
    # A rename rotation: the file moved away, a new one created at the path, written to from then on.
    os.rename(log, tmp_path / "node2.log.1")
    append(log, LINES[20:])
    run.wait_for(lambda t: '"poll-timeout"' in t and "5 poll timeout(s)" in t)
    assert run.stop() == 1
    document = json.loads(run.out[-1][1])
    # Every line read once: the renamed file (node2.log.1) is not read again.
    assert document["findings"][0]["summary"].startswith("5 poll timeout(s)")
    assert any("node2.log.1" in t and "not read again" in t for _, t in run.err), run.text()


def test_a_new_file_in_a_followed_directory_is_picked_up(tmp_path, following):
    (tmp_path / "broker-1").mkdir()
    run = following(tmp_path)
    append(tmp_path / "node2.log", LINES)
    _, text = run.wait_for(lambda t: poll_timeout(t, 5))
    assert "culprit consumer-payments-1@node2" in text
    run.wait_for(lambda t: "node2.log: a new file" in t, run.err)
    assert run.stop() == 1


def test_standard_input_is_followed_until_closed_and_the_follow_goes_on(tmp_path, following):
    run = following("-", stdin=subprocess.PIPE)
    for line in LINES[:DECIDING]:
        run.process.stdin.write(line.decode())
    run.process.stdin.flush()
    run.wait_for(lambda t: poll_timeout(t, 1))
    for line in LINES[DECIDING:]:
        run.process.stdin.write(line.decode())
    run.process.stdin.close()
    run.wait_for(lambda t: poll_timeout(t, 5))
    run.wait_for(lambda t: "closed by its writer" in t, run.err)
    assert run.process.poll() is None   # still following (until Ctrl-C)
    assert run.stop() == 1
    assert any("<stdin>" in t for _, t in run.err)


def test_a_deleted_file_is_a_note_and_the_follow_goes_on(tmp_path, following):
    log = tmp_path / "node2.log"
    other = tmp_path / "node3.log"
    append(log, LINES[:20])
    append(other, [])
    run = following(log, other)
    run.wait_for(lambda t: poll_timeout(t, 1))
    log.unlink()
    run.wait_for(lambda t: "removed" in t, run.err)
    time.sleep(QUIET_S)
    notes = [t for _, t in run.err if "node2.log" in t and "removed" in t]
    assert len(notes) == 1, run.text()                  # one line, said once
    # Following goes on: the other file and the path itself (a file created there again).
    append(log, LINES[20:])
    run.wait_for(lambda t: poll_timeout(t) and "poll timeout(s)" in t and "1 poll timeout(s)" not in t)
    assert run.stop() == 1
    out = "\n".join(t for _, t in run.out)
    assert "ANSWER   CRITICAL poll-timeout" in out       # nothing already read was lost


def test_a_file_replaced_by_a_binary_is_a_note(tmp_path, following):
    log = tmp_path / "node2.log"
    append(log, LINES[:20])
    run = following(log)
    run.wait_for(lambda t: poll_timeout(t, 1))
    replacement = tmp_path / "new"
    replacement.write_bytes(bytes(range(256)) * 64)
    os.replace(replacement, log)
    run.wait_for(lambda t: "binary" in t, run.err)
    assert run.process.poll() is None
    assert run.stop() == 1


def test_follow_without_anything_to_follow_is_a_usage_error(tmp_path):
    import gzip

    packed = tmp_path / "node2.log.gz"
    packed.write_bytes(gzip.compress(NODE2.read_bytes()))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # (--redact works with --follow: tests/test_redact.py; a --redact-map to standard output is refused.)
    for args in ([packed], [tmp_path / "missing.log"], [NODE2, "--redact-map", "-"]):
        done = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", "analyze", "--follow", *map(str, args)],
                              capture_output=True, text=True, timeout=WAIT_S * 4, cwd=REPO, env=env)
        assert done.returncode == 2, done.stderr
        assert "error:" in done.stderr


# ---------------------------------------------------------------- the parsing of pieces, in process

@pytest.mark.parametrize("fixture", ["application-shutdown/billing-b.log", "poll-timeout-storm/node2.log"])
def test_a_text_fed_in_pieces_gives_the_events_of_one_read(fixture, tmp_path):
    """Cut anywhere (inside a stack trace, inside a line), with pauses between pieces, the events
    are those of reading the file at once: multi-line records stay whole."""
    from rebalance_doctor.core.growing import GrowingText
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.core.reader import toolkit
    from rebalance_doctor.core.sources import discover

    path = REPO / "fixtures" / "incidents" / fixture
    data = path.read_bytes()
    expected, _ = events_of(path)
    copy = tmp_path / path.name
    copy.write_bytes(data)
    source = discover([str(copy)]).sources[0]
    options = ReadOptions()
    shown = lambda events: sorted((e["line"], e["event"], e["group"], e["ts"], e["member"], str(e["attrs"]))
                                  for e in events)
    rng = random.Random(7)
    for pauses in (False, True):
        text = GrowingText(source, options, toolkit(options))
        got: list[dict] = []
        at = 0
        while at < len(data):
            size = rng.choice([1, 7, 80, 300, 2000, 9000])
            got += text.feed(data[at:at + size])
            at += size
            # The writer pauses between records (a logger writes a record in one go): what is held is parsed.
            if pauses and rng.random() < 0.2 and data[:at].endswith(b"\n") and data[at:].startswith(b"2024-"):
                got += text.flush()
        got += text.close()
        assert shown(got) == shown(expected)


def test_on_a_terminal_a_live_screen_then_the_final_report(tmp_path):
    """stdout a terminal (a pty): the live screen shows the answer, the groups, the findings and the
    rebalances as the lines come; Ctrl-C leaves it for the usual report and its exit code."""
    import pty

    log = tmp_path / "node2.log"
    append(log, LINES[:DECIDING - 1])
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color", "COLUMNS": "140", "LINES": "60"}
    process = subprocess.Popen([sys.executable, "-m", "rebalance_doctor.cli", "analyze", "--follow", str(log)],
                               stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, cwd=REPO, env=env)
    os.close(slave)
    screen = []

    def collect() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            screen.append(data.decode(errors="replace"))

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while "none so far" not in "".join(screen):
            assert time.monotonic() < deadline, "".join(screen)
            time.sleep(0.05)
        append(log, LINES[DECIDING - 1:])
        while not all(word in "".join(screen) for word in ("poll-timeout", "last rebalances")):
            assert time.monotonic() < deadline, "".join(screen)
            time.sleep(0.05)
        shown = "".join(screen)
        assert "ANSWER" in shown and "groups" in shown and "findings" in shown and "payments" in shown
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=WAIT_S) == 1
        reader.join(timeout=WAIT_S)
        assert "ANSWER   " in "".join(screen)[len(shown):]     # the final report, after the live screen
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def test_findings_are_reported_by_key_new_updated_withdrawn_never_repeated():
    """The diff of two diagnoses (``live.Live._changes``): keyed by rule, group and culprit."""
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.finding import Finding
    from rebalance_doctor.timeline.model import Culprit

    def finding(summary, client=None, rule="poll-timeout", group="payments"):
        return Finding(rule=rule, severity="warning", group=group, title="t", summary=summary, start=None, end=None,
                       culprit=Culprit(host="node2", client=client) if client else None)

    live = Live.__new__(Live)   # the diff alone: no inputs
    live.reported = {}
    states = lambda changes: [(c.state, c.finding.summary) for c in changes]
    assert states(live._changes([finding("1 timeout", "c1")])) == [("new", "1 timeout")]
    assert live._changes([finding("1 timeout", "c1")]) == []                       # unchanged: not repeated
    assert states(live._changes([finding("2 timeouts", "c1")])) == [("updated", "2 timeouts")]
    # The culprit changed (the one before no longer holds): that finding updated, not a new one.
    assert states(live._changes([finding("1 timeout", "c2")])) == [("updated", "1 timeout")]
    # Two culprits at once: two findings; one of them gone later is withdrawn, once.
    assert states(live._changes([finding("1 timeout", "c2"), finding("3 timeouts", "c3")])) == [("new", "3 timeouts")]
    assert states(live._changes([finding("3 timeouts", "c3")])) == [("withdrawn", "the lines read since explain "
                                                                                  "it otherwise (culprit was c2)")]
    live.reported = {}
    live._changes([finding("storm", None, rule="rebalance-storm")])
    # A culprit named later: the same finding updated, not a new one beside a withdrawn one.
    assert states(live._changes([finding("storm", "c1", rule="rebalance-storm")])) == [("updated", "storm")]
    assert [c.state for c in live._changes([])] == ["withdrawn"]
    assert live._changes([]) == []


def test_the_reader_of_the_lines_going_away_ends_the_follow(tmp_path):
    """An alerter that reads the lines dies: at the next line the follow ends, with its report's code."""
    log = tmp_path / "node2.log"
    append(log, LINES[:DECIDING])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-m", "rebalance_doctor.cli", "analyze", "--follow", str(log)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO, env=env, text=True)
    try:
        assert poll_timeout(process.stdout.readline())
        process.stdout.close()
        append(log, LINES[DECIDING:])     # more poll timeouts: an updated line, which meets the closed pipe
        assert process.wait(timeout=WAIT_S) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


INCIDENTS = sorted(p for p in (REPO / "fixtures" / "incidents").iterdir() if p.is_dir())


@pytest.mark.parametrize("incident", INCIDENTS, ids=lambda p: p.name)
def test_the_final_diagnosis_of_a_follow_is_that_of_analyze(incident, tmp_path):
    """Every shipped incident written into a followed directory in pieces (each file in three, cut
    inside lines): the follow's final findings and rebalances are analyze's on the same files."""
    from rebalance_doctor import api
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load

    files = [p for p in sorted(incident.rglob("*")) if p.is_file() and p.name != "expected.toml"]
    target = tmp_path / incident.name
    target.mkdir()
    for path in files:
        (target / path.relative_to(incident)).parent.mkdir(parents=True, exist_ok=True)
    live = Live([str(target)], ReadOptions(), load(None))
    for third in range(3):
        for path in files:
            data = path.read_bytes()
            cut = slice(len(data) * third // 3, len(data) * (third + 1) // 3)
            with open(target / path.relative_to(incident), "ab") as out:
                out.write(data[cut])
        live.step()
    live.step(final=True)
    followed = live.result()
    expected = api.analyze(str(target))
    shown = lambda a: sorted((f.rule, f.group, f.severity, f.summary, f.culprit.label if f.culprit else None)
                             for f in a.findings)
    assert shown(followed) == shown(expected)
    rebalances = lambda a: [(r.group, r.generation, r.start, r.outcome, r.operation, r.verdict) for r in a.rebalances]
    assert rebalances(followed) == rebalances(expected)


# -- bounded for hours (rebalance_doctor/fold.py) ---------------------------------------------------------

STAMPED = re.compile(rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")


def _pass(offset: timedelta, group: str | None = None, generations: int = 0) -> bytes:
    """node2.log moved ``offset`` later in log time, its group renamed, its generations moved on (a group
    that keeps rebalancing reaches new generations; a repeated pass with the same ones would be merged)."""
    out = []
    for line in LINES:
        m = STAMPED.match(line)
        if m:
            t = datetime.strptime(m[1].decode(), "%Y-%m-%d %H:%M:%S") + timedelta(milliseconds=int(m[2])) + offset
            line = (t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}").encode() + line[m.end():]
        if group:
            line = line.replace(b"payments", group.encode())
        line = re.sub(rb"generationId=(\d+)", lambda g: b"generationId=%d" % (int(g[1]) + generations), line)
        out.append(line)
    return b"".join(out)


def _follow_growing(tmp_path, passes) -> tuple:
    """A log written pass after pass while a follow session reads it (in-process; its clock moves a second a
    step, so that every step reads, ends the held-back record and diagnoses): the session, and the events it
    held after each pass."""
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load

    log = tmp_path / "node2.log"
    log.write_bytes(b"")
    ticks = iter(range(1, 10**9))
    live = Live([str(log)], ReadOptions(), load(None), clock=lambda: float(next(ticks)))
    held = []
    for data in passes:
        with open(log, "ab") as out:
            out.write(data)
        live.step()
        live.step()
        held.append((live.events_read, len(live.events)))
    live.step(final=True)
    return live, log, held


def _findings(a):
    return sorted((f.rule, f.group, f.severity, f.title, f.summary, f.culprit.label if f.culprit else None,
                   [(x.name, x.value) for x in getattr(f, "figures", None) or []]) for f in a.findings)


def _totals(a):
    """Rebalances per group: those the analysis shows and those folded before it."""
    return {g.timeline.group: len(g.timeline.rebalances) + (g.timeline.folded.rebalances if g.timeline.folded else 0)
            for g in a.groups}


def test_a_group_rebalancing_for_hours_is_held_one_window_and_counted_whole(tmp_path):
    """One group storming for 5 log-hours (30 passes of node2.log 10 minutes apart, 150 poll timeouts by one
    member): the events held stop growing after the rules' longest window (60 min) while the events read grow
    on, and the final findings (with their figures) and rebalance totals are analyze's of the same file."""
    from rebalance_doctor import api

    passes = 30
    live, log, held = _follow_growing(tmp_path, [_pass(timedelta(minutes=10 * i), generations=10 * i)
                                                 for i in range(passes)])
    per_pass = len(events_of(NODE2)[0])
    assert held[-1][0] == passes * per_pass
    window_passes = 60 // 10 + 2        # the horizon, the rebalance it cuts back to, the pass being read
    assert max(n for _, n in held) <= window_passes * per_pass
    assert held[-1][1] < held[-1][0] / 4
    followed, expected = live.result(), api.analyze(str(log))
    assert _findings(followed) == _findings(expected)
    assert _totals(followed) == _totals(expected) == {"payments": 5 * passes}
    timeouts = next(x.value for x in followed.findings[0].figures if x.name == "poll_timeouts")
    assert timeouts == 5 * passes


def test_groups_that_come_and_go_are_folded_whole_and_their_findings_kept(tmp_path):
    """An incident of a new group every 3 log-hours: each group's lines are dropped once the next is read,
    its findings stay as reported, and the whole is analyze's of the same file."""
    from rebalance_doctor import api

    passes = 8
    live, log, held = _follow_growing(tmp_path, [_pass(timedelta(hours=3 * i), f"payments-{i}")
                                                 for i in range(passes)])
    per_pass = len(events_of(NODE2)[0])
    assert [read for read, _ in held] == [per_pass * (i + 1) for i in range(passes)]
    assert all(n <= per_pass for _, n in held)
    followed, expected = live.result(), api.analyze(str(log))
    assert _findings(followed) == _findings(expected)
    assert _totals(followed) == _totals(expected) == {f"payments-{i}": 5 for i in range(passes)}


# -- a group named otherwise mid-follow is renamed, not split ---------------------------------------------------

def _step_all(live) -> list:
    return [(c.state, c.finding.rule, c.finding.group) for c in live.step() + live.step()]


def test_a_group_first_gathered_unnamed_then_named_by_a_later_line_is_one_group(tmp_path):
    """The lab's librdkafka recording (three members at the default log level, their application's rebalance
    callbacks, and the broker), each file growing ten lines a step: the members' short logs are read long before
    the coordinator's lines that name their group, so their lines are first one group under a name made up from
    the processes ("consumers of orders on app-1, ...") and the poll timeout is reported there. Once the
    coordinator's lines come, the group is orders: renamed, not split in two. The poll-timeout finding is shown
    again as updated under orders, never withdrawn; the final report is analyze's (one group, orders)."""
    from rebalance_doctor import api
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load
    from rebalance_doctor.timeline.unnamed import UNNAMED

    for log in (REPO / "fixtures" / "lab" / "librdkafka-poll-timeout@4.4.0").glob("*.log"):
        shutil.copy(log, tmp_path / log.name)
    expected = api.analyze([tmp_path])
    texts = {}
    for log in sorted(tmp_path.glob("*.log")):
        texts[log] = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"")
    ticks = iter(range(1, 10**9))
    live = Live([str(tmp_path)], ReadOptions(), load(None), clock=lambda: float(next(ticks)))
    changes = []
    try:
        written = 0
        while any(written < len(lines) for lines in texts.values()):
            for path, lines in texts.items():
                with open(path, "ab") as out:
                    out.write(b"".join(lines[written:written + 10]))
            written += 10
            changes += _step_all(live)
        live.step(final=True)
        followed = live.result()
    finally:
        live.close()
    assert [g.timeline.group for g in followed.groups] == [g.timeline.group for g in expected.groups] == ["orders"]
    assert [(f.rule, f.group) for f in followed.findings] == [(f.rule, f.group) for f in expected.findings]
    timeouts = [c for c in changes if c[1] == "poll-timeout"]
    assert timeouts[0][0] == "new" and UNNAMED in timeouts[0][2]          # first under the made-up name
    assert ("updated", "poll-timeout", "orders") in timeouts               # then renamed
    assert not [c for c in changes if c[0] == "withdrawn"]


def test_a_group_folded_under_its_bare_name_is_keyed_when_a_second_cluster_appears(tmp_path):
    """prod/node2.log storms for two log-hours (12 passes of the poll-timeout incident, 10 minutes apart) while it
    is the only cluster: its group is plain payments, and most of it is folded under that name. Then staging's
    log appears: two clusters, so the groups are keyed. payments is renamed prod/payments (its folded rebalances and
    its reported findings with it), beside staging/payments, never a third group payments; the findings, their
    figures and the rebalance totals are analyze's of the whole bundle."""
    from rebalance_doctor import api
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load

    clusters = {str(tmp_path / "prod"): "prod", str(tmp_path / "staging"): "staging"}
    (tmp_path / "prod").mkdir()
    (tmp_path / "staging").mkdir()
    prod = tmp_path / "prod" / "node2.log"
    prod.write_bytes(b"")
    passes = 12
    ticks = iter(range(1, 10**9))
    live = Live([str(tmp_path)], ReadOptions(clusters=clusters), load(None), clock=lambda: float(next(ticks)))
    changes = []
    try:
        for i in range(passes):
            with open(prod, "ab") as out:
                out.write(_pass(timedelta(minutes=10 * i), generations=10 * i))
            changes += _step_all(live)
        before = live.result()
        assert [g.timeline.group for g in before.groups] == ["payments"]
        assert before.groups[0].timeline.folded.rebalances > 0            # folded under the bare name
        # (named apart from prod's: a file named alike that appears later keeps its file's host name, docs/analyze.md)
        (tmp_path / "staging" / "node3.log").write_bytes(_pass(timedelta(minutes=10 * passes)))
        changes += _step_all(live)
        live.step(final=True)
        followed = live.result()
    finally:
        live.close()
    expected = api.analyze([tmp_path], clusters=clusters)
    assert sorted(g.timeline.group for g in followed.groups) == ["prod/payments", "staging/payments"]
    assert _totals(followed) == _totals(expected) == {"prod/payments": 5 * passes, "staging/payments": 5}
    assert _findings(followed) == _findings(expected)
    assert ("updated", "poll-timeout", "prod/payments") in changes
    assert not [c for c in changes if c[0] == "withdrawn"]


# -- the diagnosis in the background (live.Live(background=True), what the command runs) ------------------

def test_reading_goes_on_while_a_diagnosis_runs(tmp_path, monkeypatch):
    """A diagnosis held up (it waits on a gate here) does not hold up the reading: the lines written meanwhile,
    the deciding one among them, are read and parsed; once it ends its changes come with the next step, the
    lines read meanwhile are diagnosed next, and the end is analyze's of the same file."""
    import threading

    from rebalance_doctor import api
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import NEW, Live
    from rebalance_doctor.rules.config import load

    gate, entered, real = threading.Event(), threading.Event(), api.diagnose

    def held_up(*args, **kwargs):
        entered.set()
        assert gate.wait(WAIT_S), "the test never opened the gate"
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "diagnose", held_up)
    log = tmp_path / "node2.log"
    log.write_bytes(b"".join(LINES[:DECIDING - 1]))
    ticks = iter(range(1, 10**9))
    live = Live([str(log)], ReadOptions(), load(None), clock=lambda: float(next(ticks)), background=True)
    try:
        assert live.step() == []
        assert entered.wait(WAIT_S), "a diagnosis started"
        first = live.events_read
        append(log, LINES[DECIDING - 1:])
        for _ in range(3):
            assert live.step() == []          # reading, while the diagnosis waits
        assert live.events_read == len(events_of(NODE2)[0]) > first
        assert live.analysis is None
        gate.set()
        live._job.done.wait(WAIT_S)
        live.step()                           # the first diagnosis's changes (none: no poll timeout read then)
        changes = live.step(final=True)       # the lines read meanwhile, diagnosed
        assert any(c.state == NEW and c.finding.rule == "poll-timeout" for c in changes)
        followed = live.result()
    finally:
        gate.set()
        live.close()
    expected = api.analyze(str(log))
    assert sorted((f.rule, f.title) for f in followed.findings) == sorted((f.rule, f.title) for f in expected.findings)
