"""A member was removed because the coordinator got no heartbeat within session.timeout.ms.

Symptom
-------
On the coordinator::

    [2024-03-05 10:00:45,113] INFO [GroupCoordinator 1]: Member consumer-orders-2-77aa... in group orders has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 10:00:45,114] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state PreparingRebalance with old generation 41 (__consumer_offsets-17) (reason: removing member consumer-orders-2-77aa... on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)

KIP-848 groups: ``[GroupId orders] Member 3tXq... fenced from the group because its session
expired.`` On a member whose heartbeats do not get through::

    ... Group coordinator broker-1:9092 (id: 2147483646 rack: null) is unavailable or invalid due to cause: session timed out without receiving a heartbeat response. isDisconnected: false. Rediscovery will be attempted.

and, once it reconnects, ``Attempt to heartbeat with Generation{...} and group instance id
Optional.empty failed due to UNKNOWN_MEMBER_ID, resetting generation``.

Why it happens
--------------
The heartbeat thread proves the process is alive. No heartbeat for ``session.timeout.ms``
(45 s by default since 3.0, 10 s before) means the process died or was stopped without leaving
(a crash, a kill -9, a Streams instance shut down: Streams does not send LeaveGroup), or the
heartbeats could not get through (network partition, long GC pause, CPU starvation). When the
member's own log shows it shutting down just before, the expiration is the expected end of a
shutdown and the finding is only informational.

Remediation
-----------
If the process died: find why (its last lines, the orchestrator's events). If it was alive: look
for GC pauses and network problems around the time; ``session.timeout.ms`` (and
``heartbeat.interval.ms`` at a third of it) can be raised to ride out short hiccups. For planned
restarts use static membership (``group.instance.id``) with ``session.timeout.ms`` above the
restart time, so the member comes back without a rebalance.
"""

from __future__ import annotations

from ..timeline import identity
from ..timeline.model import Evidence, GroupTimeline
from ..timeline.triggers import classify
from .finding import Finding, dedupe, window
from .helpers import names

ID = "heartbeat-expiration"
SEVERITY = "warning"
_SHUTDOWN_STATES = ("PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR")


def check(group: GroupTimeline, t: dict):
    broker = [e for e in group.events if e["event"] == "member.expired"
              or (e["event"] == "rebalance.prepare" and "heartbeat expiration" in (e.get("reason") or ""))]
    removed = [e for e in broker if e["event"] == "member.expired"] or broker
    client = group.of("session.timeout")
    if not removed and not client:
        return
    members = sorted({_who(group, e) for e in removed} | {group.who(e) or "?" for e in client})
    shutdowns = _shutdowns(group)
    planned = [m for m in members if any(m.startswith(node) or node.startswith(m) for node in shutdowns)]
    count = len(removed) or len(client)
    evidence = [Evidence.of(e) for e in removed + client]
    evidence += [Evidence.of(e) for e in group.of("heartbeat.failed")
                 if "UNKNOWN_MEMBER_ID" in (e.get("error") or "")][:2]
    start, end = window(evidence)
    config = [(e.get("attrs") or {}).get("session.timeout.ms") for e in group.of("client.config")]
    config = [c for c in config if c]
    summary = (f"{count} member(s) removed on session timeout: {names(members)}"
               + (f" (session.timeout.ms={config[0]})" if config else "") + ".")
    if removed and not client:
        summary += " The members' own logs show no heartbeat problem (or are not included): if they are, " \
                   "the process most likely stopped without leaving the group."
    if client and not removed:
        summary += " Only the client side is logged: the heartbeats did not get through (network, GC, starvation)."
    if planned and len(planned) == len(members):
        yield Finding(ID, "info", group.group, f"{count} member(s) expired after shutting down",
                      summary + " Each of them was shutting down just before: expected for a Kafka Streams "
                      "instance (it does not send LeaveGroup).", start, end, dedupe(evidence),
                      "Nothing to fix; for faster handover of planned restarts use static membership "
                      "(group.instance.id) with session.timeout.ms above the restart time.")
        return
    severity = "critical" if count >= t["critical_count"] else "warning"
    yield Finding(ID, severity, group.group, f"{count} member(s) removed on heartbeat expiration (session timeout)",
                  summary, start, end, dedupe(evidence),
                  "If the process died, find why (its last lines, the orchestrator's events). If it was alive, "
                  "look for GC pauses and network trouble; raise session.timeout.ms (heartbeat.interval.ms at a "
                  "third of it) to ride out short hiccups; for restarts use static membership (group.instance.id).")


def _who(group: GroupTimeline, event: dict) -> str:
    if event["event"] == "rebalance.prepare":
        found = classify(event.get("reason"))
        if found and found.member:
            return identity.canonical(identity.client_of_member(found.member))
    return group.who(event) or "?"


def _shutdowns(group: GroupTimeline) -> set[str]:
    """Identities (or Streams nodes) whose own log shows them shutting down."""
    names_ = set()
    for e in group.events:
        if (e["event"] == "streams.state" and (e.get("state") or "") in _SHUTDOWN_STATES) or \
                (e["event"] == "leave.request" and "being closed" in (e.get("reason") or "")):
            who = group.who(e)
            if who:
                names_.add(identity.node_of(who) or who)
    return names_
