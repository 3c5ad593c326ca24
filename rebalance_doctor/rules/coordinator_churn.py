"""The group's coordinator moved between brokers (again and again, or with members lost on the way).

Symptom
-------
On the brokers, the group unloaded by one and loaded by another (2.x-3.x Scala coordinator, then
3.x-4.x GroupMetadataManager wording)::

    2021-04-23 08:33:00,523 INFO [GroupCoordinator 0]: Unloading group metadata for kale_scheduler_local with generation 5051 (kafka.coordinator.group.GroupCoordinator)
    2021-04-23 08:36:29,454 INFO [GroupCoordinator 0]: Loading group metadata for kale_scheduler_local with generation 5052 (kafka.coordinator.group.GroupCoordinator)
    2024-03-05 09:00:50,748 INFO [GroupCoordinator id=3 topic=__consumer_offsets partition=13] Loaded classic group payments with 5 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)

then, when the members' heartbeats never reach the new coordinator, every member removed at the
same instant, exactly session.timeout.ms after the load::

    2021-04-23 08:36:59,454 INFO [GroupCoordinator 0]: Member d75ae538-...-60c4da13-... in group kale_scheduler_local has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)

On the members, the coordinator lost and found again::

    [Consumer clientId=consumer-payments-1, groupId=payments] Group coordinator broker-2:9092 (id: 2147483645 rack: null) is unavailable or invalid due to cause: error response NOT_COORDINATOR. isDisconnected: false. Rediscovery will be attempted.
    [Consumer clientId=consumer-payments-1, groupId=payments] Discovered group coordinator broker-3:9092 (id: 2147483644 rack: null)

or, librdkafka, ``JoinGroup response: ... Broker: Not coordinator`` again and again.

Why it happens
--------------
A group's coordinator is the leader of its ``__consumer_offsets`` partition. When that leadership
moves (the broker restarting or shutting down, a leader election, a ZooKeeper or controller
session lost, an overloaded broker dropping out of the ISR), the new leader loads the group and
every member must find it (FindCoordinator) before its next heartbeat, commit or join; a rebalance
in flight starts over. One move, or a move away and back around a broker restart, with the
members following, costs nothing but a few retried requests: it is a note in the report, not a finding.
The coordinator moving again and again is a broker-side problem (the finding counts the moves and
names the brokers). Loading a group restarts every member's session timer, so members whose
heartbeats never reach the new coordinator (network, DNS or advertised listeners between them and
that broker) are all removed exactly one session.timeout.ms after the load: the coordinator moved
and the clients did not follow; the processes did not stop. A member that loses a coordinator that
did not move again and again (request timeouts, NOT_COORDINATOR loops) cannot keep a session
with it either.

Remediation
-----------
Find the broker-side cause in the brokers' logs around the moves (controlled shutdowns, leader
elections of ``__consumer_offsets`` partitions, ZooKeeper or KRaft controller session expiry, GC
pauses, under-replicated ``__consumer_offsets``); keep ``offsets.topic.replication.factor`` at 3 and
``min.insync.replicas`` so that leadership moves only on failures. When members did not follow,
check the path from the members to the new coordinator (its advertised listeners, DNS, security
groups, ``request.timeout.ms``): the members expired after the load have to reach that broker.

Scope: classic consumer groups, Streams and Connect (the classic coordinator and its 3.x-4.x
successor); KIP-848 groups move the same way (their session timeout is the broker's
``group.consumer.session.timeout.ms``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Culprit, Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, Note, dedupe, window
from .helpers import escalate, names
from ..core import eventnames as EV

ID = "coordinator-churn"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer")
# Members of several groups losing one coordinator that did not move, all at once: that broker stopped answering
# for a while (a pause), mass-expiry's reading; the losses that follow while it is away are part of that story.
YIELDS_TO = ("mass-expiry",)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [coordinator-churn], typed as thresholds_schema.toml types it."""
    min_moves: int
    min_losses: int
    critical_members: int


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    coordinator = classification.coordinator
    moves = coordinator.moves
    expired = [e for e in group.of(EV.MEMBER_EXPIRED) if coordinator.explains(e) is not None]
    looping = {}
    for who in coordinator.losses:
        lost = coordinator.lost_without_move(who)
        if len(lost) >= t["min_losses"]:
            looping[who] = lost
    refused = {who: errors for who, errors in coordinator.errors.items() if len(errors) >= t["min_losses"]}
    moved = [r for r in group.rebalances if r.operation == "coordinator-move"]
    if not (moves or expired or looping or refused):
        return
    harmful = bool(expired or looping or refused or moved) or len(moves) >= t["min_moves"]
    brokers = _broker_hosts(group)
    if not harmful:
        # A move every member followed without a rebalance (a broker restart, a leader election) is the
        # protocol working: a note in the report, never a finding of its own.
        yield Note(ID, group.group, f"the coordinator moved {len(moves)} time(s) ({_history(coordinator, brokers)}); "
                                    "the members followed it and no rebalance came of it")
        return
    parts, evidence = [], []
    figs = [figures.count("moves", "moves of the coordinator", [m.event for m in moves])]
    if moves:
        parts.append(f"The coordinator of {group.group} moved {figs[0].text()} time(s): " + _history(coordinator, brokers) + ".")
        evidence += [Evidence.of(m.event) for m in moves]
        evidence += [Evidence.of(e) for e in coordinator.unloads[:2]]
    if expired:
        text, found = _expired_text(group, classification, expired)
        parts.append(text)
        figs += found
        evidence = [Evidence.of(coordinator.explains(expired[0]))] + [Evidence.of(e) for e in expired] + evidence
    for who, lost in looping.items():
        figs.append(figures.count(f"losses.{who}", f"times {who} lost the coordinator without it moving", lost))
        parts.append(f"{names([who])} lost the coordinator {figs[-1].text()} times without it moving (it found the same "
                     "broker again): its requests to the coordinator time out or are refused.")
        evidence += [Evidence.of(e) for e in lost[:2]]
    for who, errors in refused.items():
        figs.append(figures.count(f"refusals.{who}", f"times {who} was told NOT_COORDINATOR", errors))
        parts.append(f"{names([who])} was told {figs[-1].text()} times that the broker it asked is not the coordinator "
                     f"({errors[0].get('error') or 'NOT_COORDINATOR'}).")
        evidence += [Evidence.of(e) for e in errors[:2]]
    if moved:
        figs.append(figures.rebalances("rebalances_caused", "rebalances it cost", moved))
        parts.append(f"It cost {figs[-1].text()} rebalance(s).")
    f = figures.by_name(figs)
    culprit = _culprit(moves, expired if len(moves) < t["min_moves"] else [], coordinator, brokers)
    losses = {group.who(e) or "?" for e in expired} | set(looping) | set(refused)
    severity = escalate(len({group.who(e) for e in expired}), t["critical_members"])
    start, end = window(evidence)
    title = (f"members lost after the coordinator moved ({f['removed'].text()} removed one session timeout after the "
             "load)" if expired else f"coordinator moved {f['moves'].text()} times" if moves else "members keep losing the coordinator")
    finding = Finding(ID, severity, group.group, title, " ".join(parts), start, end, dedupe(evidence, 14),
                      _remediation(expired, looping or refused, culprit), culprit=culprit)
    finding.figures = figs
    if len(moves) >= t["min_moves"]:
        finding.cause = ("the coordinator moved again and again"
                         + (f", away from {culprit.host} and back" if culprit and culprit.host else ""))
    else:
        finding.cause = (f"the coordinator moved{' to ' + culprit.host if culprit and culprit.host else ''} and "
                         + ("the members did not follow it" if expired else "members could not keep it"))
    finding.caused = {"rebalances": [r.index for r in moved], "culprits": sorted(losses)}
    yield finding


