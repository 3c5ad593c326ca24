"""Kafka Streams threads as their instances log them: which StreamThreads died, and whether one replaced them.

A StreamThread dies when an exception escapes its run loop: Kafka logs "Failed to rebalance." or
"Encountered the following exception during processing and the thread is going to shut down"
(2.x), the application's uncaught exception handler runs, and the thread goes
"State transition from PENDING_SHUTDOWN to DEAD" while its KafkaStreams client stays up. A thread
that reaches DEAD because its client is closing ("stream-client [...] State transition from RUNNING
to PENDING_SHUTDOWN" first) or because the application removed it (removeStreamThread) did not
die. A death is replaced when the client logs "Replacing thread in the streams uncaught exception
handler" (REPLACE_THREAD, 2.8+), ksqlDB restarts the query's thread ("Restarting query ... (attempt
#N)"), or the client starts a new StreamThread meanwhile (REPLACE_THREAD starts it before the dying
one is DEAD); otherwise the instance runs with one thread fewer for good ("All stream threads have
died" once none is left), or its handler answered SHUTDOWN_CLIENT (Kafka's default from 4.0) and the
whole instance goes to ERROR because of it. The exception a thread died with is the stack trace of the first record of
its death that carries one (core/stacktrace.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from ..core.stacktrace import Thrown, thrown
from ..timeline.model import GroupTimeline
from ..core import eventnames as EV

_THREAD = regex.compile(r"^(?P<client>.+)-StreamThread-(?P<number>\d+)(?:-consumer)?$")
# "Encountered the following exception during processing and the registered exception handler opted to
# SHUTDOWN_CLIENT. The streams client is going to shut down now." (KafkaStreams, 2.8+; Kafka's default handler
# from 4.0): the thread died and its handler closes its client to ERROR, which is that death's consequence.
_SHUT_CLIENT = "streams.kafka_streams.encountered_the_following_exception_during_proce_3"
# Lines that say a dead thread is being replaced: Kafka Streams' REPLACE_THREAD ("Replacing thread in the streams
# uncaught exception handler"), ksqlDB restarting a query's thread ("Restarting query {} thread {} (attempt #{})",
# QueryMetadataImpl's retry, right before its handler returns REPLACE_THREAD).
_REPLACING = (EV.STREAMS_THREAD_REPLACED, EV.KSQL_QUERY_RESTARTED)


@dataclass
class ThreadDeath:
    thread: str                       # the StreamThread's name
    client: str                       # its KafkaStreams client (application.id-uuid), or its host
    first: dict                       # the first line of its death (the error, else its DEAD transition)
    error: str | None = None
    stopping: dict | None = None      # its own "State transition from ... to PENDING_SHUTDOWN" on the way to DEAD
    dead: dict | None = None          # "State transition from PENDING_SHUTDOWN to DEAD"
    replaced: dict | None = None      # the replacement's line, if any
    all_died: dict | None = None      # "All stream threads have died" / the client in ERROR
    handled: dict | None = None       # its client shutting down after it (SHUTDOWN_APPLICATION, a close)
    shut_client: dict | None = None   # its handler answered SHUTDOWN_CLIENT: the client goes to ERROR because of it
    errors: list[dict] = field(default_factory=list)   # the records of its death that may carry its exception

    @property
    def thrown(self) -> Thrown | None:
        """The exception it died with, as the first record of its death with a stack trace shows it."""
        return next((t for t in map(thrown, self.errors) if t is not None), None)


@dataclass
class StreamThreads:
    deaths: list[ThreadDeath] = field(default_factory=list)

    @property
    def unreplaced(self) -> list[ThreadDeath]:
        """Deaths after which the instance went on with fewer threads: not replaced, and not answered by
        shutting the client (or the application) down."""
        return [d for d in self.deaths if d.replaced is None and d.handled is None]


def streams_client(e: dict) -> str | None:
    """The KafkaStreams client whose own line this is (its 'stream-client [name]' prefix, patterns/prefixes.toml)."""
    return (e.get("attrs") or {}).get("streams_client")


def thread_of(e: dict) -> str | None:
    """The StreamThread a line is about: its 'stream-thread [name]' prefix (which the thread column holds), else
    its thread or client column."""
    for name in (e.get("thread"), e.get("client")):
        if name and _THREAD.match(name):
            return _THREAD.match(name)[0].removesuffix("-consumer")
    return None


def client_of(thread: str | None, e: dict) -> str:
    m = _THREAD.match(thread or "")
    return m["client"] if m else (e.get("host") or "?")


def read(timeline: GroupTimeline) -> StreamThreads:
    found = StreamThreads()
    closing: set[str] = set()                       # clients whose own shutdown has begun
    open_deaths: dict[str, ThreadDeath] = {}        # thread -> its death, until it is DEAD
    by_client: dict[str, list[ThreadDeath]] = {}
    started: dict[str, set[str]] = {}               # client -> threads seen starting
    replacing: dict[str, list[dict]] = {}           # client -> replacements not yet matched to a death
    stopping: dict[str, dict] = {}                  # thread -> its last PENDING_SHUTDOWN transition
    shutdown: dict | None = None                    # the application's shutdown request, once logged
    for e in timeline.events:
        name = e["event"]
        if not (name.startswith("streams.") or e.get("component") == "streams"):
            continue
        if name == EV.STREAMS_SHUTDOWN_REQUESTED:
            shutdown = shutdown or e               # SHUTDOWN_APPLICATION: application-shutdown's story
            for deaths in by_client.values():
                for d in deaths:
                    d.handled = d.handled or e
            continue
        own = streams_client(e)
        if name == EV.STREAMS_STATE and own:
            if e.get("state") in ("PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR"):
                closing.add(own)
                for d in by_client.get(own, []):
                    if d.all_died is None and d.handled is None and d.shut_client is None:
                        d.handled = e          # the uncaught exception handler shut the client down
            elif e.get("state") == "ERROR":
                for d in by_client.get(own, []):
                    d.all_died = d.all_died or e
            elif e.get("state") in ("RUNNING", "REBALANCING") and e.get("from_state") == "CREATED":
                closing.discard(own)
            continue
        thread = thread_of(e)
        client = own or client_of(thread, e)
        if name == EV.STREAMS_THREAD_REMOVED:       # removeStreamThread: the application's own doing
            closing.add(client)
            continue
        if name == EV.STREAMS_ALL_THREADS_DIED:
            for d in by_client.get(client, []):
                d.all_died = d.all_died or e
            continue
        if name in _REPLACING:
            death = (open_deaths.get(thread) if thread else None) \
                or next((d for d in by_client.get(client, []) if d.replaced is None), None)
            if death is not None:
                death.replaced = e
                death.errors.append(e)           # "Replacing thread ..." carries the exception too
            else:
                replacing.setdefault(client, []).append(e)   # logged before the thread's own last lines
            continue
        if thread is None:
            continue
        if name == EV.STREAMS_STATE and e.get("state") == "STARTING" and e.get("from_state") == "CREATED":
            if thread not in started.setdefault(client, set()):
                started[client].add(thread)
                # a death its handler answered by shutting the client or the application down is not replaced by
                # the threads of the client's next start (its process id persists in the state directory)
                death = next((d for d in by_client.get(client, []) if d.replaced is None and d.thread != thread
                              and d.handled is None and d.shut_client is None), None)
                if death is not None:
                    death.replaced = e          # a new thread of the same client started after the death
                elif client not in closing and any(client_of(other, e) == client for other in stopping if other != thread):
                    # REPLACE_THREAD starts the new thread from the dying one's handler, after that one's
                    # PENDING_SHUTDOWN and before its DEAD (KafkaStreams#replaceStreamThread): the death it replaces
                    # is logged next.
                    replacing.setdefault(client, []).append(e)
            continue
        if name == EV.STREAMS_STATE and e.get("state") == "PENDING_SHUTDOWN":
            stopping[thread] = e
            continue
        if e.get("pattern") == _SHUT_CLIENT and (e.get("reason") or "").startswith("SHUTDOWN_CLIENT"):
            death = open_deaths.get(thread)
            if death is None:
                death = open_deaths[thread] = _died(found, by_client, replacing,
                                                    ThreadDeath(thread, client, e, e.get("error")), shutdown)
            death.shut_client = e
            death.errors.append(e)               # it carries the exception the thread died with
            continue
        if name == EV.STREAMS_THREAD_DIED:
            death = open_deaths.get(thread)
            if death is None:
                death = open_deaths[thread] = _died(found, by_client, replacing,
                                                    ThreadDeath(thread, client, e, e.get("error")), shutdown)
            death.errors.append(e)
            continue
        if name == EV.STREAMS_STATE and e.get("state") == "DEAD":
            death = open_deaths.pop(thread, None)
            if death is None and client not in closing:
                death = _died(found, by_client, replacing, ThreadDeath(thread, client, e), shutdown)
            was_stopping = stopping.pop(thread, None)
            if death is not None:
                death.dead = e
                death.stopping = was_stopping
    return found


def _died(found: StreamThreads, by_client: dict, replacing: dict, death: ThreadDeath,
          shutdown: dict | None = None) -> ThreadDeath:
    death.handled = shutdown
    found.deaths.append(death)
    by_client.setdefault(death.client, []).append(death)
    if replacing.get(death.client):
        death.replaced = replacing[death.client].pop(0)
        if death.replaced["event"] in _REPLACING:
            death.errors.append(death.replaced)      # "Replacing thread ..." carries the exception too
    return death


def departed_in(group: GroupTimeline, deaths: list[ThreadDeath]) -> list[int]:
    """The rebalances in which a dead thread's consumer left (its leave, or the coordinator removing it)."""
    return [r.index for r, _ in _departures(group, deaths)]


def removal_lines(group: GroupTimeline, deaths: list[ThreadDeath], most: int = 3) -> list[dict]:
    """How the coordinator saw the dead threads' consumers go (its leave line, or, as they send no LeaveGroup, its
    removal one session later): the first `most` of its lines among those departures, in time order."""
    return [e for _, lines in _departures(group, deaths) for e in lines if e.get("component") == "broker"][:most]


def _departures(group: GroupTimeline, deaths: list[ThreadDeath]) -> list[tuple]:
    prefixes = tuple(d.thread for d in deaths)
    first = min((d.first["ts"] for d in deaths if d.first.get("ts") is not None), default=None)
    out = []
    for r in group.rebalances:
        if first is not None and r.end is not None and r.end < first:
            continue
        lines = [e for e in r.events
                 if e["event"] in (EV.LEAVE_REQUEST, EV.MEMBER_LEAVE, EV.MEMBER_EXPIRED, EV.STREAMS_THREAD_DIED)
                 and ((e.get("client") or "").startswith(prefixes) or (e.get("member") or "").startswith(prefixes)
                      or (e.get("thread") or "").startswith(prefixes))]
        if lines:
            out.append((r, lines))
    return out
