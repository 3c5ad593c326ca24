"""A Connect worker left and its connectors and tasks waited unassigned for scheduled.rebalance.max.delay.ms.

Symptom
-------
A worker leaves the group (a crash, a restart, a network loss); the others' assignments carry a
delay and none of them is given its work::

    [2024-03-05 09:01:10,611] INFO [GroupCoordinator 2]: Member connect-10.0.4.17:8083-5e0c... in group connect-cluster has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 09:01:15,809] INFO [Worker clientId=connect-10.0.4.18:8083, groupId=connect-cluster] Joined group at generation 4 with protocol version 2 and got assignment: Assignment{error=0, leader='connect-10.0.4.18:8083-1a2b...', leaderUrl='http://10.0.4.18:8083/', offset=42, connectorIds=[], taskIds=[], revokedConnectorIds=[], revokedTaskIds=[], delay=300000} with rebalance delay: 300000 (org.apache.kafka.connect.runtime.distributed.DistributedHerder:2626)

until the delay expires and an assignment with ``delay=0`` hands the work out again.

Why it happens
--------------
Incremental cooperative rebalancing (Connect protocol ``compatible``/``sessioned``, Kafka 2.3+)
assumes a worker that left will come back: the leader keeps its connectors and tasks for it for
``scheduled.rebalance.max.delay.ms`` (5 minutes by default), so that a restart does not move them
twice. When the worker returns in time it gets its work back: that is the feature working (an
info note). When it does not (a crash, a lost host, a worker scaled away), its connectors and tasks
run nowhere for the whole delay: the finding gives the worker, the delay, how long the work was
held and what it was running.

Remediation
-----------
Bring the worker back, or, when workers are lost rather than restarted (spot instances,
autoscaling), lower ``scheduled.rebalance.max.delay.ms`` to the longest restart you need to ride
out (the delay trades a second move of the work for its downtime); ``0`` reassigns at once, as the
eager protocol did. Scale a worker away only after stopping it gracefully and draining its tasks
to the others.

Scope: Kafka Connect distributed workers on the incremental cooperative protocols (the eager
``connect.protocol=eager`` has no delay).
"""

from __future__ import annotations

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from .finding import Finding, dedupe, window
from .helpers import names, seconds

ID = "connect-scheduled-delay"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("connect",)


def check(group: GroupTimeline, t: dict):
    classification = of(group)
    for delay in classification.connect.delays:
        yield _finding(group, classification, delay)


def _finding(group: GroupTimeline, classification, delay) -> Finding:
    who = delay.worker
    member = classification.members.get(who)
    culprit = member.culprit() if member else classification.members.culprit(who) if who else None
    label = culprit.label if culprit else (who or "a worker")
    held = delay.held_ms
    evidence = ([Evidence.of(delay.departure)] if delay.departure else []) + [Evidence.of(delay.delays[0])]
    if delay.returned is not None:
        evidence.append(Evidence.of(delay.returned))
    if delay.ended is not None:
        evidence.append(Evidence.of(delay.ended))
    work = (f" its {len(delay.tasks)} task(s) ({names(delay.tasks, 6)})" if delay.tasks else " its connectors and tasks")
    held_text = (f"were held unassigned for {seconds(held)}" if held is not None else
                 "were still unassigned when the logs end")
    rebalances = [r.index for r in group.rebalances if r.start is not None and delay.start is not None
                  and r.start >= delay.start and (delay.ended is None or r.start <= delay.ended["ts"])]
    if delay.returned is not None:
        summary = (f"{label} left and came back within scheduled.rebalance.max.delay.ms ({delay.delay_ms} ms): "
                   f"{work.strip()} {held_text} and went back to it, as the incremental cooperative protocol "
                   "intends (no work moved twice).")
        finding = Finding(ID, "info", group.group, f"worker {label} came back within the scheduled rebalance delay",
                          summary, *window(evidence), dedupe(evidence),
                          "Nothing to do: the delay rode out the restart. Lower scheduled.rebalance.max.delay.ms only "
                          "if workers are lost rather than restarted.", culprit=culprit)
        finding.role = "advisory"        # the feature working: a note, never the answer
        finding.caused = {"rebalances": rebalances, "culprits": [who] if who else []}
        return finding
    summary = (f"{label} left the group and did not come back: {work.strip()} {held_text} "
               f"(scheduled.rebalance.max.delay.ms={delay.delay_ms}), running nowhere, before "
               + ("the leader gave them to the remaining workers." if delay.ended is not None else "the logs end."))
    finding = Finding(ID, "warning", group.group,
                      f"worker {label} lost: its work waited {seconds(held if held is not None else delay.delay_ms)} "
                      "unassigned", summary, *window(evidence), dedupe(evidence),
                      f"Bring {label} back, or lower scheduled.rebalance.max.delay.ms (now {delay.delay_ms} ms) to the "
                      "longest restart to ride out when workers are lost rather than restarted; stop and drain a "
                      "worker before scaling it away.", culprit=culprit)
    finding.cause = f"Connect worker {label} was lost and its work held for the scheduled rebalance delay"
    finding.caused = {"rebalances": rebalances, "culprits": [who] if who else []}
    return finding
