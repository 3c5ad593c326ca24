"""Evidence whose group the logs do not name, and leaves whose reason they do not state, on real recordings.

The inputs are the lab's recordings (fixtures/lab: real brokers, real librdkafka and aiokafka consumers).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rebalance_doctor import api
from rebalance_doctor.api import NothingMatched

LAB = Path(__file__).resolve().parent.parent / "fixtures" / "lab"


@pytest.fixture()
def members_only(tmp_path: Path) -> Path:
    """librdkafka consumers at their default log level, without the broker's log: no line names the group."""
    for log in (LAB / "librdkafka-poll-timeout@4.4.0").glob("app-*.log"):
        shutil.copy(log, tmp_path / log.name)
    return tmp_path


def test_unnamed_processes_sharing_a_topic_are_one_group_named_by_what_is_known(members_only: Path):
    # librdkafka names no group at its default level; the application's rebalance callbacks print the partitions of
    # topic orders on all three hosts, never one partition on two at once: one group, named by what the logs show.
    result = api.analyze([members_only])
    [group] = result.groups
    assert group.timeline.group == "consumers of orders on app-1, app-2, app-3 (group name not in the logs)"
    first = result.findings[0]
    assert first.rule == "poll-timeout" and first.group == group.timeline.group and first.culprit.host == "app-2"
    # The other two took over its partitions: the rebalance its timeout started is seen from their callbacks.
    assert group.timeline.rebalances and first.caused.get("rebalances")
    assert all((e.get("attrs") or {}).get("group_from") == "processes" for e in result.event_rows
               if e.get("library") or e.get("component") == "application")


def test_unnamed_lines_stay_per_process_when_nothing_shows_a_group(members_only: Path):
    # Without the application's lines only app-2's MAXPOLL is left: nothing ties it to other processes.
    for log in members_only.glob("*.log"):
        log.write_text("".join(line for line in log.read_text().splitlines(keepends=True) if "%" in line[:2]))
    result = api.analyze([members_only])
    assert not result.groups
    [finding] = [f for f in result.findings if f.rule == "poll-timeout"]
    assert finding.group is None and finding.culprit.host == "app-2"


def test_two_groups_reading_one_topic_are_not_merged(tmp_path: Path):
    # Both groups hold every partition of orders at once; within one group a partition has one owner.
    for n, parts in ((1, "'orders-0', 'orders-1'"), (2, "'orders-0', 'orders-1'")):
        (tmp_path / f"app-{n}.log").write_text(
            f"2026-12-06 04:37:17,956 INFO worker: assigned: [{parts}]\n"
            "2026-12-06 04:39:17,956 INFO worker: processed 5 records\n"
            f"2026-12-06 04:40:17,956 INFO worker: revoked: [{parts}]\n")
    result = api.analyze([tmp_path])
    assert sorted(g.timeline.group for g in result.groups) == [
        "consumers of orders on app-1 (group name not in the logs)",
        "consumers of orders on app-2 (group name not in the logs)"]


def _kip848_fenced(into: Path, drop: str | None = None) -> Path:
    """librdkafka consumers on the consumer protocol at their default level (only the application's callbacks) and
    the broker's log: app-2 was paused past group.consumer.session.timeout.ms and fenced."""
    for log in (LAB / "librdkafka-kip848-session-expired@4.4.0").glob("*.log"):
        text = log.read_text(encoding="utf-8")
        if drop:
            text = "".join(line for line in text.splitlines(keepends=True) if drop not in line)
        (into / log.name).write_text(text, encoding="utf-8")
    return into


