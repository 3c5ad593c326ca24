"""A rebalance held up waiting for one member that did not rejoin: the whole group waited, up to the rebalance timeout.

Symptom
-------
The coordinator starts a rebalance; every member but one rejoins within a heartbeat; the group
stabilizes only when the last one finally rejoins, or when the rebalance timeout removes it::

    [2024-03-05 09:01:56,620] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state PreparingRebalance with old generation 1 (__consumer_offsets-41) (reason: Adding new member consumer-orders-1-19e5... with group instance id None; client reason: need to re-join with the given member-id: consumer-orders-1-19e5...) (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 09:01:57,310] INFO [Consumer clientId=consumer-orders-1, groupId=orders] (Re-)joining group (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)
    [2024-03-05 09:02:55,101] INFO [Consumer clientId=consumer-orders-1, groupId=orders] (Re-)joining group (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)
    [2024-03-05 09:02:55,224] INFO [GroupCoordinator 1]: Stabilized group orders generation 2 (__consumer_offsets-41) with 5 members (kafka.coordinator.group.GroupCoordinator)

or, when the member never came back in time (2.8+)::

    [2024-03-05 09:06:56,640] INFO [GroupCoordinator 1]: Group orders removed dynamic members who haven't joined: Set(consumer-orders-1-eb0f...) (kafka.coordinator.group.GroupCoordinator)

Why it happens
--------------
A classic rebalance's JoinGroup phase ends when every known member has rejoined, or when the
rebalance timeout (the largest ``max.poll.interval.ms`` of the members) expires. Members learn of
the rebalance at their next heartbeat (``heartbeat.interval.ms``) but send their JoinGroup only from
their next ``poll()``: a member busy with a long batch keeps the whole group waiting (under the eager
protocol every other member has already revoked its partitions and consumes nothing meanwhile). The
finding names the member the group waited for, how long, and against which timeout. A member that
never rejoined is removed at the rebalance timeout (and usually logs a poll timeout later), unless
its ``heartbeat.interval.ms`` is not below that timeout: then it could not hear of the rebalance in
time, the group did not wait for a busy member, and missed-rebalance names the setting.
A member whose process had ended is no stall either: killed or crashed without a LeaveGroup, a dynamic
member stays in the group until its session times out, and a rebalance started meanwhile (often by its
own new process joining under a new member id) waits for it until the rebalance timeout or that session
expiry, whichever comes first. Its own log shows the new process start; no poll loop could have rejoined,
so the wait is the cost of that departure (heartbeat-expiration, membership-flapping), not of a batch.
Initial joins of an empty group wait ``group.initial.rebalance.delay.ms`` on purpose: not a stall.

Remediation
-----------
Make the member poll sooner: lower ``max.poll.records`` (smaller batches) or speed up the processing of
a batch, so that ``poll()`` comes back well within the time the group can afford to wait; a lower
``max.poll.interval.ms`` bounds the wait (the rebalance timeout) at the price of poll timeouts. With
CooperativeStickyAssignor the other members keep consuming while they wait; KIP-848
(``group.protocol=consumer``) has no group-wide JoinGroup barrier at all.

Scope: classic consumer groups and Streams (the JoinGroup barrier); not KIP-848 groups.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe
from .helpers import culprit_of, escalate, hears_too_late, label_of, names, seconds
from ..core import eventnames as EV

ID = "rebalance-stall"
SEVERITY = "warning"
ROLE = "cause"
# The member the group waited for was the leader of the previous generation, still inside its own assignment, and
# every leader in turn stalled so: the assignment is the cause and leader-churn names it.
YIELDS_TO = ("leader-churn",)
PROTOCOLS = ("eager", "cooperative", "streams")

_NOT_JOINED = "not_yet_rejoined_dynamic_members_key_set"  # "Group {} removed dynamic members who haven't joined: {}"
_JOINS = (EV.JOIN_START,)                        # "(Re-)joining group": the JoinGroup sent from poll()
_UNKNOWN_HEARTBEAT_MS = 15000                   # a third of the 45 s default session timeout: the most a
                                                # well-configured member needs to hear of a rebalance


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [rebalance-stall], typed as thresholds_schema.toml types it."""
    min_wait_ms: int
    slack_ms: int
    critical_count: int


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    if classification.protocol not in PROTOCOLS + ("unknown",):
        return
    stalls = []                                  # (rebalance, member waited for, wait ms, its rejoin event or None)
    for r in group.rebalances:
        if r.operation == "initial-join" or r.protocol not in PROTOCOLS + ("unknown",):
            continue
        found = _stall(group, classification, r, t)
        if found is not None:
            stalls.append(found)
    if not stalls:
        return
    by_member: dict[str, list] = {}
    for s in stalls:
        by_member.setdefault(s[1], []).append(s)
    order = sorted(by_member, key=lambda m: (-len(by_member[m]), m))
    member = classification.members.get(order[0])
    culprit = culprit_of(classification.members, order[0])
    label = culprit.label if culprit else order[0]
    waits = [_wait(r, rejoin, i) for i, (r, who, wait, rejoin) in enumerate(stalls)]
    timeout = figures.setting(member, "max.poll.interval.ms", "max.poll.interval.ms (the rebalance timeout) in force")
    longest = figures.longest("longest_wait_ms", "longest wait for the member", waits)
    count = figures.rebalances("stalls", "rebalances that waited for one member", [s[0] for s in stalls])
    parts = [f"{count.text()} rebalance(s) waited for {names([label_of(classification.members, m) for m in order])} "
             f"to rejoin, up to {longest.text()}"
             + (f" (its max.poll.interval.ms, the rebalance timeout, is {timeout.value})" if timeout.known else "") + "."]
    for (r, who, _ms, rejoin), wait in list(zip(stalls, waits))[:3]:
        name = label_of(classification.members, who)
        if rejoin is None:
            parts.append(f"Generation {r.generation}: {name} never rejoined; the coordinator removed it when the "
                         f"rebalance timed out, {wait.text()} after the rebalance began.")
        else:
            parts.append(f"Generation {r.generation}: the other members rejoined within seconds, {name} only after "
                         f"{wait.text()}.")
    eager = any(r.protocol == "eager" for r, *_ in stalls)
    parts.append("Under the eager protocol the other members had revoked all their partitions and consumed nothing "
                 "meanwhile." if eager else "The other members kept their partitions but the new assignment waited.")
    evidence = []
    for r, who, wait, rejoin in stalls[:4]:
        evidence += r.evidence(EV.REBALANCE_PREPARE)[:1]
        if rejoin is not None:
            evidence.append(Evidence.of(rejoin))
        evidence += [Evidence.of(e) for e in r.events if _NOT_JOINED in (e.get("attrs") or {})][:1]
        evidence += r.evidence(EV.REBALANCE_STABILIZED)[:1]
    starts = [r.start for r, *_ in stalls if r.start]
    ends = [r.end or r.start for r, *_ in stalls if r.end or r.start]
    severity = escalate(len(stalls), t["critical_count"])
    finding = Finding(ID, severity, group.group, f"rebalances waited {longest.text()} for {label} to rejoin",
                      " ".join(parts), min(starts) if starts else None, max(ends) if ends else None, dedupe(evidence),
                      f"Make {label} poll sooner: lower max.poll.records or speed up its batch processing, so that "
                      "poll() returns well within the time the group can wait; max.poll.interval.ms bounds the wait. "
                      "CooperativeStickyAssignor keeps the other members consuming meanwhile.", culprit=culprit)
    finding.figures = [count, longest, timeout] + waits
    finding.cause = f"the group waited for {label} to rejoin"
    finding.caused = {"rebalances": [r.index for r, *_ in stalls], "culprits": order}
    yield finding


