"""Client lines whose group no line of their own log names: the group the coordinator names for them.

At its default log level librdkafka names its handle (``rdkafka#consumer-1``: ``<client.id>#consumer-<n>``),
never its group (``%4|...|MAXPOLL|rdkafka#consumer-1| ... leaving group``, ``SESSTMOUT``); KafkaJS and
others are alike. ``core.handles`` gives such a line the group another line of the same handle states;
when none does, the line still belongs to a group, and the coordinator's log names it: a classic member
id is ``<client.id>-<UUID>`` (``rdkafka-5941e992-...``), so the coordinator's lines say which groups
have members of that client.id, and when.

A handle's ungrouped lines take the group the coordinator names for its client.id:

- the only group in the logs with a member of that client.id while the handle wrote them (the member's
  span: its first line at the coordinator to its removal; a member whose first line is its removal was
  there since before the logs began, one never removed is there until they end);
- else (a client.id in several groups at once, such as librdkafka's default ``rdkafka``) the only one of
  them whose coordinator removed a member of that client.id when the handle's own line says it was
  leaving or had lost its membership: a ``leaving group`` at that moment, a session that timed out
  (``SESSTMOUT``: no successful response for ``delay_ms``) within the time the line says it had been
  without an answer;
- else none: the lines stay without a group (reported per process, ``classify.handles``), rather
  than be guessed into one.

Times compare with ``ALLOWANCE_MS`` either side: the clocks of two hosts and the moments a client and
the coordinator log the same request differ by that much (the timeline corrects skew later, per group).
A line that states a group is never changed; the lines filled say so (``attrs.group_from = "coordinator"``).

The same pairing names the member: a client line saying its member leaves or lost its session, naming no member
id (librdkafka's MAXPOLL and SESSTMOUT), is about the one member of its client.id the coordinator removed then
(``attrs.member_from = "coordinator"``); with two or more such removals it names none. Without it the
client's line and the coordinator's removal read as two members (one removed twice, never linked to its host).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from . import identity

ALLOWANCE_MS = 2_000
_DEPARTURES = ("member.leave", "member.expired", "member.fenced")
# A client line that says its member is leaving or has lost its membership now.
_LEAVING = ("poll.timeout", "leave.request", "session.timeout", "member.fenced")


def client_id(handle: str | None) -> str | None:
    """The client.id of a client line's handle: librdkafka's ``<client.id>#<type>-<n>``, else the name itself."""
    if not handle:
        return None
    head, sep, _ = handle.rpartition("#")
    return head if sep and head else handle


def link(events: list[dict]) -> int:
    """Fill ``group`` of the client lines whose handle names none from the coordinator's lines, in place;
    return how many were filled."""
    spans = _spans(events)
    if not spans:
        return 0
    handles: dict[tuple, list[dict]] = {}
    for e in events:
        if e.get("library") and not e.get("group") and e.get("component") != "broker":
            cid = client_id(e.get("client"))
            if cid:
                handles.setdefault((e.get("source"), e.get("client")), []).append(e)
    filled = 0
    for (_, handle), rows in handles.items():
        group = _group_of(client_id(handle), rows, spans)
        if group is None:
            continue
        for e in rows:
            e["group"] = group
            _say(e, "group_from")
            filled += 1
    _members(events, spans)
    return filled


def assign(events: list[dict], group: str) -> int:
    """Give ``group`` (the one group the user named: ``analyze --group NAME``) to the client lines that still name
    none after ``link``, in place; return how many. The user knows what the logs do not say; the lines filled say
    so (``attrs.group_from = "user"``)."""
    filled = 0
    for e in events:
        if e.get("library") and not e.get("group") and e.get("component") != "broker":
            e["group"] = group
            _say(e, "group_from", "user")
            filled += 1
    return filled


def _say(event: dict, what: str, who: str = "coordinator") -> None:
    attrs = dict(event.get("attrs") or {})
    attrs[what] = who
    event["attrs"] = attrs


def _members(events: list[dict], spans: _Spans) -> None:
    """A client line saying its member leaves or lost its membership, naming no member id, is about the member the
    coordinator removed then: when exactly one member of its client.id was (its group's, as stated or linked)."""
    taken: set[str] = set()
    for e in events:
        if not e.get("library") or e.get("member") or e["event"] not in _LEAVING or e.get("ts") is None \
                or e.get("component") == "broker":
            continue
        cid = client_id(e.get("client"))
        removed = [s for s in spans.get(e.get("group") or "", {}).get(cid or "", ()) if _removed_then(s, e)]
        if len(removed) == 1 and removed[0][0] not in taken:
            taken.add(removed[0][0])
            e["member"] = removed[0][0]
            _say(e, "member_from")


# group -> client.id -> [(member id, first line, removal or None, removed)]
_Spans = dict[str, dict[str, list[list]]]


def _spans(events: list[dict]) -> _Spans:
    members: dict[tuple[str, str], list] = {}
    for e in events:
        member, group = e.get("member"), e.get("group")
        if not member or not group or e.get("component") != "broker" or e.get("ts") is None:
            continue
        span = members.get((group, member))
        if span is None:
            first = None if e["event"] in _DEPARTURES else e["ts"]
            span = members[(group, member)] = [member, first, None, None]
        if e["event"] in _DEPARTURES:
            span[2] = e["ts"]
            span[3] = e["event"]
    out: _Spans = {}
    for (group, member), span in members.items():
        cid = identity.client_of_member(member)
        if cid != member:       # a classic member id names its client.id (a KIP-848 one does not)
            out.setdefault(group, {}).setdefault(cid, []).append(span)
    return out


def _group_of(cid: str, rows: list[dict], spans: _Spans) -> str | None:
    times = [e["ts"] for e in rows if e.get("ts") is not None]
    if not times:
        return None
    allowance = timedelta(milliseconds=ALLOWANCE_MS)
    first, last = min(times) - allowance, max(times) + allowance
    candidates = [g for g, by_client in spans.items()
                  if any(_overlaps(s, first, last) for s in by_client.get(cid, ()))]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        return None
    leaving = [e for e in rows if e["event"] in _LEAVING and e.get("ts") is not None]
    matched = {g for g in candidates for e in leaving if any(_removed_then(s, e) for s in spans[g][cid])}
    return matched.pop() if len(matched) == 1 else None


def _overlaps(span: list, first: datetime, last: datetime) -> bool:
    _, joined, removed, _ = span
    return (joined is None or joined <= last) and (removed is None or removed >= first)


def _removed_then(span: list, line: dict) -> bool:
    """The coordinator removed this member when the client's line says it left or lost its membership."""
    removed = span[2]
    if removed is None:
        return False
    allowance = timedelta(milliseconds=ALLOWANCE_MS)
    ts = line["ts"]
    since = timedelta(milliseconds=int(line.get("delay_ms") or 0)) if line["event"] == "session.timeout" \
        else timedelta(0)
    return ts - since - allowance <= removed <= ts + allowance