def test_a_fenced_kip848_member_is_the_process_that_gave_its_partitions_up_as_it_rejoined(tmp_path: Path):
    # The coordinator fenced 0Cp6... at 21:55:47.434 and gave its partitions to app-1 and app-3; app-2's callbacks
    # still held them (it was paused) until it gave them up at 21:55:53.801, as 0Cp6... joined again (53.805).
    # Held by two processes at once, they are still one group's; app-2 is the member; the group is the coordinator's.
    result = api.analyze([_kip848_fenced(tmp_path)])
    assert [g.timeline.group for g in result.groups] == ["orders"]
    first = result.findings[0]
    assert first.rule == "kip848-fencing" and first.culprit.host == "app-2"
    assert "app-2.log:6" in [e.ref() for e in first.evidence] and "app-2 is its host" in first.summary
    app2 = [e for e in result.event_rows if e["source"] == "app-2.log"]
    assert app2 and all(e["member"] == "0Cp6YepsSQaycjNFYVU5QQ" and e["attrs"]["member_from"] == "coordinator"
                        for e in app2)


def test_without_the_members_rejoin_nothing_ties_the_paused_process(tmp_path: Path):
    # The same logs without the coordinator's line of 0Cp6... joining again: app-2 holding partitions that app-1 and
    # app-3 were given is what two groups reading one topic look like, and nothing says otherwise.
    result = api.analyze([_kip848_fenced(tmp_path, drop="21:55:53,805] INFO [GroupCoordinator id=1 topic=__consumer_"
                                                          "offsets partition=31] [GroupId orders] Member 0Cp6")])
    first = result.findings[0]
    assert first.rule == "kip848-fencing" and first.culprit.host is None
    assert "orders" in [g.timeline.group for g in result.groups]
    assert not any((e.get("attrs") or {}).get("member_from") for e in result.event_rows)


def test_one_group_option_takes_the_unnamed_lines(members_only: Path):
    result = api.analyze([members_only], groups=["orders"])
    assert [g.timeline.group for g in result.groups] == ["orders"]
    [finding] = [f for f in result.findings if f.rule == "poll-timeout"]
    assert finding.group == "orders" and finding.culprit.host == "app-2"
    figures = {f.name: f for f in finding.figures}
    assert figures["max.poll.interval.ms"].value == 20000
    # The rebalance it started is seen from the other members' callbacks (revoked, then assigned more).
    assert figures["rebalances_started"].value == 1
    assert all((e.get("attrs") or {}).get("group_from") == "user" for e in result.event_rows
               if e.get("library") or e.get("component") == "application")


def test_several_group_options_assign_nothing(members_only: Path):
    with pytest.raises(NothingMatched):
        api.analyze([members_only], groups=["orders", "payments"])


def test_aiokafka_leave_and_rejoin_in_process_is_a_poll_timeout():
    result = api.analyze([LAB / "aiokafka-poll-timeout@4.4.0"])
    first = result.findings[0]
    assert first.rule == "poll-timeout" and first.culprit.host == "app-2"
    assert "joined again from the same process" in first.summary
    assert any(e.source == "app-2.log" and "joining group" in e.text for e in first.evidence)
    overrun = {f.name: f for f in first.figures}["overrun_ms"]
    assert 14_000 <= overrun.value <= 16_000      # the lab's 35 s stall minus max_poll_interval_ms=20000


def test_aiokafka_restart_with_stop_is_healthy():
    result = api.analyze([LAB / "aiokafka-healthy-rolling-restart@4.4.0"])
    assert not [f for f in result.findings if f.severity in ("warning", "critical")]
    operations = {r.operation for g in result.groups for r in g.timeline.rebalances}
    assert "poll-timeout" not in operations and "rolling-restart" in operations


def test_aiokafka_lines_carry_their_library():
    result = api.analyze([LAB / "aiokafka-poll-timeout@4.4.0"])
    libraries = {e.get("library") for e in result.event_rows if e.get("source") == "app-2.log" and e.get("library")}
    assert libraries == {"aiokafka"}


def test_kafkajs_session_loss_is_told_as_kafkajs_heartbeats():
    # KafkaJS heartbeats between messages only: the advice is about the message handler, not GC or the network.
    first = api.analyze([LAB / "kafkajs-slow-message@4.4.0"]).findings[0]
    assert first.rule == "heartbeat-expiration" and first.culprit.host == "app-2"
    assert "heartbeat()" in first.remediation and "sessionTimeout" in first.remediation
    assert "GC" not in first.remediation


