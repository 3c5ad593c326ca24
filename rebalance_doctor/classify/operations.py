"""Why each rebalance happened: its operation, its verdict and its culprit (protocol semantics).

Each rebalance is read for what changed the membership: members leaving (on purpose, on a poll
timeout, removed on session timeout, fenced, crashed), members arriving (new, or coming back),
and the followups the protocol asks for (a cooperative member that revoked partitions rejoins;
the Streams assignor schedules a followup, a probing rebalance or version probing). A followup is
recognised by those lines, never by how soon it came. Then the group's departures and arrivals
are paired per member: leaving on purpose and coming back is a rolling restart, leaving for good
while others arrive is a deploy, a return after a timeout belongs to the timeout.

The vocabulary and the verdict of each operation are data (operations.toml).
"""

from __future__ import annotations

from bisect import bisect_right

from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from ..core.errors import kafka_name
from ..core.toml import load_toml
from ..timeline.model import FAILED, GroupTimeline, Rebalance
from ..timeline.triggers import classify as classify_reason
from ..timeline.identity import canonical, client_of_member, node_of
from .members import CLOSE_REASONS, Members
from . import silent
from .protocol import heartbeat_protocol
from ..core import assignment_maps
from ..core import eventnames as EV

OPERATIONS_FILE = Path(__file__).with_name("operations.toml")

# How a member left: the departure kinds, most telling first.
POLL = "poll-timeout"
FENCED = "fencing"
EXPIRED = "expired"
THREAD = "thread"
DIED = "died"              # a StreamThread that died and was not replaced, its consumer leaving on the way out
AWAY = "static-away"      # a static member removed on session timeout while it was away (static.py)
MOVED = "coordinator"      # removed one session timeout after the coordinator loaded the group (coordinator.py)
PLANNED = "planned"        # left on purpose (LeaveGroup on close, or a Streams instance shut down and expired)
LEAVE = "leave"            # a LeaveGroup whose reason is not logged
# The member's own log says the coordinator no longer knows its member id (UNKNOWN_MEMBER_ID) and it rejoins:
# it was removed, no line says why. The least telling: any other line about the same removal takes its place.
LOST = "lost"
_STRENGTH = (POLL, FENCED, THREAD, DIED, MOVED, AWAY, EXPIRED, LEAVE, PLANNED, LOST)

_NEW_MEMBER = ("MemberIdRequired", "valid member id", "need to re-join with the given member-id")
_FOLLOWUP_OPERATION = {"cooperative": "cooperative-followup", "probing": "probing-followup",
                       "version_probing": "version-probing", "endpoint": "endpoint-followup",
                       "unspecified": "cooperative-followup"}
_TRIGGER_OPERATION = {"metadata-change": "metadata-change", "coordinator": "coordinator-move",
                      "sync-error": "failed-attempt",
                      "task-corruption": "task-corruption", "application-shutdown": "application-shutdown",
                      "thread-replacement": "thread-replacement"}


@lru_cache(maxsize=1)
def vocabulary() -> dict[str, dict]:
    return load_toml(OPERATIONS_FILE)["operation"]


def verdict_of(operation: str) -> str:
    return vocabulary().get(operation, {}).get("verdict", "unknown")


def markdown_table() -> str:
    """The operations as docs/analyze.md lists them (a test keeps the two equal)."""
    rows = ["| operation | verdict | what it is |", "|---|---|---|"]
    rows += [f"| `{name}` | {item['verdict']} | {item['doc']} |" for name, item in vocabulary().items()]
    return "\n".join(rows) + "\n"


def words(operation: str | None) -> str:
    return vocabulary().get(operation or "unknown", {}).get("words", operation or "no logged cause")


@dataclass(slots=True)
class Departure:
    who: str
    kind: str
    event: dict
    # When the kind is concluded rather than stated (a LeaveGroup with no reason whose process joined again
    # without restarting: a poll timeout), the line of that rejoin.
    rejoined: dict | None = None
    # When no line states the departure and it is concluded from the member's log stopping (silent.py): why.
    concluded: str | None = None


@dataclass(slots=True)
class Change:
    """What one rebalance changed in the membership, as its lines say."""

    departures: list[Departure] = field(default_factory=list)
    arrivals: list[tuple[str, dict]] = field(default_factory=list)
    revoked_by: set[str] = field(default_factory=set)     # members that revoked partitions (cooperative)
    added_to: set[str] = field(default_factory=set)       # members that were given partitions
    first_assignment: set[str] = field(default_factory=set)   # members given their first partitions
    writers: list[str] = field(default_factory=list)      # members whose own lines are in it, in order
    target: set[str] | None = None                        # KIP-848: the members of the new target assignment
    lost_by: set[str] = field(default_factory=set)        # members whose own log says they were dropped (lost)
    followup_trigger: dict | None = None                  # the line that started it as a followup
    static_update: dict | None = None                     # "Updating metadata for static member"
    reconciles: bool = False       # heartbeat protocols: members reconciling the epoch of its cause_index

    def strongest(self) -> Departure | None:
        if not self.departures:
            return None
        return min(self.departures, key=lambda d: _STRENGTH.index(d.kind))


