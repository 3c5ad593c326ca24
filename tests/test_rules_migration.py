"""protocol-migration-refused on logs real brokers and clients wrote (fixtures/lab/migration-*): the refused
member named, the coordinator's reason and the counts stated, with and without the coordinator's log; the healthy
online migrations and a classic group's assignor refusal stay out of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rebalance_doctor import api

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"

CASES = [
    # (incident, reason, refused protocol, the coordinator's reason)
    ("migration-disabled-refused@4.4.0",
     "policy disabled: a classic member's JoinGroup to the consumer group is refused (4.3.1+)",
     "classic", "the group migration is disabled"),
    ("migration-upgrade-refused@4.4.0",
     "policy disabled: a consumer-protocol member's heartbeat to the classic group is refused",
     "consumer", "online upgrade is disabled"),
    ("migration-upgrade-refused@4.2.1",
     "the same refusal at 4.2.1, whose coordinator words it the same way",
     "consumer", "online upgrade is disabled"),
]


def _finding(analysis, rule):
    return [f for f in analysis.findings if f.rule == rule]


@pytest.mark.parametrize("incident,reason,protocol,words", CASES, ids=[c[0] for c in CASES])
def test_the_refused_member_is_named_with_the_coordinators_reason(incident, reason, protocol, words):
    [finding] = _finding(api.analyze([str(LAB / incident)]), "protocol-migration-refused")
    assert finding.severity == "warning" and finding.culprit.host == "app-3", reason
    assert words in finding.summary and f"{protocol} refused" in finding.cause
    figures = {f.name: f.value for f in finding.figures}
    assert figures == {"refusals": 1, "members_refused_requests": 1}
    assert "group.consumer.migration.policy=bidirectional" in finding.remediation
    assert any("kafka-1.log" in e.ref() for e in finding.evidence) and any("app-3.log" in e.ref() for e in finding.evidence)


@pytest.mark.parametrize("incident,reason,protocol,words", CASES[:2], ids=[c[0] for c in CASES[:2]])
def test_without_the_coordinators_log_the_members_own_lines_say_it(incident, reason, protocol, words, tmp_path):
    for log in (LAB / incident).glob("app-*.log"):
        shutil.copy(log, tmp_path / log.name)
    [finding] = _finding(api.analyze([str(tmp_path)]), "protocol-migration-refused")
    assert finding.culprit.host == "app-3" and words not in finding.summary
    assert "not included" in finding.summary
    assert {f.name: f.value for f in finding.figures} == {"members_refused_requests": 1}


@pytest.mark.parametrize("incident", ["migration-healthy-online-upgrade@4.2.1", "migration-healthy-online-upgrade@4.4.0",
                                      "assignor-mismatch@4.4.0"])
def test_a_migration_that_works_or_a_classic_groups_assignor_refusal_is_not_a_migration_refusal(incident):
    analysis = api.analyze([str(LAB / incident)])
    assert not _finding(analysis, "protocol-migration-refused")
