"""heartbeat.interval.ms above a third of session.timeout.ms, and the group's other timeout settings linted.

Symptom
-------
The member's configuration, dumped once when its consumer starts::

    [2024-03-05 09:58:01,220] INFO ConsumerConfig values: 
    	allow.auto.create.topics = true
    	group.id = orders
    	heartbeat.interval.ms = 8000
    	max.poll.interval.ms = 300000
    	session.timeout.ms = 10000
     (org.apache.kafka.clients.consumer.ConsumerConfig)

and, once a pause of a few seconds costs it its membership, the coordinator removes it while its
own log goes on (the process was alive)::

    [2024-03-05 10:00:45,113] INFO [GroupCoordinator 1]: Member consumer-orders-1-77aa... in group orders has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 10:00:47,502] INFO [Consumer clientId=consumer-orders-1, groupId=orders] Attempt to heartbeat with Generation{generationId=41, memberId='consumer-orders-1-77aa...', protocol='range'} and group instance id Optional.empty failed due to UNKNOWN_MEMBER_ID, resetting generation (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)

The lint it starts: a session timeout the broker refuses (``JoinGroup failed due to fatal error: The
session timeout is not within the range allowed by the broker (as configured by
group.min.session.timeout.ms and group.max.session.timeout.ms).``), and members of one group whose
session.timeout.ms, heartbeat.interval.ms or max.poll.interval.ms differ. Each item names the
member and its values. Members whose ``partition.assignment.strategy`` differ are assignor-mismatch's:
this lint reads the timeouts only, so the two never name the same setting.

Why it happens
--------------
The coordinator removes a member when no heartbeat arrived for ``session.timeout.ms``; the
member's heartbeat thread sends one every ``heartbeat.interval.ms``. Kafka's documentation asks for
the interval to be "no higher than 1/3" of the session timeout, so that a member survives two lost
or late heartbeats. With the interval at 80% of the timeout, a member tolerates a pause (GC, CPU
starvation, a slow network) of only the remaining 20%: the pause the session timeout was sized for
costs a rebalance. A member whose process died is not helped by any ratio: then the setting is
only an advisory. Members of one group with different timeouts are detected at different speeds;
a session timeout outside the broker's ``group.min.session.timeout.ms`` ..
``group.max.session.timeout.ms`` makes every JoinGroup fail (INVALID_SESSION_TIMEOUT).

Severity: ``info`` (an advisory, after the answer) unless the window shows the harm: the member with
the ratio was removed on session timeout while its process went on (then it is the cause, warning,
and the heartbeat-expiration finding is part of its chain), or the broker refused its session
timeout (warning: the member cannot join).

Remediation
-----------
Set ``heartbeat.interval.ms`` to at most a third of ``session.timeout.ms`` (the defaults: 3000 of
45000; Streams and Connect take the consumer's). Keep ``session.timeout.ms`` within the broker's
``group.min.session.timeout.ms`` (6 s) and ``group.max.session.timeout.ms`` (30 min) and give every
member of a group the same timeouts.

Scope: classic consumer groups and Streams (the consumer's own settings, from its dump). Under
KIP-848 (``group.protocol=consumer``) the client settings do not apply: the broker's
``group.consumer.session.timeout.ms`` and ``group.consumer.heartbeat.interval.ms`` do; those members
are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..classify.protocol import heartbeat_protocol
from ..classify.operations import EXPIRED
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, episodes, escalate, names, share
from ..core import eventnames as EV

ID = "config-heartbeat-ratio"
SEVERITY = "info"
ROLE = "advisory"
PROTOCOLS = ("eager", "cooperative", "streams")

# Settings members of one group should agree on (the lint lists the members that differ).
SHARED_SETTINGS = ("session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms")
# The broker's answer to a session timeout outside group.min/max.session.timeout.ms.
_INVALID_SESSION = ("INVALID_SESSION_TIMEOUT", "session timeout is not within the range")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [config-heartbeat-ratio], typed as thresholds_schema.toml types it."""
    heartbeats_per_session: int


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    if heartbeat_protocol(classification.protocol):
        return
    members = [m for m in classification.members if m.config and not _kip848(m.config)]
    evidence: list[Evidence] = []
    items: list[str] = []
    tight = []                                     # (member, heartbeat, session)
    for m in members:
        heartbeat, session = m.setting("heartbeat.interval.ms"), m.setting("session.timeout.ms")
        if heartbeat and session and heartbeat * t["heartbeats_per_session"] > session:
            tight.append((m, heartbeat, session))
    harmed: dict[str, list] = {}                   # member identity -> its removals while alive
    for r, d in figures.distinct_losses(group, episodes(group, (EXPIRED,))):
        m = classification.members.get(d.who)
        if any(m is x for x, _, _ in tight) and m.survived(d.event.get("ts")) and not m.static:
            harmed.setdefault(m.identity, []).append((r, d))
    tight.sort(key=lambda x: x[0].identity not in harmed)      # the member it cost first
    measured: list = []            # each figure once: the first tight member's by name, the others' by name.label
    limits: dict[int, list[str]] = {}          # advised heartbeat.interval.ms -> the members it is advised for
    for i, (m, _, _) in enumerate(tight):
        label = m.culprit().label
        f = _tight_figures(m, harmed.get(m.identity), t["heartbeats_per_session"])
        measured += [x.but(name=f"{x.name}.{label}") if i else x for x in f.values()]
        limits.setdefault(f["advised.heartbeat.interval.ms"].value, []).append(label)
        items.append(f"{label}: heartbeat.interval.ms={f['heartbeat.interval.ms'].value} is {f['ratio'].text()} of "
                     f"session.timeout.ms={f['session.timeout.ms'].value} (at most 1/{t['heartbeats_per_session']}): "
                     f"a pause of {f['pause_margin_ms'].value / 1000:.1f} s loses its session"
                     + (f", and it did: removed {f['removals'].text()} time(s) while its process went on"
                        if "removals" in f else "") + ".")
        if m.config_event is not None:
            evidence.append(Evidence.of(m.config_event))
    for m in harmed.values():
        evidence += [Evidence.of(d.event) for _, d in m]
    refused = [e for e in group.of(EV.JOIN_FAILED) if _says(e, _INVALID_SESSION)]
    refused_by: dict[str, list[dict]] = {}
    for e in refused:
        refused_by.setdefault(group.who(e) or e.get("client") or "?", []).append(e)
    for who, lines in refused_by.items():
        m = classification.members.get(who)
        label = m.culprit().label if m else who
        session = figures.setting(m, "session.timeout.ms").but(name=f"session.timeout.ms.{label}")
        failed = figures.count(f"joins_refused.{label}", f"JoinGroups of {label} the broker refused", lines)
        measured += [session, failed] if session.known else [failed]
        items.append(f"{label}: the broker refused its session.timeout.ms"
                     + (f"={session.value}" if session.known else "") + " (outside group.min.session.timeout.ms.."
                     f"group.max.session.timeout.ms): {failed.text()} JoinGroup(s) failed, it cannot join.")
        evidence += [Evidence.of(e) for e in lines[:2]]
    differing = _differing(members)
    if not items and not differing:
        return
    odd = []                                       # the members holding a value fewer members share
    for setting, values in differing.items():
        # each value as the first member holding it states it
        measured += [figures.setting(who[0], setting).but(name=f"{setting}.{who[0].culprit().label}")
                     for who in values.values()]
        items.append(f"members disagree on {setting}: " + "; ".join(
            f"{value} ({names(sorted(m.culprit().label for m in who), 3)})"
            for value, who in sorted(values.items(), key=lambda kv: int(kv[0]))) + ".")
        fewest = min(values.values(), key=len)
        odd += [m for m in fewest if m not in odd]
        evidence += [Evidence.of(m.config_event) for who in values.values() for m in who if m.config_event]
    # how many members are tight (the title's count), each named by its configuration dump
    f_tight = figures.derived("tight_members", len(tight), figures.COUNT,
                              "members whose heartbeat.interval.ms is above their share of session.timeout.ms",
                              [m.config_event for m, _, _ in tight], "members whose dumps show it")
    if tight:
        measured.append(f_tight)
    severe = harmed or refused_by
    severity = escalate(base="info", also=bool(severe))
    culprits = sorted(harmed) or sorted(refused_by) or [m.identity for m, _, _ in tight] or [m.identity for m in odd]
    culprit = culprit_of(classification.members, culprits[0] if culprits else None, fallback=False)
    if harmed:
        title = f"{culprit.label}: heartbeat.interval.ms too close to session.timeout.ms cost its membership"
    elif refused_by:
        title = f"{culprit.label if culprit else culprits[0]}: session.timeout.ms refused by the broker"
    elif tight:
        title = (f"heartbeat.interval.ms above {share(t['heartbeats_per_session'])} of session.timeout.ms on "
                 f"{f_tight.text()} member(s), first {culprit.label}")
    else:
        title = f"members of the group disagree on {', '.join(differing)}" + (f", first {culprit.label}" if culprit else "")
    start, end = window(evidence)
    finding = Finding(ID, severity, group.group, title, " ".join(items), start, end, dedupe(evidence),
                      _remedy(limits, refused_by, differing, t["heartbeats_per_session"]), culprit=culprit)
    finding.figures = measured
    if severe:
        finding.role = "cause"
        finding.cause = title
        refused_ids = {id(e) for e in refused}
        own = {r.index for v in harmed.values() for r, _ in v if r is not None}
        # the attempts the refused JoinGroups were read into (the broker started no rebalance for them)
        own |= {r.index for r in group.rebalances if any(id(e) in refused_ids for e in r.events)}
        finding.caused = {"rebalances": sorted(own), "culprits": culprits}
    yield finding


