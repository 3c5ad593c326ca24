"""KIP-1071 streams groups and KIP-932 share groups, recorded against real Kafka (fixtures/lab), judged with
the KIP-848 model: a member whose session expires is fenced, and the finding names the group type's own
broker setting; their healthy operations are said healthy (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import events_of

from rebalance_doctor import api

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"


@pytest.mark.parametrize("incident, setting, shown", [
    ("share-session-expired@4.4.0", "group.share.session.timeout.ms", "share"),
    ("share-session-expired@4.2.1", "group.share.session.timeout.ms", "share"),
    ("streams-group-session-expired@4.4.0", "group.streams.session.timeout.ms", "streams-group"),
    ("streams-group-session-expired@4.2.1", "group.streams.session.timeout.ms", "streams-group"),
])
def test_a_member_whose_session_expired_is_fenced_with_its_group_types_setting(incident, setting, shown):
    analysis = api.analyze([str(LAB / incident)])
    (group,) = analysis.groups
    first = group.findings[0]
    assert first.rule == "kip848-fencing" and first.severity == "warning"
    assert first.culprit.host == "app-2"
    assert setting in first.remediation and "group.consumer." not in first.remediation
    assert group.timeline.protocol_shown == shown
    markdown = analysis.to_markdown()
    assert f"{shown} protocol)" in markdown
    # The groups table (every format) and the JSON group name the group type, not the KIP-848 protocol it runs on.
    assert f"| orders | consumer | {shown} |" in markdown or f"| order-counts | streams | {shown} |" in markdown
    assert [g["protocol"] for g in json.loads(analysis.to_json())["groups"]] == [shown]
    assert [g.protocol for g in analysis.answer.groups] == [shown]


@pytest.mark.parametrize("incident", ["share-healthy-scale-out@4.4.0", "streams-group-healthy-rolling-restart@4.4.0",
                                      "streams-group-healthy-scale-out@4.2.1", "streams-group-healthy-static-restart@4.4.0"])
def test_their_healthy_operations_are_said_healthy(incident):
    analysis = api.analyze([str(LAB / incident)])
    (group,) = analysis.groups
    assert [f.rule for f in group.findings] == ["healthy-operation"]
    assert all(r.verdict == "expected" for r in group.timeline.rebalances if not r.truncated)


def test_a_static_streams_member_that_comes_back_returns_without_a_rebalance():
    # 4.4: app-2 (group.instance.id order-counts-app-2-1) closes, "temporarily left the streams group", and its
    # new process "re-joins the streams group" 6 s later with the same epoch and tasks: a return, as under the
    # consumer protocol, not a rebalance opened by the leave.
    analysis = api.analyze([str(LAB / "streams-group-healthy-static-restart@4.4.0")])
    (group,) = analysis.groups
    timeline = group.timeline
    assert [r.generation for r in timeline.rebalances] == [2, 3, 4]      # "Bumped streams group epoch to N"
    assert all(r.end.second < 39 for r in timeline.rebalances)         # none reaches app-2's leave at 01:00:39
    (rejoin,) = timeline.rejoins
    assert rejoin["generation"] == 4 and rejoin["instance"] == "order-counts-app-2-1"
    assert [e["event"] for e in rejoin["events"]][:2] == ["member.static_replaced", "member.assignment"]
    # It got its tasks back: the broker's assignment line names them (active tasks, their epochs beside them).
    returned = rejoin["events"][1]
    assert returned["tasks"] == ["0-0", "0-2", "0-4"] and returned["attrs"]["task_epochs"] == "0,0,0"


BROKER = "[2026-12-07 01:00:{s},000] {level} [GroupCoordinator id=1{where}] {message} (org.apache.kafka.coordinator.{logger})\n"
OFFSETS = " topic=__consumer_offsets partition=11"


def test_4_4_broker_lines_are_read_into_fields(tmp_path):
    lines = [
        ("DEBUG", OFFSETS, "[GroupId orders] Member EQtIsHazTS6JpDRm_kK8aw new assignment state: epoch=3, previousEpoch=2, "
         "state=STABLE, assignedPartitions=[kmmUe0CDQ5qmPF1C6xXjPw-0@2, kmmUe0CDQ5qmPF1C6xXjPw-1@3] and "
         "revokedPartitions=[kmmUe0CDQ5qmPF1C6xXjPw-2@2].", "group.GroupMetadataManager"),
        ("INFO", OFFSETS, "[GroupId order-counts][MemberId U4FC1aHNSuGweIR9BYOU0g] Static member U4FC1aHNSuGweIR9BYOU0g "
         "with instance id order-counts-app-2-1 temporarily left the streams group.", "group.GroupMetadataManager"),
        ("WARN", OFFSETS, "[GroupId order-counts] The configured task assignor 'rack-aware' is not available; falling back "
         "to the default assignor 'sticky'.", "group.GroupMetadataManager"),
        ("ERROR", "", "Failed to write records to __consumer_offsets-11 due to an unexpected error: The server "
         "experienced an unexpected error when processing the request.", "common.runtime.CoordinatorRuntime"),
        ("DEBUG", "", "Failed to write records to __consumer_offsets-11 because the producer 1841 with epoch 3 has been "
         "fenced.", "common.runtime.CoordinatorRuntime"),
    ]
    path = tmp_path / "server.log"
    path.write_text("".join(BROKER.format(s=10 + i, level=level, where=where, message=message, logger=logger)
                            for i, (level, where, message, logger) in enumerate(lines)), encoding="utf-8")
    events, _ = events_of(path, base_date="2026-12-01")
    assignment, left, fallback, failed, fenced = events
    # KIP-1251: topicId-p@assignmentEpoch is the partition topicId-p, its epoch beside it.
    assert assignment["event"] == "member.assignment"
    assert assignment["partitions"] == ["kmmUe0CDQ5qmPF1C6xXjPw-0", "kmmUe0CDQ5qmPF1C6xXjPw-1"]
    assert assignment["attrs"]["partition_epochs"] == "2,3"
    assert assignment["attrs"]["partitions_2"] == "[kmmUe0CDQ5qmPF1C6xXjPw-2]"
    assert assignment["attrs"]["partitions_2_epochs"] == "2"
    assert (left["event"], left["member"], left["instance"]) == ("member.leave", "U4FC1aHNSuGweIR9BYOU0g", "order-counts-app-2-1")
    assert left["attrs"]["temporarily"]
    assert (fallback["event"], fallback["group"], fallback["protocol"]) == ("group.assignor_fallback", "order-counts", "sticky")
    assert fallback["attrs"]["configured_assignor"] == "rack-aware"
    assert (failed["event"], failed["partitions"]) == ("coordinator.write_failed", ["__consumer_offsets-11"])
    assert failed["error"].startswith("The server experienced")
    assert (fenced["event"], fenced["attrs"]["producer_id"], fenced["attrs"]["producer_epoch"]) == (
        "coordinator.write_failed", "1841", "3")


def test_an_epoch_bump_for_a_validated_topology_is_a_metadata_change():
    # No member joined or left at epoch 3: the coordinator validated topology epoch 0 once its internal topics existed
    # ("Bumped streams group epoch to 3 with metadata hash 6290... and validated topic epoch 0"; epoch 2 said -1).
    analysis = api.analyze([str(LAB / "streams-group-application-shutdown@4.4.0")])
    (group,) = analysis.groups
    [round3] = [r for r in group.timeline.rebalances if r.generation == 3]
    assert round3.trigger_kind == "metadata-change" and round3.operation == "metadata-change"
    assert round3.verdict == "expected" and round3.old_generation == 2
    assert "validated topology epoch changed (-1 -> 0)" in round3.trigger
    assert round3.trigger_evidence.ref() == "kafka-1.log:3114"
    # A bump a member's join caused keeps its member as the trigger.
    [round4] = [r for r in group.timeline.rebalances if r.generation == 4]
    assert round4.trigger_kind != "metadata-change"
