"""The HTML report's swimlanes (report/lanes.py) on shipped incidents: one lane per process, labelled by what
tells it apart, each line on the lane of the process that wrote it, the causes a finding names marked on its
culprit's lane, nothing drawn that the legend does not explain, no lane with nothing on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_doctor import api
from rebalance_doctor.report import html as html_report, lanes
from rebalance_doctor.report.evidence import EvidenceIndex

INCIDENTS = Path(__file__).resolve().parents[1] / "fixtures" / "incidents"
LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"


def chart(name: str, group: int = 0, root: Path = INCIDENTS) -> tuple[dict, list[list[str]]]:
    analysis = api.analyze(root / name)
    samples = html_report._Samples(EvidenceIndex(analysis.stats))
    return html_report._group_data(analysis.groups[group], samples), samples.lines


def names(data: dict) -> list[tuple[str, str]]:
    return [(lane["title"], lane["sub"]) for lane in data["lanes"]]


def marks_on(data: dict, title: str, sub: str, kind: str | None = None) -> list[list]:
    row = names(data).index((title, sub))
    return [m for m in data["marks"] if m[0] == row and (kind is None or m[2] == kind)]


def test_streams_one_lane_per_thread_on_its_own_host_and_the_death_on_the_culprits_lane():
    data, lines = chart("streams-thread-died")
    # Three Streams processes, one per host, two threads each; the leader's assignor lines on search-7d9f3 name
    # the other hosts' threads but draw no lane for them there; lines naming no thread draw no lane of their own.
    assert names(data) == [("coordinator", "broker kafka2"),
                           ("search-7d9f3", "StreamThread-1"), ("search-7d9f3", "StreamThread-2"),
                           ("search-7d9f4", "StreamThread-1"), ("search-7d9f4", "StreamThread-2"),
                           ("search-7d9f5", "StreamThread-1"), ("search-7d9f5", "StreamThread-2")]
    culprits = [(lane["title"], lane["sub"], lane["culprit"]) for lane in data["lanes"] if lane["culprit"]]
    assert culprits == [("search-7d9f4", "StreamThread-2", ["thread-died"])]
    [died] = marks_on(data, "search-7d9f4", "StreamThread-2", "thread-died")
    assert died[6] == ["thread-died"], "ringed: the finding's evidence"
    assert [lines[i][0] for i in died[4]] == ["search-7d9f4/application.log:192"]
    [expired] = marks_on(data, "search-7d9f4", "StreamThread-2", "session-expired")
    assert expired[7] == "coordinator" and lines[expired[4][0]][0] == "kafka2/server.log:15"
    assert not marks_on(data, "coordinator", "broker kafka2", "session-expired"), "drawn on the member's lane only"
    lane = data["lanes"][names(data).index(("search-7d9f4", "StreamThread-2"))]
    assert lane["life"][1] <= died[1] < expired[1], "its own lines end with its death; the coordinator expires it later"
    assert all(not marks_on(data, *other, "thread-died") for other in names(data) if other != ("search-7d9f4", "StreamThread-2"))


def test_connect_one_lane_per_worker_and_the_lost_workers_expiry_on_its_lane():
    data, lines = chart("connect-worker-lost")
    assert names(data) == [("coordinator", "broker kafka-0"), ("node1", "worker connect-1"), ("node2", "worker connect-2"),
                           ("node3", "worker connect-3"), ("node4", "worker connect-4")]
    [expired] = marks_on(data, "node1", "worker connect-1", "session-expired")
    assert expired[6] == ["connect-scheduled-delay"] and expired[7] == "coordinator"
    assert lines[expired[4][0]][0] == "kafka-0/server.log:10"
    assert [lane["culprit"] for lane in data["lanes"]] == [[], ["connect-scheduled-delay"], [], [], []]
    lost = data["lanes"][1]
    assert lost["life"][1] < expired[1], "the worker's log stopped before the coordinator gave up on it"


def test_connect_poll_timeouts_on_the_stalled_workers_lane():
    data, _ = chart("connect-worker-poll-timeout")
    assert names(data) == [("coordinator", "broker broker-1"), ("connect-1", "worker connect-1"),
                           ("connect-2", "worker connect-2")]
    assert len(marks_on(data, "connect-2", "worker connect-2", "poll-timeout")) == 2
    assert not marks_on(data, "connect-1", "worker connect-1", "poll-timeout")
    assert data["lanes"][2]["culprit"] == ["poll-timeout"]


def test_poll_timeouts_on_the_culprits_lane_and_a_new_member_id_is_the_same_process():
    data, lines = chart("poll-timeout-storm")
    # node2's consumer rejoins with a new member id after each of its 5 poll timeouts: still one lane.
    assert names(data) == [("coordinator", "broker broker-1"), ("node1", "consumer-payments-1"),
                           ("node2", "consumer-payments-1"), ("node3", "consumer-payments-1")]
    timeouts = marks_on(data, "node2", "consumer-payments-1", "poll-timeout")
    assert len(timeouts) == 5 and all(m[6] == ["poll-timeout"] for m in timeouts)
    assert lines[timeouts[0][4][0]][0] == "node2.log:4"
    assert [m for m in data["marks"] if m[2] == "poll-timeout"] == timeouts
    assert [lane["culprit"] for lane in data["lanes"]] == [[], [], ["poll-timeout"], []]


def test_a_restarted_process_is_a_new_lane():
    data, _ = chart("healthy-rolling-restart")
    assert names(data) == [("coordinator", "broker broker-1")] + [
        (host, f"consumer-orders-1 · process {n}") for host in ("orders-0", "orders-1", "orders-2") for n in (1, 2)]
    assert not any(lane["culprit"] for lane in data["lanes"]), "an info finding names who did it, not a culprit"


def test_a_replaced_threads_death_is_marked_on_its_lane():
    data, _ = chart("thread-replacement-loop")
    died = {sub for title, sub in names(data) if marks_on(data, title, sub, "thread-died")}
    assert died == {"StreamThread-1", "StreamThread-2", "StreamThread-3", "StreamThread-4"}
    assert [lane["sub"] for lane in data["lanes"] if lane["culprit"]] == ["Streams client"]


def test_a_culprit_known_by_its_host_only_is_the_process_on_that_host():
    """kafka-python at its default level names no client.id: the poll timeout's culprit is app-2, its process."""
    data, _ = chart("kafka-python-poll-timeout@3.9.2", root=LAB)
    assert names(data) == [("coordinator", "broker kafka-1"), ("app-1", "kafka-python"), ("app-2", "kafka-python"),
                           ("app-3", "kafka-python")]
    assert [lane["culprit"] for lane in data["lanes"]] == [[], [], ["poll-timeout"], []]


