"""unreleased-instance-id on logs real brokers and clients wrote (fixtures/lab/kip848-static-unreleased-instance-id@*):
the restarted process named, the holder and the counts stated, the old member's fencing folded into it; a static
member that closed before its restart is not refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rebalance_doctor import api

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
RECORDED = ["kip848-static-unreleased-instance-id@4.2.1", "kip848-static-unreleased-instance-id@4.4.0"]


@pytest.mark.parametrize("incident", RECORDED)
def test_the_restarted_static_member_is_refused_and_named(incident):
    findings = api.analyze([str(LAB / incident)]).findings
    assert [f.rule for f in findings] == ["unreleased-instance-id"], "the old member's fencing is part of this story"
    [finding] = findings
    assert finding.culprit.host == "app-2" and "orders-app-2" in finding.summary and "owner " in finding.summary
    assert {f.name: f.value for f in finding.figures} == {"refusals": 1, "members_refused_requests": 1}
    assert "group.consumer.session.timeout.ms" in finding.remediation and "close()" in finding.remediation


def test_the_members_own_fatal_heartbeat_says_it_without_the_coordinators_log(tmp_path):
    for log in (LAB / RECORDED[1]).glob("app-*.log"):
        shutil.copy(log, tmp_path / log.name)
    [finding] = [f for f in api.analyze([str(tmp_path)]).findings if f.rule == "unreleased-instance-id"]
    assert finding.culprit.host == "app-2"
    assert {f.name: f.value for f in finding.figures} == {"members_refused_requests": 1}
