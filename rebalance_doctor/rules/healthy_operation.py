"""Every rebalance of the group is part of an expected operation: the group is healthy.

Symptom
-------
Rebalances that a healthy group goes through, e.g. a cooperative rolling restart (each member
closes, comes back, and the members that give it partitions rejoin once more)::

    [2024-03-05 10:01:00,002] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state PreparingRebalance with old generation 41 (__consumer_offsets-17) (reason: Removing member consumer-orders-1-3f0c... on LeaveGroup; client reason: the consumer is being closed) (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 10:01:20,052] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state PreparingRebalance with old generation 42 (__consumer_offsets-17) (reason: Adding new member consumer-orders-1-9a1d... with group instance id None; client reason: need to re-join with the given member-id: consumer-orders-1-9a1d...) (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 10:01:20,420] INFO [Consumer clientId=consumer-orders-1, groupId=orders] Request joining group due to: need to revoke partitions [orders-2] as indicated by the current assignment and re-join (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)

Why it happens
--------------
Rebalancing is how a group adapts to planned changes: members starting (the group forming, a
scale-out), members closing (a scale-in), restarts (rolling restarts, deploys), the second round of
an incremental cooperative rebalance, Kafka Streams probing and version probing during an
upgrade. A group whose coordinator moved (a broker restart, a leader election of its
``__consumer_offsets`` partition) while every member followed it, without a rebalance, is healthy too. The classification names each rebalance's operation; when all of them are expected and
no other finding warns, the answer is that the group is healthy: this note says what it went
through, how many rebalances it took and how long the group was without a stable generation.
Restarts are a "rolling restart" when the members went in turn, a "restart of N members together"
when every one of them left before any came back (a deploy of every replica at once).
Expected findings (version probing during an upgrade) follow it as info notes of their own.

Remediation
-----------
Nothing to fix. To make such operations cheaper: static membership (``group.instance.id`` with a
``session.timeout.ms`` above the restart time) makes restarts free; the cooperative assignor or
``group.protocol=consumer`` (KIP-848, Kafka 4.0+) keeps unaffected partitions consuming.

Scope: every protocol the classification diagnoses.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..classify import of, words
from ..classify.protocol import heartbeat_protocol
from ..timeline.identity import node_of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, span, trigger_evidence

ID = "healthy-operation"
SEVERITY = "info"
ROLE = "healthy"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer", "streams-group", "share")
# The operation a healthy series is named after, the most telling first (before the most frequent: the members
# a restart brings back also appear as arrivals).
_HEADLINE = ("rolling-restart", "deploy", "static-restart", "scale-out", "scale-in", "initial-join", "version-probing",
             "probing-followup", "metadata-change", "enforced", "endpoint-followup", "cooperative-followup")
_PLURAL = {"rolling-restart": "rolling restart", "deploy": "deploy", "static-restart": "static restart",
           "scale-out": "scale-out", "scale-in": "scale-in", "initial-join": "start-up",
           "version-probing": "rolling upgrade with version probing", "probing-followup": "Streams warmup probing",
           "metadata-change": "metadata change", "enforced": "enforced rebalance",
           "endpoint-followup": "endpoint update", "cooperative-followup": "cooperative rebalance"}


_NO_INSTANCE = ("null", "None", "Optional.empty", "")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """None: the rule reads protocol semantics only (thresholds.toml [healthy-operation] is empty)."""


def check(group: GroupTimeline, t: Thresholds):
    # A rebalance the logs begin in the middle of says nothing about the group's health.
    rebalances = [r for r in group.rebalances if not r.truncated]
    if any(r.verdict != "expected" for r in rebalances):
        return
    if not rebalances:
        if group.rejoins:
            yield _static_only(group)
        elif of(group).coordinator.moves:
            yield _coordinator_followed(group)
        return
    operations = Counter(r.operation for r in rebalances)
    # Named after what started the series (followups and returns follow from it).
    roots = Counter(r.operation for r in rebalances if r.cause_index is None) or operations
    if len(roots) > 1:
        # the group forming is where the logs begin, not what it went through
        roots.pop("initial-join", None)
    headline = sorted(roots, key=lambda op: (_HEADLINE.index(op) if op in _HEADLINE else 99, -roots[op]))[0]
    members = sorted({r.culprit_name for r in rebalances if r.culprit_name and r.operation == headline})
    start, end = span(rebalances)
    count = _members(group, rebalances, headline)
    took = figures.rebalances("rebalances", "rebalances of the operations", rebalances)
    unstable_figure = figures.unstable("unstable_ms", "time without a stable generation", group.rebalances)
    # the time unstable as its figure states it ('0.0s' was printed when no rebalance had a first and a last line)
    unstable = (f"{unstable_figure.text()} unstable" if unstable_figure.known
                else "the time unstable not in the logs")
    what = _PLURAL.get(headline, headline or "expected operations")
    together = headline == "rolling-restart" and (count.value or 0) > 1 and _together(rebalances)
    if together:
        what = "restart"
    if count.value:
        what += f" of {count.text()} member{'s' if count.value != 1 else ''}"
    if together:
        what += " together"
    # the other operations' rebalances, each a figure the prose states
    also = [figures.rebalances(f"rebalances.{op}", f"rebalances of {words(op)}",
                               [r for r in rebalances if r.operation == op])
            for op, _ in operations.most_common() if op != headline]
    others = [f"{x.text()} {x.label.removeprefix('rebalances of ')}" for x in also]
    summary = (f"{what}: {took.text()} rebalance{'s' if took.value != 1 else ''}, "
               f"{unstable}, as expected"
               + (f" (also {', '.join(others)})" if others else "") + ". Every rebalance is part of an expected "
               "operation; nothing needs fixing.")
    protocol = of(group).protocol
    static = [r for r in group.rejoins if (r.get("instance") or "null") not in _NO_INSTANCE]
    quiet = _quiet_figures(group, static)
    if static:
        summary += f" {quiet['static_returns'].text()} static member return(s) within session.timeout.ms cost no rebalance."
    if len(group.rejoins) > len(static):
        # dynamic members joining a generation already complete: e.g. the classic members of a consumer group
        # during an online migration, whose JoinGroup answers each epoch bump of the group
        summary += (f" {quiet['dynamic_rejoins'].text()} rejoin(s) of dynamic members into a generation already "
                    "complete cost no rebalance.")
    if "conversions" in quiet:
        summary += (f" The coordinator converted the group between the classic and the consumer protocol "
                    f"{quiet['conversions'].text()} time(s) (an online migration, group.consumer.migration.policy).")
    finding = Finding(ID, "info", group.group, f"healthy: {what} ({took.text()} rebalance"
                                               f"{'s' if took.value != 1 else ''}, {unstable})",
                      summary, start, end, dedupe(trigger_evidence(rebalances, 6)),
                      "Nothing to fix." + (" Static membership (group.instance.id, session.timeout.ms above the "
                                           "restart time) would make such restarts cost no rebalance."
                                           if headline in ("rolling-restart", "deploy") and not heartbeat_protocol(protocol)
                                           else ""),
                      culprit=next((r.culprit for r in rebalances if r.operation == headline and r.culprit), None))
    finding.cause = f"{what} (expected)"
    finding.caused = {"rebalances": [r.index for r in rebalances], "culprits": members}
    finding.figures = [f for f in (count, took, unstable_figure) if f.value is not None] + also + list(quiet.values())
    if static and count.name != "restarted":
        returned = {r["member"]: r for r in static if r.get("member")}
        finding.figures.append(figures.derived(
            "restarted", len(returned), figures.COUNT, "static members restarted (no rebalance)",
            [Evidence.of(r["events"][-1]) for r in returned.values() if r.get("events")],
            "the distinct static members that returned within session.timeout.ms"))
    yield finding


def _quiet_figures(group, static: list) -> dict:
    """What cost no rebalance, counted: static members' returns, dynamic members' rejoins into a complete generation,
    the coordinator's conversions of the group between protocols (each only when there is one)."""
    out = []
    if static:
        out.append(figures.count("static_returns", "static member returns within session.timeout.ms (no rebalance)",
                                 [r["events"][-1] for r in static if r.get("events")])
                   if all(r.get("events") for r in static) else
                   figures.derived("static_returns", len(static), figures.COUNT, "static member returns (no rebalance)",
                                   [r["events"][-1] for r in static if r.get("events")], "the timeline's rejoins"))
    returns = {id(r) for r in static}
    dynamic = [r for r in group.rejoins if id(r) not in returns]
    if dynamic:
        out.append(figures.derived("dynamic_rejoins", len(dynamic), figures.COUNT,
                                   "rejoins of dynamic members into a complete generation (no rebalance)",
                                   [r["events"][-1] for r in dynamic if r.get("events")], "the timeline's rejoins"))
    conversions = of(group).migration.conversions
    if conversions:
        out.append(figures.count("conversions", "the coordinator's conversions of the group between protocols",
                                 conversions))
    return figures.by_name(out)


