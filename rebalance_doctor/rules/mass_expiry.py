"""Members of several groups lose their sessions with one coordinator at the same moment: a broker, network or host cause, not the applications.

Symptom
-------
One coordinator removes members of different groups in the same second::

    [2021-05-04 16:41:31,006] INFO [GroupCoordinator 0]: Member consumer-agents-39-b6f4... in group agents-two has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
    [2021-05-04 16:41:31,008] INFO [GroupCoordinator 0]: Member consumer-agents-36-5af6... in group agents-ofa has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
    [2021-05-04 16:41:31,009] INFO [GroupCoordinator 0]: Member consumer-agents-41-e4f9... in group agents-ofa has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)

or the members of several groups say, within a heartbeat of each other, that the coordinator they name
stopped answering their heartbeats for a whole session (the lab's coordinator-pause: the broker paused
16 s; resumed, it answered the heartbeats queued meanwhile first and removed one member of five)::

    2026-12-07T15:11:26,611 INFO  [kafka-coordinator-heartbeat-thread | payments] ...ConsumerCoordinator - [Consumer clientId=consumer-payments-1, groupId=payments] Group coordinator 127.0.0.1:39893 (id: +1 rack: null isFenced: false) is unavailable or invalid due to cause: session timed out without receiving a heartbeat response. isDisconnected: false. Rediscovery will be attempted.
    2026-12-07T15:11:27,612 INFO  [kafka-coordinator-heartbeat-thread | orders] ...ConsumerCoordinator - [Consumer clientId=consumer-orders-1, groupId=orders] Group coordinator 127.0.0.1:39893 (id: +1 rack: null isFenced: false) is unavailable or invalid due to cause: session timed out without receiving a heartbeat response. isDisconnected: false. Rediscovery will be attempted.

Why it happens
--------------
Each member's session is its own: independent applications do not lose their sessions in the same
second. Members of several groups expiring together point to what they share: the coordinator
broker (a long GC pause or a stalled request handler: when it runs again, every session whose
deadline passed meanwhile expires at once), the network between the clients and that broker, or a
host (or node) that runs the members of all those groups. Looking for the cause in each
application (its poll loop, its processing) is looking in the wrong place. When the coordinator
loaded the groups just before (it moved), coordinator-churn explains the expiries instead.

A member's own line says only that it stopped hearing from the coordinator: alone it may be that member's
pause (heartbeat-expiration's reading); from members of several groups at once it is what they share. Such
lines naming one coordinator within ``client_window_ms`` (one default heartbeat interval, or the longest
``heartbeat.interval.ms`` the group's members state) are one burst, the
coordinator's removals within ``same_second_ms``; a burst naming the coordinator's node is placed on the host
whose broker log coordinates the group, when one does. When all the members' own lines of such a burst were
written on one host, that host is what they share (its pause, its network), and the finding names it.

Remediation
-----------
Look at the coordinator broker at that second (GC log, request handler idle ratio, disk and network)
and at the hosts and network the members share. A ``session.timeout.ms`` larger than the longest
such pause lets members ride it out (within the broker's ``group.max.session.timeout.ms``).

Scope: every protocol whose coordinator logs removals on session timeout (classic consumers, Streams,
Connect, KIP-848). It needs the broker's log or the members' own lines naming their coordinator, and the
groups analysed together (``analyze``: every
group of the input; Spark's per-group batch sees one group and leaves this rule to ``analyze``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from datetime import timedelta
from operator import itemgetter

from ..classify import of
from ..classify.coordinator import broker_of
from ..timeline.model import STABLE, Culprit, Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe
from .helpers import escalate, names
from ..core import eventnames as EV
from ..timeline.builder import session_lost

ID = "mass-expiry"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [mass-expiry], typed as thresholds_schema.toml types it."""
    same_second_ms: int
    client_window_ms: int
    min_groups: int
    min_members: int
    critical_members: int


