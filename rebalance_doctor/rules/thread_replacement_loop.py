"""A StreamThread dies and is replaced again and again (REPLACE_THREAD), moving consumers n <-> n+1.

Symptom
-------
::

    [2024-06-01 09:00:02,180] ERROR stream-client [inventory-9a2b...] Replacing thread in the streams uncaught exception handler (org.apache.kafka.streams.KafkaStreams)

repeated, with the number of consumers participating in successive rebalances bouncing between
n and n+1 (the dead thread's consumer leaves, the new thread's consumer joins).

Why it happens
--------------
The application's ``StreamsUncaughtExceptionHandler`` returns ``REPLACE_THREAD``. If the error is
not transient (a poison record, a bug, a missing topic), every new thread hits it again: each
death and each replacement is a rebalance for the whole application.

Remediation
-----------
Fix the exception the threads die with (first evidence line). Handle poison records with
``default.deserialization.exception.handler`` / ``processing.exception.handler``; return
``REPLACE_THREAD`` only for errors that are transient, or bound the number of replacements.

Fewer replacements than ``min_replacements`` (one) is no loop: an info note with the exception the thread
died with, since a transient error that REPLACE_THREAD handled wakes nobody; the rebalance it cost stays
harmful in the timeline (the dead thread's consumer, which sends no LeaveGroup, holds its tasks until the
coordinator expires it one session later).

Scope: Kafka Streams 2.8+ (REPLACE_THREAD), on the classic protocol and in KIP-1071 streams groups
(``group.protocol=streams``: each StreamThread's consumer is a member of its own, so a replacement is a
new member joining). A thread that dies without replacement is issue 17's thread-died; the two never
share a chain.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, escalate
from ..core import eventnames as EV

ID = "thread-replacement-loop"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("streams", "streams-group")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [thread-replacement-loop], typed as thresholds_schema.toml types it."""
    min_replacements: int
    critical_replacements: int


def check(group: GroupTimeline, t: Thresholds):
    replaced = group.of(EV.STREAMS_THREAD_REPLACED)
    if not replaced:
        return
    # Fewer replacements than a loop: a transient error handled as designed, still worth its exception (info).
    once = len(replaced) < t["min_replacements"]
    # The deaths as the classification found them (classify/threads.py): with REPLACE_THREAD (2.8+) no line of the
    # dying thread says it died (no streams.thread_died event); its DEAD transition does, and the client's
    # "Replacing thread ..." record carries the exception.
    deaths = of(group).threads.deaths
    died = [d.dead or d.first for d in deaths]
    errors = sorted({d.error or (d.thrown.error if d.thrown else None) for d in deaths} - {None})
    counts = [r.members for r in group.rebalances if r.members is not None]
    # in time order: the first is the record that carries the exception (a death line, or the replacement's)
    evidence = [Evidence.of(e) for e in sorted(died[:2] + replaced,
                                               key=lambda e: (e["ts"], e.get("source") or "", e.get("line") or 0))]
    start, end = window(evidence)
    hosts = sorted({e.get("host") or "?" for e in replaced})
    severity = "info" if once else escalate(len(replaced), t["critical_replacements"])
    rebalances = [r for r in group.rebalances if r.operation == "thread-replacement"]
    figs = [figures.count("replacements", "thread replacements (Replacing thread ...)", replaced),
            figures.count("deaths", "StreamThread deaths (each its DEAD transition, else its first line)", died),
            figures.rebalances("rebalances_caused", "rebalances of the deaths and replacements", rebalances),
            figures.threshold("min_replacements", t["min_replacements"], figures.COUNT,
                              "replacements that make a loop", ID, "min_replacements")]
    n = figs[0].text()
    who = group.who(replaced[0])
    title = (f"{n} stream thread replaced after dying, below a loop" if once
             else f"{n} stream threads replaced after dying")
    fix = ("Nothing to change while it stays once: REPLACE_THREAD did its job. Look at the exception the thread died "
           "with; if it recurs, handle it (processing.exception.handler for a bad record) rather than replace threads."
           if once else
           "Fix the exception the threads die with; handle poison records with "
           "default.deserialization.exception.handler / processing.exception.handler; return REPLACE_THREAD "
           "only for transient errors.")
    finding = Finding(ID, severity, group.group, title,
                  f"{n} thread replacement(s) on {', '.join(hosts)}"
                  + (f"; the threads died with {', '.join(errors)}" if errors else "")
                  + (f"; consumers per rebalance: {' -> '.join(map(str, counts[:12]))}" if counts else "")
                  + f". Each death and its replacement rebalance the whole application ({figs[2].text()} "
                    f"rebalance(s) for {figs[1].text()} death(s) here).",
                  start, end, dedupe(evidence), fix, culprit=culprit_of(of(group).members, who))
    thrown = [t for t in (d.thrown for d in deaths) if t is not None]
    finding.cause = (f"StreamThreads on {', '.join(hosts)} die"
                     + (f" with {thrown[0].words()}" if thrown else f" with {', '.join(errors)}" if errors else "")
                     + " and are replaced")
    finding.exceptions = thrown[:1]
    finding.figures = figs
    finding.caused = {"rebalances": [r.index for r in rebalances],
                      "culprits": sorted({group.who(e) for e in replaced + died if group.who(e)})}
    yield finding
