"""Command-line conventions: choices in --help and in shell completion, stdin, `| head`, filters
that match nothing, `rules explain` rendered, `patterns test -`."""

from __future__ import annotations

import importlib.util
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rebalance_doctor.cli.app import app

REPO = Path(__file__).resolve().parents[1]
STORM = str(REPO / "fixtures" / "incidents" / "poll-timeout-storm")
runner = CliRunner()
# The console script's own code path (main(): the early exit, broken pipes), as a subprocess.
MAIN = "import sys; sys.argv[0] = 'rebalance-doctor'; from rebalance_doctor.cli.app import main; main()"


def invoke(*args, **kwargs):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"}, **kwargs)


def run(*args, env=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", MAIN, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})}, **kwargs)


def test_help_shows_the_choices():
    analyze = " ".join(invoke("analyze", "--help").stdout.split())
    assert "<human|json|markdown>" in analyze and "<auto|local|spark>" in analyze
    assert "<critical|warning|info|never>" in analyze
    # (the list ends with the non-Java clients' layouts, kept in their own section of layouts.toml)
    assert "A shipped layout (kafka, kafka-connect," in analyze and "quarkus-json," in analyze
    assert "ruby-logger," in analyze
    assert "<jsonl|csv|parquet>" in " ".join(invoke("events", "--help").stdout.split())
    assert "<table|csv|json>" in " ".join(invoke("query", "--help").stdout.split())
    bad = invoke("analyze", STORM, "--format", "text")
    assert bad.exit_code == 2 and "'text' is not one of 'human', 'json', 'markdown'" in bad.stderr


def _complete(words: str) -> list[str]:
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    done = run(env={"_REBALANCE_DOCTOR_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)})
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.slow
def test_shell_completion_of_choices_layouts_and_rules():
    assert _complete("rebalance-doctor analyze --format ") == ["human", "json", "markdown"]
    assert _complete("rebalance-doctor analyze --engine ") == ["auto", "local", "spark"]
    assert _complete("rebalance-doctor events --layout spring") == ["spring-boot", "spring-boot-3"]
    assert _complete("rebalance-doctor rules explain poll") == ["poll-timeout"]
    assert "query" in _complete("rebalance-doctor ")


def test_install_completion_is_offered():
    text = invoke("--help").stdout
    assert "--install-completion" in text and "--show-completion" in text
    shown = run("--show-completion", "bash")
    assert shown.returncode == 0 and "_REBALANCE_DOCTOR_COMPLETE=complete_bash" in shown.stdout


def test_rules_explain_is_rendered():
    out = invoke("rules", "explain", "poll-timeout").stdout
    assert "``" not in out and "-------" not in out, "reStructuredText shown raw"
    assert out.lstrip().startswith("poll-timeout")
    for heading in ("Symptom", "Why it happens", "Remediation", "Thresholds:"):
        assert heading in out
    assert "consumer poll timeout has expired" in out


def test_patterns_test_reads_stdin():
    line = ("[2024-03-05 10:00:00,003] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state "
            "PreparingRebalance with old generation 12 (__consumer_offsets-8) (reason: Removing member c-1 on "
            "LeaveGroup) (kafka.coordinator.group.GroupCoordinator)\n")
    result = invoke("patterns", "test", "-", input=line)
    assert result.exit_code == 0, result.stderr
    assert "event:   rebalance.prepare" in result.stdout and "generation: 12" in result.stdout
    empty = invoke("patterns", "test", "-", input="")
    assert empty.exit_code == 2 and "standard input was empty" in empty.stderr


def test_a_filter_that_matches_nothing_says_so_and_lists_what_exists():
    result = invoke("analyze", STORM, "-q", "--group", "nosuchgroup")
    assert result.exit_code == 2, "not a healthy run"
    assert result.stdout == ""
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("error: no events of group nosuchgroup in the input; it holds groups payments (")
    late = invoke("analyze", STORM, "-q", "--since", "2030-01-01")
    assert late.exit_code == 2 and "from 2024-03-05T10:00:00Z" in late.stderr


def _drain(fd: int, until: str, seconds: float = 60) -> str:
    seen, deadline = b"", time.monotonic() + seconds
    while until.encode() not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen.decode(errors="replace")


def test_stdin_on_a_terminal_says_it_waits():
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", MAIN, "analyze", "-", "-q"], cwd=REPO, stdin=slave,
                               stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    try:
        said = _drain(master, "Ctrl-D")
        assert "reading logs from standard input (a terminal)" in said
        os.write(master, b"\x04")  # end of input
        process.wait(timeout=120)
        assert process.returncode == 2  # nothing could be read
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def _head(args: list[str], lines: int = 1) -> subprocess.CompletedProcess:
    """`rebalance-doctor ARGS | head -LINES`: the reader goes away after a few lines."""
    process = subprocess.Popen([sys.executable, "-c", MAIN, *args], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "120"})
    try:
        for _ in range(lines):
            process.stdout.readline()
        process.stdout.close()
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(args, process.returncode, "", stderr.decode())


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly():
    for args, code in ((["patterns", "list"], 0), (["schema"], 0), (["rules", "list"], 0),
                       (["events", str(REPO / "fixtures"), "-q"], 0), (["analyze", STORM, "-q", "--details"], 1),
                       # rich's own broken-pipe handler exits 1, which is "findings": a clean run and
                       # a query must keep their 0.
                       (["analyze", str(REPO / "fixtures" / "incidents" / "healthy-scale-out"), "-q", "--details"], 0),
                       (["rules", "explain", "poll-timeout"], 0)) + (
                      ((["query", "select * from events", STORM, "-q"], 0),) if importlib.util.find_spec("duckdb") else ()):
        done = _head(args)
        assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr, (args, done.stderr)
        assert "BrokenPipeError" not in done.stderr and "error:" not in done.stderr, (args, done.stderr)
        assert done.returncode == code, (args, done.returncode, done.stderr)
