"""KIP-848 consumer groups (group.protocol=consumer): the broker's epochs and the async consumer's reconciliation.

The broker (the Java group coordinator, 3.9 with the consumer protocol enabled, 4.x) keeps a group
epoch, bumped whenever membership or subscriptions change, and a target assignment computed for
it by the server-side uniform assignor. Each member moves towards its target on its own
heartbeats (ConsumerGroupHeartbeat): it first revokes what it must give up, keeping its epoch
(the broker fences it after its rebalance timeout if it does not), then takes the new epoch with
what is free; partitions another member still holds follow once released. Members are fenced when
their session expires (no heartbeat for group.consumer.session.timeout.ms) and answer a fenced or
unknown epoch by releasing everything and rejoining at epoch 0.

The client (AsyncKafkaConsumer and its membership manager) walks UNSUBSCRIBED -> JOINING ->
RECONCILING -> ACKNOWLEDGING -> STABLE, writing each transition, each reconciliation and the
rebalance listener's callbacks; a poll timeout makes it leave (LEAVING -> STALE) and rejoin on the
next poll.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from ..packgen import javafmt
from ..packgen.inventory import version_key
from .apps import COMMITS, Workload, config_dump
from .catalog import release
from .cluster import partition_for
from .process import Jvm

SESSION_MS = 45_000
HEARTBEAT_MS = 5_000


def kafka_uuid(rng) -> str:
    """org.apache.kafka.common.Uuid.toString(): 16 random bytes in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")


@dataclass
class CGMember:
    id: str
    client_id: str
    client_host: str
    instance: str | None
    topics: tuple[str, ...]
    rebalance_ms: int
    epoch: int = 0
    previous_epoch: int = -1
    state: str = "STABLE"            # STABLE | UNREVOKED_PARTITIONS | UNRELEASED_PARTITIONS
    assigned: list[str] = field(default_factory=list)
    revoking: list[str] = field(default_factory=list)
    deadline: float = 0.0
    timeout_token: int = 0


@dataclass
class ConsumerGroupState:
    id: str
    epoch: int = 0
    target_epoch: int = 0
    target: dict[str, list[str]] = field(default_factory=dict)
    members: dict[str, CGMember] = field(default_factory=dict)
    history: list = field(default_factory=list)      # (epoch, trigger, member id, time)


@dataclass
class HeartbeatResponse:
    error: str
    member_id: str = ""
    epoch: int = -1
    assignment: list[str] | None = None
    interval_ms: int = HEARTBEAT_MS
    message: str | None = None


