"""Kafka Streams on the classic protocol: KafkaStreams clients, StreamThreads, the StreamsPartitionAssignor.

A Streams instance is one JVM with a KafkaStreams client (``stream-client [<app>-<processId>]``)
and N StreamThreads, each with a main consumer in the group ``application.id`` (protocol
``stream``, cooperative). The group leader's assignor (a thread of some instance) lays out tasks
(one per input partition, stateful or not) over the client nodes as the HighAvailabilityTaskAssignor
does, in the lines StreamsPartitionAssignor writes: a task stays on a caught-up owner while a
warmup replica restores on the node it should move to, and a probing rebalance
(probing.rebalance.interval.ms later) checks again, until the assignment is stable ("Finished
stable assignment"); a task changing owner between members is first revoked, then assigned in an
immediate followup. Members schedule and trigger those followups, move their threads through
PARTITIONS_REVOKED / PARTITIONS_ASSIGNED / RUNNING and the client through REBALANCING / RUNNING.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from ..packgen import javafmt
from ..packgen.inventory import version_key
from .apps import COMMITS, config_dump
from .catalog import release
from .consumer import Consumer, ConsumerConfig, ConsumerError, Stalled, Subscription
from .process import Jvm

FAR = 2**63 - 1   # Long.MAX_VALUE: no followup scheduled
# The latest subscription (SubscriptionInfo) version each release's StreamsPartitionAssignor speaks:
# StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION in the release's -sources jar (11 from 3.3
# through 4.4; no release speaks 12).
SUBSCRIPTION_VERSIONS = {"2.4.0": 5, "2.8.0": 9, "3.0.0": 10, "3.3.1": 11, "3.6.0": 11, "3.9.0": 11, "4.0.0": 11,
                         "4.1.0": 11, "4.2.0": 11, "4.3.0": 11, "4.3.1": 11, "4.3.2": 11,
                         "4.4.0": 11}


@dataclass(frozen=True)
class SubscriptionInfo:
    version: int
    process: str
    prev_active: tuple[str, ...]
    prev_standby: tuple[str, ...]
    error: int = 0                       # AssignorError code: 2 = SHUTDOWN_REQUESTED
    latest: int = 0                      # the latest version this member supports
    unique: int = 0                      # uniqueField (2.6.1+, KAFKA-10455): differs on every JoinGroup


@dataclass
class StreamsAssignment:
    """What the leader sends each member (AssignmentInfo) and the partitions of its active tasks."""

    partitions: list[str]
    active: list[str]
    standby: list[str]
    next_rebalance_ms: int = FAR
    version: int = 10
    error: int = 0
    common: int = 0                      # the group's latest commonly supported version
    probing: bool = False                # a version probing answer (the leader could not read a subscription)

SHUTDOWN_REQUESTED = 2


@dataclass
class AppState:
    """What the brokers' changelogs and the instances' state directories know about the tasks."""

    tasks: list[str]
    stateful: bool
    caught_up: dict[str, set[str]] = field(default_factory=dict)     # task -> processes with its state
    warmup_ready: dict[tuple[str, str], float] = field(default_factory=dict)   # (task, process) -> time caught up
    warmup_ms: float | None = 60_000.0        # how long a warmup takes (None: never catches up)
    probing_interval_ms: int = 600_000
    max_warmups: int = 2
    warmup_start: dict[tuple[str, str], float] = field(default_factory=dict)   # (task, process) -> restore began

    # The changelogs, for the lags the leader logs (ClientState's changelogOffsetTotalsByTask and taskLagTotals):
    # each task's changelog has an end offset growing at a write rate; a warmup restores at a rate that either
    # catches up by its warmup_ms or (warmup_ms None) stays below the write rate, so that its lag never shrinks.
    def _changelog(self, task: str) -> tuple[int, float, float]:
        rng = random.Random(f"{task}/{len(self.tasks)}/{self.probing_interval_ms}")
        return rng.randint(2_000_000, 40_000_000), rng.uniform(5.0, 60.0), rng.uniform(0.55, 0.9)

    def end_offset(self, task: str, now: float) -> int:
        base, rate, _ = self._changelog(task)
        return int(base + rate * now)

    def lag(self, task: str, process: str, now: float) -> int:
        """The lag of ``process``'s copy of ``task`` (its end offset when it has no state at all)."""
        start = self.warmup_start.get((task, process))
        end = self.end_offset(task, now)
        if start is None:
            return end
        if process in self.caught_up.get(task, set()):
            return int(self._changelog(task)[1] * 400)          # within acceptable.recovery.lag
        _, rate, slower = self._changelog(task)
        behind = self.end_offset(task, start)
        if self.warmup_ms:
            restored = (behind + rate * self.warmup_ms) * min(1.0, (now - start) / self.warmup_ms)
        else:
            restored = rate * slower * (now - start) + min(behind, rate * slower * self.probing_interval_ms)
        return max(int(rate * 400), int(end - restored))


