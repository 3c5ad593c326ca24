"""The Java consumer's group membership (classic protocol): AbstractCoordinator + ConsumerCoordinator.

Transcribed from the 3.x clients (``joinGroupIfNeeded``, the JoinGroup/SyncGroup/Heartbeat
response handlers, the heartbeat thread, ``onJoinPrepare``/``onJoinComplete``,
``maybeLeaveGroup``), with the lines each path writes; older and newer releases write what the
catalogue gives them for the same path. The application's poll loop is a thread of the JVM that
calls ``poll`` and then processes records for as long as the scenario says; the heartbeat thread
runs beside it. Streams and Connect reuse this class through its hooks (metadata, the leader's
assignment, what the member does with its assignment).

A JoinGroup response is handled by the poll thread inside poll() only (the heartbeat thread is disabled
until it is): a member busy with a batch sends its SyncGroup after the batch. From 2.6 on, poll() does not
wait for the rebalance while the member still has partitions to fetch (cooperative): it keeps serving them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..packgen import javafmt
from ..packgen.inventory import version_key
from . import assignors
from .catalog import release, sends_reason
from .classic import HeartbeatRequest, JoinRequest, LeaveRequest, SyncRequest
from .clock import Event

UNJOINED, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE = \
    "UNJOINED", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE"
RETRIABLE_CONTINUE = {"UnknownMemberIdException", "IllegalGenerationException", "RebalanceInProgressException",
                      "MemberIdRequiredException"}
RETRIABLE = {"DisconnectException", "CoordinatorNotAvailableException", "NotCoordinatorException",
             "CoordinatorLoadInProgressException", "TimeoutException"} | RETRIABLE_CONTINUE


@dataclass
class Failure:
    """A failed join/sync as joinGroupIfNeeded sees it: the exception's simple name and message."""

    exception: str
    message: str | None

    @classmethod
    def of(cls, error: str) -> "Failure":
        e = javafmt.error(error)
        return cls(e.exception, e.message)

    @property
    def retriable(self) -> bool:
        return self.exception in RETRIABLE

    def throwable(self) -> str:
        """Throwable.toString() of an ApiException (Kafka's carry no stack frames)."""
        package = "org.apache.kafka.common" if self.exception == "KafkaException" else "org.apache.kafka.common.errors"
        name = f"{package}.{self.exception}"
        return f"{name}: {self.message}" if self.message else name


@dataclass
class ConsumerConfig:
    group: str
    client_id: str
    topics: tuple[str, ...]
    assignors: tuple[str, ...] = ("range",)
    instance: str | None = None
    session_ms: int = 45000
    heartbeat_ms: int = 3000
    max_poll_ms: int = 300000
    request_timeout_ms: int = 30000
    retry_backoff_ms: int = 100
    reconnect_backoff_ms: int = 50
    auto_commit: bool = True
    max_poll_records: int = 500
    protocol_type: str = "consumer"

    @property
    def rebalance_ms(self) -> int:
        return self.max_poll_ms


@dataclass
class Subscription:
    """What a member sends in its JoinGroup (compared by the coordinator to decide on a rebalance)."""

    topics: tuple[str, ...]
    owned: tuple[str, ...] = ()
    user_data: object = None


@dataclass
class Stalled:
    """The leader's assignor blocked (Kafka Streams preparing internal topics it cannot create in time, say): the
    poll thread stays inside poll() for ``ms`` and the heartbeat thread waits with it, then the assignor goes on and
    the SyncGroup is sent."""

    ms: float


@dataclass
class Outcome:
    ok: bool
    assignment: list | None = None
    failure: Failure | None = None
    extra: dict = field(default_factory=dict)


