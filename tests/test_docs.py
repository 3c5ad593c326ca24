"""Docs that are true: every command line and option that README.md and docs/ show exists.

Every `rebalance-doctor COMMAND ... --option` in a code block or inline code of the README and
docs/*.md must be an option of that command (its --help); claims about the accounting, the
schema command and the dev commands are tried here too.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rebalance_doctor.cli.app import app

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
STORM = str(REPO / "fixtures" / "incidents" / "poll-timeout-storm")
COMMANDS = ("analyze", "events", "batch", "query", "schema", "rules list", "rules explain", "rules docs",
            "patterns check", "patterns list", "patterns show", "patterns test")
runner = CliRunner()


@lru_cache(maxsize=None)
def options_of(command: str) -> frozenset[str]:
    result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, (command, result.output)
    return frozenset(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", result.stdout))


def _command_lines(text: str):
    """(command, options) of every `rebalance-doctor ...` line in code, and of inline code that
    starts with a command name (`events --unmatched FILE`)."""
    spans = re.findall(r"`([^`\n]+)`", text)
    blocks = [line for line in text.splitlines() if line.startswith("    ") or not line.strip().startswith("#")]
    candidates = []
    for line in blocks + spans:
        for match in re.finditer(r"rebalance-doctor\s+([a-z]+(?:\s+[a-z]+)?)([^|;&`]*)", line):
            candidates.append((match.group(1), match.group(2)))
    for span in spans:
        match = re.match(r"(analyze|events|batch|query)\s+(.*)", span)
        if match:
            candidates.append((match.group(1), " " + match.group(2)))
    for words, rest in candidates:
        command = next((c for c in sorted(COMMANDS, key=len, reverse=True) if (words + " ").startswith(c + " ")
                        or words == c), None)
        if command is None:
            continue
        yield command, re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_documented_option_exists(doc: Path):
    unknown = []
    for command, options in _command_lines(doc.read_text(encoding="utf-8")):
        for option in options:
            if option not in options_of(command) and option not in ("--help", "--version"):
                unknown.append(f"{command} {option}")
    assert not unknown, f"{doc.name} documents options that do not exist: {sorted(set(unknown))}"


def test_known_false_claims_are_gone():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "ends with an accounting" not in readme
    assert "~0.5 s" not in readme
    events = (REPO / "docs" / "events.md").read_text(encoding="utf-8")
    assert "events --schema" not in events


def test_every_reading_command_prints_the_accounting(tmp_path: Path):
    for args in (["analyze", STORM, "-q"], ["events", STORM, "-q", "-o", str(tmp_path / "e.jsonl")],
                 ["query", "select 1", STORM, "-q"]):
        result = runner.invoke(app, args)
        assert result.exit_code in (0, 1), (args, result.stderr)
        assert re.search(r"^read 4 file\(s\), .* 330 events, .*1 skipped", result.stderr, re.M), (args, result.stderr)


def test_schema_prints_the_events_columns():
    out = runner.invoke(app, ["schema"]).stdout
    assert out.splitlines()[0].split()[:2] == ["ts", "timestamp"] and "message" in out


def test_unmatched_lists_near_misses(tmp_path: Path):
    log = tmp_path / "node1.log"
    log.write_text("[2024-03-05 10:00:00,000] INFO [Consumer clientId=c-1, groupId=g] Preparing to rebalance "
                   "something we do not know (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)\n")
    out = tmp_path / "misses.jsonl"
    result = runner.invoke(app, ["events", str(log), "-q", "-o", str(tmp_path / "e.jsonl"), "--unmatched", str(out)])
    assert result.exit_code == 0 and out.exists()
