"""How Java and Scala print the objects Kafka passes to its log calls (their ``toString``).

Kafka's templates (``patterns/kafka/templates.jsonl``) fill each ``{}`` with a source expression; when
that expression is an object, the line holds its ``toString``, not a bare token. The renderer of
the pack coverage and the incident simulator both print arguments through this module, so what
they write is what a broker or client writes. Formats read from apache/kafka:

* ``Generation{generationId=5, memberId='consumer-g-1-<uuid>', protocol='range'}``
  (AbstractCoordinator.Generation, clients 2.4+)
* ``broker-1:9092 (id: 2147483646 rack: null)`` (common.Node; a coordinator's id is
  ``Integer.MAX_VALUE - brokerId``)
* ``MemberMetadata(memberId=..., groupInstanceId=None, clientId=..., clientHost=/10.0.0.7,
  sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range))``
  (the Scala coordinator's MemberMetadata, brokers 2.4-4.0; 2.x ends ``List(range), )``) and the
  Java coordinator's ``ClassicGroupMember(memberId='...', groupInstanceId='', ...)`` (3.9+;
  ``GenericGroupMember`` in 3.6)
* ``Coordinator(key='g', nodeId=1, host='kafka1', port=9092, errorCode=0, errorMessage='')``
  (FindCoordinatorResponseData.Coordinator, the 3.6-3.9 consumer's coordinator)
* ``Utils.toLogDateTimeFormat``: ``2024-05-01 13:50:12,345 +02:00`` (``Z`` in UTC)
* Scala ``Some(x)`` / ``None``, ``List(a, b)``, ``Set(a, b)``, ``Map(k -> v)``; Java
  ``Optional[x]`` / ``Optional.empty``, ``[a, b]`` collections and ``{k=v}`` maps;
  ``topic-3`` TopicPartitions; errors and exceptions (``java_errors.toml``, from Errors.java).
"""

from __future__ import annotations

import base64
import uuid as _uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from ..core.toml import load_toml

INT_MAX = 2**31 - 1
ERRORS_PACKAGE = "org.apache.kafka.common.errors"


def java(value: object) -> str:
    """``String.valueOf(value)`` for the Python stand-ins used here (None prints as ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, set, frozenset)):
        return java_collection(value)
    if isinstance(value, Mapping):
        return java_map(value)
    return str(value)


def scala(value: object) -> str:
    """Scala's ``toString`` for the Python stand-ins (an absent Option is ``None``)."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return scala_list(value)
    if isinstance(value, (set, frozenset)):
        return scala_set(value)
    if isinstance(value, Mapping):
        return scala_map(value)
    return str(value)


def java_collection(items: Iterable[object]) -> str:
    return "[" + ", ".join(java(i) for i in items) + "]"


def java_map(entries: Mapping[object, object]) -> str:
    return "{" + ", ".join(f"{java(k)}={java(v)}" for k, v in entries.items()) + "}"


def java_optional(value: object) -> str:
    return "Optional.empty" if value is None else f"Optional[{java(value)}]"


def scala_option(value: object) -> str:
    return "None" if value is None else f"Some({scala(value)})"


def scala_list(items: Iterable[object]) -> str:
    return "List(" + ", ".join(scala(i) for i in items) + ")"


def scala_set(items: Iterable[object]) -> str:
    """An immutable Scala 2.13 set: Set1-Set4 print ``Set(...)``, larger ones are ``HashSet(...)``."""
    items = list(items)
    name = "Set" if len(items) <= 4 else "HashSet"
    return name + "(" + ", ".join(scala(i) for i in items) + ")"


def scala_map(entries: Mapping[object, object]) -> str:
    return "Map(" + ", ".join(f"{scala(k)} -> {scala(v)}" for k, v in entries.items()) + ")"


def topic_partition(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def partitions(topic: str, numbers: Iterable[int]) -> list[str]:
    return [topic_partition(topic, n) for n in numbers]


@dataclass(frozen=True)
class Generation:
    """The client's AbstractCoordinator.Generation (``Generation.NO_GENERATION`` is -1, '', null)."""

    generation_id: int
    member_id: str
    protocol: str | None

    def __str__(self) -> str:
        return (f"Generation{{generationId={self.generation_id}, memberId='{self.member_id}', "
                f"protocol='{java(self.protocol)}'}}")


NO_GENERATION = Generation(-1, "", None)


@dataclass(frozen=True)
class Node:
    """common.Node as clients print their coordinator and brokers."""

    host: str
    port: int
    id: int
    rack: str | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id: {self.id} rack: {java(self.rack)})"


def coordinator_node(broker_id: int, host: str, port: int = 9092) -> Node:
    """The coordinator as a client knows it: a node whose id is Integer.MAX_VALUE - brokerId."""
    return Node(host, port, INT_MAX - broker_id)