# How many members an operation took through, named for what it counts.
_COUNTED = {"rolling-restart": ("restarted", "members restarted"), "deploy": ("restarted", "members restarted"),
            "static-restart": ("restarted", "members restarted"), "scale-out": ("joined", "members that joined"),
            "scale-in": ("left", "members that left for good"),
            "initial-join": ("members", "members the group formed with")}


def _together(rebalances: list) -> bool:
    """The restarted members all left before any came back (stopped together, as a deploy of every replica at once
    does), not in turn: one rebalance holds every departure, or every return comes after the last departure."""
    restarts = [r for r in rebalances if r.operation == "rolling-restart" and r.start is not None]
    departures = [r for r in restarts if r.cause_index is None]
    returns = [r for r in restarts if r.cause_index is not None]
    if not departures:
        return False
    if len(departures) == 1:
        return True
    return bool(returns) and min(r.start for r in returns) >= max(r.start for r in departures)


def _members(group: GroupTimeline, rebalances: list, headline: str) -> figures.Figure:
    """The members the headline operation took through: the first generation's size for a start-up (one member's
    join starts it, all of them are in it); for a scale-in, the members whose departures its rebalances hold (two
    stopped together leave in one rebalance: its culprit is one of them); otherwise its rebalances' distinct
    culprits, or, where culprits cannot be told apart by name (a client.id every process shares, as librdkafka's
    default 'rdkafka'), the members that departed in them (a restart is one departure each); a restart's members also
    count those that departed in its rebalances and those that came back in them (several stopped together leave in
    one rebalance, whatever name it gets, and return in another), a Kafka Streams instance once for all its threads."""
    name, label = _COUNTED.get(headline, ("members", "members the operations took through"))
    # the operations that count the same (a restart whose return was not paired with its departure is a deploy)
    ops = [r for r in rebalances if r.operation == headline
           or (headline in _COUNTED and headline != "initial-join" and _COUNTED.get(r.operation, ("",))[0] == name)]
    if headline == "initial-join":
        sized = [r for r in ops if r.members]
        if sized:
            first = max(sized, key=lambda r: r.members)
            return figures.derived(name, first.members, figures.COUNT, label,
                                   [first.trigger_evidence] + [e for e in first.events if e.get("members")][:1],
                                   "the member count of the generation it formed, as logged")
    if headline == "scale-in":
        # the departures the classification read in its rebalances (what made them a scale-in), one line a member
        changes = of(group).changes or {}
        departed = {}
        for r in ops:
            for d in (changes[r.index].departures if r.index in changes else ()):
                departed.setdefault(d.who, d.event)
        if departed:
            return figures.count(name, label, list(departed.values()))
    named = [r for r in ops if r.culprit_name]
    if named and all(r.culprit is not None and r.culprit.ambiguous for r in named):
        departed = {m for r in ops for m in r.left + r.expired}
        if departed:
            return figures.derived(name, len(departed), figures.COUNT, label,
                                   [r.trigger_evidence for r in ops if r.left or r.expired],
                                   "members that departed in its rebalances (their client.id names no one process)")
    # a culprit named by its client.id alone (no line ties it to a host) is one of the hosts' members with that
    # client.id, when there are any: not one more member
    hosted = {r.culprit.client for r in named if r.culprit is not None and r.culprit.host}
    firsts = {}
    for r in named:
        if r.culprit is not None and not r.culprit.host and r.culprit.client in hosted:
            continue
        firsts.setdefault(r.culprit_name, r.trigger_evidence)
    if name == "restarted":
        # several members stopped together leave in one rebalance, which names one of them: a restart is one
        # departure each, so the departures the classification read count too
        changes = of(group).changes or {}
        departed: dict[str, dict] = {}      # every departure so far, in rebalance order
        ops_at = {r.index for r in ops}
        for r in group.rebalances:
            change = changes.get(r.index)
            if change is None:
                continue
            if r.index in ops_at:   # its departures, and its arrivals of members that had departed (their return)
                for d in change.departures:
                    if d.who and d.who != "?":
                        firsts.setdefault(d.who, d.event)
                for who, e in change.arrivals:
                    if who in departed:
                        firsts.setdefault(who, e)
            for d in change.departures:
                departed.setdefault(d.who, d.event)
        # a Kafka Streams instance restarts with all its StreamThreads: one restart of its process, not one per thread
        by_process: dict[str, dict] = {}
        for who, e in firsts.items():
            by_process.setdefault(node_of(who) or who, e)
        firsts = by_process
    return figures.derived(name, len(firsts), figures.COUNT, label, list(firsts.values()),
                           "the distinct members that caused its rebalances or departed in them")