def classify_rebalances(timeline: GroupTimeline, members: Members, coordinator=None, absences=None,
                        connect=None) -> dict[int, Change]:
    """Fill operation, verdict, culprit and cause_index of every rebalance; return what each changed.
    `coordinator` (coordinator.py), `absences` (static.py) and `connect` (connect.py) say which removals on
    session timeout a coordinator move, a static member's absence or a Connect worker's bounce within the
    scheduled rebalance delay explains."""
    changes = {r.index: _change(timeline, members, r, coordinator, absences, connect) for r in timeline.rebalances}
    for index, died in silent.deaths(timeline, members).items():
        # Only the clients' logs: a member whose log stopped without giving anything back, before the survivors
        # rebalanced, was removed on session timeout (silent.py).
        for who, line in died:
            if all(d.who != who for d in changes[index].departures):
                changes[index].departures.append(Departure(who, EXPIRED, line, concluded="its log stopped"))
    for index, gone in silent.left(timeline).items():
        # ... and a member that gave its partitions back and was not assigned again while the others were: it left.
        for who, line in gone:
            if all(d.who != who for d in changes[index].departures):
                changes[index].departures.append(Departure(who, LEAVE, line, concluded="it gave back and left"))
    present: set[str] = set()
    gone: dict[str, tuple[Rebalance, Departure]] = {}      # identity -> where and how it left
    forming = True
    previous: Rebalance | None = None
    seen: set[str] = set()                                 # members whose own lines an earlier rebalance has
    target: set[str] | None = None                         # KIP-848: the previous target assignment's members
    for r in timeline.rebalances:
        change = changes[r.index]
        _started_here(timeline, members, r, change, seen)
        _came_back_here(timeline, members, r, change)
        if change.target is not None:
            if target is not None:
                change.arrivals += [(who, {}) for who in sorted(change.target - target)
                                    if all(who != a for a, _ in change.arrivals)]
            target = change.target
        # A member's own notice of a removal the logs already show (it is still gone: "encountered UNKNOWN_MEMBER_ID",
        # "member id unknown", its own "session timed out" line, coming after the coordinator removed it) is that
        # removal seen from its side, not a second departure: one departure per removal, for every rule.
        change.departures = [d for d in change.departures if not _notice_of_removal(timeline, d, gone, r)]
        _decide(timeline, members, r, change, previous, present, gone, forming)
        seen.update(change.writers)
        if change.departures or r.operation not in ("initial-join", None):
            forming = forming and r.operation == "initial-join"
        for who in r.member_ids:
            present.add(who)
        for d in change.departures:
            present.discard(d.who)
        previous = r
    _restart_loops(timeline, changes, members, _pair_planned(timeline, changes, members))
    _unconverged_followups(timeline, changes)
    _inherit(timeline)
    _reconciled(timeline, changes)
    return changes


_NOTICES = (EV.JOIN_REQUESTED, EV.SESSION_TIMEOUT)     # a member's own lines that say it was removed (LOST, EXPIRED)
_RETURNS = (EV.JOIN_SUCCESS, EV.SYNC_SUCCESS, EV.ASSIGNMENT_RECEIVED, EV.PARTITIONS_ASSIGNED)


def _notice_of_removal(timeline: GroupTimeline, d: Departure, gone: dict, r: Rebalance) -> bool:
    """`d` is the member's own line noticing a removal of it that an earlier rebalance has (no join of its own in
    between: a member that came back and is removed again departs again)."""
    if d.who not in gone or d.event.get("component") == "broker" or d.event["event"] not in _NOTICES:
        return False
    if d.kind == LOST:
        return True           # a rejoin after UNKNOWN_MEMBER_ID is its return from that removal
    where, how = gone[d.who]
    since, until = how.event.get("ts"), d.event.get("ts")
    return not any(e["event"] in _RETURNS and timeline.who(e) == d.who and e.get("component") != "broker"
                   and (since is None or e["ts"] > since) and (until is None or e["ts"] < until)
                   for x in timeline.rebalances if where.index <= x.index <= r.index for e in x.events)


def _reconciled(timeline: GroupTimeline, changes: dict[int, Change]) -> None:
    """Members' reconciliation windows of a heartbeat protocol (see _classify) are what the epoch they reconcile is,
    once the pairing above named it (a restart's return)."""
    by_index = {r.index: r for r in timeline.rebalances}
    for r in timeline.rebalances:
        if changes[r.index].reconciles and r.cause_index in by_index:
            cause = by_index[r.cause_index]
            r.operation, r.verdict = cause.operation, cause.verdict
            r.culprit, r.culprit_name = cause.culprit, cause.culprit_name


def _unconverged_followups(timeline: GroupTimeline, changes: dict[int, Change]) -> None:
    """The second round of an incremental cooperative rebalance only hands out what the first round revoked; with
    the same members and subscriptions it has nothing to take away. A followup in which members revoked partitions
    again while no member came or went needs yet another followup: the assignor keeps moving partitions and the
    rounds do not converge. Each followup that such a followup caused is harmful (the first followup is the
    protocol working; cooperative-followup-loop reports the chain). Consumer groups only: the Kafka Streams
    assignor computes each round afresh and may move tasks over several immediate followups while it balances
    (after a probe, say), and converges.

    A member whose SyncGroup of a round failed (the leader revoked and rejoined first: "The group began another
    rebalance") never received that round's assignment: it still owns what the round took away from it and revokes
    it one round late, in the followup. The followup's assignor computes from that stale ownership, so it may
    replan and revoke from others too (a sticky assignor hands the extra partition slot to whoever owns most): it
    completes the round before's move, deferred. The followup it causes is then as harmful as that followup
    itself: expected after a scale-out's or a restart's move, harmful inside a chain that never converges. Only a
    followup after a round every member received revoked anew."""
    revokers = _revokers_by_generation(timeline)
    windows = _revokers(timeline)
    unsynced = _unsynced(timeline)
    by_index = {r.index: r for r in timeline.rebalances}
    for r in timeline.rebalances:
        cause = by_index.get(r.cause_index) if r.cause_index is not None else None
        if r.operation != "cooperative-followup" or r.protocol != "cooperative" or cause is None \
                or cause.operation != "cooperative-followup":
            continue
        change = changes[cause.index]
        revoked = revokers.get(cause.generation) if cause.generation is not None else windows.get(cause.index)
        if not revoked or change.departures or change.arrivals:
            continue
        before = by_index.get(cause.cause_index) if cause.cause_index is not None else None
        missed = unsynced.get(before.generation, set()) if before is not None and before.generation is not None \
            else set()
        if missed:
            r.verdict = cause.verdict    # cause completed the move of the round before, deferred: as cause is
            continue
        r.verdict = "harmful"


def _revokers_by_generation(timeline: GroupTimeline) -> dict[int | None, set[str]]:
    """Generation -> the members that revoked partitions in it. A member's 'Updating assignment' line carries no
    generation: it is the one its own log last joined or synced (its own clock; the brokers' and other hosts' clocks
    may put the line in the next rebalance's window). Without such a line, the generation of the window."""
    window = {id(e): r.generation for r in timeline.rebalances for e in r.events}
    current: dict[str, int] = {}
    out: dict[int | None, set[str]] = {}
    for e in timeline.events:
        if e.get("component") == "broker":
            continue
        who = timeline.who(e) or "?"
        if e["event"] in (EV.JOIN_SUCCESS, EV.SYNC_SUCCESS) and e.get("generation") is not None:
            current[who] = int(e["generation"])
        elif _revokes(e):
            out.setdefault(current.get(who, window.get(id(e))), set()).add(who)
    return out


def _revokes(event: dict) -> bool:
    """A member's 'Updating assignment' line that revokes partitions."""
    if event["event"] != EV.ASSIGNMENT_RECEIVED:
        return False
    return bool(_listed(event, "revoked"))


