"""Small incidents written line by line in Kafka's own wording (3.6 templates), read back through the
real reader: the diagnosis tests' inputs. Each helper writes one record the way the named Kafka
class logs it; a story is a few hosts' logs and is analysed like any directory of logs.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from rebalance_doctor.diagnosis import analyze_events
from rebalance_doctor.packgen.envelope import render
from tests.helpers import events_of

T0 = datetime(2024, 3, 5, 10, 0, tzinfo=timezone.utc)
GC = "kafka.coordinator.group.GroupCoordinator"
CC = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
AC = "org.apache.kafka.clients.consumer.internals.AbstractCoordinator"
SPA = "org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor"
ST = "org.apache.kafka.streams.processor.internals.StreamThread"
KS = "org.apache.kafka.streams.KafkaStreams"
GMM = "org.apache.kafka.coordinator.group.GroupMetadataManager"
COORD = "broker-1:9092 (id: 2147483646 rack: null)"
POLL_WARNING = ("consumer poll timeout has expired. This means the time between subsequent calls to poll() was "
                "longer than the configured max.poll.interval.ms, which typically implies that the poll loop is "
                "spending too much time processing messages. You can address this either by increasing "
                "max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with "
                "max.poll.records.")
MEMBER_ID_REQUIRED = ("rebalance failed due to 'The group member needs to have a valid member id before actually "
                      "entering a consumer group.' (MemberIdRequiredException)")


def uuid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


class Story:
    """Logs of one incident: `at(seconds)` sets the clock, the helpers append records."""

    def __init__(self, group: str = "orders", layout: str = "kafka"):
        self.group = group
        self.layout = layout
        self.files: dict[str, list[tuple]] = {}
        self.now = T0

    def at(self, seconds: float) -> "Story":
        self.now = T0 + timedelta(seconds=seconds)
        return self

    def later(self, ms: float) -> "Story":
        self.now += timedelta(milliseconds=ms)
        return self

    def write(self, path: str, level: str, logger: str, msg: str, thread: str = "main") -> None:
        self.files.setdefault(path, []).append((self.now, len(self.files.get(path, [])), level, logger, msg, thread))

    def save(self, directory: Path) -> Path:
        for path, records in self.files.items():
            target = directory / path
            target.parent.mkdir(parents=True, exist_ok=True)
            lines = [render(self.layout, ts, level, logger, msg, thread)
                     for ts, _, level, logger, msg, thread in sorted(records, key=lambda r: (r[0], r[1]))]
            target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return directory

    def analyze(self, directory: Path, config=None):
        events, _ = events_of(self.save(directory))
        return analyze_events(events, config)


class Broker:
    """The classic group coordinator (3.6 Scala GroupCoordinator wording)."""

    def __init__(self, story: Story, host: str = "broker-1", partition: int = 17):
        self.story, self.path, self.p = story, f"{host}/server.log", partition

    def say(self, msg: str, level: str = "INFO") -> None:
        self.story.write(self.path, level, GC, f"[GroupCoordinator 1]: {msg}", "data-plane-kafka-request-handler-1")

    def prepare(self, old: int, reason: str) -> None:
        self.say(f"Preparing to rebalance group {self.story.group} in state PreparingRebalance with old generation "
                 f"{old} (__consumer_offsets-{self.p}) (reason: {reason})")

    def stabilized(self, gen: int, members: int) -> None:
        self.say(f"Stabilized group {self.story.group} generation {gen} (__consumer_offsets-{self.p}) with "
                 f"{members} members")

    def assignment(self, gen: int, leader: str, members: int, static: int = 0) -> None:
        self.say(f"Assignment received from leader {leader} for group {self.story.group} for generation {gen}. "
                 f"The group has {members} members, {static} of which are static.")

    def new_member(self, member: str, old: int, reason: str = MEMBER_ID_REQUIRED, instance: str = "None") -> None:
        self.prepare(old, f"Adding new member {member} with group instance id {instance}; client reason: {reason}")

    def left(self, member: str, reason: str, old: int) -> None:
        self.say(f"Member {member} has left group {self.story.group} through explicit `LeaveGroup`; "
                 f"client reason: {reason}")
        self.prepare(old, f"Removing member {member} on LeaveGroup; client reason: {reason}")

    def expired(self, member: str, old: int) -> None:
        self.say(f"Member {member} in group {self.story.group} has failed, removing it from the group")
        self.prepare(old, f"removing member {member} on heartbeat expiration")

    def rejoins(self, member: str, old: int, reason: str) -> None:
        self.prepare(old, f"Updating metadata for member {member} during Stable; client reason: {reason}")

    def static_back(self, instance: str, old_member: str) -> None:
        self.say(f"Static member with groupInstanceId={instance} and unknown member id joins group "
                 f"{self.story.group} in Stable state. Replacing previously mapped member {old_member} with this "
                 f"groupInstanceId.")
        self.say("Static member which joins during Stable stage and doesn't affect selectProtocol will not trigger "
                 "rebalance.")


class Consumer:
    """A Java consumer's ConsumerCoordinator / AbstractCoordinator lines (3.6 wording)."""

    def __init__(self, story: Story, host: str, client: str, member: str, instance: str | None = None,
                 protocol: str = "range"):
        self.story, self.host, self.client, self.member = story, host, client, member
        self.instance, self.protocol = instance, protocol
        self.path = f"{host}/app.log"

    def say(self, msg: str, logger: str = CC, level: str = "INFO", thread: str = "main") -> None:
        head = f"instanceId={self.instance}, " if self.instance else ""
        self.story.write(self.path, level, logger,
                         f"[Consumer {head}clientId={self.client}, groupId={self.story.group}] {msg}", thread)

    def start(self, settings: dict[str, str] | None = None) -> None:
        values = {"group.id": self.story.group, "client.id": self.client, "max.poll.interval.ms": "300000",
                  "max.poll.records": "500", "session.timeout.ms": "45000", "heartbeat.interval.ms": "3000",
                  "group.instance.id": self.instance or "null",
                  "partition.assignment.strategy": "[class org.apache.kafka.clients.consumer.RangeAssignor, "
                                                   "class org.apache.kafka.clients.consumer.CooperativeStickyAssignor]"}
        values.update(settings or {})
        dump = "".join(f"\n\t{k} = {v}" for k, v in sorted(values.items()))
        self.story.write(self.path, "INFO", "org.apache.kafka.clients.consumer.ConsumerConfig",
                         f"ConsumerConfig values: {dump}\n")
        self.story.write(self.path, "INFO", "org.apache.kafka.common.utils.AppInfoParser", "Kafka version: 3.6.0")

    def generation(self, gen: int) -> str:
        return f"Generation{{generationId={gen}, memberId='{self.member}', protocol='{self.protocol}'}}"

    def request_join(self, reason: str) -> None:
        self.say(f"Request joining group due to: {reason}", logger=AC)

    def joining(self) -> None:
        self.say("(Re-)joining group", logger=AC)

    def joined(self, gen: int) -> None:
        self.say(f"Successfully joined group with generation {self.generation(gen)}", logger=AC)

    def synced(self, gen: int) -> None:
        self.say(f"Successfully synced group in generation {self.generation(gen)}", logger=AC)

    def assigned(self, partitions: list[str], owned: list[str] | None = None) -> None:
        owned = owned or []
        added = [p for p in partitions if p not in owned]
        revoked = [p for p in owned if p not in partitions]
        self.say("Updating assignment with\n"
                 f"\tAssigned partitions:                       [{', '.join(partitions)}]\n"
                 f"\tCurrent owned partitions:                  [{', '.join(owned)}]\n"
                 f"\tAdded partitions (assigned - owned):       [{', '.join(added)}]\n"
                 f"\tRevoked partitions (owned - assigned):     [{', '.join(revoked)}]\n")

    def adding(self, partitions: list[str]) -> None:
        self.say(f"Adding newly assigned partitions: {', '.join(partitions)}")

    def revoked(self, partitions: list[str]) -> None:
        self.say(f"Revoke previously assigned partitions {', '.join(partitions)}")

    def leave(self, reason: str) -> None:
        self.say(f"Member {self.member} sending LeaveGroup request to coordinator {COORD} due to {reason}", logger=AC)

    def poll_timeout(self) -> None:
        self.say(POLL_WARNING, logger=AC, level="WARN", thread=f"kafka-coordinator-heartbeat-thread | {self.story.group}")

    def heartbeat_unknown(self, gen: int) -> None:
        self.say(f"Attempt to heartbeat with {self.generation(gen)} and group instance id "
                 f"{'Optional[' + self.instance + ']' if self.instance else 'Optional.empty'} failed due to "
                 "UNKNOWN_MEMBER_ID, resetting generation", logger=AC)

    def lost(self) -> None:
        self.say("Giving away all assigned partitions as lost since generation/memberID has been reset,indicating "
                 "that consumer is in old state or no longer part of the group")

    def processing(self, text: str = "processed a batch") -> None:
        self.story.write(self.path, "INFO", "com.example.App", text)


