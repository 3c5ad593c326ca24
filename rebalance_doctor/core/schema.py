"""The events table: the one definition of its columns, their types and their meaning.

Every engine (in-process, Spark) and every writer (JSONL, CSV, Parquet) derives its schema
from ``COLUMNS``; nothing else restates it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # one of: timestamp, string, int, strings (list of strings), ints (list of ints), map (string -> string)
    doc: str


COLUMNS: tuple[Column, ...] = (
    Column("ts", "timestamp", "event time, timezone-aware UTC (microsecond precision)"),
    Column("source", "string", "path of the log file relative to the input root (bundle members as bundle!member)"),
    Column("line", "int", "1-based line number of the first line of the record in its file"),
    Column("host", "string", "host the file came from (inferred or given with --host)"),
    Column("cluster", "string", "the Kafka cluster of the file: the NAME of --cluster NAME=PATH, else the cluster id "
                                "the file states (a client's 'Cluster ID: X', a broker's 'Cluster ID = X'), else null"),
    Column("component", "string", "broker | consumer | streams | connect | client"),
    Column("library", "string", "the non-Java client library that wrote the line (librdkafka, kafka-python, aiokafka, "
                                "faust, kafkajs, franz-go, sarama, kafka-go, brod, ruby-kafka); null for Kafka's own Java code"),
    Column("level", "string", "log level as written (INFO, WARN, ...)"),
    Column("logger", "string", "logger name (%c), without a :line suffix"),
    Column("thread", "string", "thread name, or the Streams thread from a stream-thread prefix"),
    Column("event", "string", "event type from the vocabulary in docs/events.md, e.g. rebalance.prepare"),
    Column("pattern", "string", "stable dotted id of the pattern that matched"),
    Column("pack_version", "string", "version of the pattern pack that holds the pattern"),
    Column("kafka_version", "string", "Kafka version of the process that wrote the file, when known"),
    Column("group", "string", "consumer group id, Streams application.id or Connect group"),
    Column("member", "string", "member id the line is about"),
    Column("client", "string", "client.id of the process that wrote the line; on a broker line, of the member it is about"),
    Column("instance", "string", "group.instance.id (static membership)"),
    Column("client_host", "string", "the member's address as the broker saw it (clientHost, e.g. /10.0.0.7), when the line states it"),
    Column("generation", "int", "generation id (classic protocol) or epoch (KIP-848 protocol)"),
    Column("leader", "string", "member id or client of the group leader, when the line states it"),
    Column("protocol", "string", "assignment protocol or rebalance protocol named by the line"),
    Column("state", "string", "group, member or thread state the line reports (the new state on transitions)"),
    Column("from_state", "string", "previous state on a state transition"),
    Column("reason", "string", "the reason the line gives (broker reason, client reason, leave reason)"),
    Column("error", "string", "error or exception name the line reports"),
    Column("members", "int", "member count stated by the line"),
    Column("nodes", "int", "client node count (Streams) stated by the line"),
    Column("consumers", "int", "consumer count (Streams) stated by the line"),
    Column("partitions", "strings", "partitions named by the line"),
    Column("tasks", "strings", "Streams tasks named by the line"),
    Column("delay_ms", "int", "a delay or timeout in milliseconds stated by the line"),
    Column("scheduled", "string", "a scheduled time stated by the line (followup rebalances), as written"),
    Column("attrs", "map", "every other capture of the pattern, name -> text (e.g. config settings)"),
    Column("message", "string", "the raw record text (first line and continuation lines)"),
)

NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
KINDS: dict[str, str] = {c.name: c.kind for c in COLUMNS}
INT_COLUMNS = frozenset(n for n, k in KINDS.items() if k == "int")
LIST_COLUMNS = frozenset(n for n, k in KINDS.items() if k == "strings")

# Columns that a pattern capture may fill directly; other named groups go to ``attrs``.
CAPTURE_COLUMNS = frozenset(NAMES) - {"ts", "source", "line", "host", "cluster", "event", "pattern",
                                      "pack_version", "attrs", "message", "level", "logger", "library"}


def empty_event() -> dict:
    """A row with every column present and unset."""
    return dict.fromkeys(NAMES)


def event_columns(events: list[dict]) -> dict[str, list]:
    """Rows as the column lists pyarrow builds the events table from: attrs as key/value pairs,
    ts as microseconds since the epoch (pyarrow converts aware datetimes one by one, ~3 us each;
    ints in bulk)."""
    columns = {name: [e.get(name) for e in events] for name in NAMES}
    columns["attrs"] = [list(a.items()) if a else None for a in columns["attrs"]]
    columns["ts"] = [None if ts is None else (ts - _EPOCH) // _MICROSECOND for ts in columns["ts"]]
    return columns


def event_rows(columns: dict[str, list]) -> list[dict]:
    """The inverse of ``event_columns``: rows with ts an aware UTC datetime and attrs a dict."""
    columns = dict(columns)
    columns["ts"] = [None if us is None else _EPOCH + us * _MICROSECOND for us in columns["ts"]]
    columns["attrs"] = [None if pairs is None else dict(pairs) for pairs in columns["attrs"]]
    return [dict(zip(NAMES, values)) for values in zip(*(columns[n] for n in NAMES))]


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def arrow_schema(columns: tuple[Column, ...] = COLUMNS):
    """A table's columns (the events table's by default) as a pyarrow schema (pyarrow is imported
    lazily: it is optional)."""
    import pyarrow as pa

    types = {
        "timestamp": pa.timestamp("us", tz="UTC"),
        "string": pa.string(),
        "int": pa.int64(),
        "strings": pa.list_(pa.string()),
        "ints": pa.list_(pa.int64()),
        "map": pa.map_(pa.string(), pa.string()),
    }
    return pa.schema([pa.field(c.name, types[c.kind]) for c in columns])


def spark_ddl(columns: tuple[Column, ...] = COLUMNS) -> str:
    """A table's columns (the events table's by default) as a Spark DDL string (so the Spark
    engine never restates a schema)."""
    types = {
        "timestamp": "TIMESTAMP",
        "string": "STRING",
        "int": "BIGINT",
        "strings": "ARRAY<STRING>",
        "ints": "ARRAY<BIGINT>",
        "map": "MAP<STRING, STRING>",
    }
    return ", ".join(f"`{c.name}` {types[c.kind]}" for c in columns)