class ConsumerGroupCoordinator:
    """The broker side of KIP-848 consumer groups on one broker."""

    def __init__(self, broker, cluster, topics: dict[str, int]):
        self.broker = broker
        self.cluster = cluster
        self.env = cluster.env
        self.rng = cluster.rng
        self.topics = topics
        self.groups: dict[str, ConsumerGroupState] = {}
        self.observers = []
        # group.consumer.migration.policy: whether a non-empty classic group of this broker (its ClassicCoordinator's,
        # broker.groups) converts when a consumer-protocol member joins it. Only the refusal is modelled: the lab
        # recorded it (migration-upgrade-refused); the conversion itself is not simulated.
        self.upgrade_enabled = True

    def say(self, key: str, group: str, **values) -> None:
        prefix = f"[GroupCoordinator id={self.broker.id} topic=__consumer_offsets partition={partition_for(group)}] "
        self.broker.log.say(key, prefix=prefix, thread=f"group-coordinator-event-processor-{self.rng.randint(0, 3)}",
                            group=group, **values)

    def group(self, group_id: str) -> ConsumerGroupState:
        if group_id not in self.groups:
            self.groups[group_id] = ConsumerGroupState(group_id)
        return self.groups[group_id]

    # -- ConsumerGroupHeartbeat --------------------------------------------------------------------
    def heartbeat(self, req, reply) -> None:
        p = partition_for(req["group"])
        if p in self.broker.loading:
            reply(HeartbeatResponse("COORDINATOR_LOAD_IN_PROGRESS"))
            return
        if p not in self.broker.coordinators:
            reply(HeartbeatResponse("NOT_COORDINATOR"))
            return
        group = self.group(req["group"])
        member_id, epoch = req["member_id"], req["epoch"]
        if epoch == -1:
            member = group.members.get(member_id)
            if member is not None:
                self.say("kip848.left", group.id, member=member_id)
                self._remove(group, member, "leave")
            reply(HeartbeatResponse("NONE", member_id, -1))
            return
        member = group.members.get(member_id)
        classic = getattr(self.broker, "groups", {}).get(req["group"])
        if epoch == 0 and member is None and classic is not None and classic.members and not self.upgrade_enabled:
            # GroupMetadataManager.validateOnlineUpgrade: the member is answered GROUP_ID_NOT_FOUND with its reason
            self.say("kip848.upgrade_refused", group.id)
            reply(HeartbeatResponse("GROUP_ID_NOT_FOUND", member_id,
                                    message=f"Cannot upgrade classic group {group.id} to consumer group because online "
                                            "upgrade is disabled."))
            return
        owner = next((m for m in group.members.values() if req.get("instance") and m.instance == req.get("instance")
                      and m.id != member_id), None) if epoch == 0 and member is None else None
        if owner is not None:
            # GroupMetadataManager.throwIfInstanceIdIsUnreleased: the old static member has not left (epoch -2) nor been
            # fenced; the new one is answered UNRELEASED_INSTANCE_ID
            self.say("kip848.instance_unreleased", group.id, member=member_id, instance=req["instance"],
                     owner=owner.id)
            reply(HeartbeatResponse("UNRELEASED_INSTANCE_ID", member_id,
                                    message=f"Static member {member_id} with instance id {req['instance']} cannot join "
                                            f"the group because the instance id is owned by {owner.id} member."))
            return
        if epoch == 0 and member is None:
            if not member_id:
                member_id = kafka_uuid(self.rng)
            member = CGMember(member_id, req["client_id"], req["client_host"], req.get("instance"),
                              tuple(req["topics"]), req["rebalance_ms"])
            group.members[member_id] = member
            self.say("kip848.joins", group.id, member=member_id, protocol="consumer")
            self._bump(group, "join", member_id)
        elif member is None:
            reply(HeartbeatResponse("UNKNOWN_MEMBER_ID", member_id, message=javafmt.error("UNKNOWN_MEMBER_ID").message))
            return
        elif epoch not in (member.epoch, member.previous_epoch) and epoch != 0:
            reply(HeartbeatResponse("FENCED_MEMBER_EPOCH", member_id,
                                    message=f"The consumer group member has a smaller member epoch ({epoch}) than "
                                            f"the one known by the group coordinator ({member.epoch}). The member "
                                            "must abandon all its partitions and rejoin."))
            return
        member.deadline = self.env.now + SESSION_MS
        deadline = member.deadline
        self.env.call_at(deadline, lambda: self._session_check(group, member_id, deadline))
        owned = set(req.get("owned") or [])
        self._reconcile(group, member, owned)
        reply(HeartbeatResponse("NONE", member_id, member.epoch, list(member.assigned)))

    def _bump(self, group: ConsumerGroupState, trigger: str, member_id: str) -> None:
        group.epoch += 1
        hash_ = self.rng.getrandbits(63) - (1 << 62)
        self.say("kip848.bumped", group.id, epoch=group.epoch, hash=hash_)
        group.history.append((group.epoch, trigger, member_id, self.env.now))
        for observer in self.observers:
            observer("bump", group, (group.epoch, trigger, member_id))
        self._compute_target(group)

    def _compute_target(self, group: ConsumerGroupState) -> None:
        """The uniform assignor, sticky: each member keeps what it has up to an even share."""
        ids = sorted(group.members)
        parts = [f"{t}-{i}" for t in sorted(self.topics) for i in range(self.topics[t])]
        target: dict[str, list[str]] = {m: [] for m in ids}
        if ids:
            quota = -(-len(parts) // len(ids))
            claimed = set()
            for m in ids:
                for tp in group.members[m].assigned + group.members[m].revoking:
                    if tp in parts and tp not in claimed and len(target[m]) < quota:
                        target[m].append(tp)
                        claimed.add(tp)
            for tp in parts:
                if tp not in claimed:
                    m = min(ids, key=lambda x: (len(target[x]), x))
                    target[m].append(tp)
        group.target = target
        group.target_epoch = group.epoch
        self.say("kip848.target", group.id, epoch=group.epoch, assignor="uniform", millis=self.rng.randint(0, 3))

    def _reconcile(self, group: ConsumerGroupState, member: CGMember, owned: set[str]) -> None:
        if member.epoch == group.target_epoch and member.state == "STABLE":
            return
        target = set(group.target.get(member.id, []))
        current = set(member.assigned) | set(member.revoking)
        revoke = current - target
        if member.state == "UNREVOKED_PARTITIONS" and not (owned & set(member.revoking)):
            member.revoking = []
            revoke = set()
        if revoke:
            member.revoking = sorted(revoke)
            member.assigned = sorted(current - revoke)
            if member.state != "UNREVOKED_PARTITIONS":
                member.state = "UNREVOKED_PARTITIONS"
                member.timeout_token += 1
                token, epoch = member.timeout_token, member.epoch
                self.env.call_at(self.env.now + member.rebalance_ms,
                                 lambda: self._rebalance_timeout(group, member.id, token, epoch))
            return
        others = {tp for m in group.members.values() if m is not member for tp in m.assigned + m.revoking}
        member.previous_epoch, member.epoch = member.epoch, group.target_epoch
        member.assigned = sorted(target - others)
        member.state = "UNRELEASED_PARTITIONS" if target & others else "STABLE"
        member.timeout_token += 1

    def _rebalance_timeout(self, group: ConsumerGroupState, member_id: str, token: int, epoch: int) -> None:
        member = group.members.get(member_id)
        if member is None or member.timeout_token != token or member.epoch != epoch:
            return
        self.say("kip848.fenced_timeout", group.id, member=member_id, epoch=epoch, millis=member.rebalance_ms)
        self._remove(group, member, "rebalance-timeout")

    def _session_check(self, group: ConsumerGroupState, member_id: str, deadline: float) -> None:
        member = group.members.get(member_id)
        if member is None or member.deadline != deadline:
            return
        self.say("kip848.fenced_session", group.id, member=member_id, reason="the member session expired")
        self._remove(group, member, "session-expired")

    def _remove(self, group: ConsumerGroupState, member: CGMember, trigger: str) -> None:
        group.members.pop(member.id, None)
        member.timeout_token += 1
        if group.members or trigger != "leave":
            self._bump(group, trigger, member.id)
        else:
            self._bump(group, trigger, member.id)


class AsyncConsumer:
    """An AsyncKafkaConsumer (group.protocol=consumer) with its membership manager, in an application."""

    def __init__(self, world, host: str, log, group: str, client_id: str, topic: str, partitions: int,
                 label: str = "deploy", max_poll_ms: int = 300_000, instance: str | None = None,
                 app_name: str = "tracker"):
        self.world = world
        self.env = world.env
        self.rng = world.rng
        self.host = host
        self.log = log
        self.group = group
        self.client_id = client_id
        self.topic = topic
        self.topics = {topic: partitions}
        self.label = label
        self.max_poll_ms = max_poll_ms
        self.instance = instance
        self.app_name = app_name
        self.workload = Workload()
        self.cfg = type("Cfg", (), {"client_id": client_id, "instance": instance, "group": group})()
        self.prefix = (f"[Consumer instanceId={instance}, clientId={client_id}, groupId={group}] " if instance else
                       f"[Consumer clientId={client_id}, groupId={group}] ")
        self.jvm: Jvm | None = None
        self.stopping = False

    # -- lines ----------------------------------------------------------------------------------------
    def say(self, key: str, thread: str | None = None, **values):
        return self.log.say(key, thread=thread or "main", prefix=self.prefix, **values)

    def transition(self, new: str) -> None:
        self.say("kip848.transition", thread="consumer_background_thread", member=self.member_id,
                 epoch=self.epoch, old=self.state, new=new)
        self.state = new

    # -- life cycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self.jvm = Jvm(self.world, self.host, self.log, self.world.host(self.host).ip)
        self.member_id = kafka_uuid(self.rng) if version_key(self.log.version) >= (4, 0, 0) else ""
        self.epoch = 0
        # The client's own count of the assignments it received (AbstractMembershipManager.LocalAssignment: NONE is
        # -1, each new assignment +1), printed by "Reconciling assignment with local epoch": no member epoch.
        self.local_epoch = -1
        self.state = "UNSUBSCRIBED"
        self.owned: list[str] = []
        self.target: list[str] | None = None
        self.coordinator = None
        self.last_poll = self.env.now
        self.stopping = False
        self.jvm.spawn(self._main(), "main")

    def _main(self):
        self.log.other("INFO", "com.example.Application", f"Starting {self.app_name} on {self.host}")
        yield self.env.timeout(self.rng.uniform(500, 2000))
        values = {"group.id": self.group, "client.id": self.client_id, "group.protocol": "consumer",
                  "max.poll.interval.ms": str(self.max_poll_ms), "group.instance.id": self.instance or "null",
                  "bootstrap.servers": "[" + ", ".join(f"{b.host}:{b.port}" for b in
                                                        self.world.cluster.brokers.values()) + "]"}
        self.log.say("consumer.config", body=config_dump("consumer", self.log.version, values))
        self.log.say("consumer.kafka_version", version=self.log.version)
        self.log.say("consumer.kafka_commit", commit=COMMITS[release(self.log.version)])
        self.say("consumer.async_subscribed", topics=[self.topic])
        self.transition("JOINING")
        self.jvm.spawn(self._background(), "consumer_background_thread")
        while not self.stopping:
            yield self.jvm.gate()
            self.last_poll = self.env.now
            if self.state == "STALE":
                self.transition("JOINING")
            duration = self.rng.uniform(*self.workload.batch_ms)
            for i, (at, length) in enumerate(self.workload.stalls):
                if self.env.now >= at:
                    duration = length
                    self.workload.stalls.pop(i)
                    break
            yield from self.jvm.sleep(duration)
        yield from self._leave()

    def _background(self):
        """The background thread: heartbeats, coordinator discovery, reconciliation, the poll timer."""
        next_hb = self.env.now
        while True:
            yield self.jvm.gate()
            if self.coordinator is None:
                broker = self.world.find_coordinator(self.host, self.group)
                yield self.env.timeout(self.world.cluster.latency() * 2)
                if broker is not None:
                    self.coordinator = broker
                    self.say("coord.request_discovered", thread="consumer_background_thread", coordinator=broker.node)
                else:
                    yield self.env.timeout(100)
                continue
            if self.state in ("STABLE", "RECONCILING", "ACKNOWLEDGING") and \
                    self.env.now - self.last_poll > self.max_poll_ms:
                exceeded = int(self.env.now - self.last_poll - self.max_poll_ms)
                self.say("kip848.poll_timeout", thread="consumer_background_thread")
                self.say("kip848.poll_exceeded", thread="consumer_background_thread", millis=exceeded,
                         member=self.member_id)
                self.transition("LEAVING")
                self._send({"epoch": -1})
                self.transition("STALE")
                self._lost()
                continue
            if self.state in ("UNSUBSCRIBED", "STALE", "FENCED", "FATAL") or self.env.now < next_hb:
                yield from self.jvm.sleep(min(250, max(1.0, next_hb - self.env.now)))
                continue
            next_hb = self.env.now + HEARTBEAT_MS
            if self.state == "ACKNOWLEDGING":
                self.transition("STABLE")
            response = self._send({"epoch": self.epoch, "owned": list(self.owned)})
            got = yield self.env.any_of([response, self.env.timeout(30_000)])
            yield self.jvm.gate()
            if got is not response:
                continue
            self._on_response(response.value)

    def _send(self, extra: dict):
        req = {"group": self.group, "member_id": self.member_id, "client_id": self.client_id,
               "client_host": "/" + self.world.host(self.host).ip, "instance": self.instance,
               "topics": [self.topic], "rebalance_ms": self.max_poll_ms, **extra}
        coordinator = self.world.kip848[self.coordinator.id]
        return self.world.cluster.request(self.host, self.coordinator, coordinator.heartbeat, req)

    def _on_response(self, resp: HeartbeatResponse) -> None:
        name = "ConsumerGroupHeartbeatRequest"
        if resp.error == "NONE":
            if not self.member_id:
                self.member_id = resp.member_id
            if self.state == "JOINING" or resp.epoch != self.epoch or sorted(resp.assignment or []) != self.owned:
                self.epoch = resp.epoch
                if sorted(resp.assignment or []) != self.owned or self.state == "JOINING":
                    self.transition("RECONCILING")
                    self._reconcile(sorted(resp.assignment or [], key=_pkey))
                    self.transition("ACKNOWLEDGING")
        elif resp.error == "FENCED_MEMBER_EPOCH":
            self.say("kip848.hb_fenced", thread="consumer_background_thread", request=name, member=self.member_id,
                     epoch=self.epoch, millis=0, message=resp.message)
            self._fenced()
        elif resp.error == "UNKNOWN_MEMBER_ID":
            self.say("kip848.hb_unknown", thread="consumer_background_thread", request=name, member=self.member_id,
                     millis=0, message=resp.message)
            self._fenced()
        elif resp.error in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"):
            self.say("kip848.hb_coordinator", thread="consumer_background_thread", request=name,
                     coordinator=self.coordinator.node, millis=100, message=javafmt.error(resp.error).message)
            self.coordinator = None
        elif resp.error == "UNRELEASED_INSTANCE_ID":
            # fatal too (AbstractHeartbeatRequestManager): the application exits like after GROUP_ID_NOT_FOUND
            self.say("kip848.hb_unreleased", thread="consumer_background_thread", request=name, instance=self.instance,
                     message=resp.message)
            self.transition("FATAL")
            self.say("kip848.fatal", thread="consumer_background_thread", member=self.member_id, epoch=self.epoch)
            self.stopping = True
        elif resp.error == "GROUP_ID_NOT_FOUND":
            # a fatal error: the membership manager goes to FATAL and poll() throws; the application exits (close())
            self.say("kip848.hb_fatal", thread="consumer_background_thread", request=name, error=resp.error,
                     message=resp.message)
            self.transition("FATAL")
            self.say("kip848.fatal", thread="consumer_background_thread", member=self.member_id, epoch=self.epoch)
            self.stopping = True

    def _reconcile(self, assigned: list[str]) -> None:
        owned = self.owned
        added = [tp for tp in assigned if tp not in owned]
        revoked = [tp for tp in owned if tp not in assigned]
        self.local_epoch += 1
        self.say("kip848.reconciling", thread="consumer_background_thread", local_epoch=self.local_epoch,
                 member=self.member_id, assigned=assigned, owned=owned, added=added, revoked=revoked)
        if revoked:
            self.say("kip848.revoking", thread="consumer_background_thread", partitions=revoked)
            self.say("consumer.revoke", partitions=revoked)
        self.owned = list(assigned)
        self.say("consumer.added", partitions=added)

    def _lost(self) -> None:
        if self.owned:
            self.say("consumer.lost", partitions=list(self.owned))
        self.owned = []

    def _fenced(self) -> None:
        self.transition("FENCED")
        self.epoch = 0
        self.local_epoch = -1      # the assignment is cleared (LocalAssignment.NONE)
        self._lost()
        self.transition("JOINING")

    def _leave(self):
        if self.state == "FATAL":
            # close() after a fatal error: nothing to release, no leave heartbeat; then the application exits
            self.say("kip848.left_done")
            yield self.env.timeout(self.rng.uniform(20, 60))
            self.log.other("INFO", "com.example.Application", f"{self.app_name} stopped")
            self.jvm.stop()
            return
        self.transition("PREPARE_LEAVING")
        self.say("kip848.releasing", thread="consumer_background_thread", member=self.member_id,
                 partitions=javafmt.java_collection(self.owned))
        if self.owned:
            self.say("consumer.revoke", partitions=list(self.owned))
        self.say("kip848.released", thread="consumer_background_thread", member=self.member_id)
        self.owned = []
        self.transition("LEAVING")
        if self.coordinator is not None:
            self._send({"epoch": -1})
        self.transition("UNSUBSCRIBED")
        self.say("kip848.left_done")
        yield self.env.timeout(5)

    def shutdown(self, grace_ms: float = 30_000):
        if self.jvm is None or not self.jvm.alive:
            return
        self.log.other("INFO", "com.example.Application", f"Shutting down {self.app_name}")
        self.stopping = True
        yield self.env.timeout(self.rng.uniform(500, 1500))
        self.jvm.stop()

    def crash(self) -> None:
        if self.jvm is not None:
            self.jvm.crash()


def _pkey(tp: str):
    topic, _, n = tp.rpartition("-")
    return topic, int(n)
