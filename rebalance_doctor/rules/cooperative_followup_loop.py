"""Cooperative followup rebalances that do not settle: after every regular one, or one after another.

Symptom
-------
The Streams assignor moves active tasks and asks for an immediate followup, rebalance after
rebalance::

    [2024-06-01 09:00:02,120] INFO stream-thread [inventory-1f7c...-StreamThread-1-consumer] Requesting followup rebalance be scheduled immediately by inventory-1f7c...-StreamThread-1-consumer due to tasks changing ownership. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)
    [2024-06-01 09:00:02,180] INFO stream-thread [inventory-9a2b...-StreamThread-2-consumer] Requested to schedule immediate rebalance for new tasks to be safely revoked from current owner. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)

or a cooperative consumer revokes partitions and rejoins in every generation, with no member
joining or leaving::

    [2024-06-01 09:00:04,311] INFO [Consumer clientId=consumer-ledger-1, groupId=ledger] Request joining group due to: need to revoke partitions [ledger-3] as indicated by the current assignment and re-join (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)
    [2024-06-01 09:00:04,318] INFO [GroupCoordinator 1]: Preparing to rebalance group ledger in state PreparingRebalance with old generation 41 (__consumer_offsets-12) (reason: Updating metadata for member consumer-ledger-1-2c9e... during Stable; client reason: need to revoke partitions and re-join) (kafka.coordinator.group.GroupCoordinator)
    [2024-06-01 09:00:07,902] INFO [Consumer clientId=consumer-ledger-2, groupId=ledger] Request joining group due to: need to revoke partitions [ledger-7] as indicated by the current assignment and re-join (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)

Why it happens
--------------
With cooperative rebalancing a partition (or task) moves in two steps: the first rebalance revokes
it from its owner, an immediate followup gives it to its new owner. The followup only hands out
what the first round revoked: with the same members and subscriptions it has nothing to take
away, and the group is stable after it. Two ways this goes wrong:

- The membership changes again before things settle (members timing out, joining, crashing):
  every regular rebalance brings its own followup, doubling the number of rebalances. The
  followups are a symptom; the finding names what triggered the regular rebalances. A followup
  after an expected operation (a rolling restart, a scale-out) is expected: only regular
  rebalances that are not part of one count.
- The followups of a cooperative consumer group themselves revoke again while no member comes
  or goes (Kafka Streams' assignor may move tasks over a few immediate followups while it
  balances, and converges: not judged): the assignor moves
  partitions at every round (an application's own cooperative assignor balancing by lag or
  load, an assignor bug) and the rounds never converge: no generation is stable for long, and
  every round revokes partitions from someone. That is this finding's own cause: the assignor.
  Not counted: a revocation by members whose SyncGroup of the round before failed ("The group
  began another rebalance": the leader revoked and rejoined first). They never received that
  round's assignment, still own what it took from them and revoke it one round late; the
  followup that needs completes the first move (a rolling restart or a scale-out does this).

Remediation
-----------
Membership changes: stop them (the root cause named here and in the related findings: poll
timeouts, heartbeat expirations, thread replacements). Avoid scaling in small repeated steps;
scale in one go. Rounds that never converge: the assignment must be a fixed point: with the
same members and subscriptions, the assignor must return what the members own. Go back to
``partition.assignment.strategy=org.apache.kafka.clients.consumer.CooperativeStickyAssignor``
(or fix the custom assignor so that it moves partitions only when the membership changes), and
look at the leader's ``Finished assignment`` lines for what it moves each time.

Scope: cooperative consumers (``need to revoke partitions ... and re-join``), Kafka Streams
(``tasks changing ownership``) and Connect (incremental cooperative).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..classify import of, words
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe
from .helpers import culprit_of, names
from ..core import eventnames as EV

ID = "cooperative-followup-loop"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("cooperative", "streams", "connect")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [cooperative-followup-loop], typed as thresholds_schema.toml types it."""
    min_loops: int


