"""Clock skew between hosts, estimated from moments both sides log for the same generation.

When the coordinator stabilizes generation N it answers every pending JoinGroup at once, so the
broker's "Stabilized group ... generation N" and each member's "Successfully joined group with
generation N" are milliseconds apart in real time. A host whose joins consistently sit seconds
away from the reference's has a skewed clock. The reference is the coordinator's host when the
broker side is present, otherwise the client host with the most generations.

A member leaving is such a moment too: its "Member X sending LeaveGroup request" and the
coordinator's "Removing member X on LeaveGroup" (or "Member X has left group") are milliseconds
apart; they anchor a host whose member left without having joined within the logs.

A static member coming back within its session timeout gets the group's current generation
without any rebalance, possibly minutes after the coordinator stabilized it: its join is no
anchor. A static member's join anchors only when the coordinator asked it to rejoin ("group is
already rebalancing"), i.e. when it took part in a rebalance.
"""

from __future__ import annotations

from datetime import timedelta
from statistics import median
from ..core import eventnames as EV


_ASKED = ("already rebalancing", "group is rebalancing", "REBALANCE_IN_PROGRESS", "began another rebalance")
_NO_INSTANCE = (None, "", "null", "None", "Optional.empty")


def _leave_key(event: dict):
    """("leave", member id) of a LeaveGroup, whichever side logged it; None for other lines."""
    name, member = event["event"], event.get("member")
    if not member:
        return None
    if name in (EV.LEAVE_REQUEST, EV.MEMBER_LEAVE):
        return ("leave", member)
    if name == EV.REBALANCE_PREPARE and "on LeaveGroup" in (event.get("reason") or ""):
        return ("leave", member)
    return None


def _anchors(events: list[dict]) -> dict[str, dict]:
    """host -> moment -> first time that host saw it: ("gen", N) the generation starting, ("leave", member
    id) a member leaving."""
    anchors: dict[str, dict[int, float]] = {}
    asked: dict[tuple, bool] = {}          # (source, client) of a static member -> asked to rejoin since its last join
    for event in events:
        name = event["event"]
        if event.get("instance") not in _NO_INSTANCE and event.get("component") != "broker":
            key = (event.get("source"), event.get("client"))
            if name == EV.JOIN_REQUESTED:
                reason = event.get("reason") or ""
                asked[key] = asked.get(key, False) or any(words in reason for words in _ASKED)
            elif name == EV.JOIN_SUCCESS:
                if not asked.pop(key, False):
                    continue       # a static member's own return: no rebalance, no anchor
        if event["ts"] is None or not event.get("host"):
            continue
        if name in (EV.REBALANCE_STABILIZED, EV.JOIN_SUCCESS) and event.get("generation") is not None:
            key = ("gen", event["generation"])
        else:
            key = _leave_key(event)
            if key is None:
                continue
        per_host = anchors.setdefault(event["host"], {})
        per_host.setdefault(key, event["ts"].timestamp())
    return anchors


def estimate(events: list[dict]) -> tuple[dict[str, int], dict[str, int], str | None]:
    """(host -> offset ms relative to the reference, host -> pairs used, reference host)."""
    anchors = _anchors(events)
    if len(anchors) < 2:
        return {}, {}, next(iter(anchors), None)
    broker_hosts = {e["host"] for e in events if e["event"] == EV.REBALANCE_STABILIZED and e.get("host")} \
        or {e["host"] for e in events if e.get("component") == "broker" and e.get("host") in anchors}
    candidates = broker_hosts or set(anchors)
    reference = max(sorted(candidates), key=lambda h: len(anchors.get(h, {})))
    offsets, pairs = {}, {}
    for host, gens in anchors.items():
        if host == reference:
            continue
        diffs = [gens[g] - anchors[reference][g] for g in gens if g in anchors[reference]]
        if diffs:
            offsets[host] = int(round(median(diffs) * 1000))
            pairs[host] = len(diffs)
    return offsets, pairs, reference


def correct(events: list[dict], offsets: dict[str, int], min_ms: int) -> dict[str, int]:
    """Shift the times of hosts whose offset is at least min_ms; the applied offsets are returned.

    Events are copied (the caller's rows are not changed); `ts_logged` keeps the written time.
    """
    applied = {h: ms for h, ms in offsets.items() if abs(ms) >= min_ms}
    if not applied:
        return {}
    deltas = {host: timedelta(milliseconds=ms) for host, ms in applied.items()}
    for index, event in enumerate(events):
        delta = deltas.get(event.get("host"))
        if delta is not None and event["ts"] is not None:
            events[index] = {**event, "ts": event["ts"] - delta, "ts_logged": event["ts"]}
    return applied