@pytest.fixture(scope="module")
def every_chart() -> list[dict]:
    """Every group of every shipped incident, each incident alone, and all of them read together (groups of one
    name from several incidents: one host writing one client.id into several files)."""
    charts = []
    for analysis in [api.analyze(d) for d in sorted(INCIDENTS.iterdir()) if d.is_dir()] + [api.analyze(INCIDENTS)]:
        samples = html_report._Samples(EvidenceIndex(analysis.stats))
        charts += [dict(html_report._group_data(g, samples), alone=len(analysis.inputs) == 1 and analysis.inputs[0] != str(INCIDENTS))
                   for g in analysis.groups]
    return charts


def test_every_lane_has_something_drawn_a_label_of_its_own_and_every_culprit_a_lane(every_chart):
    for data in every_chart:
        drawn = {m[0] for m in data["marks"]}
        for row, lane in enumerate(data["lanes"]):
            assert lane["life"] or row in drawn or lane["culprit"], (data["name"], lane)
        labels = names(data)
        assert len(labels) == len(set(labels)), (data["name"], labels)
        flagged = {rule for lane in data["lanes"] for rule in lane["culprit"]}
        for f in data["findings"] if data["alone"] else ():   # read together, two incidents' members mix
            if f["sev"] in ("critical", "warning") and f["culprit"]:
                assert f["rule"] in flagged, (data["name"], f["rule"], f["culprit"])


def test_the_legend_explains_everything_drawn(every_chart):
    for data in every_chart:
        legend = {(what, key) for what, key, _ in data["legend"]}
        assert {("mark", m[2]) for m in data["marks"]} <= legend, data["name"]
        assert all(m[2] in lanes.kinds() for m in data["marks"])
        if any(m[6] for m in data["marks"]):
            assert ("ring", "evidence") in legend
        if any(m[7] for m in data["marks"]):
            assert ("via", "coordinator") in legend
        if any(lane["culprit"] for lane in data["lanes"]):
            assert ("culprit", "culprit") in legend
        if any(lane["life"] for lane in data["lanes"]):
            assert ("line", "life") in legend
        for f in data["findings"]:
            assert f["s"] is None or ("finding", f["sev"]) in legend
        for r in data["rebalances"]:
            assert ("band", "failed" if r["o"] == "failed" else r["v"]) in legend


def test_a_broker_culprit_is_its_coordinator_lane():
    data, _ = chart("coordinator-moved-members-lost")
    assert names(data)[:2] == [("coordinator", "broker broker-1"), ("coordinator", "broker broker-2")]
    assert [lane["culprit"] for lane in data["lanes"][:2]] == [[], ["coordinator-churn"]]
    assert marks_on(data, "coordinator", "broker broker-2", "moved"), "the group loaded on broker-2"
    # The members' expiries, as the coordinator logged them, on the members' own lanes.
    for host in ("tracking-3", "tracking-4", "tracking-5"):
        assert any(m[7] == "coordinator" for m in marks_on(data, host, "consumer-ledger-1", "session-expired"))
