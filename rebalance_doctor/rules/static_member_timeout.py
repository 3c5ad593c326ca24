"""A static member (group.instance.id) stayed away longer than session.timeout.ms: its restart cost rebalances.

Symptom
-------
The member stops (a restart, a deploy; a static member sends no LeaveGroup)::

    2024-03-05 09:00:22,566 INFO  [main] org.apache.kafka.clients.consumer.internals.ConsumerCoordinator - [Consumer instanceId=search-indexer-1, clientId=consumer-search-indexer-1, groupId=search-indexer] Resetting generation and member id due to: consumer pro-actively leaving the group

the coordinator removes it once session.timeout.ms has passed, and rebalances::

    [2024-03-05 09:00:32,646] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=42] Member consumer-search-indexer-1-213cd31c-... in group search-indexer has failed, removing it from the group. (org.apache.kafka.coordinator.group.GroupMetadataManager)

then the member comes back too late and joins as a new member (a second rebalance)::

    [2024-03-05 09:00:46,234] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=42] Static member with groupInstanceId=search-indexer-1 and unknown member id joins group search-indexer in Stable state. Created a new member id consumer-search-indexer-1-6a94236b-... for this member and added to the group. (org.apache.kafka.coordinator.group.GroupMetadataManager)

Why it happens
--------------
Static membership (KIP-345) exists so that a restart costs no rebalance: the coordinator keeps the
member's partitions for it until session.timeout.ms passes without a heartbeat, and a member back
in time takes its place again ("... will not trigger rebalance"). A restart slower than
session.timeout.ms (a slow start, a pod rescheduled to another node, a long deploy) gets the
worst of both: the partitions wait unconsumed for the whole session timeout, then the coordinator
rebalances them away, and the member's return is one more rebalance. The finding gives the time
the member was away (from its own log: its close or last line to its new process's start) against
its session.timeout.ms, and the rebalances it cost. Static restarts within the session timeout are
healthy and reported by healthy-operation; a static member whose process was alive but silent
(its own log goes on) lost its session like any other: heartbeat-expiration.

Remediation
-----------
Raise ``session.timeout.ms`` above the member's restart time (the finding measures it), within the
broker's ``group.max.session.timeout.ms`` (30 minutes by default; raise that on the brokers if
needed), or make the restart faster. A longer session timeout also delays the reaction to a member
that really died: its partitions wait that long.

Scope: classic consumers and Kafka Streams with ``group.instance.id`` (static membership, Kafka
2.3+). KIP-848 groups keep a static member's assignment for the broker's
``group.consumer.session.timeout.ms`` the same way; Connect workers are not static.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, escalate, label_of, names
from ..core import eventnames as EV

ID = "static-member-timeout"
SEVERITY = "warning"
ROLE = "cause"
# A KIP-848 static member whose new process was refused UNRELEASED_INSTANCE_ID never came back: that refusal is the answer.
YIELDS_TO = ("unreleased-instance-id",)
PROTOCOLS = ("eager", "cooperative", "streams", "consumer")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [static-member-timeout], typed as thresholds_schema.toml types it."""
    critical_count: int
    advice_headroom: float


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    away = classification.static.too_long
    if not away:
        return
    by_member: dict[str, list] = {}
    for absence in away:
        by_member.setdefault(absence.member, []).append(absence)
    order = sorted(by_member, key=lambda m: (-len(by_member[m]), m))
    expiries = {id(e) for a in away for e in a.expiries}
    cost = [r for r in group.rebalances if any(id(e) in expiries for e in r.events)]
    cost_ids = {r.index for r in cost}
    cost += [r for r in group.rebalances if r.cause_index in cost_ids and r.index not in cost_ids]
    parts, evidence, aways = [], [], []
    for name in order[:3]:
        label = label_of(classification.members, name)
        for absence in by_member[name]:
            time_away = _away(group, name, absence)      # measured once: the story and the figures state it
            parts.append(_story(label, absence, time_away))
            evidence += [Evidence.of(e) for e in absence.expiries]
            aways.append(time_away)
    evidence += [Evidence.of(e) for r in cost for e in r.events if e["event"] in (EV.MEMBER_JOIN, EV.JOIN_SUCCESS)
                 and group.who(e) in by_member][:3]
    removals = figures.count("removals", "removals on session timeout", [e for a in away for e in a.expiries])
    # how many times a static member stayed away too long (the title's count): each absence's first removal names it
    absences = figures.derived("absences", len(away), figures.COUNT,
                               "times a static member stayed away longer than session.timeout.ms",
                               [a.expiries[0] for a in away if a.expiries], "absences classify/static.py found")
    opened = [r.events[0] for r in cost if r.events]
    caused = figures.count("rebalances_caused", "rebalances of the group it cost (each one's first line)", opened)
    parts.append(f"It cost {caused.text()} rebalance(s) of the whole group." if cost else
                 "No rebalance of it is in the logs.")
    culprit = culprit_of(classification.members, order[0])
    start, end = window(evidence)
    severity = escalate(absences.value, t["critical_count"])
    session = figures.setting(classification.members.get(order[0]), "session.timeout.ms")
    if not session.known:
        stated = next((a.session_ms for a in away if a.session_ms), None)
        session = figures.Figure("session.timeout.ms", stated, figures.MS, "session.timeout.ms in force",
                                 note="" if stated else "no configuration dump of this member states it")
    longest = figures.longest("time_away_ms", "longest time away (its close or last line to its new process)",
                              aways, note="its return is not in its own log")
    advice = figures.raise_above("session.timeout.ms", longest, t["advice_headroom"], session, "longest time away")
    target = (f" to {advice.value} ms ({advice.formula})" if advice.known else
              f" above the restart time ({advice.note})" if advice.note else " above the restart time")
    finding = Finding(ID, severity, group.group,
                      f"static member {culprit.label if culprit else order[0]} away longer than session.timeout.ms "
                      f"({absences.text()} time(s))", " ".join(parts), start, end, dedupe(evidence),
                      f"Raise session.timeout.ms{target}"
                      + (f" (from {session.value})" if session.known else "")
                      + ", within the broker's group.max.session.timeout.ms (raise it on the brokers if needed), or "
                        "make the restart faster; static members back within session.timeout.ms cost no rebalance.",
                      culprit=culprit)
    # each absence's time away when there are several (the story states each; time_away_ms is the longest)
    each = [a.but(name=f"time_away_ms.{i}", label=f"{a.label}, absence {i}") for i, a in enumerate(aways, 1)
            if a.known] if len(aways) > 1 else []
    finding.figures = [removals, absences, session, longest, caused, advice] + each
    finding.cause = (f"static member {culprit.label if culprit else order[0]} restarted slower than its "
                     "session.timeout.ms")
    finding.caused = {"rebalances": sorted(r.index for r in cost), "culprits": order}
    yield finding


