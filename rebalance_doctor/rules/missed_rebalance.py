"""A member dropped out because it missed a rebalance (fenced, partitions lost, tasks migrated).

Symptom
-------
The member learns too late that the group moved on without it::

    [2024-03-05 10:00:47,001] INFO [Consumer clientId=consumer-orders-2, groupId=orders] Giving away all assigned partitions as lost since generation/memberID has been reset,indicating that consumer is in old state or no longer part of the group (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)
    [2024-03-05 10:00:47,002] INFO [Consumer clientId=consumer-orders-2, groupId=orders] Lost previously assigned partitions orders-3 (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)

(Streams: ``TaskMigratedException``; KIP-848: ``fenced from the group because it failed to
transition from epoch N``; ``Commit cannot be completed since the group has already
rebalanced``).

Why it happens
--------------
During a rebalance every member must rejoin within the rebalance timeout (the largest
``max.poll.interval.ms`` of the members); the coordinator then ends the JoinGroup phase and removes
the dynamic members that did not rejoin (2.8+ says so: ``removed dynamic members who haven't
joined``; older brokers remove them silently). A member hears of a rebalance only from its next
heartbeat (``REBALANCE_IN_PROGRESS``) and rejoins from its next ``poll()``. So it misses one when
its ``heartbeat.interval.ms`` is not below the rebalance timeout (its heartbeat comes after the
phase ended, though it polls all the time: no poll timeout, no session expiry; the finding names
this cause from the members' configuration dumps), when its polling thread is busy past
``max.poll.interval.ms`` (a poll timeout), or when its session expires (a process pause, the
network). When it polls or heartbeats again it finds itself unknown, gives its partitions away as
lost and rejoins: another rebalance. A poll timeout or a lost session is a cause of its own: this
finding is folded into it. It stands alone when its own configuration explains it, or when
nothing in the logs does, and then says so.

Remediation
-----------
From the evidence: ``heartbeat.interval.ms`` well below ``max.poll.interval.ms`` and at most a third
of ``session.timeout.ms`` (or the share config-heartbeat-ratio's ``heartbeats_per_session`` sets;
the default 3000 does both) when the heartbeats are too sparse; shorter poll-loop iterations
(``max.poll.records``) or a longer ``max.poll.interval.ms`` after a poll timeout; for a lost
session, why the heartbeats stopped (``max.poll.*`` does not bound it). When no cause is logged:
compare the two settings, look at what the member's polling thread did when the group rebalanced,
and collect the coordinator's log of the window.

Scope: classic consumers, Streams and Connect; KIP-848 members fenced for a stale epoch or for
not joining within the rebalance timeout. When the coordinator logs that the group waited for a
busy member (rebalance-stall, issue 17), that rule takes this one's place in the chain; a member
whose heartbeats are sparser than the rebalance timeout was not busy but could not know, and is
this rule's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, hears_too_late, names, said, share
from ..core import eventnames as EV

ID = "missed-rebalance"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer")
YIELDS_TO = ("rebalance-stall",)
_LOST_REASONS = ("rebalanced", "no longer part of the group", "failed to transition", "rebalance timeout")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [missed-rebalance], typed as thresholds_schema.toml types it."""
    min_members: int
    # the ratio config-heartbeat-ratio detects with: the advice states the same one
    heartbeats_per_session: int = contract.borrowed("config-heartbeat-ratio")


