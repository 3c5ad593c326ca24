"""When static members (group.instance.id) were away, and which removals on session timeout were theirs.

A static member that stops (a restart, a deploy) sends no LeaveGroup: the coordinator keeps its
partitions for it until session.timeout.ms passes without a heartbeat. Back in time, it takes its
place again without a rebalance; back later, the coordinator has removed it on session timeout (a
rebalance) and it joins as a new member (another). Its own log tells when it went away (a close,
or its last line before a new process starts) and when it came back (the new process's start).

The coordinator's removal names a member id that the member's own log may never state (it joined
before the logs begin). A removal during a static member's absence whose member id no client line
claims, and whose client.id part is that member's, is that member's: `resolve` records it in the
timeline's directory so that every reading names it alike. Broker-only logs tell a static member by
the group instance id the coordinator names when it joins; its absence then runs from its removal
to the join of the same group.instance.id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import regex

from ..timeline import identity
from ..timeline.model import GroupTimeline
from .members import Member, Members, static_instance
from ..core import eventnames as EV

_CLOCKS = timedelta(seconds=1)      # clocks of different hosts, once corrected, still disagree by this much


@dataclass
class Absence:
    """One time a static member was away: from its last sign of life to its return."""

    member: str                       # its identity
    instance: str
    left: datetime | None             # its close, or its last own line before the new process
    back: datetime | None             # the new process's start (or the coordinator seeing it join again)
    closed: bool = False              # it logged a close or shutdown
    heartbeat: bool = False           # left is its last heartbeat (removal - session.timeout.ms), after its last line
    own_log: bool = True              # its own log tells the absence (else only the coordinator does)
    expiries: list[dict] = field(default_factory=list)   # the coordinator's removals of it meanwhile
    session_ms: int | None = None

    @property
    def away_ms(self) -> int | None:
        if self.left is None or self.back is None:
            return None
        return int((self.back - self.left).total_seconds() * 1000)

    @property
    def too_long(self) -> bool:
        """Away longer than session.timeout.ms: the coordinator removed it, or its own log says it closed
        and came back later than that."""
        if self.expiries:
            return True
        return self.closed and self.away_ms is not None and self.session_ms is not None \
            and self.away_ms > self.session_ms


class Absences(list):
    """The absences of a group's static members (a list), and which removals they explain."""

    def explains(self, event: dict) -> Absence | None:
        """The absence a removal on session timeout belongs to: the expiry line itself, or the coordinator's
        "removing member X on heartbeat expiration" of the same moment."""
        for absence in self:
            for e in absence.expiries:
                if e is event or (event.get("member") and e.get("member") == event["member"]
                                  and event.get("ts") is not None and abs(e["ts"] - event["ts"]) < _CLOCKS):
                    return absence
        return None

    @property
    def too_long(self) -> list[Absence]:
        return [a for a in self if a.too_long]


def resolve(timeline: GroupTimeline, members: Members) -> Absences:
    """The static members' absences; removals of theirs under unknown member ids are named after them."""
    absences = Absences()
    expiries = [e for e in timeline.events if e["event"] == EV.MEMBER_EXPIRED and e.get("component") == "broker"]
    stops = _stops(timeline) if any(m.static for m in members) else {}
    for member in list(members):
        if not member.static:
            continue
        if member.own_lines:
            absences += _own_absences(member, stops.get(member.identity, []))
    # Removals of member ids no member's own log claims (only the coordinator names them).
    unclaimed = [e for e in expiries if e.get("member") and not _own_log(members, timeline.who(e))]
    joins, instance_joins = _broker_joins(timeline) if absences else ({}, {})
    nth: dict[str, int] = {}
    for absence in sorted(absences, key=lambda a: (a.member, a.back is None, a.back or a.left)):
        member = members.get(absence.member)
        k = nth[absence.member] = nth.get(absence.member, -1) + 1
        for e in _expiries_of(timeline, member, absence, expiries, unclaimed, joins, instance_joins, k):
            if e in unclaimed:
                _claim(timeline, members, member, e["member"])
                unclaimed.remove(e)
            absence.expiries.append(e)
        if absence.expiries and not absence.closed and absence.session_ms:
            # No close logged (before 3.0 a static member's close says only "Revoke previously assigned
            # partitions"): it stopped after its last own line and after its last heartbeat, one session timeout
            # before the coordinator removed it. The later bounds it. The heartbeat is on the coordinator's clock,
            # which may be minutes or a zone off the member's when no anchor checked the two (all-static groups
            # before 3.0 log none): it counts only on one clock with the member's and inside the member's own gap
            # (after its last line, before its new process); else the member's own clock measures alone.
            heartbeat = absence.expiries[0]["ts"] - timedelta(milliseconds=absence.session_ms)
            if _one_clock(timeline, member, absence.expiries[0]) and (absence.left is None or heartbeat > absence.left) \
                    and (absence.back is None or heartbeat < absence.back):
                absence.left, absence.heartbeat = heartbeat, True
    absences += _broker_absences(timeline, members, expiries, {id(e) for a in absences for e in a.expiries})
    forget = getattr(timeline, "forget_identities", None)    # who() answers cached before the claims
    if forget is not None:
        forget()
    return absences


