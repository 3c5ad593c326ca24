"""State that spans records: the group of a client line that names only its handle.

A librdkafka line such as ``%4|...|MAXPOLL|rdkafka#consumer-1| ... leaving group`` names its
handle, not its group; kafka-python's ``Heartbeat session expired`` names neither. The handle's
other lines in the same file do (``Group "orders" changed state ...``): a consumer handle
belongs to one group for its life. So, once a file's events are all parsed, a client line
without a group takes the group of the nearest line of the same file and handle before it
that states one, else of the nearest one after it.

Resolved after parsing, per file and keyed by (source, client), from the events alone: the
answer is the same whatever the chunking or byte ranges of the read and in every engine. The
in-process engine holds a file's ranges and resolves them together. A Spark executor resolves a
file read whole on its own; for a file read in ranges it fills from earlier lines only
(``following=False``) and reports each handle's first and last stated group (``edges``), and the
driver fills what is left from the neighbouring ranges (``carried``), without a shuffle.
"""

from __future__ import annotations

from typing import Iterable


def needs_group(event: dict) -> bool:
    """A non-Java client line whose group is not stated."""
    return bool(event.get("library")) and not event.get("group")


def resolve(events: Iterable[dict], following: bool = True) -> int:
    """Fill ``group`` of client lines that lack it, in place; return how many were filled.

    ``following=False``: only from an earlier line (a range of a file: what its lines before the
    first stated group take is decided with the other ranges, see ``carried``).
    """
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
        nearest_after = None
        for i in range(len(rows) - 1, -1, -1):
            e = rows[i]
            if e.get("group"):
                nearest_after = e["group"]
                continue
            group = before[i] or (nearest_after if following else None)
            if group:
                fill(e, group)
                filled += 1
    return filled


def fill(event: dict, group: str) -> None:
    """Give a client line its handle's group, saying where it came from."""
    event["group"] = group
    attrs = dict(event.get("attrs") or {})
    attrs["group_from"] = "handle"
    event["attrs"] = attrs


def edges(events: Iterable[dict]) -> list[tuple[str | None, str | None, str | None]]:
    """(client, first stated group, last stated group) of each handle in one range's events."""
    found: dict[str | None, list] = {}
    for event in sorted((e for e in events if e.get("library")), key=lambda e: e.get("line") or 0):
        client = event.get("client")
        edge = found.setdefault(client, [None, None])
        if event.get("group"):
            edge[0] = edge[0] or event["group"]
            edge[1] = event["group"]
    return [(client, first, last) for client, (first, last) in found.items()]


def carried(ranges: list[list[tuple[str | None, str | None, str | None]]]) -> list[dict[str | None, str]]:
    """For one file's ranges in order (each range's ``edges``): per range, the group its handles'
    lines left unfilled by ``resolve(following=False)`` take: the last one stated in an earlier
    range, else the first one stated in this range, else the first one stated in a later range."""
    fills: list[dict[str | None, str]] = []
    last_before: dict[str | None, str] = {}
    for edge in ranges:
        fills.append({client: group for client, first, _ in edge
                      if (group := last_before.get(client) or first)})
        for client, _, last in edge:
            if last:
                last_before[client] = last
    first_after: dict[str | None, str] = {}
    for index in range(len(ranges) - 1, -1, -1):
        for client, _, _ in ranges[index]:
            if client not in fills[index] and client in first_after:
                fills[index][client] = first_after[client]
        for client, first, _ in ranges[index]:
            if first:
                first_after[client] = first
    return fills
