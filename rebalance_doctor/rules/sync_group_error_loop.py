"""Join, Sync, the same SyncGroup error, Join again: the group cannot complete a generation.

Symptom
-------
The coordinator cannot store the leader's assignment and rebalances again at once, generation
after generation::

    [2024-03-05 09:00:55,733] INFO [GroupCoordinator 2]: Preparing to rebalance group ledger in state PreparingRebalance with old generation 2 (__consumer_offsets-39) (reason: error when storing group assignment during SyncGroup (member: consumer-ledger-1-eafefd33-48da-4629-a560-44230ec1f12c)) (kafka.coordinator.group.GroupCoordinator)

while the members rejoin after every "Rebalance failed." or SyncGroup error (librdkafka:
"SyncGroupRequest failed: Unknown broker error: actions Permanent" after a 624057-byte
SyncGroupRequest). A generation number in the tens of thousands (``generationId=76030``) says the
group has been rebalancing like this long before the window.

Why it happens
--------------
The SyncGroup is where the leader's assignment is written to ``__consumer_offsets`` as one record.
When the write fails the coordinator answers the SyncGroup with an error and starts a new
rebalance; with the same members and the same assignment the next write fails the same way, so the
group never completes a generation and nobody consumes. The usual cause is an assignment larger
than the broker accepts for one record (many partitions or members, long client ids and topic
names, big user data of a custom assignor or of Kafka Streams); a failing ``__consumer_offsets``
partition is the other. "The group began another rebalance" (REBALANCE_IN_PROGRESS) and the
coordinator moving are not such errors: failed-rebalance-loop and coordinator-churn tell those.

Remediation
-----------
Let the record fit: raise ``message.max.bytes`` on the brokers (or ``max.message.bytes`` on the
``__consumer_offsets`` topic) above the size of the leader's assignment, or make the assignment
smaller (fewer members or partitions per group, shorter ``client.id``\\ s and topic names, leaner
assignor user data); check the coordinator's log for the write error of that partition. For a
group that only grew its generation number, find what rebalances it (the other findings).

Scope: classic groups (consumer, Streams, Connect); KIP-848 groups have no SyncGroup.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, escalate, names

ID = "sync-group-error-loop"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("eager", "cooperative", "streams", "connect")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [sync-group-error-loop], typed as thresholds_schema.toml types it."""
    min_repeats: int
    critical_repeats: int
    chronic_generation: int


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    errors = classification.sync_errors
    by_error = errors.by_error()
    loops = {error: failures for error, failures in by_error.items()
             if len({f.generation if f.generation is not None else id(f.event) for f in failures}) >= t["min_repeats"]}
    chronic = errors.max_generation is not None and errors.max_generation >= t["chronic_generation"]
    if loops:
        yield _loop(group, classification, loops, errors.max_generation if chronic else None, t)
    elif chronic and (by_error or any(r.outcome == "failed" for r in group.rebalances)):
        yield _chronic(group, errors.max_generation)


def _loop(group: GroupTimeline, classification, loops: dict, chronic: int | None, t: dict) -> Finding:
    error, failures = max(loops.items(), key=lambda item: len(item[1]))
    members = [f.member for f in failures if f.member]
    # the member that failed most, and of those the first to fail (a set's order would change with the hash seed)
    culprit_name = Counter(members).most_common(1)[0][0] if members else None
    culprit = culprit_of(classification.members, culprit_name)
    label = culprit.label if culprit else (culprit_name or "the leader")
    generations = sorted({f.generation for f in failures if f.generation is not None})
    ids = {id(f.event) for f in failures}
    caused = [r.index for r in group.rebalances if r.trigger_kind == "sync-error" or any(id(e) in ids for e in r.events)]
    span = f" (generations {generations[0]}-{generations[-1]})" if len(generations) > 1 else ""
    by_index = {r.index: r for r in group.rebalances}
    figs = [figures.count("failures", f"SyncGroups that failed with {error}", [f.event for f in failures]),
            figures.rebalances("rebalances_caused", "rebalances they caused", [by_index[i] for i in caused]),
            figures.threshold("min_repeats", t["min_repeats"], figures.COUNT,
                              "generations failing with one error that make a loop", ID, "min_repeats")]
    if chronic:
        figs.append(figures.stated("generation", chronic, figures.COUNT, "the group's generation (rebalances since "
                                   "it was created)", next((f.event for f in failures if f.generation == chronic),
                                                           failures[-1].event)))
    parts = [f"{figs[0].text()} SyncGroups in a row failed with the same error{span}: {error}; each time the group "
             f"rebalanced again into the same failure, so no generation completed."]
    if error.startswith("the coordinator could not store"):
        parts.append(f"The assignment it could not write was {label}'s (the leader).")
    if chronic:
        parts.append(f"The generation number ({chronic}) says the group rebalanced tens of thousands of times before "
                     "this window.")
    evidence = [Evidence.of(f.event) for f in failures[:3]] + [Evidence.of(failures[-1].event)]
    severity = escalate(len(failures), t["critical_repeats"])
    start, end = window(evidence)
    finding = Finding(ID, severity, group.group, f"SyncGroup fails again and again: {error}",
                      " ".join(parts), start, end, dedupe(evidence),
                      "Let the assignment record fit: raise message.max.bytes on the brokers (or max.message.bytes on "
                      "__consumer_offsets) above the leader's assignment size, or make the assignment smaller (fewer "
                      "members or partitions per group, shorter client.id and topic names, leaner assignor user data); "
                      "check the coordinator's log for the write error.", culprit=culprit)
    finding.figures = figs
    finding.cause = f"SyncGroup failing with {error}"
    finding.caused = {"rebalances": caused, "culprits": sorted(set(members))}
    return finding


def _chronic(group: GroupTimeline, generation: int) -> Finding:
    failed = [r for r in group.rebalances if r.outcome == "failed"]
    evidence = [r.trigger_evidence or Evidence.of(r.events[0]) for r in failed[:2] if r.events]
    stating = next((e for e in group.events if e.get("generation") == generation), None)
    start, end = window(evidence)
    finding = Finding(ID, "info", group.group, f"generation {generation}: chronic rebalancing before this window",
                      f"The group is at generation {generation}: it has rebalanced tens of thousands of times since it "
                      "was created, most of it before these logs. "
                      + (f"Its SyncGroup failed here ({names([r.failure or '?' for r in failed[:1]])}); " if failed else "")
                      + "one failure is not a loop, and the window does not say what keeps it rebalancing.",
                      start, end, dedupe(evidence),
                      "Collect the logs of a longer window (the coordinator's and every member's) to find what "
                      "rebalances the group.")
    finding.role = "advisory"
    finding.figures = [figures.stated("generation", generation, figures.COUNT,
                                      "the group's generation (rebalances since it was created)", stating)]
    return finding