def check(group: GroupTimeline, t: Thresholds):
    lines = [e for e in group.events if e["event"] in (EV.PARTITIONS_LOST, EV.STREAMS_TASKS_MIGRATED)
             and not (e["event"] == EV.PARTITIONS_LOST and e.get("partitions") and not e.get("reason"))]
    lines += [e for e in group.of(EV.MEMBER_FENCED) if any(said(e, w) for w in _LOST_REASONS)]
    lines += [e for e in group.of(EV.COMMIT_FAILED) if said(e, "rebalanced")]
    if not lines:
        return
    classification = of(group)
    lines = [e for e in lines if not _closing(classification.members, group.who(e), e["ts"])]
    members = sorted({group.who(e) or "?" for e in lines})
    if len(members) < t["min_members"] or not lines:
        return
    absent = _absent_from(group, members)
    evidence = [Evidence.of(e) for e in sorted(lines, key=lambda e: e["ts"])]
    start, end = window(evidence)
    how = _how_lost(group, members)
    # A logged poll timeout or session expiry is the cause of its own; else sparse heartbeats may be.
    late = {m: hears_too_late(classification.members, m) for m in members} if how is None else {}
    late = {m: v for m, v in late.items() if v is not None}
    one = len(members) == 1
    ordered = sorted(lines, key=lambda e: e["ts"])
    count = figures.count("lines", "lines saying a member lost its partitions or was fenced", ordered)
    who = figures.count("members", "members that missed a rebalance (each one's first such line)",
                        list({group.who(e) or "?": e for e in reversed(ordered)}.values())[::-1])
    figs = [who, count]
    summary = (f"{names(members)} missed a rebalance and lost {'its' if one else 'their'} partitions "
               f"({count.text()} line(s))"
               + (f"; the group completed generation(s) {', '.join(map(str, absent))} without "
                  f"{'it' if one else 'them'}" if absent else "") + ". ")
    if late:
        slow = classification.members.get(next(iter(late)))
        beat, bound = figures.setting(slow, "heartbeat.interval.ms"), figures.setting(slow, "max.poll.interval.ms")
        figs += [beat, bound]
        heartbeat, timeout = (beat.value if beat.known else next(iter(late.values()))[0],
                              bound.value if bound.known else next(iter(late.values()))[1])
        cause = (f"heartbeat.interval.ms={heartbeat} is not below the rebalance timeout (max.poll.interval.ms="
                 f"{timeout}): a member hears of a rebalance only at its next heartbeat, after the coordinator "
                 "has ended the JoinGroup phase without it")
        summary += (f"No poll timeout and no session expiry: {names(sorted(late))} "
                    f"{'hears' if len(late) == 1 else 'hear'} of rebalances too late, since its {cause}. Each miss "
                    "costs the member its partitions and the group one more rebalance when it rejoins.")
        remedy = (f"Lower heartbeat.interval.ms well below max.poll.interval.ms ({timeout}) and to at most "
                  f"{share(t['heartbeats_per_session'])} of session.timeout.ms (the default 3000 does both), so that every member hears of a rebalance "
                  "within a heartbeat.")
    elif how == "session":
        cause = None
        summary += ("Its session expired (no heartbeat reached the coordinator within session.timeout.ms): the "
                    "group rebalanced without it.")
        remedy = ("Find why its heartbeats stopped (a process or GC pause, the network to the coordinator): "
                  "max.poll.* does not bound a lost session; session.timeout.ms does.")
    elif how == "poll":
        cause = None
        summary += "It exceeded max.poll.interval.ms: the group rebalanced without it."
        remedy = ("Make the member poll within max.poll.interval.ms: shorter poll-loop iterations "
                  "(max.poll.records), or a longer max.poll.interval.ms.")
    else:
        cause = None
        summary += ("No poll timeout, session expiry or heartbeat setting in these logs explains it: the member did "
                    "not rejoin within the rebalance timeout.")
        remedy = ("Compare the member's heartbeat.interval.ms with max.poll.interval.ms (it hears of a rebalance only "
                  "at its next heartbeat) and look at what its poll thread did when the group rebalanced (its log "
                  "lines at that time; none at all usually means the thread was stuck). Collect the coordinator's "
                  "log of the window: it says whether the member was removed on session timeout or for not "
                  "rejoining.")
    culprit = culprit_of(classification.members, members[0])
    finding = Finding(ID, "warning", group.group, f"{who.text()} member(s) missed a rebalance and were fenced",
                      summary, start, end, dedupe(evidence), remedy, culprit=culprit)
    finding.figures = figs
    if late:
        finding.cause, finding.role = cause, "cause"     # its own configuration explains it: the chain's cause
    # Its rebalances (those it was absent from, and its returns) only when it is its own chain's cause: as a symptom
    # it is folded into the cause that names the same members (a poll timeout, a lost session).
    finding.caused = {"rebalances": [r.index for r in group.rebalances
                                     if set(r.missed) & set(members) or (r.completed and r.generation in absent)]
                      if late else [], "culprits": members}
    yield finding


def _closing(members, who: str | None, ts) -> bool:
    """The member's process had logged its own close or shutdown before the line (a StreamThread at PENDING_SHUTDOWN,
    a consumer being closed). A consumer that closes while its group is rebalancing gives its partitions up as lost
    (ConsumerCoordinator#onLeavePrepare; Streams: "at state PENDING_SHUTDOWN: partitions [...] lost due to missed
    rebalance"): that is how it leaves, not a rebalance it missed."""
    member = members.get(who)
    if member is None or ts is None:
        return False
    began = max((s for s in member.starts if s <= ts), default=None)
    return any((began is None or began <= c) and c <= ts for c in member.closes)


def _how_lost(group: GroupTimeline, members: list[str]) -> str | None:
    """How the members lost their membership, as the logs say: 'poll' (a poll timeout), 'session' (removed on
    session timeout, or their own session timed out), or None when no line says."""
    kinds = set()
    for e in group.events:
        if group.who(e) not in members:
            continue
        if e["event"] == EV.POLL_TIMEOUT:
            kinds.add("poll")
        elif e["event"] in (EV.MEMBER_EXPIRED, EV.SESSION_TIMEOUT):
            kinds.add("session")
    if len(kinds) == 1:
        return kinds.pop()
    return None


def _absent_from(group: GroupTimeline, members: list[str]) -> list[int]:
    """The first generation completed without each member after it had been in one."""
    out = []
    for name in members:
        was_in = False
        for r in group.rebalances:
            if not r.completed or not r.member_ids or r.generation is None:
                continue
            if name in r.member_ids:
                was_in = True
            elif was_in:
                out.append(r.generation)
                break
    return sorted(set(out))
