"""Rebalances too frequent, or the group without a stable generation for much of the window.

Symptom
-------
The coordinator prepares one rebalance after another, each with a new old generation::

    [2024-03-05 10:00:41,002] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state PreparingRebalance with old generation 12 (__consumer_offsets-8) (reason: Removing member consumer-payments-1-6b1f... on LeaveGroup; client reason: consumer poll timeout has expired.) (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 10:01:12,420] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state PreparingRebalance with old generation 13 (__consumer_offsets-8) (reason: Adding new member consumer-payments-1-0c2e... with group instance id None; client reason: need to re-join with the given member-id: ...) (kafka.coordinator.group.GroupCoordinator)

and the members keep logging ``Request joining group due to: group is already rebalancing``.

Why it happens
--------------
A storm is a symptom: something keeps changing the membership. Each rebalance stops the
consumption of the partitions being moved (all of them with eager assignors), so a slow member
that times out and rejoins, a crash-looping instance or a flapping network turns into rebalance
after rebalance. The finding counts the rebalances (peak per window, rate per hour), the share
of the window the group spent without a stable generation, and names the root causes that
started them (the members rejoining because the group "is already rebalancing" are symptoms).

Remediation
-----------
Fix the root cause named in the finding (its own rule says how). Meanwhile: static membership
(``group.instance.id`` with a ``session.timeout.ms`` longer than a restart) avoids rebalances on
restarts; the cooperative assignor (``partition.assignment.strategy=
org.apache.kafka.clients.consumer.CooperativeStickyAssignor``, the default for Streams) keeps
unaffected partitions consuming; the KIP-848 protocol (``group.protocol=consumer``, Kafka 4.0+)
makes rebalances incremental on the broker.
"""

from __future__ import annotations

from datetime import timedelta

from ..timeline.model import GroupTimeline
from .finding import Finding, Note
from .helpers import KIND_WORDS, names, root_causes, seconds, span, trigger_evidence

ID = "rebalance-storm"
SEVERITY = "warning"


def check(group: GroupTimeline, t: dict):
    rebalances = group.rebalances
    if len(rebalances) < t["min_rebalances"]:
        return
    window = timedelta(minutes=t["window_minutes"])
    starts = [r.start for r in rebalances if r.start]
    peak = 0
    left = 0
    for right, start in enumerate(starts):
        while start - starts[left] > window:
            left += 1
        if right - left + 1 > peak:
            peak = right - left + 1
    window_ms = group.window_ms
    share = group.unstable_ms / window_ms if window_ms > 0 else 0.0
    by_rate = peak > t["max_per_window"]
    by_share = share > t["max_unstable_share"] and window_ms >= 60_000
    if not (by_rate or by_share):
        return
    if window_ms < 60_000 and not by_rate:
        yield Note(ID, group.group, "window under a minute: too short to call a storm")
        return
    causes = root_causes(rebalances)
    named = [(k, n) for k, n in causes.most_common() if k != "unknown"]
    parts = [f"{n} by {KIND_WORDS.get(k, k)}" for k, n in named]
    if causes.get("unknown"):
        starters = sorted({r.trigger_member for r in rebalances if not r.trigger_kind and r.trigger_member})
        parts.append(f"{causes['unknown']} with no logged cause (only 'group is already rebalancing' symptoms"
                     + (f"; the coordinator names {names(starters)} as rejoining first" if starters else "") + ")")
    cause_text = "; ".join(parts)
    hours = window_ms / 3_600_000
    rate = f", {len(rebalances) / hours:.0f}/h" if hours >= 0.05 else ""
    start, end = span(rebalances)
    failed = len(group.failed)
    severity = "critical" if share >= t["critical_unstable_share"] or peak > 2 * t["max_per_window"] else "warning"
    lead = named[0][0] if named else None
    yield Finding(
        rule=ID, severity=severity, group=group.group,
        title=f"rebalance storm: {len(rebalances)} rebalances in {seconds(window_ms)}, "
              f"unstable {share:.0%} of the time",
        summary=(f"{len(rebalances)} rebalances ({failed} failed) between {start:%H:%M:%S} and {end:%H:%M:%S}"
                 f"{rate}; peak {peak} within {t['window_minutes']} min (threshold {t['max_per_window']}); "
                 f"no stable generation for {seconds(group.unstable_ms)} of {seconds(window_ms)} ({share:.0%}, "
                 f"threshold {t['max_unstable_share']:.0%}). Root causes: {cause_text}."
                 + (f" Main cause: {KIND_WORDS.get(lead, lead)} (see the {lead} finding)." if lead else "")),
        start=start, end=end,
        evidence=trigger_evidence([r for r in rebalances if r.trigger_kind == lead] or rebalances, 6),
        remediation=("Fix the root cause above; the storm ends with it. Reduce the cost of each rebalance: "
                     "static membership (group.instance.id, session.timeout.ms above a restart), "
                     "partition.assignment.strategy=CooperativeStickyAssignor, or group.protocol=consumer "
                     "(KIP-848) on Kafka 4.0+."))
