"""Table-driven rule tests: small event stories, the rules that must (not) fire, and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_doctor.diagnosis import FINDING_COLUMNS, REBALANCE_COLUMNS, analyze_events, analyze_group
from rebalance_doctor.core.toml import DataFileError
from rebalance_doctor.rules import RULE_IDS, rule_module
from rebalance_doctor.rules import config as rule_config
from tests.test_timeline import MEMBER_A, MEMBER_B, classic_round, client, ev


def storm(rounds: int, gap: float) -> list[dict]:
    events = []
    for i in range(rounds):
        events += classic_round(i * gap, 40 + i, f"Removing member {MEMBER_B} on LeaveGroup; client reason: "
                                                 "consumer poll timeout has expired.", line=10 * i + 1)
        events.append(client(i * gap - 0.01, "poll.timeout", "node-b", "consumer-g-2", line=10 * i + 5))
    return events


def streams(seconds, event, host="node-a", **fields):
    return ev(seconds, event, host=host, component="streams", client=f"g-{'0' * 8}-0000-0000-0000-{'0' * 12}-StreamThread-1", **fields)


MEMBER_C = "consumer-g-3-6b1f2c3d-0000-4000-8000-000000000003"


def led_by(rounds: list[tuple[float, str]], extra=None) -> list[dict]:
    """Rebalances at the given times, each led by the given member; extra(i, start) adds lines."""
    events = []
    for i, (start, leader) in enumerate(rounds):
        for e in classic_round(start, 40 + i, "Updating metadata for member x during Stable", line=10 * i + 1):
            if e["event"] == "rebalance.assignment_received":
                e = dict(e, leader=leader)
            events.append(e)
        events += extra(i, start) if extra else []
    return events


def probing(i, start):
    return [streams(start + 1.02, "streams.followup.probing", line=100 + i, scheduled=str(int(start * 1000)))]


PROCESS_A, PROCESS_B = "0056a363-88bd-4dad-bd04-593a4f9e7a68", "f255dce1-ba7f-427a-bdde-8f3896a66a2e"


def decided(warmup_lags: list[int | None]):
    """The leader's "Decided on assignment" in each round (as HighAvailabilityTaskAssignor prints ClientState):
    PROCESS_A runs 0_0 and 0_1, PROCESS_B warms up 0_1 with the given lag, then (None) runs it: no followup."""
    def extra(i, start):
        lag = warmup_lags[i]
        if lag is None:
            states = (f"{{{PROCESS_A}=[activeTasks: ([0_0]) standbyTasks: ([]) prevActiveTasks: ([0_0, 0_1]) "
                      "prevStandbyTasks: ([]) changelogOffsetTotalsByTask: ([0_0=-2, 0_1=-2]) taskLagTotals: "
                      f"([0_0=-2, 0_1=-2]) clientTags: ([]) capacity: 1 assigned: 1], {PROCESS_B}=[activeTasks: ([0_1]) "
                      "standbyTasks: ([]) prevActiveTasks: ([]) prevStandbyTasks: ([0_1]) changelogOffsetTotalsByTask: "
                      "([0_1=5000000]) taskLagTotals: ([0_0=8000000, 0_1=4200]) clientTags: ([]) capacity: 1 assigned: 1]}")
        else:
            states = (f"{{{PROCESS_A}=[activeTasks: ([0_0, 0_1]) standbyTasks: ([]) prevActiveTasks: ([0_0, 0_1]) "
                      "prevStandbyTasks: ([]) changelogOffsetTotalsByTask: ([0_0=-2, 0_1=-2]) taskLagTotals: "
                      f"([0_0=-2, 0_1=-2]) clientTags: ([]) capacity: 1 assigned: 2], {PROCESS_B}=[activeTasks: ([]) "
                      "standbyTasks: ([0_1]) prevActiveTasks: ([]) prevStandbyTasks: ([0_1]) changelogOffsetTotalsByTask: "
                      f"([0_1=100]) taskLagTotals: ([0_0=8000000, 0_1={lag}]) clientTags: ([]) capacity: 1 assigned: 1]}}")
        line = ev(start + 1.01, "streams.assignment.decided", host="node-a", component="streams", line=200 + i,
                  attrs={"assignment": states, "followup": None if lag is not None else "no"})
        return [line] + (probing(i, start) if lag is not None else [])
    return extra


CASES = [
    # (id, reason, events, chain heads {rule: severity}, folded into a head, must not be a head)
    ("single-rebalance", "one heartbeat expiration is reported, but one rebalance is no storm",
     classic_round(0, 41, f"removing member {MEMBER_B} on heartbeat expiration")
     + [ev(-0.001, "member.expired", member=MEMBER_B, line=99)],
     {"heartbeat-expiration": "warning"}, [], ["rebalance-storm", "failed-rebalance-loop", "leader-churn", "poll-timeout"]),
    ("storm", "eight poll-timeout rebalances within eight minutes: the timeouts are the cause, the storm a symptom",
     storm(8, 60), {"poll-timeout": "critical"}, ["rebalance-storm", "membership-flapping"],
     ["heartbeat-expiration", "rebalance-storm"]),
    ("no-storm", "three rebalances an hour apart are no storm",
     storm(3, 3600), {"poll-timeout": "critical"}, [], ["rebalance-storm"]),
    ("broker-only-poll-timeout", "the coordinator's LeaveGroup reason alone names a poll timeout",
     [e for e in storm(1, 60) if e["component"] == "broker"]
     + [ev(-0.005, "member.leave", member=MEMBER_B, reason="consumer poll timeout has expired.", line=50)],
     {"poll-timeout": "warning"}, [], ["missed-rebalance"]),
    ("client-only-session-timeout", "only the member logged its session timing out",
     [client(0, "session.timeout", "node-b", "consumer-g-2")], {"heartbeat-expiration": "warning"}, [], ["poll-timeout"]),
    ("skewed-clocks", "node-b's clock is 45 s ahead: its poll timeout still starts the right rebalance",
     [dict(e, ts=e["ts"] + __import__("datetime").timedelta(seconds=45)) if e["host"] == "node-b" else e
      for e in storm(2, 600)], {"poll-timeout": "warning"}, [], ["rebalance-storm"]),
    ("thread-replacement", "two replacements are a loop",
     [streams(0, "streams.thread_replaced"), streams(30, "streams.thread_replaced", line=2)],
     {"thread-replacement-loop": "warning"}, [], ["application-shutdown"]),
    ("one-thread-replacement", "a single replacement is no loop: an info note with its exception",
     [streams(0, "streams.thread_replaced")], {"thread-replacement-loop": "info"}, [], []),
    ("application-shutdown", "a shutdown request is critical",
     [streams(0, "streams.shutdown_requested")], {"application-shutdown": "critical"}, [], []),
    ("version-probing", "version probing is information only",
     [streams(0, "streams.followup.version_probing")], {"version-probing": "info"}, [], []),
    ("missed-rebalance", "partitions given away as lost: the member missed a rebalance, nothing else explains it",
     [client(0, "partitions.lost", "node-b", "consumer-g-2", reason="generation/memberID has been reset")],
     {"missed-rebalance": "warning"}, [], []),
    ("leader-churn", "the leader moves between members that all stay in the group",
     led_by([(0, MEMBER_A), (60, MEMBER_B), (120, MEMBER_A), (180, MEMBER_B)]), {"leader-churn": "warning"}, [], []),
    ("leader-stays", "one leader throughout is no churn", led_by([(0, MEMBER_A), (60, MEMBER_A), (120, MEMBER_A)]),
     {}, [], ["leader-churn"]),
    ("probing-without-progress", "probe after probe the same warmup, its lag growing: it never catches up",
     led_by([(0, MEMBER_A), (300, MEMBER_A), (600, MEMBER_A), (900, MEMBER_A)],
            decided([9_000_000, 9_400_000, 9_800_000, 10_100_000])),
     {"probing-rebalance-cadence": "warning"}, [], []),
    ("probing-converging", "the warmup's lag shrinks probe after probe, then the task moves: the feature working",
     led_by([(0, MEMBER_A), (600, MEMBER_A), (1200, MEMBER_A), (1800, MEMBER_A)],
            decided([9_000_000, 6_000_000, 2_500_000, None])),
     {}, [], ["probing-rebalance-cadence"]),
    ("probing-without-decisions", "probes every 10 minutes but no assignor decision to judge progress by: no finding",
     led_by([(0, MEMBER_A), (600, MEMBER_A), (1200, MEMBER_A), (1800, MEMBER_A)], probing),
     {}, [], ["probing-rebalance-cadence"]),
    ("expired-after-shutdown", "a Streams instance that shut down and then expired left on purpose: no warning",
     [streams(0, "streams.state", host="node-b", state="PENDING_SHUTDOWN", from_state="RUNNING"),
      ev(45, "member.expired", member=f"g-{'0' * 8}-0000-0000-0000-{'0' * 12}-StreamThread-1-consumer-"
                                           "6b1f2c3d-0000-4000-8000-000000000009")],
     {}, [], ["heartbeat-expiration"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rule_cases(case):
    name, reason, events, heads, folded, silent = case
    findings = analyze_events(sorted(events, key=lambda e: e["ts"])).findings
    got = {f.rule: f.severity for f in findings if f.severity != "info" or f.rule != "healthy-operation"}
    for rule, severity in heads.items():
        assert got.get(rule) == severity, f"{name} ({reason}): {rule} expected {severity}, got {got}"
    inside = {x["rule"] for f in findings for x in f.caused.get("findings", [])}
    for rule in folded:
        assert rule in inside, f"{name} ({reason}): {rule} must be folded into a cause, folded: {inside}"
    for rule in silent:
        assert rule not in got, f"{name} ({reason}): {rule} must not be a chain head"
    assert not [f for f in findings if f.severity != "info"] or heads, f"{name}: {got}"
    for f in findings:
        assert f.evidence, f"{f.rule} without evidence"
        assert f.summary and f.remediation and f.title


def test_leader_churn_says_not_enough_evidence_without_leader_lines():
    events = [e for e in storm(4, 3600) if e["event"] != "rebalance.assignment_received"]
    analysis = analyze_events(sorted(events, key=lambda e: e["ts"]))
    notes = [n.text for g in analysis.groups for n in g.notes if n.rule == "leader-churn"]
    assert notes and "not enough evidence" in notes[0]


def test_analyze_group_rows_match_the_column_definitions():
    events = sorted(storm(8, 60), key=lambda e: e["ts"])
    rebalances, findings = analyze_group(events, None)
    assert len(rebalances) == 8 and findings
    assert all(list(row) == [c.name for c in REBALANCE_COLUMNS] for row in rebalances)
    assert all(list(row) == [c.name for c in FINDING_COLUMNS] for row in findings)
    assert rebalances[0]["trigger_kind"] == "poll-timeout"
    assert findings[0]["evidence"][0].startswith("node-b.log:")


def test_thresholds_override_from_config_file_and_pyproject(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.rebalance-doctor.rebalance-storm]\nmax_per_window = 20\n")
    config = rule_config.load(None, cwd=tmp_path)
    assert config.of("rebalance-storm")["max_per_window"] == 20
    assert not [f for f in analyze_events(storm(8, 60), config).findings if f.rule == "rebalance-storm"]
    override = tmp_path / "rd.toml"
    override.write_text("[poll-timeout]\nenabled = false\n")
    config = rule_config.load(override, cwd=tmp_path)
    assert "poll-timeout" not in {f.rule for f in analyze_events(storm(2, 60), config).findings}


def test_a_misspelt_threshold_is_an_error(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[rebalance-storm]\nmax_per_windw = 3\n")
    with pytest.raises(DataFileError, match="max_per_windw"):
        rule_config.load(bad, cwd=tmp_path)


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_every_rule_documents_symptom_cause_and_remediation(rule_id):
    module = rule_module(rule_id)
    doc = module.__doc__ or ""
    assert module.ID == rule_id
    for section in ("Symptom", "Why it happens", "Remediation"):
        assert f"\n{section}\n" in doc, f"{rule_id}: no {section} section"
    assert module.SEVERITY in ("critical", "warning", "info")
    assert module.ROLE in ("cause", "symptom", "advisory", "expected", "healthy")
    assert module.PROTOCOLS and set(module.PROTOCOLS) <= {"eager", "cooperative", "streams", "connect", "consumer",
                                                          "streams-group", "share"}
    assert "\nScope: " in doc, f"{rule_id}: its docstring does not state its protocol scope"
