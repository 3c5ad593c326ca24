"""Every shipped incident produces the findings its expected.toml lists, and none it forbids."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rebalance_doctor.diagnosis import analyze_events
from rebalance_doctor.rules import RULE_IDS
from tests.helpers import events_of, run_cli

INCIDENTS = Path(__file__).resolve().parents[1] / "fixtures" / "incidents"
CASES = sorted(p.parent for p in INCIDENTS.glob("*/expected.toml"))


def _analysis(directory: Path):
    events, stats = events_of(directory)
    assert stats.files_read >= 2, "an incident is a multi-file directory"
    return analyze_events(events)


SEVERITY = {"info": 0, "warning": 1, "critical": 2}
# Fixtures whose truth the diagnosis does not give yet (each a strict xfail: it fails loudly once fixed, so the
# entry is removed then). The simulator's accuracy table (docs/accuracy.md) measures the same on many more.
# Diagnosis gaps the simulator exposes (issue 16/17; owned by the diagnosis engineer): strict xfail, so a fix shows.
KNOWN = {
}


def _expected(directory: Path) -> dict:
    return tomllib.loads((directory / "expected.toml").read_text())


@pytest.mark.parametrize("directory", [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=KNOWN[c.name]))
                                       if c.name in KNOWN else c for c in CASES], ids=[c.name for c in CASES])
def test_incident_findings(directory: Path):
    """The truth of a simulated incident (TRUTH.md): each expected finding is a top-level finding of its group at
    that severity or above, with its evidence; the first one is the group's first finding and names the culprit;
    no forbidden rule is a top-level finding; a healthy incident has no warning."""
    expected = _expected(directory)
    findings = _analysis(directory).findings
    fired = {(f.rule, f.group) for f in findings}
    for item in expected.get("finding", []):
        matching = [f for f in findings if f.rule == item["rule"] and f.group == item["group"]]
        assert matching, f"{item['rule']} did not fire for {item['group']}; fired: {sorted(fired)}"
        assert SEVERITY[matching[0].severity] >= SEVERITY[item.get("severity", "warning")]
        refs = {e.ref() for f in matching for e in f.evidence}
        for ref in item.get("evidence", []):
            assert ref in refs, f"{item['rule']}: evidence {ref} missing from {sorted(refs)}"
        if item.get("first"):
            first = next(f for f in findings if f.group == item["group"])
            assert first.rule == item["rule"], f"first finding of {item['group']} is {first.rule}"
            for key, want in (item.get("culprit") or {}).items():
                assert getattr(first.culprit, key, None) == want, f"culprit {key}: {first.culprit}"
    for rule in expected.get("must_not_fire", []):
        assert rule not in {f.rule for f in findings}, f"{rule} fired but must not: " + \
            "; ".join(f.title for f in findings if f.rule == rule)
    if expected.get("healthy"):
        assert [f.title for f in findings if SEVERITY[f.severity] >= 1] == []


def test_every_rule_has_an_incident():
    """Every rule is expected by a shipped fixture or by a scenario of the simulator (the accuracy table runs
    those); the symptom rules a causal chain folds under its cause are exercised as symptoms."""
    from rebalance_doctor.sim.scenarios import SCENARIOS

    covered = {item["rule"] for c in CASES for item in _expected(c).get("finding", [])}
    covered |= {rule for spec in SCENARIOS.values() for rule in spec.rules}
    symptoms = {"rebalance-storm", "failed-rebalance-loop", "leader-churn", "cooperative-followup-loop",
                "missed-rebalance"}
    assert covered | symptoms | {"healthy-operation"} >= set(RULE_IDS)


@pytest.mark.parametrize("name", ["healthy-rolling-restart", "healthy-static-restart", "healthy-scale-out"])
def test_healthy_controls_raise_no_warning(name: str):
    analysis = _analysis(INCIDENTS / name)
    assert analysis.groups, "the control must still be read as a group"
    assert [f.title for f in analysis.findings if f.severity != "info"] == []
    assert [f.rule for f in analysis.findings][:1] == ["healthy-operation"], "the answer: a healthy operation"


def test_static_restart_is_not_a_rebalance():
    """The static member's return (same generation, "will not trigger rebalance") is not a rebalance."""
    directory = INCIDENTS / "healthy-static-restart"
    assert "will not trigger" in (directory / "broker-1" / "server.log").read_text()
    timeline = _analysis(directory).groups[0].timeline
    assert [r.generation for r in timeline.rebalances] == [r["generation"] for r in _expected(directory).get("rebalance", [])]


def test_readme_command_shows_a_finding():
    run = run_cli("analyze", INCIDENTS / "poll-timeout-storm", "--quiet")
    assert run.returncode == 1, run.stderr
    assert "poll-timeout" in run.stdout and "node2.log:" in run.stdout


def test_generated_fixtures_are_up_to_date(tmp_path):
    """fixtures/incidents/generate.py reproduces the committed files byte for byte.

    It runs on a copy of the directory (the script writes beside itself): rewriting the
    committed files in place raced with the tests reading them in another pytest-xdist worker."""
    copy = tmp_path / "fixtures" / "incidents"
    shutil.copytree(INCIDENTS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(INCIDENTS): p.read_bytes() for p in INCIDENTS.rglob("*") if p.is_file()
              and p.suffix in (".log", ".toml")}
    tree = str(INCIDENTS.parents[1])  # the copy's own sys.path entry has no package: the tree under test's
    subprocess.run([sys.executable, str(copy / "generate.py")], check=True, timeout=120,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))})
    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()
             and p.suffix in (".log", ".toml")}
    assert before == after


def test_skewed_host_clock_is_corrected_and_reported():
    """search-2 writes its times 40 s ahead; the timeline pairs its joins with the broker's and corrects them."""
    timeline = _analysis(INCIDENTS / "membership-flapping").groups[0].timeline
    assert abs(timeline.skew_ms["search-2"] - 40_000) < 100
    assert any("search-2" in note and "corrected" in note for note in timeline.notes)
    assert all(r.duration_ms < 5_000 for r in timeline.rebalances)


def test_group_kinds_and_protocols():
    kip848 = _analysis(INCIDENTS / "kip848-session-expired").groups[0].timeline
    assert (kip848.kind, kip848.protocol) == ("consumer", "consumer")
    truth = _expected(INCIDENTS / "kip848-session-expired")["rebalance"]
    assert [r.generation for r in kip848.rebalances] == [r["generation"] for r in truth], "one rebalance per group epoch"
    connect = _analysis(INCIDENTS / "connect-worker-poll-timeout").groups[0].timeline
    assert connect.kind == "connect" and connect.leaders == ["connect-1"]
    streams = _analysis(INCIDENTS / "probing-rebalance-cadence").groups[0].timeline
    assert streams.kind == "streams"


def test_real_third_party_logs(real_logs: Path):
    """Real excerpts (read in place, never copied): the coordinator's expirations are found."""
    cases = {"001-": ("heartbeat-expiration", "rbgh664"), "051-": ("coordinator-churn", "kale_scheduler_local"),
             "035-": ("missed-rebalance", "8dac1751-9c4e-4dc1-bc6f-c356c1a31c37")}
    for prefix, (rule, group) in cases.items():
        [path] = sorted(real_logs.glob(f"{prefix}*.log"))
        events, _ = events_of(path)
        findings = analyze_events(events).findings
        assert (rule, group) in {(f.rule, f.group) for f in findings}, f"{path.name}: {[f.rule for f in findings]}"