def _expired_text(group: GroupTimeline, classification, expired: list[dict]) -> tuple[str, list]:
    """The members removed one session timeout after the coordinator loaded the group, and its figures: the members
    removed, the time from the load to the first removal, and the session timeout in force (the member's config
    dump, else the coordinator's own "Loaded member ... sessionTimeoutMs=" line)."""
    load = classification.coordinator.explains(expired[0])
    who = sorted({group.who(e) or "?" for e in expired})
    removed = figures.count("removed", "members removed one session timeout after the load (each one's removal)",
                            list({group.who(e) or "?": e for e in reversed(expired)}.values())[::-1])
    after = figures.duration("after_load_ms", "from the coordinator loading the group to the first removal", load,
                             expired[0])
    member = classification.members.get(who[0])
    session = figures.setting(member, "session.timeout.ms")
    if not session.known:
        loaded = next((e for e in group.of(EV.COORDINATOR_LOAD) if e.get("member") == expired[0].get("member")
                       and (e.get("attrs") or {}).get("session_timeout_ms")), None)
        if loaded is not None:
            session = figures.stated("session.timeout.ms", int(loaded["attrs"]["session_timeout_ms"]), figures.MS,
                                     "session.timeout.ms in force (as the coordinator loaded the member)", loaded)
    timeout = (f"their session.timeout.ms ({session.text()})" if session.known
               else "one session timeout (not in the logs)")
    alive = [w for w in who if (m := classification.members.get(w)) is not None and m.alive_after(expired[0]["ts"])]
    return (f"{removed.text()} member(s) ({names(who)}) were removed {after.text()} after "
            f"{load.get('host') or 'the broker'} loaded the group at {load['ts']:%H:%M:%S}, "
            + ("exactly " if session.known and after.known and session.value == after.value else "about ")
            + f"{timeout}: loading a group restarts every member's "
            "session timer, and no heartbeat of theirs reached the new coordinator. The coordinator moved and the "
            "members did not follow it"
            + (f"; {names(alive)} went on logging (the processes did not stop)." if alive else
               "; nothing says their processes stopped.")), [removed, after, session]


