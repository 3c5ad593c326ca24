"""Render an inventory row into the record Kafka would write, and the fields it states.

Each placeholder is printed the way its Java/Scala type prints (``values.py``, types from
``argtypes.py``), with values drawn from a seed: the same seed writes the same record. The record
gets the row's log-context prefix, the row's logger and a shipped layout's envelope
(``envelope.py``: Kafka's own for the component by default, any layout on request), so the whole
reading path (layout, prefix, pattern) is exercised. The expected fields come from the values
written, not from any pattern. ``fill`` formats a template like SLF4J for callers that print their
own arguments (the incident simulator).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time

import regex

from . import envelope
from .argtypes import type_of
from .inventory import Row, version_key
from .params import Slot, classify
from .values import DEFAULT_TYPES, Identity, Printed, Printer, Slotted, identity, parse_type

BASE_DATE = "2024-05-01"
_PLACEHOLDER = regex.compile(r"\{\{\}\}|\{\}")


@dataclass
class Rendered:
    row: Row
    layout: str           # name of the shipped layout the line is written in
    line: str             # the whole record (may span lines)
    message: str          # prefix + rendered template
    fields: dict[str, object] = field(default_factory=dict)  # what the line states, by column/attr


def slots(row: Row) -> list[Slot]:
    """The row's placeholders in order, each with its type at the log call (argtypes.py); a field
    named twice keeps its column name once."""
    out: list[Slot] = []
    used: set[str] = set()
    for param in row.params:
        slot = classify(param, row.component)
        slot = replace(slot, type=type_of(row, param))
        name = slot.field
        if (name == "state" and "state" in used and "from_state" not in used
                and regex.search(r"from \{\}+ to \{\}", row.template)):
            # "from {} to {}": the first state named is where the transition starts
            for j, earlier in enumerate(out):
                if earlier.field == "state":
                    out[j] = replace(earlier, field="from_state")
            used.discard("state")
            used.add("from_state")
        if name is not None:
            if name in used:
                n = 2
                while f"{name}_{n}" in used:
                    n += 1
                name = f"{name}_{n}"
            used.add(name)
        out.append(replace(slot, field=name))
    return out


def template_parts(template: str) -> tuple[list[str], list[bool]]:
    """Literal pieces around the placeholders, and whether each placeholder is braced ({{}})."""
    pieces, braced = [], []
    last = 0
    for m in _PLACEHOLDER.finditer(template):
        pieces.append(template[last:m.start()])
        braced.append(m.group() == "{{}}")
        last = m.end()
    pieces.append(template[last:])
    return pieces, braced


def fill(template: str, values: "list[object] | tuple[object, ...]") -> str:
    """The template with its placeholders filled in order, as SLF4J formats them: ``str`` of each value
    (print objects through ``javafmt``), ``{{}}`` as ``{value}``, and a placeholder without a value
    left as ``{}``."""
    pieces, braced = template_parts(template)
    out = [pieces[0]]
    for i, piece in enumerate(pieces[1:]):
        if i < len(values):
            value = str(values[i])
            out.append("{" + value + "}" if braced[i] else value)
        else:
            out.append("{{}}" if braced[i] else "{}")
        out.append(piece)
    return "".join(out)


def prefix_of(row: Row, ident: Identity | None = None) -> tuple[str, dict[str, object]]:
    """The log-context prefix of the row as ``ident`` writes it, and the fields it states."""
    ident = ident or _fixed_identity(row)
    note = row.prefix_note
    broker = ident.broker_id
    if note.startswith("[GroupCoordinator <brokerId>]"):
        return f"[GroupCoordinator {broker}]: ", {}
    if note.startswith("[GroupCoordinator id=<nodeId> topic="):
        return f"[GroupCoordinator id={broker} topic=__consumer_offsets partition={_offsets_partition(ident)}] ", {}
    if note.startswith("[GroupCoordinator id=<nodeId>]"):
        return f"[GroupCoordinator id={broker}] ", {}
    if note.startswith("[GroupMetadataManager brokerId="):
        return f"[GroupMetadataManager brokerId={broker}] ", {}
    if note.startswith("[Worker clientId="):
        return f"[Worker clientId={ident.client}, groupId={ident.group}] ", {"client": ident.client, "group": ident.group}
    if note.startswith("[Consumer clientId="):
        fields: dict[str, object] = {"client": ident.client, "group": ident.group}
        head = "[Consumer "
        if ident.instance is not None and row.component == "consumer":
            head += f"instanceId={ident.instance}, "
            fields["instance"] = ident.instance
        if row.component == "streams":
            fields["thread"] = ident.stream_thread
        return f"{head}clientId={ident.client}, groupId={ident.group}] ", fields
    if note.startswith("[Heartbeat groupID="):
        return f"[Heartbeat groupID={ident.group}] ", {"group": ident.group}
    if note.startswith("stream-client"):
        return f"stream-client [{ident.streams_client}] ", {"client": ident.streams_client, "group": ident.group}
    if note.startswith("stream-thread [<main-consumer"):
        return f"stream-thread [{ident.client}] ", {"client": ident.client, "group": ident.group,
                                                    "thread": ident.stream_thread}
    if note.startswith("stream-thread"):
        return f"stream-thread [{ident.stream_thread}] ", {"client": ident.stream_thread, "group": ident.group,
                                                           "thread": ident.stream_thread}
    return "", {}


def _offsets_partition(ident: Identity) -> int:
    return sum(map(ord, ident.group)) % 50


def layout_for(row: Row) -> str:
    """The layout Kafka ships for the row's component (config/log4j*.properties|yaml)."""
    if row.component == "connect":
        return "kafka-connect"
    if row.component == "streams":
        return "streams-quickstart"
    return "kafka"


