"""Client lines whose own log names no group, linked to the group the coordinator names (timeline/unnamed.py),
and the per-process identity of client lines that name no member, handle or thread (issue 29, items 1, 2, 4)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from rebalance_doctor.analysis import analyze_events
from rebalance_doctor.classify.coordinator import broker_of
from rebalance_doctor.engines.local import read_events
from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.timeline import unnamed
from rebalance_doctor.timeline.identity import of_event

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
T0 = datetime(2026, 12, 6, 4, 37, tzinfo=timezone.utc)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _broker(event: str, group: str, member: str, at: float, **extra) -> dict:
    return {"ts": _at(at), "source": "kafka-1.log", "line": int(at * 10), "host": "kafka-1", "component": "broker",
            "library": None, "event": event, "group": group, "member": member, **extra}


def _client(event: str, at: float, host: str = "app-2", client: str = "rdkafka#consumer-1", **extra) -> dict:
    return {"ts": _at(at), "source": f"{host}.log", "line": int(at), "host": host, "component": "consumer",
            "library": "librdkafka", "event": event, "group": None, "member": None, "client": client, **extra}


def _analyze(directory: Path):
    rows, _ = read_events([str(directory)], ReadOptions())
    return analyze_events(rows)


def test_client_id_of_a_handle():
    assert unnamed.client_id("rdkafka#consumer-1") == "rdkafka"
    assert unnamed.client_id("billing_1#consumer-3") == "billing_1"
    assert unnamed.client_id("kafka-python-2.0.2") == "kafka-python-2.0.2"
    assert unnamed.client_id(None) is None


def test_the_only_group_with_a_member_of_the_client_id_is_the_handles():
    events = [_broker("member.join", "orders", "rdkafka-aaaa1111-0000-0000-0000-000000000000", 0),
              _broker("member.leave", "orders", "rdkafka-aaaa1111-0000-0000-0000-000000000000", 46),
              _client("poll.timeout", 46, delay_ms=20000)]
    assert unnamed.link(events) == 1
    line = events[-1]
    assert line["group"] == "orders" and line["attrs"]["group_from"] == "coordinator"
    # The coordinator removed exactly one member of its client.id then: that member is the handle's.
    assert line["member"] == "rdkafka-aaaa1111-0000-0000-0000-000000000000"
    assert line["attrs"]["member_from"] == "coordinator"


def test_a_client_id_in_two_groups_takes_the_group_that_removed_one_of_its_members_then():
    a, b = "rdkafka-aaaa1111-0000-0000-0000-000000000000", "rdkafka-bbbb2222-0000-0000-0000-000000000000"
    events = [_broker("member.join", "orders", a, 0), _broker("member.join", "payments", b, 0),
              _broker("member.leave", "payments", b, 46), _client("poll.timeout", 46, delay_ms=20000)]
    unnamed.link(events)
    assert events[-1]["group"] == "payments" and events[-1]["member"] == b


def test_two_groups_removing_members_of_the_client_id_at_once_name_none():
    a, b = "rdkafka-aaaa1111-0000-0000-0000-000000000000", "rdkafka-bbbb2222-0000-0000-0000-000000000000"
    events = [_broker("member.join", "orders", a, 0), _broker("member.join", "payments", b, 0),
              _broker("member.leave", "orders", a, 46), _broker("member.leave", "payments", b, 46.5),
              _client("poll.timeout", 46, delay_ms=20000)]
    assert unnamed.link(events) == 0
    assert events[-1]["group"] is None and events[-1]["member"] is None


def test_no_member_of_the_client_id_at_the_time_names_no_group():
    events = [_broker("member.join", "orders", "rdkafka-aaaa1111-0000-0000-0000-000000000000", 0),
              _broker("member.leave", "orders", "rdkafka-aaaa1111-0000-0000-0000-000000000000", 10),
              _client("poll.timeout", 46, delay_ms=20000),
              _client("poll.timeout", 46, host="app-3", client="billing#consumer-1", delay_ms=20000)]
    assert unnamed.link(events) == 0


def test_a_session_timeout_is_the_removal_within_the_time_it_had_no_answer():
    # SESSTMOUT is written when the paused process resumes: the coordinator removed it during the pause.
    member = "rdkafka-aaaa1111-0000-0000-0000-000000000000"
    other = "rdkafka-cccc3333-0000-0000-0000-000000000000"
    events = [_broker("member.join", "orders", member, 0), _broker("member.join", "orders", other, 0),
              _broker("member.expired", "orders", member, 35),
              _client("session.timeout", 50, delay_ms=25000)]
    unnamed.link(events)
    assert events[-1]["group"] == "orders" and events[-1]["member"] == member
    analysis = analyze_events(events)
    (finding,) = [f for f in analysis.findings if f.rule == "heartbeat-expiration"]
    assert finding.culprit.host == "app-2"
    assert "(1 time(s))" in finding.title          # the member's SESSTMOUT reports the removal: one loss, not two


def test_a_line_naming_no_member_handle_or_thread_is_its_process():
    line = {"component": "consumer", "library": "kafka-python", "host": "app-2", "member": None, "client": None}
    assert of_event(line, {}) == "kafka-python@app-2"
    assert of_event({**line, "library": None}, {}) is None       # a Java line keeps its own rules


def test_kafka_python_names_its_coordinator_two_ways():
    assert broker_of("BrokerMetadata(nodeId='coordinator-1', host='127.0.0.1', port=40067, rack=None)") == "1"
    assert broker_of("coordinator-1") == "1"
    assert broker_of("BrokerMetadata(nodeId=1, host='b1', port=9092, rack=None)") == "1"
    assert broker_of("broker-1:9092 (id: 2147483646 rack: null)") == "1"
    assert broker_of("kafka-1:9092") == "kafka-1:9092"


def test_recorded_librdkafka_poll_timeout_at_default_level():
    analysis = _analyze(LAB / "librdkafka-poll-timeout@4.4.0")
    (group,) = analysis.groups
    assert group.timeline.group == "orders" and not analysis.handle_findings
    first = group.findings[0]
    assert first.rule == "poll-timeout" and first.culprit.host == "app-2"
    # The MAXPOLL line states max.poll.interval.ms (20000ms), not how long the loop took.
    assert "max.poll.interval.ms=20000" in first.summary and "20.0s after" not in first.summary


def test_recorded_kafka_python_poll_timeout_names_the_stalled_process():
    analysis = _analyze(LAB / "kafka-python-poll-timeout@3.9.2")
    (group,) = analysis.groups
    assert [f.rule for f in group.findings if f.severity != "info"] == ["poll-timeout"]   # no coordinator-churn
    assert group.findings[0].culprit.host == "app-2"


def test_the_stalled_process_log_alone_names_its_poll_timeout():
    """Issue 29: one process's log with one decisive line (librdkafka's MAXPOLL, which names no group at its
    default level) still gets its finding, the culprit being that process, with the interval the line states
    and no loop length the line does not give."""
    for release in ("3.9.2", "4.4.0"):
        analysis = _analyze(LAB / f"librdkafka-poll-timeout@{release}" / "app-2.log")
        assert not analysis.groups
        (finding,) = analysis.handle_findings
        assert finding.rule == "poll-timeout" and finding.group is None and finding.severity == "warning"
        assert finding.culprit.host == "app-2" and finding.culprit.client == "rdkafka#consumer-1"
        assert "max.poll.interval.ms=20000 ms" in finding.summary and "not in these logs" in finding.summary
        assert [(e.source, e.event) for e in finding.evidence] == [("app-2.log", "poll.timeout")]
        assert "Application maximum poll interval (20000ms) exceeded" in finding.evidence[0].text
        # the other processes' logs say nothing of a poll timeout
        for other in ("app-1.log", "app-3.log"):
            assert not _analyze(LAB / f"librdkafka-poll-timeout@{release}" / other).handle_findings