class ClassicGroup:
    """A classic consumer group run by the rules of the protocol, writing what broker and members log.

    `rebalance(...)` runs one generation: the coordinator prepares (with the reason of whoever
    started it), every other member learns it from its heartbeat ("group is already rebalancing"),
    eager members revoke everything before rejoining, the coordinator stabilizes, the leader
    assigns, every member syncs and applies its assignment; cooperative members that lost
    partitions revoke them and rejoin at once ("need to revoke partitions"), the followup.
    """

    def __init__(self, story: Story, broker: Broker | None, topic: str = "orders", partitions: int = 6,
                 generation: int = 40, protocol: str = "range"):
        self.story, self.broker, self.topic, self.partitions = story, broker, topic, partitions
        self.gen, self.protocol = generation, protocol
        self.members: list[Consumer] = []
        self.owned: dict[str, list[str]] = {}
        self.clock = 0.0

    @property
    def cooperative(self) -> bool:
        return self.protocol == "cooperative-sticky"

    def consumer(self, host: str, client: str, n: int, instance: str | None = None) -> Consumer:
        return Consumer(self.story, host, client, f"{client}-{uuid(n)}", instance, self.protocol)

    def tick(self, seconds: float) -> None:
        self.clock += seconds
        self.story.at(self.clock)

    # -- the operations -----------------------------------------------------------------------------
    def start_with(self, *consumers: Consumer) -> None:
        """Members already in the group at generation `gen` (before the logs begin)."""
        self.members = list(consumers)
        self._assign({c.member: [] for c in self.members}, log=False)

    def join(self, consumer: Consumer, start: bool = True) -> None:
        if start:
            consumer.start({"partition.assignment.strategy": _strategy(self.protocol)})
        self.story.later(50)
        reason = f"need to re-join with the given member-id: {consumer.member}"
        consumer.request_join(reason)
        consumer.joining()
        self.members.append(consumer)
        if self.broker:
            self.broker.new_member(consumer.member, self.gen, reason)
        self.rebalance(starter=consumer)

    def leave(self, consumer: Consumer, reason: str = "the consumer is being closed") -> None:
        consumer.leave(reason)
        self.members.remove(consumer)
        self.owned.pop(consumer.member, None)
        self.story.later(2)
        if self.broker:
            self.broker.left(consumer.member, reason, self.gen)
        self.rebalance(starter=None)

    def poll_timeout(self, consumer: Consumer) -> None:
        consumer.poll_timeout()
        self.leave(consumer, "consumer poll timeout has expired.")

    def expire(self, consumer: Consumer) -> None:
        self.members.remove(consumer)
        self.owned.pop(consumer.member, None)
        if self.broker:
            self.broker.expired(consumer.member, self.gen)
        self.rebalance(starter=None)

    def restart(self, consumer: Consumer, n: int, away_s: float = 20) -> Consumer:
        """Close, come back as a new process (a new member id) after away_s."""
        self.leave(consumer)
        self.tick(away_s)
        again = Consumer(self.story, consumer.host, consumer.client, f"{consumer.client}-{uuid(n)}",
                         consumer.instance, self.protocol)
        self.join(again)
        return again

    # -- one generation -----------------------------------------------------------------------------
    def rebalance(self, starter: Consumer | None, followup_of: list[Consumer] | None = None) -> None:
        old = self.gen
        for c in self.members:
            if c is starter or (followup_of and c in followup_of):
                continue
            self.story.later(3)
            c.request_join("group is already rebalancing")
            if not self.cooperative and self.owned.get(c.member):
                c.revoked(self.owned[c.member])
            c.joining()
        self.story.later(300)
        self.gen = old + 1
        if self.broker:
            self.broker.stabilized(self.gen, len(self.members))
        for c in self.members:
            c.joined(self.gen)
        leader = self.members[0]
        target = self._target()
        self.story.later(20)
        leader.say(f"Finished assignment for group at generation {self.gen}: "
                   + "{" + ", ".join(f"{m}=Assignment(partitions=[{', '.join(p)}])" for m, p in target.items()) + "}")
        if self.broker:
            self.broker.assignment(self.gen, leader.member, len(self.members))
        self.story.later(10)
        revoking = []
        given = {}
        for c in self.members:
            owned = [] if not self.cooperative else self.owned.get(c.member, [])
            mine = target[c.member]
            if self.cooperative:
                # The assignor holds back a partition that changes owner until its owner revoked it.
                taken = {p for m, ps in self.owned.items() if m != c.member for p in ps}
                mine = [p for p in mine if p not in taken or p in owned]
            c.synced(self.gen)
            if self.cooperative:
                c.assigned(mine, owned)     # ConsumerCoordinator writes "Updating assignment with" under COOPERATIVE only
            else:
                c.adding(mine)
            lost = [p for p in owned if p not in mine]
            if lost:
                c.revoked(lost)
                revoking.append((c, lost))
            given[c.member] = mine
        self.owned = given
        if revoking and self.cooperative:
            self.story.later(5)
            first, lost = revoking[0]
            reason = f"need to revoke partitions [{', '.join(lost)}] as indicated by the current assignment and re-join"
            for c, lost in revoking:
                c.request_join(f"need to revoke partitions [{', '.join(lost)}] as indicated by the current "
                               "assignment and re-join")
                c.joining()
            if self.broker:
                self.broker.rejoins(first.member, self.gen, reason)
            self.rebalance(starter=None, followup_of=[c for c, _ in revoking])

    def _target(self) -> dict[str, list[str]]:
        names = sorted(c.member for c in self.members)
        target = {m: [] for m in names}
        if not self.cooperative:
            for p in range(self.partitions):
                target[names[p % len(names)]].append(f"{self.topic}-{p}")
            return target
        # Sticky and balanced: n members share the partitions as evenly as possible (the first
        # partitions % n members, by what they own, one more); each keeps what it owns up to its
        # share; the rest goes to the members below theirs.
        ranked = sorted(names, key=lambda m: (-len(self.owned.get(m, [])), m))
        base, extra = divmod(self.partitions, len(names))
        quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(ranked)}
        free = []
        for p in range(self.partitions):
            partition = f"{self.topic}-{p}"
            owner = next((m for m, ps in self.owned.items() if partition in ps and m in target), None)
            if owner is not None and len(target[owner]) < quota[owner]:
                target[owner].append(partition)
            else:
                free.append(partition)
        for partition in free:
            target[min(names, key=lambda m: (len(target[m]) - quota[m], m))].append(partition)
        return target

    def _assign(self, _members, log: bool) -> None:
        self.owned = self._target()


