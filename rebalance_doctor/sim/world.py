"""One simulated incident: the clock, the brokers and their coordinators, the processes and their logs.

Scenarios build a World (brokers, applications), schedule what happens to them (restarts, pauses,
crashes, network cuts, coordinator moves), run the clock, and read the truth from what the model
did. ``World.logs`` are the files of the incident.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..packgen import javafmt
from ..packgen.inventory import version_key
from .catalog import release
from .classic import ClassicCoordinator
from .clock import Environment
from .cluster import OFFSETS_PARTITIONS, Broker, Cluster, partition_for
from .logs import ProcessLog


@dataclass
class Host:
    name: str
    ip: str
    skew_ms: float = 0.0


@dataclass
class World:
    seed: int
    start: datetime = field(default_factory=lambda: datetime(2024, 3, 5, 9, 0, 0, tzinfo=timezone.utc))

    def __post_init__(self):
        self.rng = random.Random(self.seed)
        self.env = Environment()
        self.cluster = Cluster(self.env, self.rng)
        self.coordinators: dict[int, ClassicCoordinator] = {}
        self.logs: list[ProcessLog] = []
        self.hosts: dict[str, Host] = {}
        self.leader_epoch = self.rng.randint(0, 40)
        self.coordinator_epochs: dict[int, int] = {}
        self._offsets: dict[tuple[str, str], int] = {}
        self._ips: set[str] = set()

    # -- hosts and logs ------------------------------------------------------------------------------
    def host(self, name: str, skew_ms: float = 0.0) -> Host:
        if name not in self.hosts:
            while True:
                ip = f"10.{self.rng.randint(0, 3)}.{self.rng.randint(0, 255)}.{self.rng.randint(2, 254)}"
                if ip not in self._ips:
                    break
            self._ips.add(ip)
            self.hosts[name] = Host(name, ip, skew_ms)
        return self.hosts[name]

    def new_log(self, path: str, host: str, component: str, version: str, layout: str,
                levels: dict[str, str] | None = None, thread: str = "main") -> ProcessLog:
        release(version)        # refuses a version outside the simulated range
        for log in self.logs:
            if log.path == path:
                return log      # a restarted process appends to the same file
        log = ProcessLog(self.env, path, host, component, version, layout, skew_ms=self.host(host).skew_ms,
                         levels=dict(levels or {}), thread=thread)
        self.logs.append(log)
        return log

    # -- brokers ---------------------------------------------------------------------------------------
    def add_broker(self, broker_id: int, host: str, version: str, impl: str | None = None,
                   layout: str = "kafka", initial_delay_ms: int = 3000, path: str | None = None) -> Broker:
        if impl is None:
            impl = "java" if version_key(version) >= (4, 0, 0) else "scala"
        log = self.new_log(path or f"{host}/server.log", host, "broker", version, layout,
                           thread="data-plane-kafka-request-handler-0")
        log.prefixes.update({"scala": f"[GroupCoordinator {broker_id}]: ",
                             "scala-gmm": f"[GroupMetadataManager brokerId={broker_id}] ",
                             "java-service": f"[GroupCoordinator id={broker_id}] "})
        broker = Broker(broker_id, host, log, impl)
        self.host(host)
        self.cluster.add_broker(broker)
        self.coordinators[broker_id] = ClassicCoordinator(broker, self.cluster, initial_delay_ms)
        return broker

    def place_coordinators(self) -> None:
        """Spread the __consumer_offsets leaders over the brokers (before the window: nothing logged)."""
        ids = sorted(self.cluster.brokers)
        for p in range(OFFSETS_PARTITIONS):
            broker = ids[p % len(ids)]
            epoch = self.rng.randint(1, 30)
            self.cluster.leaders[p] = broker
            self.coordinator_epochs[p] = epoch
            self.cluster.brokers[broker].coordinators[p] = epoch

    def move_coordinator(self, partition: int, to: int, load_ms: float = 300.0) -> None:
        """Leadership of __consumer_offsets-<partition> moves to broker ``to``: unload there, load here."""
        old_id = self.cluster.leaders.get(partition)
        epoch = self.coordinator_epochs.get(partition, 0) + 1
        self.coordinator_epochs[partition] = epoch
        snapshots = []
        if old_id is not None and old_id != to:
            snapshots = self.coordinators[old_id].unload(partition, epoch - 1)
        self.cluster.leaders[partition] = to
        self.coordinators[to].load(partition, epoch, snapshots, load_ms)

    def stop_broker(self, broker_id: int, move_to: list[int], load_ms: float = 300.0) -> None:
        """A controlled shutdown: the broker's coordinator partitions move to the others, then it stops."""
        broker = self.cluster.brokers[broker_id]
        coordinator = self.coordinators[broker_id]
        coordinator.service_say("shutting_down")
        for i, partition in enumerate(sorted(broker.coordinators)):
            self.move_coordinator(partition, move_to[i % len(move_to)], load_ms)
        coordinator.service_say("shutdown")
        broker.running = False
        broker.log.alive = False

    def start_broker(self, broker_id: int) -> None:
        broker = self.cluster.brokers[broker_id]
        broker.running = True
        broker.log.alive = True
        coordinator = self.coordinators[broker_id]
        coordinator.service_say("starting")
        coordinator.service_say("startup")

    def coordinator_of(self, group: str) -> Broker:
        return self.cluster.brokers[self.cluster.leaders[partition_for(group)]]

    def find_coordinator(self, client_host: str, group: str) -> Broker | None:
        """FindCoordinator through any broker the client reaches: the leader of the group's partition."""
        reachable = [b for b in self.cluster.brokers.values() if self.cluster.reachable(client_host, b)]
        if not reachable:
            return None
        return self.cluster.coordinator_for(group)

    def leader_node_for(self, tp: str) -> javafmt.Node:
        ids = sorted(self.cluster.brokers)
        broker = self.cluster.brokers[ids[javafmt_hash(tp) % len(ids)]]
        return broker.broker_node

    def committed(self, group: str, tp: str) -> int:
        key = (group, tp)
        if key not in self._offsets:
            self._offsets[key] = self.rng.randint(10_000, 9_000_000)
        self._offsets[key] += int(self.env.now / 1000) % 97 + self.rng.randint(0, 40)
        return self._offsets[key]

    def run(self, until_ms: float) -> None:
        self.env.run(until=until_ms)


def javafmt_hash(text: str) -> int:
    return sum(ord(c) * (i + 1) for i, c in enumerate(text))
