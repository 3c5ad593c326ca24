"""Rebuild each group's rebalances from its events, merged across hosts and both sides.

One pass over the group's events in (skew-corrected) time order. A rebalance opens on the first
sign of one (the broker preparing, a member asking to join, leaving, timing out, being removed),
takes the generation the coordinator stabilizes or the members join, and closes when the leader's
assignment is received or a member syncs; the coordinator's own lines before it stabilizes that
generation are still its rebalance's (its join phase: the coordinator's lines share one clock, the
members' are corrected to within a few ms). Events that state a generation go to the rebalance of
that generation whenever it is known; the others go to the open rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from operator import itemgetter

import regex as re

from . import identity, skew
from .clusters import keyed_by
from .model import FAILED, INCOMPLETE, STABLE, STORE_FAILED, SUPERSEDED, UNSTABLE, Evidence, GroupTimeline, Rebalance
from .triggers import classify
from ..core import eventnames as EV


@dataclass
class BuildOptions:
    skew_min_ms: int = 20        # correct a host's clock only when it is off by at least this
    attach_ms: int = 10_000      # late lines (other members syncing) still belong to a finished rebalance
    growing: bool = False        # the logs are still being written (analyze --follow): a log's end is not its stop


# Lines that open a rebalance when none is in progress.
_OPENERS = {EV.REBALANCE_PREPARE, EV.GROUP_EPOCH_BUMPED, EV.JOIN_REQUESTED, EV.JOIN_START, EV.POLL_TIMEOUT,
            EV.LEAVE_REQUEST, EV.MEMBER_EXPIRED, EV.MEMBER_LEAVE, EV.MEMBER_FENCED, EV.CONNECT_REBALANCE_STARTED,
            EV.CONNECT_CONFIG_MISMATCH, EV.STREAMS_FOLLOWUP_TRIGGERED, EV.STREAMS_SHUTDOWN_REQUESTED,
            EV.STREAMS_THREAD_REPLACED, EV.JOIN_FAILED}
# Lines that say who or what started it (the trigger candidates), with the field holding the reason.
_CAUSES = {EV.REBALANCE_PREPARE, EV.JOIN_REQUESTED, EV.LEAVE_REQUEST, EV.POLL_TIMEOUT, EV.MEMBER_EXPIRED,
           EV.MEMBER_LEAVE, EV.MEMBER_FENCED, EV.MEMBER_JOIN, EV.STREAMS_FOLLOWUP_TRIGGERED,
           EV.STREAMS_SHUTDOWN_REQUESTED, EV.CONNECT_CONFIG_MISMATCH, EV.SESSION_TIMEOUT, EV.STREAMS_THREAD_REPLACED}
_FOLLOWUPS = {EV.STREAMS_FOLLOWUP_COOPERATIVE: "cooperative", EV.STREAMS_FOLLOWUP_PROBING: "probing",
              EV.STREAMS_FOLLOWUP_VERSION_PROBING: "version_probing", EV.STREAMS_FOLLOWUP_ENDPOINT: "endpoint"}
_KIND_OF_EVENT = {EV.POLL_TIMEOUT: "poll-timeout", EV.MEMBER_EXPIRED: "heartbeat-expiration",
                  EV.SESSION_TIMEOUT: "heartbeat-expiration", EV.STREAMS_FOLLOWUP_TRIGGERED: "followup",
                  EV.STREAMS_SHUTDOWN_REQUESTED: "application-shutdown", EV.MEMBER_FENCED: "missed-rebalance",
                  EV.CONNECT_CONFIG_MISMATCH: "enforced", EV.STREAMS_THREAD_REPLACED: "thread-replacement"}
# What a cause line means when its pattern captured no reason (the raw line is the evidence).
_DESCRIPTION = {EV.POLL_TIMEOUT: "consumer poll timeout has expired (max.poll.interval.ms exceeded)",
                EV.MEMBER_EXPIRED: "member removed on session timeout (no heartbeat within session.timeout.ms)",
                EV.SESSION_TIMEOUT: "session timed out without receiving a heartbeat response",
                EV.STREAMS_FOLLOWUP_TRIGGERED: "followup rebalance scheduled by the Streams assignor",
                EV.STREAMS_SHUTDOWN_REQUESTED: "application shutdown requested",
                EV.MEMBER_JOIN: "a new member joined", EV.MEMBER_LEAVE: "a member left (LeaveGroup)",
                EV.LEAVE_REQUEST: "a member left (LeaveGroup)",
                EV.CONNECT_CONFIG_MISMATCH: "config offset does not match the group assignment: forcing rebalance",
                EV.STREAMS_THREAD_REPLACED: "a StreamThread died and was replaced (REPLACE_THREAD)"}
# A member's rebalance callbacks: a rebalance of a group whose members' lines state no generation (callbacks_only).
# KafkaJS and franz-go at their default levels state no generation either: a member told the group is rebalancing
# and its join (with its assignment) are the same story.
_CALLBACKS = (EV.PARTITIONS_REVOKED, EV.PARTITIONS_LOST, EV.PARTITIONS_ASSIGNED, EV.SESSION_TIMEOUT, EV.REBALANCE_NOTICED,
              EV.JOIN_SUCCESS)
_CALLBACK_ENDS = (EV.PARTITIONS_ASSIGNED, EV.JOIN_SUCCESS)
_NEW_MEMBER_ERRORS = ("MemberIdRequired", "valid member id", "MEMBER_ID_REQUIRED")
# A member's own lines asking to (re)join: after one, its lines belong to the rebalance it asked for.
_ASKS = (EV.JOIN_REQUESTED, EV.JOIN_START, EV.JOIN_SUCCESS, EV.STREAMS_FOLLOWUP_TRIGGERED)


# The lines a generation they state places in a rebalance (``place``).
_PLACED = frozenset({EV.JOIN_SUCCESS, EV.SYNC_SUCCESS, EV.SYNC_FAILED, EV.REBALANCE_ASSIGNMENT_RECEIVED,
                     EV.ASSIGNMENT_COMPUTED, EV.GROUP_TARGET_ASSIGNMENT, EV.MEMBER_EPOCH_TRANSITION,
                     EV.ASSIGNMENT_RECEIVED, EV.MEMBER_ASSIGNMENT, EV.REBALANCE_PREPARE, EV.GROUP_EPOCH_BUMPED,
                     EV.REBALANCE_STABILIZED, EV.GROUP_EMPTY})


JOIN_REQUEST_TIMED_OUT = "JoinGroup request timed out on the client"
# The coordinator could not write the leader's assignment to __consumer_offsets: 2.4-3.x "error when storing group
# assignment during SyncGroup (member: m)"; 3.x+ "Error CODE when storing group assignmentduring SyncGroup (member:
# m)" (sic: no space), the reason of its next "Preparing to rebalance" (classify/sync_errors.py reads it too).
STORE_ERROR = re.compile(r"(?i)error (?:(?P<code>[A-Z_]{4,}) )?when storing group assignment ?during SyncGroup"
                         r"(?: \(member: (?P<member>[^)\s]+)\))?")
# A member's SyncGroup answered REBALANCE_IN_PROGRESS: the same cause as a rebalance superseded by the next.
_BEGAN_ANOTHER = ("began another rebalance", "REBALANCE_IN_PROGRESS", "is rebalancing")


def _new_member_handshake(event: dict) -> bool:
    """A JoinGroup answered MEMBER_ID_REQUIRED (KIP-394): the first step of a join, not a failure."""
    reason = event.get("reason") or event.get("error") or ""
    return any(marker in reason for marker in _NEW_MEMBER_ERRORS)


def _assignment_report(event: dict) -> bool:
    """A Connect herder's "Joined group at generation N ... and got assignment: {leader, ...}" (DistributedHerder's
    onAssigned, called once the SyncGroup has answered): the assignment of a generation the worker had already
    joined, logged when the herder gets to it, possibly after the worker was asked to rejoin for the next one. It
    reports a join, it is never the answer to a JoinGroup: it cannot show a worker coming back into a generation."""
    return event["event"] == EV.JOIN_SUCCESS and event.get("component") == "connect" and bool(event.get("leader"))


# Group-less lines that still tell about a group's members: a process (re)starting its consumer.
_CONTEXT = (EV.CLIENT_VERSION, EV.CLIENT_CONFIG, EV.CLIENT_SUBSCRIBED)


def build_timelines(events: list[dict], options: BuildOptions | None = None) -> list[GroupTimeline]:
    """One timeline per group named by the events (events without a group are not a group's; those
    that tell a process started, `_CONTEXT`, go with every group whose members write that file, and the coordinator's
    failures to write to a group's __consumer_offsets partition with that group; a
    Streams task assignor's decision, `_BY_PROCESS`, goes with the group whose instances it names)."""
    by_group: dict[str, list[dict]] = {}
    groupless: dict[str, list[dict]] = {}
    by_process: list[dict] = []
    writes: dict[tuple[str, str], list[dict]] = {}     # (broker host, __consumer_offsets-N) -> its write failures
    for event in events:
        if event.get("group"):
            by_group.setdefault(event["group"], []).append(event)
        elif event["event"] in _CONTEXT and event.get("ts") is not None:
            groupless.setdefault(event.get("source") or "", []).append(event)
        elif event["event"] in _BY_PROCESS:
            by_process.append(event)
        elif event["event"] == EV.COORDINATOR_WRITE_FAILED and event.get("ts") is not None:
            for partition in event.get("partitions") or ():
                writes.setdefault((event.get("host") or "", partition), []).append(event)
    if by_process:
        _place_by_process(by_process, by_group)
    timelines = []
    for name, rows in sorted(by_group.items()):
        rows = _members_only(rows)
        sources = {e.get("source") or "" for e in rows if e.get("component") != "broker"} if groupless else ()
        context = [e for source in sorted(sources) for e in groupless.get(source, ())]
        if writes:
            context += _writes_of(rows, writes)
        timelines.append(build_group(name, rows, options, context))
    # Each group's neighbours: the other groups' session losses on its coordinators, as their timelines read them
    # (a member's host clock corrected: its lines are compared across groups and hosts).
    expiries: dict[str, list[tuple[int, dict]]] = {}   # broker host -> (timeline, removal on session timeout)
    losses: list[dict] = []                            # members' own lines losing their session with a named coordinator
    losing: list[GroupTimeline] = []
    for i, timeline in enumerate(timelines):
        lost = False
        for e in timeline.events:
            if e["event"] == EV.MEMBER_EXPIRED and e.get("component") == "broker" and e.get("ts") is not None:
                expiries.setdefault(e.get("host") or "", []).append((i, e))
            elif session_lost(e):
                losses.append(e)
                lost = True
        if lost:
            losing.append(timeline)
    losses.sort(key=itemgetter("ts"))
    for timeline in losing:      # one list for all: a group's rule reads the stretch of time around its own losses
        timeline.session_losses = losses
    for i, timeline in enumerate(timelines):
        hosts = {e.get("host") or "" for e in timeline.events
                 if e["event"] == EV.MEMBER_EXPIRED and e.get("component") == "broker"}
        timeline.neighbours = [e for host in sorted(hosts) for j, e in expiries.get(host, ()) if j != i]
    return timelines


def _writes_of(rows: list[dict], writes: dict[tuple[str, str], list[dict]]) -> list[dict]:
    """The coordinator's failures to write to the group's own __consumer_offsets partition (CoordinatorRuntime names
    the partition, not the group; the group's coordinator lines name it in their log context, 3.9+), on the broker
    that logged them."""
    coordinators = {(e.get("host") or "", f"__consumer_offsets-{partition}") for e in rows
                    if e.get("component") == "broker" and (partition := (e.get("attrs") or {}).get("offsets_partition"))}
    return sorted((e for key in coordinators for e in writes.get(key, ())), key=itemgetter("ts"))


def session_lost(e: dict) -> bool:
    """A member's own line saying it lost its session with the coordinator it names (the Java client's "Group
    coordinator ... is unavailable or invalid due to cause: session timed out without receiving a heartbeat
    response"): what members of several groups log together when that coordinator stops answering."""
    return (e["event"] == EV.SESSION_TIMEOUT and e.get("component") != "broker" and e.get("ts") is not None
            and bool((e.get("attrs") or {}).get("coordinator")))


def _members_only(rows: list[dict]) -> list[dict]:
    """The group's lines without those of consumers given their partitions by hand (KafkaConsumer.assign: a
    Connect worker's config, offset and status store consumers log the worker's groupId, yet never join): such a
    consumer is no member, and its lines stay in the events table only."""
    manual = {(e.get("client"), e.get("host")) for e in rows
              if e["event"] == EV.CONSUMER_ASSIGNED_MANUALLY and e.get("client")}
    if not manual:
        return rows
    # a client.id that also joined (another consumer of the process reusing it) stays a member
    manual -= {(e.get("client"), e.get("host")) for e in rows
               if e.get("member") or e.get("generation") is not None}
    return [e for e in rows if (e.get("client"), e.get("host")) not in manual] if manual else rows


# Group-less Streams lines that name the instances (process ids) of one application: HighAvailabilityTaskAssignor's
# "Decided on assignment: {<processId>=[activeTasks: ...], ...}" has no log prefix, only its client states.
_BY_PROCESS = (EV.STREAMS_ASSIGNMENT_DECIDED,)
_STREAMS_CLIENT = re.compile(r"^(?P<app>.+)-(?P<process>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
                             r"-StreamThread-\d+")
_PROCESS_KEY = re.compile(r"(?:^\{|, )([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})=\[")


def _place_by_process(rows: list[dict], by_group: dict[str, list[dict]]) -> None:
    """Give each row the group (application.id) whose StreamThreads carry the process ids it names (its thread's
    name first, when the layout printed it)."""
    names: dict[str, str] = {}
    for group, events in by_group.items():
        for name in {e.get("client") or e.get("thread") or "" for e in events}:
            m = _STREAMS_CLIENT.match(name)
            if m and m["app"] == group:
                names[m["process"]] = group
    for event in rows:
        m = _STREAMS_CLIENT.match(event.get("thread") or "")
        processes = [m["process"]] if m else _PROCESS_KEY.findall(((event.get("attrs") or {}).get("assignment") or "")[:4000])
        groups = {names[p] for p in processes if p in names}
        if len(groups) == 1:
            group = groups.pop()
            by_group[group].append(dict(event, group=group))


def build_group(group: str, events: list[dict], options: BuildOptions | None = None,
                context: list[dict] | None = None) -> GroupTimeline:
    options = options or BuildOptions()
    rows = [e for e in events if e.get("ts") is not None]
    timeline = GroupTimeline(group, cluster=keyed_by(group, events))
    timeline.context = list(context or ())
    timeline.growing = options.growing
    offsets, pairs, reference = skew.estimate(rows)
    applied = skew.correct(rows, offsets, options.skew_min_ms)
    skew.correct(timeline.context, applied, 0)
    if applied or not _in_order(rows):
        rows.sort(key=_order)       # stable: within one time, the reading order (file, line) stays
    timeline.events = rows
    timeline.skew_ms = applied
    timeline.skew_pairs = {h: pairs[h] for h in applied}
    timeline.clock_checked = set(offsets) | ({reference} if offsets and reference else set())
    untimed = len(events) - len(rows)
    if untimed:
        timeline.notes.append(f"{untimed} line(s) without a readable time are not placed on the timeline")
    for host, ms in applied.items():
        offset = f"{ms / 1000:+.1f}s" if abs(ms) >= 1000 else f"{ms:+d} ms"
        timeline.notes.append(f"clock of {host} is {offset} off {reference} "
                              f"(from {pairs[host]} moments both sides logged: generations joined, members leaving); "
                              "its times were corrected")
    components = {e.get("component") for e in rows}
    timeline.kind = "streams" if "streams" in components else "connect" if "connect" in components else "consumer"
    # KIP-848: the coordinator's epochs, a member's epoch transitions, or a member reconciling a new assignment
    # ("Reconciling assignment with local epoch": that epoch is the client's own count of assignments, no group
    # epoch; the pack reads it as local_epoch).
    kip848 = any(e["event"] in (EV.GROUP_EPOCH_BUMPED, EV.GROUP_TARGET_ASSIGNMENT, EV.MEMBER_EPOCH_TRANSITION)
                 or (e["event"] == EV.ASSIGNMENT_RECEIVED and "local_epoch" in (e.get("attrs") or {})
                     and e.get("component") != "broker") for e in rows)
    timeline.protocol = "consumer" if kip848 else "classic"
    timeline.sides = {"broker" if e.get("component") == "broker" else "client" for e in rows}
    timeline.hosts = {e["host"] for e in rows if e.get("host")}
    if rows:
        timeline.start, timeline.end = rows[0]["ts"], rows[-1]["ts"]
    timeline.directory, timeline.shared_names, timeline.per_file = _directory(rows)
    timeline.rebalances = _Segmenter(group, options, timeline).run(rows)
    if timeline.sides == {"client"}:
        timeline.notes.append("only client logs: the coordinator's reasons and removals are not known")
    elif timeline.sides == {"broker"}:
        timeline.notes.append("only broker logs: the members' own reasons (poll timeouts, threads) are not known")
    return timeline


_order = itemgetter("ts")


def _in_order(rows: list[dict]) -> bool:
    times = [e["ts"] for e in rows]
    return all(a <= b for a, b in zip(times, times[1:]))


def _directory(rows: list[dict]) -> tuple[dict[str, str], set[str], set[str]]:
    """member id -> identity, learned from client lines that state their member id; the client ids
    used on several hosts (consumer-orders-1 everywhere), which need their host; and of those, the
    ones some host writes in several files (two processes whose host could not be told apart), which
    need their file."""
    names: dict[str, set[tuple]] = {}
    for e in rows:
        if e.get("component") != "broker" and e.get("client") and e.get("host"):
            names.setdefault(identity.canonical(e["client"]), set()).add((e["host"], e.get("source") or ""))
    shared = {name for name, places in names.items() if len(places) > 1}
    per_file = {name for name in shared if len({h for h, _ in names[name]}) < len(names[name])}
    directory = {}
    for e in rows:
        member, client = e.get("member"), e.get("client")
        if member and client and e.get("component") != "broker":
            name = identity.canonical(client)
            prefix = identity.canonical(identity.client_of_member(member))
            if prefix != name and prefix in names:
                # another client's member id in this client's line (a Streams leader's assignor naming the consumer
                # it moves a task from): that member is the other client's, whose own lines bind it
                continue
            # The same client.id on several hosts (consumer-orders-1 everywhere) needs its host.
            if name in per_file:
                directory[member] = f"{name}@{e['host']}:{e.get('source') or ''}"
            elif name in shared:
                directory[member] = f"{name}@{e['host']}"
            else:
                directory[member] = name
        elif (member and not client and not e.get("thread") and e.get("library") and e.get("host")
              and e.get("component") != "broker"):
            # A non-Java client's own line stating its member id and no client.id (aiokafka's "Joined group 'g'
            # (generation 3) with member_id X"): the member is the process that writes the file, whose other
            # lines name no member (identity.of_event).
            directory.setdefault(member, identity.of_event({**e, "member": None}, {}))
    for member in _concurrent_namesakes(rows, directory):
        directory[member] = member
    return directory, shared, per_file


_DEPARTURES = (EV.MEMBER_LEAVE, EV.MEMBER_EXPIRED, EV.MEMBER_FENCED)


def _concurrent_namesakes(rows: list[dict], directory: dict[str, str]) -> list[str]:
    """Member ids known only to the coordinator whose client.id another member id shares while both
    are in the group: two processes, not one restarting, so each keeps its own member id as name.
    (A dynamic member that restarts gets a new member id after the old one left: one name.)"""
    spans: dict[str, list] = {}          # member id -> [first line, departure or None]
    for e in rows:
        member = e.get("member")
        if not member or member in directory or e.get("component") != "broker":
            continue
        span = spans.get(member)
        if span is None:
            # A member whose first line is its departure was in the group since before the window.
            span = spans[member] = [None if e["event"] in _DEPARTURES else e["ts"], None]
        if e["event"] in _DEPARTURES:
            span[1] = e["ts"]
    by_client: dict[str, list[tuple]] = {}
    for member, (first, last) in spans.items():
        by_client.setdefault(identity.canonical(identity.client_of_member(member)), []).append((first, last, member))
    out: set[str] = set()
    for same in by_client.values():
        if len(same) < 2:
            continue
        # A sweep in start order (an unknown start is the window's start, an unknown end its end):
        # an id that starts before the latest-ending earlier one has ended overlaps it.
        same.sort(key=lambda s: (s[0] is not None, s[0] or 0))
        holder, holder_end = None, None
        for first, last, member in same:
            if holder is not None and (holder_end is None or first is None or first <= holder_end):
                out.update((member, holder))
            if holder is None or holder_end is not None and (last is None or last > holder_end):
                holder, holder_end = member, last
    return sorted(out)


class _Segmenter:
    def __init__(self, group: str, options: BuildOptions, timeline: GroupTimeline):
        self.group = group
        self.options = options
        self.timeline = timeline
        self.directory = timeline.directory
        self.rebalances: list[Rebalance] = []
        self.open: Rebalance | None = None
        self.by_generation: dict[int, Rebalance] = {}
        self.joined: dict[int, set[str]] = {}      # rebalance index -> identities that joined it
        self.asked: dict[int, set[str]] = {}       # rebalance -> identities that asked to join it (client side)
        self.done: set[int] = set()                # indexes of completed rebalances
        self.broker_prepared: dict[int, int] = {}  # rebalance index -> old generation prepared
        self.join_started: dict[str, object] = {}  # member -> time of its latest "(Re-)joining group"
        # member -> its latest "request timed out" for a JoinGroup: what its next failed join failed of
        self.join_timeouts: dict[str, dict] = {}
        self.rejoined: dict[tuple, dict] = {}      # (member, generation) -> its return into a stable generation
        # Generations the coordinator's log says it stabilized, and those of them the pass has reached.
        self.stabilizes = {e["generation"] for e in timeline.events
                           if e["event"] == EV.REBALANCE_STABILIZED and e.get("generation") is not None}
        self.stabilized: set[int] = set()
        self.client_epochs = timeline.protocol == "consumer" and not any(
            e["event"] in (EV.GROUP_EPOCH_BUMPED, EV.GROUP_TARGET_ASSIGNMENT, EV.MEMBER_ASSIGNMENT)
            for e in timeline.events)
        # KIP-848, members' logs only and no epoch transition at INFO (3.8 clients): each new assignment a member
        # reconciles (its local epoch grows) is a rebalance of the group whose epoch no line states.
        self.local_only = self.client_epochs and not any(e["event"] == EV.MEMBER_EPOCH_TRANSITION
                                                         for e in timeline.events)
        self.local_epochs: dict[str, int] = {}
        # KIP-848: each group epoch the coordinator bumped -> the coordinator's line that answers it, its
        # target-assignment computation (one may answer several bumps: KIP-1263) or a skipped one's.
        self.answered_by = _answers(timeline.events)
        self.bump_changes = _bump_changes(timeline.events)
        # Members' logs only, and no line states a generation or an epoch (librdkafka and KafkaJS at their default
        # log levels, the application's own rebalance callbacks): the members' revocations and assignments are
        # what shows a rebalance; each assignment completes the one under way (the members' next ones join it).
        # (A line stating the generation a member's session ended in, sarama's "consumergroup/session/<member id>/
        # <generation> released", places no rebalance: only lines of joins, syncs and assignments do.)
        self.callbacks_only = not self.client_epochs and not any(
            e.get("component") == "broker" or (e.get("generation") is not None and e["event"] in _PLACED)
            for e in timeline.events)

    # -- identities ------------------------------------------------------------------------------
    def who(self, event: dict) -> str | None:
        return self.timeline.who(event)

    # -- the pass --------------------------------------------------------------------------------
    def run(self, rows: list[dict]) -> list[Rebalance]:
        for event in rows:
            self.place(event)
        for r in self.rebalances:
            self.finish(r)
        self.rebalances = [r for r in self.rebalances if self.is_rebalance(r)]
        for index, r in enumerate(self.rebalances):
            r.index = index + 1
            previous = self.rebalances[index - 1] if index else None
            if r.trigger_kind is None and previous is not None and previous.followup and previous.completed:
                # The assignor asked for it: the previous rebalance scheduled this followup.
                r.trigger_kind = "followup"
                r.trigger = f"{previous.followup} followup requested by the assignor in the previous rebalance"
        self.compare_members()
        return self.rebalances

    def new(self, event: dict) -> Rebalance:
        r = Rebalance(self.group, len(self.rebalances) + 1, start=event["ts"])
        self.rebalances.append(r)
        self.open = r
        return r

    def in_progress(self) -> Rebalance | None:
        r = self.open
        return r if r is not None and id(r) not in self.done and r.outcome != FAILED else None

    def fail(self, r: Rebalance, why: str, at) -> None:
        if id(r) in self.done or r.outcome == FAILED:
            return
        r.outcome = FAILED
        r.failure = r.failure or why
        r.end = max(r.end or at, at) if r.end else at

    def complete(self, r: Rebalance, event: dict) -> None:
        if r.outcome == FAILED:
            return
        self.done.add(id(r))
        r.end = event["ts"] if r.end is None else max(r.end, event["ts"])

    def place(self, event: dict) -> None:
        name = event["event"]
        gen = event.get("generation")
        current = self.in_progress()
        target: Rebalance | None = None
        if name in (EV.JOIN_START, EV.JOIN_REQUESTED) and event.get("component") != "broker":
            who = self.who(event)
            if who:
                self.join_started[who] = event["ts"]
        if self.rejoined and (self.who(event), gen) in self.rejoined \
                and ((event.get("component") != "broker"
                      and (name in (EV.SYNC_SUCCESS, EV.ASSIGNMENT_RECEIVED, EV.MEMBER_EPOCH_TRANSITION)
                           or _assignment_report(event)))
                     # A streams group's coordinator logs the returned static member's assignment state at INFO
                     # (a consumer group's at DEBUG): the return's, not the epoch's rebalance's.
                     or (name == EV.MEMBER_ASSIGNMENT and event.get("component") == "broker")):
            self.rejoined[(self.who(event), gen)]["events"].append(event)
            return

        if name == EV.REQUEST_TIMEOUT:
            if "join" in str((event.get("attrs") or {}).get("api") or "").lower():
                self.join_timeouts[self.who(event) or "?"] = event
            return
        if self.local_only and name == EV.ASSIGNMENT_RECEIVED and event.get("component") != "broker" \
                and _local_epoch(event) is not None:
            who = self.who(event) or "?"
            if _local_epoch(event) > self.local_epochs.get(who, -1):
                self.local_epochs[who] = _local_epoch(event)
                if current is not None:
                    self.complete(current, event)
                target = self.new(event)
                self._attach(target, event)
                self.complete(target, event)
                return
        if name == EV.REBALANCE_PREPARE:
            self._store_failed(event, gen)
            target = self._prepare(event, gen, current)
        elif name == EV.GROUP_EPOCH_BUMPED:
            target = self.by_generation.get(gen) or self._batched(gen, current)
            if target is None and current is not None and current.generation is None:
                target = current  # opened by what caused the bump (a member fenced, joining, leaving)
            elif target is None:
                if current is not None:
                    self.complete(current, event)
                target = self.new(event)
            self._set_generation(target, gen)
            if gen is not None and gen not in target.epochs:
                target.epochs.append(gen)
                if target.old_generation is None or target.old_generation >= gen:
                    # The coordinator bumps a group epoch by one ("Bumped group epoch to N"): the round started from
                    # N-1 (a round spanning batched bumps, KIP-1263, from the first one's).
                    target.old_generation = gen - 1
        elif name == EV.REBALANCE_STABILIZED:
            target = self.by_generation.get(gen)
            if target is None:
                target = current if current is not None and current.generation in (None, gen) else self.new(event)
            self._set_generation(target, gen)
            if gen is not None:
                self.stabilized.add(gen)
            if event.get("members") is not None:
                target.members = event["members"]
        elif name == EV.GROUP_EMPTY:
            # Every member was removed in the join phase: the coordinator completes the rebalance with the next
            # generation and no member ("Group X with generation N is now empty"); members coming back begin
            # the next one.
            target = self.by_generation.get(gen) if gen is not None else None
            if target is None:
                target = current if current is not None and current.generation in (None, gen) else self.new(event)
            self._set_generation(target, gen)
            target.members = 0
            self._attach(target, event)
            self.complete(target, event)
            return
        elif name in (EV.JOIN_SUCCESS, EV.SYNC_SUCCESS, EV.SYNC_FAILED, EV.REBALANCE_ASSIGNMENT_RECEIVED,
                      EV.ASSIGNMENT_COMPUTED, EV.GROUP_TARGET_ASSIGNMENT, EV.MEMBER_EPOCH_TRANSITION,
                      EV.ASSIGNMENT_RECEIVED, EV.MEMBER_ASSIGNMENT) and gen is not None \
                and gen >= 0:
            target = self._by_generation(event, gen, current, name)
            if target is None:
                return
        elif (name == EV.MEMBER_LEAVE and event.get("component") == "broker" and (event.get("attrs") or {}).get("temporarily")) \
                or (name == EV.LEAVE_REQUEST and event.get("component") != "broker" and self.timeline.protocol == "consumer"
                    and (event.get("instance") or "null") not in ("null", "None", "Optional.empty", "")) \
                or (name == EV.MEMBER_STATIC_REPLACED and event.get("component") == "broker" and current is None
                    and self.timeline.protocol == "consumer"):
            # KIP-848 static membership: a static member that closes leaves with epoch -2, "temporarily": the group
            # keeps its assignment for its session timeout (no epoch bump, no rebalance), and a new process with its
            # group.instance.id "re-joins" in its place with that assignment: a return, not a rebalance. Streams
            # groups (KIP-1071) have it from 4.4 ("temporarily left" / "re-joins the streams group"), in the same
            # model: their timeline's protocol is "consumer" too (the broker's epochs).
            if name == EV.MEMBER_STATIC_REPLACED:
                self._rejoin(event, max(self.by_generation, default=0), None)
                return
            target = current or self._recent(event)
            if target is None:
                return
        elif name in _OPENERS or (name == EV.MEMBER_JOIN and self._join_opens(event)) or (
                name == EV.STREAMS_STATE and event.get("state") == "PARTITIONS_REVOKED" and current is None):
            target = self._opener(event, current)
        elif self.callbacks_only and name in _CALLBACKS:
            target = current or self._recent(event)
            who = self.who(event)
            if target is not None and who and name not in _CALLBACK_ENDS and who in self.joined.get(id(target), ()):
                target = None       # it already has its assignment of that one: the group rebalances again
            if name in _CALLBACK_ENDS and gen is not None:
                # Its generation is known (timeline.sessions: the line that ended its session states it): the
                # rebalance of that generation, whatever the second it was logged in.
                target = self.by_generation.get(gen) or (
                    current if current is not None and current.generation is None else None)
            if target is None:
                target = self.new(event)
            if name in _CALLBACK_ENDS and gen is not None:
                self._set_generation(target, gen)
            self._attach(target, event)
            if name in _CALLBACK_ENDS:
                if who:
                    self.joined.setdefault(id(target), set()).add(who)
                self.complete(target, event)
            return
        else:
            target = current or self._recent(event)
            if target is None:
                return
            if target is current and gen is None and event.get("component") != "broker":
                target = self._still_previous(event, current) or current
            if name == EV.SYNC_SUCCESS and gen is None and event.get("component") != "broker" \
                    and target is current and self.who(event) in self.joined.get(id(target), ()):
                # A member's SyncGroup answered after its own JoinGroup of this generation (franz-go's "synced;
                # group: orders, assigned: orders[1 3]" states no generation): the generation is complete.
                self._attach(target, event)
                self.complete(target, event)
                return
        self._attach(target, event)

    def _still_previous(self, event: dict, current: Rebalance) -> Rebalance | None:
        """A member's line without a generation that is still about the rebalance before `current`: it joined that
        one and has not asked to join `current` yet (another member's followup, e.g. a Streams thread triggering
        the followup its assignment scheduled, opened `current` while this member was still applying its
        assignment)."""
        who = self.who(event)
        if not who or who in self.asked.get(id(current), ()):
            return None
        if any(e["event"] in _DEPARTURES and e.get("component") == "broker" and self.who(e) == who
               for e in current.events):
            return None              # `current` is its removal: its own lines about losing its session are current's
        for r in reversed(self.rebalances):
            if r is current:
                continue
            if who in self.joined.get(id(r), ()):
                return r
            if r.generation is not None:
                return None          # only the last generation before `current`
        return None

    def _batched(self, gen: int | None, current: Rebalance | None) -> Rebalance | None:
        """The round under way when the computation that answers epoch `gen` also answers the epoch it bumped: the
        coordinator computed no target assignment between the two bumps (KIP-1263, 4.3+, batches the computation;
        a streams group delays it, 4.2+), so the members never had the earlier epoch's assignment to reconcile:
        one round spanning both epochs, not an unanswered bump followed by another round."""
        if gen is None or current is None or current.generation is None or current.generation >= gen:
            return None
        answer = self.answered_by.get(gen)
        return current if answer is not None and self.answered_by.get(current.generation) is answer else None

    def _store_failed(self, event: dict, old: int | None) -> None:
        """The coordinator prepares a rebalance because it could not store generation `old`'s assignment: that
        generation's SyncGroup failed (its members got an error, not their assignment), although the leader's
        assignment was received (which completed it)."""
        m = STORE_ERROR.search(event.get("reason") or "") if event.get("component") == "broker" else None
        r = self.by_generation.get(old) if m and old is not None else None
        if r is None:
            return
        why = STORE_FAILED + (f" ({m['code']})" if m["code"] else "")
        self.done.discard(id(r))
        if r.outcome == FAILED and r.failure == SUPERSEDED:
            r.failure = why        # what superseded it is this failure, the cause
        self.fail(r, why, event["ts"])

    def _prepare(self, event: dict, old: int | None, current: Rebalance | None) -> Rebalance:
        ahead = self.by_generation.get(old + 1) if old is not None else None
        if ahead is not None and ahead.old_generation is None and id(ahead) not in self.broker_prepared:
            # Members' joins of generation old+1 came first (their clocks, corrected to a few ms, run
            # early): the coordinator preparing from `old` is that same rebalance.
            ahead.old_generation = old
            self.broker_prepared[id(ahead)] = old
            return ahead
        if current is not None:
            prepared = self.broker_prepared.get(id(current))
            if prepared is not None and prepared == old and current.generation is None:
                self.fail(current, f"the coordinator prepared generation {old} again", event["ts"])
            elif current.generation is not None and old is not None and old >= current.generation:
                self.fail(current, SUPERSEDED, event["ts"])
            elif prepared is None:
                self.broker_prepared[id(current)] = old
                current.old_generation = old
                return current
            else:
                return current
        r = self.new(event)
        r.old_generation = old
        self.broker_prepared[id(r)] = old
        return r

    def _by_generation(self, event: dict, gen: int, current: Rebalance | None, name: str) -> Rebalance | None:
        known = self.by_generation.get(gen)
        if name == EV.JOIN_SUCCESS and not _assignment_report(event) and known is not None and id(known) in self.done \
                and known.end is not None and self._joined_after(event, known):
            # A member that started joining after generation `gen` had completed and still got `gen`: the
            # coordinator let it back in without a rebalance (a static member within its session timeout, or
            # a member whose metadata did not change). Not a rebalance; never a clock-skew anchor.
            self._rejoin(event, gen, current)
            return None
        if known is None and name == EV.MEMBER_EPOCH_TRANSITION and self.client_epochs \
                and event.get("component") != "broker" and gen > max(self.by_generation, default=0):
            # KIP-848, only the members' logs: each new member epoch a member reaches (its state machine's
            # "Member X with epoch N transitioned from ...") is the group's new epoch (0: not a member yet).
            if current is not None:
                self.complete(current, event)
            known = self.new(event)
            self._set_generation(known, gen)
            self.complete(known, event)
            return known
        if known is None and name in (EV.MEMBER_EPOCH_TRANSITION, EV.ASSIGNMENT_RECEIVED, EV.MEMBER_ASSIGNMENT):
            # A member's epoch line never starts a rebalance (it logs its previous epoch, or 0 while joining).
            return current or self._recent(event)
        if known is not None and known is not current and current is not None \
                and name == EV.JOIN_SUCCESS and self._only_rejoin(current, event):
            # A (static) member rejoined the generation it already had: no rebalance happened.
            self.rebalances.remove(current)
            for moved in current.events:
                known.events.append(moved)
            self.open = known
            current = None
        if known is None:
            if current is not None and current.generation in (None, gen):
                known = current
            elif current is not None and current.generation is not None and gen > current.generation \
                    and name == EV.JOIN_SUCCESS:
                self.fail(current, SUPERSEDED, event["ts"])
                known = self.new(event)
            else:
                known = self.new(event)
            self._set_generation(known, gen)
        if name == EV.JOIN_SUCCESS:
            who = self.who(event)
            if who:
                self.joined.setdefault(id(known), set()).add(who)
            if _assignment_report(event):
                known.leader = self._member_name(event["leader"])
                self.complete(known, event)
        elif name in (EV.SYNC_SUCCESS, EV.REBALANCE_ASSIGNMENT_RECEIVED):
            leader = event.get("leader")
            if leader:
                known.leader = self._member_name(leader)
            if event.get("members") is not None:
                known.members = event["members"]
            self.complete(known, event)
        elif name == EV.SYNC_FAILED:
            why = event.get("reason") or event.get("error") or _first_line(event)
            self.fail(known, SUPERSEDED if any(w.lower() in why.lower() for w in _BEGAN_ANOTHER) else why, event["ts"])
        elif name == EV.ASSIGNMENT_COMPUTED:
            known.leader = self.who(event)
        elif (name in (EV.MEMBER_EPOCH_TRANSITION, EV.MEMBER_ASSIGNMENT) and (event.get("state") or "").upper() == "STABLE") \
                or name == EV.ASSIGNMENT_RECEIVED:
            # KIP-848: a member reaching STABLE (or reconciling) at the epoch ends that epoch's rebalance.
            self.complete(known, event)
        return known

    def _joined_after(self, event: dict, known: Rebalance) -> bool:
        """The member started joining after generation `known` had completed: a static member (its
        log context names its group.instance.id), or any member later than clocks can be wrong by
        (hosts within skew_min_ms of each other are not corrected, so their order is that uncertain)."""
        started = self.join_started.get(self.who(event) or "")
        if started is None or started <= known.end:
            return False
        static = (event.get("instance") or "null") not in ("null", "None", "Optional.empty", "")
        return static or started - known.end > timedelta(milliseconds=self.options.skew_min_ms)

    def _rejoin(self, event: dict, gen: int, current: Rebalance | None) -> None:
        who = self.who(event)
        record = {"member": who, "generation": gen, "at": event["ts"], "events": [event],
                  "instance": event.get("instance")}
        if current is not None and current.generation is None and not any(
                e["event"] in (EV.REBALANCE_PREPARE, EV.GROUP_EPOCH_BUMPED, EV.REBALANCE_STABILIZED) or
                (e["event"] == EV.JOIN_SUCCESS and self.who(e) != who) for e in current.events):
            # The "rebalance" its (Re-)joining line opened was only this return.
            self.rebalances.remove(current)
            record["events"] = current.events + record["events"]
        self.rejoined[(who, gen)] = record
        self.timeline.rejoins.append(record)
        self.open = None

    def _only_rejoin(self, current: Rebalance, event: dict) -> bool:
        writer = self.who(event)
        return current.generation is None and not any(
            e["event"] in (EV.REBALANCE_PREPARE, EV.GROUP_EPOCH_BUMPED, EV.REBALANCE_STABILIZED) or
            (e.get("component") != "broker" and self.who(e) != writer) for e in current.events)

    def _join_opens(self, event: dict) -> bool:
        """A broker 'member joins' line starts a rebalance unless a static member just came back."""
        if (event.get("attrs") or {}).get("replaced"):
            return False
        return (event.get("state") or "Stable") in ("Stable", "CompletingRebalance", "Empty")

    def _opener(self, event: dict, current: Rebalance | None) -> Rebalance:
        joining = self._still_joining(event)
        if joining is not None:
            return joining
        if current is None:
            return self.new(event)
        who = self.who(event)
        client_side = event.get("component") != "broker"
        answer = self._answer(current) if not client_side else None
        if answer is not None:
            # KIP-848: the coordinator has computed the target assignment that answers the round's epochs; a member
            # joining, leaving or fenced after that bumps the epoch again: it is the next round's cause (the bump
            # that follows joins that round), and the round under way was done on the coordinator's side when it
            # computed (its members' own lines at its epoch, if any, still come to it).
            self.complete(current, answer)
            return self.new(event)
        if client_side and who and who in self.joined.get(id(current), set()) \
                and event["event"] in (EV.JOIN_REQUESTED, EV.JOIN_START, EV.STREAMS_FOLLOWUP_TRIGGERED):
            # This member already joined the current generation: it is rejoining for the next one.
            if current.generation is not None:
                self.fail(current, SUPERSEDED, event["ts"])
            return self.new(event)
        return current

    def _answer(self, r: Rebalance) -> dict | None:
        """The coordinator's line that answers the round's epochs (its computation, or a skipped one's), when it is
        among the round's lines."""
        answer = self.answered_by.get(r.epochs[-1]) if r.epochs else None
        return answer if answer is not None and any(e is answer for e in r.events) else None

    def _still_joining(self, event: dict) -> Rebalance | None:
        """The rebalance of the latest generation N, for a coordinator's line that comes before the coordinator's
        own "Stabilized group ... generation N": members' lines may already have closed it (a SyncGroup of N) or
        opened the next (a followup asked for), their clocks being corrected only to within skew_min_ms, but the
        coordinator, whose lines share one clock, is still in N's join phase (removing the members that did not
        rejoin in time, which completes the join): the line is N's."""
        if event.get("component") != "broker":
            return None
        r = next((r for r in reversed(self.rebalances) if r.generation is not None), None)
        if r is None or r.outcome == FAILED or r.generation not in self.stabilizes or r.generation in self.stabilized:
            return None
        return r

    def _recent(self, event: dict) -> Rebalance | None:
        last = self.open
        if last is None or last.end is None:
            return None
        if event["ts"] - last.end <= timedelta(milliseconds=self.options.attach_ms):
            return last
        return None

    def _set_generation(self, r: Rebalance, gen: int | None) -> None:
        if gen is None:
            return
        r.generation = gen
        self.by_generation.setdefault(gen, r)

    def _member_name(self, member: str) -> str:
        return self.directory.get(member) or identity.canonical(identity.client_of_member(member))

    def _attach(self, r: Rebalance, event: dict) -> None:
        r.events.append(event)
        if event["event"] in _ASKS and event.get("component") != "broker":
            self.asked.setdefault(id(r), set()).add(self.who(event))
        if r.start is None or event["ts"] < r.start:
            r.start = event["ts"]
        r.sides.add("broker" if event.get("component") == "broker" else "client")
        if event.get("host"):
            r.hosts.add(event["host"])
        name = event["event"]
        if name in _FOLLOWUPS and r.followup in (None, "unspecified"):
            r.followup = _FOLLOWUPS[name]
        elif name == EV.STREAMS_ASSIGNMENT_UNSTABLE and r.followup is None:
            r.followup = "unspecified"
        elif name == EV.STREAMS_PARTICIPANTS:
            r.leader = self.who(event)
            r.nodes = event.get("nodes")
            if event.get("consumers") is not None:
                r.members = event["consumers"]
        elif name == EV.JOIN_FAILED:
            if not _new_member_handshake(event):
                why = event.get("reason") or event.get("error")
                timeout = self.join_timeouts.pop(self.who(event) or "?", None)
                if not why and timeout is not None and abs((event["ts"] - timeout["ts"]).total_seconds()) <= 2:
                    # The client's own JoinGroup request timed out just before (ruby-kafka logs the two lines).
                    why = JOIN_REQUEST_TIMED_OUT
                    r.events.insert(len(r.events) - 1, timeout)
                self.fail(r, why or "JoinGroup failed", event["ts"])
        elif name in (EV.PARTITIONS_ASSIGNED, EV.ASSIGNMENT_RECEIVED) and r.generation is not None \
                and not any(e["event"] in (EV.SYNC_SUCCESS, EV.REBALANCE_ASSIGNMENT_RECEIVED) for e in r.events):
            # Clients older than 2.8 do not log their SyncGroup; their new assignment closes it.
            self.complete(r, event)
        elif name == EV.STREAMS_STATE and event.get("state") == "PARTITIONS_ASSIGNED" \
                and not self._asked_not_joined(r, event) \
                and not any(e["event"] in (EV.SYNC_SUCCESS, EV.REBALANCE_ASSIGNMENT_RECEIVED) for e in r.events):
            # A Streams thread applying the assignment of the generation it joined (2.x logs no SyncGroup at INFO);
            # a thread that asked for a followup while still applying the previous one closes nothing.
            self.complete(r, event)

    def _asked_not_joined(self, r: Rebalance, event: dict) -> bool:
        """The member asked to join `r` and has not joined it yet: its lines finish the previous generation."""
        who = self.who(event)
        return who in self.asked.get(id(r), ()) and who not in self.joined.get(id(r), ())

    # -- after the pass --------------------------------------------------------------------------
    def is_rebalance(self, r: Rebalance) -> bool:
        """Departures that led to no rebalance (the last member leaving) are not rebalances."""
        return any(e["event"] in (EV.REBALANCE_PREPARE, EV.GROUP_EPOCH_BUMPED, EV.REBALANCE_STABILIZED, EV.JOIN_START,
                                  EV.JOIN_REQUESTED, EV.JOIN_SUCCESS, EV.SYNC_SUCCESS, EV.SYNC_FAILED,
                                  EV.CONNECT_REBALANCE_STARTED, EV.STREAMS_PARTICIPANTS, EV.GROUP_TARGET_ASSIGNMENT,
                                  EV.REBALANCE_ASSIGNMENT_RECEIVED) for e in r.events) or \
            any(e["event"] == EV.ASSIGNMENT_RECEIVED and e.get("generation") is not None for e in r.events) or \
            self.local_only and any(e["event"] == EV.ASSIGNMENT_RECEIVED and _local_epoch(e) is not None
                                    for e in r.events) or \
            r.generation is not None and self.client_epochs and any(
                e["event"] == EV.MEMBER_EPOCH_TRANSITION and e.get("generation") == r.generation for e in r.events) or \
            any(e["event"] == EV.JOIN_FAILED and not _new_member_handshake(e) for e in r.events) or \
            self.callbacks_only and any(e["event"] in _CALLBACK_ENDS for e in r.events) or \
            any(e["event"] == EV.STREAMS_STATE and e.get("state") in ("PARTITIONS_REVOKED", "PARTITIONS_ASSIGNED")
                for e in r.events)

    def finish(self, r: Rebalance) -> None:
        if id(r) in self.done and r.outcome != FAILED:
            r.outcome = UNSTABLE if r.followup else STABLE
        elif r.outcome != FAILED:
            r.outcome = INCOMPLETE
        if r.end is None and r.events:
            r.end = r.events[-1]["ts"]
        later = [e["ts"] for e in r.events if e.get("generation") == r.generation
                 and e["event"] in (EV.SYNC_SUCCESS, EV.JOIN_SUCCESS)]
        if r.completed and later:
            r.end = max(r.end, max(later))
        self.joined_members(r)
        self.trigger(r)
        for e in r.events:
            name = e["event"]
            who = self.who(e)
            if not who:
                continue
            if name in (EV.MEMBER_LEAVE, EV.LEAVE_REQUEST) and who not in r.left:
                r.left.append(who)
            elif name in (EV.MEMBER_EXPIRED, EV.MEMBER_FENCED) and who not in r.expired:
                r.expired.append(who)
            elif name == EV.PARTITIONS_LOST and who not in r.missed:
                r.missed.append(who)

    def joined_members(self, r: Rebalance) -> None:
        names = sorted(self.joined.get(id(r), set()))
        if not names and r.generation is not None:
            # KIP-848: the members reconciling or reaching the epoch are its members.
            names = sorted({self.who(e) for e in r.events if e.get("generation") == r.generation and e["event"] in
                            (EV.MEMBER_ASSIGNMENT, EV.MEMBER_EPOCH_TRANSITION, EV.ASSIGNMENT_RECEIVED) and self.who(e)})
        r.member_ids = names
        if r.members is None and names:
            r.members = len(names)

    def trigger(self, r: Rebalance) -> None:
        best = None
        first_symptom = None
        for e in r.events:
            if e["event"] not in _CAUSES:
                continue
            if e["event"] == EV.MEMBER_JOIN and not self._join_opens(e):
                continue
            reason = e.get("reason")
            found = classify(reason) if reason else None
            kind = _KIND_OF_EVENT.get(e["event"]) or (found.kind if found else None)
            if e["event"] == EV.MEMBER_JOIN and kind is None:
                kind = "new-member"
            if kind is None:
                continue
            if found is not None and found.symptom and e["event"] not in _KIND_OF_EVENT:
                r.symptoms += 1
                if first_symptom is None and e.get("component") == "broker" and found.member:
                    first_symptom = (e, self._member_name(found.member))
                continue
            member = (found.member if found and found.member else None) if e.get("component") == "broker" \
                else None
            candidate = (kind, reason or _DESCRIPTION.get(e["event"]) or (e.get("message") or "").split("\n", 1)[0], e,
                         self._member_name(member) if member else self.who(e))
            if best is None or (best[0] == "leave" and kind == "poll-timeout"):
                best = candidate
        if best is None:
            changed = next(((e, why) for e in r.events if (why := self.bump_changes.get(id(e)))), None)
            if changed is not None:
                # No member joined, left or was fenced: the coordinator bumped the epoch for what its members
                # subscribe to (KIP-848, 1071: the topics' metadata hash, a Streams topology validated).
                event, r.trigger_kind, r.trigger = changed[0], "metadata-change", changed[1]
                r.trigger_evidence = Evidence.of(event)
                return
        if best is None:
            if first_symptom is not None:
                # The coordinator names who rejoined first, even when that member's reason is a symptom.
                event, r.trigger_member = first_symptom
                r.trigger_evidence = Evidence.of(event)
            return
        r.trigger_kind, r.trigger, event, r.trigger_member = best
        r.trigger_evidence = Evidence.of(event)

    def compare_members(self) -> None:
        """Members of the previous completed generation that are absent from the next one."""
        previous = None
        for r in self.rebalances:
            if not r.completed or not r.member_ids:
                continue
            if previous is not None and previous.hosts & r.hosts:
                gone = [m for m in previous.member_ids if m not in r.member_ids
                        and _host_of(m, previous) in r.hosts | {None}]
                for m in gone:
                    if m not in r.left and m not in r.expired and m not in r.missed:
                        r.missed.append(m)
            previous = r


def _bump_changes(events: list[dict]) -> dict[int, str]:
    """Each epoch bump whose line states that what the members subscribe to changed since the bump before -> what
    changed: the subscribed topics' metadata hash (topics created or deleted, partitions added) or the topology epoch
    the coordinator validated (a Streams group's internal topics now exist). A bump is a member change or one of
    these; only the bump's own line says which."""
    out: dict[int, str] = {}
    before: dict | None = None
    for e in events:
        if e["event"] != EV.GROUP_EPOCH_BUMPED or e.get("component") != "broker":
            continue
        attrs = e.get("attrs") or {}
        if before is not None:
            said = []
            for key, words in (("metadata_hash", "the subscribed topics' metadata hash"),
                               ("validated_topology_epoch", "the validated topology epoch")):
                old, new = before.get(key), attrs.get(key)
                if old is not None and new is not None and old != new:
                    said.append(f"{words} changed ({old} -> {new})")
            if said:
                out[id(e)] = "; ".join(said)
        before = attrs
    return out


def _answers(events: list[dict]) -> dict[int, dict]:
    """Each group epoch the coordinator bumped -> the coordinator's line that answers it: the first target-assignment
    computation after it at that epoch or a later one (the coordinator computes at the group's current epoch: one
    computation answers every bump since the last), or a line saying the delayed computation was skipped ("Skipping
    delayed target assignment: group is empty", "Cannot compute delayed target assignment": no epoch), which
    answers every bump since the last with no assignment. A bump nothing answers (the logs end) has none."""
    answers: dict[int, dict] = {}
    pending: list[int] = []
    for e in events:
        if e.get("component") != "broker":
            continue
        if e["event"] == EV.GROUP_EPOCH_BUMPED and e.get("generation") is not None:
            pending.append(e["generation"])
        elif e["event"] == EV.GROUP_TARGET_ASSIGNMENT and pending:
            epoch = e.get("generation")
            answered = [bumped for bumped in pending if epoch is None or bumped <= epoch]
            answers.update((bumped, e) for bumped in answered)
            pending = [bumped for bumped in pending if bumped not in answered]
    return answers


def _local_epoch(event: dict) -> int | None:
    """A KIP-848 member's local epoch (its own count of the assignments it received), when the line states one."""
    value = (event.get("attrs") or {}).get("local_epoch")
    return int(value) if value is not None and str(value).lstrip("-").isdigit() else None


def _first_line(event: dict) -> str:
    text = (event.get("message") or "").split("\n", 1)[0]
    at = text.find("SyncGroup failed")
    return text[at:].split(". Sent generation")[0] if at >= 0 else "SyncGroup failed"


def _host_of(member: str, r: Rebalance) -> str | None:
    return member.rsplit("@", 1)[1] if "@" in member else None