def _strategy(protocol: str) -> str:
    name = {"range": "RangeAssignor", "cooperative-sticky": "CooperativeStickyAssignor",
            "roundrobin": "RoundRobinAssignor"}[protocol]
    return f"[class org.apache.kafka.clients.consumer.{name}]"


class StreamsInstance:
    """One Kafka Streams client (one StreamThread) on a host: its consumer and its Streams lines."""

    def __init__(self, story: Story, host: str, app: str, process: int, member: int, instance: str | None = None):
        self.story, self.host, self.app, self.instance = story, host, app, instance
        self.node = f"{app}-{uuid(process)}"
        self.thread = f"{self.node}-StreamThread-1"
        self.consumer = Consumer(story, host, f"{self.thread}-consumer", f"{self.thread}-consumer-{uuid(member)}",
                                 instance, "stream")
        self.consumer.path = f"{host}/streams.log"

    def stream(self, msg: str, logger: str = SPA, level: str = "INFO") -> None:
        self.story.write(self.consumer.path, level, logger, f"stream-thread [{self.thread}] {msg}", self.thread)

    def client_state(self, old: str, new: str) -> None:
        self.story.write(self.consumer.path, "INFO", KS, f"stream-client [{self.node}] State transition from {old} "
                                                          f"to {new}", self.thread)

    def thread_state(self, old: str, new: str) -> None:
        self.stream(f"State transition from {old} to {new}", logger=ST)


