"""KIP-848 consumer-group members fenced by the coordinator: their session expired or they missed the rebalance timeout.

Symptom
-------
The coordinator fences a member of a ``group.protocol=consumer`` group::

    [2024-03-05 09:01:30,794] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=24] [GroupId notifications] Member xJIlABuKCTwsuReBA17V2Q fenced from the group because the member session expired. (org.apache.kafka.coordinator.group.GroupMetadataManager)
    [2025-04-01 10:00:05,113] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=17] [GroupId orders] Member 3tXq fenced from the group because it failed to transition from epoch 5 within 300000ms. (org.apache.kafka.coordinator.group.GroupMetadataManager)

and the member finds out at its next heartbeat, loses its partitions and joins again at epoch 0::

    [2024-03-05 09:01:38,364] INFO [Consumer clientId=consumer-notifications-1, groupId=notifications] ConsumerGroupHeartbeatRequest failed because member xJIlABuKCTwsuReBA17V2Q is unknown. in 0ms: The coordinator is not aware of this member. (org.apache.kafka.clients.consumer.internals.ConsumerHeartbeatRequestManager)
    [2024-03-05 09:01:38,364] INFO [Consumer clientId=consumer-notifications-1, groupId=notifications] Lost previously assigned partitions [notifications-5, notifications-8] (org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker)

Why it happens
--------------
Under the consumer protocol (KIP-848, Kafka 4.0+) the broker owns the session and the
reconciliation. A member is fenced when no heartbeat reaches the coordinator for the broker's
``group.consumer.session.timeout.ms`` (a GC pause, a stalled process, the network), or when it does
not revoke or acknowledge its new assignment within its rebalance timeout (the client's
``max.poll.interval.ms``: a poll loop or an ``onPartitionsRevoked`` callback too slow). A heartbeat
with an old epoch is answered FENCED_MEMBER_EPOCH. Each fencing bumps the group epoch twice (the
member leaves, then joins again) and moves its partitions away and back; the others keep
consuming (no stop-the-world), but its partitions wait for the session timeout.

Remediation
-----------
For session fencing: find what stopped the member's heartbeats (pauses, CPU, network) at the
evidence times; the session timeout is the broker's ``group.consumer.session.timeout.ms`` (raise it
within ``group.consumer.max.session.timeout.ms`` on the brokers, or per group with
``kafka-configs --entity-type groups``); ``session.timeout.ms`` and ``heartbeat.interval.ms`` on the
client are ignored under this protocol. For rebalance-timeout fencing: make ``onPartitionsRevoked``
and the poll loop faster, or raise ``max.poll.interval.ms``.

Scope: the groups whose members the coordinator keeps by their heartbeats: KIP-848 consumer groups
(``group.protocol=consumer``), KIP-1071 streams groups (``group.protocol=streams``, whose session
timeout is ``group.streams.session.timeout.ms``) and KIP-932 share groups (``KafkaShareConsumer``,
``group.share.session.timeout.ms``); the finding names the group type and its broker setting.
Classic groups' session loss is heartbeat-expiration. A member leaving on purpose (epoch -1) is not
fenced. The fencings of a member whose process keeps being killed and started again (the
classification's restart loop) are membership-flapping's: each is how the coordinator noticed a death.

Culprit: a KIP-848 member id names no host. When the member's own client lines state no member id
(librdkafka and KafkaJS at their default levels print only the application's callbacks), its host is
the process whose callbacks gave their partitions up as the member joined again under its id
(``timeline.unnamed``), and that line is in the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..classify.protocol import BROKER_PREFIX, GROUP_KIND
from ..classify.fencing import REBALANCE_TIMEOUT, SESSION, STALE_EPOCH, UNKNOWN
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, escalate, label_of, names

ID = "kip848-fencing"
SEVERITY = "warning"
ROLE = "cause"
# The fencing that frees a held group.instance.id is part of unreleased-instance-id's story when both name the member.
# A streams group's member whose thread died (its handler shutting the client down), gave up on missing source
# topics, or whose instance shut down when the application was asked to (SHUTDOWN_APPLICATION), is fenced one
# session later: that is the story.
YIELDS_TO = ("unreleased-instance-id", "streams-topics-missing", "application-shutdown", "thread-died")
PROTOCOLS = ("consumer", "streams-group", "share")

_WHY = {SESSION: "its session expired (no heartbeat within the broker's {prefix}.session.timeout.ms)",
        REBALANCE_TIMEOUT: "it did not revoke or acknowledge its assignment within its rebalance timeout "
                           "(max.poll.interval.ms)",
        STALE_EPOCH: "it heartbeated with an epoch the coordinator had fenced",
        UNKNOWN: "the coordinator no longer knew it (fenced or removed before)"}


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [kip848-fencing], typed as thresholds_schema.toml types it."""
    critical_count: int


