"""The diagnosis of non-Java clients' lines, on logs written here (no simulator, no real excerpt).

A member whose own log says, cycle after cycle, that the coordinator no longer knows its member id
(UNKNOWN_MEMBER_ID) and rejoins was removed again and again: membership-flapping names it, with what the
lines show and no cause they do not state. A removal the logs do show (the coordinator's heartbeat
expiration) stays that removal: the member's UNKNOWN_MEMBER_ID is only how it learned of it.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from rebalance_doctor.diagnosis import analyze_events
from rebalance_doctor.classify import of
from rebalance_doctor.classify.operations import LOST
from rebalance_doctor.packgen.clientgen import fill, load_inventory
from rebalance_doctor.packgen.envelope import render_client
from tests.helpers import events_of
from tests.stories import T0, Broker, ClassicGroup, Story

GUESSES = ("poll timeout", "max.poll.interval.ms exceeded", "the process died", "GC pause", "crash")


def _brod(text: str) -> str:
    """brod's group-member template (patterns/clients/brod.jsonl) whose second line starts with `text`."""
    return next(row["template"] for row in load_inventory("brod")
                if row["template"].split("\n", 1)[-1].startswith(text))


def _brod_log(directory: Path, cycles: int) -> Path:
    """A brod member (lager, pid in the header) rejoining because its member id is unknown, each time at a
    generation two above the one it had: another member's generation completed in between without it."""
    pid, generation, records = "<0.912.0>", 17, []

    def member(at: float, line: str, value: str) -> None:
        msg = fill(_brod(line), ["orders", pid, "<0.77.0>", str(generation), value])
        records.append(render_client("lager-pid", T0 + timedelta(seconds=at), "INFO", "brod_group_coordinator",
                                     msg, thread=pid))

    for cycle in range(cycles):
        member(5 * cycle, "re-joining group, reason:", "unknown_member_id")
        generation += 2
        member(5 * cycle + 0.003, "elected=", "true")
        member(5 * cycle + 0.005, "assignments received:",
               "\n  orders:\n    partition=0 begin_offset=10\n    partition=1 begin_offset=11")
    (directory / "node-a").mkdir()
    path = directory / "node-a" / "app.log"
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    return path


def _analyze(path: Path):
    events, _ = events_of(path)
    return analyze_events(events)


def test_a_brod_member_removed_again_and_again_is_membership_flapping(tmp_path):
    analysis = _analyze(_brod_log(tmp_path, 3))
    [group] = analysis.groups
    assert [r.operation for r in group.timeline.rebalances] == ["fencing"] * 3
    assert all(r.verdict == "harmful" for r in group.timeline.rebalances)
    head = group.findings[0]
    assert head.rule == "membership-flapping" and head.severity == "warning"
    assert head.culprit is not None and head.culprit.host == "node-a"
    assert "no longer knew its member id (UNKNOWN_MEMBER_ID, 3 time(s))" in head.summary
    assert "jumped 17 -> 19, 19 -> 21, 21 -> 23" in head.summary
    assert head.cause is None            # the lines do not say why the coordinator removed it
    assert not any(g in f"{head.title} {head.summary}" for g in GUESSES)
    assert "session.timeout.ms" in head.remediation and "rebalance timeout" in head.remediation
    # The evidence: each rejoin and the generation it reached (the header line of each record).
    assert [e.line for e in head.evidence] == [1, 3, 10, 12, 19, 21]
    assert "generation=17" in head.evidence[0].text and "generation=19" in head.evidence[1].text


def test_one_unknown_member_rejoin_is_no_loop(tmp_path):
    analysis = _analyze(_brod_log(tmp_path, 1))
    [group] = analysis.groups
    assert [r.operation for r in group.timeline.rebalances] == ["fencing"]
    assert not [f for f in analysis.findings if f.severity in ("warning", "critical")]


def _java_story(broker: bool) -> Story:
    """Two Java consumers; consumer-orders-2 loses its membership twice and rejoins (3.6 wording). With the
    coordinator's log, each removal is its heartbeat expiration; without it, only the member's own lines."""
    story = Story("orders")
    coordinator = Broker(story) if broker else None
    group = ClassicGroup(story, coordinator, generation=40)
    a = group.consumer("node-a", "consumer-orders-1", 1)
    b = group.consumer("node-b", "consumer-orders-2", 2)
    group.start_with(a, b)
    for cycle in range(2):
        group.tick(60)
        if coordinator is not None:
            group.expire(b)                      # the coordinator removes it: a generation without it
        else:
            group.members.remove(b)
            group.gen += 1                       # ... which only the generation number shows
            group.members.append(b)
        group.tick(5)
        b.heartbeat_unknown(group.gen - 1)
        b.request_join("encountered UNKNOWN_MEMBER_ID from HEARTBEAT response")
        b.joining()
        if coordinator is not None:
            group.join(b, start=False)
        else:
            group.rebalance(starter=b)
    return story


def test_a_java_member_told_unknown_member_id_without_the_coordinators_log_flaps(tmp_path):
    analysis = _java_story(broker=False).analyze(tmp_path)
    [group] = analysis.groups
    fenced = [r for r in group.timeline.rebalances if r.operation == "fencing"]
    assert len(fenced) == 2 and {r.culprit.client for r in fenced} == {"consumer-orders-2"}
    head = group.findings[0]
    assert head.rule == "membership-flapping" and head.culprit.client == "consumer-orders-2"
    assert "UNKNOWN_MEMBER_ID, 2 time(s)" in head.summary and head.cause is None


