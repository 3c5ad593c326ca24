"""Member ids as Kafka prints them (issue 34 item 5): a Java client's member id is its client.id, "-" and a
UUID, and client.id may hold any character (ConsumerConfig puts no validator on it; only group.instance.id is
restricted, to [a-zA-Z0-9._-] by JoinGroupRequest.validateGroupInstanceId). The coordinator's reason names the
member; a parenthesis in the client.id must not cut it short."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import events_of

REPO = Path(__file__).resolve().parent.parent
UUID = "74c9df6a-cc01-4cdd-8474-031b7f26144b"
PREPARE = ("[2024-03-05 10:00:00,412] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state "
           "PreparingRebalance with old generation 12 (__consumer_offsets-13) (reason: Removing member {m} on "
           "LeaveGroup; client reason: consumer poll timeout has expired.) (kafka.coordinator.group.GroupCoordinator)\n")

# client.ids a deployment may set (any character is legal), each of which must come back whole.
CLIENT_IDS = ["orders(eu)", "orders(eu)(b)", "orders[eu]", "orders]", "orders|eu", "orders\"eu\"", "orders'eu'",
              "orders.eu_1-2"]


@pytest.mark.parametrize("client", CLIENT_IDS)
def test_the_coordinator_names_the_whole_member_id(tmp_path, client):
    member = f"{client}-{UUID}"
    (tmp_path / "server.log").write_text(PREPARE.format(m=member), encoding="utf-8")
    events, _ = events_of(tmp_path)
    assert [e["member"] for e in events if e["event"] == "rebalance.prepare"] == [member]


def test_a_parenthesis_in_client_id_does_not_double_poll_timeouts_or_name_another_culprit(tmp_path):
    source = REPO / "fixtures" / "incidents" / "poll-timeout-storm"
    for path in source.rglob("*.log"):
        target = tmp_path / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8").replace("consumer-payments-1", "orders(eu)"),
                          encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", "analyze", str(tmp_path), "-q",
                          "--format", "json", "--fail-on", "never"], capture_output=True, text=True,
                         cwd=str(REPO), timeout=120)
    assert run.returncode == 0, run.stderr
    findings = json.loads(run.stdout)["findings"]
    polls = [f for f in findings if f["rule"] == "poll-timeout"]
    assert len(polls) == 1
    assert polls[0]["summary"].startswith("5 poll timeout(s) by orders(eu)@node2;"), polls[0]["summary"]
