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
The followups are a symptom; the finding names what triggered the regular rebalances.

Remediation
-----------
Stop the membership changes (the root cause named here and in the related findings: poll
timeouts, heartbeat expirations, thread replacements). Avoid scaling in small repeated steps;
scale in one go.
"""

from __future__ import annotations

from collections import Counter

from ..timeline.model import GroupTimeline
from .finding import Finding, dedupe
from .helpers import KIND_WORDS

ID = "cooperative-followup-loop"
SEVERITY = "warning"


def check(group: GroupTimeline, t: dict):
    loops = []
    rebalances = group.rebalances
    for index, r in enumerate(rebalances):
        if r.followup != "cooperative":
            continue
        if r.trigger_kind in ("followup", "cooperative-revocation"):
            continue  # this one is itself a followup: count the regular rebalances only
        loops.append(r)
    if len(loops) < t["min_loops"]:
        return
    causes = Counter(r.trigger_kind or "unknown" for r in loops)
    evidence = [r.trigger_evidence for r in loops if r.trigger_evidence][:4]
    evidence += [ev for r in loops for ev in r.evidence("streams.followup.cooperative")][:6]
    cause_text = ", ".join(f"{KIND_WORDS.get(k, k)} ({n})" for k, n in causes.most_common())
    yield Finding(ID, "warning", group.group,
                  f"{len(loops)} regular rebalances each needed a cooperative followup",
                  f"{len(loops)} of {len(rebalances)} rebalances moved active tasks and scheduled an immediate "
                  f"followup; each was started by a membership change: {cause_text}. The followups are a symptom: "
                  "fix what keeps changing the membership.",
                  loops[0].start, loops[-1].end, dedupe(evidence),
                  "Stop the membership changes named above (poll timeouts, expirations, thread replacements, "
                  "repeated scaling). Scale in one go rather than in small steps.")
