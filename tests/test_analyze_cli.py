"""`rebalance-doctor analyze` and `rules`: output formats, exit codes, filters, rule docs."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rebalance_doctor.cli.app import app
from rebalance_doctor.rules import RULE_IDS
from rebalance_doctor.rules.docs import markdown

REPO = Path(__file__).resolve().parents[1]
STORM = str(REPO / "fixtures" / "incidents" / "poll-timeout-storm")
HEALTHY = str(REPO / "fixtures" / "incidents" / "healthy-scale-out")
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def test_json_output_is_only_json_with_the_documented_keys():
    result = invoke("analyze", STORM, "--format", "json", "-q")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert set(doc) >= {"schema_version", "tool", "input", "groups", "findings", "accounting", "answer"}
    assert doc["schema_version"] == 2
    [group] = doc["groups"]
    assert (group["group"], group["kind"], group["protocol"]) == ("payments", "consumer", "classic")
    assert len(group["rebalances"]) == 10 and group["rebalances"][0]["trigger_kind"] == "poll-timeout"
    first = group["rebalances"][0]
    assert (first["protocol"], first["operation"], first["verdict"]) == ("eager", "poll-timeout", "harmful")
    assert first["culprit"]["host"] == "node2" and first["culprit"]["client"] == "consumer-payments-1"
    finding = doc["findings"][0]
    assert set(finding) == {"rule", "severity", "group", "title", "summary", "start", "end", "evidence", "remediation",
                            "cause", "caused", "culprit", "figures"}
    assert finding["severity"] == "critical" and set(finding["evidence"][0]) == {"source", "line", "text"}


def test_human_report_has_summary_findings_evidence_and_timeline():
    result = invoke("analyze", STORM, "-q")
    assert result.exit_code == 1
    out = result.stdout
    for text in ("ANSWER", "payments", "rebalances", "unstable", "CRITICAL", "poll-timeout", "node2.log:",
                 "generation timeline", "12->13"):
        assert text in out, text
    assert out.index("ANSWER") < out.index("generation timeline")


def test_fail_on_and_healthy_exit_codes():
    assert invoke("analyze", HEALTHY, "-q").exit_code == 0
    assert invoke("analyze", STORM, "-q", "--fail-on", "never").exit_code == 0
    assert invoke("analyze", STORM, "-q", "--fail-on", "critical").exit_code == 1
    assert invoke("analyze", STORM, "-q", "--fail-on", "bogus").exit_code == 2


def test_group_and_time_filters():
    other = invoke("analyze", STORM, "-q", "--group", "nope", "--format", "json")
    assert other.exit_code == 2 and other.stdout == "", "a filter that matches nothing is not a healthy run"
    assert "no events of group nope" in other.stderr and "payments (" in other.stderr
    early = invoke("analyze", STORM, "-q", "--until", "2024-03-05T10:00:30", "--format", "json")
    doc = json.loads(early.stdout)
    assert len(doc["groups"][0]["rebalances"]) == 2, "the first poll timeout and the rejoin after it"
    assert invoke("analyze", STORM, "-q", "--since", "not a time").exit_code == 2


def test_unreadable_input_and_bad_config_exit_2(tmp_path: Path):
    assert invoke("analyze", str(tmp_path / "missing.log"), "-q").exit_code == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[no-such-rule]\nx = 1\n")
    result = invoke("analyze", STORM, "-q", "--config", str(bad))
    assert result.exit_code == 2 and "no-such-rule" in result.stderr


def test_log_text_is_not_read_as_markup(tmp_path: Path):
    log = tmp_path / "node9.log"
    leave = ("[2024-03-05 10:00:00,000] INFO [Consumer clientId=c-1, groupId=g] Member c-[bold]x[/bold]-1 sending "
             "LeaveGroup request to coordinator b:9092 (id: 1 rack: null) due to consumer poll timeout has expired. "
             "(org.apache.kafka.clients.consumer.internals.AbstractCoordinator)")
    log.write_text(leave + "\n")
    result = invoke("analyze", str(log), "-q")
    assert "Member c-[bold]x[/bold]-1" in result.stdout


def test_rules_list_explain_and_docs_are_current():
    listed = invoke("rules", "list").stdout
    assert all(rule in listed for rule in RULE_IDS)
    explained = invoke("rules", "explain", "poll-timeout")
    assert explained.exit_code == 0 and "max.poll.interval.ms" in explained.stdout and "Remediation" in explained.stdout
    for rule in RULE_IDS:                 # every rule's documentation, issue 17's included
        explained = invoke("rules", "explain", rule)
        assert explained.exit_code == 0 and rule in explained.stdout, rule
        assert all(part in explained.stdout for part in ("Symptom", "Why it happens", "Remediation")), rule
    assert invoke("rules", "explain", "nope").exit_code == 2
    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == markdown(), \
        "docs/rules.md is stale: run rebalance-doctor rules docs -o docs/rules.md"


def test_brief_is_refused_with_json_instead_of_ignored():
    result = runner.invoke(app, ["analyze", STORM, "-q", "--brief", "--format", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "--brief is for the terminal and Markdown" in result.stderr