def test_kafkajs_session_loss_is_found_from_the_clients_lines_alone(tmp_path: Path):
    for log in (LAB / "kafkajs-slow-message@4.4.0").glob("app-*.log"):
        shutil.copy(log, tmp_path / log.name)
    first = api.analyze([tmp_path]).findings[0]
    assert first.rule == "heartbeat-expiration" and first.group == "orders" and first.culprit.host == "app-2"


def test_application_callback_lines_are_read_as_partitions(tmp_path: Path):
    (tmp_path / "app-1.log").write_text(
        "2026-12-06 04:37:17,956 INFO consumer: Assignment: [TopicPartition{topic=orders,partition=0,offset=-1001,"
        "leader_epoch=None,error=None}, TopicPartition{topic=orders,partition=1,offset=-1001,leader_epoch=None,"
        "error=None}]\n"
        "2026-12-06 04:38:17,956 INFO consumer: Revoked: {TopicPartition(topic='orders', partition=1)}\n"
        "2026-12-06 04:39:17,956 INFO consumer: assigned: the new plan was written\n")
    rows = api.analyze([tmp_path]).event_rows
    assert [(e["event"], e["partitions"]) for e in rows] == [
        ("partitions.assigned", ["orders-0", "orders-1"]), ("partitions.revoked", ["orders-1"])]


def test_a_crash_loop_of_processes_sharing_rdkafka_is_one_process_restarting():
    # librdkafka at its default level: no line names a member id, all three processes are client.id 'rdkafka'. The
    # application's callbacks show app-2 assigned again with no revocation between (a new process each time); by
    # elimination each of its lives is the coordinator's member that joined then and was removed on session timeout.
    result = api.analyze([LAB / "librdkafka-crash-loop@4.4.0"])
    first = result.findings[0]
    assert first.rule == "membership-flapping" and first.culprit.host == "app-2"
    tied = {e["member"] for e in result.event_rows if (e.get("attrs") or {}).get("member_from") == "lives"}
    assert {e.get("host") for e in result.event_rows if e.get("member") in tied and e.get("component") != "broker"} \
        == {"app-2"}
    assert len(tied) == 4            # its first process and the three started after a kill
    assert not any(f.rule == "heartbeat-expiration" and f.culprit and f.culprit.host in ("app-1", "app-3")
                   for f in result.findings)


def test_a_process_noticing_its_lost_session_joins_again_as_a_new_member():
    # kafka-python 2.0.2 at INFO names no member id, and all three processes share the client.id kafka-python-2.0.2.
    # app-2, paused past session.timeout.ms, notices on waking ("Heartbeat session expired") and joins again: the
    # member the coordinator removed is the one it had before the notice, the new member the one after it.
    result = api.analyze([LAB / "kafka-python-session-pause@3.9.2"])
    first = result.findings[0]
    assert first.rule == "heartbeat-expiration" and first.culprit.host == "app-2"
    assert {f.name: f.value for f in first.figures}["removals"] == 1
    removed = {e["member"] for e in result.event_rows
               if e["event"] == "member.expired" and e.get("component") == "broker"}
    tied = {e["member"]: e["host"] for e in result.event_rows
            if (e.get("attrs") or {}).get("member_from") == "lives"}
    assert len(removed) == 1 and tied[next(iter(removed))] == "app-2"
    assert sorted(tied.values()).count("app-2") >= 1 and len({m for m, h in tied.items() if h == "app-2"}) == 2


def test_a_process_restarted_after_a_clean_close_is_a_new_member_of_the_same_host():
    # kafka-python at INFO: each process writes "Leaving consumer group" on close(), then a new process appends to the
    # same file and joins with a new member id; six member ids are three hosts restarted once each.
    result = api.analyze([LAB / "kafka-python-healthy-rolling-restart@3.9.2"])
    assert [f.rule for f in result.findings][:1] == ["healthy-operation"]
    assert all(f.severity == "info" for f in result.findings)
    assert {f.name: f.value for f in result.findings[0].figures}["restarted"] == 3


@pytest.mark.parametrize("incident", ["kafka-python-healthy-rolling-restart@3.9.2",
                                      "librdkafka-healthy-rolling-restart-debug@4.4.0"])
