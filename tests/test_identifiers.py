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
              "orders.eu_1-2", "orders eu", "orders eu (blue)", "orders, eu", "orders;eu", "[orders] | eu 'b'",
              "(eu) orders", "orders-1"]
# Lines that name a member id, as the coordinator and the Java client write them ({m}: the member id,
# {c}: the client.id), with the event they give.
OTHER_LINES = [
    ("member.expired", "[2024-03-05 10:00:00,412] INFO [GroupCoordinator 1]: Member {m} in group payments has failed, "
                       "removing it from the group (kafka.coordinator.group.GroupCoordinator)"),
    ("member.leave", "[2024-03-05 10:00:00,412] INFO [GroupCoordinator 1]: Member {m} has left group payments through "
                     "explicit `LeaveGroup`; client reason: the consumer is being closed (kafka.coordinator.group.GroupCoordinator)"),
    ("member.leave", "[2024-03-05 10:00:00,412] INFO [GroupCoordinator 1]: Member[group.instance.id None, member.id {m}] "
                     "in group payments has left, removing it from the group (kafka.coordinator.group.GroupCoordinator)"),
    ("rebalance.assignment_received", "[2024-03-05 10:00:00,412] INFO [GroupCoordinator 1]: Assignment received from leader {m} for group "
                       "payments for generation 13. The group has 2 members, 0 of which are static. "
                       "(kafka.coordinator.group.GroupCoordinator)"),
    ("leave.request", "[2024-03-05 10:00:00,412] INFO [Consumer clientId={c}, groupId=payments] Member {m} sending "
                     "LeaveGroup request to coordinator broker-1:9092 (id: 2147483646 rack: null) due to consumer poll "
                     "timeout has expired. (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"),
]


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


def _event(tmp_path, line):
    (tmp_path / "server.log").write_text(line + "\n", encoding="utf-8")
    events, _ = events_of(tmp_path)
    return [e for e in events if e["event"] not in ("near_miss",)]


@pytest.mark.parametrize("client", CLIENT_IDS)
@pytest.mark.parametrize("kind,line", OTHER_LINES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(OTHER_LINES)])
def test_every_line_naming_a_member_reads_it_whole(tmp_path, client, kind, line):
    member = f"{client}-{UUID}"
    events = _event(tmp_path, line.format(m=member, c=client))
    assert [(e["event"], e["member"]) for e in events] == [(kind, member)]
    if "clientId=" in line:      # the log context's client.id is read up to ", groupId=", commas and all
        assert events[0]["client"] == client and events[0]["group"] == "payments"


@pytest.mark.parametrize("client", CLIENT_IDS)
def test_a_static_members_new_and_old_ids_stay_apart(tmp_path, client):
    """Two ids in one line: the first does not run on into the text between them (a static member's id
    is its group.instance.id, "-" and a UUID; Kafka restricts group.instance.id to [a-zA-Z0-9._-])."""
    new, old = f"{client}-{UUID}", f"{client}-0b5f2d51-9a43-4c3e-8f0e-6f1d2b7c9a10"
    line = (f"[2024-05-01 13:45:12,345] INFO [GroupCoordinator 1]: Static member Some(orders-1) of group orders with "
            f"unknown member id rejoins, assigning new member id {new}, while old member id {old} will be removed. "
            "(kafka.coordinator.group.GroupCoordinator)")
    (event,) = _event(tmp_path, line)
    assert event["member"] == new and event["instance"] == "orders-1"


def test_a_token_id_does_not_reach_a_later_uuid(tmp_path):
    """A member id without a UUID (a KIP-848 id, a test's short id) ends where the token ends, even when the
    reason goes on to name an id that has one."""
    line = PREPARE.format(m="3tXqAbCdEfGhIjKlMnOpQr").replace(
        "consumer poll timeout has expired.", f"rebalance of orders eu-{UUID} requested")
    events = _event(tmp_path, line)
    assert [e["member"] for e in events] == ["3tXqAbCdEfGhIjKlMnOpQr"]


# group.ids a deployment may set (Kafka validates only that one is given), each read whole from the client's
# log-context prefix and from the coordinator's line.
GROUP_IDS = ["or]ders", "orders[eu]", "orders eu", "orders, eu", "[orders]", "orders(eu)"]


@pytest.mark.parametrize("group", GROUP_IDS)
def test_a_group_id_with_brackets_or_spaces_is_read_whole(tmp_path, group):
    member = f"consumer-1-{UUID}"
    (tmp_path / "app.log").write_text(
        f"[2024-03-05 10:00:00,100] INFO [Consumer clientId=consumer-1, groupId={group}] Successfully joined group "
        f"with generation Generation{{generationId=5, memberId='{member}', protocol='range'}} "
        "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)\n"
        f"[2024-03-05 10:00:00,200] INFO [Producer clientId=p-1, transactionalId={group}-0] Discovered transaction "
        "coordinator broker-1:9092 (id: 1 rack: null) (org.apache.kafka.clients.producer.internals.TransactionManager)\n",
        encoding="utf-8")
    (tmp_path / "server.log").write_text(
        f"[2024-03-05 10:00:00,000] INFO [GroupCoordinator 1]: Preparing to rebalance group {group} in state "
        "PreparingRebalance with old generation 4 (__consumer_offsets-3) (reason: Adding new member "
        f"{member} with group instance id None; client reason: need to re-join with the given member-id: {member}) "
        "(kafka.coordinator.group.GroupCoordinator)\n", encoding="utf-8")
    events, _ = events_of(tmp_path)
    joined = [e for e in events if e["event"] == "join.success"]
    assert [(e["group"], e["member"], e["client"]) for e in joined] == [(group, member, "consumer-1")]
    assert [e["group"] for e in events if e["event"] == "rebalance.prepare"] == [group]


def test_a_librdkafka_handle_with_spaces_in_client_id_is_read_whole(tmp_path):
    """librdkafka names its handle client.id + "#consumer-N"; a binding's logger prints it in brackets."""
    source = REPO / "fixtures" / "clients" / "librdkafka" / "python-logging.log"
    text = source.read_text(encoding="utf-8")
    (tmp_path / "app.log").write_text(text.replace("rdkafka#consumer-1", "orders app (eu)#consumer-1"),
                                      encoding="utf-8")
    events, _ = events_of(tmp_path)
    timeouts = [e for e in events if e["event"] == "poll.timeout"]
    assert timeouts and {e["client"] for e in timeouts} == {"orders app (eu)#consumer-1"}
    assert {e["client"] for e in events} <= {"orders app (eu)#consumer-1", None}
