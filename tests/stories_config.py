"""Stories for issue 17's configuration and assignment rules (config-heartbeat-ratio, assignor-mismatch,
eager-assignor, rebalance-stall, mass-expiry, assignment-skew), written in Kafka's own wording through
tests/stories.py's protocol-exact helpers."""

from __future__ import annotations

from tests.stories import Broker, ClassicGroup, Consumer, Story, uuid

TIGHT = {"session.timeout.ms": "10000", "heartbeat.interval.ms": "8000"}
THIRD = {"session.timeout.ms": "30000", "heartbeat.interval.ms": "10000"}
INVALID_SESSION = ("The session timeout is not within the range allowed by the broker (as configured by "
                   "group.min.session.timeout.ms and group.max.session.timeout.ms).")


def _group(settings_a: dict, settings_b: dict | None = None, protocol: str = "range"):
    story = Story("orders")
    group = ClassicGroup(story, Broker(story), protocol=protocol)
    a = group.consumer("node1", "consumer-orders-1", 1)
    b = group.consumer("node2", "consumer-orders-1", 2)
    a.start(settings_a)
    b.start(settings_b if settings_b is not None else settings_a)
    group.start_with(a, b)
    return story, group, a, b


def expired_while_alive(settings: dict = TIGHT):
    """node2 pauses a few seconds; the coordinator removes it; its own log goes on (same process)."""
    story, group, a, b = _group(settings)
    group.tick(30)
    b.processing("processed a batch of 500 records")
    group.tick(9)
    group.expire(b)
    story.later(1500)
    b.heartbeat_unknown(group.gen - 1)
    b.lost()
    b.member = f"consumer-orders-1-{uuid(12)}"
    group.join(b, start=False)
    group.tick(30)
    b.processing("processed a batch of 500 records")
    return story


def expired_and_died(settings: dict = TIGHT):
    """node2's process is killed: its log ends, the coordinator removes it one session later."""
    story, group, a, b = _group(settings)
    group.tick(30)
    b.processing("processed a batch of 500 records")
    group.tick(10)
    group.expire(b)
    group.tick(30)
    a.processing("processed a batch of 500 records")
    return story


def tight_no_harm():
    """A tight heartbeat.interval.ms and nothing happening: an advisory."""
    story, group, a, b = _group(TIGHT)
    group.tick(60)
    a.processing()
    return story


def kip848_tight():
    """group.protocol=consumer ignores the client's session and heartbeat settings: no remark."""
    story, group, a, b = _group({**TIGHT, "group.protocol": "consumer"})
    group.tick(60)
    a.processing()
    return story


def mixed_session_timeouts():
    story, group, a, b = _group(THIRD, {"session.timeout.ms": "45000", "heartbeat.interval.ms": "3000"})
    group.tick(60)
    a.processing()
    return story


def session_refused():
    """node3 starts with session.timeout.ms=3000 (below group.min.session.timeout.ms): every JoinGroup fails."""
    story, group, a, b = _group(THIRD)
    c = Consumer(story, "node3", "consumer-orders-1", "", None, "range")
    group.tick(30)
    c.start({"session.timeout.ms": "3000", "heartbeat.interval.ms": "1000"})
    for _ in range(3):
        story.later(100)
        c.joining()
        story.later(5)
        c.say(f"JoinGroup failed due to fatal error: {INVALID_SESSION}", level="ERROR",
              logger="org.apache.kafka.clients.consumer.internals.AbstractCoordinator")
        story.later(1000)
    return story
