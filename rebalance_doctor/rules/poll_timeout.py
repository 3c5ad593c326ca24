"""A member exceeded max.poll.interval.ms and was taken out of the group.

Symptom
-------
On the member (its heartbeat thread)::

    [2024-03-05 10:00:41,001] WARN [Consumer clientId=consumer-payments-1, groupId=payments] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with max.poll.records. (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)
    [2024-03-05 10:00:41,001] INFO [Consumer clientId=consumer-payments-1, groupId=payments] Member consumer-payments-1-6b1f... sending LeaveGroup request to coordinator broker-1:9092 (id: 2147483646 rack: null) due to consumer poll timeout has expired. (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)

on the coordinator, the LeaveGroup with the client's reason (3.3+)::

    [2024-03-05 10:00:41,002] INFO [GroupCoordinator 1]: Member consumer-payments-1-6b1f... has left group payments through explicit `LeaveGroup`; client reason: consumer poll timeout has expired. (kafka.coordinator.group.GroupCoordinator)

and later, when the slow poll finally returns, ``Commit cannot be completed since the group has
already rebalanced`` and a rejoin (a second rebalance). KIP-848 clients (3.9+) say by how much:
``Time between subsequent calls to poll() was longer than the configured max.poll.interval.ms,
exceeded approximately by 1200 ms. Member ... will rejoin the group now.``

Why it happens
--------------
``poll()`` drives group membership: if the application spends longer than
``max.poll.interval.ms`` (5 minutes by default) between two calls, the heartbeat thread assumes
the polling thread is stuck and leaves the group. Typical causes: a batch of
``max.poll.records`` records that takes too long to process, a slow downstream call, a long GC
pause, a RocksDB write stall (Streams). Every timeout costs two rebalances (leave, rejoin), and
records processed after the timeout are processed again by the new owner. The finding measures
the poll loop: the timeout fires max.poll.interval.ms after the last poll, and the member polls
again when it rejoins, so the loop took max.poll.interval.ms plus the time until its return.

Remediation
-----------
Make one poll loop iteration shorter than ``max.poll.interval.ms``: lower ``max.poll.records``
(the finding says how many records fit when the config dump gives both settings), move slow
work off the polling thread, or raise ``max.poll.interval.ms`` above the measured loop (a higher
value also delays the detection of a truly stuck member). Kafka Connect:
``rebalance.timeout.ms`` plays this role for workers.

Scope: classic consumers (eager, cooperative), Kafka Streams, Connect workers, and KIP-848
consumers (max.poll.interval.ms stays a client setting under the consumer protocol).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from ..classify import of
from ..classify.handles import Process
from ..classify.operations import POLL, Departure
from ..timeline.model import Culprit, Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, episodes, escalate, followers, names, said, seconds
from ..core import eventnames as EV

ID = "poll-timeout"
SEVERITY = "warning"
ROLE = "cause"
# Group leaders timing out one after the other inside their own assignment: the assignment is the cause and
# leader-churn names it (the poll loop's processing time is not involved).
YIELDS_TO = ("leader-churn",)
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [poll-timeout], typed as thresholds_schema.toml types it."""
    critical_count: int
    advice_headroom: float


