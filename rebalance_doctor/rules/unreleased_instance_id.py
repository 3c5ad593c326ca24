"""A KIP-848 static member's new process refused UNRELEASED_INSTANCE_ID: its old member still held the instance id.

Symptom
-------
A static member (``group.instance.id``) of a ``group.protocol=consumer`` group comes back and the
coordinator refuses it, the old member holding the id::

    [2026-12-07 00:14:08,500] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=31] [GroupId orders] Static member l2KmQI8ZRai0cMUmm2zvHg with instance id orders-app-2 cannot join the group because the instance id is owned by member pPojfq1GTxWvVQjnXlv4Jg. (org.apache.kafka.coordinator.group.GroupMetadataManager)

and the new process's consumer gives up (a fatal error)::

    2026-12-07T00:14:08,540 ERROR [consumer_background_thread] org.apache.kafka.clients.consumer.internals.ConsumerHeartbeatRequestManager - [Consumer instanceId=orders-app-2, clientId=consumer-orders-orders-app-2, groupId=orders] ConsumerGroupHeartbeatRequest failed due to unreleased instance id orders-app-2: Static member l2KmQI8ZRai0cMUmm2zvHg with instance id orders-app-2 cannot join the group because the instance id is owned by pPojfq1GTxWvVQjnXlv4Jg member.
    2026-12-07T00:14:08,541 ERROR [consumer_background_thread] org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager - [Consumer instanceId=orders-app-2, clientId=consumer-orders-orders-app-2, groupId=orders] Member l2KmQI8ZRai0cMUmm2zvHg with epoch 0 transitioned to fatal state

Why it happens
--------------
Under the consumer protocol (KIP-848) a static member releases its ``group.instance.id`` only by
leaving with epoch -2 (``close()``); otherwise the old member keeps it until the coordinator fences
it, the broker's ``group.consumer.session.timeout.ms`` after its last heartbeat. A new process with
the same instance id that joins before that, a process killed (OOM, SIGKILL) and restarted quickly
by its supervisor, or a new pod started before the old one finished closing (a rolling update with
a surge), is refused UNRELEASED_INSTANCE_ID. The Java consumer treats that as fatal: ``poll()``
throws and the application usually exits, so the instance stays out of the group even once the id
is free, and its partitions wait for the old member's fencing (the classic protocol instead lets
the new member replace the old one).

Remediation
-----------
Let the old member leave before the new one starts: ``close()`` the consumer on shutdown (SIGTERM)
and start the replacement only after the old process exited (Kubernetes: a StatefulSet, or
``maxSurge: 0`` / ``Recreate``, with ``terminationGracePeriodSeconds`` long enough for ``close()``).
After a crash the id is free only once the old member is fenced: restart with a back-off longer
than the broker's ``group.consumer.session.timeout.ms``, or let the application retry creating the
consumer on UnreleasedInstanceIdException instead of exiting.

Scope: KIP-848 consumer groups with static members (``group.protocol=consumer`` and
``group.instance.id``), from the coordinator's refusal line and the member's own fatal heartbeat
(either alone suffices). The old member's fencing that frees the id is kip848-fencing's, folded
into this finding when both name the same member.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, label_of, names

ID = "unreleased-instance-id"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("consumer",)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """None: the rule reads protocol semantics only (thresholds.toml [unreleased-instance-id] is empty)."""


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    unreleased = classification.unreleased
    if not unreleased.found:
        return
    order = sorted(unreleased.refused, key=lambda m: (-len(unreleased.refused[m]), m))
    instances = sorted({e["instance"] for e in unreleased.refusals}
                       | {e["instance"] for v in unreleased.refused.values() for e in v})
    refusals = figures.count("refusals", "refusals logged by the coordinator", unreleased.refusals)
    own = figures.count("members_refused_requests", "the refused members' own fatal heartbeats",
                        [e for who in order for e in unreleased.refused[who]])
    labels = []
    for who in order:
        labels.append(label_of(classification.members, who))
    parts = [f"A new member joined with group.instance.id {names(instances)} while the old member still held it"
             + (f" (owner {', '.join(sorted(set(unreleased.instances.values())))})" if unreleased.instances else "")
             + (f": the coordinator refused it {refusals.text()} time(s)" if unreleased.refusals else "") + "."]
    if order:
        parts.append(f"{names(labels)}: UNRELEASED_INSTANCE_ID is fatal to the consumer ({own.text()} refused "
                     "heartbeat(s) in its own log); it stopped consuming.")
    else:
        parts.append("The refused process's own log is not included.")
    owners = set(unreleased.instances.values())
    fenced = [f for f in classification.fencing.fences if f.event.get("member") in owners]
    if fenced:
        parts.append(f"The old member was fenced at {fenced[0].event['ts']:%H:%M:%S} (its session expired): only "
                     "then was the instance id free.")
    evidence = [Evidence.of(e) for e in unreleased.refusals[:2]]
    evidence += [Evidence.of(e) for who in order for e in unreleased.refused[who][:2]]
    evidence += [Evidence.of(f.event) for f in fenced[:1]]
    culprit = culprit_of(classification.members, order[0] if order else None)
    label = culprit.label if culprit else f"instance {instances[0]}"
    start, end = window(evidence)
    finding = Finding(ID, SEVERITY, group.group,
                      f"{label} refused UNRELEASED_INSTANCE_ID: its group.instance.id was still held by the old member",
                      " ".join(parts), start, end, dedupe(evidence),
                      "Let the old member leave before its replacement starts: close() the consumer on SIGTERM and start "
                      "the new process only after the old one exited (Kubernetes: a StatefulSet, or maxSurge 0 / Recreate); "
                      "after a crash, restart with a back-off longer than the broker's group.consumer.session.timeout.ms "
                      "(the id is released when the old member is fenced), or retry creating the consumer on "
                      "UnreleasedInstanceIdException instead of exiting.", culprit=culprit)
    finding.figures = [f for f in (refusals if unreleased.refusals else None, own if order else None) if f]
    finding.cause = f"{label} restarted while its old member still held group.instance.id {instances[0]}"
    ids = {id(e) for e in unreleased.refusals} | {id(e) for v in unreleased.refused.values() for e in v} \
        | {id(f.event) for f in fenced}
    finding.caused = {"rebalances": sorted({r.index for r in group.rebalances if any(id(e) in ids for e in r.events)}),
                      "culprits": order}
    yield finding