def _listed(event: dict, name: str) -> str | None:
    """The partitions an "Updating assignment" (or KIP-848 "Reconciling assignment") line lists as owned, added or
    revoked (the pack's captures of the lists that follow it, as written): None when the line has no such list."""
    value = (event.get("attrs") or {}).get(name)
    return None if value is None else value.strip()


def _unsynced(timeline: GroupTimeline) -> dict[int, set[str]]:
    """Generation -> the members whose SyncGroup of that generation failed (their own 'SyncGroup failed ... Sent
    generation was' line): they never received its assignment."""
    out: dict[int, set[str]] = {}
    for e in timeline.events:
        if e["event"] == EV.SYNC_FAILED and e.get("component") != "broker" and e.get("generation") is not None:
            out.setdefault(int(e["generation"]), set()).add(timeline.who(e) or "?")
    return out


# -- one rebalance -------------------------------------------------------------------------------
def _change(timeline: GroupTimeline, members: Members, r: Rebalance, coordinator=None, absences=None,
            connect=None) -> Change:
    change = Change()
    seen_departures: dict[str, int] = {}
    for e in r.events:
        name = e["event"]
        departure = _departure(timeline, members, e)
        if departure is not None and departure.kind == EXPIRED and heartbeat_protocol(r.protocol):
            departure.kind = FENCED      # KIP-848: the broker fences a member whose session expired
        elif departure is not None and departure.kind == EXPIRED and coordinator is not None \
                and coordinator.explains(e, departure.who) is not None:
            departure.kind = MOVED       # its deadline was the coordinator's load plus its session timeout
        elif departure is not None and departure.kind == EXPIRED and absences and absences.explains(e) is not None:
            departure.kind = AWAY        # a static member that was away (stopped) longer than its session
        elif departure is not None and departure.kind == EXPIRED and connect is not None \
                and connect.explains(e, departure.who) is not None:
            departure.kind = PLANNED     # a Connect worker back within scheduled.rebalance.max.delay.ms: a bounce
        elif departure is not None and departure.kind == EXPIRED and _shut_down(members, departure):
            departure.kind = PLANNED     # a Streams consumer closed without LeaveGroup: expiry is how it leaves
        if departure is not None and departure.kind in (PLANNED, LEAVE, EXPIRED):
            death = members.death_before(departure.who, e.get("ts"))
            if death is not None and departure.kind == EXPIRED and not members.process_ran_on(departure.who, e.get("ts")):
                death = None     # its process ended too (a shutdown, a crash): the expiry is that end's, as before
            if death is not None:
                # Its StreamThread died: its consumer left on the way out (3.0+ unsubscribes), or, sending no
                # LeaveGroup, was removed one session later; no close on purpose, no lost session either.
                departure.kind = THREAD if death[1] else DIED
        if departure is not None:
            at = seen_departures.get(departure.who)
            if at is None:
                seen_departures[departure.who] = len(change.departures)
                change.departures.append(departure)
            elif departure.kind not in (LEAVE, LOST) and (change.departures[at].kind == LEAVE or
                                              _STRENGTH.index(departure.kind) < _STRENGTH.index(change.departures[at].kind)):
                change.departures[at] = departure      # a LeaveGroup without a reason takes the one another line gives
            continue
        arrival = _arrival(timeline, e)
        if arrival and all(arrival != a for a, _ in change.arrivals):
            change.arrivals.append((arrival, e))
        if e.get("component") != "broker":
            writer = timeline.who(e)
            if writer and writer not in change.writers:
                change.writers.append(writer)
        if name == EV.PARTITIONS_LOST and e.get("reason") and e.get("component") != "broker":
            change.lost_by.add(timeline.who(e) or "?")
        if name == EV.ASSIGNMENT_RECEIVED and e.get("component") != "broker":
            if _listed(e, "revoked"):
                change.revoked_by.add(timeline.who(e) or "?")
            if _listed(e, "added"):
                if _listed(e, "owned") == "":
                    change.first_assignment.add(timeline.who(e) or "?")
                else:
                    change.added_to.add(timeline.who(e) or "?")
        elif name == EV.GROUP_TARGET_ASSIGNMENT:
            change.target = {timeline.directory.get(m) or m
                             for m in assignment_maps.members((e.get("attrs") or {}).get("target"))}
        elif name in (EV.STREAMS_FOLLOWUP_TRIGGERED,) or (name in (EV.JOIN_REQUESTED, EV.REBALANCE_PREPARE, EV.MEMBER_JOIN)
                                                         and _says_followup(e)):
            change.followup_trigger = change.followup_trigger or e
        elif name == EV.REBALANCE_PREPARE and "static member" in (e.get("reason") or ""):
            change.static_update = e
    # A member that left cannot also be arriving in the same rebalance under the same name unless
    # it came back (a quick restart): keep both, the pairing below reads them in order.
    return change


def _started_here(timeline: GroupTimeline, members: Members, r: Rebalance, change: Change, seen: set[str]) -> None:
    """A member whose own log shows its process starting and that no earlier rebalance had, and that takes part
    in this rebalance (joins, syncs, gets an assignment): it arrives here (a 2.x Streams thread logs no JoinGroup
    at INFO; its start and its first assignment say it). A process that started in this window but whose own log
    first asks to join after it (its configuration, its coordinator found, then the window ends) joins the next
    rebalance, which it begins: it did not cause this one."""
    for who in change.writers:
        member = members.get(who)
        if who in seen or member is None or not member.starts or all(who != a for a, _ in change.arrivals) is False:
            continue
        if r.start is None or member.starts[0] > (r.end or r.start):
            continue
        joins = _own_joins(timeline).get(who)
        if joins and joins[0]["ts"] > (r.end or r.start):   # its own log first asks to join after this window
            continue
        change.arrivals.append((who, {}))