def check(group: GroupTimeline, t: Thresholds):
    found = episodes(group, (POLL,))
    attached = {id(x) for r in group.rebalances for x in r.events}
    # Poll timeouts where no rebalance was rebuilt (the member's own log only, or one line).
    lines = [e for e in group.of(EV.POLL_TIMEOUT, EV.LEAVE_REQUEST, EV.MEMBER_LEAVE) if id(e) not in attached
             and (e["event"] == EV.POLL_TIMEOUT or "poll timeout" in (e.get("reason") or ""))]
    if not found and not lines:
        return
    classification = of(group)
    by_member: dict[str, list] = {}
    for r, d in found:
        by_member.setdefault(d.who, []).append((r, d))
    for e in lines:        # a poll timeout logged where no rebalance was rebuilt (its own log only)
        who = group.who(e) or "?"
        if not any(e["ts"] and abs((e["ts"] - d.event["ts"]).total_seconds()) < 1
                   for _, d in by_member.get(who, []) if d.event.get("ts")):
            by_member.setdefault(who, []).append((None, Departure(who, POLL, e)))
    culprit_name = max(by_member, key=lambda m: len(by_member[m]))
    member = classification.members.get(culprit_name)
    every = by_member          # with the lines that report a timeout already counted (for the overrun they state)
    by_member = {m: [(r, d) for r, d in v if not _reports_earlier(d.event, v)] for m, v in by_member.items()}
    rebalances = sorted({r.index for v in by_member.values() for r, _ in v if r is not None})
    evidence = [Evidence.of(_own_line(group, r, d)) for v in by_member.values() for r, d in v]
    concluded = [d for v in by_member.values() for _, d in v if d.rejoined is not None]
    evidence += [Evidence.of(d.rejoined) for d in concluded]
    loops, overruns = _loops(group, every[culprit_name])
    symptoms = [e for e in group.of(EV.COMMIT_FAILED) if said(e, "rebalanced")]
    evidence += [Evidence.of(e) for e in symptoms[:2]]
    start, end = window(evidence)
    measured = _figures(group, member, every[culprit_name], loops, overruns, t["advice_headroom"])
    timeouts = figures.count("poll_timeouts", "poll timeouts", [d.event for v in by_member.values() for _, d in v])
    begun = set(rebalances)     # once: a set per rebalance made this quadratic (100k rebalances: minutes)
    started = figures.count("rebalances_started", "rebalances they started (each one's first line)",
                            [r.events[0] for r in group.rebalances if r.index in begun and r.events])
    if not rebalances and not group.rebalances:
        # A leave always starts a rebalance; these logs rebuild none (no coordinator log, no member's join).
        started = figures.Figure(started.name, None, figures.COUNT, started.label,
                                 note="no rebalance of the group is in these logs")
    failed = figures.count("commits_failed", "offset commits failed because the group had rebalanced", symptoms)
    measured = [timeouts, started] + ([failed] if symptoms else []) + measured
    who_text = names(sorted(by_member, key=lambda m: -len(by_member[m])))
    summary = (f"{timeouts.text()} poll timeout(s) by {who_text}; "
               + (f"they started {started.text()} rebalance(s)" if started.known
                  else "the rebalances they started are not in these logs")
               + (f" and {failed.text()} offset commit(s) failed because the group had rebalanced" if symptoms else "")
               + ".")
    summary += " " + _measure(figures.by_name(measured))
    if concluded:
        summary += (f" No line says \"poll timeout\" ({', '.join(sorted({d.rejoined.get('library') or 'the client' for d in concluded}))} "
                    "logs none at this level): the member left by a LeaveGroup that states no reason and joined again "
                    "from the same process, which had neither restarted nor closed (its rejoin: "
                    f"{', '.join(Evidence.of(d.rejoined).ref() for d in concluded)}). A running consumer leaves on its "
                    "own only when its poll loop overran max.poll.interval.ms.")
    elif not any(_own_line(group, r, d).get("component") != "broker" for r, d in found) and not lines:
        summary += " Only the coordinator's side is logged: what the polling thread was doing is not known."
    severity = escalate(timeouts.value, t["critical_count"])
    culprit = culprit_of(classification.members, culprit_name)
    finding = Finding(ID, severity, group.group,
                      f"{culprit.label if culprit else culprit_name} exceeded max.poll.interval.ms "
                      f"({timeouts.text()} poll timeout(s))", summary, start, end, dedupe(evidence),
                      _remediation(figures.by_name(measured)), culprit=culprit)
    finding.figures = measured
    finding.cause = f"{culprit.label if culprit else culprit_name} exceeded max.poll.interval.ms"
    finding.caused = {"rebalances": rebalances, "culprits": sorted(by_member)}
    yield finding


def check_handles(processes: list[Process], t: Thresholds):
    """Client handles whose lines name no group (classify/handles.py; librdkafka names none at its default log
    level) that say they exceeded max.poll.interval.ms and left their group: one finding per process."""
    for process in processes:
        timeouts = process.of(EV.POLL_TIMEOUT)
        if timeouts:
            yield _process_finding(process, timeouts, t)