LAYOUTS = ("kafka", "kafka-connect", "kafka-thread", "strimzi", "kafka-plain", "plain-logger-colon",
           "log4j-iso-thread", "log4j-iso", "level-first", "bracket", "bracket-spaced", "spring-boot",
           "spring-boot-3", "logback-default", "quarkus", "streams-quickstart", "us-date-ampm", "logstash-json",
           "ecs-json", "log4j2-json", "quarkus-json", "log4j2-pattern")


def render(row: Row, seed: int | None = None, layout: str | None = None, mask_rate: float = 0.0) -> Rendered:
    """The record ``row`` writes. Without a seed: one fixed draw per row (the packs' samples and
    fixtures); with one: values drawn from it, masked at ``mask_rate``."""
    rng = random.Random(_row_seed(row) if seed is None else seed)
    ident = identity(rng, row.component, row.version, mask_rate=mask_rate, static=_static(row))
    printer = Printer(rng, row, ident)
    pieces, braced = template_parts(row.template)
    row_slots = slots(row)
    printer.member_elsewhere = any(s.field == "member" and s.kind != "generation" for s in row_slots)
    fields: dict[str, object] = {}
    text = [pieces[0]]
    stated = _composed_span(row, row_slots)
    for i, slot in enumerate(row_slots[:len(braced)]):
        printed = _print(printer, slot)
        value = printed.text
        if braced[i]:
            value = "{" + value + "}"
        if printed.masked and ident.glued and text[-1].endswith(" ") and value.startswith("*"):
            text[-1] = text[-1][:-1]      # the masking ate the space before the value
        text.append(value)
        text.append(pieces[i + 1])
        if stated is None or i < stated[0] or i >= stated[1]:
            for name, got in printed.stated.items():
                if name and (name not in fields or fields[name] is None):
                    fields[name] = got
    body = "".join(text)
    if stated is not None:
        fields["reason"] = _reason_text(row, text, stated)
    prefix, prefix_fields = prefix_of(row, ident)
    for name, value in prefix_fields.items():
        if fields.get(name) is None:
            fields[name] = value
    message = prefix + body
    layout = layout or layout_for(row)
    ts = datetime.combine(date.fromisoformat(BASE_DATE), time(13, 45, 12, 345000)) if seed is None else \
        datetime.combine(date.fromisoformat(BASE_DATE), time(rng.randint(0, 23), rng.randint(0, 59),
                                                             rng.randint(0, 59), rng.randint(0, 999) * 1000))
    thread = ident.stream_thread if row.component == "streams" and ident.stream_thread else ident.thread
    ndc = "[]" if layout == "streams-quickstart" and version_key(row.version) >= (4, 0, 0) else ""
    line = envelope.render(layout, ts, row.level, row.logger, message, thread, line=row.line, ndc=ndc)
    return Rendered(row, layout, line, message, {k: v for k, v in fields.items() if k})


def _row_seed(row: Row) -> int:
    return zlib.crc32(f"{row.component}|{row.version}|{row.cls}|{row.template}".encode())


def _fixed_identity(row: Row) -> Identity:
    return identity(random.Random(_row_seed(row)), row.component, row.version, mask_rate=0.0, static=_static(row))


def _static(row: Row) -> bool | None:
    """Whether the line is about a static member (its text says so), a dynamic one, or either."""
    if regex.search(r"(?i)static|instance.?id", row.template):
        return not regex.search(r"(?i)dynamic", row.template)
    return False if regex.search(r"(?i)dynamic", row.template) else None


def _print(printer: Printer, slot: Slot) -> Printed:
    sl = Slotted(slot.field, slot.kind, slot.value if slot.pinned else None, slot.expression)
    if slot.pinned:
        return printer.string(sl)
    return printer.print(parse_type(slot.type or DEFAULT_TYPES[slot.kind]), sl)


def _composed_span(row: Row, row_slots: list[Slot]) -> tuple[int, int] | None:
    """For a composed row: the placeholders the reason Kafka passed in fills (first, end)."""
    if row.kind != "composed" or not row.base_template or row.reason_template is None:
        return None
    before = len(template_parts(row.base_template)[1]) - 1
    inner = len(template_parts(row.reason_template)[1])
    return before, before + inner


def _reason_text(row: Row, text: list[str], span: tuple[int, int]) -> str:
    """The reason as written: what fills the base template's last placeholder. ``text`` alternates
    the literal pieces and the printed values (piece 0, value 0, piece 1, ...).

    The line states the whole reason (what the broker or client passed in); what the reason itself
    names (a member, a state) is part of that text, not asserted separately."""
    base_pieces, _ = template_parts(row.base_template)
    first, end = span
    head, tail = base_pieces[first], base_pieces[-1]
    if end == first:                         # a reason without placeholders of its own
        parts = [text[2 * first][len(head):]]
    else:
        parts = [text[2 * first][len(head):], *text[2 * first + 1:2 * end], text[2 * end]]
    if tail:
        parts[-1] = parts[-1][:-len(tail)] if parts[-1].endswith(tail) else parts[-1]
    return "".join(parts).strip()