def check(group: GroupTimeline, t: Thresholds):
    own = [e for e in group.of(EV.MEMBER_EXPIRED) if e.get("component") == "broker" and e.get("ts") is not None]
    if not group.neighbours and not group.session_losses:
        return
    classification = of(group)
    # a member that lost its coordinator and then found another lost it to a move (coordinator-churn's story)
    own += [e for e in group.of(EV.SESSION_TIMEOUT) if session_lost(e) and not _moved_after(classification, group, e)]
    if not own:
        return
    best: list[dict] = []
    # members' own losses spread over one heartbeat interval: the default's, or the longest this group's dumps state
    stated = [h for h in (m.setting("heartbeat.interval.ms") for m in classification.members) if h is not None]
    client_window = max([t["client_window_ms"], *stated])
    mine_ids = {id(x) for x in own}
    everyone = own + [x for x in group.neighbours if x.get("ts") is not None] \
        + _around(group.session_losses, own, timedelta(milliseconds=max(client_window, t["same_second_ms"])), mine_ids)
    keys = {id(x): _coordinator(x) for x in everyone}
    # Per coordinator, its losses in time order (with their places in `everyone`, which a burst keeps): a burst is a
    # window of them, found by bisection, not by a pass over every loss of every group per loss.
    by_key: dict = {}
    for n, x in enumerate(everyone):
        by_key.setdefault(keys[id(x)], []).append((x["ts"], n, x))
    for losses in by_key.values():
        losses.sort(key=itemgetter(0, 1))
    for e in everyone:        # the largest burst (all groups, one coordinator) holding one of this group's losses
        width = timedelta(milliseconds=t["same_second_ms"] if e.get("component") == "broker" else client_window)
        losses = by_key[keys[id(e)]]
        window = losses[bisect_left(losses, e["ts"], key=itemgetter(0)):
                        bisect_right(losses, e["ts"] + width, key=itemgetter(0))]
        if len(window) > len(best) and any(id(x) in mine_ids for _, _, x in window):
            best = [x for _, _, x in sorted(window, key=lambda item: item[1])]
    groups = sorted({x.get("group") for x in best})
    members = sorted({_member(x) for x in best})
    if len(groups) < t["min_groups"] or len(members) < t["min_members"]:
        return
    mine = [x for x in best if x.get("group") == group.group]
    if any(x.get("component") == "broker" and classification.coordinator_loaded_before(x["ts"]) is not None
           and _since_load(classification, x) for x in mine):
        return                                  # removed one session after the coordinator loaded them: churn
    broker = _broker_host(group, best[0], keys[id(best[0])])
    removed = [x for x in best if x.get("component") == "broker"]
    noticed = [x for x in best if x.get("component") != "broker"]
    ordered = sorted(best, key=lambda x: x["ts"])
    whose = sorted({group.who(x) or x.get("member") or _member(x) for x in mine})
    per_member = list({_member(x): x for x in reversed(ordered)}.values())[::-1]
    removals = figures.count("removals", f"members that lost their session with the coordinator on {broker} in one "
                                         "burst (all groups; removed by it, or saying so themselves)", per_member)
    per_group = list({x.get("group"): x for x in reversed(ordered)}.values())[::-1]
    groups_hit = figures.count("groups", "groups those members are in (each one's first loss)", per_group)
    here = figures.count("removals_here", f"of them in {group.group}",
                         list({_member(x): x for x in mine}.values()))
    burst = figures.duration("burst", "from the first loss to the last", ordered[0], ordered[-1])
    figs = [removals, groups_hit, here, burst,
            figures.threshold("same_second_ms", t["same_second_ms"], figures.MS,
                              "removals this close on one coordinator are one burst", ID, "same_second_ms"),
            figures.threshold("min_groups", t["min_groups"], figures.COUNT, "groups a burst must hit", ID, "min_groups")]
    if noticed:
        figs.insert(4, figures.threshold("client_window_ms", t["client_window_ms"], figures.MS,
                                         "members' own losses this close, naming one coordinator, are one burst "
                                         "(or one heartbeat.interval.ms of theirs, when longer)",
                                         ID, "client_window_ms"))
    # members' own lines from several groups, all written on one host: that host is what they share (paused, starved
    # of CPU or cut off), not the broker, which members elsewhere kept reaching
    hosts = {x.get("host") for x in noticed}
    shared = next(iter(hosts)) if len(hosts) == 1 and len({x.get("group") for x in noticed}) >= t["min_groups"] \
        and None not in hosts and next(iter(hosts)) != broker else None
    how = ("were removed on session timeout by" if not noticed else
           "lost their sessions with" if not removed else
           f"lost their sessions with (removed by it: {len({_member(x) for x in removed})}; "
           f"'session timed out without receiving a heartbeat response' in their own logs: "
           f"{len({_member(x) for x in noticed})})")
    shares = (f"their host {shared}, where every one of them ran (a pause of the host or VM, CPU starvation, its "
              f"network), not the broker {broker}" if shared else
              f"the broker {broker} (a pause, a stalled request handler), the network to it, or a host that runs those "
              "members")
    summary = (f"{removals.text()} members of {groups_hit.text()} groups ({names(groups)}) {how} the coordinator on "
               f"{broker} within {burst.text()}, {here.text()} of them in {group.group} ({names(whose)}). Independent "
               f"applications do not lose their sessions in the same moment: the cause is what they share: {shares}; "
               "their poll loops are not involved.")
    severity = escalate(len(members), t["critical_members"])
    evidence = [Evidence.of(x) for x in sorted(best, key=lambda x: (x.get("group") != group.group, x["ts"]))]
    finding = Finding(ID, severity, group.group,
                      f"{removals.text()} members of {groups_hit.text()} groups lost their sessions within "
                      f"{burst.text()} with the coordinator on {broker}",
                      summary, min(x["ts"] for x in best), max(x["ts"] for x in best), dedupe(evidence),
                      (f"Look at the host {shared} at that moment (a VM or container pause, CPU steal, its network); "
                       if shared else
                       f"Look at the broker {broker} at that moment (GC log, request handler idle ratio, disk, network) "
                       "and at the hosts and network the members share; ")
                      + "a session.timeout.ms above the longest such pause lets members ride it out (within "
                        "group.max.session.timeout.ms).",
                      culprit=Culprit(host=shared or broker))
    finding.figures = figs
    ids = {id(x) for x in mine}
    finding.cause = (f"a problem shared by {len(groups)} groups on their host {shared}" if shared else
                     f"a problem shared by {len(groups)} groups at {broker} (broker, network or host)")
    finding.caused = {"rebalances": _recovery(group, ids), "culprits": sorted({w for w in whose if w})}
    yield finding