def _process_finding(process: Process, timeouts: list, t: dict) -> Finding:
    handles = list(dict.fromkeys(h.name for h, _ in timeouts))
    libraries = sorted({h.library for h, _ in timeouts})
    stated = _stated_interval([e for _, e in timeouts])
    count = figures.count("poll_timeouts", "poll timeouts", [e for _, e in timeouts])
    interval = figures.stated("max.poll.interval.ms", int(stated["delay_ms"]) if stated else None, figures.MS,
                              "max.poll.interval.ms as the timeout line states it", stated, "no line states it")
    loop = figures.stated("poll_loop_ms", None, figures.MS, "how long the poll loop took", None,
                          "no line of these handles shows the next poll")
    evidence = [Evidence.of(e) for _, e in timeouts]
    start, end = window(evidence)
    label = handles[0] if len(handles) == 1 else f"{len(handles)} consumer handles"
    summary = (f"{count.text()} poll timeout(s) of {'/'.join(libraries)} consumer handle(s) {names(handles)} of one "
               f"process ({process.label}): the application did not call poll() within max.poll.interval.ms"
               + (f"={interval.value} ms" if interval.known else "")
               + ", so the client left its group, which rebalances the group: the other members take its partitions "
               "until it polls again and rejoins (a second rebalance). No line of these handles names their group "
               "(librdkafka names none at its default log level), and none shows the next poll, so how long the "
               "loop took is not in these logs.")
    severity = escalate(count.value, t["critical_count"])
    culprit = Culprit(host=process.host or None, client=handles[0] if len(handles) == 1 else None)
    remedy = ("Shorten one poll-loop iteration below max.poll.interval.ms"
              + (f"={interval.value}" if interval.known else "")
              + ": process less per poll or move slow work off the polling thread, or raise max.poll.interval.ms "
              "above the longest iteration (measure it: these logs do not show it); check what the application was "
              "doing just before (downstream calls, GC).")
    finding = Finding(ID, severity, None, f"{label} of {process.label} exceeded max.poll.interval.ms "
                                          f"({count.text()} poll timeout(s))", summary, start, end, dedupe(evidence),
                      remedy, culprit=culprit)
    finding.figures = [count, interval, loop]
    finding.cause = f"{label} of {process.label} exceeded max.poll.interval.ms"
    finding.caused = {"culprits": handles}      # its rejoin is not in these lines: no member is said to rejoin
    return finding


def _reports_earlier(line: dict, found: list) -> bool:
    """A KIP-848 client's "exceeded approximately by N ms ... will rejoin" line, written when the slow poll
    returned, reports the timeout its own "poll timeout has expired" line logged N ms earlier (same process, same
    clock; "approximately": within a second): one timeout, counted once."""
    attrs = line.get("attrs") or {}
    if line.get("delay_ms") is None or "exceeded_by_ms" in attrs or line.get("ts") is None:
        return False
    fired = line["ts"] - timedelta(milliseconds=float(line["delay_ms"]))
    return any(d.event is not line and d.event.get("ts") is not None and d.event.get("delay_ms") is None
               and d.event.get("source") == line.get("source")
               and fired - timedelta(seconds=1) <= d.event["ts"] <= line["ts"] for _, d in found)


def _own_line(group: GroupTimeline, r, d) -> dict:
    """The member's own poll-timeout line when its log has it (or, for a timeout concluded from a leave and a
    rejoin, its own leave line), else the coordinator's."""
    if r is not None and d.event.get("component") == "broker":
        own = (EV.POLL_TIMEOUT, EV.LEAVE_REQUEST) if d.rejoined is not None else (EV.POLL_TIMEOUT,)
        for name in own:
            for e in r.events:
                if e["event"] == name and e.get("component") != "broker" and group.who(e) == d.who:
                    return e
    return d.event


def _loops(group: GroupTimeline, found: list) -> tuple[list, list]:
    """How long the member's poll loop took: the timeout fires max.poll.interval.ms after its last
    poll, and it polls again when it rejoins (the first line of its return). KIP-848 clients state
    the overrun themselves ("exceeded approximately by N ms"). Each: (milliseconds, the lines that give it)."""
    stated, measured = [], []
    following = followers(group)
    for r, d in found:
        if "exceeded_by_ms" in (d.event.get("attrs") or {}):
            # librdkafka's "(<max.poll.interval.ms>ms) exceeded by <N>ms": its delay_ms is the interval, and N how late
            # its timer noticed (the loop had not polled yet): neither is the loop's length. Measured from its return.
            pass
        elif d.event.get("delay_ms") is not None:
            stated.append((float(d.event["delay_ms"]), [d.event]))
            continue
        if r is None:
            continue
        for back in following.get(r.index, ()):
            own = [e for e in back.events if e.get("component") != "broker" and group.who(e) == d.who
                   and e["event"] in (EV.JOIN_REQUESTED, EV.JOIN_START, EV.JOIN_SUCCESS)]
            if own and d.event.get("ts"):
                measured.append(((own[0]["ts"] - d.event["ts"]).total_seconds() * 1000, [d.event, own[0]]))
                break
    return measured, stated


def _stated_interval(events: list[dict]) -> dict | None:
    """The member's own timeout line that states max.poll.interval.ms (librdkafka's MAXPOLL: "Application maximum
    poll interval (20000ms) exceeded by 48ms": its delay_ms is the interval, exceeded_by_ms the overrun)."""
    return next((e for e in events if "exceeded_by_ms" in (e.get("attrs") or {}) and e.get("delay_ms") is not None),
                None)


