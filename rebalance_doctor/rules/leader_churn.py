"""The member running the assignment changes between successive rebalances.

Symptom
-------
The assignor's log line moves from one member to another (Streams)::

    node0.log: [11:08:54,694] INFO stream-thread [otter-app-225712b8-...-StreamThread-2-consumer] 2 client nodes and 4 consumers participating in this rebalance:
    node1.log: [11:09:45,375] INFO stream-thread [otter-app-c4497316-...-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:
    node0.log: [11:10:57,340] INFO stream-thread [otter-app-225712b8-...-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:

or the coordinator receives the assignment from a different leader each time::

    [GroupCoordinator 1]: Assignment received from leader consumer-orders-1-6b1f... for group orders for generation 42. The group has 2 members, 0 of which are static.

Why it happens
--------------
The coordinator keeps the previous leader as long as it rejoins; the leader changes only when
the old one left, was removed, or did not rejoin in time. A leader that changes while the old one
is still a member means the old leader could not complete the rebalances (stuck in its
assignment, missing the JoinGroup deadline, crashing). Changes explained by the old leader
leaving (a restart) are not counted.

A group whose SyncGroups keep failing while the leadership moves is one story: the leaders could
not complete the rebalances they led, and the failed attempts are folded into this finding.

Remediation
-----------
Look at the former leaders named in the finding around the time they lost the leadership: long
assignments (Streams: the leader's ``StreamsPartitionAssignor`` lines, internal topic creation),
poll timeouts or crashes. Make sure every member can rejoin within ``max.poll.interval.ms``.

Scope: classic protocols, where a member (the leader) runs the assignor. Under KIP-848 the
coordinator assigns: there is no client leader.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter

from ..classify import of
from ..timeline.model import GroupTimeline
from .finding import Finding, Note, dedupe
from .helpers import names

ID = "leader-churn"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("eager", "cooperative", "streams", "connect")
_LEADER_LINES = ("streams.participants", "assignment.computed", "rebalance.assignment_received", "join.success")


def check(group: GroupTimeline, t: dict):
    if group.protocol == "consumer" or all(r.protocol == "consumer" for r in group.rebalances):
        return  # KIP-848: the coordinator computes the assignment, there is no client leader
    known = [r for r in group.rebalances if r.leader]
    if len(group.rebalances) >= 3 and len(known) < 2:
        yield Note(ID, group.group, f"not enough evidence: the leader is known for {len(known)} of "
                                    f"{len(group.rebalances)} rebalances (needs the leader's assignor lines "
                                    "or the coordinator's 'Assignment received from leader')")
        return
    # A change between two known leaders is explained when the former leader left, was removed or missed
    # a rebalance in between: where each member departed, in order, and a binary search per change
    # (not a scan of every rebalance per change).
    position = {r.index: i for i, r in enumerate(group.rebalances)}
    departed_at: dict[str, list[int]] = {}
    for i, r in enumerate(group.rebalances):
        for who in set(r.left + r.expired + r.missed):
            departed_at.setdefault(who, []).append(i)
    changes, unexplained = [], []
    for previous, current in zip(known, known[1:]):
        if previous.leader == current.leader:
            continue
        changes.append((previous, current))
        low, high = position[previous.index], position[current.index]
        times = departed_at.get(previous.leader, [])
        at = bisect_left(times, low)
        if not (at < len(times) and times[at] <= high):
            unexplained.append((previous, current))
    if len(unexplained) < t["min_changes"]:
        return
    former = [p.leader for p, _ in unexplained]
    evidence = []
    for previous, current in unexplained[:6]:
        for r in (previous, current):
            evidence.extend(ev for ev in r.evidence(*_LEADER_LINES) if ev.event != "join.success"
                            or r.leader is None)
    sequence = " -> ".join(_short_chain([r.leader for r in known]))
    top = Counter(former).most_common(1)[0][0]
    member = of(group).members.get(top)
    involved = sorted({r.index for p, c in unexplained
                       for r in group.rebalances[position[p.index]:position[c.index] + 1]})
    finding = Finding(ID, "warning", group.group,
                  f"group leader changed {len(changes)} times ({len(unexplained)} without the leader leaving)",
                  f"Leaders over {len(known)} rebalances: {sequence}. {len(unexplained)} change(s) happened while "
                  f"the former leader ({names(sorted(set(former)))}) was still in the group: it could not complete "
                  f"the rebalances it led.",
                  unexplained[0][0].start, unexplained[-1][1].end, dedupe(evidence),
                  "Look at the former leaders around the time they lost leadership: long assignments, poll "
                  "timeouts, crashes. Every member must rejoin within max.poll.interval.ms.",
                  culprit=member.culprit() if member else of(group).members.culprit(top))
    finding.caused = {"rebalances": involved, "culprits": sorted(set(former))}
    yield finding


def _short_chain(leaders: list[str]) -> list[str]:
    from ..timeline.identity import short

    chain: list[str] = []
    for leader in leaders:
        name = short(leader)
        if not chain or chain[-1] != name:
            chain.append(name)
    return chain if len(chain) <= 8 else chain[:4] + ["..."] + chain[-3:]