def _came_back_here(timeline: GroupTimeline, members: Members, r: Rebalance, change: Change) -> None:
    """A member that left on purpose in this rebalance, whose own log then shows its process starting again and
    joining this very generation ("Successfully joined group"), came back within it (a quick restart). Its return
    is often logged by no arrival line: a member joining a group already PreparingRebalance makes the coordinator
    log no "Adding new member" (maybePrepareRebalance does nothing then), a 2.4 broker logs the new member id at
    DEBUG only, and a 2.4 client's "Successfully joined group with generation 5" names no member id. Without
    this, each such restart of a rolling restart or an upgrade reads as a member leaving for good (scale-in), and
    the other members' restarts as one member restarting again and again (restart-loop). (A KIP-848 restart whose
    process starts within the leave's epoch joins in the next epoch: that epoch is its return, as before.)"""
    for d in change.departures:
        if d.kind not in (PLANNED, LEAVE) or any(d.who == a for a, _ in change.arrivals):
            continue
        member = members.get(d.who)
        start = member.started_between(d.event.get("ts"), r.end) if member is not None else None
        if start is None:
            continue
        back = next((e for e in r.events if e["event"] == EV.JOIN_SUCCESS and e.get("component") != "broker"
                     and e["ts"] >= start and timeline.who(e) == d.who), None)
        if back is not None:
            change.arrivals.append((d.who, back))


_JOINING = frozenset({EV.JOIN_START, EV.JOIN_REQUESTED, EV.JOIN_SUCCESS})


def _says_followup(event: dict) -> bool:
    reason = event.get("reason") or ""
    found = classify_reason(reason)
    return found is not None and found.kind in ("followup", "cooperative-revocation")


def _departure(timeline: GroupTimeline, members: Members, e: dict) -> Departure | None:
    name = e["event"]
    reason = e.get("reason") or ""
    if name == EV.POLL_TIMEOUT:
        return Departure(timeline.who(e) or "?", POLL, e)
    if name in (EV.LEAVE_REQUEST, EV.MEMBER_LEAVE):
        who = timeline.who(e) or "?"
        kind = _leave_kind(reason)
        rejoin = _rejoined_in_process(timeline, members, who, e.get("ts")) if kind == LEAVE else None
        return Departure(who, POLL, e, rejoined=rejoin) if rejoin is not None else Departure(who, kind, e)
    if name in (EV.MEMBER_EXPIRED, EV.SESSION_TIMEOUT):
        return Departure(timeline.who(e) or "?", EXPIRED, e)
    if name == EV.MEMBER_FENCED:
        kind = POLL if "rebalance timeout" in reason or "failed to join" in reason else FENCED
        return Departure(timeline.who(e) or "?", kind, e)
    if name in (EV.STREAMS_THREAD_REPLACED, EV.STREAMS_THREAD_DIED):
        return Departure(timeline.who(e) or "?", THREAD, e)
    if name == EV.JOIN_REQUESTED and e.get("component") != "broker" and unknown_member(reason):
        return Departure(timeline.who(e) or "?", LOST, e)
    if name == EV.REBALANCE_PREPARE and e.get("member"):
        found = classify_reason(reason)
        if found is None:
            return None
        who = timeline.directory.get(e["member"]) or timeline.who(e) or "?"
        if found.kind == "heartbeat-expiration":
            return Departure(who, EXPIRED, e)
        if found.kind == "poll-timeout":
            return Departure(who, POLL, e)
        if found.kind == "leave":
            return Departure(who, _leave_kind(reason), e)
    return None


def _rejoined_in_process(timeline: GroupTimeline, members: Members, who: str, at) -> dict | None:
    """A LeaveGroup that states no reason, after which the same process joins again: no process start (its log
    shows its starts) and no close between. A consumer that is still running sends LeaveGroup on its own for one
    reason, its poll loop overrunning max.poll.interval.ms (aiokafka's heartbeat task then says only "LeaveGroup
    request succeeded"); a close, an unsubscribe or a restart would have been logged. Without a start line in
    its log (librdkafka at its default level) a restart cannot be told from this, and nothing is concluded.
    Returns the line of that rejoin."""
    member = members.get(who)
    if member is None or not member.starts or at is None:
        return None
    back = _own_joins(timeline).get(who)
    if not back:
        return None
    after = bisect_right(back, at, key=lambda e: e["ts"])
    again = back[after] if after < len(back) else None
    if again is None or member.started_between(at, again["ts"]) is not None or member.closed_between(at, again["ts"]):
        return None
    return again


def _own_joins(timeline: GroupTimeline) -> dict[str, list[dict]]:
    """Each member's own lines saying it joins, in time order, computed once per timeline."""
    cache = getattr(timeline, "_own_joins", None)
    if cache is None:
        cache = {}
        for e in timeline.events:
            if e["event"] in _JOINING and e.get("component") != "broker" and e.get("ts") is not None:
                cache.setdefault(timeline.who(e) or "?", []).append(e)
        for joins in cache.values():
            joins.sort(key=lambda e: e["ts"])
        timeline._own_joins = cache
    return cache


def unknown_member(reason: str | None) -> bool:
    """The reason a member rejoins is that the coordinator does not know its member id (UNKNOWN_MEMBER_ID, in any
    client's words: Java's "encountered UNKNOWN_MEMBER_ID from HEARTBEAT response", brod's unknown_member_id)."""
    return bool(reason) and (kafka_name(reason) == "UNKNOWN_MEMBER_ID" or "UNKNOWN_MEMBER_ID" in reason)


def _leave_kind(reason: str) -> str:
    if "poll timeout" in reason or "poll interval" in reason:
        return POLL
    if any(words in reason for words in CLOSE_REASONS):
        return PLANNED
    return LEAVE


def _arrival(timeline: GroupTimeline, e: dict) -> str | None:
    name = e["event"]
    reason = e.get("reason") or ""
    if name == EV.MEMBER_JOIN:
        attrs = e.get("attrs") or {}
        if attrs.get("replaced") or attrs.get("existing_member_id"):
            return None      # a static member taking its place back: no new member
        if (e.get("state") or "") in ("PreparingRebalance",) and not e.get("member"):
            return None
        return timeline.who(e)
    if name == EV.REBALANCE_PREPARE and e.get("member") and "Adding new member" in reason:
        return timeline.directory.get(e["member"]) or timeline.who(e)
    if name == EV.JOIN_REQUESTED and any(marker in reason for marker in _NEW_MEMBER):
        return timeline.who(e)
    return None


