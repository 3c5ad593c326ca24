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

Or the group fails once and empties: the Java consumer raises the coordinator's UNKNOWN_SERVER_ERROR
from ``poll()`` (``rebalance failed due to 'Unexpected error from SyncGroup: The server experienced an
unexpected error when processing the request.' (KafkaException)``), and an application that lets the
exception end its loop closes its consumer: every member leaves, and ``Group orders with generation 2
is now empty`` (the lab's assignor-stats-too-large-exit at 3.9.2, 4.2.1 and 4.4.0).

Why it happens
--------------
The SyncGroup is where the leader's assignment is written to ``__consumer_offsets`` as one record.
When the write fails the coordinator answers the SyncGroup with an error and starts a new
rebalance; with the same members and the same assignment the next write fails the same way, so the
group never completes a generation and nobody consumes; when the applications end on the error
instead, nobody consumes at once. The usual cause is an assignment larger
than the broker accepts for one record (many partitions or members, long client ids and topic
names, big user data of a custom assignor or of Kafka Streams); a failing ``__consumer_offsets``
partition is the other. The coordinator's own line says which: the Scala coordinator's "Appending
metadata message for group ... failed due to org.apache.kafka.common.errors.RecordTooLargeException",
CoordinatorRuntime's "Writing records to __consumer_offsets-31 failed due to: The request included a
message larger than the max message size the server will accept." (3.9-4.3.0) or "Failed to write a
batch of 1 record(s) to __consumer_offsets-31 because it is larger than the maximum batch size of
1048588 bytes" (4.3.1+); when it is in the logs the finding quotes it (file:line) and states the
limit. "The group began another rebalance" (REBALANCE_IN_PROGRESS) and the
coordinator moving are not such errors: failed-rebalance-loop and coordinator-churn tell those.

Remediation
-----------
Let the record fit: raise ``message.max.bytes`` on the brokers (or ``max.message.bytes`` on the
``__consumer_offsets`` topic) above the size of the leader's assignment, or make the assignment
smaller (fewer members or partitions per group, shorter ``client.id``\\ s and topic names, leaner
assignor user data); check the coordinator's log for the write error of that partition. For a
group that only grew its generation number, find what rebalances it (the other findings). Retrying
the failed poll in the application only turns an empty group into a loop while the record does not fit.

Scope: classic groups (consumer, Streams, Connect); KIP-848 groups have no SyncGroup.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from ..classify import of
from ..classify.sync_errors import STORE
from ..core import eventnames as EV
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


WRITE_BEFORE, WRITE_AFTER = timedelta(seconds=5), timedelta(seconds=1)
_FIT = ("Let the assignment record fit: raise message.max.bytes on the brokers (or max.message.bytes on "
        "__consumer_offsets) above the leader's assignment size, or make the assignment smaller (fewer members or "
        "partitions per group, shorter client.id and topic names, leaner assignor user data); check the "
        "coordinator's log for the write error.")


def _write_error(group: GroupTimeline, failures: list) -> tuple[dict | None, str]:
    """The coordinator's own line saying why it could not write the assignment (the Scala coordinator's "Appending
    metadata message ... failed due to RecordTooLargeException", CoordinatorRuntime's "Writing records to
    __consumer_offsets-N failed due to: ..." or 4.3.1's "Failed to write a batch ... larger than the maximum batch
    size"), logged by the broker within a few seconds before the first store failure up to the last; and its words."""
    stamped = [f.event["ts"] for f in failures if f.event.get("ts") is not None]
    if not stamped:
        return None, ""
    low, high = min(stamped) - WRITE_BEFORE, max(stamped) + WRITE_AFTER
    writes = [e for e in group.of(EV.COORDINATOR_WRITE_FAILED) + group.context
              if e["event"] == EV.COORDINATOR_WRITE_FAILED and e.get("ts") is not None and low <= e["ts"] <= high]
    if not writes:
        return None, ""
    first = min(writes, key=lambda e: e["ts"])
    attrs = first.get("attrs") or {}
    if attrs.get("max_batch_size"):
        words = (f"a batch of {attrs.get('records', '?')} record(s) larger than the maximum batch size of "
                 f"{attrs['max_batch_size']} bytes")
    else:
        words = (first.get("error") or "").rstrip(".") or "a write error"
    return first, words


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    errors = classification.sync_errors
    by_error = errors.by_error()
    loops = {error: failures for error, failures in by_error.items()
             if len({f.generation if f.generation is not None else id(f.event) for f in failures}) >= t["min_repeats"]}
    chronic = errors.max_generation is not None and errors.max_generation >= t["chronic_generation"]
    if loops:
        yield _loop(group, classification, loops, errors.max_generation if chronic else None, t)
    elif (emptied := _emptied(group, errors)) is not None:
        yield _ended(group, classification, *emptied)
    elif chronic and (by_error or any(r.outcome == "failed" for r in group.rebalances)):
        yield _chronic(group, errors.max_generation)


def _emptied(group: GroupTimeline, errors):
    """(the store failure, the rebalances open at it or after it, the members that left in them, the coordinator's
    line saying the group is empty) when a failure to store the assignment was followed by every member leaving and
    nobody joining again; else None."""
    stores = [f for f in errors.failures if f.error.startswith(STORE) and f.event.get("ts") is not None]
    if not stores:
        return None
    failure = stores[-1]
    at = failure.event["ts"]
    empty = next((e for e in group.of(EV.GROUP_EMPTY) if e.get("ts") is not None and e["ts"] >= at), None)
    if empty is None:
        return None
    # the rebalances still open at the failure or after it (the one the members' departures start may begin a few
    # milliseconds before the coordinator's line)
    after = [r for r in group.rebalances if (r.end or r.start) is not None and (r.end or r.start) >= at]
    if any(r.member_ids and (r.completed or (r.start is not None and r.start >= empty["ts"])) for r in after):
        return None     # someone joined again: a loop (or a recovery), not an ending
    left = sorted({m for r in after for m in r.left})
    return (failure, after, left, empty) if left else None


def _ended(group: GroupTimeline, classification, failure, after: list, left: list[str], empty: dict) -> Finding:
    culprit = culprit_of(classification.members, failure.member)
    departures = [e for e in group.of(EV.MEMBER_LEAVE) if e.get("ts") is not None and e["ts"] >= failure.event["ts"]]
    figs = [figures.count("failures", f"SyncGroups that failed with {failure.error}", [failure.event]),
            figures.derived("left", len(left), figures.COUNT, "members that left after it", departures,
                            "the distinct members of the LeaveGroups after it")]
    written, words = _write_error(group, [failure])
    figs += _batch_limit(written)
    evidence = ([Evidence.of(failure.event)] + ([Evidence.of(written)] if written else [])
                + [Evidence.of(e) for e in departures[:3]] + [Evidence.of(empty)])
    start, end = window(evidence)
    finding = Finding(ID, "critical", group.group,
                      f"SyncGroup failed: {failure.error}; every member left and the group is empty",
                      f"SyncGroup failed: {failure.error}{_because(written, words)}. Then "
                      f"{figs[1].text()} member(s) left ({names(left)}) and the coordinator found the group empty: "
                      "the Java consumer raises that SyncGroup error from poll() (KafkaException 'Unexpected error "
                      "from SyncGroup'), and these applications let it end their loop. Nobody consumes; started "
                      "again with the same members, the group fails the same way.",
                      start, end, dedupe(evidence),
                      _FIT + " Retrying the failed poll only turns the empty group into a loop while the record "
                      "does not fit.", culprit=culprit)
    finding.figures = figs
    finding.cause = f"SyncGroup failing with {failure.error}, which ended the applications"
    finding.caused = {"rebalances": [r.index for r in after], "culprits": left}
    return finding


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
    written = None
    if error.startswith("the coordinator could not store"):
        written, words = _write_error(group, failures)
        parts.append(f"The assignment it could not write was {label}'s (the leader){_because(written, words)}.")
        figs += _batch_limit(written)
    if chronic:
        parts.append(f"The generation number ({chronic}) says the group rebalanced tens of thousands of times before "
                     "this window.")
    evidence = ([Evidence.of(f.event) for f in failures[:3]] + ([Evidence.of(written)] if written else [])
                + [Evidence.of(failures[-1].event)])
    severity = escalate(len(failures), t["critical_repeats"])
    start, end = window(evidence)
    finding = Finding(ID, severity, group.group, f"SyncGroup fails again and again: {error}",
                      " ".join(parts), start, end, dedupe(evidence),
                      _FIT, culprit=culprit)
    finding.figures = figs
    finding.cause = f"SyncGroup failing with {error}"
    finding.caused = {"rebalances": caused, "culprits": sorted(set(members))}
    return finding


def _because(written: dict | None, words: str) -> str:
    return f"; the coordinator logged why ({Evidence.of(written).ref()}): {words}" if written else ""


def _batch_limit(written: dict | None) -> list:
    """The largest batch the coordinator may write, as its 4.3.1+ write failure states it (message.max.bytes)."""
    limit = ((written or {}).get("attrs") or {}).get("max_batch_size")
    if not limit or not str(limit).isdigit():
        return []
    return [figures.stated("max_batch_size", int(limit), figures.BYTES,
                           "the largest batch the coordinator may write (message.max.bytes)", written)]


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
