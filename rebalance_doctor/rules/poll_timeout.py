"""A member exceeded max.poll.interval.ms and was taken out of the group.

Symptom
-------
On the member (its heartbeat thread)::

    [2024-03-05 10:00:41,001] WARN [Consumer clientId=consumer-payments-1, groupId=payments] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with max.poll.records. (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)
    [2024-03-05 10:00:41,001] INFO [Consumer clientId=consumer-payments-1, groupId=payments] Member consumer-payments-1-6b1f... sending LeaveGroup request to coordinator broker-1:9092 (id: 2147483646 rack: null) due to consumer poll timeout has expired. (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)

on the coordinator, the LeaveGroup with the client's reason (3.3+)::

    [2024-03-05 10:00:41,002] INFO [GroupCoordinator 1]: Member consumer-payments-1-6b1f... has left group payments through explicit `LeaveGroup`; client reason: consumer poll timeout has expired. (kafka.coordinator.group.GroupCoordinator)

and later, when the slow poll finally returns, ``Commit cannot be completed since the group has
already rebalanced`` and a rejoin (a second rebalance).

Why it happens
--------------
``poll()`` drives group membership: if the application spends longer than
``max.poll.interval.ms`` (5 minutes by default) between two calls, the heartbeat thread assumes
the polling thread is stuck and leaves the group. Typical causes: a batch of
``max.poll.records`` records that takes too long to process, a slow downstream call, a long GC
pause, a RocksDB write stall (Streams). Every timeout costs two rebalances (leave, rejoin), and
records processed after the timeout are processed again by the new owner.

Remediation
-----------
Make one poll loop iteration shorter than ``max.poll.interval.ms``: lower ``max.poll.records``,
move slow work off the polling thread, or raise ``max.poll.interval.ms`` to the real worst case
(a higher value also delays the detection of a truly stuck member). Kafka Connect:
``rebalance.timeout.ms`` plays this role for workers.
"""

from __future__ import annotations

from ..timeline import identity
from ..timeline.model import Evidence, GroupTimeline
from .finding import Finding, dedupe, window
from .helpers import names, said

ID = "poll-timeout"
SEVERITY = "warning"
_WORDING = "poll timeout has expired"


def check(group: GroupTimeline, t: dict):
    causes: list[dict] = []
    for e in group.events:
        name = e["event"]
        if name == "poll.timeout" or (name in ("leave.request", "member.leave", "rebalance.prepare")
                                      and said(e, _WORDING)) \
                or (name == "member.fenced" and said(e, "failed to join within the rebalance timeout")):
            causes.append(e)
    if not causes:
        return
    members: dict[str, list[dict]] = {}
    for e in causes:
        who = group.who(e) or "?"
        if e["event"] == "rebalance.prepare":
            member = _member_in(reason_of(e))
            who = group.directory.get(member) or identity.canonical(identity.client_of_member(member)) if member else who
        members.setdefault(who, []).append(e)
    # One timeout shows up as up to four lines (client warning, LeaveGroup, broker leave, prepare):
    # count the client warnings when present, else the broker's records.
    client_side = [e for e in causes if e["event"] == "poll.timeout"]
    count = len(client_side) or len([e for e in causes if e["event"] in ("member.leave", "member.fenced")]) \
        or len([e for e in causes if e["event"] == "rebalance.prepare"])
    symptoms = [e for e in group.of("commit.failed") if said(e, "rebalanced")]
    config = _configured(group)
    rebalances = [r for r in group.rebalances if r.trigger_kind == "poll-timeout"]
    evidence = [Evidence.of(e) for e in (client_side or causes)] + [Evidence.of(e) for e in symptoms[:2]]
    start, end = window(evidence)
    severity = "critical" if count >= t["critical_count"] else "warning"
    summary = (f"{count} poll timeout(s) by {names(sorted(members))}; they started {len(rebalances)} rebalance(s)"
               + (f" and {len(symptoms)} offset commit(s) failed because the group had rebalanced" if symptoms else "")
               + (f". Configured max.poll.interval.ms={config['max.poll.interval.ms']}" if config.get("max.poll.interval.ms") else "")
               + (f", max.poll.records={config['max.poll.records']}" if config.get("max.poll.records") else "")
               + ".")
    if not client_side:
        summary += " Only the coordinator's side is logged: what the polling thread was doing is not known."
    yield Finding(ID, severity, group.group,
                  f"{count} member poll timeout(s) (max.poll.interval.ms exceeded)", summary, start, end,
                  dedupe(evidence),
                  "Shorten one poll-loop iteration below max.poll.interval.ms: lower max.poll.records, move slow "
                  "work off the polling thread, or raise max.poll.interval.ms to the real worst case "
                  "(Connect workers: rebalance.timeout.ms). Check what the member was doing just before (GC, "
                  "downstream calls, RocksDB stalls).")


def reason_of(e: dict) -> str:
    return e.get("reason") or ""


def _member_in(reason: str) -> str | None:
    import regex

    m = regex.search(r"[Mm]ember (\S+)", reason)
    return m.group(1) if m else None


def _configured(group: GroupTimeline) -> dict:
    settings = {}
    for e in group.of("client.config"):
        attrs = e.get("attrs") or {}
        for key in ("max.poll.interval.ms", "max.poll.records", "session.timeout.ms"):
            if key in attrs:
                settings[key] = attrs[key]
    return settings