def _tight_figures(m, harmed: list | None, per_session: int) -> dict:
    """A tight member's settings in force, the share and the pause they leave, its removals while alive, and the
    advised interval: what its sentence states, measured once."""
    heartbeat, session = figures.setting(m, "heartbeat.interval.ms"), figures.setting(m, "session.timeout.ms")
    out = [heartbeat, session,
           figures.derived("ratio", heartbeat.value / session.value, figures.RATIO,
                           "heartbeat.interval.ms / session.timeout.ms", heartbeat.evidence, "heartbeat.interval.ms / "
                           "session.timeout.ms"),
           figures.derived("pause_margin_ms", session.value - heartbeat.value, figures.MS,
                           "the shortest pause that loses the session", heartbeat.evidence,
                           "session.timeout.ms - heartbeat.interval.ms")]
    if harmed:
        out.append(figures.count("removals", "removals on session timeout while its process went on",
                                 [d.event for _, d in harmed]))
    out.append(figures.lower_below("heartbeat.interval.ms", session.value // per_session, heartbeat,
                                   f"session.timeout.ms / {per_session} (heartbeats_per_session), rounded down"))
    return figures.by_name(out)


def _remedy(limits: dict, refused_by, differing, per_session: int = 3) -> str:
    """The remediation, from the advised intervals the figures state (``limits``: value -> the members' labels)."""
    out = []
    if limits:
        out.append(f"Set heartbeat.interval.ms to at most 1/{per_session} of session.timeout.ms ("
                   + "; ".join(f"at most {limit} on {names(who, 3)}" for limit, who in sorted(limits.items())) + ").")
    if refused_by:
        out.append("Set session.timeout.ms within the broker's group.min.session.timeout.ms (default 6000) and "
                   "group.max.session.timeout.ms (default 1800000), or change those on the brokers.")
    if differing:
        out.append("Give every member of the group the same " + ", ".join(differing) + ".")
    return " ".join(out)


def _differing(members) -> dict[str, dict[str, list]]:
    """setting -> value -> the members configured with it, for the settings members disagree on."""
    out = {}
    for setting in SHARED_SETTINGS:
        values: dict[str, list] = {}
        for m in members:
            value = m.setting(setting)
            if value is not None:
                values.setdefault(str(value), []).append(m)
        if len(values) > 1:
            out[setting] = values
    return out


def _kip848(config: dict) -> bool:
    return (config.get("group.protocol") or "").strip().lower() == "consumer"


def _says(event: dict, words: tuple[str, ...]) -> bool:
    text = event.get("error") or ""
    return any(w in text for w in words)