class StreamsGroup:
    """A Kafka Streams application on the classic protocol (3.6 wording): the consumer group of its
    StreamThreads, the leader's StreamsPartitionAssignor, followups and probing rebalances."""

    def __init__(self, story: Story, broker: Broker | None, generation: int = 20):
        self.story, self.broker, self.gen = story, broker, generation
        self.instances: list[StreamsInstance] = []
        self.clock = 0.0

    def tick(self, seconds: float) -> None:
        self.clock += seconds
        self.story.at(self.clock)

    def start_with(self, *instances: StreamsInstance) -> None:
        self.instances = list(instances)

    def add(self, instance: StreamsInstance, followups: list[str], waiting_for: StreamsInstance | None = None,
            expires_at: float | None = None) -> None:
        """A new instance starts and joins; `followups` say what each rebalance of the operation ends
        with: "cooperative" (tasks change owner: an immediate followup), "probing" (a probing
        rebalance is scheduled), "stable"."""
        instance.client_state("CREATED", "REBALANCING")
        instance.thread_state("CREATED", "STARTING")
        reason = f"need to re-join with the given member-id: {instance.consumer.member}"
        instance.consumer.request_join(reason)
        instance.consumer.joining()
        self.instances.append(instance)
        if self.broker:
            self.broker.new_member(instance.consumer.member, self.gen, reason)
        self.rebalance(instance, followups, waiting_for=waiting_for, expires_at=expires_at)

    def restart(self, old: StreamsInstance, member: int, session_s: float = 45, followups=("version_probing", "stable"),
                away_s: float = 10, clean: bool = True) -> StreamsInstance:
        """Close an instance (Streams sends no LeaveGroup) and start it again with a new member id; the
        coordinator removes the old member after session.timeout.ms. `clean=False`: the process is killed
        (no shutdown lines; the same removal follows)."""
        if clean:
            old.client_state("RUNNING", "PENDING_SHUTDOWN")
            old.thread_state("RUNNING", "PENDING_SHUTDOWN")
            old.thread_state("PENDING_SHUTDOWN", "DEAD")
            old.client_state("PENDING_SHUTDOWN", "NOT_RUNNING")
        else:
            old.stream("Processed 1000 total records", logger=ST)
        started = self.clock
        self.tick(away_s)
        new = StreamsInstance(self.story, old.host, old.app, int(old.node.split("-")[-1], 16), member, old.instance)
        self.instances.remove(old)
        if self.instances and old is not self.instances[0]:
            pass
        self.add(new, list(followups), waiting_for=old, expires_at=started + session_s)
        return new

    def lose_session(self, instance: StreamsInstance, pause_s: float = 50) -> None:
        """The instance's process pauses (a long GC) past its session timeout: removed, it rejoins."""
        instance.stream("Processed 1000 total records", logger=ST)
        self.tick(pause_s)
        self.instances.remove(instance)
        if self.broker:
            self.broker.expired(instance.consumer.member, self.gen)
        self.rebalance(None, ["stable"])
        self.story.later(500)
        instance.consumer.heartbeat_unknown(self.gen - 1)
        instance.consumer.lost()
        old = instance.consumer.member
        instance.consumer.member = old[:-12] + f"{int(old[-12:], 16) + 100:012x}"
        reason = f"need to re-join with the given member-id: {instance.consumer.member}"
        instance.consumer.request_join(reason)
        instance.consumer.joining()
        self.instances.append(instance)
        if self.broker:
            self.broker.new_member(instance.consumer.member, self.gen, reason)
        self.rebalance(instance, ["stable"])

    def rebalance(self, starter: StreamsInstance | None, followups: list[str], probe_interval_s: float = 600,
                  waiting_for: StreamsInstance | None = None, expires_at: float | None = None) -> None:
        """One generation. `waiting_for`: a member that does not rejoin (its process is gone); the
        coordinator waits until its session expires at `expires_at` (seconds), removes it, and completes."""
        outcome = followups[0]
        old = self.gen
        for i in self.instances:
            if i is starter:
                continue
            self.story.later(3)
            i.consumer.request_join("group is already rebalancing")
            i.consumer.joining()
        if waiting_for is not None:
            self.clock = max(self.clock, expires_at)
            self.story.at(self.clock)
            if self.broker:
                self.broker.say(f"Member {waiting_for.consumer.member} in group {self.story.group} has failed, "
                                "removing it from the group")
        self.story.later(300)
        self.gen = old + 1
        if self.broker:
            self.broker.stabilized(self.gen, len(self.instances))
        for i in self.instances:
            i.consumer.joined(self.gen)
        leader = self.instances[0]
        self.story.later(10)
        listing = "\n".join(f"{i.node}: [{i.consumer.member}]" for i in self.instances)
        leader.stream(f"{len(self.instances)} client nodes and {len(self.instances)} consumers participating in this "
                      f"rebalance: \n{listing}.")
        scheduled = int((self.story.now.timestamp() + probe_interval_s) * 1000)
        if outcome == "version_probing":
            asked = starter or self.instances[-1]
            leader.stream("Received a future (version probing) subscription (version: 12). Sending assignment back "
                          "(with supported version 11).")
        if outcome == "cooperative":
            leader.stream(f"Requesting followup rebalance be scheduled immediately by {self.instances[-1].consumer.member} "
                          "due to tasks changing ownership.")
        elif outcome == "probing":
            leader.stream(f"Requesting followup rebalance be scheduled by {leader.consumer.member} for {scheduled} to "
                          "probe for caught-up replica tasks.")
        leader.stream("Finished stable assignment of tasks, no followup rebalances required."
                      if outcome in ("stable", "version_probing")
                      else "Finished unstable assignment of tasks, a followup rebalance will be scheduled.")
        leader.consumer.say(f"Finished assignment for group at generation {self.gen}: {{}}")
        if self.broker:
            self.broker.assignment(self.gen, leader.consumer.member, len(self.instances))
        self.story.later(10)
        for i in self.instances:
            i.consumer.synced(self.gen)
        if outcome in ("cooperative", "version_probing"):
            asked = self.instances[-1] if outcome == "cooperative" else (starter or self.instances[-1])
            if outcome == "cooperative":
                asked.stream("Requested to schedule immediate rebalance for new tasks to be safely revoked from "
                             "current owner.")
            else:
                asked.stream("Sent a version 12 subscription and got version 11 assignment back (successful version "
                             "probing). Downgrade subscription metadata to commonly supported version 11 and trigger "
                             "new rebalance.")
                asked.stream("Requested to schedule immediate rebalance due to version probing.")
            self.story.later(50)
            asked.stream("Triggering the followup rebalance scheduled for 0.", logger=ST)
            reason = "triggered followup rebalance scheduled for 0"
            asked.consumer.request_join(reason)
            asked.consumer.joining()
            if self.broker:
                self.broker.rejoins(asked.consumer.member, self.gen, reason)
            self.rebalance(asked, followups[1:], probe_interval_s)
        elif outcome == "probing":
            leader.stream(f"Requested to schedule next probing rebalance at {scheduled} to try for a more balanced "
                          "assignment.")
            self.tick(probe_interval_s)
            leader.stream(f"Triggering the followup rebalance scheduled for {scheduled}.", logger=ST)
            reason = f"triggered followup rebalance scheduled for {scheduled}"
            leader.consumer.request_join(reason)
            leader.consumer.joining()
            if self.broker:
                self.broker.rejoins(leader.consumer.member, self.gen, reason)
            self.rebalance(leader, followups[1:], probe_interval_s)


