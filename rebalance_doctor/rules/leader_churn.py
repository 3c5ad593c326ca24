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
- the old leader left on a poll timeout in the middle of the rebalance it led, before its
  assignment reached the coordinator: the leader's poll thread runs the assignor, so an
  assignment that takes longer than ``max.poll.interval.ms`` (Kafka Streams creating or
  validating internal topics the cluster cannot create in time, a custom assignor calling out)
  times the leader out. The next member leads, runs the same assignment, and times out too: the
  leadership goes round, the followers' SyncGroups wait for an assignment that never comes (and
  time out after ``request.timeout.ms``), every generation fails::

      [2024-06-01 09:06:24,139] INFO [Consumer clientId=fraud-scorer-7ad9...-StreamThread-1-consumer, groupId=fraud-scorer] Disconnecting from node 2147483646 due to request timeout.
      [2024-06-01 09:11:09,645] WARN [Consumer clientId=fraud-scorer-3ab1...-StreamThread-1-consumer, groupId=fraud-scorer] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, ...
      [2024-06-01 09:12:54,257] INFO [Consumer clientId=fraud-scorer-3ab1...-StreamThread-1-consumer, groupId=fraud-scorer] SyncGroup failed: The coordinator is not aware of this member. Need to re-join the group. ...

  When every change is such a loss and at least two members lost the leadership that way, the
  assignment is the root cause (not one member): this finding comes first and takes in the poll
  timeouts, the waits for the stuck leader and the failed attempts (poll-timeout and
  rebalance-stall yield to it); a follower's SyncGroup that timed out waiting for the leader is
  not a coordinator problem (coordinator-churn does not count it).

A group whose SyncGroups keep failing while the leadership moves is one story: the leaders could
not complete the rebalances they led, and the failed attempts are folded into this finding.

Remediation
-----------
Look at the former leaders named in the finding around the time they lost the leadership: long
assignments (Streams: the leader's ``StreamsPartitionAssignor`` lines, internal topic creation),
poll timeouts or crashes. Make sure every member can rejoin within ``max.poll.interval.ms``; when
the assignment itself outlasts it, make the assignment fast (create Streams' internal topics
beforehand, fix the brokers it waits for) or raise ``max.poll.interval.ms`` above its duration.
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
from ..classify.operations import POLL
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
    for previous, current in zip(known, known[1:]):
        if previous.leader == current.leader:
            continue
        changes.append((previous, current))
        low, high = position[previous.index], position[current.index]
        if _lost_while_leading(group, classification, previous, low, high):
            leading.append((previous, current))
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
                  + (f"{f['lost_while_leading'].text()} leader(s) left in the middle of their own assignment" if leading
                     else f"{f['unexplained'].text()} without the leader leaving") + ")",
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
        finding.summary += (f" {f['lost_while_leading'].text()} time(s) the leader ({names(lost)}) left on a poll timeout in the middle of "
                            "the rebalance it led, before its assignment reached the coordinator: the assignment "
                            "itself outlasts max.poll.interval.ms, whichever member runs it.")
        finding.remediation = ("The leader's assignment takes longer than max.poll.interval.ms: look at what the "
                               "assignor waits for in the former leaders' logs right after their assignor lines (Kafka "
                               "Streams: creating or validating internal topics, describing topics; a custom assignor "
                               "calling out). Make the assignment fast (create the internal topics beforehand, fix the "
                               "brokers it waits for) or raise max.poll.interval.ms above its duration.")
        if len(lost) >= 2 and len(leading) == len(unexplained):
            # Every member that led failed the same way: the leadership is what fails, not one member.
            leaders = figures.rebalances("leaders_lost", "leaders that left inside their own assignment (each one's "
                                         "first such rebalance)", list({p.leader: p for p, _ in reversed(leading)}
                                                                       .values())[::-1])
            figs.append(leaders)
            finding.role = "cause"
            finding.cause = (f"each group leader in turn ({leaders.text()}) outlasted max.poll.interval.ms in its own "
                             "assignment and left: the assignment, not a member, is the fault")
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
            figures.rebalances("lost_while_leading", "leaders that left on a poll timeout inside their own assignment",
                               [p for p, _ in leading]),
            figures.threshold("min_changes", t["min_changes"], figures.COUNT, "unexplained changes that make churn", ID,
                              "min_changes")]


def _lost_while_leading(group: GroupTimeline, classification, previous, low: int, high: int) -> bool:
    """The former leader left on a poll timeout (or was removed for not rejoining within the rebalance timeout)
    before the rebalance it led completed: its poll thread was still in the assignor. A leader that closes, crashes,
    pauses or loses the coordinator while the group is stable lost the leadership for its own reasons."""
    if previous.completed:
        return False
    for r in group.rebalances[low:high + 1]:
        change = classification.changes.get(r.index)
        if change is not None and any(d.who == previous.leader and d.kind == POLL for d in change.departures):
            return True
    return False


def _short_chain(leaders: list[str]) -> list[str]:
    from ..timeline.identity import short

    chain: list[str] = []
    for leader in leaders:
        name = short(leader)
        if not chain or chain[-1] != name:
            chain.append(name)
    return chain if len(chain) <= 8 else chain[:4] + ["..."] + chain[-3:]
