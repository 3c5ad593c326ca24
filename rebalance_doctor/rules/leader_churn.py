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
the old one left, was removed, or did not rejoin in time. Changes explained by the old leader
leaving for its own reasons (a restart, a scale-in, a crash or a pause while the group was
stable) are not counted: that departure is the story. Two kinds of change are:

- the old leader is still a member: it could not complete the rebalances it led (stuck in its
  assignment, missing the JoinGroup deadline);
- the old leader was removed in the middle of the rebalance it led, before its assignment
  reached the coordinator: the leader's poll thread runs the assignor inside the handling of its
  JoinGroup response, holding the consumer's coordinator lock, and the heartbeat thread waits for
  that lock. An assignment that takes longer than ``session.timeout.ms`` (Kafka Streams creating
  or validating internal topics the cluster cannot create in time, an application's own assignor
  looking up load in a slow store) sends no heartbeat: the coordinator removes the leader on
  heartbeat expiration, and when the assignor returns the heartbeat thread logs "session timed
  out without receiving a heartbeat response" a millisecond after "Finished assignment" (the
  lab's recordings at 3.9, 4.2 and 4.4; no poll timeout is logged, the session check comes
  first). Past ``max.poll.interval.ms`` with a longer session the leader leaves on a poll
  timeout instead. The next member leads, runs the same assignment and is removed too: the
  leadership goes round, the followers' SyncGroups wait for an assignment that never comes,
  every generation fails::

      [2024-06-01 09:06:24,139] INFO [Consumer clientId=fraud-scorer-7ad9...-StreamThread-1-consumer, groupId=fraud-scorer] Disconnecting from node 2147483646 due to request timeout.
      [2024-06-01 09:11:09,645] WARN [Consumer clientId=fraud-scorer-3ab1...-StreamThread-1-consumer, groupId=fraud-scorer] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, ...
      [2024-06-01 09:12:54,257] INFO [Consumer clientId=fraud-scorer-3ab1...-StreamThread-1-consumer, groupId=fraud-scorer] SyncGroup failed: The coordinator is not aware of this member. Need to re-join the group. ...

  When every change is such a loss and at least two members lost the leadership that way, the
  assignment is the root cause (not one member): this finding comes first and takes in the
  session expirations and poll timeouts, the waits for the stuck leader and the failed attempts
  (heartbeat-expiration, poll-timeout and rebalance-stall yield to it); a follower's SyncGroup
  that timed out waiting for the leader is not a coordinator problem (coordinator-churn does
  not count it).

A group whose SyncGroups keep failing while the leadership moves is one story: the leaders could
not complete the rebalances they led, and the failed attempts are folded into this finding.

