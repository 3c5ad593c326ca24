"""Departures no line states, read from the clients' logs alone: a member whose log stops, one that gives back.

A process killed or crashed writes nothing about it: its log simply stops. With the coordinator's log the removal
is there (``Member ... has failed, removing it from the group``); with only the clients' logs, what shows it is the
others: one session timeout later, the surviving members are told the group is rebalancing, give their partitions
back and take the dead member's. So a member of a group no coordinator line is about departs (removed on session
timeout, ``operations.EXPIRED``) in the first rebalance after its last line when

- its process held partitions or had joined (a line of it in the group saying so), and its last lines gave nothing
  back: no revocation, no LeaveGroup, no close, no line saying it lost its session (those are departures of their
  own, read from the line);
- its own log has no line after it (for good), or the next line of its process is a new process's start (a restart:
  a crash loop, the old life's death);
- the rebalance begins after that last line and other members' lines are in it (the survivors rebalancing).

The departure's line is the first line of that rebalance (a survivor's: when the group noticed), and the finding
says the member's own log stopped before it.

A member that gives its partitions back in a rebalance and takes no part in it otherwise (no join, sync or
assignment of its own in it) while the others are assigned left the group (``left``): a consumer's revocation
callback runs before it leaves (close, unsubscribe), as it runs before each eager rejoin, and a member rejoining is
assigned in the same rebalance. librdkafka and sarama at their default levels log nothing of a close; the
application's ``revoked: [...]`` is the line. Whether it closed on purpose is not stated (``operations.LEAVE``): its
return, a later rebalance, makes it a restart.

While the logs are followed (``analyze --follow`` before its final report) a log's end is not its stop: a process
that is paused, or whose lines are read behind the others', writes again; its last life concludes nothing then.

With a coordinator's line in the group nothing is concluded: its removals and LeaveGroups are logged; nor in a group
made up from the processes when the input holds a coordinator's log (the lines it could not be tied to are one of
its groups, which states what happened).
"""

from __future__ import annotations

from bisect import bisect_right

from ..core import eventnames as EV
from ..timeline.model import GroupTimeline, Rebalance
from .members import Members

# A member's own lines that say it holds partitions or is in the group.
_IN = (EV.PARTITIONS_ASSIGNED, EV.ASSIGNMENT_RECEIVED, EV.JOIN_SUCCESS, EV.SYNC_SUCCESS)
# A member's own lines that give its place up or say it lost it: a departure the lines state.
_OUT = (EV.PARTITIONS_REVOKED, EV.PARTITIONS_LOST, EV.LEAVE_REQUEST, EV.MEMBER_LEAVE, EV.POLL_TIMEOUT,
        EV.SESSION_TIMEOUT, EV.MEMBER_FENCED)


def clients_only(timeline: GroupTimeline) -> bool:
    """No coordinator's line is in the group, nor in the input beside a group made up from the processes
    (``timeline.unnamed.gather``: ``attrs.coordinator = "elsewhere"``)."""
    return "broker" not in timeline.sides and not any(
        e.get("component") == "broker" or (e.get("attrs") or {}).get("coordinator") == "elsewhere"
        for e in timeline.events)


def left(timeline: GroupTimeline) -> dict[int, list[tuple[str, dict]]]:
    """Rebalance index -> (member identity, its revocation) of the members that gave back and left in it (see the
    module's doc)."""
    if not clients_only(timeline):
        return {}
    out: dict[int, list[tuple[str, dict]]] = {}
    for r in timeline.rebalances:
        gave: dict[str, dict] = {}
        took: set[str] = set()
        for e in r.events:
            if e.get("component") == "broker":
                continue
            who = timeline.who(e)
            if not who:
                continue
            if e["event"] == EV.PARTITIONS_REVOKED and e.get("partitions"):
                gave.setdefault(who, e)
            elif e["event"] in _IN or e["event"] in (EV.JOIN_START, EV.JOIN_REQUESTED):
                took.add(who)
        if took:
            out[r.index] = [(who, line) for who, line in gave.items() if who not in took]
    return {index: found for index, found in out.items() if found}


def deaths(timeline: GroupTimeline, members: Members) -> dict[int, list[tuple[str, dict]]]:
    """Rebalance index -> (member identity, the rebalance's first line) of the members whose log stopped before it
    (see the module's doc)."""
    if not clients_only(timeline):
        return {}
    lives: dict[str, list[list[dict]]] = {}        # identity -> its lives' own lines (a new start opens one)
    for e in timeline.events:
        if e.get("component") == "broker" or e.get("ts") is None:
            continue
        who = timeline.who(e)
        if not who:
            continue
        member = members.get(who)
        runs = lives.setdefault(who, [[]])
        if runs[-1] and member is not None and member.started_between(runs[-1][-1]["ts"], e["ts"]) is not None:
            runs.append([])
        runs[-1].append(e)
    starts = sorted((r for r in timeline.rebalances if r.start is not None), key=lambda r: r.start)
    times = [r.start for r in starts]
    out: dict[int, list[tuple[str, dict]]] = {}
    for who, runs in lives.items():
        member = members.get(who)
        for n, life in enumerate(runs):
            last = life[-1]["ts"]
            if not any(e["event"] in _IN for e in life):
                continue
            final = [e for e in life if e["event"] in _IN or e["event"] in _OUT]
            if final and final[-1]["event"] in _OUT:
                continue
            if timeline.growing and n + 1 == len(runs):
                continue     # followed: its log has not stopped, it has not been written yet
            if member is not None and member.closed_between(life[0]["ts"], None if n + 1 == len(runs)
                                                            else runs[n + 1][0]["ts"]):
                continue
            at = bisect_right(times, last)          # the first rebalance that began after its last line
            r = starts[at] if at < len(starts) else None
            if r is None or not _others_in(timeline, r, who):
                continue
            out.setdefault(r.index, []).append((who, _first_line(r)))
    return out


def _others_in(timeline: GroupTimeline, r: Rebalance, who: str) -> bool:
    return any(e.get("component") != "broker" and timeline.who(e) not in (None, who) for e in r.events)


def _first_line(r: Rebalance) -> dict:
    return min((e for e in r.events if e.get("ts") is not None), key=lambda e: e["ts"])