def _around(losses: list[dict], own: list[dict], width: timedelta, mine: set[int]) -> list[dict]:
    """The other groups' losses (``losses``: every group's, in time order) within ``width`` of one of this group's:
    the only ones a burst holding one of its own can hold."""
    if not losses:
        return []
    times = [x["ts"] for x in losses]
    found: dict[int, dict] = {}
    for o in own:
        for x in losses[bisect_left(times, o["ts"] - width):bisect_right(times, o["ts"] + width)]:
            if id(x) not in mine:
                found.setdefault(id(x), x)
    return list(found.values())


def _recovery(group: GroupTimeline, ids: set[int]) -> list[int]:
    """The rebalances the burst caused: from the first holding one of its losses until the group is stable again
    with members (every member lost at once rejoins: its attempts fail while the coordinator reloads or answers
    NOT_COORDINATOR and UNKNOWN_MEMBER_ID, as real Kafka did after its pause)."""
    out: list[int] = []
    for r in group.rebalances:
        if not out and not any(id(e) in ids for e in r.events):
            continue
        out.append(r.index)
        if r.outcome == STABLE and (r.members or 0) > 0:
            break
    return out


def _moved_after(classification, group: GroupTimeline, lost: dict) -> bool:
    """The member's next discovery after losing its coordinator names another broker."""
    before = broker_of((lost.get("attrs") or {}).get("coordinator"))
    after = classification.coordinator.found_after(group.who(lost) or "?", lost)
    return before is not None and after not in (None, before)


def _member(e: dict) -> str:
    """One member across groups: its member id, else its client id on its host (a member's own line may name no id)."""
    return e.get("member") or f"{e.get('group')}/{e.get('client') or '?'}@{e.get('host') or '?'}"


def _coordinator(e: dict) -> str:
    """The coordinator a loss is of: the broker whose log removed the member, else the one the member's line names
    (its node id, or host:port)."""
    if e.get("component") == "broker":
        return f"host:{e.get('host') or ''}"
    return f"node:{broker_of((e.get('attrs') or {}).get('coordinator'))}"


def _broker_host(group: GroupTimeline, e: dict, key: str) -> str:
    """The host of the coordinator a burst is of: the broker's own, or, for members' lines naming its node, the host
    whose broker log coordinated this group (when one did), else the node as the members name it."""
    if key.startswith("host:"):
        return key[5:]
    hosts = {x.get("host") for x in group.events if x.get("component") == "broker" and x.get("host")}
    if len(hosts) == 1:
        return next(iter(hosts))
    return f"broker {key[5:]} ({(e.get('attrs') or {}).get('coordinator')})"


def _since_load(classification, expiry) -> bool:
    """The coordinator's load explains this removal (coordinator-churn's reading), when it has one."""
    explains = getattr(classification.coordinator, "explains", None)
    return bool(explains and explains(expiry))
