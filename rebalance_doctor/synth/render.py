"""Render an inventory row into the log line Kafka would write, and the fields it states.

The line gets the row's log-context prefix, the layout Kafka ships for its component and
version (``layouts.md``) and the row's logger, so the whole reading path (layout, prefix,
pattern) is exercised. The expected fields come from the values written, not from any pattern.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from .inventory import Row, version_key
from .params import MEMBER, Slot, classify

STREAMS_APP = "otter-app"
PROCESS = "225712b8-b54d-4043-a7e1-c489ee4f8fd5"
STREAMS_CLIENT = f"{STREAMS_APP}-{PROCESS}"
STREAMS_THREAD = f"{STREAMS_CLIENT}-StreamThread-1"
BASE_DATE = "2024-05-01"
TIME = "13:45:12,345"
_PLACEHOLDER = regex.compile(r"\{\{\}\}|\{\}")
_INT_COLUMNS = {"generation", "members", "nodes", "consumers", "delay_ms"}
_LIST_COLUMNS = {"partitions", "tasks"}


@dataclass
class Rendered:
    row: Row
    layout: str           # name of the shipped layout the line is written in
    line: str             # the whole record (may span lines)
    message: str          # prefix + rendered template
    fields: dict[str, object] = field(default_factory=dict)  # what the line states, by column/attr


def slots(row: Row) -> list[Slot]:
    """The row's placeholders in order; a field named twice keeps its column name once."""
    out: list[Slot] = []
    used: set[str] = set()
    for param in row.params:
        slot = classify(param, row.component)
        name = slot.field
        if (name == "state" and "state" in used and "from_state" not in used
                and regex.search(r"from \{\}+ to \{\}", row.template)):
            # "from {} to {}": the first state named is where the transition starts
            for j, earlier in enumerate(out):
                if earlier.field == "state":
                    out[j] = Slot("from_state", earlier.kind, earlier.value)
            used.discard("state")
            used.add("from_state")
        if name is not None:
            if name in used:
                n = 2
                while f"{name}_{n}" in used:
                    n += 1
                name = f"{name}_{n}"
            used.add(name)
        out.append(Slot(name, slot.kind, slot.value))
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


def prefix_of(row: Row) -> tuple[str, dict[str, str]]:
    """The log-context prefix of the row, and the fields it states."""
    note = row.prefix_note
    if note.startswith("[GroupCoordinator <brokerId>]"):
        return "[GroupCoordinator 1]: ", {}
    if note.startswith("[GroupCoordinator id=<nodeId> topic="):
        return "[GroupCoordinator id=1 topic=__consumer_offsets partition=17] ", {}
    if note.startswith("[GroupCoordinator id=<nodeId>]"):
        return "[GroupCoordinator id=1] ", {}
    if note.startswith("[GroupMetadataManager brokerId="):
        return "[GroupMetadataManager brokerId=1] ", {}
    if note.startswith("[Worker clientId=connect-<workerId>"):
        return "[Worker clientId=connect-10.0.0.5:8083, groupId=connect-cluster] ", \
            {"client": "connect-10.0.0.5:8083", "group": "connect-cluster"}
    if note.startswith("[Worker clientId="):
        return "[Worker clientId=connect-1, groupId=connect-cluster] ", {"client": "connect-1", "group": "connect-cluster"}
    if note.startswith("[Consumer clientId=<application.id>"):
        client = f"{STREAMS_THREAD}-consumer"
        return f"[Consumer clientId={client}, groupId={STREAMS_APP}] ", \
            {"client": client, "group": STREAMS_APP, "thread": STREAMS_THREAD}
    if note.startswith("[Consumer clientId="):
        return "[Consumer clientId=consumer-orders-1, groupId=orders] ", {"client": "consumer-orders-1", "group": "orders"}
    if note.startswith("[Heartbeat groupID="):
        return "[Heartbeat groupID=orders] ", {"group": "orders"}
    if note.startswith("stream-client"):
        return f"stream-client [{STREAMS_CLIENT}] ", {"client": STREAMS_CLIENT, "group": STREAMS_APP}
    if note.startswith("stream-thread [<main-consumer"):
        client = f"{STREAMS_THREAD}-consumer"
        return f"stream-thread [{client}] ", {"client": client, "group": STREAMS_APP, "thread": STREAMS_THREAD}
    if note.startswith("stream-thread"):
        return f"stream-thread [{STREAMS_THREAD}] ", {"client": STREAMS_THREAD, "group": STREAMS_APP, "thread": STREAMS_THREAD}
    return "", {}


def layout_for(row: Row) -> str:
    if row.component == "connect":
        return "kafka-connect"
    if row.component == "streams":
        return "streams-quickstart"
    return "kafka"


def render(row: Row) -> Rendered:
    pieces, braced = template_parts(row.template)
    row_slots = slots(row)
    fields: dict[str, object] = {}
    text = [pieces[0]]
    stated = _composed_reason(row, row_slots)
    for i, slot in enumerate(row_slots[:len(braced)]):
        value = slot.value
        if braced[i]:
            value = "{" + value + "}"
        text.append(value)
        text.append(pieces[i + 1])
        if slot.field and (stated is None or i < stated[0]):
            fields.update(_stated(slot))
    if stated is not None:
        fields["reason"] = stated[1]
    body = "".join(text)
    prefix, prefix_fields = prefix_of(row)
    for name, value in prefix_fields.items():
        fields.setdefault(name, value)
    message = prefix + body
    layout = layout_for(row)
    if layout == "kafka-connect":
        line = f"[{BASE_DATE} {TIME}] {row.level} {message} ({row.logger}:{row.line})"
    elif layout == "streams-quickstart":
        ndc = "[]" if version_key(row.version) >= (4, 0, 0) else ""
        line = f"{TIME} {row.level:<5} {row.logger:<60} {ndc} - {message}"
    else:
        line = f"[{BASE_DATE} {TIME}] {row.level} {message} ({row.logger})"
    return Rendered(row, layout, line, message, fields)


def _composed_reason(row: Row, row_slots: list[Slot]) -> tuple[int, str] | None:
    """For a composed row: how many placeholders precede the reason, and the reason as written.

    The line states the whole reason (what the broker or client passed in); what the reason
    itself names (a member, a state) is part of that text, not asserted separately."""
    if row.kind != "composed" or not row.base_template or row.reason_template is None:
        return None
    before = len(template_parts(row.base_template)[1]) - 1
    reason_pieces, reason_braced = template_parts(row.reason_template)
    inner = row_slots[before:before + len(reason_braced)]
    text = [reason_pieces[0]]
    for i, slot in enumerate(inner):
        text.append(slot.value)
        text.append(reason_pieces[i + 1])
    return before, "".join(text).strip()


def _stated(slot: Slot) -> dict[str, object]:
    name = slot.field
    if slot.kind == "generation":
        return {name: 42, **({"member": MEMBER, "protocol": "range"} if name == "generation" else {})}
    if name in _INT_COLUMNS:
        return {name: int(slot.value)}
    if name in _LIST_COLUMNS:
        inner = slot.value.strip().strip("[]{}")
        return {name: [p.strip() for p in inner.split(",") if p.strip()]}
    if slot.kind == "any" and not slot.value.strip():
        return {}
    return {name: slot.value.strip()}
