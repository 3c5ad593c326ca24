"""A Kafka Streams thread died and nothing replaced it: the application runs with fewer threads for good.

Symptom
-------
An exception escapes a StreamThread's loop, the thread leaves the group and goes DEAD while its
KafkaStreams client stays up (no "stream-client [...] State transition from RUNNING to
PENDING_SHUTDOWN" before it, no "Replacing thread" after it)::

    [2019-11-27 11:28:59,965] ERROR [app-92665673-...-StreamThread-2] stream-thread [app-92665673-...-StreamThread-2] Encountered the following unexpected Kafka exception during processing, this usually indicate Streams internal errors: (org.apache.kafka.streams.processor.internals.StreamThread)
    org.apache.kafka.streams.errors.StreamsException: stream-thread [app-92665673-...-StreamThread-2] Failed to rebalance.
    [2024-03-05 09:00:53,569] INFO stream-thread [app-0b35ed35-...-StreamThread-1] State transition from PENDING_SHUTDOWN to DEAD (org.apache.kafka.streams.processor.internals.StreamThread)

and the next rebalance has one consumer fewer; once every thread of an instance died, "All stream
threads have died. The instance will be in error state and should be closed." and the client goes
to ERROR. With a handler answering SHUTDOWN_CLIENT (Kafka's default from 4.0) the whole instance
goes down with the first death::

    2026-12-07T03:41:04,220 ERROR [order-counts-2893fd5b-...-StreamThread-1] org.apache.kafka.streams.KafkaStreams - stream-client [order-counts-2893fd5b-...] Encountered the following exception during processing and the registered exception handler opted to SHUTDOWN_CLIENT. The streams client is going to shut down now.

Why it happens
--------------
Before Kafka 2.8 an uncaught exception always ended its thread; from 2.8 it does when the
application keeps the deprecated ``setUncaughtExceptionHandler(Thread.UncaughtExceptionHandler)``
or a ``StreamsUncaughtExceptionHandler`` that does not return ``REPLACE_THREAD``. The thread's
tasks move to the other threads (a rebalance), and the instance's share of the work is processed
by fewer threads from then on: lag grows and the group never regains its size. Recoverable errors
(KAFKA-9231: "Failed to rebalance." with exactly-once before 2.5) killed threads too.

Remediation
-----------
Fix the exception the thread died with (the finding shows its first line, its root cause and the
first frame in the application's code, each with its log line). Install a
``StreamsUncaughtExceptionHandler`` (``KafkaStreams#setUncaughtExceptionHandler``, Kafka 2.8+) that
returns ``REPLACE_THREAD`` for transient errors and ``SHUTDOWN_CLIENT`` for fatal ones, so an
instance never limps on with fewer threads; handle poison records with
``default.deserialization.exception.handler`` / ``processing.exception.handler``; restart the
instance to regain its threads.

Scope: Kafka Streams, on the classic protocol and in KIP-1071 streams groups (``group.protocol=streams``,
where the dead instance's members, which stop without leaving, are fenced one session later: part of
this story). A thread that gave up waiting for missing source topics is streams-topics-missing's. A
thread that is replaced is thread-replacement-loop's
(the two never share a chain): Kafka's "Replacing thread in the streams uncaught exception handler",
ksqlDB's "Restarting query ... (attempt #N)" or a new StreamThread of the same client starting
while the dead one shuts down say so. Threads that stop because their instance is closed are not
deaths.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..classify.threads import departed_in, removal_lines
from ..timeline.model import Culprit, Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, escalate, names

ID = "thread-died"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("streams", "streams-group")
# A thread that gave up waiting for missing source topics (streams groups) died of the topology's missing topics.
YIELDS_TO = ("thread-replacement-loop", "streams-topics-missing")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [thread-died], typed as thresholds_schema.toml types it."""
    critical_deaths: int


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    deaths = classification.threads.unreplaced
    if not deaths:
        return
    threads = [d.thread for d in deaths]
    evidence = []
    for d in deaths[:4]:
        evidence += [Evidence.of(e) for e in d.errors[:1] if e is not d.first]
        evidence.append(Evidence.of(d.first))
        if d.dead is not None and d.dead is not d.first:
            evidence.append(Evidence.of(d.dead))
        if d.all_died is not None:
            evidence.append(Evidence.of(d.all_died))
    thrown = [t for t in (d.thrown for d in deaths) if t is not None]
    errors = sorted({t.error for t in thrown} | {d.error for d in deaths if d.error and not d.thrown})
    hosts = sorted({d.first.get("host") or "?" for d in deaths})
    caused = departed_in(group, deaths)
    whole = [d for d in deaths if d.all_died is not None]
    figs = _figures(group, classification, deaths, thrown, caused)
    f = figures.by_name(figs)
    parts = [f"{f['deaths'].text()} StreamThread(s) died and were not replaced: {names(threads)} on {', '.join(hosts)}"
             + (f", with {thrown[0].words()} ({thrown[0].source}:{thrown[0].exception_line})" if thrown
                else f", with {', '.join(errors)}" if errors else "; the logs do not show the exception it died with")
             + "."]
    parts.append("Their tasks moved to the remaining threads and the group shrank for good"
                 + (f" ({f['rebalances_caused'].text()} rebalance(s))." if caused else "."))
    shut = [d for d in deaths if d.shut_client is not None]
    if shut:
        parts.append(f"The uncaught exception handler of {names(sorted({d.client for d in shut}))} answered "
                     "SHUTDOWN_CLIENT (Kafka's default from 4.0): the whole instance shut down because of it.")
    if whole:
        parts.append(f"Every thread of {names(sorted({d.client for d in whole}))} died: the instance is in ERROR and "
                     "processes nothing.")
    who = group.who(deaths[0].first)
    culprit = culprit_of(classification.members, who)
    if culprit is None:
        culprit = Culprit(host=deaths[0].first.get("host"), client=deaths[0].thread)
    severity = escalate(len(deaths), t["critical_deaths"], also=bool(whole))
    start, end = window(evidence)
    removals = [Evidence.of(e) for e in removal_lines(group, deaths)]    # the coordinator's, one session later
    finding = Finding(ID, severity, group.group,
                      f"{f['deaths'].text()} stream thread(s) died without replacement on {', '.join(hosts)}",
                      " ".join(parts), start, end, dedupe(evidence + removals),
                      _fix(thrown) + "; install a StreamsUncaughtExceptionHandler that returns "
                      "REPLACE_THREAD for transient errors (SHUTDOWN_CLIENT for fatal ones); handle poison records "
                      "with default.deserialization.exception.handler / processing.exception.handler; restart the "
                      "instance to regain its threads.", culprit=culprit)
    finding.cause = (f"StreamThread {names(threads[:1])} on {hosts[0]} died"
                     + (f" with {thrown[0].words()}" if thrown else f" with {errors[0]}" if errors else "")
                     + " and was not replaced")
    finding.exceptions = thrown
    finding.figures = figs
    # The deaths' clients, and the threads themselves where they are members of their own (a streams group's
    # StreamThread consumers): a fencing of that member is this death's.
    finding.caused = {"rebalances": caused, "culprits": sorted({who for d in deaths for who in (group.who(d.first),) if who}
                                                               | {d.thread for d in deaths
                                                                  if classification.members.get(d.thread)})}
    yield finding


