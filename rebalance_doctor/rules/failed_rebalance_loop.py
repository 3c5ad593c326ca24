"""Rebalances that do not complete, again and again.

Symptom
-------
The coordinator prepares the same old generation repeatedly, or members fail their JoinGroup or
SyncGroup::

    [2024-01-01 11:10:57,345] INFO [Consumer clientId=otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5-StreamThread-1-consumer, groupId=otter-app] SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent generation was Generation{generationId=742, memberId='otter-app-225712b8-...-StreamThread-1-consumer-7f45268d-...', protocol='stream'} (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:826)

or a client's own JoinGroup requests time out while the group is rebalancing (ruby-kafka)::

    E, [2022-05-18T04:25:31.804583 #67039] ERROR -- : [[test] {}:] [join_group] Timed out while waiting for response 2
    E, [2022-05-18T04:25:31.804929 #67039] ERROR -- : [[test] {}:] Connection error while trying to join group `test`; retrying...

Why it happens
--------------
A rebalance fails when a new one begins before it completes (a member joins, leaves or times out
in the middle of it), when a member is not known to the coordinator any more, or when the
coordinator cannot store the assignment. Failures are not a root cause themselves: what began
the superseding rebalance is (the classification names it); members rejoining because the
"group is already rebalancing" are symptoms. The coordinator answers a JoinGroup only when the join
phase ends (every member joined, or the rebalance timeout passed): a client whose JoinGroup request
times out sooner fails its own attempts, retries, and prolongs the rebalance it waits for (Java
consumers give the JoinGroup max.poll.interval.ms plus a margin; other clients may not). A member handles
its JoinGroup response only inside poll(), and since 2.6 a cooperative member keeps processing the partitions
it owns while it rejoins: the leader sends its SyncGroup after its current batch, so with batches of seconds
the SyncGroup phase stays open that long, and every join or leave meanwhile fails the attempt ("SyncGroup
failed: The group began another rebalance"). A failed attempt interrupted by an expected
operation (a member joining during a deploy) is expected and not counted. Only failures logged
as such count: two assignments close together are what a cooperative or Streams followup looks
like, not a failure.

Remediation
-----------
When the member's own JoinGroup requests time out, give them a timeout above the rebalance timeout
(the client's request or session timeout that bounds them). Otherwise remove the source of the
interruptions named in the finding (a member timing out, crashing or
joining repeatedly); when they are not in the collected logs, the coordinator's log names them (the
members it adds and removes, with their clientHost), and the leaders' ``Finished assignment for group at
generation N`` maps name their member ids: ids that no collected log names as its own are processes of
this group.id whose logs are missing (the finding counts them per client.id). ``JoinGroup failed: The coordinator is not aware of this member`` after a
timeout is expected once; repeated, look at ``session.timeout.ms`` and ``max.poll.interval.ms``.
Very large groups may need a longer ``rebalance.timeout.ms`` / ``max.poll.interval.ms`` to
let every member rejoin in time.

Scope: classic protocols (eager, cooperative, Streams, Connect). KIP-848 groups do not fail
rebalances this way (epochs converge). When the same SyncGroup error repeats, the
sync-group-error-loop rule (issue 17) takes this one's place in the chain.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..classify import of, words
from ..classify.protocol import heartbeat_protocol
from ..classify.members import unlogged_assignees, unlogged_culprit
from ..timeline.builder import JOIN_REQUEST_TIMED_OUT
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe
from .helpers import describe_unlogged, escalate, names, span, unlogged_evidence
from ..core import eventnames as EV

ID = "failed-rebalance-loop"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("eager", "cooperative", "streams", "connect")
YIELDS_TO = ("sync-group-error-loop",)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [failed-rebalance-loop], typed as thresholds_schema.toml types it."""
    min_failed: int
    critical_failed: int


