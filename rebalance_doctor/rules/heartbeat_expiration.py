"""A member was removed because the coordinator got no heartbeat within session.timeout.ms.

Symptom
-------
On the coordinator::

    [2024-03-05 10:00:45,113] INFO [GroupCoordinator 1]: Member consumer-orders-2-77aa... in group orders has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 10:00:45,114] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state PreparingRebalance with old generation 41 (__consumer_offsets-17) (reason: removing member consumer-orders-2-77aa... on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)

KIP-848 groups: ``[GroupId orders] Member 3tXq... fenced from the group because its session
expired.`` On a member whose heartbeats do not get through::

    ... Group coordinator broker-1:9092 (id: 2147483646 rack: null) is unavailable or invalid due to cause: session timed out without receiving a heartbeat response. isDisconnected: false. Rediscovery will be attempted.

and, once it reconnects, ``Attempt to heartbeat with Generation{...} and group instance id
Optional.empty failed due to UNKNOWN_MEMBER_ID, resetting generation``. A librdkafka consumer says
it itself, often with only its handle's name (no group)::

    %4|1700000123.456|SESSTMOUT|billing_1#consumer-3| [thrd:main]: Consumer group session timed out (in join-state steady) after 45000 ms without a successful response from the group coordinator (broker 2, last error was Success): revoking assignment and rejoining group

When several handles of one process (one log file) time out within one session timeout of each
other, the finding is about the process: the handles, their timeouts and coordinators.

Why it happens
--------------
The heartbeat thread proves the process is alive. No heartbeat for ``session.timeout.ms``
(45 s by default since 3.0, 10 s before) means the process died or was stopped without leaving
(a crash, a kill -9), or the heartbeats could not get through (network partition, long GC pause,
CPU starvation). The finding tells which from the member's own log: it ends before the removal
(the process died), or it goes on (the process was alive but silent: a pause; the finding gives
the gap in its log against session.timeout.ms). The poll loop is not involved: max.poll.interval.ms
and max.poll.records change nothing here. A Kafka Streams instance that logged its shutdown
(``stream-client [...] State transition from RUNNING to PENDING_SHUTDOWN``, its StreamThreads'
``Informed to shut down``) and then expired is a planned departure: Streams consumers send no
LeaveGroup on close (``internal.leave.group.on.close=false``), so expiring is how every instance
leaves a rolling restart, an upgrade or a scale-in: no finding. The shutdown must be that of the
process whose member id was removed; one that died without it is a finding. A member whose process
dies and is started again and again is a restart loop: membership-flapping's, not this one. A static
member (group.instance.id) that stayed away longer than session.timeout.ms cost the rebalances
static membership is meant to avoid. Several consumers of one process losing their sessions together,
each to its own coordinator, share only what they have in common: the process (stopped, paused,
starved of CPU) or its network; not one consumer, one group or one broker. librdkafka heartbeats from
its own threads, whatever the application's poll loop does.

Remediation
-----------
If the process died: find why (its last lines, the orchestrator's events). If it was alive: look
for GC pauses and network trouble around the time; raise ``session.timeout.ms`` above the longest
pause (with ``heartbeat.interval.ms`` at a third of it, or the share config-heartbeat-ratio's
``heartbeats_per_session`` sets). A static member restarting slower than
``session.timeout.ms``: raise ``session.timeout.ms`` above the restart time (within the broker's
``group.max.session.timeout.ms``). Handles of one process that timed out together: look at the
process and its host at that time (CPU throttling, a frozen container, pauses) and its network to
the brokers.

Scope: classic consumers, Streams and Connect (session.timeout.ms is the member's setting), and
KIP-848 consumers, where the session timeout is the broker's ``group.consumer.session.timeout.ms``;
client handles whose lines name no group (``check_handles``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from ..classify import of
from ..classify.protocol import BROKER_PREFIX, heartbeat_protocol
from ..classify.handles import Process
from ..classify.operations import EXPIRED, Departure, departure_operation
from ..timeline.model import Culprit, Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, episodes, escalate, label_of, library_note, library_of, names, share
from ..core import eventnames as EV

ID = "heartbeat-expiration"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer")
# A member removed while alive because its heartbeat.interval.ms left no margin: the configuration is the cause;
# members of several groups removed in the same second: what they share is; a Connect worker whose work then
# waited for the scheduled delay: the delay is the story; under KIP-848 a lost session is a fencing; members
# removed while the coordinator kept moving lost their sessions chasing it (coordinator-churn's finding); the consumer
# of a StreamThread that died sends no LeaveGroup and is removed one session later: the death is the story (and the
# application shutdown it asked for, when its handler returned SHUTDOWN_APPLICATION); leaders removed one after the
# other while their heartbeats waited for their own assignor: the assignment is (leader-churn's finding).
YIELDS_TO = ("config-heartbeat-ratio", "mass-expiry", "connect-scheduled-delay", "kip848-fencing", "coordinator-churn",
             "thread-died", "thread-replacement-loop", "application-shutdown", "leader-churn")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [heartbeat-expiration], typed as thresholds_schema.toml types it."""
    critical_count: int
    advice_headroom: float
    # the ratio config-heartbeat-ratio detects with: the advice states the same one
    heartbeats_per_session: int = contract.borrowed("config-heartbeat-ratio")