def _static_only(group: GroupTimeline) -> Finding:
    """Static members restarting within session.timeout.ms: the coordinator let them back in, no rebalance."""
    names = sorted({r["member"] for r in group.rejoins if r.get("member")})
    evidence = [Evidence.of(r["events"][-1]) for r in group.rejoins if r.get("events")]
    start, end = window(evidence)
    what = f"static restart of {len(names)} member{'s' if len(names) != 1 else ''}"
    classification = of(group)
    finding = Finding(ID, "info", group.group, f"healthy: {what} (no rebalance)",
                      f"{what}: {len(group.rejoins)} return(s) into a stable generation within session.timeout.ms, "
                      "no rebalance, as expected. Every member came back before its session expired; nothing needs "
                      "fixing.", start, end, dedupe(evidence), "Nothing to fix.",
                      culprit=culprit_of(classification.members, names[0] if names else None, fallback=False))
    finding.cause = f"{what} (expected)"
    finding.caused = {"rebalances": [], "culprits": names}
    finding.figures = [figures.derived("restarted", len(names), figures.COUNT, "members restarted", evidence,
                                       "the distinct static members that returned")]
    return finding


def _coordinator_followed(group: GroupTimeline) -> Finding:
    """The coordinator moved (a broker restart, a leader election) and the members followed it: no rebalance.
    When that is harmful (members lost on the way, the moves repeating), coordinator-churn warns and this note
    is not given (chains.link gives the healthy note only to a group nothing warns about)."""
    moves = of(group).coordinator.moves
    evidence = [Evidence.of(m.event) for m in moves]
    start, end = window(evidence)
    moved = figures.count("moves", "the coordinator's moves (each one's line)", [m.event for m in moves])
    what = f"coordinator move{'s' if moved.value != 1 else ''} ({moved.text()})"
    finding = Finding(ID, "info", group.group, f"healthy: {what}, no rebalance",
                      f"The coordinator moved {moved.text()} time(s) (a broker restart or a leader election of the "
                      "group's __consumer_offsets partition) and every member followed it: no rebalance, as expected; "
                      "nothing needs fixing.", start, end, dedupe(evidence), "Nothing to fix.")
    finding.cause = f"{what} (expected)"
    finding.caused = {"rebalances": [], "culprits": []}
    finding.figures = [moved]
    return finding
