"""Brokers, the network between hosts, and where each group's coordinator lives.

The coordinator of a group is the leader of ``__consumer_offsets-<partitionFor(group)>``
(``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``, as GroupMetadataManager
computes it). A request from a client is delivered after the link's latency and answered by the
broker's handler through ``reply``; a request over a cut link, or to a stopped broker, is never
answered (the client's request timeout decides what happens next).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..packgen import javafmt
from .clock import Environment, Event
from .logs import ProcessLog

OFFSETS_PARTITIONS = 50
INT_MAX = 2**31 - 1


def java_hash(text: str) -> int:
    """java.lang.String.hashCode (UTF-16 code units, 32-bit overflow)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group: str, partitions: int = OFFSETS_PARTITIONS) -> int:
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions   # Utils.abs maps MIN_VALUE to 0


@dataclass
class Broker:
    """One broker process: its log, its coordinator implementation and the groups it serves."""

    id: int
    host: str
    log: ProcessLog
    impl: str                          # "scala" (GroupCoordinator, 2.4-4.0) | "java" (GroupMetadataManager, 3.6+)
    port: int = 9092
    running: bool = True
    coordinators: dict = field(default_factory=dict)   # __consumer_offsets partition -> epoch it leads
    loading: set = field(default_factory=set)          # partitions being loaded
    groups: dict = field(default_factory=dict)         # group id -> group state object
    paused_until: float = 0.0                          # a stalled broker (long GC, stuck disk) does nothing
    deferred_timers: list = field(default_factory=list)
    deferred_requests: list = field(default_factory=list)

    def paused(self, now: float) -> bool:
        return self.paused_until > now

    @property
    def node(self) -> javafmt.Node:
        """The coordinator as clients print it (id Integer.MAX_VALUE - brokerId)."""
        return javafmt.coordinator_node(self.id, self.host, self.port)

    @property
    def broker_node(self) -> javafmt.Node:
        return javafmt.Node(self.host, self.port, self.id)


class Cluster:
    def __init__(self, env: Environment, rng, latency_ms: tuple[float, float] = (0.4, 3.0)):
        self.env = env
        self.rng = rng
        self.brokers: dict[int, Broker] = {}
        self.leaders: dict[int, int] = {}      # __consumer_offsets partition -> broker id
        self.cut: set[tuple[str, str]] = set()  # (client host, broker host) links that drop everything
        self.latency_ms = latency_ms

    def add_broker(self, broker: Broker) -> None:
        self.brokers[broker.id] = broker

    def timer(self, broker: Broker, when: float, action: Callable[[], None]) -> None:
        """A broker-side timer (heartbeat expiry, rebalance timeout): held while the broker is stalled."""
        def fire() -> None:
            if broker.paused(self.env.now):
                broker.deferred_timers.append(action)
            elif broker.running:
                action()
        self.env.call_at(when, fire)

    def pause_broker(self, broker: Broker, ms: float) -> None:
        """The broker stalls. When it resumes, the Scala GroupCoordinator's overdue timers run first (the purgatory
        reaper), then the requests that queued up meanwhile; the Java coordinator (4.0+) answers the queued requests
        first, then runs its expired timers (the lab's coordinator-pause: 3.9.2 removed 3 of 5 members on session
        timeout, 4.4.0 one, whose client had given up and cancelled its heartbeats)."""
        broker.paused_until = self.env.now + ms

        def resume() -> None:
            timers, broker.deferred_timers = broker.deferred_timers, []
            requests, broker.deferred_requests = broker.deferred_requests, []
            for action in (requests + timers if broker.impl == "java" else timers + requests):
                action()
        self.env.call_at(broker.paused_until, resume)

    def coordinator_for(self, group: str) -> Broker | None:
        leader = self.leaders.get(partition_for(group))
        broker = self.brokers.get(leader) if leader is not None else None
        return broker if broker and broker.running else None

    def latency(self) -> float:
        low, high = self.latency_ms
        return round(self.rng.uniform(low, high), 3)

    def reachable(self, host: str, broker: Broker) -> bool:
        return broker.running and (host, broker.host) not in self.cut

    def request(self, host: str, broker: Broker, handler: Callable[..., None], *args) -> Event:
        """Send a request; the event succeeds with the response, or never when it is lost."""
        response = self.env.event()
        if not self.reachable(host, broker):
            return response

        def reply(value) -> None:
            if response.triggered or not self.reachable(host, broker):
                return
            response.succeed(value, self.latency())

        def deliver() -> None:
            if not self.reachable(host, broker):
                return
            if broker.paused(self.env.now):
                broker.deferred_requests.append(lambda: handler(*args, reply))
                return
            handler(*args, reply)

        self.env.call_at(self.env.now + self.latency(), deliver)
        return response
