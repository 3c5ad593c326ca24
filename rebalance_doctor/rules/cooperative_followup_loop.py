"""A cooperative followup rebalance after every regular one, because membership keeps changing.

Symptom
-------
The Streams assignor moves active tasks and asks for an immediate followup, rebalance after
rebalance::

    [2024-06-01 09:00:02,120] INFO stream-thread [inventory-1f7c...-StreamThread-1-consumer] Requesting followup rebalance be scheduled immediately by inventory-1f7c...-StreamThread-1-consumer due to tasks changing ownership. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)
    [2024-06-01 09:00:02,180] INFO stream-thread [inventory-9a2b...-StreamThread-2-consumer] Requested to schedule immediate rebalance for new tasks to be safely revoked from current owner. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)

Why it happens
--------------
With cooperative rebalancing a task moves in two steps: the first rebalance revokes it from its
owner, an immediate followup gives it to its new owner. In a stable group that is exactly one
followup. If the membership changes again before things settle (members timing out, joining,
crashing), every regular rebalance brings its own followup, doubling the number of rebalances.
The followups are a symptom; the finding names what triggered the regular rebalances. A
followup after an expected operation (a rolling restart, a scale-out) is expected: only regular
rebalances that are not part of one count.

Remediation
-----------
Stop the membership changes (the root cause named here and in the related findings: poll
timeouts, heartbeat expirations, thread replacements). Avoid scaling in small repeated steps;
scale in one go.

Scope: cooperative consumers (``need to revoke partitions ... and re-join``), Kafka Streams
(``tasks changing ownership``) and Connect (incremental cooperative).
"""

from __future__ import annotations

from collections import Counter

from ..timeline.model import GroupTimeline
from .finding import Finding, dedupe
from ..classify import words

ID = "cooperative-followup-loop"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("cooperative", "streams", "connect")


def check(group: GroupTimeline, t: dict):
    rebalances = group.rebalances
    followed = {r.cause_index for r in rebalances if r.operation == "cooperative-followup"}
    loops = [r for r in rebalances if r.operation != "cooperative-followup" and r.verdict != "expected"
             and (r.index in followed or r.followup == "cooperative")]
    if len(loops) < t["min_loops"]:
        return
    causes = Counter(r.operation or "unknown" for r in loops)
    evidence = [r.trigger_evidence for r in loops if r.trigger_evidence][:4]
    evidence += [ev for r in loops for ev in r.evidence("streams.followup.cooperative")][:6]
    cause_text = ", ".join(f"{words(k)} ({n})" for k, n in causes.most_common())
    culprits = Counter(r.culprit_name for r in loops if r.culprit_name)
    top = culprits.most_common(1)[0][0] if culprits else None
    culprit = next((r.culprit for r in loops if r.culprit_name == top), None)
    finding = Finding(ID, "warning", group.group,
                      f"{len(loops)} regular rebalances each needed a cooperative followup",
                      f"{len(loops)} of {len(rebalances)} rebalances moved partitions or tasks and needed an "
                      f"immediate followup; each was started by a membership change: {cause_text}. The followups "
                      "are a symptom: fix what keeps changing the membership.",
                      loops[0].start, loops[-1].end, dedupe(evidence),
                      "Stop the membership changes named above (poll timeouts, expirations, thread replacements, "
                      "repeated scaling). Scale in one go rather than in small steps.", culprit=culprit)
    finding.caused = {"rebalances": sorted({r.index for r in loops} | {r.index for r in rebalances
                                                                       if r.cause_index in {x.index for x in loops}}),
                      "culprits": sorted(culprits)}
    yield finding