class Consumer:
    """One KafkaConsumer with group management in a JVM."""

    kind = "consumer"
    # AbstractCoordinator: the heartbeat thread does not poll the network while the member is UNJOINED or
    # PREPARING_REBALANCE (HeartbeatThread.run: state.hasNotJoinedGroup() -> disable()), so a JoinGroup response
    # is handled only when the poll thread is inside poll() (KAFKA-10134, 2.6: heartbeats resume in
    # COMPLETING_REBALANCE, after the JoinGroup response). False for a thread whose idle time is spent inside poll.
    join_in_poll_only = True

    def __init__(self, jvm, cfg: ConsumerConfig, topics: dict[str, int], label: str = "steady"):
        self.jvm = jvm
        self.world = jvm.world
        self.env = jvm.env
        self.rng = jvm.rng
        self.log = jvm.log
        self.cfg = cfg
        self.topics = topics
        self.label = label                  # the scenario's name for what this member is doing
        self.version = jvm.log.version
        self.generation = javafmt.NO_GENERATION
        self.state = UNJOINED
        self.rejoin_needed = True
        self.rejoin_reason = ""
        self.needs_join_prepare = True
        self.join_future: Event | None = None
        self.coordinator = None             # the Broker object, or None when unknown
        self.coordinator_node = None
        self.disconnect_requested_at: float | None = None   # when the client last asked to close the connection
        self.owned: list[str] = []
        self.is_leader = False
        self.last_poll = self.env.now
        self.hb_last_receive = self.env.now
        self.hb_in_flight = False
        self.hb_next = self.env.now
        self.hb_enabled = False
        self.failed: Failure | None = None  # a fatal error the next poll throws
        self.assigning_until = 0.0          # the leader's poll thread is inside a blocked assignor until then
        self.closed = False
        self.lost_since: float | None = None
        self.in_poll = False                # the poll thread is inside KafkaConsumer.poll()
        self.join_arrived: list = []        # JoinGroup outcomes received while it was not (handled at the next poll)
        self.prefix = (f"[Consumer instanceId={cfg.instance}, clientId={cfg.client_id}, groupId={cfg.group}] "
                       if cfg.instance else f"[Consumer clientId={cfg.client_id}, groupId={cfg.group}] ")
        self.hb_thread_name = f"kafka-coordinator-heartbeat-thread | {cfg.group}"
        self.thread_name = jvm.log.thread

    # -- hooks (Streams and Connect override) ------------------------------------------------------
    @property
    def protocol(self) -> str:
        return assignors.protocol_of(self.cfg.assignors)

    def metadata(self) -> Subscription:
        owned = tuple(self.owned) if self.protocol == "cooperative" else ()
        user = (self.generation.generation_id, tuple(self.owned)) if "sticky" in self.cfg.assignors else None
        return Subscription(tuple(self.cfg.topics), owned, user)

    def leader_assign(self, generation, protocol: str, members: list) -> dict:
        """The leader's assignment: member id -> partitions (logs what the assignor logs)."""
        subs = [(mid, set(meta.topics), list(meta.owned) if meta.owned else
                 list((meta.user_data or (0, ()))[1]) if protocol in ("sticky", "cooperative-sticky") else [])
                for mid, _, meta in members]
        result, _withheld = assignors.assign(protocol, self.topics, subs)
        shown = {mid: f"Assignment(partitions={javafmt.java_collection(parts)})" for mid, parts in result.items()}
        self.say("consumer.finished_assignment", generation=generation, assignments=shown)
        return result

    def on_partitions_assigned(self, added: list[str]) -> None:
        for tp in added:
            self.say("consumer.setting_offset", partition=tp, position=self.fetch_position(tp))

    def on_partitions_revoked(self, revoked: list[str]) -> None:
        pass

    def on_partitions_lost(self, lost: list[str]) -> None:
        pass

    def on_assignment(self, assignment: list[str]) -> None:
        pass

    # -- logging -----------------------------------------------------------------------------------
    def say(self, key: str, thread: str | None = None, **values):
        return self.log.say(key, thread=thread or self.thread_name, prefix=self.prefix,
                            tags=(f"member:{self.cfg.client_id}",), **values)

    def hb_say(self, key: str, **values):
        return self.say(key, thread=self.hb_thread_name, **values)

    def fetch_position(self, tp: str) -> str:
        leader = self.world.leader_node_for(tp)
        offset = self.world.committed(self.cfg.group, tp)
        return (f"FetchPosition{{offset={offset}, offsetEpoch=Optional[{self.world.leader_epoch}], "
                f"currentLeader=LeaderAndEpoch{{leader=Optional[{leader}], epoch={self.world.leader_epoch}}}}}")

    # -- requests ----------------------------------------------------------------------------------
    def _send(self, handler_name: str, request, timeout_ms: float, on_response, on_failure,
              in_poll: bool = False) -> None:
        """Send to the coordinator; the answer (or a disconnect after the request timeout) is handled
        on the client once its JVM runs (``in_poll``: once its poll thread is inside poll())."""
        broker = self.coordinator
        if broker is None:
            on_failure(Failure("CoordinatorNotAvailableException", javafmt.error("COORDINATOR_NOT_AVAILABLE").message))
            return
        if not broker.running:          # connection refused: the coordinator node is unavailable
            def refused():
                if self.coordinator is broker:
                    self.mark_coordinator_unknown(True, "coordinator unavailable")
                on_failure(Failure("DisconnectException", None))
            self.env.call_at(self.env.now + self.world.cluster.latency(), lambda: self._when_running(refused))
            return
        coordinator = self.world.coordinators[broker.id]
        response = self.world.cluster.request(self.jvm.host, broker, getattr(coordinator, handler_name), request)
        done = {"v": False}

        def answered(event):
            if done["v"] or not self.jvm.alive:
                return
            done["v"] = True
            handle = self._when_polling if in_poll else self._when_running
            handle(lambda: on_response(event.value))

        def timed_out():
            if done["v"] or not self.jvm.alive:
                return
            done["v"] = True
            handle = self._when_polling if in_poll else self._when_running
            handle(lambda: self._request_timed_out(broker, on_failure))

        response.callbacks.append(answered)
        self.env.call_at(self.env.now + timeout_ms, timed_out)

    def _when_polling(self, action) -> None:
        """What only the poll thread handles: now if it is inside poll(), else at its next poll()."""
        if self.in_poll or not self.join_in_poll_only:
            self._when_running(action)
        else:
            self.join_arrived.append(action)

    def _when_running(self, action) -> None:
        if self.jvm.paused:
            self.env.call_at(self.jvm.paused_until, lambda: self._when_running(action))
        elif self.jvm.alive:
            action()

    def _request_timed_out(self, broker, on_failure) -> None:
        self.log.other("INFO", "org.apache.kafka.clients.NetworkClient",
                       f"{self.prefix}Disconnecting from node {javafmt.INT_MAX - broker.id} due to request timeout.",
                       thread=self.thread_name)
        if self.coordinator is broker:
            self.mark_coordinator_unknown(True, "null")
        on_failure(Failure("DisconnectException", None))

    # -- coordinator -------------------------------------------------------------------------------
    def mark_coordinator_unknown(self, disconnected: bool, cause: str, thread: str | None = None) -> None:
        if self.coordinator is None:
            return
        node = self.coordinator_node
        self.say("coord.unavailable", thread=thread, coordinator=node, cause=cause,
                 disconnected="true" if disconnected else "false")
        if not disconnected:
            self.say("coord.disconnect", thread=thread, coordinator=node)
            self.disconnect_requested_at = self.env.now
        self.coordinator = None
        self.coordinator_node = None
        self.lost_since = self.env.now

    def _in_reconnect_backoff(self) -> bool:
        """NetworkClient.isUnavailable: a node whose disconnect was just requested is unavailable until
        reconnect.backoff.ms has passed (real clients log a second "coordinator unavailable" after a session
        timeout because of it)."""
        requested = self.disconnect_requested_at
        return requested is not None and self.env.now - requested < self.cfg.reconnect_backoff_ms

    def ensure_coordinator(self):
        """FindCoordinator until a coordinator is known (a generator run by a thread)."""
        while self.coordinator is None and not self.closed:
            yield self.jvm.gate()
            broker = self.world.find_coordinator(self.jvm.host, self.cfg.group)
            yield self.env.timeout(self.world.cluster.latency() * 2)
            if broker is not None and self.coordinator is None:
                self.coordinator = broker
                self.coordinator_node = broker.node
                self.say("coord.discovered", coordinator=broker.node)
                self.hb_last_receive = self.env.now      # a new connection: the session timer restarts
                if not self._in_reconnect_backoff():
                    return
                # ensureCoordinatorReady: the connection it asked to close is still backing off
                self.mark_coordinator_unknown(False, "coordinator unavailable")
                yield from self.jvm.sleep(self.cfg.retry_backoff_ms)
                continue
            if self.coordinator is None:
                yield from self.jvm.sleep(self.cfg.retry_backoff_ms * self.rng.uniform(1, 5))

    # -- the application's poll ---------------------------------------------------------------------
    def poll(self, timeout_ms: float = 100):
        """KafkaConsumer.poll: coordinator, rejoin if needed, then records (returns the batch size)."""
        yield self.jvm.gate()
        self.in_poll = True
        try:
            records = yield from self._poll(timeout_ms)
        finally:
            self.in_poll = False
        return records

    def _poll(self, timeout_ms: float):
        self.last_poll = self.env.now
        while self.join_arrived:            # responses that arrived while the application processed records
            self.join_arrived.pop(0)()
        if self.failed is not None:
            failure, self.failed = self.failed, None
            raise ConsumerError(failure)
        deadline = self.env.now + timeout_ms
        if self.coordinator is None:
            yield from self.ensure_coordinator()
        # AbstractCoordinator.rejoinNeededOrPending(): a JoinGroup/SyncGroup still in flight when poll()'s timeout
        # ran out must be completed by the next poll, even if the response has set the state STABLE meanwhile.
        if self.rejoin_needed or self.state != STABLE or self.join_future is not None:
            # 2.6+ (KAFKA-10134): poll() does not block on the rebalance (ensureActiveGroup with a zero timer) while
            # it still has partitions to fetch (a cooperative member keeps its own): it returns their records, and
            # the JoinGroup response waits for the next poll(). Without fetchable partitions it long-polls.
            serving = bool(self.owned) and version_key(self.version) >= (2, 6, 0)
            done = yield from self.join_group_if_needed(self.env.now if serving else deadline)
            if not done:
                return self.records() if serving and self.owned else 0
        return self.records()

    def records(self) -> int:
        return self.rng.randint(1, self.cfg.max_poll_records)

    def join_group_if_needed(self, deadline: float):
        while self.rejoin_needed or self.join_future is not None:
            if self.coordinator is None:
                yield from self.ensure_coordinator()
            if self.needs_join_prepare:
                self.needs_join_prepare = False
                self.on_join_prepare()
            if self.join_future is None:
                self.join_future = self.initiate_join()
            future = self.join_future
            if not future.processed:
                until = max(deadline, self.assigning_until)      # a blocked assignor holds poll() (and its timer)
                yield self.env.any_of([future, self.env.timeout(max(0.0, until - self.env.now))])
                yield self.jvm.gate()
            if not future.processed:
                return False
            outcome: Outcome = future.value
            self.join_future = None
            if outcome.ok:
                if self.generation.generation_id != -1 and self.state == STABLE:
                    self.on_join_complete(outcome.assignment, outcome.extra)
                    self.needs_join_prepare = True
                else:
                    self.reset_state_and_rejoin(
                        f"rebalance failed since the generation/state was modified by heartbeat thread to "
                        f"{self.generation}/{self.state} before the rebalance callback triggered", True)
                continue
            failure = outcome.failure
            if version_key(self.version) >= (3, 3, 0):       # KIP-800: the failure is the rejoin reason
                short = f"rebalance failed due to {failure.exception}"
                full = f"rebalance failed due to '{failure.message}' ({failure.exception})"
                # from 3.9 (3.6.0's source still asks) not for MemberIdRequired: the JoinGroup handler already
                # asked to rejoin "with the given member-id" (the lab's 3.9.2-4.4.0 clients write only that)
                if failure.exception != "MemberIdRequiredException" or version_key(release(self.version)) < (3, 9, 0):
                    self.request_rejoin(short, full)
            else:
                if version_key(self.version) < (3, 0, 0) and failure.exception != "MemberIdRequiredException":
                    self.log.say("coord.rebalance_failed_28", thread=self.thread_name, prefix=self.prefix,
                                 throwable=failure.throwable())
                self.rejoin_needed = True
            if failure.exception in RETRIABLE_CONTINUE:
                continue
            if not failure.retriable:
                raise ConsumerError(failure)
            if self.env.now >= deadline:
                return False
            yield from self.jvm.sleep(self.cfg.retry_backoff_ms)
        return True

    # -- JoinGroup + SyncGroup ----------------------------------------------------------------------
    def initiate_join(self) -> Event:
        self.state = PREPARING_REBALANCE
        self.hb_enabled = False
        result = self.env.event()
        self.say("coord.joining")
        sent = self.generation
        request = JoinRequest(self.cfg.group, self.generation.member_id, self.cfg.instance, self.cfg.client_id,
                              "/" + self.jvm.ip, self.cfg.session_ms, self.cfg.rebalance_ms, self.cfg.protocol_type,
                              self.protocols(), self.metadata(), self.rejoin_reason,
                              reason_sent=sends_reason(self.version),
                              skip_supported=version_key(self.version) >= (3, 3, 0))
        timeout = max(self.cfg.request_timeout_ms, self.cfg.rebalance_ms + 5000)

        def fail(failure: Failure) -> None:
            if not result.triggered:
                result.succeed(Outcome(False, failure=failure))

        self._send("join", request, timeout, lambda resp: self._on_join_response(resp, sent, result, fail), fail,
                   in_poll=True)
        return result

    def protocols(self) -> tuple[str, ...]:
        return tuple(self.cfg.assignors)

    def _on_join_response(self, resp, sent, result: Event, fail) -> None:
        error = resp.error
        if error == "NONE":
            if self.state != PREPARING_REBALANCE:
                fail(Failure("UnjoinedGroupException", None))
                return
            self.state = COMPLETING_REBALANCE
            self.hb_enabled = True
            self.hb_last_receive = self.env.now
            self.generation = javafmt.Generation(resp.generation, resp.member_id, resp.protocol)
            self.say("coord.joined", generation=self.generation)
            if resp.skip_assignment or resp.leader == resp.member_id:
                self.is_leader = True
                if resp.skip_assignment:
                    self.say("consumer.skipped_assignment", generation=self.generation)
                    assignments = {}
                else:
                    assignments = self.leader_assign(self.generation, resp.protocol, resp.members)
                    if isinstance(assignments, Stalled):
                        self._stalled_assignment(assignments.ms, resp, result, fail)
                        return
            else:
                self.is_leader = False
                assignments = None
            self._sync(assignments, result, fail)
        elif error == "COORDINATOR_LOAD_IN_PROGRESS":
            self.say("coord.join_loading", coordinator=self.coordinator_node)
            fail(Failure.of(error))
        elif error == "UNKNOWN_MEMBER_ID":
            self.say("coord.join_failed_rejoin", message=javafmt.error(error).message, sent=sent)
            self.say("coord.join_unknown_member_24")
            if self.generation == sent:
                self.reset_state_on_error("JOIN_GROUP", error, True)
            fail(Failure.of(error))
        elif error in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"):
            self.mark_coordinator_unknown(False, f"error response {error}")
            self.say("coord.join_failed_coordinator", message=javafmt.error(error).message, sent=sent)
            fail(Failure.of(error))
        elif error == "FENCED_INSTANCE_ID":
            self.say("coord.join_fenced", instance=self.cfg.instance, sent=sent)
            fail(Failure.of(error))
        elif error in ("INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT", "GROUP_MAX_SIZE_REACHED"):
            self.say("coord.join_fatal", message=javafmt.error(error).message)
            fail(Failure.of(error))
        elif error == "MEMBER_ID_REQUIRED":
            self.say("coord.member_id_required", error=error, member=resp.member_id, sent=sent)
            self.generation = javafmt.Generation(-1, resp.member_id, None)
            self.request_rejoin(f"need to re-join with the given member-id: {resp.member_id}")
            fail(Failure.of(error))
        else:
            fail(Failure("KafkaException", f"Unexpected error in join group response: {javafmt.error(error).message}"))

    def _stalled_assignment(self, ms: float, resp, result: Event, fail) -> None:
        """The assignor blocked in the poll thread, holding the coordinator's lock: the heartbeat thread waits for it
        (heartbeat_loop), so the coordinator expires the session after session.timeout.ms; the assignment and its
        SyncGroup come when the assignor returns, and then the heartbeat thread finds the session timed out."""
        self.assigning_until = self.env.now + ms
        generation = self.generation

        def resume() -> None:
            self.assigning_until = 0.0
            self._sync(self.leader_assign(generation, resp.protocol, resp.members), result, fail)
        self.env.call_at(self.assigning_until, lambda: self._when_running(resume))

    def _sync(self, assignments: dict | None, result: Event, fail) -> None:
        sent = self.generation
        request = SyncRequest(self.cfg.group, self.generation.member_id, self.cfg.instance,
                              self.generation.generation_id, assignments)
        self._send("sync", request, self.cfg.request_timeout_ms,
                   lambda resp: self._on_sync_response(resp, sent, result, fail), fail)

    def _on_sync_response(self, resp, sent, result: Event, fail) -> None:
        error = resp.error
        if error == "NONE":
            if self.generation.generation_id != -1 and self.state == COMPLETING_REBALANCE:
                self.say("coord.synced", generation=self.generation)
                self.state = STABLE
                self.rejoin_reason = ""
                self.rejoin_needed = False
                result.succeed(Outcome(True, assignment=resp.assignment))
            else:
                fail(Failure.of("ILLEGAL_GENERATION"))
        elif error == "REBALANCE_IN_PROGRESS":
            self.say("coord.sync_rebalancing", sent=sent)
            fail(Failure.of(error))
        elif error == "FENCED_INSTANCE_ID":
            self.say("coord.sync_fenced", instance=self.cfg.instance, sent=sent)
            fail(Failure.of(error))
        elif error in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
            self.say("coord.sync_failed_rejoin", message=javafmt.error(error).message, sent=sent)
            if self.generation == sent:
                self.reset_state_on_error("SYNC_GROUP", error, error != "ILLEGAL_GENERATION")
            fail(Failure.of(error))
        elif error in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"):
            self.say("coord.sync_failed_coordinator", message=javafmt.error(error).message, sent=sent)
            self.mark_coordinator_unknown(False, f"error response {error}")
            fail(Failure.of(error))
        else:
            fail(Failure("KafkaException", f"Unexpected error from SyncGroup: {javafmt.error(error).message}"))

    # -- rejoin bookkeeping --------------------------------------------------------------------------
    def request_rejoin(self, short: str, full: str | None = None, thread: str | None = None) -> None:
        self.say("coord.request_rejoin", thread=thread, reason=full or short)
        self.rejoin_reason = short
        self.rejoin_needed = True

    def reset_state_and_generation(self, reason: str, reset_member_id: bool, thread: str | None = None) -> None:
        self.say("coord.resetting", thread=thread, and_member_id="and member id " if reset_member_id else "",
                 reason=reason)
        self.state = UNJOINED
        self.hb_enabled = False
        if reset_member_id:
            self.generation = javafmt.NO_GENERATION
        else:
            self.generation = javafmt.Generation(-1, self.generation.member_id, None)

    def reset_state_and_rejoin(self, reason: str, reset_member_id: bool, thread: str | None = None) -> None:
        self.reset_state_and_generation(reason, reset_member_id, thread)
        self.request_rejoin(reason, thread=thread)
        self.needs_join_prepare = True

    def reset_state_on_error(self, api: str, error: str, reset_member_id: bool, thread: str | None = None) -> None:
        self.say("coord.resetting_error_2x", thread=thread, error=error, api=api)
        self.reset_state_and_rejoin(f"encountered {error} from {api} response", reset_member_id, thread)

    # -- ConsumerCoordinator callbacks --------------------------------------------------------------
    def on_join_prepare(self) -> None:
        if self.cfg.auto_commit and self.owned and self.generation.member_id == "" and self.state == UNJOINED:
            self._auto_commit_failed_on_rejoin()
        if self.generation.generation_id == -1 or self.generation.member_id == "":
            if self.owned:
                lost = sorted(self.owned, key=assignors.partition_key)
                self.say("consumer.giving_away")
                self.say("consumer.lost", partitions=lost)
                self.on_partitions_lost(lost)
                self.owned = []
        elif self.protocol == "eager":
            revoked = sorted(self.owned, key=assignors.partition_key)
            self.say("consumer.revoke", partitions=revoked)
            self.on_partitions_revoked(revoked)
            self.owned = []
        self.is_leader = False

    def _auto_commit_failed_on_rejoin(self) -> None:
        offsets = {tp: f"OffsetAndMetadata{{offset={self.world.committed(self.cfg.group, tp) + self.rng.randint(1, 400)}, "
                       f"leaderEpoch={self.world.leader_epoch}, metadata=''}}" for tp in sorted(self.owned, key=assignors.partition_key)}
        self.say("consumer.failing_commit")
        if version_key(self.version) >= (3, 3, 0):
            self.say("consumer.join_prepare_commit_failed", message=COMMIT_NOT_MEMBER)
        else:
            message = COMMIT_NOT_MEMBER if version_key(self.version) >= (2, 8, 0) else COMMIT_REBALANCED
            self.say("consumer.sync_autocommit_failed", offsets=offsets, message=message)

    def on_join_complete(self, assignment, extra: dict) -> None:
        assigned = sorted(assignment or [], key=assignors.partition_key)
        owned = sorted(self.owned, key=assignors.partition_key)
        added = [tp for tp in assigned if tp not in owned]
        if self.protocol == "cooperative":
            revoked = [tp for tp in owned if tp not in assigned]
            self.say("consumer.updating", assigned=assigned, owned=owned, added=added, revoked=revoked)
            if revoked:
                self.say("consumer.revoke", partitions=revoked)
                self.on_partitions_revoked(revoked)
                self.say("consumer.need_revoke_2x", revoked=revoked)
                self.request_rejoin("need to revoke partitions and re-join",
                                    f"need to revoke partitions {javafmt.java_collection(revoked)} as indicated by "
                                    "the current assignment and re-join")
        self.say("consumer.notifying", assignment=f"Assignment(partitions={javafmt.java_collection(assigned)})")
        self.on_assignment(assigned)
        self.owned = assigned
        self.say("consumer.added", partitions=added)
        self.on_partitions_assigned(added)

    # -- the heartbeat thread ------------------------------------------------------------------------
    def heartbeat_loop(self):
        thread = self.hb_thread_name
        while not self.closed:
            yield self.jvm.gate()
            if self.env.now < self.assigning_until:
                # The leader's assignor runs inside the JoinGroup response's handling, under the coordinator's lock
                # this thread takes too: no heartbeat and no check until it returns (the lab's recordings: the
                # "session timed out" line follows "Finished assignment" by a millisecond, never a poll timeout).
                yield self.env.timeout(self.assigning_until - self.env.now + 1)
                continue
            if self.failed is not None or not self.hb_enabled or self.state in (UNJOINED, PREPARING_REBALANCE):
                yield from self.jvm.sleep(self.cfg.retry_backoff_ms * 10)
                continue
            now = self.env.now
            if self.coordinator is None:
                broker = self.world.find_coordinator(self.jvm.host, self.cfg.group)
                yield self.env.timeout(self.world.cluster.latency() * 2)
                if broker is not None and self.coordinator is None and not self.closed:
                    self.coordinator, self.coordinator_node = broker, broker.node
                    self.say("coord.discovered", thread=thread, coordinator=broker.node)
                    self.hb_last_receive = self.env.now
                    if self._in_reconnect_backoff():
                        self.mark_coordinator_unknown(False, "coordinator unavailable", thread=thread)
                yield from self.jvm.sleep(self.cfg.retry_backoff_ms)
            elif now - self.hb_last_receive > self.cfg.session_ms:
                self.mark_coordinator_unknown(False, "session timed out without receiving a heartbeat response",
                                              thread=thread)
            elif now - self.last_poll > self.cfg.max_poll_ms:
                self.on_poll_timeout(thread)
            elif self.hb_in_flight or now < self.hb_next:
                wait = self.cfg.retry_backoff_ms if self.hb_in_flight else max(1.0, self.hb_next - now)
                yield from self.jvm.sleep(min(wait, self.cfg.heartbeat_ms))
            else:
                self.hb_in_flight = True
                self.hb_next = now + self.cfg.heartbeat_ms
                sent = self.generation
                request = HeartbeatRequest(self.cfg.group, sent.member_id, self.cfg.instance, sent.generation_id)
                self._send("heartbeat", request, self.cfg.request_timeout_ms,
                           lambda error, sent=sent: self._on_heartbeat(error, sent),
                           lambda failure: self._on_heartbeat_failure(failure))
                yield from self.jvm.sleep(1)

    def on_poll_timeout(self, thread: str) -> None:
        self.say("coord.poll_timeout", thread=thread)
        self.maybe_leave_group("consumer poll timeout has expired.", key="coord.leave.poll_timeout", thread=thread)

    def _on_heartbeat(self, error: str, sent) -> None:
        thread = self.hb_thread_name
        self.hb_in_flight = False
        if error == "NONE":
            self.hb_last_receive = self.env.now
        elif error in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"):
            self.say("coord.hb_coordinator", thread=thread, coordinator=self.coordinator_node)
            self.mark_coordinator_unknown(False, f"error response {error}", thread=thread)
            self.hb_next = self.env.now + self.cfg.retry_backoff_ms
        elif error == "REBALANCE_IN_PROGRESS":
            self.hb_last_receive = self.env.now
            if self.state == STABLE:
                self.say("coord.hb_rebalancing", thread=thread)
                self.request_rejoin("group is already rebalancing", thread=thread)
        elif error in ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"):
            if self.generation == sent:
                if error == "ILLEGAL_GENERATION":
                    self.say("coord.hb_failed_generation_24", thread=thread, generation=sent)
                if error == "UNKNOWN_MEMBER_ID":
                    self.say("coord.hb_unknown_member_24", thread=thread, member=sent.member_id)
                self.say("coord.hb_failed_reset", thread=thread, sent=sent, instance=self.cfg.instance, error=error)
                self.reset_state_on_error("HEARTBEAT", error, error != "ILLEGAL_GENERATION", thread=thread)
                if error == "FENCED_INSTANCE_ID":
                    self.say("coord.hb_fenced", thread=thread, instance=self.cfg.instance)
                    self.failed = Failure.of(error)
                else:
                    self.hb_next = self.env.now + self.cfg.retry_backoff_ms
            else:
                self.say("coord.hb_stale", thread=thread, sent=sent, instance=self.cfg.instance, error=error)
        else:
            self.hb_next = self.env.now + self.cfg.retry_backoff_ms

    def _on_heartbeat_failure(self, failure: Failure) -> None:
        self.hb_in_flight = False
        self.hb_next = self.env.now + self.cfg.retry_backoff_ms

    # -- leaving --------------------------------------------------------------------------------------
    def maybe_leave_group(self, reason: str, key: str = "coord.leave", thread: str | None = None) -> None:
        if (self.cfg.instance is None and self.coordinator is not None and self.state != UNJOINED
                and self.generation.member_id):
            self.say(key, thread=thread, member=self.generation.member_id, coordinator=self.coordinator_node,
                     reason=reason)
            request = LeaveRequest(self.cfg.group, self.generation.member_id, None, reason,
                                   reason_sent=sends_reason(self.version))
            self._send("leave", request, self.cfg.request_timeout_ms, lambda _r: None, lambda _f: None)
        self.say("coord.resetting_leave_2x", thread=thread)
        self.reset_state_and_rejoin("consumer pro-actively leaving the group", True, thread=thread)

    def close(self):
        """KafkaConsumer.close(): revoke (onLeavePrepare), then LeaveGroup (dynamic members only)."""
        yield self.jvm.gate()
        if self.owned and self.generation.generation_id != -1:
            revoked = sorted(self.owned, key=assignors.partition_key)
            self.say("consumer.revoke", partitions=revoked)
            self.on_partitions_revoked(revoked)
        elif self.owned:
            lost = sorted(self.owned, key=assignors.partition_key)
            self.say("consumer.lost", partitions=lost)
        self.owned = []
        self.maybe_leave_group("the consumer is being closed", key="coord.leave.closing")
        self.closed = True
        yield self.env.timeout(self.world.cluster.latency() * 3)


class ConsumerError(Exception):
    """An exception KafkaConsumer.poll throws to the application."""

    def __init__(self, failure: Failure):
        super().__init__(failure.message)
        self.failure = failure


COMMIT_NOT_MEMBER = ("Offset commit cannot be completed since the consumer is not part of an active group for auto "
                     "partition assignment; it is likely that the consumer was kicked out of the group.")
COMMIT_REBALANCED = ("Commit cannot be completed since the group has already rebalanced and assigned the partitions "
                     "to another member. This means that the time between subsequent calls to poll() was longer than "
                     "the configured max.poll.interval.ms, which typically implies that the poll loop is spending too "
                     "much time message processing. You can address this either by increasing max.poll.interval.ms "
                     "or by reducing the maximum size of batches returned in poll() with max.poll.records.")