def _decide(timeline: GroupTimeline, members: Members, r: Rebalance, change: Change, previous: Rebalance | None,
            present: set[str], gone: dict, forming: bool) -> None:
    strongest = change.strongest()
    followup = _followup_kind(r, change, previous, timeline)
    if followup and not strongest and not _new_arrivals(change, present, gone):
        _set(r, _FOLLOWUP_OPERATION[followup], members,
             _trigger_name(timeline, change.followup_trigger) or r.trigger_member or (previous.culprit and None))
        if r.culprit is None and previous is not None:
            r.culprit, r.culprit_name = previous.culprit, previous.culprit_name
        r.cause_index = previous.index if previous is not None else None
        return
    if strongest is not None:
        operation = _departure_operation(members, strongest, r)
        if strongest.kind == LOST and strongest.who in change.lost_by:
            # Told its member id is unknown and its own log gives its partitions up as lost: the group moved on
            # without it, and no removal of it is logged (a removal would be the strongest departure).
            operation = "missed-rebalance"
        _set(r, operation, members, strongest.who)
        back = {who for who, _ in change.arrivals}
        joined = {who for who, e in change.arrivals if e}     # not only its process starting (_started_here)
        for d in change.departures:
            if d.who in joined or d.kind == LOST:
                continue     # a quick restart: it left and came back within this rebalance (a LOST line is a rejoin)
            gone[d.who] = (r, d)
            if d.kind == THREAD and node_of(d.who):
                gone[("node", node_of(d.who))] = (r, d)
        if strongest.who in back and (strongest.kind == PLANNED or strongest.kind == LEAVE
                                      and _restarted_since(members, strongest)):
            # It left and its process came back within this rebalance (a KIP-848 epoch lasts until every member
            # reconciled: a quick restart's return falls in the epoch its leave opened): a restart.
            _set(r, "rolling-restart", members, strongest.who)
        return
    arrivals = [who for who, _ in change.arrivals if who]
    # Members of the generation that were not in the one before (none at the forming: every member is new then;
    # after every member was removed, those coming back).
    joined_new = [who for who in r.member_ids if who not in present and (present or gone)]
    returning = [who for who in arrivals + joined_new if who in gone]
    replacing = [who for who in arrivals + joined_new if who not in gone and node_of(who)
                 and ("node", node_of(who)) in gone]
    if replacing and not returning:
        # The new StreamThread's consumer of a client whose thread died and was replaced.
        where, _ = gone.pop(("node", node_of(replacing[0])))
        _set(r, "thread-replacement", members, replacing[0])
        r.cause_index = where.index
        return
    if returning:
        where, how = gone.pop(returning[0])
        _set(r, where.operation or "unknown", members, returning[0])
        r.cause_index = where.index
        for who in returning[1:]:
            gone.pop(who, None)
        return
    if change.static_update is not None:
        _set(r, "static-restart", members, timeline.who(change.static_update))
        return
    since = _stable_since(previous)
    restarted = [who for who in arrivals if who in present and who not in gone and members.get(who) is not None
                 and members.get(who).started_between(since, r.end) is not None]
    if restarted and not returning:
        who = restarted[0]
        if _closed_before_restart(members, who, members.get(who).started_between(since, r.end)):
            # Its previous process logged its graceful close or shutdown, then a new process joined: a restart on
            # purpose. A Kafka Streams consumer sends no LeaveGroup on close (internal.leave.group.on.close=false),
            # so its old member id stays in the group until the coordinator expires it, and no departure is logged
            # before its return.
            _set(r, "rolling-restart", members, who)
            return
        # A new member id for a member still in the group: its process started again without leaving.
        _set(r, "crash", members, who)
        return
    dropped = [who for who in arrivals if who in present and who not in gone and who in change.lost_by]
    if dropped:
        # A member of the group that left by no logged departure and whose own log says the group moved on without
        # it (generation reset, partitions lost): it missed a rebalance, and rejoins as a new member.
        _set(r, "missed-rebalance", members, dropped[0])
        return
    new = arrivals or joined_new
    if new:
        _set(r, "initial-join" if forming and _forms(r, present, new, change, timeline, members) else "scale-out",
             members, new[0])
        return
    if followup:
        _set(r, _FOLLOWUP_OPERATION[followup], members, r.trigger_member)
        r.cause_index = previous.index if previous is not None else None
        return
    if heartbeat_protocol(r.protocol) and change.first_assignment and previous is not None \
            and previous.culprit_name in change.first_assignment and not change.revoked_by:
        # KIP-848: a member's first assignment completes the join the previous epoch started.
        _set(r, previous.operation or "unknown", members, previous.culprit_name)
        r.cause_index = previous.index
        return
    if heartbeat_protocol(r.protocol) and (change.revoked_by or change.added_to) and not change.departures:
        # KIP-848 seen from a member only: the coordinator moved partitions away from it (another member
        # arrived) or gave it more (another member left); its log does not say who.
        _set(r, "scale-out" if change.revoked_by else "scale-in", members, None)
        return
    if heartbeat_protocol(r.protocol) and r.generation is None and previous is not None \
            and (previous.generation is not None or previous.cause_index is not None) \
            and not change.departures and not change.arrivals \
            and not any(e.get("component") == "broker" for e in r.events):
        # KIP-848/1071/932: members reconcile the coordinator's target assignment on their own, in steps (revoke,
        # then the others take what was revoked), and their logs say so after the epoch was bumped. A window of
        # members' lines that names no epoch, with no member leaving or arriving and no coordinator line, is the
        # reconciliation of the last epoch the coordinator bumped, not a rebalance of its own.
        _set(r, previous.operation or "unknown", members, previous.culprit_name)
        r.cause_index = previous.cause_index if previous.generation is None else previous.index
        change.reconciles = True
        return
    kind = r.trigger_kind
    if kind == "enforced":
        reason = r.trigger or ""
        _set(r, "config-mismatch" if "Forcing rebalance" in reason or "config" in reason else "enforced",
             members, r.trigger_member)
        return
    if kind in _TRIGGER_OPERATION:
        _set(r, _TRIGGER_OPERATION[kind], members, r.trigger_member)
        return
    if kind == "new-member":
        new = [r.trigger_member] if r.trigger_member else []
        _set(r, "initial-join" if forming and _forms(r, present, new, change, timeline, members) else "scale-out",
             members,
             r.trigger_member)
        return
    if previous is None and r.generation == 1 and r.outcome != FAILED and not heartbeat_protocol(r.protocol) \
            and not change.departures:
        # Generation 1 is the first the coordinator ever gave the group (classic generations count up from the
        # group's creation, an emptied group's too): the group forming, though no line here says who arrived (the
        # members' own lines naming no member id, without the coordinator's log).
        _set(r, "initial-join", members, r.trigger_member)
        return
    _set(r, "unknown", members, r.trigger_member)
    if previous is None and r.events and r.trigger_kind is None \
            and not any(e["event"] == EV.REBALANCE_PREPARE for e in r.events) and _logs_begin_in(timeline, r):
        r.truncated = True       # the logs begin in the middle of it


