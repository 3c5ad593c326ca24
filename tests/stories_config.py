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


COOP_FIRST = ("[class org.apache.kafka.clients.consumer.CooperativeStickyAssignor, "
              "class org.apache.kafka.clients.consumer.RangeAssignor]")
RANGE_ONLY = "[class org.apache.kafka.clients.consumer.RangeAssignor]"
COOP_ONLY = "[class org.apache.kafka.clients.consumer.CooperativeStickyAssignor]"
INCONSISTENT = ("The group member's supported protocols are incompatible with those of existing members or first "
                "group member tried to join with empty protocol type or empty protocol list.")


def _assigned_group(strategy: str, protocol: str):
    story = Story("orders")
    group = ClassicGroup(story, Broker(story), protocol=protocol)
    a = group.consumer("node1", "consumer-orders-1", 1)
    b = group.consumer("node2", "consumer-orders-1", 2)
    for c in (a, b):
        c.start({"partition.assignment.strategy": strategy})
    group.start_with(a, b)
    return story, group, a, b


def refused_member():
    """The group runs [CooperativeStickyAssignor]; node3 starts with [RangeAssignor] and is refused at every join."""
    story, group, a, b = _assigned_group(COOP_ONLY, "cooperative-sticky")
    group.tick(30)
    c = Consumer(story, "node3", "consumer-orders-1", "", None, "range")
    c.start({"partition.assignment.strategy": RANGE_ONLY})
    for _ in range(4):
        story.later(200)
        c.request_join("rebalance failed due to 'The group member's supported protocols are incompatible'")
        c.joining()
        story.later(5)
        c.say(f"JoinGroup failed due to fatal error: {INCONSISTENT}", level="ERROR")
        story.later(1000)
    return story


def eager_newcomer():
    """Members configured [CooperativeStickyAssignor, RangeAssignor] run cooperative-sticky; node3 joins with
    [RangeAssignor] only: the group falls back to range and every rebalance revokes everything."""
    story, group, a, b = _assigned_group(COOP_FIRST, "cooperative-sticky")
    group.tick(20)
    group.rebalance(starter=a)                 # the group selecting cooperative-sticky (a metadata change)
    group.protocol = "range"
    for c in group.members:
        c.protocol = "range"
    group.tick(30)
    c = group.consumer("node3", "consumer-orders-1", 3)
    c.start({"partition.assignment.strategy": RANGE_ONLY})
    group.join(c, start=False)
    group.tick(60)
    group.leave(a)                             # node1 restarts (same configuration): everything revoked again
    group.tick(5)
    again = group.consumer("node1", "consumer-orders-1", 11)
    again.start({"partition.assignment.strategy": COOP_FIRST})
    group.join(again, start=False)
    return story


def upgrade_first_bounce():
    """The two-bounce upgrade under way: both members ran [RangeAssignor]; node1 restarted with
    [CooperativeStickyAssignor, RangeAssignor], node2 not yet; the group stays range by design."""
    story, group, a, b = _assigned_group(RANGE_ONLY, "range")
    group.tick(60)
    group.leave(a)
    group.tick(5)
    again = group.consumer("node1", "consumer-orders-1", 11)
    again.start({"partition.assignment.strategy": COOP_FIRST})
    group.join(again, start=False)
    group.tick(30)
    b.processing()
    return story


def consistent_lists():
    """Every member lists [CooperativeStickyAssignor, RangeAssignor]; a newcomer too: nothing to say."""
    story, group, a, b = _assigned_group(COOP_FIRST, "cooperative-sticky")
    group.tick(30)
    c = group.consumer("node3", "consumer-orders-1", 3)
    c.start({"partition.assignment.strategy": COOP_FIRST})
    group.join(c, start=False)
    group.tick(30)
    return story


def eager_restarts(rounds: int, protocol: str = "range", gap_s: float = 60):
    """Members restarted one after another `rounds` times in a group on `protocol`."""
    story = Story("orders")
    group = ClassicGroup(story, Broker(story), protocol=protocol)
    members = [group.consumer(f"node{i}", "consumer-orders-1", i) for i in (1, 2, 3)]
    strategy = COOP_ONLY if protocol == "cooperative-sticky" else RANGE_ONLY
    for c in members:
        c.start({"partition.assignment.strategy": strategy})
    group.start_with(*members)
    n = 10
    for i in range(rounds):
        group.tick(gap_s)
        c = group.members[0]
        n += 1
        group.restart(c, n, away_s=5)
    return story


