"""Kafka Streams probing rebalances repeating at probing.rebalance.interval.ms.

Symptom
-------
The assignor keeps scheduling a probing rebalance, and the rebalances come about every 10
minutes (the default ``probing.rebalance.interval.ms``)::

    [2024-06-01 09:00:02,120] INFO stream-thread [inventory-1f7c...-StreamThread-1-consumer] Requesting followup rebalance be scheduled by inventory-1f7c...-StreamThread-1-consumer for 1717232402120 to probe for caught-up replica tasks. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)
    [2024-06-01 09:00:02,121] INFO stream-thread [inventory-1f7c...-StreamThread-1-consumer] Finished unstable assignment of tasks, a followup rebalance will be scheduled. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)
    [2024-06-01 09:10:02,300] INFO stream-thread [inventory-1f7c...-StreamThread-1] Triggering the followup rebalance scheduled for 1717232402120. (org.apache.kafka.streams.processor.internals.StreamThread)

Why it happens
--------------
When the assignor wants to move a stateful task to a client that does not have its state, it
places a warmup replica there and schedules a probing rebalance to check whether the warmup has
caught up (within ``acceptable.recovery.lag``). While the warmups lag, every probe ends unstable
and schedules the next one: the group rebalances every interval, and the assignment can be very
skewed meanwhile. Probes that end with ``Finished stable assignment of tasks, no followup
rebalances required.`` (or ``Decided on assignment: ... with no followup probing rebalance``)
converged: that is the feature working, not a finding. Only a series still scheduling probes at
the end of the logs is reported.

Remediation
-----------
Let the warmups catch up faster: raise ``max.warmup.replicas`` (more parallel warmups), give
the clients more restore bandwidth, or add ``num.standby.replicas`` so state is already present.
If the restoration downtime is acceptable, ``acceptable.recovery.lag`` set very high moves tasks
at once (no warmups). Avoid scaling repeatedly while probing is in progress.

Scope: Kafka Streams (2.6+, the high-availability task assignor).
"""

from __future__ import annotations

from statistics import median

from ..classify import of
from ..timeline.model import GroupTimeline
from .finding import Finding, dedupe
from .helpers import seconds

ID = "probing-rebalance-cadence"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("streams",)


def check(group: GroupTimeline, t: dict):
    probing = [r for r in group.rebalances if r.followup == "probing" or r.operation == "probing-followup"
               or any(e["event"] == "streams.followup.probing" for e in r.events)]
    if len(probing) < t["min_probing"] or _converged(group, probing[-1]):
        return
    triggered = [r for r in group.rebalances if r.operation == "probing-followup"]
    starts = [r.start for r in (triggered or probing)]
    gaps = [(b - a).total_seconds() * 1000 for a, b in zip(starts, starts[1:])]
    interval = t["interval_ms"]
    on_cadence = [g for g in gaps if abs(g - interval) <= interval * t["tolerance"]]
    if len(on_cadence) < t["min_probing"] - 1:
        return
    evidence = [ev for r in probing for ev in r.evidence("streams.followup.probing")][:4]
    evidence += [ev for r in triggered for ev in r.evidence("streams.followup.triggered")][:4]
    typical = median(on_cadence)
    leader = probing[-1].leader
    member = of(group).members.get(leader) if leader else None
    finding = Finding(ID, "warning", group.group,
                      f"{len(probing)} probing rebalances every ~{seconds(typical)}, still not converged "
                      "(warmup tasks not catching up)",
                      f"{len(probing)} rebalances scheduled a probing followup; {len(on_cadence)} of the {len(gaps)} "
                      f"gaps between them are within {t['tolerance']:.0%} of probing.rebalance.interval.ms={interval} "
                      f"(median {seconds(typical)}); the last one still ended unstable and no stable assignment "
                      "followed: the warmup replicas have not caught up.",
                      probing[0].start, probing[-1].end, dedupe(evidence),
                      "Let warmups catch up: raise max.warmup.replicas, add num.standby.replicas, give restores "
                      "more bandwidth; or set acceptable.recovery.lag very high to move tasks at once. Avoid scaling "
                      "again while probing is in progress.", culprit=member.culprit() if member else None)
    finding.cause = "Streams warmup replicas not catching up: probing rebalances never converge"
    finding.caused = {"rebalances": [r.index for r in probing], "culprits": [leader] if leader else []}
    yield finding


def _converged(group: GroupTimeline, last) -> bool:
    """A stable assignment (no followup) after the last probing rebalance: the warmups caught up."""
    for r in group.rebalances:
        if r.index < last.index:
            continue
        for e in r.events:
            if e["event"] == "streams.assignment.stable" or (
                    e["event"] == "streams.assignment.decided" and "no followup" in (e.get("message") or "")[:2000]):
                return True
        if r.index > last.index and r.outcome == "stable":
            return True
    return last.outcome == "stable" and last.followup != "probing"
