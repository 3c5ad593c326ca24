"""Realistic argument values: each template argument printed the way its Java/Scala type prints.

A rendering draws an ``Identity`` (group, client, member, instance, host, generation... of the
process writing the line and of the member it is about) from a seeded ``random.Random``, then prints
every placeholder through its type (``argtypes.py``: ``MemberMetadata``, ``Option[String]``,
``SortedSet<TopicPartition>``, ``Errors``, ...) with ``javafmt``. Each printed value says which events
columns the line thereby states (``Printed.stated``), so the coverage check knows what a pattern must
read. Masked values (``***``, ``<redacted>``) stand in for identifying strings in some renderings,
as operators paste them.

The type of a leaf (a ``String``, an ``int``) does not say what it holds; the placeholder's kind does
(``params.py``: a group id, a member id, a reason, a count...).
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from . import javafmt
from .inventory import Row, default_path, version_key
from .params import KINDS

MASKS = ("***", "<redacted>")
# What a kind prints as when the type table does not name the expression's type.
DEFAULT_TYPES = {
    "group": "String", "id": "String", "instance": "String", "word": "String", "text": "String",
    "error": "String", "any": "String", "joined": "String", "time": "String", "statuses": "String",
    "int": "int", "count": "int", "ms": "long", "state": "enum",
    "list": "Set<TopicPartition>", "partition": "TopicPartition", "tasks": "Set<TaskId>", "task": "TaskId",
    "node": "Node", "generation": "Generation",
}
JAVA_COLLECTIONS = {"Set", "SortedSet", "List", "Collection", "HashSet", "TreeSet", "ArrayList", "LinkedList",
                    "Queue", "Deque", "NavigableSet", "LinkedHashSet", "Iterable"}
JAVA_MAPS = {"Map", "HashMap", "TreeMap", "SortedMap", "LinkedHashMap", "NavigableMap", "ConcurrentHashMap"}
SCALA_SETS = {"Set", "mutable.Set", "mutable.HashSet", "HashSet", "collection.Set", "immutable.Set"}
SCALA_SEQS = {"List", "Seq", "Iterable", "mutable.ArrayBuffer", "ArrayBuffer", "Vector", "mutable.Buffer"}
SCALA_MAPS = {"Map", "mutable.Map", "mutable.HashMap", "HashMap", "collection.Map", "immutable.Map"}
INT_TYPES = {"int", "long", "short", "byte", "Integer", "Long", "Short", "Int", "Byte", "double", "float"}
TOPICS = ("orders", "payments.v2", "customer-events", "audit_log", "inventory.updates-dlq", "t")
PROTOCOLS = ("range", "roundrobin", "cooperative-sticky", "sticky", "uniform")
WORDS = ("consumer", "connect", "sessioned", "compatible", "JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT")
CLIENT_REASONS = ("the consumer is being closed", "consumer poll timeout has expired.",
                  "the consumer unsubscribed from all topics",
                  "rebalance failed due to 'The group is rebalancing, so a rejoin is needed.' (RebalanceInProgressException)",
                  "need to re-join with the given member-id: {member}", "not provided", "")
STATES = {
    "broker": ("PreparingRebalance", "CompletingRebalance", "Stable", "Empty", "Dead"),
    "consumer": ("STABLE", "JOINING", "RECONCILING", "ACKNOWLEDGING", "FENCED", "PREPARE_LEAVING", "LEAVING",
                 "UNSUBSCRIBED", "STALE", "UNJOINED", "PREPARING_REBALANCE", "COMPLETING_REBALANCE"),
    "streams": ("RUNNING", "REBALANCING", "PARTITIONS_REVOKED", "PARTITIONS_ASSIGNED", "PENDING_SHUTDOWN",
                "STARTING", "CREATED", "ERROR", "NOT_RUNNING", "PENDING_ERROR", "DEAD"),
    "connect": ("STABLE", "UNJOINED", "PREPARING_REBALANCE", "COMPLETING_REBALANCE"),
}
ERROR_NAMES = ("REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID",
               "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "MEMBER_ID_REQUIRED",
               "GROUP_MAX_SIZE_REACHED", "FENCED_MEMBER_EPOCH", "UNRELEASED_INSTANCE_ID", "UNKNOWN_SERVER_ERROR",
               "INCONSISTENT_GROUP_PROTOCOL")


@dataclass
class Identity:
    """Who writes the line and whom it is about: one draw per rendering, shared by prefix and message."""

    component: str
    version: str
    group: str
    client: str                       # client.id of the writer (Streams: the thread's main consumer)
    member: str                       # member id the line is about
    instance: str | None              # group.instance.id (static membership), None when dynamic
    client_host: str                  # as the broker prints an InetAddress: "/10.1.2.3"
    broker_id: int
    coordinator_host: str
    generation: int
    protocol: str
    thread: str                       # the thread the envelope names
    streams_client: str = ""          # <application.id>-<process uuid>
    stream_thread: str = ""           # <streams_client>-StreamThread-<n>
    masked: set[str] = field(default_factory=set)   # which identifying fields are masks
    glued: bool = False               # a masked value ate the space before it ("group***")


@dataclass(frozen=True)
class Printed:
    text: str
    stated: dict[str, object]         # events columns (and a few attrs) the printed value states
    masked: bool = False


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _group(rng: random.Random, component: str) -> str:
    if component == "connect":
        return rng.choice(("connect-cluster", "connect-8.1.0", "bdkfkwx006-mm2", "kafka-connect.prod",
                           f"connect-{rng.randint(1, 99)}"))
    if component == "streams":
        return rng.choice(("otter-app", "word-count.v2", "kafka-streams-truck-filter", "stream-soak-test",
                           "billing_aggregator-prod"))
    return rng.choice(("orders", "payments-service.v2", "com.acme.billing-consumer", "duer_gtm_out-sync-order",
                       _uuid(rng), "agentsGroup-tpc-nca-ofa", "cg1", f"group-{rng.randint(1, 999)}"))


def identity(rng: random.Random, component: str, version: str, mask_rate: float = 0.1,
             static: bool | None = None) -> Identity:
    """A draw of who writes a line; ``static``: the member has a group.instance.id (None: either)."""
    group = _group(rng, component)
    n = rng.randint(1, 200)
    instance = rng.choice((None, None, None, f"{group}-{rng.randint(0, 9)}",
                           f"pod-{rng.getrandbits(32):08x}", "worker.host-3"))
    if static is not None:
        instance = rng.choice((f"{group}-{rng.randint(0, 9)}", f"pod-{rng.getrandbits(32):08x}")) if static else None
    v = version_key(version)
    streams_client = stream_thread = ""
    if component == "streams":
        streams_client = f"{group}-{_uuid(rng)}"
        stream_thread = f"{streams_client}-StreamThread-{rng.randint(1, 16)}"
        client = f"{stream_thread}-consumer"
        member = f"{client}-{_uuid(rng)}"
        thread = stream_thread
    elif component == "connect":
        worker = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}:8083"
        client = rng.choice((f"connect-{n}" if v < (3, 9) else f"connect-{worker}", "connect-adminclient-producer"))
        member = f"{client}-{_uuid(rng)}"
        thread = rng.choice((f"DistributedHerder-{client}-{rng.randint(1, 3)}", f"KafkaBasedLog Work Thread - {group}-configs"))
    else:
        # client.id takes any character (ConsumerConfig has no validator on it): spaces, commas, quotes, pipes.
        client = rng.choice((f"consumer-{group}-{n}", f"consumer-{n}", "avro-producer", f"{group}.worker-{n}",
                             f"{group} app, 'eu' | \"{n}\""))
        if v >= (3, 7) and rng.random() < 0.4:
            member = javafmt.kafka_uuid(rng.getrandbits(128))      # a KIP-848 member id
        else:
            member = f"{client}-{_uuid(rng)}"
        thread = rng.choice(("main", f"kafka-coordinator-heartbeat-thread | {group}",
                             "org.springframework.kafka.KafkaListenerEndpointContainer#0-0-C-1",
                             f"consumer_network_thread | {client}", "executor-Heartbeat",
                             f"data-plane-kafka-request-handler-{rng.randint(0, 7)}", "group-coordinator-event-processor-1"))
    if component == "broker":
        # The broker hears from every client: a member id may come from librdkafka, kafka-go, ...
        member = rng.choice((member, member, f"rdkafka-{_uuid(rng)}", f"kafka-python-2.0.2-{_uuid(rng)}",
                             f"main@localhostname (github.com/segmentio/kafka-go)-{_uuid(rng)}",
                             javafmt.kafka_uuid(rng.getrandbits(128))))
    ident = Identity(
        component=component, version=version, group=group, client=client, member=member, instance=instance,
        client_host=f"/10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        broker_id=rng.randint(0, 5),
        coordinator_host=rng.choice(("broker-1", "kafka-0.kafka-headless.default.svc.cluster.local", "172.16.0.190",
                                     "b-2.msk-prod.abc123.c4.kafka.eu-west-1.amazonaws.com")),
        generation=int(10 ** rng.uniform(0, 5)), protocol=rng.choice(PROTOCOLS), thread=thread,
        streams_client=streams_client, stream_thread=stream_thread)
    if rng.random() < mask_rate:
        # A Streams application id and client id are in every thread name: they are masked with it, not alone.
        maskable = ("member", "instance") if component == "streams" else ("group", "member", "client", "instance")
        ident.masked = set(rng.sample(maskable, rng.randint(1, min(3, len(maskable)))))
        ident.glued = rng.random() < 0.5
        mask = rng.choice(MASKS)
        for name in ident.masked:
            if name == "instance" and ident.instance is None:
                continue
            setattr(ident, name, mask if name != "member" else rng.choice((mask, f"consumer-{mask}-1-{_uuid(rng)}")))
        if "member" in ident.masked and not ident.member.startswith(MASKS):
            ident.masked.discard("member")
    return ident


# ---------------------------------------------------------------------------------------------
# Types: "Map<String, Set<TopicPartition>>", "Option[String]", "byte[]" as a small tree.

@dataclass(frozen=True)
class TypeRef:
    name: str
    args: tuple["TypeRef", ...] = ()
    scala: bool = False
    array: bool = False


@lru_cache(maxsize=4096)
def parse_type(text: str) -> TypeRef:
    text = text.strip()
    if text.endswith("[]"):
        inner = parse_type(text[:-2])
        return TypeRef(inner.name, inner.args, inner.scala, True)
    m = regex.match(r"^([\w.]+)\s*([<\[])(.*)[>\]]$", text)
    if not m:
        return TypeRef(text)
    name, bracket, inner = m.group(1), m.group(2), m.group(3)
    return TypeRef(name, tuple(parse_type(a) for a in _split_args(inner)), bracket == "[")


def _split_args(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<[":
            depth += 1
        elif c in ">]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [a for a in (s.strip() for s in out) if a]


# ---------------------------------------------------------------------------------------------
# Printing.

@dataclass
class Slotted:
    """What the printer knows of one placeholder."""

    field: str | None
    kind: str
    fixed: str | None        # a value the parameter table pins (constants, ternaries)
    expression: str


class Printer:
    def __init__(self, rng: random.Random, row: Row, ident: Identity):
        self.rng, self.row, self.ident = rng, row, ident
        self.scala = row.file.endswith(".scala")
        # Another placeholder states the member the line is about: a Generation's member id is not it.
        self.member_elsewhere = False

    # -- leaves -------------------------------------------------------------------------------
    def _member(self) -> str:
        return self.ident.member if self.rng.random() < 0.8 else f"{self.ident.client}-{_uuid(self.rng)}"

    def _partition(self) -> str:
        return javafmt.topic_partition(self.rng.choice(TOPICS), self.rng.randint(0, 63))

    def _task(self) -> str:
        return f"{self.rng.randint(0, 9)}_{self.rng.randint(0, 31)}"

    def _int(self, slot: Slotted) -> int:
        if slot.field == "generation":
            return self.ident.generation
        if slot.kind == "count":
            return self.rng.randint(0, 12)
        if slot.kind == "ms":
            return self.rng.choice((0, 3000, 10000, 45000, 300000, self.rng.randint(1, 600000)))
        if regex.search(r"(?i)epoch", slot.expression):
            return self.rng.randint(0, 300)
        return self.rng.randint(0, 5000)

    def _error_text(self) -> str:
        return javafmt.error(self.rng.choice(ERROR_NAMES)).message

    def _reason(self) -> str:
        # A reason the inventory spells out in a composed row is that row's line (a pattern of its
        # own may read it, as another event): a bare template gets the other reasons.
        composed = _composed_reasons().get((self.row.component, self.row.version), set())
        choices = [r for r in _reasons(self.row.component, self.row.version) if r not in composed]
        if not choices:
            return "the member left the group"
        template = self.rng.choice(choices)
        values = []
        for _ in range(template.count("{}")):
            values.append(self.rng.choice((self._member(), self.ident.group, self.rng.choice(CLIENT_REASONS)
                                           .replace("{member}", self.ident.member))))
        from .render import fill

        return fill(template, values)

    def string(self, slot: Slotted) -> Printed:
        """A String (or anything printed as a plain token) that holds what the slot's kind says."""
        ident, kind, name = self.ident, slot.kind, slot.field
        if slot.fixed is not None:
            return Printed(slot.fixed, _scalar(name, slot.fixed, kind))
        if kind == "topic":
            return Printed(self.rng.choice(TOPICS), {})
        if kind == "group":
            return Printed(ident.group, {name: ident.group} if name else {}, "group" in ident.masked)
        if kind == "id":
            if name is None:
                text = self.rng.choice((f"{ident.client}-{_uuid(self.rng)}", javafmt.kafka_uuid(self.rng.getrandbits(128)),
                                        f"rdkafka-{_uuid(self.rng)}"))
                return Printed(text, {})
            text = self._member() if name != "leader" else ident.member
            return Printed(text, {name: text} if name else {}, text.startswith(MASKS))
        if kind == "instance":
            if ident.instance is None:
                # A dynamic member: Java prints a null String as "null"; ".orElse(X)" prints X.
                fallback = regex.search(r'orElse\("([^"]*)"\)', slot.expression)
                text = fallback.group(1) if fallback else "null"
                return Printed(text, {name: None} if name == "instance" else {})
            return Printed(ident.instance, {name: ident.instance} if name else {}, ident.instance.startswith(MASKS))
        if name == "client":
            return Printed(ident.client, {name: ident.client}, "client" in ident.masked)
        if name == "thread":
            text = ident.stream_thread or ident.thread
            return Printed(text, {name: text})
        if kind == "text":
            text = self._reason()
            return Printed(text, {name: text.strip()} if name and text.strip() else {})
        if kind == "error":
            text = self._error_text()
            return Printed(text, {name: text} if name else {})
        if kind == "joined":
            items = [self._partition() for _ in range(self.rng.randint(1, 4))] if name == "partitions" else \
                [self._task() for _ in range(self.rng.randint(1, 4))]
            return Printed(", ".join(items), {name: items} if name else {})
        if kind == "word":
            text = ident.protocol if name == "protocol" else self.rng.choice(WORDS)
            return Printed(text, {name: text} if name else {})
        if kind == "time":
            if regex.search(r"toLogDateTimeFormat", slot.expression):
                text = javafmt.log_date_time(1714571412345 + self.rng.randint(0, 10**8), self.rng.choice((0, 120, -300)))
            else:
                text = str(1714571412345 + self.rng.randint(0, 10**8))
            return Printed(text, {name: text} if name else {})
        if kind == "statuses":
            return Printed(KINDS["statuses"][0], {})     # read into attrs (the coverage checks columns)
        if kind == "state":
            return self.enum(slot)
        if kind in ("int", "count", "ms"):
            return self.number(slot)
        if kind == "partition":
            return self.object("TopicPartition", slot)
        if kind == "task":
            return self.object("TaskId", slot)
        if kind == "list":
            return self.print(parse_type("Set<TopicPartition>"), slot)
        if kind == "tasks":
            return self.print(parse_type("Set<TaskId>"), slot)
        if kind == "node":
            return self.object("Node", slot)
        if kind == "generation":
            return self.object("Generation", slot)
        return Printed(self._any_text(slot.expression), {})

    def _any_text(self, expression: str) -> str:
        """A plain argument of no known kind: what its expression says it names."""
        rng = self.rng
        if regex.search(r"(?i)topic", expression):
            return rng.choice(TOPICS)
        if regex.search(r"(?i)member|consumer", expression):
            return f"{self.ident.client}-{_uuid(rng)}"
        if regex.search(r"(?i)connector|conn", expression):
            return rng.choice(("jdbc-sink", "MirrorSourceConnector", "s3-sink"))
        if regex.search(r"(?i)listener|class", expression):
            return rng.choice(("com.acme.orders.RebalanceListener", "org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer$ListenerConsumerRebalanceListener"))
        if regex.search(r"(?i)path", expression):
            return javafmt.java_collection([f"{self.ident.client}-{_uuid(rng)}" for _ in range(2)])
        return rng.choice(("none", "2.3", "ACTIVE", "sticky", "__consumer_offsets", "orders-processor"))

    def number(self, slot: Slotted) -> Printed:
        if slot.fixed is not None:
            return Printed(slot.fixed, _scalar(slot.field, slot.fixed, slot.kind))
        if slot.kind == "any":
            return Printed(str(self.rng.choice((0, 1, 3, 12, 45000, self.rng.randint(0, 10**6)))), {})
        if slot.kind not in ("int", "count", "ms", "generation") and slot.field not in ("generation", "delay_ms"):
            return self.string(slot)
        value = self._int(slot)
        return Printed(str(value), {slot.field: value} if slot.field else {})

    def enum(self, slot: Slotted) -> Printed:
        if slot.fixed is not None:
            return Printed(slot.fixed, {slot.field: slot.fixed} if slot.field else {})
        component = self.row.component
        if component == "broker" and regex.search(r"MemberState|updatedMember\.state", slot.expression):
            text = self.rng.choice(("STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS"))
        elif component == "broker" and regex.search(r"context\.state|CoordinatorState", slot.expression):
            text = self.rng.choice(("INITIAL", "LOADING", "ACTIVE", "FAILED", "CLOSED"))
        elif component == "broker" and regex.search(r"group\.type", slot.expression):
            text = self.rng.choice(("classic", "consumer", "streams"))
        else:
            text = self.rng.choice(STATES[component])
        return Printed(text, {slot.field: text} if slot.field else {})

    # -- objects ------------------------------------------------------------------------------
    def object(self, name: str, slot: Slotted) -> Printed:
        ident, rng = self.ident, self.rng
        short = name.rsplit(".", 1)[-1]
        if short in ("TopicPartition",):
            text = self._partition()
            return Printed(text, {slot.field: [text]} if slot.field == "partitions" else {})
        if short == "TopicIdPartition":
            text = f"{javafmt.kafka_uuid(rng.getrandbits(128))}:{self._partition()}"
            return Printed(text, {})
        if short == "TaskId":
            text = self._task()
            return Printed(text, {slot.field: [text]} if slot.field == "tasks" else {})
        if short == "ConnectorTaskId":
            return Printed(f"{rng.choice(('jdbc-sink', 'MirrorSourceConnector', 's3-sink'))}-{rng.randint(0, 9)}", {})
        if short == "Uuid":
            return Printed(javafmt.kafka_uuid(rng.getrandbits(128)), {})
        if short in ("UUID", "ProcessId"):
            return Printed(_uuid(rng), {})
        if short == "Node":
            node = javafmt.coordinator_node(ident.broker_id, ident.coordinator_host) if rng.random() < 0.7 else \
                javafmt.Node(ident.coordinator_host, rng.choice((9092, 9093, 29092)), ident.broker_id)
            return Printed(str(node), {})
        if short == "Coordinator":
            return Printed(str(javafmt.FindCoordinatorCoordinator(ident.group, ident.broker_id, ident.coordinator_host,
                                                                   rng.choice((9092, 29092)))), {})
        if short == "Generation":
            if slot.field == "generation":
                gen = javafmt.Generation(ident.generation, ident.member, ident.protocol)
                if self.member_elsewhere:
                    return Printed(str(gen), {"generation": gen.generation_id, "protocol": gen.protocol})
                return Printed(str(gen), {"generation": gen.generation_id, "member": gen.member_id,
                                          "protocol": gen.protocol}, "member" in ident.masked)
            return Printed(str(javafmt.Generation(rng.randint(1, 9999), self._member(), ident.protocol)), {})
        if short in ("MemberMetadata", "ClassicGroupMember", "GenericGroupMember"):
            return self.member_object(short, slot)
        if short == "Errors":
            err = javafmt.error(rng.choice(ERROR_NAMES))
            return Printed(err.name, {slot.field: err.name} if slot.field == "error" else {})
        if short.endswith(("Exception", "Error")) or short in ("Throwable", "RuntimeException"):
            err = javafmt.error(rng.choice(ERROR_NAMES))
            exception = err.exception_string() if short in ("Throwable", "Exception", "RuntimeException",
                                                             "KafkaException") else javafmt.throwable(
                f"org.apache.kafka.common.errors.{short}", err.message)
            return Printed(exception, {slot.field: exception} if slot.field == "error" else {})
        if short == "AssignmentString":
            # GroupMetadataManager's assignmentToString: "[<topic id>-<partition>, ...]"
            topic = javafmt.kafka_uuid(rng.getrandbits(128))
            items = [f"{topic}-{p}" for p in range(rng.choice((0, 1, 3, 6)))]
            return Printed("[" + ", ".join(items) + "]", {slot.field: items} if slot.field == "partitions" else {})
        if short == "MemberAssignment":
            topic = javafmt.kafka_uuid(rng.getrandbits(128))
            return Printed(f"MemberAssignment(partitions={{{topic}=[{', '.join(str(p) for p in range(rng.randint(0, 4)))}]}})", {})
        if short == "TasksTuple":
            # A streams group member's tasks; its active tasks with their assignment epoch ("0-1@4"), as 4.2+ print them.
            parts, active = [], []
            for i in range(3):
                sub = rng.randint(0, 3)
                tasks = [f"{sub}-{p}" for p in range(rng.randint(0, 3))]
                if i == 0:
                    active = tasks
                parts.append("[" + ", ".join(f"{t}@{sub + 1}" if i == 0 else t for t in tasks) + "]")
            return Printed(f"(active={parts[0]}, standby={parts[1]}, warmup={parts[2]})",
                           {slot.field: active} if slot.field == "tasks" else {})
        if short == "ConnectorsAndTasks":
            connector = rng.choice(("jdbc-sink", "MirrorSourceConnector", "s3-sink"))
            tasks = [f"{connector}-{i}" for i in range(rng.randint(0, 3))]
            return Printed(f"{{ connectorIds=[{connector}], taskIds={javafmt.java_collection(tasks)}}}", {})
        if short == "OffsetAndMetadata":
            return Printed(str(javafmt.OffsetAndMetadata(rng.randint(0, 10**6), rng.choice((0, 3, None)))), {})
        if short in ("MemberState", "State", "GroupState", "ClassicGroupState", "StreamThread.State"):
            return self.enum(slot)
        if short == "Pattern":
            return Printed(rng.choice(("orders-.*", "customer\\..*", ".*-events")), {})
        if short == "boolean" or short == "Boolean":
            return Printed(rng.choice(("true", "false")), {})
        if short in INT_TYPES:
            return self.number(slot)
        if short in ("String", "CharSequence", "Object", "enum"):
            return self.string(slot) if short != "enum" else self.enum(slot)
        if slot.kind == "any" and short[:1].isupper():
            # An object whose toString the renderer does not spell out: Kafka's classes print
            # "Name(field=value, ...)" (generated request data) or "Name{field=value}".
            return Printed(f"{short}(errorCode=0, id={rng.randint(0, 99)}, name='{rng.choice(TOPICS)}')", {})
        return self.string(slot)

    def member_object(self, short: str, slot: Slotted) -> Printed:
        ident, rng = self.ident, self.rng
        member = self._member()
        instance = ident.instance
        protocols = tuple(rng.sample(PROTOCOLS, rng.randint(1, 2)))
        session, rebalance = rng.choice((10000, 45000, 30000)), rng.choice((300000, 60000, 600000))
        if short == "MemberMetadata":
            obj = javafmt.MemberMetadata(member, instance, ident.client, ident.client_host, session, rebalance,
                                         protocols, trailing_comma=version_key(self.row.version) < (3, 0))
        else:
            obj = javafmt.ClassicGroupMember(member, instance, ident.client, ident.client_host, rebalance, session,
                                             "consumer", protocols, class_name=short)
        stated: dict[str, object] = {"member": member, "client": ident.client, "client_host": ident.client_host,
                                     "instance": instance}
        if slot.field not in ("member", None):
            stated = {}
        return Printed(str(obj), stated, bool(ident.masked & {"member", "client", "instance"}))

    # -- containers ---------------------------------------------------------------------------
    def print(self, t: TypeRef, slot: Slotted) -> Printed:
        rng = self.rng
        if t.array and t.name in ("byte", "Byte"):
            return Printed(f"[B@{rng.getrandbits(28):x}", {})
        if t.array:
            return Printed(f"[L{t.name};@{rng.getrandbits(28):x}", {})
        if t.name in ("Optional", "Option", "OptionalInt", "OptionalLong") or (t.scala and t.name == "Some"):
            inner_type = t.args[0] if t.args else TypeRef("int")
            present = rng.random() < 0.6 or (slot.field == "instance" and self.ident.instance is not None)
            if slot.field == "instance" and self.ident.instance is None:
                present = False
            if not present:
                empty = {"Option": "None", "Optional": "Optional.empty"}.get(t.name, f"{t.name}.empty")
                return Printed(empty, {"instance": None} if slot.field == "instance" else {})
            inner = self.print(inner_type, slot)
            if t.name == "Option":
                return Printed(f"Some({inner.text})", inner.stated, inner.masked)
            return Printed(f"{t.name}[{inner.text}]", inner.stated, inner.masked)
        element_kind = _element_kind(slot)
        # Members of a set are distinct members: fresh ids, not the one the line is about.
        element_slot = Slotted(None if element_kind == "id" else slot.field, element_kind, None, slot.expression)
        if t.args and (t.name in JAVA_COLLECTIONS or (t.scala and (t.name in SCALA_SETS or t.name in SCALA_SEQS))):
            items = [self.print(t.args[0], element_slot) for _ in range(rng.choice((0, 1, 2, 3, 6)))]
            texts = [i.text for i in items]
            if t.scala:
                text = javafmt.scala_set(texts) if t.name in SCALA_SETS else "List(" + ", ".join(texts) + ")"
            else:
                text = javafmt.java_collection(texts)
            stated = {}
            if slot.field in ("partitions", "tasks"):
                stated = {slot.field: [x for i in items for x in i.stated.get(slot.field, [i.text])]}
            return Printed(text, stated)
        if len(t.args) == 2 and (t.name in JAVA_MAPS or (t.scala and t.name in SCALA_MAPS)):
            # Keys of String maps: topics where the expression is about topics, else member or worker ids.
            key_kind = "topic" if regex.search(r"(?i)topic|partition", slot.expression) else "id"
            key_slot = Slotted(None, key_kind, None, slot.expression)
            value_slot = Slotted(None, "int" if t.args[1].name in INT_TYPES else element_slot.kind, None,
                                 slot.expression)
            entries = [(self.print(t.args[0], key_slot).text, self.print(t.args[1], value_slot).text)
                       for _ in range(rng.choice((0, 1, 2)))]
            if t.scala:
                return Printed("Map(" + ", ".join(f"{k} -> {v}" for k, v in entries) + ")", {})
            return Printed("{" + ", ".join(f"{k}={v}" for k, v in entries) + "}", {})
        return self.object(t.name, slot)