def _figures(group, member, found: list, measured: list, stated: list, headroom: float) -> list:
    """max.poll.interval.ms and max.poll.records in force, the longest overrun and loop, and the advice."""
    interval = figures.setting(member, "max.poll.interval.ms")
    if not interval.known:
        line = _stated_interval([d.event for _, d in found])
        if line is not None:
            interval = figures.stated("max.poll.interval.ms", int(line["delay_ms"]), figures.MS,
                                      "max.poll.interval.ms in force (as the member's timeout line states it)", line)
    records = figures.setting(member, "max.poll.records").but(unit=figures.RECORDS)
    overrun = _overrun(group, found, stated, measured)
    if interval.known and overrun.known:
        loop = figures.Figure("poll_loop_ms", interval.value + overrun.value, figures.MS, "longest poll loop",
                              interval.evidence + overrun.evidence,
                              formula=f"max.poll.interval.ms={interval.value} + {overrun.text()}")
    else:
        loop = figures.Figure("poll_loop_ms", None, figures.MS, "longest poll loop",
                              note="max.poll.interval.ms in force is not in the logs" if overrun.known
                              else "no own line of the member shows it polling again")
    advice = figures.raise_above("max.poll.interval.ms", loop, headroom, interval, "longest poll loop")
    fewer = figures.lower_below("max.poll.records", int(records.value * interval.value / loop.value)
                                if records.known and loop.known else None, records,
                                "max.poll.records x max.poll.interval.ms / the longest poll loop, rounded down")
    return [interval, records, overrun, loop, advice, fewer]


def _overrun(group, found: list, stated: list, measured: list) -> figures.Figure:
    """How long after the timeout it polled again: as its line states it (KIP-848's "exceeded approximately by"),
    else from the timeout line to its own first line of the rejoin."""
    label = "longest time from the timeout to its next poll"
    if stated or measured:
        ms, lines = max(stated or measured, key=lambda x: x[0])
        return figures.Figure("overrun_ms", round(ms), figures.MS,
                              label + (" (as the member logged)" if stated else " (to its rejoin)"),
                              [Evidence.of(e) for e in lines])
    return figures.Figure("overrun_ms", None, figures.MS, label, note="no own line of the member shows it polling again")


def _measure(f: dict) -> str:
    interval, records, overrun, loop, fewer = (f["max.poll.interval.ms"], f["max.poll.records"], f["overrun_ms"],
                                               f["poll_loop_ms"], f["advised.max.poll.records"])
    if not overrun.known:
        return ("No line of the member's own shows it polling again (rejoining), so how long its poll loop took is not known"
                + (f" (max.poll.interval.ms={interval.value})." if interval.known else "."))
    how = "as the member logged" if "logged" in overrun.label else "from the timeout to its return"
    if not interval.known:
        return (f"It polled again up to {overrun.text()} after the timeout ({how}); max.poll.interval.ms is not in "
                "the logs (no ConsumerConfig dump), so the loop's length is max.poll.interval.ms plus that.")
    text = (f"Its poll loop took about {loop.text()}: max.poll.interval.ms={interval.value} plus {overrun.text()} "
            f"until it polled again ({how})")
    if records.known and fewer.known:
        text += f"; at max.poll.records={records.value}, about {fewer.value} records fit in max.poll.interval.ms"
    return text + "."


def _remediation(f: dict) -> str:
    interval, records, advice, fewer = (f["max.poll.interval.ms"], f["max.poll.records"], f["advised.max.poll.interval.ms"],
                                        f["advised.max.poll.records"])
    if interval.known and f["poll_loop_ms"].known:
        head = (f"Make one poll-loop iteration shorter than max.poll.interval.ms={interval.value}: "
                + (f"lower max.poll.records to {fewer.value} (from {records.value}; {fewer.formula}), "
                   if fewer.known else "lower max.poll.records, ")
                + (f"or raise max.poll.interval.ms to {advice.value} ms ({advice.formula}); " if advice.known
                   else f"({advice.note}); "))
    else:
        head = ("Shorten one poll-loop iteration below max.poll.interval.ms: lower max.poll.records, or raise "
                "max.poll.interval.ms to the real worst case; ")
    return head + ("move slow work off the polling thread; check what the member was doing just before (GC, "
                   "downstream calls, RocksDB stalls). Connect workers: rebalance.timeout.ms.")