def _node2_killed():
    """A range group of node1 and node2 (max.poll.interval.ms=30000, session.timeout.ms=45000) stable for 30 s,
    then node2's process killed after its last batch (no LeaveGroup)."""
    story = Story("orders")
    broker = Broker(story)
    group = ClassicGroup(story, broker, protocol="range")
    settings = {"max.poll.interval.ms": "30000", "session.timeout.ms": "45000"}
    a = group.consumer("node1", "consumer-orders-1", 1)
    b = group.consumer("node2", "consumer-orders-1", 2)
    for c in (a, b):
        c.start(settings)
    group.start_with(a, b)
    for c in (a, b):
        c.joined(group.gen)
        c.synced(group.gen)
    group.tick(30)
    b.processing("processed a batch of 500 records")           # its last line: the process is killed here
    return story, broker, group, settings, a, b


def _stabilized(story, broker, group, members):
    """The next generation of ``members`` (the first leads), each assigned its share of orders' 6 partitions."""
    group.gen += 1
    broker.stabilized(group.gen, len(members))
    for m in members:
        m.joined(group.gen)
    story.later(20)
    broker.assignment(group.gen, members[0].member, len(members))
    for i, m in enumerate(members):
        m.synced(group.gen)
        m.assigned([f"orders-{p}" for p in range(6) if p % len(members) == i])
    return story


def _joins_and_node1_follows(story, broker, group, newcomer, a):
    """A new process joins (MemberIdRequired: its second JoinGroup starts the rebalance); node1 (``a``) rejoins
    0.9 s later, revoking what it owned (range: eager)."""
    reason = f"need to re-join with the given member-id: {newcomer.member}"
    newcomer.request_join(reason)
    newcomer.joining()
    broker.new_member(newcomer.member, group.gen, reason)
    story.later(900)
    a.request_join("group is already rebalancing")
    a.revoked(group.owned[a.member])
    a.joining()


def crashed_member_removed_at_rebalance_timeout():
    """node2's process is killed (no LeaveGroup) and its orchestrator starts a new one 8 s later, which joins
    under a new member id; the old member id, whose session (45 s) has not expired yet, is the one the
    rebalance waits for, and the coordinator removes it at the rebalance timeout (max.poll.interval.ms=30000)."""
    story, broker, group, settings, a, b = _node2_killed()
    group.tick(8)
    again = group.consumer("node2", "consumer-orders-1", 3)
    again.start(settings)
    story.later(1200)
    _joins_and_node1_follows(story, broker, group, again, a)
    story.later(29_100)
    broker.say(f"Group orders removed dynamic members who haven't joined: Set({b.member})")
    return _stabilized(story, broker, group, [a, again])


def crashed_member_restarts_during_rebalance():
    """node2's process is killed; node3 joins 2 s later and starts a rebalance; node1 rejoins at once and
    node2's new process, started by its orchestrator during the rebalance, joins 20 s later under a new member
    id. The coordinator (2.7: no line for members removed at the rebalance timeout) stabilizes at the rebalance
    timeout without the old member id: the late join is a new process's, not the dead one's rejoin."""
    story, broker, group, settings, a, b = _node2_killed()
    group.tick(2)
    c = group.consumer("node3", "consumer-orders-1", 3)
    c.start(settings)
    _joins_and_node1_follows(story, broker, group, c, a)
    story.later(18_000)
    again = group.consumer("node2", "consumer-orders-1", 4)
    again.start(settings)
    story.later(1_100)
    again.request_join(f"need to re-join with the given member-id: {again.member}")
    again.joining()
    story.later(10_000)
    return _stabilized(story, broker, group, [a, c, again])


def stalled_rebalance(late_s: float = 50, removed: bool = False, heartbeat_ms: str = "3000"):
    """node3 joins a running group; node1 rejoins at once, node2 (busy with a batch) only after `late_s`,
    or never (`removed`: the coordinator drops it at the rebalance timeout)."""
    story = Story("orders")
    broker = Broker(story)
    group = ClassicGroup(story, broker, protocol="range")
    a = group.consumer("node1", "consumer-orders-1", 1)
    b = group.consumer("node2", "consumer-orders-1", 2)
    for c in (a, b):
        c.start({"heartbeat.interval.ms": heartbeat_ms, "max.poll.interval.ms": "60000"})
    group.start_with(a, b)
    group.tick(30)
    c = group.consumer("node3", "consumer-orders-1", 3)
    c.start({"heartbeat.interval.ms": heartbeat_ms, "max.poll.interval.ms": "60000"})
    _joins_and_node1_follows(story, broker, group, c, a)
    story.later(2000)
    b.request_join("group is already rebalancing")
    b.processing("processing a batch of 500 records")
    members = [a, c]
    if removed:
        story.later(57_000)
        broker.say(f"Group orders removed dynamic members who haven't joined: Set({b.member})")
    else:
        story.later(late_s * 1000 - 2900)
        b.revoked(group.owned[b.member])
        b.joining()
        members = [a, b, c]
    story.later(100)
    group.gen += 1
    broker.stabilized(group.gen, len(members))
    for m in members:
        m.joined(group.gen)
    story.later(20)
    broker.assignment(group.gen, a.member, len(members))
    for i, m in enumerate(members):
        m.synced(group.gen)
        m.assigned([f"orders-{p}" for p in range(6) if p % len(members) == i])
    return story