def test_from_the_members_logs_alone_generation_1_is_the_group_forming(incident):
    # Without the coordinator's log no line says who arrived first: the rebalance that completes generation 1 (the
    # first the coordinator gives a group) is its forming, and the rolling restart after it is healthy.
    members = sorted((LAB / incident).glob("app-*.log"))
    result = api.analyze(members)
    (group,) = result.groups
    assert group.timeline.rebalances[0].operation == "initial-join"
    assert [f.rule for f in result.findings][:1] == ["healthy-operation"]
    assert "rolling restart of 3 members" in result.findings[0].title


def test_the_librdkafka_leaders_assignor_lines_do_not_claim_the_members_they_list():
    # With debug=cgrp the leader writes ' Member "<member id>" with 0 owned partition(s) ...' for every member: read as
    # attrs.listed_member, the new member ids of the restarted processes stay theirs, not the leader's.
    result = api.analyze([LAB / "librdkafka-healthy-rolling-restart-debug@4.4.0"])
    assert [f.rule for f in result.findings][:1] == ["healthy-operation"]
    assert {f.name: f.value for f in result.findings[0].figures}["restarted"] == 3
    listed = [e for e in result.event_rows if (e.get("attrs") or {}).get("listed_member")]
    assert listed and not any(e.get("member") == e["attrs"]["listed_member"] for e in listed)


def test_a_killed_sarama_process_is_the_member_no_other_log_claims():
    # sarama names its member id only when a session ends ("consumergroup/session/<member id>/1 released"): the killed
    # process never does. The two others claim theirs; the one member left is the process whose log just stops.
    result = api.analyze([LAB / "sarama-crash-kill@4.4.0"])
    first = result.findings[0]
    assert first.rule == "heartbeat-expiration" and first.culprit.host == "app-2"
    assert [g.timeline.group for g in result.groups] == ["orders"]


def test_a_client_line_stating_its_member_id_takes_the_coordinators_group():
    # sarama's "consumergroup/session/<member id>/<generation> released" names no group; the coordinator names the
    # member id in group orders.
    result = api.analyze([LAB / "sarama-session-pause@4.4.0"])
    released = [e for e in result.event_rows if e.get("library") == "sarama" and e.get("member")
                and e.get("host") == "app-2"]
    assert released and all(e["group"] == "orders" for e in released)
    assert result.findings[0].rule == "heartbeat-expiration" and result.findings[0].culprit.host == "app-2"


def test_a_sarama_member_told_unknown_member_id_lost_its_session(tmp_path: Path):
    # Without the broker's log: sarama's partition consumers of the paused process log "kafka: error while consuming
    # orders/2: kafka server: The provided member is not known in the current generation" when it resumes.
    for log in (LAB / "sarama-session-pause@4.4.0").glob("app-*.log"):
        shutil.copy(log, tmp_path / log.name)
    result = api.analyze([tmp_path])
    first = result.findings[0]
    assert first.rule == "heartbeat-expiration" and first.culprit.host == "app-2"


def test_the_kafka_go_leader_does_not_claim_the_members_it_lists():
    # The leader writes "found member: <member id>/..." for every member: those ids are not its own.
    result = api.analyze([LAB / "kafkago-session-pause@4.4.0"])
    first = result.findings[0]
    assert first.rule == "heartbeat-expiration" and first.culprit.host == "app-2"


def test_a_kafka_go_member_told_unknown_member_id_lost_its_session(tmp_path: Path):
    # Without the broker's log: the paused kafka-go Reader's ErrorLogger writes its commit's error whole on resuming,
    # "[25] Unknown Member ID: the member id is not in the current generation".
    for log in (LAB / "kafkago-session-pause@4.4.0").glob("app-*.log"):
        shutil.copy(log, tmp_path / log.name)
    result = api.analyze([tmp_path])
    first = result.findings[0]
    assert first.rule == "heartbeat-expiration" and first.culprit.host == "app-2"
    assert not any(f.rule == "failed-rebalance-loop" for f in result.findings)
