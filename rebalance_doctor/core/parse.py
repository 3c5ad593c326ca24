"""Turn one record (its text) into an event row: envelope, context prefix, pattern, fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from sys import intern as _intern
from datetime import date, tzinfo
from typing import Callable

import regex

from . import errors, timestamps
from .clock import Clock
from .context import Context, ContextReader
from .layouts import GENERIC, Container, Layout
from .matcher import Match, Matcher, MessageText, Miss
from .schema import CAPTURE_COLUMNS, INT_COLUMNS, LIST_COLUMNS, empty_event

# Captured names that many events repeat: kept once each (sys.intern).
_NAMES = frozenset({"group", "member", "client", "instance", "state", "protocol", "leader", "client_host",
                    "thread"}) - INT_COLUMNS - LIST_COLUMNS
_LOGGER_SUFFIX = regex.compile(r"(?::\d+|:\?| Line:\d+)$")
_LIST_SPLIT = regex.compile(r"\s*,\s*")
_TOPIC_PARTITION = regex.compile(r"topic=['\"]?([^,'\"\s)}]+)['\"]?,\s*partition=(\d+)")
_INT = regex.compile(r"-?\d+")
# KIP-1251 (4.4): a partition as the broker's assignment lines name it with its assignment epoch.
_PARTITION_EPOCH = regex.compile(r"(\S+-\d+)@(-?\d+)")
# A streams group member's tasks as the broker prints them: "(active=[0-1@4, 0-3@4], standby=[...], warmup=[...])".
_ACTIVE_TASKS = regex.compile(r"\(active=\[([^\]]*)\]")
_SETTING = regex.compile(r"^\s+([\w.\-]+) = (.*?)\s*$", regex.MULTILINE)
# Settings of a config dump that also fill events columns.
_SETTING_COLUMNS = {"group.id": "group", "client.id": "client", "group.instance.id": "instance",
                    "group.protocol": "protocol"}
_COMPONENT_BY_LOGGER = (
    ("kafka.coordinator.", "broker"),
    ("org.apache.kafka.coordinator.", "broker"),
    ("kafka.server.", "broker"),
    ("org.apache.kafka.connect.", "connect"),
    ("org.apache.kafka.streams.", "streams"),
    ("org.apache.kafka.clients.", "consumer"),
    ("org.apache.kafka.common.", "consumer"),
)


@dataclass
class FileContext:
    """What every record of one file shares."""

    source: str
    host: str
    layout: Layout
    container: Container | None
    zone: tzinfo
    base_date: date | None
    kafka_version: str | None = None
    version_pinned: bool = False
    # A container prefix naming the service or pod of each line (docker compose, kubectl --prefix)
    # gives the line's host, unless --host pinned it; --host-tz zones of such hosts.
    host_pinned: bool = False
    zones: dict[str, tzinfo] = field(default_factory=dict)
    zone_names: dict[str, str] = field(default_factory=dict)   # --host-tz as given, by host
    tz_name: str = ""                                          # --tz as given
    # One clock per host, shared by the contexts of one unit (``dataclasses.replace`` keeps the
    # dict): file order decides what a written time means (``core.clock``).
    clocks: dict[str, Clock] = field(default_factory=dict)
    base_is_last: bool = False   # base_date is the date of the file's last line (its mtime)
    cluster: str | None = None   # --cluster NAME=PATH: the NAME of the file's PATH
    clients: object | None = None   # a MirrorMaker 2 log: each client's cluster (core/mirror.Clients)

    def clock(self, host: str, zone: tzinfo) -> Clock:
        found = self.clocks.get(host)
        if found is None:
            found = self.clocks[host] = Clock(zone, self.zone_names.get(host, self.tz_name), self.base_is_last)
        return found


class RecordParser:
    def __init__(self, matcher: Matcher, context_reader: ContextReader):
        self.matcher = matcher
        self.context_reader = context_reader

    def parse(self, text: str, line: int, file: FileContext, gates: set[str] | None = None,
              elsewhere: "Callable[[], FileContext] | None" = None) -> dict | Miss | None:
        """An event dict, a Miss (gate hit, no regex), or None (not a rebalance record).

        ``gates``: the pattern gates the record holds, when the scan already found them.
        ``elsewhere``: when the file's layout does not read the record, the context that should
        (another reader of a mixed stream, the layout of a foreign line); the generic layout
        reads it when that is the file's context again.
        """
        host = file.host
        raw = text
        runtime_ts = None
        if file.container is not None:
            strip = file.container.compiled()
            prefix = strip.match(text)
            if prefix is not None:
                found = prefix.groupdict()
                if not file.host_pinned and found.get("host"):
                    host = prefix.group("host")
                runtime_ts = found.get("ts")
            text = "\n".join(strip.sub("", l, count=1) for l in text.split("\n"))
        envelope = file.layout.split(text)
        if envelope is not None and not envelope.ts and runtime_ts:
            # a layout that writes no time (franz-go's BasicLogger) read behind kubectl --timestamps or a CRI
            # log file: the time the runtime wrote the line down is the record's
            envelope.ts = runtime_ts
        if envelope is None and elsewhere is not None:
            other = elsewhere()
            if other is not file:
                return self.parse(raw, line, other, gates)
        envelope = envelope or GENERIC.split(text)
        if envelope is None:
            return None
        # read_message, inline: a call per record costs as much as what it does
        first, newline, rest = envelope.msg.partition("\n")
        context = self.context_reader.read(first)
        message = MessageText(context.body, rest if newline else None)
        logger = _LOGGER_SUFFIX.sub("", envelope.logger) if envelope.logger else None
        found = self.matcher.match(message, logger, gates)
        if not isinstance(found, Match):
            return found
        return self._event(found, text, line, file, host, envelope, context, message, logger)

    def _event(self, found: Match, text, line, file: FileContext, host: str, envelope, context,
               message: MessageText, logger) -> dict:
        variant = found.variant
        event = empty_event()
        event["source"] = file.source
        event["line"] = line
        event["host"] = host
        event["cluster"] = file.cluster
        # Names that repeat in every record of a file are kept once (interned): each record's own copy of
        # "INFO", its logger and its thread cost ~200 B an event (a million events: 200 MB).
        event["level"] = _intern(envelope.level) if envelope.level else envelope.level
        event["logger"] = _intern(logger) if logger else logger
        event["thread"] = _intern(envelope.thread) if envelope.thread else envelope.thread
        event["client"] = _intern(envelope.client) if envelope.client else None
        event["event"] = variant.event
        event["pattern"] = variant.pattern_id
        event["pack_version"] = variant.pack_version
        event["library"] = variant.library
        if variant.library and logger:
            for prefix, library in self.matcher.packs.library_loggers:
                if logger.startswith(prefix):
                    event["library"] = library
                    break
        event["kafka_version"] = file.kafka_version
        event["message"] = text
        if envelope.ts:
            try:
                zone = file.zone if host == file.host else file.zones.get(host, file.zone)
                written, time_only = timestamps.read(envelope.ts, file.base_date)
                clock = file.clocks.get(host) or file.clock(host, zone)
                # A naive time in a zone with DST, or of the day only, needs the clock's reading.
                if written.tzinfo is None and (time_only or clock.days is not None):
                    written = clock.local(written, time_only, line)
                ts = timestamps.to_utc(written, zone, envelope.ts)
                clock.times.count(ts, line)
                event["ts"] = ts
                if time_only and clock.base_is_last:
                    clock.day_events.append(event)
            except timestamps.TimestampError:
                event["ts"] = None
        attrs: dict[str, str] = {}
        for source in (context.fields, variant.constants, found.groups):
            for name, value in source.items():
                if name.startswith("_"):
                    continue
                if name in CAPTURE_COLUMNS:
                    event[name] = (_intern(value.strip()) if name in _NAMES and value.__class__ is str
                                   else _convert(name, value))
                else:
                    attrs[name] = value
        parts = event["partitions"]
        if parts and "@" in parts[-1]:
            event["partitions"], attrs["partition_epochs"] = _split_epochs(parts)
        tasks = event["tasks"]
        if tasks and "@" in tasks[-1]:
            event["tasks"], attrs["task_epochs"] = _split_epochs(tasks)
        revoked = attrs.get("partitions_2")
        if revoked and "@" in revoked:
            items, attrs["partitions_2_epochs"] = _split_epochs(_convert("partitions", revoked))
            attrs["partitions_2"] = "[" + ", ".join(items) + "]"
        if event["group"] is None and "thread" in found.groups and not variant.library:
            # A record of the application's or a library's (no Kafka log-context prefix) that names a StreamThread
            # (an uncaught exception in it, ksqlDB restarting it): its application.id and client, as a prefix gives.
            fields = {"thread": event["thread"]}
            self.context_reader.streams_fields(fields)
            for name in ("group", "client"):
                event[name] = event[name] or fields.get(name)
        if variant.dump:
            for key, value in _SETTING.findall(message.full):
                attrs[key] = value
                column = _SETTING_COLUMNS.get(key)
                if column and value and value != "null":
                    event[column] = value
        if variant.library and event["error"]:
            # A client's own wording of a protocol error, under Kafka's name (core/errors.py).
            name = errors.kafka_name(event["error"])
            if name and name != event["error"]:
                attrs["error_text"] = event["error"]
                event["error"] = None if name == "NO_ERROR" else name   # "last error was Success"
        event["attrs"] = attrs or None
        if variant.library:
            # A client library's own logger names say nothing of Kafka's components
            # (kafka-python's "kafka.coordinator.consumer" is no broker).
            event["component"] = variant.component
        else:
            event["component"] = (context.component if context.component and context.component != "consumer"
                                  else None) or _component_from_logger(logger) or variant.component
        if file.clients is not None:   # an MM2 log: the cluster its client runs against (core/mirror.py)
            event["cluster"] = file.clients.of(event["client"])
        return event


def read_message(msg: str, context_reader: ContextReader) -> tuple[Context, MessageText]:
    """The log-context prefix of the message's first line, and what the patterns read."""
    first, newline, rest = msg.partition("\n")
    context = context_reader.read(first)
    return context, MessageText(context.body, rest if newline else None)


