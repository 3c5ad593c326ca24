"""The broker side of the classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

A transcription of the coordinator's state machine (Scala ``GroupCoordinator`` 2.4-4.0 and the
Java ``GroupMetadataManager`` of 3.9+, which behave alike for classic groups): states Empty,
PreparingRebalance, CompletingRebalance, Stable; KIP-394 member ids (MEMBER_ID_REQUIRED); the
initial rebalance delay of an empty group; the rebalance timeout (the largest member's
max.poll.interval.ms) after which members that did not rejoin are removed; session timeouts
checked only outside a rebalance; static members (KIP-345) replaced without a rebalance in a
Stable group and fenced when a stale instance speaks; the pending-sync expiry (3.0+). Every
transition writes the lines the broker writes for it, and the group keeps the history of its
rebalances for the ground truth.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from ..packgen import javafmt
from ..packgen.inventory import version_key
from .catalog import quoted_reason

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass
class JoinRequest:
    group: str
    member_id: str                  # "" for an unknown member
    instance: str | None
    client_id: str
    client_host: str                # "/10.0.0.7"
    session_ms: int
    rebalance_ms: int
    protocol_type: str              # consumer | connect
    protocols: tuple[str, ...]      # assignor names in preference order
    metadata: object                # the subscription (owned partitions...); a change forces a rebalance
    reason: str = ""                # the client's rejoin reason (what it meant, kept for the ground truth)
    reason_sent: bool = True        # JoinGroup v8+ (clients 3.2+, KIP-800) carries it; older ones send none
    skip_supported: bool = False    # JoinGroup v9+ (clients 3.3+ here): a returning static leader skips assigning


@dataclass
class SyncRequest:
    group: str
    member_id: str
    instance: str | None
    generation: int
    assignments: dict | None = None   # the leader's: member id -> assignment


@dataclass
class HeartbeatRequest:
    group: str
    member_id: str
    instance: str | None
    generation: int


@dataclass
class LeaveRequest:
    group: str
    member_id: str
    instance: str | None
    reason: str
    reason_sent: bool = True        # LeaveGroup v5+ (clients 3.2+, KIP-800) carries it


@dataclass
class JoinResponse:
    error: str                      # NONE, MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, ...
    member_id: str = ""
    generation: int = -1
    protocol: str | None = None
    leader: str = ""
    members: list = field(default_factory=list)   # (member_id, instance, metadata) for the leader
    skip_assignment: bool = False


@dataclass
class SyncResponse:
    error: str
    assignment: object = None
    protocol: str | None = None


@dataclass
class Member:
    id: str
    instance: str | None
    client_id: str
    client_host: str
    session_ms: int
    rebalance_ms: int
    protocol_type: str
    protocols: tuple[str, ...]
    metadata: object
    join_reply: Callable | None = None
    sync_reply: Callable | None = None
    is_new: bool = True
    deadline: float = 0.0
    assignment: object = None


@dataclass
class Attempt:
    """One rebalance as the coordinator lived it (for the ground truth)."""

    old_generation: int
    start: float
    trigger: str                    # new-member | leave | expired | joining | metadata | leader-rejoin |
                                    # static-update | protocol-change | sync-error | pending-sync | loaded
    member: str | None              # the member id whose action started it
    reason: str = ""
    generation: int | None = None   # the generation it reached (None: never stabilized)
    stabilized: float | None = None
    completed: float | None = None  # the leader's assignment stored: the group is Stable
    failed: str | None = None       # why it never became Stable
    members: list = field(default_factory=list)
    leader: str | None = None
    removed: list = field(default_factory=list)   # members removed for not rejoining
    empty_start: bool = False                      # it started from an Empty group (the initial rebalance delay)


class ClassicGroup:
    def __init__(self, coordinator: "ClassicCoordinator", group_id: str):
        self.coordinator = coordinator
        self.id = group_id
        self.state = EMPTY
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: "OrderedDict[str, Member]" = OrderedDict()
        self.pending: set[str] = set()
        self.static: dict[str, str] = {}
        self.pending_sync: set[str] = set()
        self.new_member_added = False
        self.join_token = 0
        self.sync_token = 0
        self.history: list[Attempt] = []
        self.rebalance_timeout_ms = 0

    # -- membership helpers --------------------------------------------------------------------
    def awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.join_reply is not None)

    def all_joined(self) -> bool:
        return len(self.members) == self.awaiting_join() and not self.pending

    def supports(self, protocol_type: str, protocols: tuple[str, ...]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        candidates = self.candidates()
        return any(p in candidates for p in protocols)

    def candidates(self) -> set[str]:
        sets = [set(m.protocols) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """GroupMetadata.selectProtocol: each member votes for its most preferred common protocol."""
        candidates = self.candidates()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(p for p in member.protocols if p in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        # ties: Scala's maxBy over a HashMap is arbitrary; the first preference of the group wins here
        for member in self.members.values():
            for p in member.protocols:
                if votes.get(p) == best:
                    return p
        raise AssertionError("no protocol")

    def add(self, member: Member, reply: Callable | None) -> None:
        self.coordinator.known_hosts[member.id] = member.client_host
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader is None:
            self.leader = member.id
        member.join_reply = reply
        self.members[member.id] = member
        if member.instance:
            self.static[member.instance] = member.id

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        self.pending.discard(member_id)
        self.pending_sync.discard(member_id)
        if member and member.instance and self.static.get(member.instance) == member_id:
            del self.static[member.instance]
        if self.leader == member_id:
            self.leader = next(iter(java_order(self.members)), None)

    @property
    def static_count(self) -> int:
        return sum(1 for m in self.members.values() if m.instance)


def java_order(ids) -> list[str]:
    """Member ids in the order the coordinator's members map iterates them: a HashMap (Java's in the 4.x
    GroupCoordinator, Scala 2.13's mutable.HashMap in the older one, which spreads and indexes hashes the same way),
    bucket by bucket, insertion order within one. A leader that leaves, or does not rejoin, hands its role to the
    first member in that order (members.keySet().iterator().next(), maybeElectNewJoinedLeader): whoever's member id
    hashes lowest, not the oldest member."""
    ids = list(ids)
    capacity = 16
    while len(ids) > capacity * 3 // 4:
        capacity *= 2

    def bucket(text: str) -> int:
        h = 0
        for ch in text:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF      # String.hashCode, as an unsigned 32-bit value
        return (h ^ (h >> 16)) & (capacity - 1)

    return [m for _, _, m in sorted((bucket(m), i, m) for i, m in enumerate(ids))]


class ClassicCoordinator:
    """The group coordinator of one broker for classic groups."""

    def __init__(self, broker, cluster, initial_delay_ms: int = 3000, pending_sync: bool | None = None):
        self.broker = broker
        self.cluster = cluster
        self.env = cluster.env
        self.initial_delay_ms = initial_delay_ms
        self.version = broker.log.version
        self.pending_sync_enabled = version_key(self.version) >= (3, 0, 0) if pending_sync is None else pending_sync
        self.initial_generation = 0             # a group first seen here starts from this generation (a long-lived group)
        self.known_hosts: dict[str, str] = {}   # member id -> client host ("/10.0.0.7"), kept after removal
        self.store_error: dict[str, str] = {}   # group -> error the log append fails with (assignment too large)
        self.observers: list[Callable[[str, ClassicGroup, Attempt | None], None]] = []

    # -- logging -------------------------------------------------------------------------------
    @property
    def impl(self) -> str:
        return self.broker.impl

    def say(self, key: str, group: ClassicGroup | None = None, **values) -> None:
        from .cluster import partition_for
        prefix = None
        if group is not None and self.impl == "java":
            prefix = f"[GroupCoordinator id={self.broker.id} topic=__consumer_offsets partition={partition_for(group.id)}] "
        if group is not None:
            values.setdefault("group", group.id)
            values.setdefault("topic", "__consumer_offsets")
            values.setdefault("partition", partition_for(group.id))
        self.broker.log.say(f"{self.impl}.{key}", prefix=prefix, thread=self.thread(key), **values)

    def thread(self, key: str) -> str:
        if "expired" in key or "member_failed" in key:
            return "executor-Heartbeat"
        if key.startswith(("stabilized", "removed_unjoined", "no_rejoin", "now_empty", "leader_failed")):
            return "executor-Rebalance"
        return f"data-plane-kafka-request-handler-{self.cluster.rng.randint(0, 7)}"

    def member_meta(self, member: Member):
        if self.impl == "java":
            return javafmt.ClassicGroupMember(member.id, member.instance, member.client_id, member.client_host,
                                              member.rebalance_ms, member.session_ms, member.protocol_type,
                                              member.protocols)
        return javafmt.MemberMetadata(member.id, member.instance, member.client_id, member.client_host,
                                      member.session_ms, member.rebalance_ms, member.protocols)

    def at(self, when: float, action: Callable[[], None]) -> None:
        self.cluster.timer(self.broker, when, action)

    def notify(self, what: str, group: ClassicGroup, attempt: Attempt | None = None) -> None:
        for observer in self.observers:
            observer(what, group, attempt)

    # -- group lookup --------------------------------------------------------------------------
    def group(self, group_id: str, create: bool = False) -> ClassicGroup | None:
        group = self.broker.groups.get(group_id)
        if group is None and create:
            group = ClassicGroup(self, group_id)
            group.generation = self.initial_generation
            self.broker.groups[group_id] = group
        return group

    def status(self, group_id: str) -> str | None:
        """NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / None (this broker serves the group)."""
        from .cluster import partition_for
        p = partition_for(group_id)
        if p in self.broker.loading:
            return "COORDINATOR_LOAD_IN_PROGRESS"
        if p not in self.broker.coordinators:
            return "NOT_COORDINATOR"
        return None

    # -- JoinGroup -----------------------------------------------------------------------------
    def join(self, req: JoinRequest, reply: Callable) -> None:
        error = self.status(self.group_key(req))
        if error:
            reply(JoinResponse(error, req.member_id))
            return
        group = self.group(self.group_key(req), create=True)
        if group.state == DEAD:
            reply(JoinResponse("COORDINATOR_NOT_AVAILABLE", req.member_id))
            return
        if not req.member_id:
            if not group.supports(req.protocol_type, req.protocols):
                reply(JoinResponse("INCONSISTENT_GROUP_PROTOCOL", req.member_id))
                return
            new_id = f"{req.client_id}-{self.uuid()}"
            if req.instance:
                self._static_new_member(group, req, new_id, reply)
            else:
                self.say("member_id_required", group, group_state=group.state, member=new_id)
                group.pending.add(new_id)
                self._schedule_pending_expiry(group, new_id, req.session_ms)
                reply(JoinResponse("MEMBER_ID_REQUIRED", new_id))
            return
        if not group.supports(req.protocol_type, req.protocols) and group.members:
            reply(JoinResponse("INCONSISTENT_GROUP_PROTOCOL", req.member_id))
            return
        if req.member_id in group.pending:
            self.say("pending_joins", group, member=req.member_id, group_state=group.state)
            self._add_member_and_rebalance(group, req, req.member_id, reply)
            return
        error = self._validate(group, req.member_id, req.instance, "join-group")
        if error:
            reply(JoinResponse(error, req.member_id))
            return
        member = group.members[req.member_id]
        said = self._said(req)
        if group.state == PREPARING:
            self._update_member(group, member, req, reply)
            self._maybe_prepare(group, "joining", member.id, req.reason, said=said, group_state=PREPARING)
        elif group.state == COMPLETING:
            if member.metadata == req.metadata and member.protocols == req.protocols:
                reply(self._join_response(group, member, leader_view=group.leader == member.id))
            else:
                self._update_member(group, member, req, reply)
                self._maybe_prepare(group, "metadata", member.id, req.reason, said=said, group_state=COMPLETING)
        elif group.state == STABLE:
            if group.leader == member.id:
                self._update_member(group, member, req, reply)
                self._maybe_prepare(group, "leader-rejoin", member.id, req.reason, said=said, group_state=STABLE)
            elif member.metadata != req.metadata or member.protocols != req.protocols:
                self._update_member(group, member, req, reply)
                self._maybe_prepare(group, "metadata", member.id, req.reason, said=said, group_state=STABLE)
            else:
                reply(self._join_response(group, member, leader_view=False))
        else:
            reply(JoinResponse("UNKNOWN_MEMBER_ID", req.member_id))
        self._try_complete_join(group)

    @staticmethod
    def _said(req: JoinRequest) -> str:
        """The client reason the broker's lines quote for this JoinGroup."""
        return quoted_reason(req.reason, req.reason_sent)

    def group_key(self, req) -> str:
        return req.group

    def uuid(self) -> str:
        rng = self.cluster.rng
        h = f"{rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[rng.randint(0, 3)]}{h[17:20]}-{h[20:32]}"

    def _validate(self, group: ClassicGroup, member_id: str, instance: str | None, operation: str) -> str | None:
        if instance:
            current = group.static.get(instance)
            if current is not None and current != member_id:
                self.say("static_fenced", group, member=member_id, instance=instance, current_member=current,
                         operation=operation)
                return "FENCED_INSTANCE_ID"
            if current is None:
                return "UNKNOWN_MEMBER_ID"
            return None
        return None if member_id in group.members else "UNKNOWN_MEMBER_ID"

    def _update_member(self, group: ClassicGroup, member: Member, req: JoinRequest, reply: Callable) -> None:
        member.protocols, member.metadata = req.protocols, req.metadata
        member.rebalance_ms, member.session_ms = req.rebalance_ms, req.session_ms
        member.join_reply = reply

    def _add_member_and_rebalance(self, group: ClassicGroup, req: JoinRequest, member_id: str, reply) -> None:
        member = Member(member_id, req.instance, req.client_id, req.client_host, req.session_ms, req.rebalance_ms,
                        req.protocol_type, req.protocols, req.metadata)
        group.pending.discard(member_id)
        if group.state == PREPARING and group.history and getattr(group.history[-1], "empty_start", False):
            group.new_member_added = True
        group.add(member, reply)
        self._schedule_expiry(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare(group, "new-member", member_id, req.reason, said=self._said(req), instance=req.instance)

    def _static_new_member(self, group: ClassicGroup, req: JoinRequest, new_id: str, reply) -> None:
        old_id = group.static.get(req.instance)
        if old_id is None:
            self.say("static_new", group, instance=req.instance, group_state=group.state, member=new_id)
            self._add_member_and_rebalance(group, req, new_id, reply)
            return
        self.say("static_replace", group, instance=req.instance, group_state=group.state, old_member=old_id,
                 member=new_id)
        current_leader = group.leader
        old = group.members.pop(old_id)
        member = Member(new_id, req.instance, req.client_id, req.client_host, req.session_ms, req.rebalance_ms,
                        req.protocol_type, req.protocols, req.metadata, is_new=False, assignment=old.assignment)
        group.members[new_id] = member
        self.known_hosts[new_id] = member.client_host
        group.static[req.instance] = new_id
        if group.leader == old_id:
            group.leader = new_id
        group.pending_sync.discard(old_id)
        self._refresh(group, member)
        if group.state == STABLE:
            if group.protocol == group.select_protocol() and old.protocols == req.protocols:
                self.say("static_no_rebalance", group, group_state=group.state)
                self.notify("static-rejoin", group)
                if req.skip_supported:
                    is_leader = group.leader == new_id
                    members = [(m.id, m.instance, m.metadata) for m in group.members.values()] if is_leader else []
                    reply(JoinResponse("NONE", new_id, group.generation, group.protocol, group.leader, members,
                                       skip_assignment=is_leader))
                else:   # the old leader id: a returning leader does not take itself for the leader
                    reply(JoinResponse("NONE", new_id, group.generation, group.protocol, current_leader or "", []))
            else:
                member.join_reply = reply
                self._maybe_prepare(group, "protocol-change", new_id, req.reason, said=self._said(req),
                                    instance=req.instance)
        elif group.state == COMPLETING:
            member.join_reply = reply
            self._prepare(group, "static-update", new_id, req.reason, said=self._said(req), instance=req.instance)
        else:   # PreparingRebalance: the replaced member simply takes part
            member.join_reply = reply
            self._try_complete_join(group)

    def _join_response(self, group: ClassicGroup, member: Member, leader_view: bool) -> JoinResponse:
        members = [(m.id, m.instance, m.metadata) for m in group.members.values()] if leader_view else []
        return JoinResponse("NONE", member.id, group.generation, group.protocol, group.leader or "", members)

    # -- rebalance -----------------------------------------------------------------------------
    def _maybe_prepare(self, group: ClassicGroup, trigger: str, member_id: str | None, reason: str, **extra) -> None:
        if group.state in (STABLE, COMPLETING, EMPTY):
            self._prepare(group, trigger, member_id, reason, **extra)

    def _prepare(self, group: ClassicGroup, trigger: str, member_id: str | None, reason: str, **extra) -> None:
        if group.state == COMPLETING:
            self._propagate_sync_error(group, "REBALANCE_IN_PROGRESS")
        group.sync_token += 1
        group.pending_sync.clear()
        was_empty = group.state == EMPTY
        group.state = PREPARING
        group.rebalance_timeout_ms = max((m.rebalance_ms for m in group.members.values()), default=0)
        if group.history and group.history[-1].completed is None and group.history[-1].failed is None:
            group.history[-1].failed = trigger
        attempt = Attempt(group.generation, self.env.now, trigger, member_id, reason)
        attempt.empty_start = was_empty
        group.history.append(attempt)
        key = {"new-member": "prepare.new_member", "leave": "prepare.leave", "expired": "prepare.expired",
               "joining": "prepare.joining", "metadata": "prepare.metadata", "leader-rejoin": "prepare.leader_rejoin",
               "static-update": "prepare.static_update", "protocol-change": "prepare.protocol_change",
               "sync-error": "prepare.sync_error", "pending-sync": "prepare.pending_sync"}[trigger]
        said = extra.pop("said", reason)
        self.say(key, group, state=PREPARING, old_generation=group.generation, member=member_id,
                 members=extra.pop("members", [member_id]), reason=said, **extra)
        self.notify("prepare", group, attempt)
        group.join_token += 1
        token = group.join_token
        if was_empty:
            delay = self.initial_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            self.at(self.env.now + delay, lambda: self._initial_join_expired(group, token, remaining))
        else:
            self.at(self.env.now + group.rebalance_timeout_ms, lambda: self._join_expired(group, token))
        self._try_complete_join(group)

    def _initial_join_expired(self, group: ClassicGroup, token: int, remaining: float) -> None:
        if token != group.join_token or group.state != PREPARING:
            return
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            delay = min(self.initial_delay_ms, remaining)
            left = max(remaining - delay, 0)
            self.at(self.env.now + delay, lambda: self._initial_join_expired(group, token, left))
            return
        self._complete_join(group)

    def _join_expired(self, group: ClassicGroup, token: int) -> None:
        if token == group.join_token and group.state == PREPARING:
            self._complete_join(group)

    def _try_complete_join(self, group: ClassicGroup) -> None:
        if group.state != PREPARING:
            return
        initial = group.history and group.history[-1].old_generation == group.generation \
            and group.history[-1].empty_start and self.initial_delay_ms > 0
        if initial:
            return          # InitialDelayedJoin completes only when its delay expires
        if group.all_joined():
            group.join_token += 1
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        attempt = group.history[-1] if group.history else None
        not_joined = [m for m in group.members.values() if m.join_reply is None and not m.instance]
        if not_joined:
            ids = [m.id for m in not_joined]
            self.say("removed_unjoined", group, members=ids)
            for member in not_joined:
                group.remove(member.id)
            if attempt:
                attempt.removed.extend(ids)
            self.notify("removed", group, attempt)
        # maybeElectNewJoinedLeader
        if group.leader and group.leader in group.members and group.members[group.leader].join_reply is None:
            joined = next((group.members[m] for m in java_order(group.members)
                           if group.members[m].join_reply is not None), None)
            if joined is None:
                if group.members:
                    self.say("no_rejoin", group)
                    group.join_token += 1
                    token = group.join_token
                    self.at(self.env.now + group.rebalance_timeout_ms, lambda: self._join_expired(group, token))
                    return
            else:
                old = group.members[group.leader]
                self.say("leader_failed_join", group, old_leader=old.id,
                         old_leader_instance=old.instance if self.impl == "scala" else (old.instance or "None"),
                         new_leader_meta=self.member_meta(joined))
                group.leader = joined.id
        group.generation += 1
        if not group.members:
            group.protocol = None
            group.state = EMPTY
            self.say("now_empty", group, generation=group.generation)
            if attempt:
                attempt.generation = group.generation
                attempt.completed = self.env.now
            self.notify("empty", group, attempt)
            return
        group.protocol = group.select_protocol()
        group.state = COMPLETING
        self.say("stabilized", group, generation=group.generation, members=len(group.members))
        if attempt:
            attempt.generation = group.generation
            attempt.stabilized = self.env.now
            attempt.members = list(group.members)
            attempt.leader = group.leader
        self.notify("stabilized", group, attempt)
        for member in list(group.members.values()):
            reply, member.join_reply = member.join_reply, None
            if reply is not None:
                reply(self._join_response(group, member, leader_view=member.id == group.leader))
            member.is_new = False
            self._schedule_expiry(group, member, member.session_ms)
            group.pending_sync.add(member.id)
        if self.pending_sync_enabled:
            group.sync_token += 1
            token, generation = group.sync_token, group.generation
            self.at(self.env.now + group.rebalance_timeout_ms, lambda: self._sync_expired(group, token, generation))

    def _sync_expired(self, group: ClassicGroup, token: int, generation: int) -> None:
        if token != group.sync_token or generation != group.generation or group.state not in (COMPLETING, STABLE):
            return
        if not group.pending_sync:
            return
        missing = sorted(group.pending_sync)
        for member_id in missing:
            group.remove(member_id)
        self._prepare(group, "pending-sync", None, "", members=missing)

    # -- SyncGroup -----------------------------------------------------------------------------
    def sync(self, req, reply: Callable) -> None:
        error = self.status(req.group)
        if error == "COORDINATOR_LOAD_IN_PROGRESS":
            reply(SyncResponse("REBALANCE_IN_PROGRESS"))
            return
        if error:
            reply(SyncResponse(error))
            return
        group = self.group(req.group)
        if group is None:
            reply(SyncResponse("UNKNOWN_MEMBER_ID"))
            return
        error = self._validate(group, req.member_id, req.instance, "sync-group")
        if error is None and req.generation != group.generation:
            error = "ILLEGAL_GENERATION"
        if error:
            reply(SyncResponse(error))
            return
        if group.state == EMPTY:
            reply(SyncResponse("UNKNOWN_MEMBER_ID"))
        elif group.state == PREPARING:
            reply(SyncResponse("REBALANCE_IN_PROGRESS"))
        elif group.state == COMPLETING:
            member = group.members[req.member_id]
            member.sync_reply = reply
            group.pending_sync.discard(member.id)
            if group.leader == member.id:
                self.say("assignment_received", group, leader=member.id, generation=group.generation,
                         members=len(group.members), static=group.static_count)
                assignment = dict(req.assignments or {})
                missing = [m for m in group.members if m not in assignment]
                if missing:
                    self.say("empty_assignments", group, missing=missing, generation=group.generation)
                    for m in missing:
                        assignment[m] = None
                generation = group.generation
                self.at(self.env.now + self.cluster.rng.uniform(2, 12),
                        lambda: self._stored(group, generation, assignment, member.id))
        elif group.state == STABLE:
            group.pending_sync.discard(req.member_id)
            member = group.members[req.member_id]
            reply(SyncResponse("NONE", member.assignment, group.protocol))
            self._refresh(group, member)

    def _stored(self, group: ClassicGroup, generation: int, assignment: dict, leader: str) -> None:
        if group.state != COMPLETING or group.generation != generation:
            return
        error = self.store_error.get(group.id)
        attempt = group.history[-1] if group.history else None
        if error:
            if self.impl == "scala":
                self.broker.log.say("scala.store_failed", thread="kafka-request-handler", group=group.id,
                                    generation=generation, exception=javafmt.error(error).exception_class,
                                    prefix=f"[GroupMetadataManager brokerId={self.broker.id}] ")
            self._propagate_sync_error(group, "UNKNOWN_SERVER_ERROR")
            self._maybe_prepare(group, "sync-error", leader, "", error="UNKNOWN_SERVER_ERROR")
            return
        for member_id, value in assignment.items():
            if member_id in group.members:
                group.members[member_id].assignment = value
        group.state = STABLE
        if attempt:
            attempt.completed = self.env.now
        self.notify("stable", group, attempt)
        for member in group.members.values():
            reply, member.sync_reply = member.sync_reply, None
            if reply is not None:
                reply(SyncResponse("NONE", member.assignment, group.protocol))

    def _propagate_sync_error(self, group: ClassicGroup, error: str) -> None:
        for member in group.members.values():
            member.assignment = None
            reply, member.sync_reply = member.sync_reply, None
            if reply is not None:
                reply(SyncResponse(error))

    # -- Heartbeat -----------------------------------------------------------------------------
    def heartbeat(self, req, reply: Callable) -> None:
        error = self.status(req.group)
        if error:
            reply(error)
            return
        group = self.group(req.group)
        if group is None:
            reply("UNKNOWN_MEMBER_ID")
            return
        error = self._validate(group, req.member_id, req.instance, "heartbeat")
        if error:
            reply(error)
            return
        if group.state == EMPTY:
            reply("UNKNOWN_MEMBER_ID")
        elif req.generation != group.generation:
            reply("ILLEGAL_GENERATION")
        elif group.state == PREPARING:
            self._refresh(group, group.members[req.member_id])
            reply("REBALANCE_IN_PROGRESS")
        else:
            self._refresh(group, group.members[req.member_id])
            reply("NONE")

    def _refresh(self, group: ClassicGroup, member: Member) -> None:
        self._schedule_expiry(group, member, member.session_ms)

    def _schedule_expiry(self, group: ClassicGroup, member: Member, timeout: float) -> None:
        member.deadline = self.env.now + timeout
        deadline = member.deadline
        self.at(deadline, lambda: self._expiry_check(group, member.id, deadline))

    def _expiry_check(self, group: ClassicGroup, member_id: str, deadline: float) -> None:
        member = group.members.get(member_id)
        if member is None or member.deadline != deadline or self.status(group.id):
            return
        if self.broker.groups.get(group.id) is not group:
            return          # unloaded since (the coordinator moved away): a reload scheduled fresh timers
        if not member.is_new and (member.join_reply is not None or member.sync_reply is not None):
            return          # awaiting join or sync: the heartbeat is satisfied
        self.say("member_failed", group, member=member.id)
        self._remove_and_update(group, member, "expired", "")

    def _schedule_pending_expiry(self, group: ClassicGroup, member_id: str, timeout: float) -> None:
        def expire():
            if member_id in group.pending and not self.status(group.id):
                self.say("pending_expired", group, member=member_id)
                group.pending.discard(member_id)
                self._try_complete_join(group)
        self.at(self.env.now + timeout, expire)

    def _remove_and_update(self, group: ClassicGroup, member: Member, trigger: str, reason: str,
                           said: str | None = None) -> None:
        reply, member.join_reply = member.join_reply, None
        if reply is not None:
            reply(JoinResponse("UNKNOWN_MEMBER_ID", ""))
        group.remove(member.id)
        self.notify("removed-" + trigger, group, None)
        if group.state in (STABLE, COMPLETING):
            self._maybe_prepare(group, trigger, member.id, reason, said=reason if said is None else said)
        elif group.state == PREPARING:
            self._try_complete_join(group)

    # -- coordinator moves: unloading and loading __consumer_offsets partitions --------------------------
    def service_say(self, key: str, **values) -> None:
        prefix = f"[GroupCoordinator id={self.broker.id}] " if self.impl == "java" else None
        self.broker.log.say(f"{self.impl}.{key}", prefix=prefix, thread="kafka-scheduler-1", **values)

    def gmm_say(self, key: str, **values) -> None:
        if self.impl == "java":
            self.broker.log.say(f"java.runtime.{key}", prefix=f"[GroupCoordinator id={self.broker.id}] ",
                                thread="group-coordinator-event-processor-0", **values)
        else:
            self.broker.log.say(f"scala.gmm.{key}", prefix=f"[GroupMetadataManager brokerId={self.broker.id}] ",
                                thread="group-metadata-manager-0", **values)

    def unload(self, partition: int, epoch: int) -> list:
        """This broker stops leading __consumer_offsets-<partition>: its groups are unloaded (snapshots returned)."""
        from .cluster import partition_for
        tp = f"__consumer_offsets-{partition}"
        self.broker.coordinators.pop(partition, None)
        self.broker.loading.discard(partition)
        if self.impl == "scala":
            self.broker.log.say("scala.resigned", prefix=f"[GroupCoordinator {self.broker.id}]: ",
                                thread="kafka-request-handler-1", partition=partition, epoch=epoch)
            self.gmm_say("schedule_unload", topic_partition=tp)
        else:
            self.gmm_say("schedule_unload", topic_partition=tp, epoch=epoch)
            self.gmm_say("started_unload", topic_partition=tp, epoch=epoch)
        snapshots = []
        for group_id, group in list(self.broker.groups.items()):
            if not isinstance(group, ClassicGroup) or partition_for(group_id) != partition:
                continue
            self.say("unloading", group, generation=group.generation)
            for member in group.members.values():
                for name in ("join_reply", "sync_reply"):
                    reply = getattr(member, name)
                    setattr(member, name, None)
                    if reply is not None:
                        reply(JoinResponse("NOT_COORDINATOR", member.id) if name == "join_reply"
                              else SyncResponse("NOT_COORDINATOR"))
            group.state = DEAD
            group.join_token += 1
            group.sync_token += 1
            snapshots.append(group)
            del self.broker.groups[group_id]
        if self.impl == "scala":
            self.gmm_say("finished_unload", topic_partition=tp, epoch=epoch, offsets=self.cluster.rng.randint(0, 400),
                         groups=len(snapshots))
        else:
            self.gmm_say("finished_unload", topic_partition=tp, epoch=epoch)
        return snapshots

    def load(self, partition: int, epoch: int, snapshots: list, load_ms: float) -> None:
        """This broker becomes the coordinator of __consumer_offsets-<partition>: it loads the groups' last
        stored state, and every member must heartbeat to it within its session timeout."""
        tp = f"__consumer_offsets-{partition}"
        self.broker.loading.add(partition)
        self.broker.coordinators[partition] = epoch
        if self.impl == "scala":
            self.broker.log.say("scala.elected", prefix=f"[GroupCoordinator {self.broker.id}]: ",
                                thread="kafka-request-handler-1", partition=partition, epoch=epoch)
        self.gmm_say("schedule_load", topic_partition=tp, epoch=epoch)

        def loaded() -> None:
            if self.broker.coordinators.get(partition) != epoch:
                return
            self.broker.loading.discard(partition)
            for old in snapshots:
                group = ClassicGroup(self, old.id)
                group.generation = old.generation
                group.protocol_type, group.protocol, group.leader = old.protocol_type, old.protocol, old.leader
                group.history = old.history
                for member in old.members.values():
                    fresh = Member(member.id, member.instance, member.client_id, member.client_host, member.session_ms,
                                   member.rebalance_ms, member.protocol_type, member.protocols, member.metadata,
                                   is_new=False, assignment=member.assignment)
                    group.members[member.id] = fresh
                    if member.instance:
                        group.static[member.instance] = member.id
                    if self.impl == "scala":
                        self.broker.log.say("scala.loaded_member", prefix="", thread="group-metadata-manager-0",
                                            member_meta=self.member_meta(fresh), group=group.id,
                                            generation=group.generation)
                group.state = STABLE if group.members and old.state != EMPTY else EMPTY
                self.broker.groups[group.id] = group
                if self.impl == "scala":
                    self.say("loading", group, generation=group.generation)
                else:
                    self.broker.log.say("java.loaded_group", thread="group-coordinator-event-processor-0",
                                        prefix=f"[GroupCoordinator id={self.broker.id} topic=__consumer_offsets "
                                               f"partition={partition}] ", group=group.id, members=len(group.members))
                for member in group.members.values():
                    self._schedule_expiry(group, member, member.session_ms)
                self.notify("loaded", group)
            millis = int(load_ms)
            if self.impl == "scala":
                self.gmm_say("finished_load", topic_partition=tp, millis=millis, epoch=epoch,
                             scheduler_millis=self.cluster.rng.randint(0, 5))
            else:
                self.gmm_say("finished_load", topic_partition=tp, epoch=epoch, millis=millis,
                             scheduler_millis=self.cluster.rng.randint(0, 5), records=self.cluster.rng.randint(10, 900),
                             bytes=self.cluster.rng.randint(2_000, 400_000))

        self.at(self.env.now + load_ms, loaded)

    # -- LeaveGroup ----------------------------------------------------------------------------
    def leave(self, req, reply: Callable) -> None:
        error = self.status(req.group)
        if error:
            reply(error)
            return
        group = self.group(req.group)
        if group is None:
            reply("UNKNOWN_MEMBER_ID")
            return
        reason = req.reason                 # the client's own, for the ground truth
        said = quoted_reason(req.reason, getattr(req, "reason_sent", True), empty_is_none=False)
        if req.member_id in group.pending:
            group.pending.discard(req.member_id)
            self.say("pending_left", group, member=req.member_id, reason=said)
            self._try_complete_join(group)
            reply("NONE")
            return
        error = self._validate(group, req.member_id, req.instance, "leave-group")
        if error:
            reply(error)
            return
        member = group.members[req.member_id]
        if self.impl == "scala":
            meta = self.member_meta(member)
            if version_key(self.version) < (3, 0, 0):
                self.say("left", group, member_meta=meta, member=member.id, instance=member.instance, reason=said)
                self._remove_and_update(group, member, "leave", reason, said)
            else:   # 3.0+: removeMemberAndUpdateGroup (which prepares the rebalance) runs before the "has left" line
                self._remove_and_update(group, member, "leave", reason, said)
                self.say("left", group, member_meta=meta, member=member.id, instance=member.instance, reason=said)
        else:
            self.say("left", group, member=member.id, reason=said)
            reply_join, member.join_reply = member.join_reply, None
            if reply_join is not None:
                reply_join(JoinResponse("UNKNOWN_MEMBER_ID", ""))
            group.remove(member.id)
            self.notify("removed-leave", group, None)
            if group.state in (STABLE, COMPLETING):
                self._maybe_prepare(group, "leave", member.id, reason, said=said, members=[member.id])
            elif group.state == PREPARING:
                self._try_complete_join(group)
        reply("NONE")
