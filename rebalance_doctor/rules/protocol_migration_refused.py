"""Members refused by the group coordinator because their group protocol cannot join the group's (migration refused).

Symptom
-------
The coordinator refuses a classic member's JoinGroup to a consumer group (4.3.1+, backported to
4.2.2)::

    [2026-12-06 23:56:05,990] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=31] Cannot join the consumer group orders with the classic protocol because the group migration is disabled. (org.apache.kafka.coordinator.group.GroupMetadataManager)

and the member fails with INCONSISTENT_GROUP_PROTOCOL (the classic client only prints the error's
generic message)::

    2026-12-06T23:56:06,001 ERROR [main] org.apache.kafka.clients.consumer.internals.ConsumerCoordinator - [Consumer clientId=consumer-orders-1, groupId=orders] JoinGroup failed due to fatal error: The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.

Or it refuses a ``group.protocol=consumer`` member's heartbeat to a classic group it may not
upgrade, and the member goes to its fatal state::

    [2026-12-06 23:57:54,668] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=31] Cannot upgrade classic group orders to consumer group because online upgrade is disabled. (org.apache.kafka.coordinator.group.GroupMetadataManager)
    2026-12-06T23:57:54,686 ERROR [consumer_background_thread] org.apache.kafka.clients.consumer.internals.ConsumerHeartbeatRequestManager - [Consumer clientId=consumer-orders-1, groupId=orders] ConsumerGroupHeartbeatRequest failed due to unexpected error GROUP_ID_NOT_FOUND: Cannot upgrade classic group orders to consumer group because online upgrade is disabled.

Why it happens
--------------
Since Kafka 4.0 a group changes protocol online (KIP-848): the first member joining a classic
group with ``group.protocol=consumer`` converts it into a consumer group in which the remaining
classic members go on (a mixed group during a rolling upgrade), and the last consumer-protocol
member leaving converts it back. The brokers' ``group.consumer.migration.policy`` allows it:
``bidirectional`` (the default), ``upgrade``, ``downgrade`` or ``disabled``. With ``disabled``
(or ``downgrade``) a consumer-protocol member cannot enter a non-empty classic group
(GROUP_ID_NOT_FOUND), and from 4.3.1 (4.2.2) a classic member cannot enter a non-empty consumer
group (INCONSISTENT_GROUP_PROTOCOL; older brokers let it in). The upgrade is refused too for a
classic group whose members do not use the consumer embedded protocol (Connect, custom
protocols) or that is larger than ``group.consumer.max.size``. A refused member holds no
partitions: the Java client's ``poll()`` throws, the application usually exits, and the group runs
without it until someone notices. A member of a group being upgraded that is refused is the
rolling upgrade stuck halfway.

Remediation
-----------
Allow the migration on the brokers: ``group.consumer.migration.policy=bidirectional`` (or
``upgrade`` for classic -> consumer only), a dynamic broker config (``kafka-configs
--entity-type brokers --entity-default --alter --add-config group.consumer.migration.policy=...``);
or give the refused member the group's protocol (``group.protocol=consumer`` for a consumer
group, ``group.protocol=classic`` to stay classic), so that every member of the group runs the
same protocol. An offline migration works under any policy: stop every member, then start them
with the new protocol (an empty group converts).

Scope: consumer groups moving between the classic and the consumer protocol (KIP-848), read from
the coordinator's refusal line (its reason) and the refused member's own refused request (the
culprit; not named when its log is not included). Without the coordinator's log the members' lines
alone say it, without the reason: a consumer-protocol heartbeat answered GROUP_ID_NOT_FOUND, or a
classic JoinGroup answered INCONSISTENT_GROUP_PROTOCOL in a group running the consumer protocol (in
a classic group that answer is assignor-mismatch's). A healthy online upgrade or rollback (a mixed
group, the conversion lines) is no finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, label_of, names

ID = "protocol-migration-refused"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("eager", "cooperative", "consumer")

_WHAT = {"classic": "classic member(s) refused by the consumer group",
         "consumer": "consumer-protocol member(s) refused by the classic group"}
# What a refused member's own line says when the coordinator's is missing.
_OWN = {"classic": "A classic member's JoinGroup was answered INCONSISTENT_GROUP_PROTOCOL by a group running the "
                   "consumer protocol: the migration policy (disabled) or its assignors refused it",
        "consumer": "A consumer-protocol member's heartbeat was answered GROUP_ID_NOT_FOUND: the group id belongs to a "
                    "group of another type (a classic group it may not upgrade)"}
_FIX = {"classic": "set group.consumer.migration.policy=bidirectional on the brokers (a dynamic config: kafka-configs "
                   "--entity-type brokers --entity-default --alter) to let classic members into the consumer group, or "
                   "start the refused member with group.protocol=consumer like the rest of the group",
        "consumer": "set group.consumer.migration.policy=bidirectional (or upgrade) on the brokers (a dynamic config: "
                    "kafka-configs --entity-type brokers --entity-default --alter) so that the classic group converts "
                    "online, or keep the refused member on group.protocol=classic until the whole group moves (an "
                    "offline migration: stop every member, then start them with group.protocol=consumer)"}


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """None: the rule reads protocol semantics only (thresholds.toml [protocol-migration-refused] is empty)."""


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    migration = classification.migration
    if not migration.found:
        return
    protocols = migration.protocols()
    refusals = figures.count("refusals", "refusals logged by the coordinator", [r.event for r in migration.refusals])
    order = sorted(migration.refused, key=lambda m: (-len(migration.refused[m]), m))
    parts = []
    for protocol in protocols:
        mine = [r for r in migration.refusals if r.protocol == protocol]
        reasons = sorted({r.reason for r in mine if r.reason})
        if mine:
            parts.append(f"The coordinator refused {len(mine)} request(s) of {_WHAT.get(protocol, protocol + ' members')}"
                         + (f" because {'; '.join(reasons)}" if reasons else "") + ".")
        else:
            parts.append(f"{_OWN[protocol]} (the coordinator's log, which says why, is not included).")
    evidence = [Evidence.of(r.event) for r in migration.refusals[:3]]
    labels = []
    for who in order:
        labels.append(label_of(classification.members, who))
        evidence += [Evidence.of(e) for e in migration.refused[who][:2]]
    refused = figures.count("members_refused_requests", "the refused members' own refused requests",
                            [e for who in order for e in migration.refused[who]])
    if order:
        parts.append(f"Refused: {names(labels)} ({refused.text()} refused request(s) in their own logs); "
                     "a refused member holds no partitions.")
    else:
        parts.append("The refused members' own logs are not included: which process it was is not known.")
    if migration.conversions:
        parts.append(f"The group was converted {len(migration.conversions)} time(s) in the window.")
    culprit = culprit_of(classification.members, order[0] if order else None)
    label = culprit.label if culprit else "a member"
    start, end = window(evidence)
    what = " and ".join(_WHAT.get(p, p) for p in protocols)
    finding = Finding(ID, SEVERITY, group.group, f"{label}: {what} (group.consumer.migration.policy)",
                      " ".join(parts), start, end, dedupe(evidence),
                      "; or ".join(_FIX.get(p, _FIX["consumer"]) for p in protocols).capitalize() + ".",
                      culprit=culprit)
    finding.figures = [f for f in (refusals if migration.refusals else None, refused if order else None) if f]
    finding.cause = f"{label} refused: its group protocol may not join the group's ({', '.join(protocols)} refused)"
    refused_ids = {id(e) for v in migration.refused.values() for e in v} | {id(r.event) for r in migration.refusals}
    finding.caused = {"rebalances": sorted({r.index for r in group.rebalances
                                            if any(id(e) in refused_ids for e in r.events)}),
                      "culprits": order}
    yield finding
