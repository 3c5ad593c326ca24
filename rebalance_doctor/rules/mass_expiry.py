"""Members of several groups removed on session timeout within the same second: a broker, network or host cause, not the applications.

Symptom
-------
One coordinator removes members of different groups in the same second::

    [2021-05-04 16:41:31,006] INFO [GroupCoordinator 0]: Member consumer-agents-39-b6f4... in group agents-two has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
    [2021-05-04 16:41:31,008] INFO [GroupCoordinator 0]: Member consumer-agents-36-5af6... in group agents-ofa has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
    [2021-05-04 16:41:31,009] INFO [GroupCoordinator 0]: Member consumer-agents-41-e4f9... in group agents-ofa has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)

Why it happens
--------------
Each member's session is its own: independent applications do not lose their sessions in the same
second. Members of several groups expiring together point to what they share: the coordinator
broker (a long GC pause or a stalled request handler: when it runs again, every session whose
deadline passed meanwhile expires at once), the network between the clients and that broker, or a
host (or node) that runs the members of all those groups. Looking for the cause in each
application (its poll loop, its processing) is looking in the wrong place. When the coordinator
loaded the groups just before (it moved), coordinator-churn explains the expiries instead.

Remediation
-----------
Look at the coordinator broker at that second (GC log, request handler idle ratio, disk and network)
and at the hosts and network the members share. A ``session.timeout.ms`` larger than the longest
such pause lets members ride it out (within the broker's ``group.max.session.timeout.ms``).

Scope: every protocol whose coordinator logs removals on session timeout (classic consumers, Streams,
Connect, KIP-848). It needs the broker's log, and the groups analysed together (``analyze``: every
group of the input; Spark's per-group batch sees one group and leaves this rule to ``analyze``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Culprit, Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe
from .helpers import escalate, names
from ..core import eventnames as EV

ID = "mass-expiry"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [mass-expiry], typed as thresholds_schema.toml types it."""
    same_second_ms: int
    min_groups: int
    min_members: int
    critical_members: int


def check(group: GroupTimeline, t: Thresholds):
    own = [e for e in group.of(EV.MEMBER_EXPIRED) if e.get("component") == "broker" and e.get("ts") is not None]
    if not own or not group.neighbours:
        return
    classification = of(group)
    width = t["same_second_ms"] / 1000
    best: list[dict] = []
    everyone = own + [x for x in group.neighbours if x.get("ts") is not None]
    mine_ids = {id(x) for x in own}
    for e in everyone:                          # the largest burst (all groups) holding one of this group's removals
        burst = [x for x in everyone if x.get("host") == e.get("host") and 0 <= (x["ts"] - e["ts"]).total_seconds() <= width]
        if len(burst) > len(best) and any(id(x) in mine_ids for x in burst):
            best = burst
    groups = sorted({x.get("group") for x in best})
    members = sorted({x.get("member") or "?" for x in best})
    if len(groups) < t["min_groups"] or len(members) < t["min_members"]:
        return
    mine = [x for x in best if x.get("group") == group.group]
    if any(classification.coordinator_loaded_before(x["ts"]) is not None and _since_load(classification, x)
           for x in mine):
        return                                  # removed one session after the coordinator loaded them: churn
    broker = best[0].get("host")
    ordered = sorted(best, key=lambda x: x["ts"])
    whose = [group.who(x) or x.get("member") for x in mine]
    per_member = list({x.get("member") or "?": x for x in reversed(ordered)}.values())[::-1]
    removals = figures.count("removals", f"members removed on session timeout by {broker} in one burst (all groups)",
                             per_member)
    per_group = list({x.get("group"): x for x in reversed(ordered)}.values())[::-1]
    groups_hit = figures.count("groups", "groups those removals are in (each one's first removal)", per_group)
    here = figures.count("removals_here", f"of them in {group.group}", mine)
    burst = figures.duration("burst", "from the first removal to the last", ordered[0], ordered[-1])
    figs = [removals, groups_hit, here, burst,
            figures.threshold("same_second_ms", t["same_second_ms"], figures.MS,
                              "removals this close on one coordinator are one burst", ID, "same_second_ms"),
            figures.threshold("min_groups", t["min_groups"], figures.COUNT, "groups a burst must hit", ID, "min_groups")]
    summary = (f"{removals.text()} members of {groups_hit.text()} groups ({names(groups)}) were removed on session "
               f"timeout by the coordinator on {broker} within {burst.text()}, {here.text()} of them in {group.group} "
               f"({names(whose)}). Independent applications do not lose their sessions in the same second: the cause "
               f"is what they share: the broker {broker} (a pause, a stalled request handler), the network to it, or "
               "a host that runs those members; their poll loops are not involved.")
    severity = escalate(len(members), t["critical_members"])
    evidence = [Evidence.of(x) for x in sorted(best, key=lambda x: (x.get("group") != group.group, x["ts"]))]
    finding = Finding(ID, severity, group.group,
                      f"{removals.text()} members of {groups_hit.text()} groups removed within {burst.text()} by {broker}",
                      summary, min(x["ts"] for x in best), max(x["ts"] for x in best), dedupe(evidence),
                      f"Look at the broker {broker} at that second (GC log, request handler idle ratio, disk, network) "
                      "and at the hosts and network the members share; a session.timeout.ms above the longest such "
                      "pause lets members ride it out (within group.max.session.timeout.ms).",
                      culprit=Culprit(host=broker))
    finding.figures = figs
    ids = {id(x) for x in mine}
    finding.cause = f"a problem shared by {len(groups)} groups at {broker} (broker, network or host)"
    finding.caused = {"rebalances": sorted({r.index for r in group.rebalances if any(id(e) in ids for e in r.events)}),
                      "culprits": sorted({w for w in whose if w})}
    yield finding


def _since_load(classification, expiry) -> bool:
    """The coordinator's load explains this removal (coordinator-churn's reading), when it has one."""
    explains = getattr(classification.coordinator, "explains", None)
    return bool(explains and explains(expiry))