# A member's lines that say a rebalance is already under way (what began it is before them), and its revocation
# before it rejoins (eager: onJoinPrepare).
_UNDER_WAY = frozenset({EV.HEARTBEAT_FAILED, EV.JOIN_REQUESTED, EV.REBALANCE_NOTICED, EV.PARTITIONS_REVOKED})


def _logs_begin_in(timeline: GroupTimeline, r: Rebalance) -> bool:
    """The group's logs begin in the middle of rebalance r: nothing of the group comes before r's first line but
    members saying a rebalance is under way ('Attempt to heartbeat failed since group is rebalancing',
    'Request joining group due to: group is already rebalancing') and revoking their partitions to rejoin."""
    first = r.events[0]
    for e in timeline.events:
        if e is first:
            return True
        if e["event"] not in _UNDER_WAY or e.get("component") == "broker":
            return False
    return False


def _stable_since(previous: Rebalance | None) -> datetime | None:
    """When the previous rebalance gave the group its generation (the coordinator's 'Stabilized group', else a
    member's 'Successfully joined'), else its last line. A process that starts after that and joins here is a
    restart, though the previous rebalance's members may still log its end (a SyncGroup failing because this one
    began) after the start."""
    if previous is None:
        return None
    settled = [e["ts"] for e in previous.events if e["event"] in (EV.REBALANCE_STABILIZED, EV.JOIN_SUCCESS)
               and e.get("ts") is not None]
    return min(settled) if settled else previous.end


def _new_arrivals(change: Change, present: set[str], gone: dict) -> bool:
    return any(who and who not in present and who not in gone for who, _ in change.arrivals)


def _forms(r: Rebalance, present: set[str], arrivals: list[str], change: Change,
           timeline: GroupTimeline | None = None, members: Members | None = None) -> bool:
    """The group forms here: it had no generation before, or every member of the one it reaches
    arrived in it (the members' own logs start here), or, under a heartbeat protocol (KIP-848, 1071, 932: no
    initial rebalance delay gathers the first joins, each bumps the epoch), every member arriving was launched
    before the group's first rebalance ended: processes started together form the group together."""
    # The coordinator's old generation (classic: "Preparing to rebalance ... with old generation N"); a heartbeat
    # protocol's round starts from the epoch before its bump, which says nothing of who is new.
    old = None if heartbeat_protocol(r.protocol) else r.old_generation
    if old == 0:
        return True
    if heartbeat_protocol(r.protocol) and timeline is not None and members is not None and arrivals \
            and timeline.rebalances and timeline.rebalances[0] is not r:
        first = timeline.rebalances[0]
        launched = [members.get(who) for who in arrivals]
        if first.end is not None and all(m is not None and m.starts and m.starts[0] <= first.end for m in launched):
            return True
    if old is not None:
        return False
    if present:
        return False
    if r.generation is not None and r.generation <= 1:
        return True
    participants = r.member_ids or change.writers
    return bool(participants) and set(participants) <= set(arrivals)


def _followup_kind(r: Rebalance, change: Change, previous: Rebalance | None, timeline: GroupTimeline) -> str | None:
    """The followup this rebalance is, by the protocol's own lines (never by how soon it came)."""
    if previous is not None and previous.followup and (change.followup_trigger is not None
                                                       or r.trigger_kind in (None, "followup", "metadata-change")):
        return previous.followup
    # Who revoked in the round before: by the generation each member's own log last joined or synced, since its
    # 'Updating assignment' line may come after that round's window closed (a member that processes a batch before
    # its poll thread handles the SyncGroup response) and land between two rebalances.
    revokers = _revoked_in(timeline, previous) if previous is not None and previous.protocol == "cooperative" else None
    if revokers:
        if change.followup_trigger is not None or (r.trigger_member and r.trigger_member in revokers) \
                or r.trigger_kind in (None, "metadata-change"):
            return "cooperative"
    if change.followup_trigger is not None:
        found = classify_reason(change.followup_trigger.get("reason") or "")
        if found is not None and found.kind == "cooperative-revocation":
            return "cooperative"
        # No trigger pattern has "probing" in its fixed words: a line says it in the reason it gives.
        return "probing" if "probing" in (change.followup_trigger.get("reason") or "").lower() else "cooperative"
    return None


def _revoked_in(timeline: GroupTimeline, r: Rebalance) -> set[str]:
    """The members that revoked partitions in rebalance r: by its generation when it has one, and by its window."""
    if r.generation is not None:
        # once per timeline state (it grows in follow mode): the classification asks for every rebalance
        key, cache = getattr(timeline, "_revoked_by_generation", (None, None))
        if key != len(timeline.events) or cache is None:
            cache = _revokers_by_generation(timeline)
            timeline._revoked_by_generation = (len(timeline.events), cache)
        # and by its window too: a client whose sync line states no generation (franz-go) revokes within it
        return cache.get(r.generation, set()) | _revokers(timeline).get(r.index, set())
    return _revokers(timeline).get(r.index, set())


def _revokers(timeline: GroupTimeline) -> dict[int, set[str]]:
    cache = getattr(timeline, "_revokers", None)
    if cache is None:
        cache = {}
        for r in timeline.rebalances:
            who = set()
            synced = set()
            for e in r.events:
                if e.get("component") == "broker":
                    continue
                name = timeline.who(e) or "?"
                if _revokes(e):
                    who.add(name)
                elif e["event"] in (EV.SYNC_SUCCESS, EV.JOIN_SUCCESS):
                    synced.add(name)
                elif e["event"] == EV.PARTITIONS_REVOKED and e.get("partitions") and name in synced:
                    # Revoking partitions after its own sync of this generation (franz-go's "calling onRevoke at the
                    # end of a session; ... lost: map[orders:[5]]"): the cooperative protocol's first round.
                    who.add(name)
            if who:
                cache[r.index] = who
        timeline._revokers = cache
    return cache


def departure_operation(members: Members, d: Departure) -> str:
    """The operation a departure is (a lone one too: an expiry that led to no rebalance in the logs)."""
    return _departure_operation(members, d, None)