def task_of(partition: str) -> str:
    return f"0_{partition.rpartition('-')[2]}"


def partition_of(topic: str, task: str) -> str:
    return f"{topic}-{task.split('_')[1]}"


def log_time(epoch_ms: int) -> str:
    """Utils.toLogDateTimeFormat: 'yyyy-MM-dd HH:mm:ss,SSS XXX' in the JVM's zone (UTC here)."""
    ts = datetime(1970, 1, 1) + timedelta(milliseconds=epoch_ms)
    return f"{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d} Z"


class StreamThread(Consumer):
    """One StreamThread: its main consumer in the group, and what the thread logs around it."""

    kind = "streams"

    def __init__(self, instance: "StreamsApp", number: int):
        self.instance = instance
        self.number = number
        self.name = f"{instance.client_id}-StreamThread-{number}"
        cfg = ConsumerConfig(instance.app_id, f"{self.name}-consumer", (instance.topic,), ("stream",),
                             session_ms=instance.session_ms, heartbeat_ms=instance.heartbeat_ms,
                             max_poll_ms=instance.max_poll_ms, auto_commit=False, max_poll_records=1000)
        super().__init__(instance.jvm, cfg, instance.topics, instance.label)
        self.thread_name = self.name
        self.state = "CREATED"
        self.thread_state = "CREATED"
        self.active: list[str] = []
        self.standby: list[str] = []
        self.next_rebalance_ms = FAR
        self.restored_at: float | None = None
        self.error_code = 0
        self.shutdown_sent = False
        self.used_version = instance.latest_version      # the subscription version this thread sends
        self.unique_field = 0

    # -- identity and lines ------------------------------------------------------------------------
    @property
    def protocol(self) -> str:
        return "cooperative"

    def thread_say(self, key: str, **values):
        return self.log.say(key, thread=self.name, prefix=f"stream-thread [{self.name}] ", **values)

    def assignor_say(self, key: str, **values):
        return self.log.say(key, thread=self.name, prefix=f"stream-thread [{self.name}-consumer] ", **values)

    def set_thread_state(self, new: str) -> None:
        if self.thread_state == "PENDING_SHUTDOWN" and new != "DEAD":
            return      # StreamThread.setState: only DEAD follows PENDING_SHUTDOWN (the request is ignored at DEBUG)
        old, self.thread_state = self.thread_state, new
        self.thread_say("streams.thread_state", old=old, new=new)
        self.instance.on_thread_state(self)

    def metadata(self) -> Subscription:
        # From 2.6.1 (KAFKA-10455) every subscription carries a byte incremented on each JoinGroup, so that the
        # coordinator always sees new metadata and rebalances: a probing or followup rejoin by a thread that is not
        # the group leader would otherwise just get the current generation back and never reach the assignor.
        if version_key(self.log.version) >= (2, 7, 0):
            self.unique_field = (self.unique_field + 1) % 256
        info = SubscriptionInfo(self.used_version, self.instance.process_id, tuple(self.active),
                                tuple(self.standby), self.error_code, self.instance.latest_version,
                                self.unique_field)
        return Subscription(tuple(self.cfg.topics), tuple(self.owned), info)

    # -- the leader's assignor ----------------------------------------------------------------------
    def leader_assign(self, generation, protocol: str, members: list) -> dict:
        result = self.instance.assign(self, generation, members)
        if isinstance(result, dict):
            # ConsumerCoordinator.onLeaderElected writes it after any assignor, StreamsPartitionAssignor's too. The
            # AssignmentInfo's size: 40 bytes and 12 per task, as recorded at 3.9.2-4.4.0 (one subtopology).
            shown = {mid: f"Assignment(partitions={javafmt.java_collection(a.partitions)}, "
                          f"userDataSize={40 + 12 * (len(a.active) + len(a.standby))})" for mid, a in result.items()}
            self.say("consumer.finished_assignment", generation=generation, assignments=shown)
        return result

    # -- the member's side ----------------------------------------------------------------------------
    def on_join_complete(self, assignment, extra) -> None:
        if not isinstance(assignment, StreamsAssignment):
            assignment = StreamsAssignment(list(assignment or []), [], [])
        self._received = assignment
        super().on_join_complete(assignment.partitions, extra)

    def on_partitions_revoked(self, revoked: list[str]) -> None:
        if self.thread_state == "RUNNING":
            self.set_thread_state("PARTITIONS_REVOKED")
        self.active = [t for t in self.active if partition_of(self.instance.topic, t) not in revoked]
        self.thread_say("streams.revocation_took", millis=self.rng.randint(0, 40))

    def on_assignment(self, assigned: list[str]) -> None:
        a = self._received
        if a.error == SHUTDOWN_REQUESTED:
            self.thread_say("streams.app_shutdown_requested")
            self.instance.shutdown_to_error()
            return
        used = self.used_version
        if a.common and a.common > used:        # the rolling upgrade is complete: speak the new version
            self.assignor_say("streams.probing_upgrade", used=used, common=a.common, upgraded=a.common)
            self.used_version = a.common
            self._version_probing()
        elif a.probing or (a.common and a.common < used):   # someone has not upgraded yet: speak the older version
            common = a.common or a.version
            self.assignor_say("streams.probing_downgrade", used=used, received=a.version, common=common)
            self.used_version = common
            self._version_probing()
        elif a.next_rebalance_ms == 0:
            self.assignor_say("streams.schedule_immediate_revoked")
            self.next_rebalance_ms = 0
        elif a.next_rebalance_ms < FAR:
            self.assignor_say("streams.schedule_probing", at=log_time(a.next_rebalance_ms),
                              epoch_ms=a.next_rebalance_ms)
            self.next_rebalance_ms = a.next_rebalance_ms
        else:
            self.assignor_say("streams.no_followup")
            self.next_rebalance_ms = FAR
        new_active = [t for t in a.active if t not in self.active]
        new_standby = [t for t in a.standby if t not in self.standby]
        self.thread_say("streams.handle_assignment", new_active=javafmt.java_collection(new_active),
                        new_standby=javafmt.java_collection(new_standby),
                        existing_active=javafmt.java_collection([t for t in a.active if t in self.active]),
                        existing_standby=javafmt.java_collection([t for t in a.standby if t in self.standby]))
        self.active, self.standby = list(a.active), list(a.standby)
        self.restored_at = self.env.now + (self.instance.restore_ms(new_active) if new_active else 0)

    def _version_probing(self) -> None:
        self.assignor_say("streams.schedule_version_probing")
        self.thread_say("streams.version_probing_24")
        self.next_rebalance_ms = 0

    def on_partitions_assigned(self, added: list[str]) -> None:
        if self._received.error == SHUTDOWN_REQUESTED:
            return
        self.set_thread_state("PARTITIONS_ASSIGNED")

    def on_partitions_lost(self, lost: list[str]) -> None:
        self.thread_say("streams.lost_missed", state=self.thread_state, partitions=javafmt.java_collection(lost),
                        active=javafmt.java_collection(self.active), standby=javafmt.java_collection(self.standby))
        self.active = []

    # -- the thread's loop ----------------------------------------------------------------------------
    def run(self):
        self.thread_say("streams.thread_starting")
        self.set_thread_state("STARTING")
        self.say("consumer.subscribed", topics=list(self.cfg.topics))
        self.instance.jvm.spawn(self.heartbeat_loop(), f"{self.name}-heartbeat")
        while not self.closed and not self.instance.stopping:
            try:
                records = yield from self.poll(100)
            except ConsumerError as error:
                yield from self.instance.thread_failed(self, error.failure.throwable())
                return
            if self.thread_state == "PARTITIONS_ASSIGNED" and self.restored_at is not None \
                    and self.env.now >= self.restored_at and self.state == "STABLE":
                self.set_thread_state("RUNNING")
            if self.next_rebalance_ms < FAR and self.state == "STABLE" and \
                    self.instance.epoch_ms() >= self.next_rebalance_ms:
                self.thread_say("streams.triggering_followup", at=log_time(self.next_rebalance_ms),
                                epoch_ms=self.next_rebalance_ms)
                reason = f"triggered followup rebalance scheduled for {self.next_rebalance_ms}"
                self.next_rebalance_ms = FAR
                if not self.rejoin_needed:
                    self.request_rejoin(reason)
            if self.error_code == SHUTDOWN_REQUESTED and not self.shutdown_sent:
                self.shutdown_sent = True
                self.thread_say("streams.shutdown_detected")
                self.request_rejoin("Shutdown requested")
            failure = self.instance.poison.get(self.number)
            if failure is not None and self.env.now >= failure[0]:
                del self.instance.poison[self.number]
                yield from self.instance.thread_failed(self, failure[1])
                return
            yield from self.jvm.sleep(self.rng.uniform(200, 1000) if self.state == "STABLE" else 50)
        yield from self.shutdown_thread(clean=True)

    def inform_shutdown(self, thread: str | None = None) -> None:
        """StreamThread.shutdown(): the caller's thread (KafkaStreams.close()'s CloseThread, or this thread's own)
        writes it and sets PENDING_SHUTDOWN; the StreamThread finishes the shutdown in its own loop."""
        if self.thread_state in ("PENDING_SHUTDOWN", "DEAD"):
            return
        self.log.say("streams.informed_shutdown", thread=thread or self.name, prefix=f"stream-thread [{self.name}] ")
        self.set_thread_state("PENDING_SHUTDOWN")

    def shutdown_thread(self, clean: bool, leave: bool = False, reason: str = "the consumer is being closed"):
        self.inform_shutdown()
        if self.owned and self.generation.generation_id != -1:
            self.say("consumer.revoke", partitions=sorted(self.owned, key=lambda p: int(p.rpartition("-")[2])))
        self.owned = []
        if leave:
            self.maybe_leave_group(reason, key="coord.leave")
        self.closed = True
        self.thread_say("streams.shutdown_complete")
        self.set_thread_state("DEAD")
        yield self.env.timeout(1)


