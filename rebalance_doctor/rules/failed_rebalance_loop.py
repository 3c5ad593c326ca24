"""Rebalances that do not complete, again and again.

Symptom
-------
The coordinator prepares the same old generation repeatedly, or members fail their JoinGroup or
SyncGroup::

    [2024-01-01 11:10:57,345] INFO [Consumer clientId=otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5-StreamThread-1-consumer, groupId=otter-app] SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent generation was Generation{generationId=742, memberId='otter-app-225712b8-...-StreamThread-1-consumer-7f45268d-...', protocol='stream'} (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:826)

or the leader logs two assignments within the same second (closely grouped rebalances)::

    [11:10:57,340] INFO stream-thread [otter-app-225712b8-...-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:
    [11:10:57,362] INFO stream-thread [otter-app-225712b8-...-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:

Why it happens
--------------
A rebalance fails when a new one begins before it completes (a member joins, leaves or times out
in the middle of it), when a member is not known to the coordinator any more, or when the
coordinator cannot store the assignment. Failures are not a root cause themselves: the finding
points to what began the superseding rebalance (the member or event that started it); members
rejoining because the "group is already rebalancing" are symptoms. Two assignments by the same
leader within a second mean the first one's SyncGroup failed: nobody can rejoin that fast.

Remediation
-----------
Remove the source of the interruptions named in the finding (a member timing out, crashing or
joining repeatedly). ``JoinGroup failed: The coordinator is not aware of this member`` after a
timeout is expected once; repeated, look at ``session.timeout.ms`` and ``max.poll.interval.ms``.
Very large groups may need a longer ``rebalance.timeout.ms`` / ``max.poll.interval.ms`` to
let every member rejoin in time.
"""

from __future__ import annotations

from ..timeline.model import Evidence, GroupTimeline
from .finding import Finding, dedupe
from .helpers import KIND_WORDS, names, root_causes, span

ID = "failed-rebalance-loop"
SEVERITY = "warning"


def check(group: GroupTimeline, t: dict):
    failed = group.failed
    close = _closely_grouped(group, t["close_ms"])
    count = len(failed)
    if count < t["min_failed"] and len(close) < t["min_failed"]:
        return
    reasons: dict[str, int] = {}
    for r in failed:
        key = (r.failure or "unknown").split(". ")[0]
        reasons[key] = reasons.get(key, 0) + 1
    # The cause of a failure is whatever started the rebalance that superseded it.
    successors = []
    for r in failed:
        later = [n for n in group.rebalances if n.index == r.index + 1]
        successors.extend(later)
    causes = root_causes(successors or failed)
    named = [(k, n) for k, n in causes.most_common() if k != "unknown"]
    cause_members = sorted({n.trigger_member for n in successors if n.trigger_member})
    evidence = [ev for n in successors for ev in ([n.trigger_evidence] if n.trigger_evidence else [])]
    evidence += [Evidence.of(e) for r in failed for e in r.events
                 if e["event"] in ("sync.failed", "join.failed")][:6]
    evidence += [Evidence.of(e) for e in close[:4]]
    evidence += [Evidence.of(e) for r in failed for e in r.events if e["event"] == "rebalance.prepare"][:4]
    start, end = span(failed) if failed else (close[0]["ts"], close[-1]["ts"])
    total = max(count, len(close))
    reason_text = "; ".join(f"{n}x {k}" for k, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    if named:
        cause_text = ", ".join(f"{KIND_WORDS.get(k, k)} ({n})" for k, n in named) + \
            (f", by {names(cause_members)}" if cause_members else "")
    elif cause_members:
        cause_text = (f"{names(cause_members)}, rejoining while the previous rebalance was completing (the coordinator "
                      "names it; its own logged reason is only a symptom): look at what it did just before")
    else:
        cause_text = "not logged (only members rejoining because the group was already rebalancing)"
    summary = (f"{count} of {len(group.rebalances)} rebalances failed ({reason_text or 'no failure line'})"
               + (f"; {len(close)} assignment(s) by the leader came less than {t['close_ms']} ms after the "
                  f"previous one (the previous SyncGroup failed)" if close else "")
               + f". What began the superseding rebalances: {cause_text}.")
    severity = "critical" if total >= t["critical_failed"] else "warning"
    yield Finding(ID, severity, group.group, f"{total} rebalance attempts failed before completing",
                  summary, start, end, dedupe(evidence),
                  "Remove what interrupts the rebalances (the members named above: timeouts, crashes, repeated "
                  "joins). If members cannot rejoin in time in a large group, raise max.poll.interval.ms "
                  "(rebalance timeout) so the JoinGroup phase can complete.")


def _closely_grouped(group: GroupTimeline, close_ms: int) -> list[dict]:
    """Leader assignment lines closer than close_ms to the previous one (the seed's 11:10:57 pair)."""
    lines = group.of("streams.participants", "assignment.computed")
    hits = []
    for previous, current in zip(lines, lines[1:]):
        gap = (current["ts"] - previous["ts"]).total_seconds() * 1000
        if 0 <= gap < close_ms:
            hits.append(current)
    return hits