def check(group: GroupTimeline, t: Thresholds):
    # A member whose process keeps dying and being started again is a restart loop (membership-flapping's):
    # each expiry is only how the coordinator noticed one of its deaths.
    found = figures.distinct_losses(group, [(r, d) for r, d in episodes(group, (EXPIRED,))
                                            if r.operation != "restart-loop"])
    looping = {r.culprit_name for r in group.rebalances if r.operation == "restart-loop"}
    attached = {id(x) for r in group.rebalances for x in r.events}
    classification = of(group)
    # Under KIP-848 a lost session is the coordinator fencing the member: kip848-fencing's.
    lone = [e for e in group.of(EV.SESSION_TIMEOUT, EV.MEMBER_EXPIRED) if id(e) not in attached
            and group.who(e) not in looping
            and not heartbeat_protocol(classification.protocol)
            and departure_operation(classification.members, Departure(group.who(e) or "?", EXPIRED, e)) != "scale-in"
            and classification.coordinator.explains(e, group.who(e)) is None   # coordinator-churn's: after a load
            and classification.static.explains(e) is None         # static-member-timeout's: a static member away
            and classification.connect.explains(e, group.who(e)) is None]   # a Connect worker's bounce
    # A member's own lines about one loss (sarama writes one per partition consumer and retry) are one loss.
    kept = {id(d.event) for _, d in figures.one_per_membership(
        group, [(None, Departure(group.who(e) or "?", EXPIRED, e)) for e in lone])}
    lone = [e for e in lone if id(e) in kept]
    if not found and not lone:
        return
    by_member: dict[str, list] = {}
    for r, d in found:
        by_member.setdefault(d.who, []).append((r, d))
    reported = []
    for e in lone:
        who = group.who(e) or "?"
        if any(_reports(e, d.event) or figures.reports_removal(group, who, e, d.event) for _, d in by_member.get(who, [])):
            reported.append(e)   # the member's own line about the removal the coordinator logged (librdkafka's SESSTMOUT)
            continue
        by_member.setdefault(who, []).append((None, Departure(who, EXPIRED, e)))
    order = sorted(by_member, key=lambda m: (-len(by_member[m]), m))
    culprit_name = order[0]
    member = classification.members.get(culprit_name)
    removals = [d.event for m in order for _, d in by_member[m]]
    evidence = [Evidence.of(e) for e in removals] + [Evidence.of(e) for e in reported]
    # A removal concluded from a member's log stopping: its last line is the evidence of the stop.
    evidence += [Evidence.of(before) for m in order for _, d in by_member[m] if d.concluded is not None
                 for before in [figures.own_lines_around(group, m, d.event.get("ts"))[0]] if before is not None]
    evidence += [Evidence.of(e) for e in group.of(EV.HEARTBEAT_FAILED) if "UNKNOWN_MEMBER_ID" in (e.get("error") or "")][:2]
    start, end = window(evidence)
    consumer_protocol = heartbeat_protocol(classification.protocol)
    removed = figures.count("removals", "removals on session timeout", removals)
    members = figures.count("members", "members removed on session timeout (each one's first removal)",
                            [by_member[m][0][1].event for m in order])
    in_force = _session_timeout(member, consumer_protocol)
    parts = [f"{removed.text()} removal(s) on session timeout: {names(order)}"
             + (f" ({_same_second(by_member)})" if _same_second(by_member) else "") + "."]
    remedy, measured = [], [removed] + ([members] if len(order) > 1 else []) + [in_force]
    for name in order[:3]:
        # each member's session.timeout.ms measured once: the culprit's is in_force, another's its own dump's
        force = in_force if name == culprit_name else _session_timeout(classification.members.get(name),
                                                                        consumer_protocol)
        text, fix, own = _story(group, classification.members.get(name), name, by_member[name], force,
                                consumer_protocol, t)
        if name != culprit_name and force.known:
            own = [force] + own
        parts.append(text)
        remedy.append(fix)
        # the first member's figures by their names (the truth's), the others' by name.label: each stated once
        taken = {x.name for x in measured}
        measured += [f if f.name not in taken else f.but(name=f"{f.name}.{label_of(classification.members, name)}")
                     for f in own]
    loaded = classification.coordinator_loaded_before(found[0][1].event.get("ts") if found else None)
    if loaded is not None and not any(r.completed and loaded["ts"] <= (r.end or r.start) <= found[0][1].event["ts"]
                                      for r in group.rebalances if r.start):
        after = figures.duration("after_load_ms", "from the coordinator's load of the group to the first removal",
                                 loaded, found[0][1].event)
        measured.append(after)
        parts.append(f"The coordinator loaded the group {after.text()} before the first removal (it moved) and no "
                     "generation completed in between: members that do not reach the new coordinator expire one "
                     "session.timeout.ms after the load.")
        evidence.insert(0, Evidence.of(loaded))
    parts.append("The poll loop is not involved: max.poll.interval.ms and max.poll.records change nothing here.")
    severity = escalate(removed.value, t["critical_count"])
    culprit = culprit_of(classification.members, culprit_name)
    label = culprit.label if culprit else culprit_name
    finding = Finding(ID, severity, group.group, f"{label} removed on session timeout ({removed.text()} time(s))"
                      if len(order) == 1 else f"{members.text()} members removed on session timeout, first {label}",
                      " ".join(parts), start, end, dedupe(evidence), " ".join(dict.fromkeys(remedy)),
                      culprit=culprit)
    finding.figures = measured
    finding.cause = f"{label} lost its session (no heartbeat within session.timeout.ms)"
    finding.caused = {"rebalances": sorted({r.index for v in by_member.values() for r, _ in v if r is not None}),
                      "culprits": order}
    yield finding