def check(group: GroupTimeline, t: Thresholds):
    rebalances = group.rebalances
    unconverged = [r for r in rebalances if r.operation == "cooperative-followup" and r.verdict == "harmful"]
    if len(unconverged) >= t["min_loops"]:
        yield _never_converging(group, unconverged, t)
        return
    followed = {r.cause_index for r in rebalances if r.operation == "cooperative-followup"}
    loops = [r for r in rebalances if r.operation != "cooperative-followup" and r.verdict != "expected"
             and (r.index in followed or r.followup == "cooperative")]
    if len(loops) < t["min_loops"]:
        return
    causes = Counter(r.operation or "unknown" for r in loops)
    evidence = [r.trigger_evidence for r in loops if r.trigger_evidence][:4]
    evidence += [ev for r in loops for ev in r.evidence(EV.STREAMS_FOLLOWUP_COOPERATIVE)][:6]
    figs = [figures.rebalances("loops", "regular rebalances that needed a cooperative followup", loops),
            figures.rebalances("rebalances", "rebalances of the group", rebalances)]
    figs += [figures.rebalances(f"started.{k}", f"started by {words(k)}", [r for r in loops if (r.operation or "unknown") == k])
             for k in causes]
    figs.append(figures.threshold("min_loops", t["min_loops"], figures.COUNT, "rebalances with a followup that make a loop",
                                  ID, "min_loops"))
    f = figures.by_name(figs)
    cause_text = ", ".join(f"{words(k)} ({f['started.' + k].text()})" for k, n in causes.most_common())
    culprits = Counter(r.culprit_name for r in loops if r.culprit_name)
    top = culprits.most_common(1)[0][0] if culprits else None
    culprit = next((r.culprit for r in loops if r.culprit_name == top), None)
    finding = Finding(ID, "warning", group.group,
                      f"{f['loops'].text()} regular rebalances each needed a cooperative followup",
                      f"{f['loops'].text()} of {f['rebalances'].text()} rebalances moved partitions or tasks and needed an "
                      f"immediate followup; each was started by a membership change: {cause_text}. The followups "
                      "are a symptom: fix what keeps changing the membership.",
                      loops[0].start, loops[-1].end, dedupe(evidence),
                      "Stop the membership changes named above (poll timeouts, expirations, thread replacements, "
                      "repeated scaling). Scale in one go rather than in small steps.", culprit=culprit)
    finding.figures = figs
    finding.caused = {"rebalances": sorted({r.index for r in loops} | {r.index for r in rebalances
                                                                       if r.cause_index in {x.index for x in loops}}),
                      "culprits": sorted(culprits)}
    yield finding


def _never_converging(group: GroupTimeline, unconverged: list, t: dict) -> Finding:
    """Followups after followups, each needed because the one before revoked partitions again with the same
    members (classify/operations.py): the assignor running on the leader keeps moving partitions."""
    by_index = {r.index: r for r in group.rebalances}
    chain = sorted({r.index for r in unconverged} | {r.cause_index for r in unconverged if r.cause_index is not None})
    revoking = [e for i in chain for e in by_index[i].events
                if e["event"] == EV.JOIN_REQUESTED and ("revoke" in (e.get("reason") or "").lower()
                                                        or (e.get("attrs") or {}).get("revoking") == "true")]
    leaders = Counter(by_index[i].leader for i in chain if by_index[i].leader)
    leader = leaders.most_common(1)[0][0] if leaders else None
    assignors = sorted({a.removeprefix("class ").strip() for m in of(group).members for a in (m.assignors or [])})
    evidence = [ev for i in chain[:2] for ev in by_index[i].evidence(EV.ASSIGNMENT_COMPUTED)]
    evidence += [Evidence.of(e) for e in revoking[:6]]
    evidence += [r.trigger_evidence for r in unconverged[:3] if r.trigger_evidence]
    start, end = by_index[chain[0]].start, unconverged[-1].end
    count = figures.rebalances("followups", "followups needed because the round before revoked again", unconverged)
    finding = Finding(ID, "warning", group.group,
                      f"cooperative rebalances never converge: {count.text()} followups in a row revoked again",
                      f"{count.text()} followup rebalances were needed because the round before revoked partitions "
                      "again while no member joined or left: the second round of a cooperative rebalance only hands "
                      "out what the first revoked, so the assignor is moving partitions at every round"
                      + (f" (the leader {names([leader])} runs it" + (f": {', '.join(assignors)}" if assignors else "")
                         + ")" if leader else "") + ". No generation stays stable.",
                      start, end, dedupe(evidence),
                      "With the same members and subscriptions the assignment must not change: use the "
                      "CooperativeStickyAssignor (partition.assignment.strategy) or fix the custom assignor so that it "
                      "moves partitions only when the membership changes; the leader's 'Finished assignment' lines show "
                      "what it moves each time.", culprit=culprit_of(of(group).members, leader, fallback=False))
    finding.figures = [count, figures.count("revoking", "members' requests to rejoin after revoking", revoking),
                       figures.threshold("min_loops", t["min_loops"], figures.COUNT, "followups that make a loop", ID,
                                         "min_loops")]
    finding.role = "cause"      # nothing else explains rounds that revoke with a stable membership: the assignor
    finding.cause = "the assignor moves partitions at every cooperative round: the followups never converge"
    finding.caused = {"rebalances": chain, "culprits": [leader] if leader else []}
    return finding
