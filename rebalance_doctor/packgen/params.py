"""What a template placeholder holds, from the source expression that fills it.

One classification serves both sides of the coverage check: the renderer writes a realistic
value for each placeholder, and the pack generator captures it with a named group of the same
field. Rules live in ``params.toml`` (first match wins); the kinds below say how a value of
that sort is written and read.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import regex

from ..core.toml import load_toml

MEMBER = "consumer-orders-1-6b1f2e3a-9c4d-4e5f-8a7b-1c2d3e4f5a6b"
GENERATION_OBJECT = "Generation{generationId=42, memberId='" + MEMBER + "', protocol='range'}"
STATUSES = ("(3) Internal topics are missing: orders-counts-changelog; Creation failed: orders-counts-changelog (Unable "
            "to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 "
            "broker(s) are registered or some brokers have all their log directories cordoned.).")

# kind -> (rendered value, capturing sub-regex). Captures are lazy: the literal text that
# follows a placeholder in the template ends it.
KINDS: dict[str, tuple[str, str]] = {
    "group": ("orders", r"\S+?"),
    "id": (MEMBER, r"\S+?"),
    "instance": ("orders-static-1", r"\S+?"),
    "int": ("42", r"-?\d+"),
    "count": ("3", r"\d+"),
    "ms": ("3000", r"-?\d+"),
    "state": ("PreparingRebalance", r"\w+"),
    "word": ("range", r"\S+?"),
    "text": ("the member left the group", r".*?"),
    "error": ("The coordinator is not aware of this member.", r".*?"),
    "list": ("[orders-0, orders-1]", r"\[[^\]]*\]|\S*"),
    "joined": ("orders-0, orders-1", r".*?"),
    "partition": ("orders-3", r"\S+?"),
    "tasks": ("[0_0, 0_1]", r"\[[^\]]*\]|\{[^}]*\}|\S*"),
    "task": ("0_1", r"\S+?"),
    "node": ("broker-1:9092 (id: 2147483646 rack: null)", r".+?"),
    "generation": (GENERATION_OBJECT, r".+?"),
    "time": ("2024-05-01 13:50:12,345", r".+?"),
    "any": ("value-1", r".*?"),
    # A streams group member's heartbeat statuses ("(3) Internal topics are missing: T; Creation failed: T (R)."),
    # the rest of the line: read whole, and when the broker refused the topics' replication factor
    # (ReplicationControlManager: "The target replication factor of 3 cannot be reached because only 1 broker(s)
    # are registered"), the factor asked for and the brokers registered as fields of their own.
    "statuses": (STATUSES, r"(?=(?:[^\n]*?replication factor of (?P<replication_factor>\d+) cannot be reached "
                           r"because only (?P<brokers_registered>\d+) broker)?).*"),
}


@dataclass(frozen=True)
class Slot:
    field: str | None      # events column or attr name; None: not captured
    kind: str
    value: str             # the kind's one token (the value the table pins, when ``pinned``)
    pinned: bool = False   # the table gives the value itself (a constant, a ternary's literal)
    type: str | None = None  # the Java/Scala type at the log call (argtypes.py), when known
    expression: str = ""

    @property
    def capture(self) -> str:
        return KINDS[self.kind][1]


@lru_cache(maxsize=1)
def _rules() -> list[tuple["regex.Pattern[str]", str | None, str, str | None, str | None]]:
    data = load_toml(Path(__file__).with_name("params.toml"))
    rules = []
    for rule in data["rule"]:
        rules.append((regex.compile(rule["match"]), rule.get("field"), rule["kind"], rule.get("value"),
                      rule.get("component")))
    return rules


def classify(expression: str, component: str) -> Slot:
    """The slot of one placeholder, from its source expression (e.g. ``group.generationId``)."""
    text = " ".join(expression.split())
    for pattern, field, kind, value, only in _rules():
        if only not in (None, component):
            continue
        if pattern.search(text):
            if field == "@attr":
                field = attr_name(text)
            return Slot(field, kind, value if value is not None else _value(kind, component), value is not None,
                        expression=text)
    return Slot(attr_name(text), "any", KINDS["any"][0], expression=text)


def _value(kind: str, component: str) -> str:
    if kind == "group":
        return {"connect": "connect-cluster", "streams": "otter-app"}.get(component, "orders")
    if kind == "state" and component != "broker":
        return "RUNNING" if component == "streams" else "STABLE"
    return KINDS[kind][0]


def attr_name(expression: str) -> str:
    """A readable attr name from an expression: ``configState.offset()`` -> ``config_state_offset``."""
    words = regex.findall(r"[A-Za-z][A-Za-z0-9]*", expression)
    words = [w for w in words if w not in ("get", "this", "size", "toString", "stream", "map", "collect",
                                            "Collectors", "joining", "Utils", "join", "orElse", "data")]
    name = "_".join(words[-2:]) if words else "value"
    name = regex.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    return regex.sub(r"[^a-z0-9_]", "", name)[:40] or "value"