def _away(group: GroupTimeline, name: str, absence) -> figures.Figure:
    """The time it was away, from the lines that bound it in its own log (its close or last line, its new process's
    first), as classify/static.py measured it."""
    label = "time away (its close or last line to its new process)"
    if absence.away_ms is None:
        return figures.Figure("time_away_ms", None, figures.MS, label, note="its return is not in its own log")
    lines = [next((e for e in group.events if e.get("ts") == at and group.who(e) == name), None)
             for at in (absence.left, absence.back)]
    lines = [e for e in lines if e is not None]
    return figures.Figure("time_away_ms", round(absence.away_ms), figures.MS, label, [Evidence.of(e) for e in lines])


def _story(label: str, absence, away: figures.Figure) -> str:
    timeout = f"session.timeout.ms={absence.session_ms}" if absence.session_ms else "session.timeout.ms"
    if absence.away_ms is not None:
        how = (f"closed at {absence.left:%H:%M:%S}" if absence.closed else
               f"went silent (its last heartbeat about {absence.left:%H:%M:%S}, one session timeout before the "
               "coordinator removed it)" if absence.heartbeat else
               f"went silent (its last line at {absence.left:%H:%M:%S})")
        text = (f"Static member {label} (group.instance.id={absence.instance}) {how} and its new process started "
                f"{away.text()} later, longer than {timeout}")
    elif absence.back is not None:
        text = (f"Static member {label} (group.instance.id={absence.instance}) was removed on session timeout at "
                f"{absence.expiries[0]['ts']:%H:%M:%S} and joined again at {absence.back:%H:%M:%S}"
                + ("" if absence.own_log else " (its own log is not included: whether it restarted or paused is "
                   "not known)"))
    else:
        text = (f"Static member {label} (group.instance.id={absence.instance}) went away"
                + (f" at {absence.left:%H:%M:%S}" if absence.left else "") + f" and did not come back within {timeout}")
    if absence.expiries:
        text += f"; the coordinator removed it at {absence.expiries[0]['ts']:%H:%M:%S}"
    return text + "."
