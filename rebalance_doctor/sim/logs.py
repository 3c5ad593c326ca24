"""What each simulated process writes: its records, filtered by its log levels, and their rendering.

A ``ProcessLog`` belongs to one process (a broker, an application embedding consumers, a Streams
instance, a Connect worker) on one host, at one Kafka release. The model writes Kafka's lines
through ``say(key, ...)`` (the catalogue decides text, level, logger and prefix kind) and other
loggers' lines (application code, noise) through ``other``. Only records at or above the level the
process configures for that logger are kept: INFO by default, DEBUG where a scenario turns it on.
Rendering puts the host's clock skew on each time and prints the records in the process's layout
through ``packgen.envelope``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Mapping

from ..packgen.envelope import render
from .catalog import LEVELS, Resolved, resolve

# The catalogue rows' prefix notes, by the kind of identity they print.
PREFIX_KINDS = (
    ("[GroupCoordinator <brokerId>]", "scala"),
    ("[GroupCoordinator id=<nodeId> topic=", "java"),
    ("[GroupCoordinator id=<nodeId>]", "java-service"),
    ("[GroupMetadataManager brokerId=", "scala-gmm"),
    ("[Worker clientId=", "worker"),
    ("[Consumer clientId=<application.id>", "consumer"),
    ("[Consumer clientId=", "consumer"),
    ("[Heartbeat groupID=", "heartbeat"),
    ("stream-client [", "stream-client"),
    ("stream-thread [<main-consumer", "stream-consumer"),
    ("stream-thread [<client.id>", "stream-thread"),
)


def prefix_kind(note: str) -> str:
    for start, kind in PREFIX_KINDS:
        if note.startswith(start):
            return kind
    return "none"


@dataclass
class Record:
    t: float             # true time, ms since the incident's start
    seq: int
    level: str
    logger: str
    message: str
    thread: str
    key: str | None = None      # the catalogue key (None for other loggers' lines)
    line: int | None = None     # the source line (Connect's %L)
    tags: tuple[str, ...] = ()  # what the truth may point at ("poll-timeout@node2", ...)
    throwable: str | None = None  # a Throwable logged with the record (printed after it)
    version: str | None = None    # the release the process ran when it wrote this (a rolling upgrade changes it)


@dataclass
class ProcessLog:
    """The log file of one process."""

    env: object
    path: str                    # relative path in the incident directory, e.g. "broker-1/server.log"
    host: str                    # the host as the tool names it from the path
    component: str               # broker | consumer | streams | connect
    version: str
    layout: str
    skew_ms: float = 0.0         # this host's clock error
    levels: dict[str, str] = field(default_factory=dict)   # logger (or package) -> level; default INFO
    prefixes: dict[str, str] = field(default_factory=dict)  # prefix kind -> the text it prints
    thread: str = "main"
    coordinator: str = "consumer"   # whose AbstractCoordinator rows this process writes (connect for a worker)
    records: list[Record] = field(default_factory=list)
    alive: bool = True           # a killed process writes nothing

    def threshold(self, logger: str) -> int:
        best, level = -1, "INFO"
        for name, lvl in self.levels.items():
            if (logger == name or logger.startswith(name + ".")) and len(name) > best:
                best, level = len(name), lvl
        return LEVELS[level]

    def line(self, key: str) -> Resolved | None:
        return resolve(key, self.version, self.coordinator)

    def say(self, key: str, *, thread: str | None = None, prefix: str | None = None,
            tags: tuple[str, ...] = (), throwable: str | None = None, **values: object) -> Record | None:
        """Write catalogue line ``key`` if this release writes it at a level this process keeps."""
        if not self.alive:
            return None
        resolved = self.line(key)
        if resolved is None:
            return None
        row = resolved.row
        if LEVELS[row.level] < self.threshold(row.logger):
            return None
        kind = prefix_kind(row.prefix)
        head = "" if kind == "none" else (prefix if prefix is not None else self.prefixes.get(kind))
        if head is None:
            raise KeyError(f"{self.path}: no {kind!r} prefix for {key}")
        message = head + resolved.message(values)
        return self._add(row.level, row.logger, message, thread or self.thread, key, row.line, tags, throwable)

    def other(self, level: str, logger: str, message: str, thread: str | None = None,
              line: int | None = None, throwable: str | None = None) -> Record | None:
        """A line of a logger outside the catalogue (application code, network, noise)."""
        if not self.alive or LEVELS[level] < self.threshold(logger):
            return None
        return self._add(level, logger, message, thread or self.thread, None, line, (), throwable)

    def _add(self, level, logger, message, thread, key, line, tags, throwable=None) -> Record:
        record = Record(self.env.now, len(self.records), level, logger, message, thread, key, line, tags, throwable,
                        self.version)
        self.records.append(record)
        return record

    def render(self, start: datetime) -> tuple[list[str], dict[int, int]]:
        """The file's lines, and for each record (by seq) the 1-based line it starts on."""
        lines: list[str] = []
        where: dict[int, int] = {}
        for record in sorted(self.records, key=lambda r: (r.t, r.seq)):
            ts = start + timedelta(milliseconds=record.t + self.skew_ms)
            where[record.seq] = len(lines) + 1
            text = render(self.layout, ts, record.level, record.logger, record.message, record.thread,
                          line=record.line, throwable=record.throwable)
            lines.extend(text.split("\n"))
        return lines, where


def values_of(mapping: Mapping[str, object] | None, **more: object) -> dict[str, object]:
    out = dict(mapping or {})
    out.update(more)
    return out
