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
During a rebalance every member must rejoin within the rebalance timeout (``max.poll.interval.ms``).
A member whose polling thread is busy (long processing, a stall, a GC pause) does not rejoin, the
rebalance completes without it, and its partitions go to others. When it polls again it finds
itself fenced and must rejoin: another rebalance. The same lines follow a poll timeout or a lost
session: then that is the cause and this finding is folded into it (a member removed on session
timeout gets no max.poll advice). It stands alone only when nothing else explains the loss.

Remediation
-----------
Make the member rejoin in time: shorter poll-loop iterations (``max.poll.records``), or a longer
``max.poll.interval.ms``. Look at what the member was doing when the group rebalanced (its log
lines at that time); no lines at all usually means its polling thread was stuck.

Scope: classic consumers, Streams and Connect; KIP-848 members fenced for a stale epoch or for
not joining within the rebalance timeout. When the coordinator logs the stall itself, the
rebalance-stall rule (issue 17) takes this one's place in the chain.
"""

from __future__ import annotations

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from .finding import Finding, dedupe, window
from .helpers import names, said

ID = "missed-rebalance"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer")
YIELDS_TO = ("rebalance-stall",)
_LOST_REASONS = ("rebalanced", "no longer part of the group", "failed to transition", "rebalance timeout")


def check(group: GroupTimeline, t: dict):
    lines = [e for e in group.events if e["event"] in ("partitions.lost", "streams.tasks_migrated")
             and not (e["event"] == "partitions.lost" and e.get("partitions") and not e.get("reason"))]
    lines += [e for e in group.of("member.fenced") if any(said(e, w) for w in _LOST_REASONS)]
    lines += [e for e in group.of("commit.failed") if said(e, "rebalanced")]
    members = sorted({group.who(e) or "?" for e in lines})
    if len(members) < t["min_members"] or not lines:
        return
    classification = of(group)
    absent = _absent_from(group, members)
    evidence = [Evidence.of(e) for e in sorted(lines, key=lambda e: e["ts"])]
    start, end = window(evidence)
    summary = (f"{names(members)} missed a rebalance and lost {'its' if len(members) == 1 else 'their'} partitions "
               f"({len(lines)} line(s))"
               + (f"; the group completed generation(s) {', '.join(map(str, absent))} without it" if absent else "")
               + ". No poll timeout or session expiry is logged for it: look at what its polling thread did when "
                 "the group rebalanced.")
    member = classification.members.get(members[0])
    culprit = member.culprit() if member else classification.members.culprit(members[0])
    finding = Finding(ID, "warning", group.group, f"{len(members)} member(s) missed a rebalance and were fenced",
                      summary, start, end, dedupe(evidence),
                      "Make the member rejoin within max.poll.interval.ms: shorter poll-loop iterations "
                      "(max.poll.records), or a longer max.poll.interval.ms; check what it was doing at that time.",
                      culprit=culprit)
    finding.caused = {"rebalances": [], "culprits": members}
    yield finding


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