def test_a_removal_the_coordinator_logged_stays_that_removal(tmp_path):
    analysis = _java_story(broker=True).analyze(tmp_path)
    [group] = analysis.groups
    changes = of(group.timeline).changes
    assert not [d for change in changes.values() for d in change.departures if d.kind == LOST]
    assert "fencing" not in {r.operation for r in group.timeline.rebalances}
    assert "session-timeout" in {r.operation for r in group.timeline.rebalances}
    assert group.findings[0].rule == "heartbeat-expiration"


@pytest.mark.parametrize("reason,lost", [("unknown_member_id", True),
                                         ("encountered UNKNOWN_MEMBER_ID from HEARTBEAT response", True),
                                         ("encountered ILLEGAL_GENERATION from HEARTBEAT response", False),
                                         ("group is already rebalancing", False)])
def test_which_rejoin_reasons_say_the_member_id_is_unknown(reason, lost):
    from rebalance_doctor.classify.operations import unknown_member

    assert unknown_member(reason) is lost


# -- client handles whose lines name no group: the process -----------------------------------------------------
def _sesstmout(directory: Path, handles: list[tuple[str, float, int, int]], name: str = "app.log") -> Path:
    """librdkafka SESSTMOUT lines (its inventory's template, its own layout) of handles that never name their
    group: (handle, seconds after T0, timeout ms, coordinator broker)."""
    template = next(row["template"] for row in load_inventory("librdkafka") if row.get("facility") == "SESSTMOUT"
                    and row["template"].startswith("Consumer group session timed out (in join-state"))
    lines = [render_client("librdkafka", T0 + timedelta(seconds=at), "WARNING", "SESSTMOUT",
                           fill(template, ["steady", str(ms), str(broker), "Success"]), client=handle)
             for handle, at, ms, broker in handles]
    (directory / "worker-7").mkdir(exist_ok=True)
    path = directory / "worker-7" / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_handles_of_one_process_losing_their_sessions_together_point_at_the_process(tmp_path):
    path = _sesstmout(tmp_path, [("orders_1#consumer-3", 0, 45000, 2), ("billing_1#consumer-1", 0.8, 45000, 3),
                                 ("audit_1#consumer-2", 1.5, 45001, 2)])
    analysis = _analyze(path)
    assert not analysis.groups
    [finding] = analysis.findings
    assert finding.rule == "heartbeat-expiration" and finding.group is None and finding.severity == "critical"
    assert finding.title == "3 consumer handles of one process lost their group sessions together"
    assert "45000-45001 ms" in finding.summary and "within 1.5s" in finding.summary
    assert "2 different brokers (2, 3)" in finding.summary and "the process" in finding.summary
    assert finding.culprit.host == "worker-7" and finding.culprit.client is None
    assert finding.caused["members"] == ["orders_1#consumer-3", "billing_1#consumer-1", "audit_1#consumer-2"]
    assert [e.line for e in finding.evidence] == [1, 2, 3]


def test_one_handle_losing_its_session_is_named_itself(tmp_path):
    [finding] = _analyze(_sesstmout(tmp_path, [("orders_1#consumer-3", 0, 10000, 2)])).findings
    assert finding.severity == "warning" and finding.title == "orders_1#consumer-3 lost its group session (1 time(s))"
    assert finding.culprit.label == "orders_1#consumer-3@worker-7"
    assert "of one process lost" not in finding.summary and "what they share" not in finding.summary


def test_handles_timing_out_far_apart_are_not_said_to_share_a_cause(tmp_path):
    path = _sesstmout(tmp_path, [("orders_1#consumer-3", 0, 10000, 2), ("billing_1#consumer-1", 60, 10000, 3)])
    [finding] = _analyze(path).findings
    assert finding.title == "2 consumer handles of one process lost their group sessions"
    assert "what they share" not in finding.summary


def test_each_log_file_is_its_own_process(tmp_path):
    _sesstmout(tmp_path, [("orders_1#consumer-1", 0, 10000, 2)], "a.log")
    _sesstmout(tmp_path, [("orders_1#consumer-1", 0.5, 10000, 2)], "b.log")
    events, _ = events_of(tmp_path)
    findings = analyze_events(events).findings
    assert sorted(re.search(r"of one process \(([^)]*)\)", f.cause)[1] for f in findings) == \
        ["worker-7/a.log", "worker-7/b.log"]


def test_a_handle_finding_renders_in_every_report_and_validates(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    import json

    from rebalance_doctor import api

    path = _sesstmout(tmp_path, [("orders_1#consumer-3", 0, 45000, 2), ("billing_1#consumer-1", 0.8, 45000, 3)])
    analysis = api.analyze([str(path)])
    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "schema" / "analyze.json").read_text())
    document = analysis.to_dict()
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    assert document["answer"]["group"] is None and document["findings"][0]["group"] is None
    assert "in client handles whose lines name no group" in analysis.to_markdown()
    assert "### Client handles whose lines name no group" in analysis.to_markdown()
    assert "<small>client handles whose lines name no group</small>" in analysis.to_html()
    from io import StringIO

    from rich.console import Console

    from rebalance_doctor.report import human

    out = StringIO()
    human.render(analysis, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    assert "heartbeat-expiration in client handles whose lines name no group" in text
    assert "─ client handles whose lines name no group ─" in text and "app.log:1 " in text
