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
skewed meanwhile. A few probes after a scale-out are expected; an endless series means the
warmups never catch up.

Remediation
-----------
Let the warmups catch up faster: raise ``max.warmup.replicas`` (more parallel warmups), give
the clients more restore bandwidth, or add ``num.standby.replicas`` so state is already present.
If the restoration downtime is acceptable, ``acceptable.recovery.lag`` set very high moves tasks
at once (no warmups). Avoid scaling repeatedly while probing is in progress.
"""

from __future__ import annotations

from statistics import median

from ..timeline.model import GroupTimeline
from .finding import Finding, dedupe
from .helpers import seconds

ID = "probing-rebalance-cadence"
SEVERITY = "warning"


def check(group: GroupTimeline, t: dict):
    probing = [r for r in group.rebalances if r.followup == "probing"
               or any(e["event"] == "streams.followup.probing" for e in r.events)]
    if len(probing) < t["min_probing"]:
        return
    triggered = [r for r in group.rebalances if r.trigger_kind == "followup"]
    starts = [r.start for r in (triggered or probing)]
    gaps = [(b - a).total_seconds() * 1000 for a, b in zip(starts, starts[1:])]
    interval = t["interval_ms"]
    on_cadence = [g for g in gaps if abs(g - interval) <= interval * t["tolerance"]]
    if len(on_cadence) < t["min_probing"] - 1:
        return
    last_unstable = probing[-1].outcome == "unstable"
    evidence = [ev for r in probing for ev in r.evidence("streams.followup.probing")][:4]
    evidence += [ev for r in triggered for ev in r.evidence("streams.followup.triggered")][:4]
    typical = median(on_cadence)
    yield Finding(ID, "warning", group.group,
                  f"{len(probing)} probing rebalances every ~{seconds(typical)} (warmup tasks not catching up)",
                  f"{len(probing)} rebalances scheduled a probing followup; {len(on_cadence)} of the {len(gaps)} gaps "
                  f"between them are within {t['tolerance']:.0%} of probing.rebalance.interval.ms={interval} "
                  f"(median {seconds(typical)})"
                  + ("; the last one still ended unstable (another probe is scheduled)." if last_unstable else "."),
                  probing[0].start, probing[-1].end, dedupe(evidence),
                  "Let warmups catch up: raise max.warmup.replicas, add num.standby.replicas, give restores "
                  "more bandwidth; or set acceptable.recovery.lag very high to move tasks at once. Avoid scaling "
                  "again while probing is in progress.")