class StreamsApp:
    """A Kafka Streams instance: a JVM with one KafkaStreams client and its StreamThreads."""

    def __init__(self, world, host: str, log, app_id: str, topic: str, partitions: int, threads: int,
                 state: AppState, label: str = "deploy", session_ms: int = 45000, heartbeat_ms: int = 3000,
                 max_poll_ms: int = 300000, handler: str = "SHUTDOWN_CLIENT"):
        self.world = world
        self.env = world.env
        self.rng = world.rng
        self.host = host
        self.log = log
        self.app_id = app_id
        self.topic = topic
        self.topics = {topic: partitions}
        self.threads_wanted = threads
        self.state_model = state
        self.label = label
        self.session_ms, self.heartbeat_ms, self.max_poll_ms = session_ms, heartbeat_ms, max_poll_ms
        self.handler = handler
        h = f"{self.rng.getrandbits(128):032x}"
        self.process_id = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[self.rng.randint(0, 3)]}{h[17:20]}-{h[20:32]}"
        self.client_id = f"{app_id}-{self.process_id}"
        self.cfg = ConsumerConfig(app_id, self.client_id, (topic,), ("stream",), session_ms=session_ms,
                                  heartbeat_ms=heartbeat_ms, max_poll_ms=max_poll_ms)
        self.jvm: Jvm | None = None
        self.threads: list[StreamThread] = []
        self.client_state = "CREATED"
        self.stopping = False
        self.poison: dict[int, tuple[float, str]] = {}   # thread number -> (when, the exception it dies of)
        # ms the leader's assignor blocks after naming the participants (internal topics it cannot create in time)
        self.assign_stall: Callable[[], float] | None = None
        self.next_thread = 1
        self.latest_version = SUBSCRIPTION_VERSIONS[release(log.version)]
        self.subscription_version = self.latest_version

    def upgrade(self, version: str) -> None:
        """The next start runs another Kafka release (a rolling upgrade): its wording and subscription version."""
        self.log.version = version
        self.latest_version = SUBSCRIPTION_VERSIONS[release(version)]
        self.subscription_version = self.latest_version

    # -- life cycle ------------------------------------------------------------------------------------
    def start(self) -> None:
        self.jvm = Jvm(self.world, self.host, self.log, self.world.host(self.host).ip)
        self.stopping = False
        self.client_state = "CREATED"
        self.threads = []
        self.next_thread = 1
        self.jvm.spawn(self._main(), "main")

    def client_say(self, key: str, **values):
        return self.log.say(key, thread="main", prefix=f"stream-client [{self.client_id}] ", **values)

    def _main(self):
        self.log.other("INFO", "com.example.Application", f"Starting {self.app_id} on {self.host}")
        yield self.env.timeout(self.rng.uniform(500, 2000))
        rel = release(self.log.version)
        self.client_say("streams.version", version=self.log.version)
        self.client_say("streams.commit", commit=COMMITS[rel])
        self.set_client_state("REBALANCING")
        for _ in range(self.threads_wanted):
            self.add_thread(announce=False)
        self.client_say("streams.started_threads", count=self.threads_wanted)

    def add_thread(self, announce: bool = True) -> StreamThread:
        number = self.next_thread
        self.next_thread += 1
        thread = StreamThread(self, number)
        thread.app = self
        self.threads.append(thread)
        values = {"group.id": self.app_id, "client.id": thread.cfg.client_id,
                  "session.timeout.ms": str(self.session_ms), "heartbeat.interval.ms": str(self.heartbeat_ms),
                  "max.poll.interval.ms": str(self.max_poll_ms), "max.poll.records": "1000",
                  "enable.auto.commit": "false", "internal.leave.group.on.close": "false",
                  "partition.assignment.strategy": "[org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor]",
                  "key.deserializer": "class org.apache.kafka.common.serialization.ByteArrayDeserializer",
                  "value.deserializer": "class org.apache.kafka.common.serialization.ByteArrayDeserializer",
                  "bootstrap.servers": "[" + ", ".join(f"{b.host}:{b.port}" for b in
                                                        self.world.cluster.brokers.values()) + "]"}
        self.log.say("consumer.config", thread=thread.name, body=config_dump("consumer", self.log.version, values))
        self.log.say("streams.cooperative_enabled", thread=thread.name, prefix=f"stream-thread [{thread.name}-consumer] ")
        if announce:
            live = len([t for t in self.threads if t.thread_state not in ("DEAD", "PENDING_SHUTDOWN")])
            self.client_say("streams.adding_thread", number=number, live=live, cache=10485760 // max(1, live))
        self.jvm.spawn(thread.run(), thread.name)
        return thread

    def set_client_state(self, new: str) -> None:
        if new == self.client_state:
            return
        old, self.client_state = self.client_state, new
        self.client_say("streams.client_state", old=old, new=new)

    def on_thread_state(self, thread: StreamThread) -> None:
        live = [t for t in self.threads if t.thread_state not in ("DEAD",)]
        if thread.thread_state in ("PARTITIONS_REVOKED", "PARTITIONS_ASSIGNED") and self.client_state == "RUNNING":
            self.set_client_state("REBALANCING")
        elif thread.thread_state == "RUNNING" and all(t.thread_state == "RUNNING" for t in live) \
                and self.client_state == "REBALANCING":
            self.set_client_state("RUNNING")
        elif thread.thread_state == "DEAD" and not live and self.client_state not in ("PENDING_SHUTDOWN", "NOT_RUNNING"):
            self.set_client_state("ERROR")

    def epoch_ms(self) -> int:
        return int(self.world.start.timestamp() * 1000 + self.env.now)

    def restore_ms(self, tasks: list[str]) -> float:
        if not self.state_model.stateful:
            return self.rng.uniform(50, 300)
        return self.rng.uniform(500, 4000) * max(1, len(tasks))

    def shutdown(self, grace_ms: float = 30_000):
        """KafkaStreams.close(): its CloseThread tells every StreamThread to shut down at once (each one's 'Informed
        to shut down' and RUNNING -> PENDING_SHUTDOWN, before 'Shutting down N stream threads': recorded at 3.9.2,
        4.2.1 and 4.4.0), then waits for each to finish its own shutdown (no LeaveGroup: Streams members time out)."""
        if self.jvm is None or not self.jvm.alive:
            return
        self.set_client_state("PENDING_SHUTDOWN")
        live = [t for t in self.threads if t.thread_state != "DEAD"]
        for thread in live:
            thread.inform_shutdown(f"{self.client_id}-CloseThread")
        self.client_say("streams.shutting_down_threads", count=len(live))
        self.stopping = True
        deadline = self.env.now + grace_ms
        while self.jvm.alive and self.env.now < deadline and any(t.thread_state != "DEAD" for t in live):
            yield self.env.timeout(10)
        if not self.jvm.alive:
            return
        self.client_say("streams.shutdown_threads_complete", count=len(self.threads))
        self.set_client_state("NOT_RUNNING")
        self.client_say("streams.stopped")
        self.jvm.stop()

    def crash(self) -> None:
        if self.jvm is not None:
            self.jvm.crash()

    def shutdown_to_error(self) -> None:
        """A shutdown request reached this client: its threads stop and the client ends in ERROR."""
        if self.client_state in ("PENDING_ERROR", "ERROR"):
            return
        self.set_client_state("PENDING_ERROR")
        self.stopping = True

        def finish():
            yield self.env.timeout(self.rng.uniform(300, 2000))
            self.set_client_state("ERROR")
            self.jvm.stop()
        self.env.process(finish())

    # -- a thread's death --------------------------------------------------------------------------------
    def _replaced_thread_leaves(self) -> bool:
        """Whether the thread REPLACE_THREAD shuts down leaves the group. From 3.0 it unsubscribes (a
        LeaveGroup, reason "the consumer unsubscribed from all topics": recorded at 3.9.2); from 4.2
        KafkaStreams.replaceStreamThread shuts it down with CloseOptions REMAIN_IN_GROUP (4.2 sources), so its
        member stays until the session timeout removes it (recorded at 4.2.1 and 4.4.0)."""
        return (3, 0, 0) <= version_key(self.log.version) < (4, 2, 0)

    def thread_failed(self, thread: StreamThread, throwable: str):
        if self.handler == "REPLACE_THREAD":
            self.client_say_throwable("streams.replacing_thread", throwable)
            yield from thread.shutdown_thread(clean=False, leave=self._replaced_thread_leaves(),
                                              reason="the consumer unsubscribed from all topics")
            self.threads.remove(thread)
            self.add_thread()
        elif self.handler == "THREAD_DIES":
            # the deprecated Thread.UncaughtExceptionHandler: the application logs it, the thread is gone
            self.log.other("ERROR", "com.example.streams.App", f"Uncaught exception in thread {thread.name}",
                           thread=thread.name, throwable=throwable)
            yield from thread.shutdown_thread(clean=False, leave=version_key(self.log.version) >= (3, 0, 0))
        elif self.handler == "SHUTDOWN_APPLICATION":
            self.client_say_throwable("streams.shutdown_application_error", throwable)
            others = [t for t in self.threads if t is not thread and t.thread_state not in ("DEAD", "PENDING_SHUTDOWN")]
            yield from thread.shutdown_thread(clean=False)
            if not others:
                self.client_say("streams.shutdown_needs_thread")
                others = [self.add_thread()]
            for other in others:
                other.error_code = SHUTDOWN_REQUESTED
        else:
            self.client_say_throwable("streams.shutdown_client_error", throwable, action="SHUTDOWN_CLIENT")
            self.env.process(self.shutdown())
        yield self.env.timeout(0)

    def client_say_throwable(self, key: str, throwable: str, **values) -> None:
        self.log.say(key, thread="main", prefix=f"stream-client [{self.client_id}] ", throwable=throwable, **values)

    # -- the StreamsPartitionAssignor (run by the leader's thread) ---------------------------------------
    def assign(self, leader: StreamThread, generation, members: list) -> dict:
        model = self.state_model
        now = self.env.now
        clients: dict[str, list[str]] = {}
        prev_owner: dict[str, str] = {}          # task -> consumer (member id) that ran it
        for member_id, _instance, meta in members:
            info = meta.user_data
            clients.setdefault(info.process, []).append(member_id)
            for task in info.prev_active:
                prev_owner[task] = member_id
        process_of = {m: p for p, ms in clients.items() for m in ms}
        if any(meta.user_data.error == SHUTDOWN_REQUESTED for _m, _i, meta in members):
            return {m: StreamsAssignment([], [], [], FAR, self.subscription_version, SHUTDOWN_REQUESTED)
                    for m in process_of}
        supported = self.latest_version
        future = [meta.user_data.version for _m, _i, meta in members if meta.user_data.version > supported]
        if future:
            # the leader cannot read a newer subscription: everyone keeps its tasks, all get the leader's version
            leader.assignor_say("streams.future_subscription", future=max(future), supported=supported)
            out = {}
            for member_id, _i, meta in members:
                tasks = list(meta.user_data.prev_active)
                out[member_id] = StreamsAssignment([partition_of(self.topic, t) for t in tasks], tasks, [], FAR,
                                                   supported, common=supported, probing=True)
            return out
        common = min(meta.user_data.latest or meta.user_data.version for _m, _i, meta in members)
        min_received = min(meta.user_data.version for _m, _i, meta in members)
        followups = version_key(self.log.version) >= (2, 8, 0)   # KIP-441 probing, immediate followups
        consumers_total = sum(len(v) for v in clients.values())
        listing = "\n".join(f"{p}: {sorted(ms)}".replace("'", "") for p, ms in sorted(clients.items()))
        if getattr(leader, "stalled_at", None) != generation:
            leader.assignor_say("streams.default_task_assignor", config="internal.task.assignor.class")
            leader.assignor_say("streams.participating", nodes=len(clients), consumers=consumers_total, listing=listing)
            stall = self.assign_stall() if self.assign_stall is not None else 0.0
            if stall > 0:
                # blocked preparing the internal topics: the rest of the assignment comes when that returns
                leader.stalled_at = generation
                return Stalled(stall)
        leader.stalled_at = None
        # warmups that finished restoring since the last rebalance are caught up now
        for (task, process), ready in list(model.warmup_ready.items()):
            if ready <= now:
                model.caught_up.setdefault(task, set()).add(process)
                del model.warmup_ready[(task, process)]
        # balanced target (HighAvailabilityTaskAssignor.balanceTasksOverThreads): tasks stay where they ran, then
        # move from the most to the least loaded process (tasks per thread) while a move lowers the skew
        order = sorted(clients)
        capacity = {p: len(clients[p]) for p in order}
        target: dict[str, str] = {}
        load = {p: 0 for p in order}
        for task in model.tasks:
            owner = process_of.get(prev_owner.get(task, ""))
            if owner:
                target[task] = owner
                load[owner] += 1
        for task in model.tasks:
            if task not in target:
                best = min(order, key=lambda p: (load[p] / capacity[p], p))
                target[task] = best
                load[best] += 1
        moved = True
        while moved:
            moved = False
            for source in order:
                for destination in order:
                    while source != destination and _should_move(load, capacity, source, destination):
                        task = next(t for t in sorted(model.tasks, key=lambda t: int(t.split("_")[1]))
                                    if target[t] == source)
                        target[task] = destination
                        load[source] -= 1
                        load[destination] += 1
                        moved = True
        active_on: dict[str, str] = {}
        warmups: dict[str, list[str]] = {p: [] for p in order}
        probing = False
        for task in model.tasks:
            want = target[task]
            owner = process_of.get(prev_owner.get(task, ""))
            caught = model.caught_up.get(task, set())
            if model.stateful and owner and owner != want and want not in caught:
                active_on[task] = owner                # stay where the state is; warm up the target
                if len(sum(warmups.values(), [])) < model.max_warmups * max(1, len(order)):
                    warmups[want].append(task)
                    if (task, want) not in model.warmup_ready:
                        model.warmup_ready[(task, want)] = (now + model.warmup_ms) if model.warmup_ms else float("inf")
                        model.warmup_start[(task, want)] = now
                probing = True
            else:
                active_on[task] = want
        if not model.stateful or not followups:
            probing = False
        # within a process: tasks spread over its consumers, sticky to the consumer that ran them
        per_consumer: dict[str, list[str]] = {m: [] for ms in clients.values() for m in ms}
        for process in order:
            tasks = [t for t in model.tasks if active_on[t] == process]
            consumers = sorted(clients[process])
            q = -(-len(tasks) // len(consumers)) if consumers else 0
            rest = []
            for task in tasks:
                c = prev_owner.get(task)
                if c in per_consumer and process_of.get(c) == process and len(per_consumer[c]) < q:
                    per_consumer[c].append(task)
                else:
                    rest.append(task)
            for task in rest:
                c = min(consumers, key=lambda m: (len(per_consumer[m]), m))
                per_consumer[c].append(task)
        # cooperative: a task whose current owner is another member is revoked first
        assigned: dict[str, list[str]] = {}
        revoking: dict[str, list[str]] = {m: [] for m in per_consumer}
        immediate: set[str] = set()
        for member, tasks in per_consumer.items():
            keep = []
            for task in tasks:
                owner = prev_owner.get(task)
                if owner and owner != member and owner in per_consumer:
                    leader.assignor_say("streams.removing_task", task=task, consumer=member)
                    revoking[owner].append(task)
                    immediate.add(member)
                else:
                    keep.append(task)
            assigned[member] = keep
        stateful_count = len(model.tasks) if model.stateful else 0
        leader.assignor_say("streams.assigning_tasks", stateful=javafmt.java_collection(
            model.tasks if model.stateful else []),
            stateless=f"java.util.stream.ReferencePipeline$2@{self.rng.getrandbits(28):x}")
        prev_standby = {p: sorted({t for _m, _i, meta in members if meta.user_data.process == p
                                   for t in meta.user_data.prev_standby}) for p in order}
        states = {p: self._client_state(p, sorted(t for t in model.tasks if active_on[t] == p), sorted(warmups[p]),
                                        sorted(t for t, o in prev_owner.items() if process_of.get(o) == p),
                                        prev_standby[p], capacity[p], now)
                  for p in order}
        self.log.say("streams.decided", thread=leader.name, states=javafmt.java_map(states),
                     followup="" if probing else " no")
        leader.assignor_say("streams.assigned_total", total=len(model.tasks), stateful=stateful_count, nodes=len(order))
        leader.assignor_say("streams.tasks_to_nodes", listing="\n".join(
            f"{p}=[{', '.join(sorted(t for t in model.tasks if active_on[t] == p))}]" for p in order))
        result: dict[str, StreamsAssignment] = {}
        encode_probing = probing and not immediate
        for process in order:
            probe_here = encode_probing and process == leader.instance.process_id
            for member in sorted(clients[process]):
                tasks = sorted(assigned[member], key=lambda t: int(t.split("_")[1]))
                standby = sorted(warmups[process]) if member == sorted(clients[process])[0] else []
                next_ms = FAR
                if member in immediate and followups:
                    leader.assignor_say("streams.followup_immediate", consumer=member)
                    next_ms = 0
                elif probe_here and followups:
                    next_ms = self.epoch_ms() + model.probing_interval_ms
                    leader.assignor_say("streams.followup_probing", consumer=member, at=log_time(next_ms),
                                        epoch_ms=next_ms)
                    probe_here = False
                result[member] = StreamsAssignment([partition_of(self.topic, t) for t in tasks], tasks, standby,
                                                   next_ms, min_received, common=common)
            by_consumer = {m: sorted(prev for prev, o in prev_owner.items() if o == m) for m in sorted(clients[process])}
            leader.assignor_say("streams.per_consumer", client=process,
                                prev_active=_map(by_consumer), prev_standby="{}",
                                assigned_active=_map({m: result[m].active for m in sorted(clients[process])}),
                                revoking=_map({m: sorted(revoking[m]) for m in sorted(clients[process])}),
                                assigned_standby=_map({m: result[m].standby for m in sorted(clients[process])}))
        if immediate or encode_probing:
            leader.assignor_say("streams.unstable")
        else:
            leader.assignor_say("streams.stable")
        self.world.streams_last = {"probing": encode_probing, "immediate": bool(immediate)}
        return result


    def _client_state(self, process: str, active: list[str], standby: list[str], prev_active: list[str],
                      prev_standby: list[str], capacity: int, now: float) -> str:
        """ClientState.toString as HighAvailabilityTaskAssignor logs it in "Decided on assignment": the offsets each
        client reported (-2, Task.LATEST_OFFSET, for a running active task) and the lag the leader computed for
        every stateful task (TreeMaps: sorted by task)."""
        model = self.state_model
        offsets, lags = [], []
        if model.stateful:
            for task in sorted(model.tasks, key=lambda t: int(t.split("_")[1])):
                if task in prev_active:
                    offsets.append(f"{task}=-2")
                    lags.append(f"{task}=-2")
                    continue
                lag = model.lag(task, process, now)
                if task in prev_standby:
                    offsets.append(f"{task}={max(0, model.end_offset(task, now) - lag)}")
                lags.append(f"{task}={lag}")
        tags = " clientTags: ([])" if version_key(self.log.version) >= (3, 2, 0) else ""
        return (f"[activeTasks: ({javafmt.java_collection(active)}) standbyTasks: ({javafmt.java_collection(standby)})"
                f" prevActiveTasks: ({javafmt.java_collection(prev_active)}) prevStandbyTasks: "
                f"({javafmt.java_collection(prev_standby)}) changelogOffsetTotalsByTask: ([{', '.join(offsets)}]) "
                f"taskLagTotals: ([{', '.join(lags)}]){tags} capacity: {capacity} assigned: "
                f"{len(active) + len(standby)}]")


def _should_move(load: dict[str, int], capacity: dict[str, int], source: str, destination: str) -> bool:
    """HighAvailabilityTaskAssignor.shouldMoveATask: a move only if it lowers the skew of tasks per thread."""
    skew = load[source] / capacity[source] - load[destination] / capacity[destination]
    if skew <= 0:
        return False
    proposed = (load[source] - 1) / capacity[source] - (load[destination] + 1) / capacity[destination]
    return 0 <= proposed < skew


def _map(mapping: dict[str, list[str]]) -> str:
    return "{" + ", ".join(f"{k}={javafmt.java_collection(v)}" for k, v in mapping.items()) + "}"
