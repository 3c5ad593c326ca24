"""Kafka Connect distributed workers: the WorkerCoordinator, the DistributedHerder, incremental cooperative rebalancing.

A worker is a group member (protocol type ``connect``, protocols sessioned/compatible/default)
whose assignment is connectors and tasks. The leader's IncrementalCooperativeAssignor hands out
only what changes: when a worker leaves, its connectors and tasks stay unassigned for
scheduled.rebalance.max.delay.ms (every member gets the remaining delay and rejoins when it
expires), then they go to whoever is there (the returning worker, if it came back); when a
worker joins, loaded workers first revoke some tasks, and a followup rebalance assigns them. The
herder checks its config offset against the assignment's: behind, it reads the config topic to the
end; different after that, it forces another rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .apps import COMMITS
from .catalog import release
from .consumer import Consumer, ConsumerConfig, ConsumerError, Subscription
from ..packgen.inventory import version_key
from .process import Jvm


@dataclass(frozen=True)
class WorkerState:
    url: str
    offset: int
    connectors: tuple[str, ...]
    tasks: tuple[str, ...]


@dataclass
class ConnectAssignment:
    leader: str
    leader_url: str
    offset: int
    connectors: list[str]
    tasks: list[str]
    revoked_connectors: list[str] = field(default_factory=list)
    revoked_tasks: list[str] = field(default_factory=list)
    delay: int = 0
    partitions: list = field(default_factory=list)

    def __str__(self) -> str:
        return (f"Assignment{{error=0, leader='{self.leader}', leaderUrl='{self.leader_url}', offset={self.offset}, "
                f"connectorIds={_list(self.connectors)}, taskIds={_list(self.tasks)}, "
                f"revokedConnectorIds={_list(self.revoked_connectors)}, revokedTaskIds={_list(self.revoked_tasks)}, "
                f"delay={self.delay}}}")


def _list(items) -> str:
    return "[" + ", ".join(items) + "]"


@dataclass
class ClusterState:
    """What the config topic and the last assignment say (shared by whoever is the leader)."""

    connectors: dict[str, int]               # connector -> task count
    offset: int = 42
    max_delay_ms: int = 300_000
    assignment: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)   # worker url -> (connectors, tasks)
    delay_deadline: float | None = None
    lost: tuple[list[str], list[str]] | None = None

    def all_work(self) -> tuple[list[str], list[str]]:
        return sorted(self.connectors), [f"{c}-{i}" for c in sorted(self.connectors) for i in range(self.connectors[c])]


class Worker(Consumer):
    """One Connect worker's group membership and herder."""

    kind = "connect"
    # The herder's thread waits inside WorkerGroupMember.poll() whenever it has nothing to do
    # (DistributedHerder.tick: member.poll(time to the next scheduled work)): it handles a JoinGroup response
    # as it arrives. Its ticks between polls (tick_loop's sleeps) stand for that waiting, not for other work.
    join_in_poll_only = False

    def __init__(self, app: "ConnectApp"):
        self.app = app
        cfg = ConsumerConfig(app.group, app.client_id, (), ("sessioned", "compatible", "default"),
                             session_ms=app.session_ms, heartbeat_ms=3000, max_poll_ms=app.rebalance_ms,
                             auto_commit=False, protocol_type="connect")
        super().__init__(app.jvm, cfg, {}, app.label)
        self.prefix = f"[Worker clientId={app.client_id}, groupId={app.group}] "
        self.thread_name = app.thread
        self.hb_thread_name = f"kafka-coordinator-heartbeat-thread | {app.group}"
        self.running_connectors: list[str] = []
        self.running_tasks: list[str] = []
        self.scheduled_rebalance: float | None = None
        self.pending: ConnectAssignment | None = None

    @property
    def protocol(self) -> str:
        return "cooperative"

    def request_rejoin(self, short: str, full: str | None = None, thread: str | None = None) -> None:
        """WorkerCoordinator overrides requestRejoin(reason) with its own DEBUG line: only the two-argument
        form (a failed rebalance's reasons) reaches AbstractCoordinator's INFO line (the lab's workers write
        no "Request joining group" line for their member id or a rebalancing group)."""
        if full is not None:
            super().request_rejoin(short, full, thread)
            return
        self.say("connect.request_rejoin", thread=thread, reason=short)
        self.rejoin_reason = short
        self.rejoin_needed = True

    def protocols(self) -> tuple[str, ...]:
        return ("sessioned", "compatible", "default")

    def metadata(self) -> Subscription:
        state = WorkerState(self.app.url, self.app.config_offset, tuple(self.running_connectors),
                            tuple(self.running_tasks))
        return Subscription((), (), state)

    def on_join_prepare(self) -> None:
        self.say("connect.rebalance_started")
        self.is_leader = False

    def leader_assign(self, generation, protocol: str, members: list) -> dict:
        return self.app.assign(self, members)

    def on_join_complete(self, assignment, extra) -> None:
        a: ConnectAssignment = assignment
        if a.revoked_connectors or a.revoked_tasks:
            self.running_connectors = [c for c in self.running_connectors if c not in a.revoked_connectors]
            self.running_tasks = [t for t in self.running_tasks if t not in a.revoked_tasks]
            self.say("connect.finished_stopping")
        self.say("connect.joined", generation=self.generation.generation_id, version=2, assignment=a, delay=a.delay)
        self.scheduled_rebalance = self.env.now + a.delay if a.delay > 0 else None
        self.pending = a

    # -- the herder's tick loop ------------------------------------------------------------------------
    def tick_loop(self):
        while not self.closed and not self.app.stopping:
            try:
                yield from self.poll(self.rng.choice((100, 500, 1000)))
            except ConsumerError as error:
                self.log.other("ERROR", "org.apache.kafka.connect.runtime.distributed.DistributedHerder",
                               f"{self.prefix}Uncaught exception in herder work thread, exiting: ",
                               thread=self.thread_name, throwable=error.failure.throwable())
                yield from self.jvm.sleep(self.rng.uniform(1000, 3000))
                continue
            if self.pending is not None and self.state == "STABLE":
                yield from self.handle_rebalance_completed(self.pending)
            if self.scheduled_rebalance is not None and self.env.now >= self.scheduled_rebalance and self.state == "STABLE":
                self.scheduled_rebalance = None
                self.rejoin_needed = True
            stall = self.app.stall.pop(0) if self.app.stall and self.env.now >= self.app.stall[0][0] else None
            if stall is not None:
                self.app.last_action = stall[2]
                yield from self.jvm.sleep(stall[1])
            if not self.rejoin_needed:
                # the herder's tick waits in poll() for work; a rejoin it needs is sent at once (real Kafka: a worker
                # forcing rebalances rejoins hundreds of times a second, the lab's connect-config-topic-mismatch)
                yield from self.jvm.sleep(self.rng.uniform(200, 1000))

    def handle_rebalance_completed(self, a: ConnectAssignment):
        self.pending = None
        offset = self.app.config_offset
        if offset < a.offset:
            self.say("connect.catching_up")
            self.say("connect.behind", offset=offset, assignment_offset=a.offset)
            yield from self.jvm.sleep(self.rng.uniform(5, 60))      # reading the config topic to its end: the lab, 8-15 ms
            if self.app.config_readable:
                self.app.config_offset = a.offset
            self.say("connect.read_to_end", offset=self.app.config_offset)
        if self.app.config_offset != a.offset:
            self.say("connect.forcing", offset=self.app.config_offset, assignment_offset=a.offset)
            self.rejoin_needed = True
            return
        self.say("connect.starting_work", offset=a.offset)
        for c in a.connectors:
            self.say("connect.starting_connector", connector=c)
        for t in a.tasks:
            self.say("connect.starting_task", task=t)
        self.running_connectors += [c for c in a.connectors if c not in self.running_connectors]
        self.running_tasks += [t for t in a.tasks if t not in self.running_tasks]
        self.say("connect.finished_starting")
        if a.revoked_connectors or a.revoked_tasks:
            self.rejoin_needed = True

    def on_poll_timeout(self, thread: str) -> None:
        if version_key(self.version) >= (3, 9, 0):       # the herder names its last action (KAFKA-15563)
            self.say("connect.poll_timeout", thread=thread, action=self.app.last_action)
            self.maybe_leave_group("worker poll timeout has expired.", key="connect.leave.poll_timeout", thread=thread)
        else:
            self.say("coord.poll_timeout", thread=thread)
            self.maybe_leave_group("consumer poll timeout has expired.", key="connect.leave.poll_timeout",
                                   thread=thread)