def _one_clock(timeline: GroupTimeline, member: Member | None, event: dict) -> bool:
    """The member's own lines and the coordinator's line are on one clock: one host, or both hosts' clocks
    checked against the same reference (timeline/skew.py)."""
    mine, theirs = member.host if member else None, event.get("host")
    checked = getattr(timeline, "clock_checked", set())
    return mine is not None and (mine == theirs or (mine in checked and theirs in checked))


def _expiries_of(timeline: GroupTimeline, member: Member, absence: Absence, expiries: list[dict],
                 unclaimed: list[dict], joins: dict[str, dict], instance_joins: dict[str, list[dict]],
                 k: int) -> list[dict]:
    """The coordinator's removals of a static member during one absence. Its own log and the coordinator's
    may run on clocks minutes apart, so the coordinator's own order decides when it can: the removal is
    the last one of the member (or of a member id no client claims, with its client.id) before the
    coordinator saw the member's new process join (the member id its own log gives that process)."""
    def its(e: dict) -> bool:
        return timeline.who(e) == member.identity or (e in unclaimed and
                                                      identity.client_of_member(e["member"]) == member.client)

    back_join = None
    if absence.back is not None:
        new_id = next((e.get("member") for e in timeline.events if e["ts"] >= absence.back and e.get("member")
                       and e["event"] in (EV.JOIN_SUCCESS, EV.SYNC_SUCCESS) and e.get("component") != "broker"
                       and timeline.who(e) == member.identity), None)
        back_join = joins.get(new_id or "")
    if back_join is not None:
        before = [e for e in expiries if e["ts"] <= back_join["ts"] and its(e)]
        return before[-1:]
    again = instance_joins.get(member.instance or "", [])
    if absence.back is not None and again:
        # Clients before 2.8 never state their member id: the coordinator's joins of the same
        # group.instance.id order the removals (the k-th return follows the k-th removal).
        followed = [e for e in expiries if its(e) and any(j["ts"] > e["ts"] for j in again)]
        return followed[k:k + 1]
    end = absence.back or timeline.end
    return [e for e in expiries if its(e) and absence.left is not None
            and absence.left - _CLOCKS <= e["ts"] <= (end or e["ts"]) + _CLOCKS]


def _broker_joins(timeline: GroupTimeline) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    """member id -> the coordinator's first line of it joining (a new member added, a static member's join),
    and group.instance.id -> the coordinator's lines of members joining with it, in time order."""
    out: dict[str, dict] = {}
    by_instance: dict[str, list[dict]] = {}
    for e in timeline.events:
        if e.get("component") == "broker" and e.get("member") and e["event"] in (EV.MEMBER_JOIN, EV.REBALANCE_PREPARE) \
                and (e["event"] == EV.MEMBER_JOIN or "Adding new member" in (e.get("reason") or "")):
            out.setdefault(e["member"], e)
            instance = static_instance(e.get("instance")) or static_instance(_instance_in_reason(e.get("reason") or ""))
            if instance:
                by_instance.setdefault(instance, []).append(e)
    return out, by_instance