Remediation
-----------
Look at the former leaders named in the finding around the time they lost the leadership: long
assignments (Streams: the leader's ``StreamsPartitionAssignor`` lines, internal topic creation;
an application's own assignor: its lines between "Successfully joined" and "Finished assignment"),
poll timeouts or crashes. Make sure every member can rejoin within ``max.poll.interval.ms``; when
the assignment itself outlasts ``session.timeout.ms`` (or ``max.poll.interval.ms``), make it fast
(create Streams' internal topics beforehand, fix the brokers or stores it waits for): raising the
timeout above the assignment's duration only makes every rebalance that long.
Kafka Streams 2.8 and older name the leader (``All members participating in this rebalance``)
at DEBUG only: with INFO logs the leaders are not known and the poll timeouts are the finding.

Scope: classic protocols, where a member (the leader) runs the assignor. Under KIP-848 the
coordinator assigns: there is no client leader.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass

from ..classify import of
from ..classify.protocol import heartbeat_protocol
from ..classify.operations import EXPIRED, LOST, POLL
from ..timeline.model import GroupTimeline
from . import contract, figures
from .finding import Finding, Note, dedupe
from .helpers import culprit_of, names
from ..core import eventnames as EV

ID = "leader-churn"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("eager", "cooperative", "streams", "connect")
_LEADER_LINES = (EV.STREAMS_PARTICIPANTS, EV.ASSIGNMENT_COMPUTED, EV.REBALANCE_ASSIGNMENT_RECEIVED, EV.JOIN_SUCCESS)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [leader-churn], typed as thresholds_schema.toml types it."""
    min_changes: int


def check(group: GroupTimeline, t: Thresholds):
    if group.protocol == "consumer" or all(heartbeat_protocol(r.protocol) for r in group.rebalances):
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
    classification = of(group)
    changes, unexplained, leading = [], [], []
    kinds: set[str] = set()
    for previous, current in zip(known, known[1:]):
        if previous.leader == current.leader:
            continue
        changes.append((previous, current))
        low, high = position[previous.index], position[current.index]
        how = _lost_while_leading(group, classification, previous, low)
        if how:
            leading.append((previous, current))
            kinds.add(how)
            unexplained.append((previous, current))
            continue
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
            evidence.extend(ev for ev in r.evidence(*_LEADER_LINES) if ev.event != EV.JOIN_SUCCESS
                            or r.leader is None)
    sequence = " -> ".join(_short_chain([r.leader for r in known]))
    top = Counter(former).most_common(1)[0][0]
    involved = sorted({r.index for p, c in unexplained
                       for r in group.rebalances[position[p.index]:position[c.index] + 1]})
    figs = _figures(known, changes, unexplained, leading, t)
    f = figures.by_name(figs)
    finding = Finding(ID, "warning", group.group,
                  f"group leader changed {f['changes'].text()} times ("
                  + (f"{f['lost_while_leading'].text()} times the leader was removed in the middle of its own "
                     "assignment" if leading else f"{f['unexplained'].text()} without the leader leaving") + ")",
                  f"Leaders over {f['rebalances'].text()} rebalances: {sequence}. {f['unexplained'].text()} change(s) "
                  "happened while "
                  f"the former leader ({names(sorted(set(former)))}) was still in the group: it could not complete "
                  f"the rebalances it led.",
                  unexplained[0][0].start, unexplained[-1][1].end, dedupe(evidence),
                  "Look at the former leaders around the time they lost leadership: long assignments, poll "
                  "timeouts, crashes. Every member must rejoin within max.poll.interval.ms.",
                  culprit=culprit_of(of(group).members, top))
    if leading:
        lost = sorted({p.leader for p, _ in leading})
        how, limit = _how(kinds)
        took = _longest_assignment(group, [p for p, _ in leading])
        if took.known:
            figs.append(took)
        finding.summary += (f" {f['lost_while_leading'].text()} time(s) the leader ({names(lost)}) was removed "
                            f"({how}) in the middle of the rebalance it led, before its assignment reached the "
                            f"coordinator: the assignment itself outlasts {limit}, whichever member runs it"
                            + (" (the leader's heartbeats wait while its assignor runs)" if EXPIRED in kinds else "")
                            + (f"; the longest such assignment took {took.text()}" if took.known else "") + ".")
        finding.remediation = (f"The leader's assignment takes longer than {limit}: look at what the assignor waits "
                               "for in the former leaders' logs right after their assignor lines (Kafka Streams: "
                               "creating or validating internal topics, describing topics; an application's own "
                               "assignor calling out). Make the assignment fast (create the internal topics "
                               "beforehand, fix the brokers or the store it waits for); raising the timeout above its "
                               "duration only makes every rebalance that long.")
        if len(lost) >= 2 and len(leading) == len(unexplained):
            # Every member that led failed the same way: the leadership is what fails, not one member.
            leaders = figures.rebalances("leaders_lost", "leaders that left inside their own assignment (each one's "
                                         "first such rebalance)", list({p.leader: p for p, _ in reversed(leading)}
                                                                       .values())[::-1])
            figs.append(leaders)
            finding.role = "cause"
            finding.culprit = None      # whichever member leads fails: naming one would send the operator to it
            finding.no_culprit = "every member that led failed in the assignment"
            finding.cause = (f"each group leader in turn ({leaders.text()}) outlasted {limit} in its own "
                             f"assignment and was removed ({how}): the assignment, not a member, is the fault")
    finding.figures = figs
    finding.caused = {"rebalances": involved, "culprits": sorted(set(former))}
    yield finding


def _figures(known: list, changes: list, unexplained: list, leading: list, t: dict) -> list:
    """The rebalances whose leader is known, the leader changes, those the former leader's departure does not explain,
    those where it left inside its own assignment (each the first rebalance under the new leader), and the threshold."""
    return [figures.rebalances("rebalances", "rebalances whose leader the lines name", known),
            figures.rebalances("changes", "leader changes (each the rebalance under the new leader)", [c for _, c in changes]),
            figures.rebalances("unexplained", "changes while the former leader was still in the group",
                               [c for _, c in unexplained]),
            figures.rebalances("lost_while_leading", "leaders removed inside their own assignment (a session expiry or "
                               "a poll timeout)",
                               [p for p, _ in leading]),
            figures.threshold("min_changes", t["min_changes"], figures.COUNT, "unexplained changes that make churn", ID,
                              "min_changes")]


def _lost_while_leading(group: GroupTimeline, classification, previous, low: int) -> str | None:
    """How the former leader was removed before the rebalance it led completed, its poll thread still in the assignor:
    on a poll timeout (or for not rejoining within the rebalance timeout), or on session expiry (its heartbeat thread
    waits for the assignor); None when it was not. A leader that closes, crashes, pauses or loses the coordinator
    while the group is stable lost the leadership for its own reasons."""
    if previous.completed:
        return None
    # Its first departure from then on: within the change, or after it when the coordinator ended a join phase the
    # stuck leader could not rejoin in (the new leader is chosen first, the old one's removal comes later); until a
    # generation completes, after which a departure has other reasons.
    for r in group.rebalances[low:]:
        if r.index != previous.index and r.completed:
            return None
        change = classification.changes.get(r.index)
        for d in change.departures if change is not None else ():
            if d.who == previous.leader and d.kind != LOST:    # its own notice of a removal: the removal comes
                return d.kind if d.kind in (POLL, EXPIRED) else None
    return None


def _longest_assignment(group: GroupTimeline, led: list) -> figures.Figure:
    """The longest time a removed leader spent in its own assignment: from its JoinGroup answer ("Successfully
    joined group") to its "Finished assignment" line, both its own (the assignor runs between them)."""
    done = group.of(EV.ASSIGNMENT_COMPUTED)
    spans = []
    for r in led:
        joined = next((e for e in r.events if e["event"] == EV.JOIN_SUCCESS and group.who(e) == r.leader), None)
        if joined is None or joined.get("ts") is None:
            continue
        finished = next((e for e in done if group.who(e) == r.leader and e.get("ts") is not None
                         and e["ts"] >= joined["ts"]), None)
        spans.append(figures.duration("assignment_ms", "", joined, finished))
    return figures.longest("assignment_ms", "longest assignment of a removed leader (its 'Successfully joined group' "
                           "to its 'Finished assignment')", spans)


def _how(kinds: set[str]) -> tuple[str, str]:
    """How the leaders were removed, and the timeout their assignment outlasted."""
    if kinds == {EXPIRED}:
        return "session expiry", "session.timeout.ms"
    if kinds == {POLL}:
        return "poll timeout", "max.poll.interval.ms"
    return "session expiry or poll timeout", "session.timeout.ms or max.poll.interval.ms"


def _short_chain(leaders: list[str]) -> list[str]:
    from ..timeline.identity import short

    chain: list[str] = []
    for leader in leaders:
        name = short(leader)
        if not chain or chain[-1] != name:
            chain.append(name)
    return chain if len(chain) <= 8 else chain[:4] + ["..."] + chain[-3:]
