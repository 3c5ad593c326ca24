"""A member requested an application-wide shutdown through a rebalance (SHUTDOWN_APPLICATION).

Symptom
-------
On the instance where the request originated, after an uncaught exception::

    [2024-06-01 09:00:02,180] ERROR stream-thread [inventory-9a2b...-StreamThread-1] Detected that shutdown was requested. All clients in this app will now begin to shutdown (org.apache.kafka.streams.processor.internals.StreamThread)

followed by every instance transitioning to ``PENDING_ERROR`` / ``ERROR``.

Why it happens
--------------
A ``StreamsUncaughtExceptionHandler`` returned ``SHUTDOWN_APPLICATION``: the member encodes an
error code in its subscription and enforces a rebalance so that every member of the application
learns about it and shuts down. The rebalance is the messenger; the root cause is the exception
logged just before on the requesting instance.

Remediation
-----------
Fix the exception named in the finding (the first error of the requesting thread). Revisit the
uncaught exception handler if a whole-application shutdown is too drastic for that error
(``REPLACE_THREAD`` or ``SHUTDOWN_CLIENT``).

Scope: Kafka Streams 2.8+, on the classic protocol and in KIP-1071 streams groups
(``group.protocol=streams``: the request goes to the coordinator in a heartbeat and comes back to
every member as the SHUTDOWN_APPLICATION status; the members of the instances that stopped without
leaving are fenced one session later, part of this story).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..classify.threads import departed_in, removal_lines
from ..core.stacktrace import thrown
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of
from ..core import eventnames as EV

ID = "application-shutdown"
SEVERITY = "critical"
ROLE = "cause"
PROTOCOLS = ("streams", "streams-group")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """None: the rule reads protocol semantics only (thresholds.toml [application-shutdown] is empty)."""


def check(group: GroupTimeline, t: Thresholds):
    requests = group.of(EV.STREAMS_SHUTDOWN_REQUESTED)
    if not requests:
        return
    # "Detected that shutdown was requested" is a thread hearing the request (every thread of every instance, and
    # before KAFKA-19054 on every loop of the thread's run loop): the request was sent from the hosts of the others.
    heard, sent = [], []
    for e in requests:
        (heard if (e.get("attrs") or {}).get("request") == "heard" else sent).append(e)
    first_hearing: dict[tuple, dict] = {}     # each thread's first hearing stands for its repeats
    for e in heard:
        first_hearing.setdefault((e.get("host"), e.get("thread")), e)
    hearings = list(first_hearing.values())
    first = sent[0] if sent else hearings[0]
    hosts = list(dict.fromkeys(e.get("host") or "?" for e in (sent or hearings)))     # in the order they asked
    # the thread's death the request was sent for (a hearing says nothing of the sender's thread)
    errors = [e for e in group.of(EV.STREAMS_THREAD_DIED)
              if e.get("host") == first.get("host") and e["ts"] <= first["ts"]] if sent else []
    cause = errors[-1] if errors else None
    evidence = ([Evidence.of(cause)] if cause else []) + [Evidence.of(e) for e in sorted(sent + hearings,
                                                                                        key=lambda e: e["ts"])]
    start, end = window(evidence)
    # The request record itself carries the exception it was sent for (its stack trace), when no thread's death line
    # before it does.
    carried = next((x for x in map(thrown, sent) if x is not None), None) if cause is None else None
    requested = (f"requested from {', '.join(hosts)}" if sent else
                 f"requested (heard on {', '.join(hosts)}; the request's own line is not in the logs)")
    summary = (f"Shutdown of the whole application {requested}"
               + (f" after: {(cause.get('error') or Evidence.of(cause).text)}" if cause else
                  f" for {carried.words()} ({carried.source}:{carried.exception_line})" if carried else
                  "; the exception that caused it is not among the recognized lines (look just before "
                  "the first evidence line)") + ".")
    who = group.who(first) if sent else None
    finding = Finding(ID, "critical", group.group, "a member requested an application-wide shutdown",
                      summary, start, end, dedupe(evidence),
                      "Fix the exception on the requesting instance; if a whole-application shutdown is too drastic "
                      "for it, have the StreamsUncaughtExceptionHandler return REPLACE_THREAD or SHUTDOWN_CLIENT.",
                      culprit=culprit_of(of(group).members, who))
    finding.cause = (f"{hosts[0]} asked" if sent else "an instance whose lines are not here asked") + \
        " the whole application to shut down" + (
        f" after {cause.get('error')}" if cause is not None and cause.get("error") else
        f" for {carried.error}" if carried is not None else "")
    # The threads whose death asked for it: their consumers leave (or expire) in rebalances of this story too.
    asked = {id(e) for e in requests}
    deaths = [d for d in of(group).threads.deaths if d.handled is not None and id(d.handled) in asked]
    # (In a streams group the request's rebalance is also the fencing of members that stopped without leaving: its
    # trigger says what began it.)
    caused = {r.index for r in group.rebalances if r.operation == "application-shutdown"
              or r.trigger_kind == "application-shutdown"} | set(departed_in(group, deaths))
    finding.evidence = dedupe(finding.evidence + [Evidence.of(e) for e in removal_lines(group, deaths)])
    finding.caused = {"rebalances": sorted(caused),
                      "culprits": sorted({who} | {x for d in deaths for x in (group.who(d.first),) if x} - {None})}
    finding.exceptions = ([t for t in (d.thrown for d in deaths) if t is not None] + ([carried] if carried else []))[:1]
    by_index = {r.index: r for r in group.rebalances}
    # Its numbers: the requests (its lines), the threads whose death asked for it, the rebalances it caused.
    finding.figures = [figures.count("requests", "application shutdown requests sent", sent or requests[:1]),
                       figures.count("heard", "threads that heard the request", hearings),
                       figures.count("deaths", "StreamThread deaths that asked for it", [d.dead or d.first for d in deaths]),
                       figures.rebalances("rebalances_caused", "rebalances it caused",
                                          [by_index[i] for i in sorted(caused) if i in by_index])]
    yield finding