class ConnectApp:
    """A Connect worker JVM (connect-distributed)."""

    def __init__(self, world, host: str, log, group: str, state: ClusterState, number: int, label: str = "deploy",
                 session_ms: int = 10_000, rebalance_ms: int = 60_000):
        self.world = world
        self.env = world.env
        self.rng = world.rng
        self.host = host
        self.log = log
        log.coordinator = "connect"
        self.group = group
        self.state = state
        self.label = label
        self.session_ms = session_ms
        self.rebalance_ms = rebalance_ms
        self.url = f"http://{world.host(host).ip}:8083/"
        self.client_id = (f"connect-{world.host(host).ip}:8083" if version_key(log.version) >= (3, 9, 0)
                          else f"connect-{number}")
        self.config_offset = -1
        self.config_readable = True
        self.stall: list[tuple[float, float, str]] = []
        self.last_action = "null"
        self.jvm: Jvm | None = None
        self.worker: Worker | None = None
        self.stopping = False
        self.thread = "DistributedHerder"
        self.cfg = ConsumerConfig(group, self.client_id, ())

    def start(self) -> None:
        self.jvm = Jvm(self.world, self.host, self.log, self.world.host(self.host).ip)
        self.stopping = False
        self.thread = f"DistributedHerder-{self.client_id}-{int(self.world.start.timestamp() * 1000 + self.env.now)}"
        self.worker = Worker(self)
        self.consumer = self.worker
        self.jvm.spawn(self._main(), "main")

    def _main(self):
        self.log.other("INFO", "org.apache.kafka.connect.cli.ConnectDistributed", "Kafka Connect worker initializing ...")
        yield self.env.timeout(self.rng.uniform(1500, 4000))
        self.log.say("consumer.kafka_version", version=self.log.version)
        self.log.say("consumer.kafka_commit", commit=COMMITS[release(self.log.version)])
        self._start_stores()
        self.config_offset = self.state.offset if self.config_readable else -1
        self.jvm.spawn(self.worker.heartbeat_loop(), "heartbeat")
        yield from self.worker.tick_loop()
        yield from self.worker.close()

    def _start_stores(self) -> None:
        """The worker's offset, status and config stores start before it joins: each a KafkaBasedLog whose consumer
        (client.id <group>-offsets and so on, group.id the worker group's, never joining it) is created (4.3+: the
        KIP-848 banner) and assigned every partition of its topic (recorded at 3.9.2-4.4.0, topics named as in
        Kafka's connect-distributed.properties, their partition counts the workers' defaults)."""
        for store, topic, count in (("offsets", "connect-offsets", 25), ("statuses", "connect-status", 5),
                                    ("configs", "connect-configs", 1)):
            prefix = f"[Consumer clientId={self.group}-{store}, groupId={self.group}] "
            self.log.say("consumer.rebalance_protocol_banner", prefix=prefix, config="group.protocol", value="consumer")
            self.log.say("consumer.assigned_partitions", prefix=prefix,
                         partitions=[f"{topic}-{p}" for p in range(count)])

    def shutdown(self, grace_ms: float = 30_000):
        if self.jvm is None or not self.jvm.alive:
            return
        self.log.other("INFO", "org.apache.kafka.connect.runtime.Connect", "Kafka Connect stopping")
        self.stopping = True
        yield self.env.timeout(self.rng.uniform(500, 3000))
        self.jvm.stop()

    def crash(self) -> None:
        if self.jvm is not None:
            self.jvm.crash()

    # -- the IncrementalCooperativeAssignor (run by the leader) ------------------------------------------
    def assign(self, leader: Worker, members: list) -> dict:
        s = self.state
        now = self.env.now
        workers = {meta.user_data.url: (mid, meta.user_data) for mid, _i, meta in members}
        all_connectors, all_tasks = s.all_work()
        running = {url: (list(st.connectors), list(st.tasks)) for url, (_m, st) in workers.items()}
        owned_c = {c for cs, _ in running.values() for c in cs}
        owned_t = {t for _, ts in running.values() for t in ts}
        lost_c = [c for url, (cs, _) in s.assignment.items() if url not in workers for c in cs if c not in owned_c]
        lost_t = [t for url, (_, ts) in s.assignment.items() if url not in workers for t in ts if t not in owned_t]
        unassigned_c = [c for c in all_connectors if c not in owned_c and c not in lost_c]
        unassigned_t = [t for t in all_tasks if t not in owned_t and t not in lost_t]
        new: dict[str, tuple[list[str], list[str]]] = {url: ([], []) for url in workers}
        revoked: dict[str, tuple[list[str], list[str]]] = {url: ([], []) for url in workers}
        delay = 0
        if s.lost is not None and s.delay_deadline is not None:
            lost_c = sorted(set(lost_c) | set(s.lost[0]) - owned_c)
            lost_t = sorted(set(lost_t) | set(s.lost[1]) - owned_t)
        if lost_c or lost_t:
            if s.delay_deadline is None:
                s.delay_deadline = now + s.max_delay_ms
                s.lost = (lost_c, lost_t)
            if now < s.delay_deadline:
                delay = int(s.delay_deadline - now)
            else:
                unassigned_c += lost_c
                unassigned_t += lost_t
                s.delay_deadline, s.lost = None, None
        else:
            s.delay_deadline, s.lost = None, None
        order = sorted(workers)
        load = {url: len(running[url][1]) for url in order}
        for c in unassigned_c:
            target = min(order, key=lambda u: (len(running[u][0]) + len(new[u][0]), u))
            new[target][0].append(c)
        for t in unassigned_t:
            target = min(order, key=lambda u: (load[u] + len(new[u][1]), u))
            new[target][1].append(t)
        if delay == 0 and not unassigned_t:
            total = len(all_tasks)
            quota = -(-total // len(order)) if order else 0
            empty = [u for u in order if load[u] == 0 and not new[u][1]]
            if empty:
                for u in order:
                    extra = load[u] - quota
                    if extra > 0:
                        revoked[u] = ([], running[u][1][-extra:])
        s.assignment = {url: (running[url][0] + new[url][0],
                              [t for t in running[url][1] if t not in revoked[url][1]] + new[url][1]) for url in order}
        result = {}
        for url, (mid, _st) in workers.items():
            result[mid] = ConnectAssignment(leader.generation.member_id, self.url, s.offset, new[url][0], new[url][1],
                                            revoked[url][0], revoked[url][1], delay)
        return result