def _departure_operation(members: Members, d: Departure, r: Rebalance | None) -> str:
    if d.kind == POLL:
        return "poll-timeout"
    if d.kind in (FENCED, LOST):
        return "fencing"
    if d.kind == THREAD:
        return "thread-replacement"
    if d.kind == DIED:
        return "crash"
    if d.kind == MOVED:
        return "coordinator-move"
    if d.kind == AWAY:
        return "session-timeout"
    if d.kind in (PLANNED, LEAVE):
        return "scale-in" if d.kind == PLANNED else "unknown"
    # Removed on session timeout: planned when the member logged its shutdown first (a Streams
    # instance does not send LeaveGroup); a static member away that long is the harm static
    # membership exists to avoid; a member whose own log had already ended, or whose process
    # started again meanwhile, crashed; one whose log went on lost its session while alive.
    member = members.get(d.who)
    if member is None:
        return "session-timeout"
    at = d.event["ts"]
    if member.static:
        return "session-timeout"
    if _shut_down(members, d):
        d.kind = PLANNED
        return "scale-in"
    if member.restarted_after(member.last_own_before(at)) or member.alive_after(at) is False:
        return "crash"
    return "session-timeout"


def _closed_before_restart(members: Members, who: str, start) -> bool:
    """The process of `who` before the one that started at `start` logged its graceful close or shutdown (its own,
    or its Streams client's)."""
    member = members.get(who)
    if member is None or start is None:
        return False
    began = max((ts for ts in member.starts if ts < start), default=None)
    return any((began is None or c >= began) and c <= start for c in members.closes_of(who))


def _restarted_since(members: Members, d: Departure) -> bool:
    """A member that left (a LeaveGroup whose reason is not logged, e.g. KIP-848's `left the consumer group`)
    and whose own log then shows its process starting again: it closed and was restarted."""
    member = members.get(d.who)
    return member is not None and member.started_between(d.event.get("ts"), None) is not None


def _shut_down(members: Members, d: Departure) -> bool:
    """A dynamic member removed on session timeout whose process had logged its graceful close or shutdown
    first: it left on purpose. A Kafka Streams consumer sends no LeaveGroup on close
    (internal.leave.group.on.close=false), so the coordinator removing it on heartbeat expiration one
    session.timeout.ms later is how every Streams instance leaves a rolling restart, an upgrade or a scale-in."""
    member = members.get(d.who)
    if member is None or member.static:
        return False
    return members.shut_down(d.who, d.event.get("member"), d.event.get("ts"))


def _trigger_name(timeline: GroupTimeline, event: dict | None) -> str | None:
    if event is None:
        return None
    if event.get("component") == "broker" and event.get("member"):
        return timeline.directory.get(event["member"]) or timeline.who(event)
    return timeline.who(event)


def _set(r: Rebalance, operation: str, members: Members, who: str | None) -> None:
    r.operation = operation
    r.verdict = verdict_of(operation)
    if who:
        r.culprit = members.culprit(who)
        r.culprit_name = who


# -- across rebalances -------------------------------------------------------------------------------
def _pair_planned(timeline: GroupTimeline, changes: dict[int, Change], members: Members) -> list[tuple]:
    """Planned departures are a restart when the same member comes back before any other member left or
    arrived (one at a time: a rolling restart), a scale-in and a later scale-out when the group changed
    meanwhile (autoscaling), a deploy when others arrive in its place. Returns the restarts, as
    (time, member, rebalances)."""
    returns = {}
    for r in timeline.rebalances:
        if r.cause_index is not None and r.culprit is not None:
            returns.setdefault(r.cause_index, r)
    leavers = {d.who for change in changes.values() for d in change.departures}
    # A deploy's new members stay: an arrival of a member that also leaves in the window replaces no one.
    # A StreamThread added to a running client (KafkaStreams#addStreamThread) took no one's place either.
    unmatched = [r for r in timeline.rebalances if r.operation == "scale-out" and r.culprit_name not in leavers
                 and not _thread_added(timeline, members, r)]
    restarts = []
    for r in timeline.rebalances:
        d = changes[r.index].strongest()
        if d is None or d.kind not in (PLANNED, LEAVE):
            continue
        if r.operation == "rolling-restart" and any(who == d.who for who, _ in changes[r.index].arrivals):
            restarts.append((r.start, d.who, (r,)))        # it left and came back within this rebalance
            continue
        if r.operation not in ("scale-in", "unknown"):
            continue
        back = returns.get(r.index)
        if back is not None and not _interleaved(timeline, changes, r, back, d.who):
            for one in (r, back):
                one.operation, one.verdict = "rolling-restart", "expected"
            restarts.append((r.start, d.who, (r, back)))
        elif back is not None and d.kind == PLANNED:
            # Away while the group changed: it left for good then, and joined again later (autoscaling).
            back.operation, back.verdict, back.cause_index = "scale-out", verdict_of("scale-out"), None
        elif d.kind == PLANNED:
            arrival = next((a for a in unmatched if a.culprit is None or _name(a) != d.who), None)
            if arrival is not None:
                unmatched.remove(arrival)
                r.operation, r.verdict = "deploy", "expected"
                arrival.operation, arrival.verdict = "deploy", "expected"
        elif d.kind == LEAVE and back is None:
            # A LeaveGroup that states no reason (librdkafka and other non-Java clients never do; its poll timeout
            # would have made this departure POLL from the client's own MAXPOLL line) and the next change of the
            # group is a new member taking the place: a member replaced, as a restart or a deploy does it. Which
            # process came back cannot be told (a new member id, a shared client.id), so it is not a restart of one.
            arrival = next((a for a in unmatched if a.index > r.index), None)
            if arrival is not None and not _interleaved(timeline, changes, r, arrival, d.who):
                unmatched.remove(arrival)
                r.operation, r.verdict = "deploy", "expected"
                arrival.operation, arrival.verdict = "deploy", "expected"
    return restarts


def _interleaved(timeline: GroupTimeline, changes: dict[int, Change], left: Rebalance, back: Rebalance,
                 who: str) -> bool:
    """Another member (not a thread of the same Streams client) left or arrived between a member's departure
    and its return."""
    own = node_of(who) or who
    before: set[str] | None = None
    for r in timeline.rebalances:
        if not left.index <= r.index < back.index:
            continue
        if r.member_ids:
            # The generations say it too when no departure or arrival line does (members' logs only, where a
            # member that started again logs no JoinGroup handshake of its own at INFO).
            now = {node_of(m) or m for m in r.member_ids} - {own}
            if before is not None and now != before:
                return True
            before = now
        if r.index == left.index:
            continue
        change = changes[r.index]
        if any((node_of(d.who) or d.who) != own for d in change.departures) \
                or any(a and (node_of(a) or a) != own for a, _ in change.arrivals):
            return True
    return False