def _element_kind(slot: Slotted) -> str:
    if slot.field == "partitions" or slot.kind in ("list", "partition", "joined"):
        return "partition"
    if slot.field == "tasks" or slot.kind in ("tasks", "task"):
        return "task"
    if slot.kind == "any" and regex.search(r"(?i)member", slot.expression):
        return "id"          # sets of member ids (pendingSyncMembers, notYetRejoinedMembers.keySet)
    return slot.kind


def _scalar(name: str | None, text: str, kind: str) -> dict[str, object]:
    if not name or not text.strip():
        return {}
    if kind in ("int", "count", "ms") or name in ("generation", "members", "nodes", "consumers", "delay_ms"):
        try:
            return {name: int(text)}
        except ValueError:
            return {}
    return {name: text.strip()}


@lru_cache(maxsize=1)
def _all_reasons() -> dict[tuple[str, str], list[str]]:
    path = default_path().with_name("reasons.jsonl")
    found: dict[tuple[str, str], list[str]] = {}
    if not path.is_file():
        return found
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                r = json.loads(line)
                found.setdefault((r["component"], r["version"]), []).append(r["reason_template"])
    return found


@lru_cache(maxsize=1)
def _composed_reasons() -> dict[tuple[str, str], set[str]]:
    from .inventory import load_rows

    found: dict[tuple[str, str], set[str]] = {}
    try:
        rows = load_rows()
    except OSError:
        return found
    for row in rows:
        if row.kind == "composed" and row.base_template and row.reason_template is not None:
            found.setdefault((row.component, row.version), set()).add(row.reason_template)
    return found


def _reasons(component: str, version: str) -> list[str]:
    return _all_reasons().get((component, version), [])