@dataclass(frozen=True)
class MemberMetadata:
    """The Scala GroupCoordinator's MemberMetadata (brokers 2.4-4.0)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str             # as the broker has it: "/10.0.0.7"
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[str, ...] = ("range",)

    trailing_comma: bool = False  # 2.4-2.8 printed "supportedProtocols=List(range), )"

    def __str__(self) -> str:
        return (f"MemberMetadata(memberId={self.member_id}, groupInstanceId={scala_option(self.group_instance_id)}, "
                f"clientId={self.client_id}, clientHost={self.client_host}, "
                f"sessionTimeoutMs={self.session_timeout_ms}, rebalanceTimeoutMs={self.rebalance_timeout_ms}, "
                f"supportedProtocols={scala_list(self.protocols)}{', ' if self.trailing_comma else ''})")


@dataclass(frozen=True)
class ClassicGroupMember:
    """The Java group coordinator's member of a classic-protocol group: ClassicGroupMember (3.9+),
    GenericGroupMember in 3.6 (``class_name``), the same toString."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str             # "/10.0.0.7"
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[str, ...] = ("range",)
    class_name: str = "ClassicGroupMember"

    def __str__(self) -> str:
        return (f"{self.class_name}(memberId='{self.member_id}', groupInstanceId='{self.group_instance_id or ''}', "
                f"clientId='{self.client_id}', clientHost='{self.client_host}', "
                f"rebalanceTimeoutMs={self.rebalance_timeout_ms}, sessionTimeoutMs={self.session_timeout_ms}, "
                f"protocolType='{self.protocol_type}', supportedProtocols={java_collection(self.protocols)})")


@dataclass(frozen=True)
class FindCoordinatorCoordinator:
    """FindCoordinatorResponseData.Coordinator, a generated message class (its toString quotes strings)."""

    key: str
    node_id: int
    host: str
    port: int = 9092
    error_code: int = 0
    error_message: str | None = ""

    def __str__(self) -> str:
        message = "null" if self.error_message is None else f"'{self.error_message}'"
        return (f"Coordinator(key='{self.key}', nodeId={self.node_id}, host='{self.host}', port={self.port}, "
                f"errorCode={self.error_code}, errorMessage={message})")


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int | None = 0
    metadata: str = ""

    def __str__(self) -> str:
        epoch = "null" if self.leader_epoch is None else self.leader_epoch
        return f"OffsetAndMetadata{{offset={self.offset}, leaderEpoch={epoch}, metadata='{self.metadata}'}}"


def kafka_uuid(seed: int) -> str:
    """org.apache.kafka.common.Uuid as it prints: 16 bytes, URL-safe base64 without padding (22 characters)."""
    raw = _uuid.UUID(int=seed % (1 << 128)).bytes
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def log_date_time(epoch_ms: int, offset_minutes: int = 0) -> str:
    """Utils.toLogDateTimeFormat: ``yyyy-MM-dd HH:mm:ss,SSS XXX`` in the JVM's zone (XXX is ``Z`` at UTC)."""
    zone = timezone(timedelta(minutes=offset_minutes))
    ts = datetime.fromtimestamp(epoch_ms / 1000, zone)
    if offset_minutes == 0:
        suffix = "Z"
    else:
        sign = "+" if offset_minutes > 0 else "-"
        suffix = f"{sign}{abs(offset_minutes) // 60:02d}:{abs(offset_minutes) % 60:02d}"
    return f"{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d} {suffix}"


def throwable(class_name: str, message: str | None) -> str:
    """``Throwable.toString()``: the class name, then ': ' and the message when there is one."""
    return f"{class_name}: {message}" if message else class_name


@dataclass(frozen=True)
class KafkaError:
    """One entry of Errors.java: ``str()`` is the enum's name, as ``{}`` of an Errors prints."""

    name: str
    code: int
    exception: str
    message: str

    def __str__(self) -> str:
        return self.name

    @property
    def exception_class(self) -> str:
        return f"{ERRORS_PACKAGE}.{self.exception}"

    def exception_string(self, message: str | None = None) -> str:
        """``Throwable.toString()``: the class name, then ': ' and the message when there is one."""
        text = self.message if message is None else message
        return f"{self.exception_class}: {text}" if text else self.exception_class


@lru_cache(maxsize=1)
def _errors() -> dict[str, KafkaError]:
    data = load_toml(Path(__file__).with_name("java_errors.toml"))
    return {name: KafkaError(name, int(e["code"]), e["exception"], e["message"])
            for name, e in data["error"].items()}


def error(name: str) -> KafkaError:
    """A Kafka error by its Errors name (``REBALANCE_IN_PROGRESS``); KeyError when unknown."""
    return _errors()[name]


def client_host(address: str) -> str:
    """How the broker prints a member's address (an InetAddress: a leading slash)."""
    return address if address.startswith("/") else "/" + address
