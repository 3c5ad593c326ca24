"""KIP-1071 streams groups and KIP-932 share groups, recorded against real Kafka (fixtures/lab), judged with
the KIP-848 model: a member whose session expires is fenced, and the finding names the group type's own
broker setting; their healthy operations are said healthy (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    assert f"{shown} protocol)" in analysis.to_markdown()


@pytest.mark.parametrize("incident", ["share-healthy-scale-out@4.4.0", "streams-group-healthy-rolling-restart@4.4.0",
                                      "streams-group-healthy-scale-out@4.2.1"])
def test_their_healthy_operations_are_said_healthy(incident):
    analysis = api.analyze([str(LAB / incident)])
    (group,) = analysis.groups
    assert [f.rule for f in group.findings] == ["healthy-operation"]
    assert all(r.verdict == "expected" for r in group.timeline.rebalances if not r.truncated)