def _restart_loops(timeline: GroupTimeline, changes: dict[int, Change], members: Members,
                   restarts: list[tuple]) -> None:
    """A member (or a Streams client's threads) restarting again and again while the others do not: its
    restarts follow one another with no other member restarting in between, and it restarted more often
    than some other member. A rolling restart restarts every member once per round, in turn; a two-bounce
    upgrade twice, in turn; neither is a loop. Two kinds of restarts, each judged on its own: the planned
    ones paired above (left on purpose, came back), and the process starts that followed a process which
    died without closing (a crash loop, an orchestrator killing it). One planned restart and one crash are
    an operation and a crash, not a loop."""
    crashes: dict[str, list] = {}
    predecessors: dict[str, Rebalance] = {}
    crashed = []
    for member in members:
        starts = members.restarts_without_close(member.identity)
        first = _unclaimed_predecessor(timeline, changes, members, member)
        if first is not None:
            predecessors[member.identity] = first
            starts = [member.starts[0]] + starts
        for start in starts:
            crashes.setdefault(member.identity, []).append(start)
            crashed.append((start, member.identity, ()))
    logged = {node_of(m.identity) or m.identity for m in members if m.own_lines}
    planned_loops = _looping(restarts, logged)
    crash_loops = _looping(crashed, logged)
    for at, who, rebalances in restarts:
        if (node_of(who) or who) in planned_loops:
            for one in rebalances:
                _set(one, "restart-loop", members, who)
    for who, starts in crashes.items():
        if (node_of(who) or who) in crash_loops:
            _mark_crash_loop(timeline, changes, members, who, starts, predecessors.get(who))


def _looping(restarts: list[tuple], logged: set[str]) -> set[str]:
    """The members (Streams clients: their threads restart together, once) whose restarts make a loop."""
    restarts = sorted((r for r in restarts if r[0] is not None), key=lambda r: r[0])
    key = [node_of(who) or who for _, who, _ in restarts]
    counts: dict[str, int] = {}
    for k in set(key):
        threads = {who for (_, who, _), kk in zip(restarts, key) if kk == k}
        counts[k] = max(sum(1 for _, who, _ in restarts if who == one) for one in threads)
    looping = set()
    for k, mine in counts.items():
        others = [counts.get(o, 0) for o in logged if o != k]
        in_a_row = any(a == b == k for a, b in zip(key, key[1:]))
        if mine >= 2 and in_a_row and (not others or min(others) < mine):
            looping.add(k)
    return looping


def _unclaimed_predecessor(timeline: GroupTimeline, changes: dict[int, Change], members: Members, member):
    """A member whose log begins with a process start: the rebalance, up to the one it first joins, that
    removed on session timeout a member id of the same client.id that no log claims (the latest such): its
    previous process, which died before its log begins. None when there is none."""
    if not member.starts or not member.own_times or member.own_times[0] < member.starts[0] or not member.client:
        return None
    found = None
    for r in timeline.rebalances:
        for d in changes[r.index].departures:
            gone = members.get(d.who)
            if d.kind == EXPIRED and d.event.get("member") and (gone is None or not gone.own_lines) \
                    and canonical(client_of_member(d.event["member"])) == canonical(member.client):
                found = r
        if any(e.get("component") != "broker" and timeline.who(e) == member.identity for e in r.events):
            break
    return found


def _mark_crash_loop(timeline: GroupTimeline, changes: dict[int, Change], members: Members, who: str,
                     starts: list, predecessor: Rebalance | None) -> None:
    """The rebalances of a crash-looping member: each removal of its dead process (`predecessor`: that of
    the process before its log begins) and each return of the new one (the first rebalance with its own
    lines after each start, where it joins)."""
    departure: Rebalance | None = None
    pending = sorted(starts)
    for r in timeline.rebalances:
        # (FENCED: under the heartbeat protocols the coordinator fences the dead process when its session expires)
        left = r is predecessor or any(d.who == who and d.kind in (EXPIRED, FENCED, LEAVE, PLANNED)
                                       for d in changes[r.index].departures)
        crashed = r.operation == "crash" and r.culprit_name == who
        returned = bool(pending) and r.start is not None and any(
            e.get("component") != "broker" and timeline.who(e) == who and e["ts"] >= pending[0] for e in r.events)
        if returned:
            while pending and pending[0] <= (r.end or r.start):
                pending.pop(0)
        if left or crashed or returned:
            _set(r, "restart-loop", members, who)
            if returned and not left and departure is not None:
                r.cause_index = departure.index      # the return of the process whose removal that was
            departure = r if left and not returned else None if returned else departure


def _name(r: Rebalance) -> str | None:
    return r.culprit_name


def _thread_added(timeline: GroupTimeline, members: Members, r: Rebalance) -> bool:
    """The member whose arrival this rebalance is, is a StreamThread added to a running Streams client: another
    thread of that client was in a generation completed since the client's process last started. (A process
    started again under the same process id, kept in its state directory, has threads of the same names: they
    join only after its start.)"""
    name = _name(r)
    node = node_of(name) if name else None
    if not node or r.start is None:
        return False
    starts = [s for other, member in members.by_identity.items()       # its own consumer's start is the add's
              if other != name and (other == node or node_of(other) == node) for s in member.starts if s <= r.start]
    since = max(starts, default=None)
    return any(q.completed and q.end is not None and q.end < r.start and (since is None or q.end > since)
               and any(who != name and node_of(who) == node for who in q.member_ids)
               for q in timeline.rebalances)


def _inherit(timeline: GroupTimeline) -> None:
    """A failed attempt is as expected as what interrupted it. A rebalance whose own trigger is known (a
    followup, a member joining or timing out) keeps it and the verdict it was given: why it began is its
    operation, that it did not complete is its outcome (a followup of a never-converging chain interrupted by a
    scale-out is still harmful; a deploy's round interrupted by the next member is still expected). (A followup
    stays expected: it is the protocol working; the chain it belongs to is its cause_index.)"""
    rebalances = timeline.rebalances
    for position in range(len(rebalances) - 1, -1, -1):
        r = rebalances[position]
        if r.outcome != FAILED or r.operation not in (None, "unknown", "failed-attempt"):
            continue
        successor = rebalances[position + 1] if position + 1 < len(rebalances) else None
        r.operation = "failed-attempt"
        r.verdict = successor.verdict if successor is not None else "unknown"
        if r.culprit is None and successor is not None:
            r.culprit, r.culprit_name = successor.culprit, successor.culprit_name