def _fix(thrown) -> str:
    """What to fix first: the exception and the application's frame it was thrown from, when the logs show them."""
    if not thrown:
        return ("Find the exception the thread died with (the logs given do not show it: the application's uncaught "
                "exception handler or the process's standard error has it)")
    t = thrown[0]
    where = f" at {t.frame} ({t.source}:{t.frame_line})" if t.frame else f" ({t.source}:{t.exception_line})"
    return f"Fix the {t.error} the thread died with{where}"


def _figures(group: GroupTimeline, classification, deaths: list, thrown: list, caused: list) -> list:
    """The deaths not replaced (each its DEAD transition, else its first line), the exceptions the logs show them
    dying with (each its exception line), the deaths of the same clients that a replacement answered (Replacing
    thread, a new StreamThread, a ksqlDB query restart), and the rebalances the deaths caused."""
    clients = {d.client for d in deaths}
    replaced = [d.replaced for d in classification.threads.deaths if d.client in clients and d.replaced is not None]
    by_index = {r.index: r for r in group.rebalances}
    shown = figures.Figure("exceptions", len(thrown), figures.COUNT, "deaths whose exception the logs show",
                           [Evidence(x.source, x.exception_line, x.exception) for x in thrown])
    return [figures.count("deaths", "StreamThreads that died and were not replaced", [d.dead or d.first for d in deaths]),
            shown,
            figures.derived("replaced", len(replaced), figures.COUNT, "deaths of the same clients a replacement answered",
                            replaced, "replacement lines (Replacing thread, a new StreamThread, a ksqlDB query restart) "
                                      "after a death of the same client"),
            figures.rebalances("rebalances_caused", "rebalances the deaths caused", [by_index[i] for i in caused
                                                                                       if i in by_index])]
