"""State that spans records: the group of a client line that names only its handle.

A librdkafka line such as ``%4|...|MAXPOLL|rdkafka#consumer-1| ... leaving group`` names its
handle, not its group; kafka-python's ``Heartbeat session expired`` names neither. The handle's
other lines in the same file do (``Group "orders" changed state ...``): a consumer handle
belongs to one group for its life. So, once a file's events are all parsed, a client line
without a group takes the group of the nearest line of the same file and handle before it
that states one, else of the nearest one after it.

Resolved after parsing, keyed by (source, client), from the events alone: the answer is the
same whatever the chunking or byte ranges of the read and in every engine (the Spark engine
calls ``resolve`` on each file's rows, grouped by source).
"""

from __future__ import annotations

from typing import Iterable

# What the handle key is made of: the file, and the client/handle name the line states (None:
# a layout without one, such as node-rdkafka's event objects; the file is then one stream).
KEY_COLUMNS = ("source", "client")


def needs_group(event: dict) -> bool:
    """A non-Java client line whose group is not stated."""
    return bool(event.get("library")) and not event.get("group")


def resolve(events: Iterable[dict]) -> int:
    """Fill ``group`` of client lines that lack it, in place; return how many were filled."""
    by_key: dict[tuple, list[dict]] = {}
    for event in events:
        if event.get("library"):
            by_key.setdefault((event.get("source"), event.get("client")), []).append(event)
    filled = 0
    for rows in by_key.values():
        if not any(needs_group(e) for e in rows) or not any(e.get("group") for e in rows):
            continue
        rows.sort(key=lambda e: e.get("line") or 0)
        before: list[str | None] = []
        last = None
        for e in rows:
            before.append(last)
            if e.get("group"):
                last = e["group"]
        following = None
        for i in range(len(rows) - 1, -1, -1):
            e = rows[i]
            if e.get("group"):
                following = e["group"]
                continue
            group = before[i] or following
            if group:
                e["group"] = group
                attrs = dict(e.get("attrs") or {})
                attrs["group_from"] = "handle"
                e["attrs"] = attrs
                filled += 1
    return filled