def _reports(line: dict, removal: dict) -> bool:
    """A member's own session-timeout line reports this removal: it had no successful response from the coordinator
    for delay_ms when it wrote the line ("session timed out ... after 25235 ms without a successful response"), and
    the coordinator removed it within that time."""
    if line["event"] != EV.SESSION_TIMEOUT or removal is line or line.get("delay_ms") is None:
        return False
    ts, at = line.get("ts"), removal.get("ts")
    return ts is not None and at is not None and ts - timedelta(milliseconds=int(line["delay_ms"])) <= at <= ts


def _session_timeout(member, consumer_protocol: bool) -> figures.Figure:
    if consumer_protocol:
        return figures.Figure("session.timeout.ms", None, figures.MS, "session.timeout.ms in force",
                              note="KIP-848: the broker's group.consumer.session.timeout.ms, not in the client's dump")
    return figures.setting(member, "session.timeout.ms")


def _same_second(by_member: dict) -> str:
    times = sorted(d.event["ts"] for v in by_member.values() for _, d in v if d.event.get("ts"))
    if len(by_member) < 2 or not times:
        return ""
    span = (times[-1] - times[0]).total_seconds()
    return "all within the same second" if span < 1 else ""


def _story(group: GroupTimeline, member, name: str, found: list, in_force, consumer_protocol: bool,
           t: dict) -> tuple[str, str, list]:
    """What the member's own log says: died, paused (how long, against the timeout), or not logged; and the
    figures that say it (figures.py)."""
    setting = (f"the broker's {BROKER_PREFIX.get(of(group).protocol, 'group.consumer')}.session.timeout.ms"
               if consumer_protocol else "session.timeout.ms")
    timeout = in_force.value
    label = member.culprit().label if member else name
    at = found[-1][1].event.get("ts")
    if member is None or not member.own_lines:
        silence = figures.Figure("longest_silence_ms", None, figures.MS, "longest silence in its own log",
                                 note="its own log is not included")
        return (f"{label}'s own log is not included: whether its process died or paused is not known.",
                f"Collect {label}'s own log to tell a crash from a pause; if it was alive, look for GC pauses and "
                f"network trouble and raise {setting} above the longest pause.", [silence])
    concluded = found[-1][1].concluded is not None
    # The process that had the removed member id: a later process of the same member says nothing of its fate. A
    # departure concluded from its log stopping (classify/silent.py) is the life whose last line is before it.
    _, replaced = (None, None) if concluded else member.process_of(found[-1][1].event.get("member"), at)
    last = member.last_own_before(min(at, replaced - timedelta(microseconds=1)) if replaced and at else at)
    if member.static and (member.restarted_after(last) or (member.closes and at and member.closes[-1] <= at)):
        before, after = figures.own_lines_around(group, name, last)
        away = figures.duration("time_away_ms", "time away (its last line to its new process's first)",
                                before, after)
        advice = figures.raise_above(setting if not consumer_protocol else "session.timeout.ms", away,
                                     t["advice_headroom"], in_force, "time away")
        return (f"{label} is a static member (group.instance.id={member.instance}) that went away and came back "
                + (f"{away.text()} later" if away.known else "too late")
                + f", longer than {setting}" + (f"={timeout}" if timeout else "") + ": its restart cost the rebalances "
                "static membership exists to avoid.",
                f"Raise {setting}" + (f" to {advice.value} ms ({advice.formula})" if advice.known else
                                      " above the restart time")
                + " (within the broker's group.max.session.timeout.ms) so that its restarts cost no rebalance.",
                [away, advice])
    if replaced is not None or member.restarted_after(last) or member.alive_after(at) is False:
        last_line = next((e for e in group.events if e.get("ts") == last and group.who(e) == name
                          and e.get("component") != "broker"), None)
        gap = figures.duration("last_line_to_removal_ms", "from its last own line to its removal" if not concluded
                               else "from its last own line to the others' rebalance", last_line,
                               found[-1][1].event, note="no own line of it before its removal")
        how = "a new process of it started later" if replaced is not None or member.restarted_after(last) \
            else "its log ends there"
        advice = figures.Figure("advised.session.timeout.ms", None, figures.MS, "advised session.timeout.ms",
                                note="the process died: a longer session timeout would only delay noticing it")
        removal = ("the other members were told the group was rebalancing (no coordinator's log: its removal is "
                   "concluded from its log stopping without leaving)") if concluded else "its removal"
        return (f"{label}'s own log stops {gap.text() if gap.known else '?'} before {removal} and {how}: the "
                "process died.",
                f"Find why {label}'s process died: its last lines, the orchestrator's events (OOM kill, restart).",
                [gap, advice])
    # Alive but silent. The coordinator removed it session.timeout.ms after the last heartbeat it got, and the member
    # logs again as soon as it wakes (its heartbeat thread finds the session gone): so it sent no heartbeat for
    # session.timeout.ms plus the time from its removal to its first own line after it (one heartbeat interval at
    # most longer than the pause itself). A client that states the silence itself (librdkafka's "after N ms
    # without a successful response") is read as stated.
    wakes = [_wake(group, name, d.event) for _, d in found]
    woke = figures.longest("wake_after_removal_ms", "from its removal to its first own line after it", wakes)
    stated = [d.event for _, d in found if d.event.get("delay_ms") is not None]
    if stated:
        line = max(stated, key=lambda e: int(e["delay_ms"]))
        silence = figures.stated("longest_silence_ms", int(line["delay_ms"]), figures.MS,
                                 "longest time without a heartbeat answered (as the member logged)", line)
    elif woke.known and in_force.known:
        silence = figures.Figure("longest_silence_ms", in_force.value + woke.value, figures.MS,
                                 "longest time without a heartbeat (session.timeout.ms + its removal to its waking)",
                                 in_force.evidence + woke.evidence,
                                 formula=f"session.timeout.ms={in_force.value} + {woke.text()}")
    else:
        silence = figures.Figure("longest_silence_ms", None, figures.MS, "longest time without a heartbeat",
                                 woke.evidence, note="session.timeout.ms in force is not in the logs" if woke.known
                                 else "no own line of it after its removal")
    advice = figures.raise_above("session.timeout.ms", silence, t["advice_headroom"], in_force,
                                 "longest time without a heartbeat")
    versus = f" against {setting}={timeout}" if timeout else ""
    if advice.known:
        fix = (f"raise {setting} to {advice.value} ms ({advice.formula}; {_interval(t)}) to "
               "ride out such pauses.")
    elif silence.known:
        fix = f"raising {setting} would not help: {advice.note}."
    elif woke.known:
        fix = (f"raise {setting} above its value in force plus {woke.text()} (the time it stayed silent after its "
               "removal), with headroom; the value in force is not in the logs (no configuration dump).")
    else:
        fix = f"raise {setting} above the longest pause ({_interval(t)})."
    if silence.known:
        how = f"it sent no heartbeat for {silence.text()}{versus}"
    elif woke.known:
        how = f"it logged again {woke.text()} after its removal (its session.timeout.ms is not in the logs)"
    else:
        how = "how long it was silent is not in the logs"
    library = library_note(ID, library_of(group, name))
    if library:
        return (f"{label}'s own log goes on after its removal: the process was alive; {how}"
                + (f" (the longest of {len(found)} removals)" if len(found) > 1 else "") + f". {library['why']}.",
                library["fix"][:1].upper() + library["fix"][1:], [woke, silence, advice])
    return (f"{label}'s own log goes on after its removal: the process was alive but silent; {how}"
            + (f" (the longest of {len(found)} removals)" if len(found) > 1 else "")
            + " (a GC pause, CPU starvation or lost connectivity).",
            f"Look for GC pauses and network trouble on {label} at that time; " + fix, [woke, silence, advice])