def _history(coordinator, brokers: dict[str, str], limit: int = 8) -> str:
    """The moves in words: the brokers unloading and loading the group (or the members finding it)."""
    if coordinator.loads:
        steps = [(e["ts"], "unloaded" if e in coordinator.unloads else "loaded",
                  _name((e.get("attrs") or {}).get("broker") or e.get("host"), brokers))
                 for e in sorted(coordinator.unloads + [m.event for m in coordinator.moves], key=lambda e: e["ts"])]
        text = [f"{who} {what} it at {ts:%H:%M:%S}" for ts, what, who in steps]
    else:
        text = [f"the members found it on {_name(m.broker, brokers)} (was {_name(m.left, brokers)}) at {m.at:%H:%M:%S}"
                for m in coordinator.moves]
    return ", ".join(text[:limit]) + (f" and {len(text) - limit} more" if len(text) > limit else "")


def _broker_hosts(group: GroupTimeline) -> dict[str, str]:
    """broker id -> the host of its log, from the broker lines that state the id."""
    out = {}
    for e in group.events:
        if e.get("component") == "broker" and e.get("host"):
            broker = (e.get("attrs") or {}).get("broker")
            if broker:
                out.setdefault(str(broker), e["host"])
    return out


def _name(broker: str | None, brokers: dict[str, str]) -> str:
    if broker is None:
        return "?"
    host = brokers.get(broker)
    return f"broker {broker} ({host})" if host and host != broker else f"broker {broker}"


def _culprit(moves, expired, coordinator, brokers) -> Culprit | None:
    """The broker to look at: when the coordinator kept moving, the one the group left most often (first, on
    a tie: a restarting or failing broker, which the group leaves at each of its restarts and comes back to);
    else the one whose load the members did not follow; else the one the members named."""
    if expired:
        load = coordinator.explains(expired[0])
        return Culprit(host=load.get("host"), member=None, client=None)
    left = Counter(m.left for m in moves if m.left)   # insertion order: the broker left first wins a tie
    if left:
        broker = left.most_common(1)[0][0]
        return Culprit(host=brokers.get(broker) or _client_named_host(coordinator, broker))
    for lines in coordinator.losses.values():
        for e in lines:
            text = (e.get("attrs") or {}).get("coordinator") or ""
            if text:
                return Culprit(host=text.split(":", 1)[0].split(" ", 1)[0])
    return None


def _client_named_host(coordinator, broker: str) -> str | None:
    """The host a member's "Group coordinator host:port (id: N ...)" names for a broker id."""
    from ..classify.coordinator import broker_of

    for lines in list(coordinator.losses.values()) + list(coordinator.discoveries.values()):
        for e in lines:
            text = (e.get("attrs") or {}).get("coordinator") or ""
            if broker_of(text) == broker:
                return text.split(":", 1)[0].split(" ", 1)[0]
    return None


def _remediation(expired, looping, culprit) -> str:
    where = f" on {culprit.host}" if culprit and culprit.host else ""
    text = ("Find why the coordinator moved in the brokers' logs around the moves (controlled shutdowns, leader "
            "elections of __consumer_offsets, ZooKeeper or controller session expiry, GC pauses); keep "
            "offsets.topic.replication.factor=3 so that leadership moves only on failures.")
    if expired or looping:
        text += (f" The members could not reach the coordinator{where}: check the path from them to it (advertised "
                 "listeners, DNS, firewalls, request.timeout.ms).")
    return text
