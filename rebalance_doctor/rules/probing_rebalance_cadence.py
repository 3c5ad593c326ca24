"""Kafka Streams warmup replicas that never catch up: probing rebalances that never converge.

Symptom
-------
Probe after probe, the leader's task assignor decides on the same warmups, their lags do not
shrink, their tasks never move to them, and it schedules yet another probing rebalance::

    [2024-06-01 09:10:02,118] INFO Decided on assignment: {0056a363-...=[activeTasks: ([]) standbyTasks: ([0_4, 0_6]) prevActiveTasks: ([]) prevStandbyTasks: ([0_4, 0_6]) changelogOffsetTotalsByTask: ([0_4=7952536, 0_6=11506336]) taskLagTotals: ([0_0=34538583, 0_4=14817934, 0_6=10036525]) clientTags: ([]) capacity: 2 assigned: 2], f255dce1-...=[activeTasks: ([0_0, 0_4, 0_6]) ...]} with followup probing rebalance. (org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor)
    [2024-06-01 09:10:02,120] INFO stream-thread [inventory-f255dce1-...-StreamThread-1-consumer] Requesting followup rebalance be scheduled by inventory-f255dce1-...-StreamThread-1-consumer for 2024-06-01 09:20:02,120 Z to probe for caught-up replica tasks. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)
    [2024-06-01 09:10:02,121] INFO stream-thread [inventory-f255dce1-...-StreamThread-1-consumer] Finished unstable assignment of tasks, a followup rebalance will be scheduled. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)
    [2024-06-01 09:20:02,300] INFO Decided on assignment: {0056a363-...=[... standbyTasks: ([0_4, 0_6]) ... taskLagTotals: ([0_0=36868428, 0_4=15720988, 0_6=13567558]) ...]} with followup probing rebalance. (org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor)

Why it happens
--------------
When the assignor (KIP-441, 2.6+) wants to move a stateful task to a client that does not have
its state, the task stays where its state is and the new client restores a warmup replica; a
probing rebalance every ``probing.rebalance.interval.ms`` checks whether the warmup is within
``acceptable.recovery.lag``, and only then moves the task. A warmup whose changelog grows faster
than the client restores it never gets there: the probes never end, the tasks never move and
the load stays skewed on the clients that hold the state. Probing that converges is the feature
working, not a finding: the lags shrink from probe to probe, tasks move, and the decisions end
``with no followup probing rebalance`` (``Finished stable assignment of tasks``); the rule judges
progress, never the number or spacing of the probes, and it judges it warmup by warmup: while
one client's warmups catch up and tasks move between the clients that have state, another
client's warmups can stay stuck (real Kafka, the lab's streams-warmup-stalled). It needs the leader's "Decided on
assignment" lines (their ``taskLagTotals``): without them it says nothing.

Remediation
-----------
Let the warmups catch up: give the restoring clients more restore bandwidth (disk, network,
``restore.consumer.max.poll.records``), raise ``max.warmup.replicas`` only if restore capacity is
there, or add ``num.standby.replicas`` so that state is already present where tasks move. If the
restoration downtime is acceptable, ``acceptable.recovery.lag`` set very high moves the tasks at
once (no warmups). Avoid scaling again while probing is in progress.

Scope: Kafka Streams on the classic protocol (2.6+, the high-availability task assignor).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe
from ..core import eventnames as EV

ID = "probing-rebalance-cadence"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("streams",)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [probing-rebalance-cadence], typed as thresholds_schema.toml types it."""
    probes_without_progress: int
    caught_up_lag: int


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    for stall in classification.warmups.stalls(t["caught_up_lag"], t["probes_without_progress"]):
        decisions = stall.decisions
        start, end = decisions[0].event["ts"], decisions[-1].event["ts"]
        worst = sorted(stall.lags.items(), key=lambda item: item[1][1] - item[1][0], reverse=True)
        shown = ", ".join(f"{task} on {_short(process)}: {first:,} -> {last:,}"
                          for (process, task), (first, last) in worst[:3])
        processes = sorted({process for process, _task in stall.lags},
                           key=lambda p: -sum(1 for q, _t in stall.lags if q == p))
        member = _member_of(classification.members, processes[0]) if processes else None
        indexes = sorted({d.rebalance for d in decisions if d.rebalance is not None})
        probes = [e for r in group.rebalances if r.index in indexes for e in r.events
                  if e["event"] in (EV.STREAMS_FOLLOWUP_PROBING, EV.STREAMS_ASSIGNMENT_UNSTABLE)]
        evidence = dedupe([Evidence.of(decisions[0].event), Evidence.of(decisions[-1].event)]
                          + [Evidence.of(e) for e in probes[:2]])
        count = figures.count("probes", "consecutive probing decisions in which the same warmups got no closer",
                              [d.event for d in decisions])
        span = figures.duration("span_ms", "from the first of those decisions to the last", decisions[0].event,
                                decisions[-1].event)
        lags = [figures.derived(f"lag_growth.{task}", last - first, figures.RECORDS,
                                f"warmup lag growth of {task} on {_short(process)} ({first:,} -> {last:,})",
                                [stall.spans[(process, task)][0].event, stall.spans[(process, task)][1].event],
                                "its last decision's lag - its first decision's lag")
                for (process, task), (first, last) in worst[:3]]
        state = "then converged" if stall.converged_after else "still not converged at the end of the logs"
        finding = Finding(
            ID, "warning", group.group,
            f"warmup tasks not catching up: {count.text()} probing rebalances without progress ({state})",
            f"{count.text()} consecutive assignments over {span.text()} each scheduled another probing "
            f"rebalance, and the same warmups got no closer: their lags never shrank, their tasks never moved to "
            f"them. Warmup lags (first -> last decision): {shown}. The restoring client(s) "
            f"{', '.join(_short(p) for p in processes)} restore slower than the changelogs grow.",
            start, end, evidence,
            "Give the restoring clients more restore bandwidth, add num.standby.replicas so state is already where "
            "tasks move, or set acceptable.recovery.lag very high to move tasks at once; do not scale again while "
            "probing.", culprit=member.culprit() if member else None)
        finding.figures = [count, span, *lags,
                           figures.threshold("probes_without_progress", t["probes_without_progress"], figures.COUNT,
                                             "probing decisions without progress that make it stalled", ID,
                                             "probes_without_progress")]
        finding.cause = "Streams warmup replicas not catching up: probing rebalances never converge"
        finding.caused = {"rebalances": indexes, "members": [member.culprit().label] if member else []}
        yield finding


def _short(process: str) -> str:
    return process.split("-")[0]


def _member_of(members, process: str):
    """The member (a StreamThread's consumer) of the client with this process id, its first thread."""
    found = [m for m in members if process in (m.client or "")]
    return min(found, key=lambda m: m.client) if found else None