def _component_from_logger(logger: str | None) -> str | None:
    if not logger:
        return None
    for prefix, component in _COMPONENT_BY_LOGGER:
        if logger.startswith(prefix):
            return component
    return None


def _split_epochs(items: list[str]) -> tuple[list[str], str]:
    """KIP-1251 (4.4) names each partition of a member's assignment ``topicId-p@assignmentEpoch`` (and a
    streams group's broker each active task ``subtopology-p@epoch``): the partitions (tasks) as every other line
    names them (``topicId-p``), so that they compare, and their epochs in the same order, comma-separated (the
    attrs are text)."""
    partitions, epochs = [], []
    for item in items:
        m = _PARTITION_EPOCH.fullmatch(item)
        partitions.append(m.group(1) if m else item)
        epochs.append(m.group(2) if m else "")
    return partitions, ",".join(epochs)


def _convert(name: str, value: str):
    if name in INT_COLUMNS:
        if value.isascii() and value.isdigit():
            return int(value)
        m = _INT.search(value)
        return int(m.group()) if m else None
    if name in LIST_COLUMNS:
        if name == "partitions" and "topic=" in value:
            # TopicPartition objects as the Python clients print them: read as Kafka's Java clients name them.
            return [f"{topic}-{partition}" for topic, partition in _TOPIC_PARTITION.findall(value)]
        if name == "tasks" and value.startswith("(active="):
            # A streams group member's tasks (GroupMetadataManager): its active tasks.
            m = _ACTIVE_TASKS.match(value)
            value = m.group(1) if m else ""
        inner = value.strip().strip("[]{}()").strip()
        return [item.strip("'\"") for item in _LIST_SPLIT.split(inner) if item] if inner else []
    return value.strip()
