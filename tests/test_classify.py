"""The classification: every rebalance's protocol, operation, verdict and culprit, from protocol-exact stories.

Each case is a small incident written in Kafka's own wording (tests/stories.py) and read back
through the real reader; the table says what each rebalance must be classified as, and why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_doctor.classify.operations import markdown_table, vocabulary
from rebalance_doctor.timeline.model import Culprit
from tests.stories import Broker, ClassicGroup, Consumer, Story, uuid

DOCS = Path(__file__).resolve().parents[1] / "docs" / "analyze.md"


def three(protocol: str = "range", broker: bool = True):
    story = Story("orders")
    group = ClassicGroup(story, Broker(story) if broker else None, protocol=protocol)
    members = [group.consumer(f"node{i}", "consumer-orders-1", i) for i in (1, 2, 3)]
    group.start_with(*members)
    return story, group, members


def eager_rolling_restart():
    story, group, members = three("range")
    for i, c in enumerate(members):
        group.tick(60)
        group.restart(c, 10 + i)
    return story


def cooperative_rolling_restart():
    story, group, members = three("cooperative-sticky")
    for i, c in enumerate(members):
        group.tick(60)
        group.restart(c, 10 + i)
    return story


def cooperative_scale_out():
    story, group, members = three("cooperative-sticky")
    group.tick(60)
    group.join(group.consumer("node4", "consumer-orders-1", 4))
    return story


def poll_timeout_and_back():
    story, group, members = three("range")
    group.tick(60)
    group.poll_timeout(members[1])
    group.tick(30)
    group.join(group.consumer("node2", "consumer-orders-1", 22), start=False)
    return story


def expiry(paused: bool):
    story, group, members = three("range")
    group.tick(10)
    group.join(group.consumer("node4", "consumer-orders-4", 4))
    group.tick(60)
    members[2].processing("still working")
    group.tick(50)
    group.expire(members[2])
    if paused:
        group.tick(5)
        members[2].heartbeat_unknown(40)
        members[2].lost()
    for c in members[:2]:
        group.tick(60)
        c.processing()
    return story


def restart_loop():
    story, group, members = three("range")
    flapping = members[2]
    for i in range(3):
        group.tick(40)
        flapping = group.restart(flapping, 30 + i, away_s=5)
    return story


def deploy():
    story, group, members = three("range")
    group.tick(60)
    group.leave(members[0])
    group.tick(10)
    group.join(group.consumer("node9", "consumer-orders-9", 9))
    return story


CASES = [
    # (id, reason, story, expected [(operation, verdict, culprit host)] per rebalance)
    ("eager-rolling-restart", "each member leaves on close and the same client.id@host returns: a restart",
     eager_rolling_restart, [("rolling-restart", "expected", h) for h in ("node1", "node1", "node2", "node2",
                                                                          "node3", "node3")]),
    ("cooperative-rolling-restart", "the return revokes partitions from the others: its followup is expected",
     cooperative_rolling_restart, [("rolling-restart", "expected", "node1"), ("rolling-restart", "expected", "node1"),
                                   ("cooperative-followup", "expected", None),
                                   ("rolling-restart", "expected", "node2"), ("rolling-restart", "expected", "node2"),
                                   ("cooperative-followup", "expected", None),
                                   ("rolling-restart", "expected", "node3"), ("rolling-restart", "expected", "node3"),
                                   ("cooperative-followup", "expected", None)]),
    ("cooperative-scale-out", "a new member joins; the members giving it partitions rejoin once more",
     cooperative_scale_out, [("scale-out", "expected", "node4"), ("cooperative-followup", "expected", None)]),
    ("poll-timeout", "the member that exceeded max.poll.interval.ms left, and its return is the same fault",
     poll_timeout_and_back, [("poll-timeout", "harmful", "node2"), ("poll-timeout", "harmful", "node2")]),
    ("expiry-while-alive", "removed on session timeout while its own log went on: the session timed out",
     lambda: expiry(paused=True), [("scale-out", "expected", "node4"), ("session-timeout", "harmful", "node3")]),
    ("expiry-after-death", "removed on session timeout after its own log had ended: the process died",
     lambda: expiry(paused=False), [("scale-out", "expected", "node4"), ("crash", "harmful", "node3")]),
    ("restart-loop", "one member restarting again and again while the others do not is no rolling restart",
     restart_loop, [("restart-loop", "harmful", "node3")] * 6),
    ("deploy", "a member leaves for good and a new one takes its place",
     deploy, [("deploy", "expected", "node1"), ("deploy", "expected", "node9")]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_classification_cases(case, tmp_path):
    name, reason, story, expected = case
    analysis = story().analyze(tmp_path)
    [g] = analysis.groups
    got = [(r.operation, r.verdict, r.culprit.host if r.culprit and r.operation != "cooperative-followup" else None)
           for r in g.timeline.rebalances]
    assert got == expected, f"{name} ({reason})"


def test_protocols_are_read_from_the_lines(tmp_path):
    eager = eager_rolling_restart().analyze(tmp_path / "e").groups[0].timeline
    cooperative = cooperative_rolling_restart().analyze(tmp_path / "c").groups[0].timeline
    assert {r.protocol for r in eager.rebalances} == {"eager"}
    assert {r.protocol for r in cooperative.rebalances} == {"cooperative"}


def test_same_client_id_on_several_hosts_names_each_host(tmp_path):
    timeline = eager_rolling_restart().analyze(tmp_path).groups[0].timeline
    labels = {r.culprit.label for r in timeline.rebalances}
    assert labels == {"consumer-orders-1@node1", "consumer-orders-1@node2", "consumer-orders-1@node3"}
    assert {r.culprit.client for r in timeline.rebalances} == {"consumer-orders-1"}


def test_broker_only_namesakes_in_the_group_at_once_are_two_members(tmp_path):
    """001's shape: two members with the same client.id, one joining while the other is in the group."""
    story = Story("rbgh664")
    broker = Broker(story)
    old = f"source-{uuid(1)}"
    new = f"source-{uuid(2)}"
    broker.new_member(new, 12)
    broker.stabilized(13, 2)
    broker.assignment(13, new, 2)
    story.at(95)
    broker.expired(old, 13)
    timeline = story.analyze(tmp_path).groups[0].timeline
    first, second = timeline.rebalances
    assert (first.operation, second.operation) == ("scale-out", "session-timeout")
    assert first.culprit.member == new and second.culprit.member == old
    assert second.culprit.label == "source (member 00000001)" and first.culprit.label == "source (member 00000002)"


def test_culprit_label():
    assert Culprit(host="node2", client="consumer-payments-1").label == "consumer-payments-1@node2"
    assert Culprit(host="node2", client="c", member="c-6b1f2c3d-0000", ambiguous=True).label == "c@node2 (member 6b1f2c3d)"
    assert Culprit(host="n", client="c", instance="prices-1").label == "c@n (instance prices-1)"


def test_operations_are_documented():
    text = DOCS.read_text()
    block = text.split("<!-- operations:start -->\n", 1)[1].split("<!-- operations:end -->", 1)[0]
    assert block == markdown_table(), "docs/analyze.md's operations table is out of date with operations.toml"
    assert {item["verdict"] for item in vocabulary().values()} <= {"expected", "harmful", "unknown", "inherit"}
