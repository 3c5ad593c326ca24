"""The lab's real client recordings with the brokers' logs left out: what an operator has who cannot reach them.

Each input is a recorded incident (fixtures/lab) copied without its broker's and producer's logs, as
``judge.recorded --clients-only`` scores it. No line of the coordinator says who was removed or why: a killed
process's log simply stops while the survivors rebalance, a restarted one begins again.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from rebalance_doctor import api
from rebalance_doctor.classify.operations import EXPIRED, LEAVE
from rebalance_doctor.classify import of

LAB = Path(__file__).resolve().parent.parent / "fixtures" / "lab"


def clients_only(incident: str, into: Path) -> Path:
    lab = tomllib.loads((LAB / incident / "lab.toml").read_text(encoding="utf-8"))
    for process in lab["process"]:
        if process["kind"] != "java-producer":
            shutil.copy(LAB / incident / process["log"], into / process["log"])
    return into


@pytest.mark.parametrize("incident", ["sarama-crash-kill@4.4.0", "kafkago-crash-kill@4.4.0",
                                      "franzgo-crash-kill@4.4.0"])
def test_a_killed_go_consumer_is_found_from_the_survivors_rebalance(incident: str, tmp_path: Path):
    # The killed process writes nothing; its last lines gave nothing back, and the two others then rebalance
    # without it: it was removed on session timeout, and the finding says that is concluded.
    result = api.analyze([clients_only(incident, tmp_path)])
    first = result.findings[0]
    assert first.rule == "heartbeat-expiration" and first.culprit.host == "app-2"
    assert "concluded from its log stopping" in first.summary
    assert any(ev.source == "app-2.log" for ev in first.evidence)     # its last line, where its log stops
    assert [g.timeline.group for g in result.groups] == ["orders"]
    timeline = result.groups[0].timeline
    departures = [d for change in of(timeline).changes.values() for d in change.departures]
    assert [(d.kind, d.concluded is not None) for d in departures] == [(EXPIRED, True)]


def test_a_librdkafka_crash_loop_is_one_process_restarting_from_its_callbacks_alone(tmp_path: Path):
    # librdkafka at its default level writes nothing: only the application's "assigned: [...]" and "revoked: [...]".
    # app-2 is assigned again and again with no revocation between (each a new process: the group's callbacks are
    # eager ones, every other member gives all back each time), and each old process died holding its partitions.
    result = api.analyze([clients_only("librdkafka-crash-loop@4.4.0", tmp_path)])
    first = result.findings[0]
    assert first.rule == "membership-flapping" and first.culprit.host == "app-2"
    assert first.figures and any(f.name == "departures.app-2" and f.value == 3 for f in first.figures)
    assert not any(f.severity in ("warning", "critical") and f.culprit and f.culprit.host != "app-2"
                   for f in result.findings)


@pytest.mark.parametrize("incident", ["librdkafka-healthy-rolling-restart@4.4.0",
                                      "librdkafka-healthy-rolling-restart@3.9.2",
                                      "franzgo-healthy-rolling-restart@4.4.0",
                                      "kafkago-healthy-rolling-restart@4.4.0",
                                      "sarama-healthy-rolling-restart@4.4.0"])
def test_a_rolling_restart_is_healthy_from_the_clients_lines_alone(incident: str, tmp_path: Path):
    # A closing consumer's revocation callback runs before it leaves; it is not assigned in that rebalance while the
    # others are, and comes back in a later one: a restart, one member at a time.
    result = api.analyze([clients_only(incident, tmp_path)])
    assert [f.rule for f in result.findings] == ["healthy-operation"]
    restarted = {f.name: f.value for f in result.findings[0].figures}.get("restarted")
    assert restarted == 3


def test_a_sarama_assignment_takes_the_generation_its_session_ended_in(tmp_path: Path):
    # Whole-second times: app-1 gave its partitions back at 03:14:19 and its new process was assigned at 03:14:25, the
    # second app-2 and app-3 gave theirs back for the rebalance it joined. The session each assignment began ends
    # with "consumergroup/session/<member id>/<generation> released": app-1's at 03:14:37 states generation 3.
    result = api.analyze([clients_only("sarama-healthy-rolling-restart@4.4.0", tmp_path)])
    rows = {(e["source"], e["line"]): e for e in result.event_rows}
    assert rows[("app-1.log", 49)]["generation"] == 3
    assert rows[("app-1.log", 49)]["attrs"]["generation_from"] == "session"
    assert rows[("app-1.log", 25)]["generation"] is None      # a revocation opens the next rebalance
    [group] = result.groups
    assert [r.member_ids for r in group.timeline.rebalances[1:3]] == [
        ["sarama@app-2", "sarama@app-3"], ["sarama@app-1", "sarama@app-2", "sarama@app-3"]]


def test_a_librdkafka_close_is_a_departure_read_from_its_revocation(tmp_path: Path):
    result = api.analyze([clients_only("librdkafka-healthy-rolling-restart@4.4.0", tmp_path)])
    timeline = result.groups[0].timeline
    left = [(d.who, d.kind) for change in of(timeline).changes.values() for d in change.departures]
    assert left == [("app-1", LEAVE), ("app-2", LEAVE), ("app-3", LEAVE)]


def test_the_unnamed_group_beside_a_coordinators_log_concludes_nothing():
    # With the broker's log, librdkafka's callback lines that no line ties to the coordinator's group stay a group
    # made up from the processes: the coordinator's group states the restart; nothing is concluded twice.
    result = api.analyze([LAB / "librdkafka-healthy-rolling-restart@4.4.0"])
    unnamed = [g for g in result.groups if g.timeline.group != "orders"]
    assert unnamed and all(not g.findings for g in unnamed)
    assert [f.rule for f in result.findings if f.group == "orders"] == ["healthy-operation"]


def test_kafka_go_illegal_generation_is_read(tmp_path: Path):
    # kafka-go's ErrorLogger writes a commit's protocol error whole, "[22] Illegal Generation: ..." as "[25] Unknown
    # Member ID: ..." (error.go's Title and Description); it holds no other pack's scan literal.
    (tmp_path / "app-1.log").write_text(
        "2026/12/07 03:18:01 joined group orders as member labclient@vm (github.com/segmentio/kafka-go)-"
        "d568b578-8837-4a9b-8772-ca6520b0ef24 in generation 1\n"
        "2026/12/07 03:18:31 [22] Illegal Generation: the generation id provided in the request is not the current "
        "generation\n")
    rows = api.analyze([tmp_path]).event_rows
    assert [(e["event"], e.get("error"), e.get("library")) for e in rows][-1] == \
        ("heartbeat.failed", "ILLEGAL_GENERATION", "kafka-go")