def _interval(t) -> str:
    """heartbeat.interval.ms as the advice states it: at the share of session.timeout.ms config-heartbeat-ratio
    detects with (heartbeats_per_session, a user's override included)."""
    return f"heartbeat.interval.ms at {share(t['heartbeats_per_session'])} of it"


def _wake(group: GroupTimeline, name: str, removal: dict) -> figures.Figure:
    """From the coordinator's removal to the member's first own line after it (None for the member's own line)."""
    label = "from its removal to its first own line after it"
    if removal.get("component") != "broker":
        return figures.Figure("wake_after_removal_ms", None, figures.MS, label, note="no coordinator line of it")
    _, after = figures.own_lines_around(group, name, removal.get("ts"))
    return figures.duration("wake_after_removal_ms", label, removal, after)


def check_handles(processes: list[Process], t: Thresholds):
    """Client handles whose lines name no group (classify/handles.py) that say their session timed out: one
    finding per process, about its handles together."""
    for process in processes:
        lost = process.of(EV.SESSION_TIMEOUT)
        if lost:
            yield _process_finding(process, lost, t)


def _process_finding(process: Process, lost: list, t: dict) -> Finding:
    handles = list(dict.fromkeys(h.name for h, _ in lost))
    libraries = sorted({h.library for h, _ in lost})
    stating = sorted((e for _, e in lost if e.get("delay_ms") is not None), key=lambda e: int(e["delay_ms"]))
    brokers = sorted({str((e.get("attrs") or {}).get("broker")) for _, e in lost
                      if (e.get("attrs") or {}).get("broker") is not None})
    states = sorted({(e.get("attrs") or {}).get("join_state") for _, e in lost} - {None})
    evidence = [Evidence.of(e) for _, e in lost]
    start, end = window(evidence)
    # the figures it states, each once: how many, of how many handles, within how long, after how long silent
    count = figures.count("session_timeouts", "session timeouts of the process's handles", [e for _, e in lost])
    handled = figures.count("handles", "consumer handles that timed out (each one's first line)",
                            list({h.name: e for h, e in reversed(lost)}.values())[::-1])
    ordered = sorted((e for _, e in lost if e.get("ts") is not None), key=lambda e: e["ts"])
    spread = figures.duration("spread_ms", "from the first session timeout to the last", *(
        (ordered[0], ordered[-1]) if ordered else (None, None)))
    shortest = figures.stated("shortest_silence_ms", int(stating[0]["delay_ms"]) if stating else None, figures.MS,
                              "shortest time without a coordinator response (as a handle logged it)",
                              stating[0] if stating else None, "no line states it")
    longest = figures.stated("longest_silence_ms", int(stating[-1]["delay_ms"]) if stating else None, figures.MS,
                             "longest time without a coordinator response (as a handle logged it)",
                             stating[-1] if stating else None, "no line states it")
    together = len(handles) > 1 and spread.known and shortest.known and spread.value < shortest.value
    coordinators = figures.count("coordinators", "brokers they had as coordinator (each one's first line)",
                                 list({str(e["attrs"]["broker"]): e for _, e in reversed(lost)
                                       if (e.get("attrs") or {}).get("broker") is not None}.values())[::-1])
    after = ((f"{shortest.value} ms" if shortest.value == longest.value else f"{shortest.value}-{longest.value} ms")
             if shortest.known else "the session timeout")
    parts = [f"{count.text()} session timeout(s) of {handled.text()} {'/'.join(libraries)} consumer handle(s) of one "
             f"process ({process.label}): {names(handles)}"
             + (f", within {spread.text()}" if spread.known and count.value > 1 else "") + "."
             + f" Each had no successful response from its group coordinator for {after}"
             + (f" (in join-state {', '.join(states)})" if states else "")
             + " and revoked its assignment to rejoin. No line of these handles names their group."]
    if all(((e.get("attrs") or {}).get("error_text") or "") == "Success" and not e.get("error") for _, e in lost):
        parts.append("The last error each saw was none (Success): the coordinators' answers stopped, they did not fail.")
    if together:
        shared = (f"Their coordinators were {coordinators.text()} different brokers ({', '.join(brokers)}): "
                  if len(brokers) > 1 else f"All had broker {brokers[0]} as coordinator: " if brokers else "")
        parts.append(f"{shared}{handled.text()} consumers of one process lost their sessions within one session timeout "
                     "of each other, so what they share is the cause: the process (stopped, paused, starved of CPU) "
                     + ("or its network, not one consumer, one group or one broker." if len(brokers) > 1
                        else "or its network (or that broker), not one consumer or one group."))
    single = len(handles) == 1
    culprit = Culprit(host=process.host or None, client=handles[0] if single else None)
    severity = escalate(count.value, t["critical_count"])
    title = (f"{handles[0]} lost its group session ({count.text()} time(s))" if single
             else f"{handled.text()} consumer handles of one process lost their group sessions together" if together
             else f"{handled.text()} consumer handles of one process lost their group sessions")
    if single:
        remedy = (f"Look at {handles[0]}'s process and its network to broker(s) {', '.join(brokers) or '?'} at that "
                  f"time; raise session.timeout.ms ({_interval(t)}) to ride out short pauses.")
    else:
        remedy = ("Look at the process and its host when the sessions timed out (CPU throttling or starvation, a frozen "
                  "or paused container, long pauses) and at its network to the brokers: the clients heartbeat from their "
                  "own threads, so handles silent for the whole session timeout at once were stopped or cut off. Raise "
                  f"session.timeout.ms ({_interval(t)}) only to ride out pauses that cannot be "
                  "removed.")
    finding = Finding(ID, severity, None, title, " ".join(parts), start, end, dedupe(evidence), remedy,
                      culprit=culprit)
    finding.figures = [count, handled, spread, shortest, longest, coordinators]
    finding.cause = (f"{handled.text()} consumer handle(s) of one process ({process.label}) lost their group sessions "
                     f"(no successful coordinator response for {after})")
    finding.caused = {"members": handles}
    return finding