class _Skewed(ClassicGroup):
    """The leader hands node1 every partition but one (what range does with single-partition topics)."""

    def _target(self):
        names = sorted(c.member for c in self.members)
        first = next(c.member for c in self.members if c.host == "node1")
        return {m: ([f"{self.topic}-{p}" for p in range(self.partitions - 1)] if m == first else
                    [f"{self.topic}-{self.partitions - 1}"] if m == names[-1] and m != first else []) for m in names}


def assignment(members: int, partitions: int, skewed: bool = False):
    """`members` consumers deployed one after another on a topic of `partitions` partitions."""
    story = Story("orders")
    group = (_Skewed if skewed else ClassicGroup)(story, Broker(story), partitions=partitions, protocol="range")
    first = group.consumer("node1", "consumer-orders-1", 1)
    first.start({"partition.assignment.strategy": RANGE_ONLY})
    group.start_with(first)
    for i in range(2, members + 1):
        group.tick(20)
        group.join(group.consumer(f"node{i}", "consumer-orders-1", i))
    group.tick(60)
    first.processing()
    return story


def expiries(groups: dict[str, int], apart_s: float = 0.002):
    """One broker removes `n` members of each group on session timeout, `apart_s` after one another."""
    story = Story(next(iter(groups)))
    broker = Broker(story)
    n = 0
    for group, count in groups.items():
        for i in range(count):
            n += 1
            story.at(60 + n * apart_s)
            member = f"consumer-{group}-{n}-{uuid(n)}"
            story.write(broker.path, "INFO", "kafka.coordinator.group.GroupCoordinator",
                        f"[GroupCoordinator 0]: Member {member} in group {group} has failed, removing it from the group",
                        "executor-Heartbeat")
            story.write(broker.path, "INFO", "kafka.coordinator.group.GroupCoordinator",
                        f"[GroupCoordinator 0]: Preparing to rebalance group {group} in state PreparingRebalance with "
                        f"old generation {10 + i} (__consumer_offsets-{n}) (reason: removing member {member} on "
                        "heartbeat expiration)", "executor-Heartbeat")
    return story


def eager_poll_timeouts(times: int = 4):
    """node2 exceeds max.poll.interval.ms again and again in a group on range: each time it leaves and rejoins."""
    story = Story("orders")
    group = ClassicGroup(story, Broker(story), protocol="range")
    members = [group.consumer(f"node{i}", "consumer-orders-1", i) for i in (1, 2, 3)]
    for c in members:
        c.start({"partition.assignment.strategy": RANGE_ONLY})
    group.start_with(*members)
    slow = members[1]
    for i in range(times):
        group.tick(90)
        group.poll_timeout(slow)
        group.tick(5)
        slow.member = f"consumer-orders-1-{uuid(20 + i)}"
        group.join(slow, start=False)
    return story


def coordinator_lost_together(hosts: list[str]):
    """Members of orders (2) and payments (1) say within a second that broker-1, their coordinator, stopped answering
    their heartbeats for a whole session (real Kafka 4.4's coordinator-pause: no removal logged); member i runs on
    hosts[i % len(hosts)]. The broker's log shows it coordinates both groups."""
    story = Story("orders")
    broker = Broker(story)
    members = [("orders", "consumer-orders-1"), ("orders", "consumer-orders-2"), ("payments", "consumer-payments-1")]
    story.at(1)
    for group in ("orders", "payments"):
        broker.say(f"Stabilized group {group} generation 41 (__consumer_offsets-17) with 2 members")
    for i, (group, client) in enumerate(members):
        story.at(2 + i)
        story.write(f"{hosts[i % len(hosts)]}/app.log", "INFO", "org.apache.kafka.clients.consumer.internals."
                    "ConsumerCoordinator", f"[Consumer clientId={client}, groupId={group}] Discovered group "
                    "coordinator broker-1:9092 (id: 2147483646 rack: null)")
    for i, (group, client) in enumerate(members):
        story.at(60 + 0.3 * i)
        story.write(f"{hosts[i % len(hosts)]}/app.log", "INFO", "org.apache.kafka.clients.consumer.internals."
                    "ConsumerCoordinator", f"[Consumer clientId={client}, groupId={group}] Group coordinator "
                    "broker-1:9092 (id: 2147483646 rack: null) is unavailable or invalid due to cause: session timed "
                    "out without receiving a heartbeat response. isDisconnected: false. Rediscovery will be attempted.",
                    f"kafka-coordinator-heartbeat-thread | {group}")
    return story