def check(group: GroupTimeline, t: Thresholds):
    rebalances = group.rebalances
    failed = [(position, r) for position, r in enumerate(rebalances)
              if r.outcome == "failed" and r.verdict != "expected" and not heartbeat_protocol(r.protocol)]
    if len(failed) < t["min_failed"]:
        return
    reasons = Counter((r.failure or "unknown").split(". ")[0] for _, r in failed)
    successors = [rebalances[p + 1] for p, _ in failed if p + 1 < len(rebalances)]
    interrupting = Counter(s.operation or "unknown" for s in successors if s.operation != "failed-attempt")
    who = Counter(s.culprit.label for s in successors if s.culprit is not None)
    evidence = [s.trigger_evidence for s in successors if s.trigger_evidence][:4]
    evidence += [Evidence.of(e) for _, r in failed for e in r.events if e["event"] in (EV.SYNC_FAILED, EV.JOIN_FAILED)][:6]
    evidence += [Evidence.of(e) for _, r in failed for e in r.events if e["event"] == EV.REBALANCE_PREPARE][:4]
    start, end = span([r for _, r in failed])
    known = [(k, n) for k, n in interrupting.most_common() if k != "unknown"]
    figs = _figures(group, failed, successors, reasons, t)
    f = figures.by_name(figs)
    timed_out = sum(1 for _, r in failed if r.failure == JOIN_REQUEST_TIMED_OUT)
    own_timeouts = timed_out * 2 > len(failed)   # most attempts ended by the member's own JoinGroup timeout
    if own_timeouts:
        cause_text = (f"nothing: {timed_out} of them ended when the member's own JoinGroup request timed out. The "
                      "coordinator answers a JoinGroup only when the join phase ends (every member joined, or the "
                      "rebalance timeout passed): a client whose request timeout is shorter gives up, retries and "
                      "prolongs the rebalance it is waiting for")
    elif known:
        cause_text = ", ".join(f"{words(k)} ({f['interrupted.' + k].text()})" for k, n in known) + (f", by {names(list(who))}" if who else "")
    else:
        cause_text = "not logged (only members rejoining because the group was already rebalancing)"
    outsiders: dict[str, list[str]] = {}
    if not own_timeouts and not known:
        involved = [r for _, r in failed] + successors
        outsiders = unlogged_assignees(group, involved, of(group).members)
        if outsiders:
            shown = unlogged_evidence(involved, outsiders)
            figs += figures.unlogged(outsiders, shown)
            cause_text += ("; the leaders' assignments name member ids that no collected log names as its own: "
                           + describe_unlogged(figs[-len(outsiders):])
                           + ", processes of this group.id whose logs are not in the input, joining and leaving")
            evidence += shown
    count = len(failed)
    summary = (f"{f['failed'].text()} of {f['rebalances'].text()} rebalances failed ("
               + "; ".join(f"{f['reason.' + k].text()}x {k}" for k, n in reasons.most_common()) + f"). What interrupted them: {cause_text}.")
    severity = escalate(count, t["critical_failed"])
    culprit_label = who.most_common(1)[0][0] if who else None
    culprit = next((s.culprit for s in successors if s.culprit is not None and s.culprit.label == culprit_label), None)
    if culprit is None and outsiders:
        culprit = unlogged_culprit(outsiders, of(group).members)
    if own_timeouts:
        remedy = ("Give the client's JoinGroup request a timeout above the group's rebalance timeout (Java consumers do: "
                  "max.poll.interval.ms plus a margin; for other clients raise the request or session timeout that "
                  "bounds their JoinGroup), and look for the member that keeps the join phase waiting.")
        evidence += [Evidence.of(e) for _, r in failed for e in r.events if e["event"] == EV.REQUEST_TIMEOUT][:2]
    elif known:
        remedy = ("Remove what interrupts the rebalances (the members named above: timeouts, crashes, repeated "
                  "joins). If members cannot rejoin in time in a large group, raise max.poll.interval.ms "
                  "(rebalance timeout) so the JoinGroup phase can complete.")
    else:
        remedy = ("Find what joins and leaves the group outside these logs: the coordinator's log names every member "
                  "it adds or removes (with its clientHost), and a process sharing this group.id by mistake is a "
                  "common one"
                  + (f" (the {names(list(outsiders))} process(es) without a log here first: theirs say why they come and go)"
                     if outsiders else "")
                  + ". Members that keep processing while they rejoin (cooperative) send their SyncGroup "
                  "only after their current batch: shorter batches (max.poll.records) leave less time to interrupt.")
    finding = Finding(ID, severity, group.group, f"{f['failed'].text()} rebalance attempts failed before completing",
                      summary, start, end, dedupe([e for e in evidence if e]), remedy, culprit=culprit)
    finding.figures = figs
    finding.caused = {"rebalances": [r.index for _, r in failed],
                      "culprits": sorted({s.culprit_name for s in successors if s.culprit_name})}
    yield finding


def _figures(group: GroupTimeline, failed: list, successors: list, reasons: Counter, t: dict) -> list:
    """The failed attempts (each one's first line), all the group's rebalances, the failures by reason, the
    rebalances that interrupted them by operation, the attempts ended by the member's own JoinGroup timeout, and
    the rule's threshold."""
    attempts = [r for _, r in failed]
    out = [figures.rebalances("failed", "rebalance attempts that failed", attempts),
           figures.rebalances("rebalances", "rebalances of the group", group.rebalances)]
    for reason in reasons:
        out.append(figures.rebalances(f"reason.{reason}", f"failed: {reason}",
                                      [r for r in attempts if (r.failure or "unknown").split(". ")[0] == reason]))
    by_operation: dict[str, list] = {}
    for s in successors:
        if s.operation != "failed-attempt":
            by_operation.setdefault(s.operation or "unknown", []).append(s)
    out += [figures.rebalances(f"interrupted.{k}", f"interrupted by {words(k)}", rs) for k, rs in by_operation.items()]
    timed_out = [r for r in attempts if r.failure == JOIN_REQUEST_TIMED_OUT and r.events]
    if timed_out:
        out.append(figures.count("join_timeouts", "attempts ended by the member's own JoinGroup request timing out",
                                 [next((e for e in r.events if e["event"] == EV.REQUEST_TIMEOUT), r.events[0])
                                  for r in timed_out]))
    out.append(figures.threshold("min_failed", t["min_failed"], figures.COUNT, "failed attempts that make a loop", ID,
                                 "min_failed"))
    return out
