"""An eager assignor (range, roundrobin, sticky) in a group that rebalances often: every rebalance stops every member.

Symptom
-------
The group's members join with an eager assignor (their ``ConsumerConfig values:`` dump lists
``partition.assignment.strategy = [class org.apache.kafka.clients.consumer.RangeAssignor]``, the
generation names it) and, at every rebalance, each member gives up all its partitions before it
rejoins, including members that keep them afterwards::

    [2024-03-05 09:01:09,871] INFO [Consumer clientId=consumer-orders-1, groupId=orders] Revoke previously assigned partitions orders-0, orders-3 (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)
    [2024-03-05 09:01:10,220] INFO [Consumer clientId=consumer-orders-1, groupId=orders] Successfully joined group with generation Generation{generationId=14, memberId='consumer-orders-1-6f1c...', protocol='range'} (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)

Why it happens
--------------
Under the eager protocol every member revokes everything it owns before it sends its JoinGroup
(onPartitionsRevoked), and consumes again only after the SyncGroup: the whole group stops for the
length of each rebalance ("stop the world"), whatever changed. The cooperative protocol
(CooperativeStickyAssignor, KIP-429) revokes only the partitions that move, and KIP-848's
``group.protocol=consumer`` moves the assignment to the broker and revokes incrementally too. In a
group that rebalances rarely this costs little and is no finding; in one that rebalances often
(autoscaling, frequent deploys, restarts) the stops add up: the finding counts the rebalances in
which members revoked partitions, the members that stopped and the partitions they gave up.

An advisory (``info``): it never comes first and never makes a healthy group warn. When a cause explains
those rebalances (poll timeouts, expiries), the remark is part of that cause's chain (what each of its
rebalances cost); when one member's list is what keeps the group eager, it folds into assignor-mismatch.

Remediation
-----------
Move to ``partition.assignment.strategy=org.apache.kafka.clients.consumer.CooperativeStickyAssignor``
with the two-bounce upgrade: first a rolling restart with ``[CooperativeStickyAssignor,
RangeAssignor]`` (cooperative first), then a second one with ``[CooperativeStickyAssignor]`` only;
or, with Kafka 4.0+ brokers and clients, ``group.protocol=consumer``. Static membership
(``group.instance.id``) also avoids the rebalances of restarts within ``session.timeout.ms``.

Scope: classic consumer groups on an eager assignor. Streams, Connect and KIP-848 groups have
their own protocols.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline, Rebalance
from . import contract, figures
from .finding import Finding, dedupe
from .helpers import names, span
from ..core import eventnames as EV

ID = "eager-assignor"
SEVERITY = "info"
ROLE = "advisory"
PROTOCOLS = ("eager",)
# One member's list keeping a cooperative group eager is the finding of assignor-mismatch.
YIELDS_TO = ("assignor-mismatch",)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [eager-assignor], typed as thresholds_schema.toml types it."""
    min_rebalances: int
    window_minutes: int


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    if classification.protocol != "eager":
        return
    stops = []                                       # (rebalance, members that revoked, partitions revoked)
    for r in group.rebalances:
        if r.protocol != "eager" or not r.completed:
            continue
        revoked = [e for e in r.events if e["event"] == EV.PARTITIONS_REVOKED and e.get("partitions")]
        if revoked:
            # a member's revocation may be logged twice (the client's line and its application's callback): each
            # member's partitions once
            given_up: dict[str, set] = {}
            for e in revoked:
                given_up.setdefault(group.who(e) or f"{e.get('host')}:{e.get('source')}", set()).update(e["partitions"])
            stops.append((r, {group.who(e) for e in revoked if group.who(e)},
                          sum(len(p) for p in given_up.values())))
    busiest = _busiest(stops, timedelta(minutes=t["window_minutes"]))
    if len(busiest) < t["min_rebalances"]:
        return
    assignors = sorted({e["protocol"] for e in group.of(EV.JOIN_SUCCESS, EV.SYNC_SUCCESS) if e.get("protocol")}) or \
        sorted({a.rsplit(".", 1)[-1] for m in classification.members for a in m.assignors})
    members = sorted({who for _, stopped, _ in stops for who in stopped})
    partitions = sum(n for _, _, n in stops)
    start, end = span(busiest)
    evidence = [Evidence.of(e) for r in busiest[:4] for e in r.events
                if e["event"] == EV.PARTITIONS_REVOKED and e.get("partitions")][:6]
    minutes = t["window_minutes"]
    revoking = [e for r, _, _ in stops for e in r.events if e["event"] == EV.PARTITIONS_REVOKED and e.get("partitions")]
    figs = [figures.rebalances("stops", "eager rebalances with members revoking partitions", [r for r, _, _ in stops]),
            figures.rebalances("peak", f"most of them within {minutes} min", busiest),
            figures.derived("members", len(members), figures.COUNT, "members that revoked", revoking,
                            "members of the revocation lines"),
            figures.derived("partitions_revoked", partitions, figures.COUNT, "partitions revoked in all", revoking,
                            "the partitions the revocation lines list, added up"),
            figures.threshold("min_rebalances", t["min_rebalances"], figures.COUNT,
                              f"stop-the-world rebalances within {minutes} min that make the remark", ID,
                              "min_rebalances"),
            figures.threshold("window_minutes", minutes, figures.MIN, "the window the rebalances are counted in", ID,
                              "window_minutes")]
    f = figures.by_name(figs)
    summary = (f"The group runs the eager {', '.join(assignors) or 'assignor'} protocol and rebalanced "
               f"{f['peak'].text()} times within {f['threshold.window_minutes'].text()} min with members revoking partitions ({f['stops'].text()} "
               f"such rebalances in the logs): at each one every member stopped consuming until the new assignment "
               f"({f['members'].text()} member(s): {names(members)}; {f['partitions_revoked'].text()} partition(s) "
               "revoked in all), also those that kept their partitions.")
    finding = Finding(ID, "info", group.group,
                      f"eager {', '.join(assignors) or 'assignor'}: {f['stops'].text()} stop-the-world rebalance(s)",
                      summary, start, end, dedupe(evidence),
                      "Move to CooperativeStickyAssignor with the two-bounce upgrade ([CooperativeStickyAssignor, "
                      "RangeAssignor], then [CooperativeStickyAssignor]), or to group.protocol=consumer on Kafka "
                      "4.0+; static membership (group.instance.id) avoids the rebalances of quick restarts.")
    finding.figures = figs
    finding.caused = {"rebalances": [r.index for r, _, _ in stops], "culprits": []}
    yield finding


def _busiest(stops, width: timedelta) -> list[Rebalance]:
    """The most stop-the-world rebalances that fit in one window of `width` (two pointers over time)."""
    timed = [s for s in stops if s[0].start is not None]
    best: list = []
    low = 0
    for high in range(len(timed)):
        while timed[high][0].start - timed[low][0].start > width:
            low += 1
        if high - low + 1 > len(best):
            best = [r for r, _, _ in timed[low:high + 1]]
    return best