def _placed_by(group: GroupTimeline, who: str, at) -> Evidence | None:
    """The member's first line of its own after ``at`` that only the coordinator's removal and rejoin tie to it
    (``attrs.member_from``): a line of a process whose lines name no member id."""
    if at is None:
        return None
    for e in group.events:
        if e.get("component") != "broker" and e.get("ts") is not None and e["ts"] >= at \
                and (e.get("attrs") or {}).get("member_from") == "coordinator" and group.who(e) == who:
            return Evidence.of(e)
    return None


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    # A member whose process keeps dying and being started again is a restart loop (membership-flapping's): each
    # fencing is only how the coordinator noticed one of its deaths.
    looped = {id(e) for r in group.rebalances if r.operation == "restart-loop" for e in r.events}
    by_member = {m: kept for m, fences in classification.fencing.by_member().items()
                 if (kept := [f for f in fences if id(f.event) not in looped])}
    if not by_member:
        return
    order = sorted(by_member, key=lambda m: (-len(by_member[m]), m))
    fencings = figures.count("fencings", "fencings by the coordinator",
                             sorted((f.event for v in by_member.values() for f in v),
                                    key=lambda e: (e.get("ts") is None, e.get("ts") or 0)))
    fenced = figures.count("members", "members fenced (each one's first fencing)", [by_member[m][0].event for m in order])
    each = {m: figures.count(f"fencings.{m}", f"times {m} was fenced", [f.event for f in by_member[m]]) for m in order}
    count = fencings.value
    kind = GROUP_KIND.get(classification.protocol, GROUP_KIND["consumer"])
    prefix = BROKER_PREFIX.get(classification.protocol, BROKER_PREFIX["consumer"])
    parts = [f"{fencings.text()} fencing(s) of {fenced.text()} member(s) of a {kind}: {names(order)}."]
    evidence = []
    for who in order[:3]:
        fences = by_member[who]
        kinds = sorted({f.kind for f in fences}, key=list(_WHY).index)
        label = label_of(classification.members, who)
        parts.append(f"{label} was fenced {each[who].text()} time(s): " + "; ".join(_WHY[k].format(prefix=prefix) for k in kinds) + ".")
        evidence += [Evidence.of(f.event) for f in fences[:4]]
        placed = _placed_by(group, who, fences[0].event.get("ts"))
        if placed is not None:
            # A KIP-848 member id names no host: say which line placed the member on one (timeline.unnamed).
            parts.append(f"{placed.host} is its host: the process whose log gave its partitions up as the member "
                         f"joined again ({placed.ref()}).")
            evidence.append(placed)
    fenced_ids = {id(f.event) for v in by_member.values() for f in v}
    caused = [r.index for r in group.rebalances if any(id(e) in fenced_ids for e in r.events)
              or any(d.kind == "fencing" for d in classification.changes[r.index].departures)] \
        if classification.changes else []
    by_index = {r.index: r for r in group.rebalances}
    bumps = figures.rebalances("epoch_bumps", "epoch bumps of the group the fencings caused",
                               [by_index[i] for i in caused])
    if caused:
        parts.append(f"It cost {bumps.text()} epoch bump(s) of the group (its partitions moved away and back).")
    kinds = {f.kind for v in by_member.values() for f in v}
    remedy = []
    if kinds & {SESSION, STALE_EPOCH, UNKNOWN}:
        remedy.append("find what stopped the member's heartbeats (GC pauses, CPU, network) at the evidence times; the "
                      f"session timeout is the broker's {prefix}.session.timeout.ms (raise it within "
                      f"{prefix}.max.session.timeout.ms, or per group with kafka-configs --entity-type groups); the "
                      "client's session.timeout.ms and heartbeat.interval.ms do not apply to this group type")
    if REBALANCE_TIMEOUT in kinds:
        remedy.append("make onPartitionsRevoked and the poll loop faster, or raise max.poll.interval.ms (the rebalance "
                      "timeout under KIP-848)")
    culprit = culprit_of(classification.members, order[0])
    label = culprit.label if culprit else order[0]
    severity = escalate(count, t["critical_count"])
    start, end = window(evidence)
    finding = Finding(ID, severity, group.group, f"{label} fenced by the coordinator ({fencings.text()} time(s))"
                      if len(order) == 1 else f"{fencings.text()} fencings of {fenced.text()} members, first {label}",
                      " ".join(parts), start, end, dedupe(evidence), "; ".join(remedy).capitalize() + ".",
                      culprit=culprit)
    finding.figures = [fencings, fenced, *each.values(), bumps]
    finding.cause = f"{label} fenced by the coordinator (" + ", ".join(sorted(kinds)) + ")"
    finding.caused = {"rebalances": caused, "culprits": order}
    yield finding