def _own_absences(member: Member, stops: list[datetime]) -> list[Absence]:
    """From its own log: each new process start after earlier lines of it. It went away at its last close
    (a graceful close, or "consumer pro-actively leaving the group" not caused by a poll timeout) before
    that start; without one, its last line only bounds it (a quiet member logs nothing for minutes), and
    only the coordinator's removal will say it was away too long."""
    out = []
    session = member.setting("session.timeout.ms")
    previous = None
    for start in member.starts:
        if previous is not None:
            between = member.next_own_after(previous)
            if between is None or between >= start:
                continue        # the same process start (its config dump and version lines)
        previous = start
        last = member.last_own_before(start - timedelta(microseconds=1))
        if last is None:
            continue            # its first process in the window
        closes = [c for c in sorted(member.closes + stops) if c <= start and c >= last - timedelta(minutes=10)]
        left = closes[-1] if closes else last
        out.append(Absence(member.identity, member.instance or "", left, start, bool(closes), session_ms=session))
    ends = sorted(member.closes + stops)
    times = member.own_times
    if ends and times and ends[-1] >= times[-1] - _CLOCKS and not any(s > ends[-1] for s in member.starts):
        out.append(Absence(member.identity, member.instance or "", ends[-1], None, True, session_ms=session))
    return out


def _stops(timeline: GroupTimeline) -> dict[str, list[datetime]]:
    """identity -> when it left the group on purpose without a LeaveGroup (a static member closing: 2.8+
    "Resetting generation and member id due to: consumer pro-actively leaving the group"), unless a poll
    timeout made it leave (the heartbeat thread logs that first)."""
    out: dict[str, list[datetime]] = {}
    timed_out: dict[str, datetime] = {}
    for e in timeline.events:
        if e.get("component") == "broker":
            continue
        if e["event"] == EV.POLL_TIMEOUT:
            timed_out[timeline.who(e) or "?"] = e["ts"]
        elif e["event"] in (EV.GENERATION_RESET, EV.JOIN_REQUESTED) and "pro-actively leaving" in (e.get("reason") or ""):
            who = timeline.who(e) or "?"
            after_timeout = who in timed_out and (e["ts"] - timed_out[who]).total_seconds() < 5
            if not after_timeout and (not out.get(who) or (e["ts"] - out[who][-1]).total_seconds() > 5):
                out.setdefault(who, []).append(e["ts"])
    return out


def _broker_absences(timeline: GroupTimeline, members: Members, expiries: list[dict], claimed: set[int]) -> list[Absence]:
    """Static members the coordinator names (joins with a group instance id) that it removed on session
    timeout and that joined again under the same group.instance.id: away from removal to return."""
    instance_of: dict[str, str] = {}          # member id -> group.instance.id, as the coordinator names them
    joins: dict[str, list[dict]] = {}         # group.instance.id -> its joins, in time order
    for e in timeline.events:
        if e.get("component") != "broker":
            continue
        instance = static_instance(e.get("instance"))
        if instance is None and e["event"] == EV.REBALANCE_PREPARE:
            instance = static_instance(_instance_in_reason(e.get("reason") or ""))
        if instance is None:
            continue
        if e.get("member"):
            instance_of.setdefault(e["member"], instance)
        if e["event"] in (EV.MEMBER_JOIN, EV.REBALANCE_PREPARE, EV.MEMBER_STATIC_REPLACED):
            joins.setdefault(instance, []).append(e)
    out = []
    for e in expiries:
        instance = instance_of.get(e.get("member") or "")
        if instance is None or id(e) in claimed:
            continue
        back = next((j for j in joins.get(instance, ()) if j["ts"] > e["ts"]), None)
        who = timeline.who(e) or e["member"]
        member = members.get(who)
        out.append(Absence(who, instance, None, back["ts"] if back else None, own_log=bool(member and member.own_lines),
                           expiries=[e], session_ms=member.setting("session.timeout.ms") if member else None))
    return out


_INSTANCE_IN_REASON = regex.compile(r"with group instance ?id (?P<instance>[^\s;]+)")


def _instance_in_reason(reason: str) -> str | None:
    """ "Adding new member X with group instanceid Some(i)" (2.4-2.8), "... with group instance id i; client
    reason: ..." (3.x+)"""
    m = _INSTANCE_IN_REASON.search(reason)
    return m["instance"] if m else None


def _own_log(members: Members, name: str | None) -> bool:
    member = members.get(name)
    return member is not None and member.own_lines > 0


def _claim(timeline: GroupTimeline, members: Members, member: Member, member_id: str) -> None:
    """A member id the coordinator removed is this static member's: name it after the member everywhere."""
    placeholder = members.by_identity.get(timeline.who({"member": member_id, "component": "broker"}) or "")
    timeline.directory[member_id] = member.identity
    members.by_member_id[member_id] = member
    if member_id not in member.member_ids:
        member.member_ids.insert(0, member_id)
    if placeholder is not None and placeholder is not member and not placeholder.own_lines \
            and set(placeholder.member_ids) <= {member_id}:
        del members.by_identity[placeholder.identity]
