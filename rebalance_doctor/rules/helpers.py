"""Small readings of a timeline that several rules share."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from ..timeline.identity import short
from ..timeline.model import Evidence, Rebalance


def seconds(ms: int | float | None) -> str:
    if ms is None:
        return "?"
    s = ms / 1000
    if s < 120:
        return f"{s:.1f}s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def names(items, limit: int = 4) -> str:
    items = [short(i) for i in items]
    text = ", ".join(items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")


def said(event: dict, words: str) -> bool:
    """The line's reason (or, when the pattern did not capture one, its first line) says this."""
    if words in (event.get("reason") or ""):
        return True
    return words in (event.get("message") or "").split("\n", 1)[0]


def root_causes(rebalances: list[Rebalance]) -> Counter:
    """trigger kind -> how many of these rebalances it started ('unknown' when only symptoms)."""
    return Counter(r.trigger_kind or "unknown" for r in rebalances)


def trigger_evidence(rebalances: list[Rebalance], limit: int = 4) -> list[Evidence]:
    return [r.trigger_evidence for r in rebalances if r.trigger_evidence][:limit]


def span(rebalances: list[Rebalance]) -> tuple[datetime | None, datetime | None]:
    starts = [r.start for r in rebalances if r.start]
    ends = [r.end or r.start for r in rebalances if r.end or r.start]
    return (min(starts) if starts else None, max(ends) if ends else None)


KIND_WORDS = {
    "poll-timeout": "members exceeding max.poll.interval.ms",
    "heartbeat-expiration": "members removed on session timeout",
    "leave": "members leaving (LeaveGroup)",
    "new-member": "members joining",
    "rejoin": "members rejoining after they left",
    "metadata-change": "subscription or metadata changes",
    "followup": "followup rebalances scheduled by the Streams assignor",
    "enforced": "rebalances enforced by a member",
    "application-shutdown": "an application shutdown request",
    "missed-rebalance": "members fenced after missing a rebalance",
    "coordinator": "the coordinator (capacity, pending SyncGroups)",
    "sync-error": "the coordinator failing to store the assignment (SyncGroup errors)",
    "task-corruption": "corrupted Streams tasks",
    "thread-replacement": "StreamThreads dying and being replaced",
    "unknown": "no logged root cause (only members rejoining because the group was already rebalancing)",
    "other": "other reasons",
}


def episodes(group, kinds: tuple[str, ...]) -> list[tuple[Rebalance, object]]:
    """(rebalance, departure) for every departure of these kinds (classify/operations.py), once per
    member and rebalance: one poll timeout logged by the client, its LeaveGroup and the broker's
    removal are one episode."""
    from ..classify import of

    changes = of(group).changes
    out = []
    for r in group.rebalances:
        change = changes.get(r.index)
        if change is None:
            continue
        for d in change.departures:
            if d.kind in kinds:
                out.append((r, d))
    return out


def followers(group) -> dict[int, list[Rebalance]]:
    """rebalance index -> the rebalances that follow from it (a followup, the member's return)."""
    out: dict[int, list[Rebalance]] = {}
    for r in group.rebalances:
        if r.cause_index is not None:
            out.setdefault(r.cause_index, []).append(r)
    return out


def number(value) -> int | None:
    if value is None:
        return None
    text = str(value).strip()
    return int(text) if text.lstrip("-").isdigit() else None