def _wait(r, rejoin: dict | None, i: int) -> figures.Figure:
    """One stall's wait: from the rebalance's first line to the member's rejoin (or to the coordinator removing it
    when the rebalance timed out)."""
    first = next((e for e in r.events if e.get("ts") is not None and e["ts"] == r.start), None)
    end = rejoin or next((e for e in r.events if _NOT_JOINED in (e.get("attrs") or {})), None)
    return figures.duration(f"wait.{i + 1}_ms", f"generation {r.generation}: wait from the rebalance's first line to "
                            + ("the member's rejoin" if rejoin is not None else "its removal"), first, end)


def _stall(group, classification, r, t):
    """(rebalance, member waited for, wait ms, its rejoin line or None) when one member held the JoinGroup phase."""
    if r.start is None:
        return None
    stabilized = next((e for e in r.events if e["event"] == EV.REBALANCE_STABILIZED), None)
    removed = next((e for e in r.events if _NOT_JOINED in (e.get("attrs") or {})), None)
    if removed is not None:
        who, member_id = _removed_member(group, classification, removed)
        if who is not None and _ended(classification, who, member_id, removed["ts"]):
            return None                          # a dead process: it could not rejoin, the group waited on its session
        if who is not None and not hears_too_late(classification.members, who):
            return r, who, (removed["ts"] - r.start).total_seconds() * 1000, None
        if who is not None:
            return None                          # it never heard of the rebalance in time: missed-rebalance's finding
    if stabilized is None:
        return None
    end = stabilized["ts"]
    rejoins: dict[str, dict] = {}
    for e in r.events:
        if e["event"] in _JOINS and e.get("component") != "broker" and e["ts"] <= end:
            who = group.who(e)
            if who and who not in rejoins:
                rejoins[who] = e
    if len(rejoins) < 2:
        return None                              # the lines of one member alone cannot show it held the others
    ordered = sorted(rejoins.items(), key=lambda kv: kv[1]["ts"])
    (last, event), before = ordered[-1], ordered[-2][1]
    wait = (event["ts"] - r.start).total_seconds() * 1000
    behind = (event["ts"] - before["ts"]).total_seconds() * 1000
    member = classification.members.get(last)
    heartbeat = (member.setting("heartbeat.interval.ms") if member else None) or _UNKNOWN_HEARTBEAT_MS
    if wait < t["min_wait_ms"] or behind < heartbeat + t["slack_ms"]:
        return None                              # it rejoined about when a heartbeat told it to: no stall
    if last in (r.trigger_member, r.culprit_name):
        return None                              # the member that started the rebalance is not waited for
    if member is not None and member.started_between(r.start, event["ts"]) is not None:
        return None                              # its join is a new process's: the one waited for had ended
    return r, last, wait, event


def _ended(classification, who: str, member_id: str | None, at) -> bool:
    """The process that held `member_id` had ended by `at`: a new process of the same member started (its own
    log), so the old one was killed, crashed or closed; whatever its poll loop did, it could not rejoin."""
    member = classification.members.get(who)
    if member is None or at is None:
        return False
    _began, ended = member.process_of(member_id, at)
    return ended is not None and ended <= at


def _removed_member(group, classification, event) -> tuple[str | None, str | None]:
    """(identity, member id) of the first member the coordinator removed for not rejoining."""
    text = (event.get("attrs") or {}).get(_NOT_JOINED) or ""
    for token in text.replace("Set(", " ").replace("List(", " ").replace("[", " ").replace("]", " ").replace(")", " ").replace(",", " ").split():
        member = classification.members.get(token)
        if member is not None:
            return member.identity, token
        if "-" in token:
            return token, token
    return None, None
