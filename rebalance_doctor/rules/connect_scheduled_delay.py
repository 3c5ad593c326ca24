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
twice. When the worker returns in time it gets its work back: that is the feature working, and the
restart is a healthy operation (``healthy-operation`` says so; this rule stays silent). When it
returns after the delay expired (a slow start-up), its work was handed to the others and moves again
on its return: an info note with the restart's length and a delay that would outlast it. When it
does not return (a crash, a lost host, a worker scaled away), its connectors and tasks run nowhere
for the whole delay: a warning that gives the worker, the delay, how long the work was held and what
it was running.

Remediation
-----------
A restart that outlasted the delay: raise ``scheduled.rebalance.max.delay.ms`` above the restart
seen (``advice_headroom``, 1.5 by default, x the time the worker was away, rounded up to a second)
or make the worker start faster.
A lost worker: bring it back, or, when workers are lost rather than restarted (spot instances,
autoscaling), lower ``scheduled.rebalance.max.delay.ms`` to the longest restart you need to ride
out (the delay trades a second move of the work for its downtime); ``0`` reassigns at once, as the
eager protocol did. Scale a worker away only after stopping it gracefully and draining its tasks
to the others.

Scope: Kafka Connect distributed workers on the incremental cooperative protocols (the eager
``connect.protocol=eager`` has no delay).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, names

ID = "connect-scheduled-delay"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("connect",)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [connect-scheduled-delay], typed as thresholds_schema.toml types it."""
    advice_headroom: float


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    for delay in classification.connect.delays:
        if delay.returned is not None:
            continue        # back within the delay: the restart the protocol rides out (healthy-operation says so)
        if delay.departure is None:
            continue        # no worker is seen leaving: a delay alone is the assignor finishing a scheduled round
        figs = _figures(delay)          # measured once: what decides and what the finding states
        f = figures.by_name(figs)
        if f["away_ms"].known and f["away_ms"].value < f["scheduled.rebalance.max.delay.ms"].value:
            continue        # back before the delay in force expired: the restart the protocol rides out
        yield _finding(group, classification, delay, figs, t)


def _finding(group: GroupTimeline, classification, delay, figs: list, t: dict) -> Finding:
    who = delay.worker
    culprit = culprit_of(classification.members, who)
    label = culprit.label if culprit else (who or "an unnamed worker")
    f = figures.by_name(figs)
    held, in_force = f["held_ms"], f["scheduled.rebalance.max.delay.ms"]
    evidence = ([Evidence.of(delay.departure)] if delay.departure else []) + [Evidence.of(delay.delays[0])]
    if delay.ended is not None:
        evidence.append(Evidence.of(delay.ended))
    if delay.came_back is not None:
        evidence.append(Evidence.of(delay.came_back))
    work = (f" its {f['tasks'].text()} task(s) ({names(delay.tasks, 6)})" if delay.tasks else " its connectors and tasks")
    held_text = (f"were held unassigned for {held.text()}" if held.known else
                 "were still unassigned when the logs end")
    rebalances = [r.index for r in group.rebalances if r.start is not None and delay.start is not None
                  and r.start >= delay.start and (delay.ended is None or r.start <= delay.ended["ts"])]
    if delay.came_back is not None and f["away_ms"].known:
        away = f["away_ms"]
        # Advice: the delay has to outlast the restart seen, with the rule's headroom (the user's override, if any);
        # it is above the value in force because the restart outlasted that.
        advised = figures.raise_above("scheduled.rebalance.max.delay.ms", away, t["advice_headroom"], in_force,
                                      "time away")
        figs.append(advised)
        summary = (f"{label} left and came back {away.text()} later, after scheduled.rebalance.max.delay.ms "
                   f"({in_force.text()}) had expired: {work.strip()} {held_text}, were then given to the other "
                   "workers and moved again when it returned (the work moved twice).")
        finding = Finding(ID, "info", group.group,
                          f"worker {label} came back {away.text()} after leaving, past the scheduled rebalance delay",
                          summary, *window(evidence), dedupe(evidence),
                          "If restarts of this length are planned, raise scheduled.rebalance.max.delay.ms above the "
                          + (f"restart seen: {advised.value} ms ({advised.formula}; now {in_force.text()})"
                             if advised.known else f"restart seen ({advised.note})")
                          + "; a faster worker start-up does the same.", culprit=culprit)
        finding.figures = figs
        finding.role = "advisory"        # a restart that outlasted the delay: a note, never the answer
        finding.caused = {"rebalances": rebalances, "culprits": [who] if who else []}
        return finding
    summary = (f"{label} left the group and did not come back: {work.strip()} {held_text} "
               f"(scheduled.rebalance.max.delay.ms={in_force.value}), running nowhere, before "
               + ("the leader gave them to the remaining workers." if delay.ended is not None else "the logs end."))
    finding = Finding(ID, "warning", group.group,
                      f"worker {label} lost: its work waited {(held if held.known else in_force).text()} "
                      "unassigned", summary, *window(evidence), dedupe(evidence),
                      f"Bring {label} back, or lower scheduled.rebalance.max.delay.ms (now {in_force.text()}) to the "
                      "longest restart to ride out when workers are lost rather than restarted; stop and drain a "
                      "worker before scaling it away.", culprit=culprit)
    finding.figures = figs
    finding.cause = f"Connect worker {label} was lost and its work held for the scheduled rebalance delay"
    finding.caused = {"rebalances": rebalances, "culprits": [who] if who else []}
    return finding


def _figures(delay) -> list:
    """The delay in force (the assignment line stating the longest), how long the work stayed unassigned (the
    departure to the assignment that gave it out), how long the worker was away (the departure to its return), and
    how many tasks it had started."""
    stating = max(delay.delays, key=lambda e: e.get("delay_ms") or 0)
    start = delay.departure or delay.delays[0]
    return [figures.stated("scheduled.rebalance.max.delay.ms", delay.delay_ms, figures.MS,
                           "scheduled.rebalance.max.delay.ms in force (as the assignment states it)", stating),
            figures.duration("held_ms", "time its work stayed unassigned", start, delay.ended,
                             note="no assignment gave it out before the logs end"),
            figures.duration("away_ms", "time the worker was away", start, delay.returned or delay.came_back,
                             note="it did not come back before the logs end"),
            figures.derived("tasks", len(delay.tasks) if delay.tasks else None, figures.COUNT,
                            "tasks it had started", [start], "tasks its own log started",
                            note="its own log does not list them")]
