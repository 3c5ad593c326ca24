"""`rebalance-doctor patterns check|list|show|test`, and --packs on a command that reads logs."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli
from test_packs import JOIN_LINE, WIDGET, WIDGET_LINE, write_fixture, write_pack


@pytest.mark.slow
def test_check_passes_on_the_repository():
    result = run_cli("patterns", "check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("patterns check: ") and result.stdout.rstrip().endswith(": ok")


def test_check_fails_with_a_clear_message_on_a_broken_pattern(tmp_path):
    packs = write_pack(tmp_path / "packs", WIDGET.replace("at generation (?P<generation>", "at epoch (?P<generation>"))
    fixtures = write_fixture(tmp_path / "fx", "team.widget.rebalance", WIDGET_LINE)
    result = run_cli("patterns", "check", "--packs", str(packs), "--fixtures", str(fixtures))
    assert result.returncode == 1
    assert "error: " in result.stderr and "team.widget.rebalance[0]: sample does not match its own variant" in result.stderr
    assert "2 problem(s)" in result.stderr


def test_check_fails_on_a_broken_fixture_line(tmp_path):
    packs = write_pack(tmp_path / "packs", WIDGET)
    fixtures = write_fixture(tmp_path / "fx", "team.widget.rebalance", WIDGET_LINE.replace("generation 7", "generation seven"))
    result = run_cli("patterns", "check", "--packs", str(packs), "--fixtures", str(fixtures))
    assert result.returncode == 1
    assert "team.log:2: expected team.widget.rebalance, no pattern read the record; closest: team.widget.rebalance[0]" in result.stderr


def test_check_with_a_missing_directory_is_a_usage_error(tmp_path):
    result = run_cli("patterns", "check", "--fixtures", str(tmp_path / "nope"))
    assert result.returncode == 2 and "no such fixtures" in result.stderr


def test_list_and_show():
    listed = run_cli("patterns", "list")
    assert listed.returncode == 0
    ids = [line.split()[0] for line in listed.stdout.splitlines()]
    assert "broker.rebalance.prepare" in ids and len(ids) == len(set(ids)) > 700
    shown = run_cli("patterns", "show", "broker.rebalance.prepare")
    assert shown.returncode == 0
    assert "event: rebalance.prepare" in shown.stdout and "kafka >=2.1,<4.1" in shown.stdout
    assert "logger: kafka.coordinator.group.GroupCoordinator" in shown.stdout
    unknown = run_cli("patterns", "show", "rebalance.prepare")
    assert unknown.returncode == 2 and "did you mean: broker.rebalance.prepare" in unknown.stderr


def test_test_names_layout_pattern_and_fields():
    result = run_cli("patterns", "test", JOIN_LINE.replace("(Re-)joining group", "Successfully joined group with generation "
                     "Generation{generationId=42, memberId='consumer-orders-1-6b1f', protocol='range'}"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "layout:  kafka" in out and "pattern: consumer.join.success" in out and "event:   join.success" in out
    for field in ("group: orders", "client: consumer-orders-1", "generation: 42", "member: consumer-orders-1-6b1f",
                  "protocol: range"):
        assert f"  {field}\n" in out


def test_test_on_a_near_miss_says_how_far_the_closest_pattern_got():
    line = JOIN_LINE.replace("(Re-)joining group", "Successfully joined group with generation forty-two")
    result = run_cli("patterns", "test", line)
    assert result.returncode == 1
    assert "pattern: none" in result.stdout
    assert "closest: consumer.join.success[0] matched 42 of 51 characters, stopping at 'forty-two'" in result.stdout


def test_test_reads_a_team_pack(tmp_path):
    packs = write_pack(tmp_path / "packs", WIDGET)
    result = run_cli("patterns", "test", WIDGET_LINE, "--packs", str(packs))
    assert result.returncode == 0, result.stderr
    assert "pattern: team.widget.rebalance" in result.stdout and "generation: 7" in result.stdout


def test_events_reads_lines_of_repeatable_team_packs(tmp_path):
    packs = write_pack(tmp_path / "packs", WIDGET)
    other = write_pack(tmp_path / "other", WIDGET.replace("team.widget", "team.gadget").replace("Widget", "Gadget"), name="team2")
    log = tmp_path / "app.log"
    log.write_text(WIDGET_LINE + "\n" + WIDGET_LINE.replace("Widget", "Gadget") + "\n" + JOIN_LINE + "\n")
    result = run_cli("events", str(log), "--packs", str(packs), "--packs", str(other), "-q")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["pattern"], r["generation"]) for r in rows] == [("team.widget.rebalance", 7), ("team.gadget.rebalance", 7),
                                                               ("consumer.join.start", None)]


@pytest.mark.slow
def test_check_coverage_prints_the_tables_per_component_and_release():
    from conftest import TEMPLATES

    if not TEMPLATES.is_file():
        pytest.skip("patterns/kafka/templates.jsonl is not present")
    result = run_cli("patterns", "check", "--coverage")
    assert result.returncode == 0, result.stderr
    assert "coverage of INFO, WARN and ERROR templates:" in result.stdout
    assert "| component | 2.4.0 | 2.8.0 | 3.0.0 | 3.3.1 | 3.6.0 | 3.9.0 | 4.0.0 | 4.1.0 | 4.2.0 |" in result.stdout
    for component in ("broker", "consumer", "streams", "connect"):
        assert f"\n| {component} | " in result.stdout


@pytest.mark.slow
def test_check_coverage_without_the_inventory_says_why(tmp_path):
    env = {"REBALANCE_DOCTOR_TEMPLATES": str(tmp_path / "templates.jsonl")}
    result = run_cli("patterns", "check", "--coverage", env=env)
    assert result.returncode == 5
    assert f"the Kafka template inventory {tmp_path / 'templates.jsonl'} is not there" in result.stderr
    assert "Traceback" not in result.stderr
