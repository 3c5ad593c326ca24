"""A streams group's topology is never ready: topics it needs are missing, so no task is assigned.

Symptom
-------
The members of a ``group.protocol=streams`` group join, but the coordinator keeps their topology
"not ready" and gives them no task; each member logs every heartbeat answer's status::

    2026-12-07T03:08:07,512 WARN  [consumer_background_thread] org.apache.kafka.clients.consumer.internals.StreamsGroupHeartbeatRequestManager - [Consumer clientId=order-counts-c056b0e4-...-StreamThread-1-consumer, groupId=order-counts] Membership is in the following statuses: (3) Internal topics are missing: order-counts-order-counts-changelog; Creation failed: order-counts-order-counts-changelog (Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered or some brokers have all their log directories cordoned.).

while the coordinator says the topology's internal topics are missing (or its source topics are)
and never that it is initialized::

    [2026-12-07 03:08:05,024] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=37] [GroupId order-counts][MemberId dFfOWyUUSju0jfIEg9mk5A] Valid topic configuration found in 45ms, but internal topics are missing for topology epoch 0: order-counts-order-counts-changelog (org.apache.kafka.coordinator.group.GroupMetadataManager)
    [2026-12-07 03:08:05,083] INFO [GroupCoordinator id=1 ...] [GroupId order-counts][MemberId dFfOWyUUSju0jfIEg9mk5A] Bumped streams group epoch to 2 with metadata hash 1981616962937926707 and validated topic epoch -1. (org.apache.kafka.coordinator.group.GroupMetadataManager)

Why it happens
--------------
Under KIP-1071 the broker, not the client, checks a Streams topology against the cluster and creates
its repartition and changelog topics. Until every source topic exists and every internal topic has
been created, the topology is not initialized and the group's members get no task: the application
runs and processes nothing. The creation fails when the replication factor the application asks for
(its ``replication.factor``) is above the brokers registered, or a create-topic policy, quota or ACL
refuses it; the members' statuses say why ("Creation failed: ..."). A missing source topic
(MISSING_SOURCE_TOPICS, "Source topics ... are missing.") is a topic not created yet or a name
mistyped; topics that must be co-partitioned and are not (INCORRECTLY_PARTITIONED_TOPICS) stop it too.
Every group's start goes through "internal topics are missing" once, while the topics are created,
and two members asking at once see one creation fail "already exists": neither is this finding.

Remediation
-----------
Make the topics possible: ``replication.factor`` at most the brokers of the cluster (``-1`` takes
the brokers' ``default.replication.factor``), the create-topic policy and ACLs letting the
application's principal create ``<application.id>-*`` topics, or create the internal topics
beforehand with the names the coordinator lists; create the source topics (or correct their
names); give co-partitioned topics the same partition count. The group picks the topology up on
its next heartbeat once the topics exist.

Scope: KIP-1071 streams groups (``group.protocol=streams``, Kafka 4.1+). Under the classic protocol
Kafka Streams creates the topics itself and fails its own way (``MissingSourceTopicException``).
It fires when the topology was reported not ready since it was last initialized, no member was given a
task after that, and a line says why; when no line says why (the members' logs are missing), a note
says so instead of a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..classify.topology import INTERNAL, PARTITIONED, SOURCE
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, Note, dedupe, window
from .helpers import names

ID = "streams-topics-missing"
SEVERITY = "critical"
ROLE = "cause"
PROTOCOLS = ("streams-group",)
# What is wrong with the topics, by the most telling status among the reports.
_WHAT = {SOURCE: "its source topics are missing", PARTITIONED: "topics it must co-partition are not co-partitioned",
         INTERNAL: "its internal topics are missing"}
_CAUSE = {SOURCE: "the source topics of {group} are missing",
          PARTITIONED: "the topics {group} must co-partition are not co-partitioned",
          INTERNAL: "the internal topics of {group} are missing"}


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [streams-topics-missing], typed as thresholds_schema.toml types it (none: protocol semantics
    only)."""


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    topology = classification.topology
    if not topology.stuck:
        return
    reports = topology.episode        # since the topology was last ready (all of them when it never was)
    failures = [r for r in reports if r.failure or r.code != INTERNAL]   # why: a creation failed, or source topics
    last = reports[-1]
    if not failures:
        yield Note(ID, group.group, f"not enough evidence: the topology is not ready at the end of the logs "
                                    f"({last.event.get('source')}:{last.event.get('line')}: topics missing: "
                                    f"{last.topics or 'not named'}) and no line says why it cannot have them "
                                    "(the members' own logs state the topic creation's failure)")
        return
    first = failures[0]
    missing = sorted({r.topics for r in reports if r.topics})
    reasons = sorted({r.failure for r in failures if r.failure})
    members = sorted({who for r in reports if r.event.get("component") != "broker" for who in (group.who(r.event),)
                      if who})
    not_ready = figures.count("not_ready", "heartbeat answers and coordinator lines saying the topology is not ready",
                              [r.event for r in reports])
    failed = figures.count("creation_failures", "reports of the internal topics' creation failing",
                           [r.event for r in failures if r.failure])
    span = figures.duration("not_ready_ms", "time the topology was reported not ready (first to last report)",
                            reports[0].event, last.event)
    # Under the streams protocol a StreamThread told its source topics are missing gives up (after twice the
    # heartbeat interval) with MissingSourceTopicException, and its handler decides what follows.
    gave_up = [e for e in topology.gave_up if e["ts"] >= reports[0].event["ts"]]
    died = figures.count("threads_gave_up", "StreamThreads that gave up waiting (MissingSourceTopicException)", gave_up)
    figs = [not_ready] + ([failed] if failed.value else []) + [span] + ([died] if gave_up else [])
    code = min(r.code for r in failures)          # SOURCE, then PARTITIONED, then INTERNAL
    source = code == SOURCE
    parts = [f"The coordinator never initialized the topology of streams group {group.group}: {_WHAT[code]} "
             f"({names(missing, 3)}), so no task was assigned; {not_ready.text()} report(s) over {span.text()}"
             + (f" from {names(members, 3)}" if members else "") + "."]
    if reasons:
        parts.append(f"Creating them failed {failed.text()} time(s): {reasons[0]}")
    if gave_up:
        parts.append(f"{died.text()} StreamThread(s) gave up waiting for them (MissingSourceTopicException: the "
                     "uncaught exception handler decides what follows, SHUTDOWN_CLIENT by default); a member that left "
                     "without a leave is fenced when its session expires.")
    remedy = ("Make the topics possible: replication.factor at most the brokers of the cluster (-1 takes the brokers' "
              "default.replication.factor), a create-topic policy and ACLs that let the application create its "
              "<application.id>-* topics, or create the internal topics beforehand; create the source topics (or "
              "correct their names). The group picks the topology up on its next heartbeat once the topics exist.")
    if code == PARTITIONED:
        remedy = ("Give the topics that must be co-partitioned (the inputs of a join) the same number of partitions; "
                  "under group.protocol=streams the client fails with a TopologyException until they have.")
    if source:
        remedy = (f"Create the source topic(s) {names(missing, 3)} before the application starts (or correct the topic "
                  "names in the topology); under group.protocol=streams a StreamThread waits twice the heartbeat "
                  "interval for them and then fails with MissingSourceTopicException, so restart the application once "
                  "they exist. The group picks the topology up on its next heartbeat.")
    # The first failure refused for its replication factor above the brokers registered (ReplicationControlManager's
    # reason, which the statuses line's pattern captures).
    too_few = next((r for r in failures if r.replication_factor is not None and r.brokers_registered is not None),
                   None)
    if too_few is not None:
        brokers, asked, stated = too_few.brokers_registered, too_few.replication_factor, too_few.event
        asked_fig = figures.stated("asked", asked, figures.COUNT, "replication factor asked for, as the failure states",
                                   stated)
        advised = figures.derived("advised.replication.factor", brokers, figures.COUNT, "advised replication.factor",
                                  [stated], f"at most the brokers registered, as the failure states ({brokers}); "
                                            "-1 takes the brokers' default.replication.factor")
        figs += [asked_fig, advised]
        remedy = (f"Set replication.factor to at most {advised.text()} (the brokers registered; -1 takes the brokers' "
                  f"default.replication.factor), or add brokers: the internal topics ask for "
                  f"{asked_fig.text()} replicas. " + remedy.split(". ", 1)[1])
    coordinator = [r.event for r in reports if r.event.get("component") == "broker"]
    evidence = [Evidence.of(first.event)] + [Evidence.of(e) for e in coordinator[:2]] + [Evidence.of(last.event)]
    evidence += [Evidence.of(e) for e in gave_up[:2]]
    start, end = window(evidence)
    finding = Finding(ID, SEVERITY, group.group, f"streams group {group.group} never gets a task: {_WHAT[code]}",
                      " ".join(parts), start, end, dedupe(evidence), remedy)
    finding.figures = figs
    finding.cause = (f"the topics of {group.group}'s topology cannot be created ({reasons[0]})" if reasons
                     else _CAUSE[code].format(group=group.group))
    # A topology that is not ready causes no rebalance: the members stay in the group, given no task; those whose
    # thread gave up left it (fenced one session later): their departures are this finding's.
    finding.caused = {"rebalances": [],
                      "culprits": sorted({who for e in gave_up for who in (group.who(e),) if who})}
    yield finding