class ConsumerProtocolGroup:
    """A KIP-848 consumer group as the new coordinator logs it (3.9 GroupMetadataManager wording)."""

    def __init__(self, story: Story, epoch: int = 4, partitions: int = 6, topic_id: str = "7l8rBsX6TMqbHE6QgWshdw"):
        self.story, self.epoch, self.partitions, self.topic_id = story, epoch, partitions, topic_id
        self.members: list[str] = []
        self.path = "broker-1/server.log"

    def say(self, msg: str) -> None:
        self.story.write(self.path, "INFO", GMM, f"[GroupCoordinator id=1 topic=__consumer_offsets partition=33] "
                                                 f"[GroupId {self.story.group}] {msg}", "group-coordinator-event-processor-0")

    def join(self, member: str) -> None:
        self.say(f"Member {member} joins the consumer group using the consumer protocol.")
        self.members.append(member)
        self.bump()

    def leave(self, member: str) -> None:
        self.say(f"Member {member} left the consumer group.")
        self.members.remove(member)
        self.bump()

    def expire(self, member: str) -> None:
        self.say(f"Member {member} fenced from the group because the member session expired..")
        self.members.remove(member)
        self.bump()

    def bump(self) -> None:
        previous = self.epoch
        self.epoch += 1
        self.say(f"Bumped group epoch to {self.epoch}.")
        target = {m: [p for p in range(self.partitions) if p % len(self.members) == i]
                  for i, m in enumerate(self.members)}
        self.say(f"Computed a new target assignment for epoch {self.epoch} with 'uniform' assignor in 1ms: {{"
                 + ", ".join(f"{m}=MemberAssignment(partitions={{{self.topic_id}={ps}}})" for m, ps in target.items())
                 + "}.")
        for m, ps in target.items():
            self.story.later(200)
            self.say(f"Member {m} new assignment state: epoch={self.epoch}, previousEpoch={previous}, state=STABLE, "
                     f"assignedPartitions=[{', '.join(f'{self.topic_id}-{p}' for p in ps)}].")
