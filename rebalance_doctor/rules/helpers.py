"""Small readings of a timeline that several rules share."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from ..core.toml import load_toml

from ..timeline.identity import short
from ..timeline.model import Culprit, Evidence, Rebalance
from .finding import SEVERITIES, rank
from ..core import eventnames as EV


LIBRARIES_FILE = Path(__file__).with_name("libraries.toml")


@lru_cache(maxsize=1)
def _library_notes() -> dict:
    return load_toml(LIBRARIES_FILE)


def library_note(rule: str, library: str | None) -> dict | None:
    """What rules/libraries.toml says of this rule for this client library (``why``, ``fix``), if anything."""
    return _library_notes().get(rule, {}).get(library) if library else None


def library_of(group, name: str | None) -> str | None:
    """The client library (the events' ``library``) of a member's own lines, when one library wrote them."""
    libraries = {e.get("library") for e in group.events if e.get("library") and e.get("component") != "broker"
                 and group.who(e) == name}
    return libraries.pop() if len(libraries) == 1 else None


def culprit_of(members, name: str | None, fallback: bool = True) -> Culprit | None:
    """The culprit a finding names for member `name` (classify.members.Members): its identity as the classification
    knows it (host, member id, client.id, instance), else `name` as a bare client.id when `fallback` (a name the
    lines give but no member of the classification carries), else None. Every rule names its culprit through this."""
    member = members.get(name)
    if member is not None:
        return member.culprit()
    return Culprit(client=name) if name and fallback else None


def label_of(members, name: str | None) -> str:
    """How a finding's prose names member `name`: its culprit's label, else the name as the lines give it."""
    culprit = culprit_of(members, name)
    return culprit.label if culprit is not None else (name or "?")


def escalate(count: int | float = 0, critical: int | float | None = None, base: str = "warning", *,
             also: bool = False) -> str:
    """A finding's severity: `base` (its rule's usual SEVERITY), one step up (info -> warning -> critical) when
    `count` reaches the rule's critical threshold (`critical`, from thresholds.toml; None: the rule has none) or
    when `also` holds (harm the window shows). Every rule escalates through this, so `>=` means the same everywhere."""
    reached = also or (critical is not None and count >= critical)
    return SEVERITIES[min(rank(base) + 1, len(SEVERITIES) - 1)] if reached else base


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


def share(per_session: int) -> str:
    """1/per_session in words: the limit of heartbeat.interval.ms to session.timeout.ms as config-heartbeat-ratio
    detects it (its heartbeats_per_session, a user's override included), stated alike by every rule's advice."""
    return {1: "all", 2: "half", 3: "a third", 4: "a quarter"}.get(per_session, f"1/{per_session}")


def describe_unlogged(unlogged: list) -> str:
    """'client.id X (n member id(s))' for each client.id whose member ids no log claims, from its figure
    (figures.unlogged)."""
    return "; ".join(f"client.id {f.name.removeprefix('unlogged_member_ids.')} ({f.text()} member id(s))"
                     for f in unlogged)


def said(event: dict, words: str) -> bool:
    """The line's reason (or the error it reports) says this."""
    if words in (event.get("reason") or ""):
        return True
    return words in (event.get("error") or "")


def root_causes(rebalances: list[Rebalance]) -> Counter:
    """trigger kind -> how many of these rebalances it started ('unknown' when only symptoms)."""
    return Counter(r.trigger_kind or "unknown" for r in rebalances)


def trigger_evidence(rebalances: list[Rebalance], limit: int = 4) -> list[Evidence]:
    return [r.trigger_evidence for r in rebalances if r.trigger_evidence][:limit]


def unlogged_evidence(rebalances: list[Rebalance], outsiders: dict[str, list[str]], limit: int = 2) -> list[Evidence]:
    """The leaders' 'Finished assignment' lines naming the member ids of processes outside the logs
    (classify.members.unlogged_assignees)."""
    ids = [i for found in outsiders.values() for i in found]
    return [Evidence.of(e) for r in rebalances for e in r.events if e["event"] == EV.ASSIGNMENT_COMPUTED
            and any(i in ((e.get("attrs") or {}).get("assignment") or "") for i in ids)][:limit]


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


def rebalance_timeout(members) -> int | None:
    """The group's rebalance timeout as its members' configuration dumps state it: the largest
    max.poll.interval.ms (the coordinator waits that long for every member to rejoin). None when no dump says."""
    values = [m.setting("max.poll.interval.ms") for m in members]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def hears_too_late(members, name: str | None) -> tuple[int, int] | None:
    """(heartbeat.interval.ms, rebalance timeout) when member `name` cannot be sure to hear of a rebalance in time:
    a member learns of it only from its next heartbeat's REBALANCE_IN_PROGRESS, and the coordinator ends the
    JoinGroup phase after the rebalance timeout, removing who has not rejoined. A heartbeat interval not below that
    timeout lets a member that polls all the time miss rebalances (no poll timeout, no session expiry). None when
    its heartbeat comes sooner, or when the dumps do not say."""
    member = members.get(name) if name else None
    timeout = rebalance_timeout(members)
    own = member.setting("heartbeat.interval.ms") if member is not None else None
    if own is not None:
        heartbeats = [own]
    else:       # its dump is not in the window: it says so only if every dump in the window does
        heartbeats = [h for h in (m.setting("heartbeat.interval.ms") for m in members) if h is not None]
    if timeout is None or not heartbeats or any(h is None or h < timeout for h in heartbeats):
        return None
    return min(heartbeats), timeout
