"""Which member id each process life was, when no line of the process states one: by elimination.

At their default levels librdkafka and sarama write no line naming their member id when a process joins (a killed
sarama process never writes its ``consumergroup/session/<member id>/<generation> released``), and librdkafka's
processes all share the default client.id ``rdkafka``. The coordinator's lines name every member id of the group
with the moments it joined and was removed; the application's own lines show each process's lives: a consumer's
revocation callback runs before every new assignment of its process's life (as ``unnamed`` reads it), so an
assignment with none since the previous one is a new life of the process: the old one died without giving its
partitions back (killed, crashed) and a new process started in its place.

A process's own notice that its member left the group ends the member id it had: that its session was lost
(kafka-python's ``Heartbeat session expired``, librdkafka's SESSTMOUT: ``session.timeout``; the coordinator removed it,
a paused process learns so when it wakes) or that it sent a LeaveGroup (``leave.request``: kafka-python's ``Leaving
consumer group``, on a close or after its heartbeat thread found the poll loop stalled). A process that joins again
after it does so under a new member id, and a new process written to the same file (a restart after a close)
likewise. So what follows the notice from the next join on is a new member's (a life of its
own: the same process, or one that replaced it after a clean close), and the member before it needed to be in the
group only until the process's last line before the notice. A notice before a life's first assignment ends nothing.

A member id is a candidate for a life when the coordinator had it in the group over the whole life: it joined before
the life's first assignment and was not removed before the life's last line (``unnamed.ALLOWANCE_MS`` either side).
Candidates are narrowed by elimination: a member id no client line claims; a life with one candidate left is that
member; lives that share the same k candidates, k of them, take those k (which is whose is not known), so no other
life can be one of them. A life left with two or more candidates stays unnamed: nothing is guessed.

Without the coordinator's lines no member id is found, but a life after another of its process is still a new
process where the group's callbacks are eager (``_mark_eager``): its first line says so (``attrs.life = "new"``).

A life found this way gives its process's lines the member id (``attrs.member_from = "lives"``), the client.id the
member id names (the process's identity, ``attrs.client_from = "lives"``), and the coordinator's group, when the
lines had none or only a name made up from the processes (``attrs.group_from = "coordinator"``). Its process's
removals and new members are then one process's, as an operator reading the three files sees them.
"""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta, timezone

from ..core import eventnames as EV
from . import identity
from .unnamed import ALLOWANCE_MS, UNNAMED, is_application, member_spans, say

MAX_CANDIDATES = 64           # members in the group at once beyond which a life is not narrowed down
_ASSIGNED = (EV.PARTITIONS_ASSIGNED, EV.ASSIGNMENT_RECEIVED)
_GAVE_BACK = (EV.PARTITIONS_REVOKED, EV.PARTITIONS_LOST)
_ENDS_MEMBER = (EV.SESSION_TIMEOUT, EV.LEAVE_REQUEST)   # a process's own notice that its member left the group
_REJOINING = (EV.JOIN_START,) + _ASSIGNED    # the first sign of the member it joins with next


class _Life:
    def __init__(self, key: tuple) -> None:
        self.key = key
        self.lines: list[dict] = []
        self.first_assignment = None
        self.after = False          # a life after another of the same process (which died without giving back)
        self.lost_at: int | None = None   # index of the line noticing its member left the group, when one did

    @property
    def last(self):
        """The last moment the life's member is known to be in the group: its last line, or its last before the
        notice that it left (a lost session: the coordinator removed it before the process noticed)."""
        if self.lost_at is not None:
            return self.lines[self.lost_at - 1]["ts"]
        return self.lines[-1]["ts"]


def link(events: list[dict]) -> int:
    """Give the lines of each process life the member id the elimination finds (see the module's doc), in place;
    return how many lines were given one."""
    spans = member_spans(events)
    if not spans:
        _mark_eager(_lives(events))
        return 0
    claimed = {e["member"] for e in events if e.get("member") and e.get("component") != "broker"}
    members = [(group, cid, span) for group, by_client in spans.items() for cid, found in by_client.items()
               for span in found if span[0] not in claimed]
    if not members:
        return 0
    lives = _lives(events)
    found = _eliminate(_candidates(lives, members))
    where = {span[0]: (group, cid) for group, cid, span in members}
    filled = 0
    for n, member in found.items():
        group, cid = where[member]
        if lives[n].after:
            # Its first line, the assignment no revocation preceded, is the first sign of a new process: a start.
            say(lives[n].lines[0], "life", "new")
        for e in lives[n].lines:
            if e.get("member"):
                continue
            e["member"] = member
            say(e, "member_from", "lives")
            if not e.get("client"):
                e["client"] = cid
                say(e, "client_from", "lives")
            if not e.get("group") or UNNAMED in e["group"]:
                e["group"] = group
                say(e, "group_from")
            filled += 1
    return filled


def _mark_eager(lives: list[_Life]) -> None:
    """Without the coordinator's lines, a life after another of its process is a new process only where its group's
    callbacks are eager ones: there every member gives back all it holds before each new assignment, so an assignment
    with no revocation since the previous one is a new process; a cooperative member's assignments may only add.
    Eager shows as revocations that each give back everything their process held, at least one, and none that gives
    back only part of it (per group, from the application's lines)."""
    eager: dict[str | None, bool] = {}
    for life in lives:
        held: set[str] = set()
        group = _group(life)
        for e in life.lines:
            partitions = set(e.get("partitions") or ())
            if e["event"] in _ASSIGNED:
                held |= partitions
            elif e["event"] == EV.PARTITIONS_REVOKED and partitions:
                whole = partitions >= held
                eager[group] = eager.get(group, True) and whole
                held -= partitions
    for life in lives:
        if life.after and eager.get(_group(life)):
            say(life.lines[0], "life", "new")


def _group(life: _Life) -> str | None:
    return next((e["group"] for e in life.lines if e.get("group")), None)


def _candidates(lives: list[_Life], members: list[tuple]) -> dict[int, set[str]]:
    """Life -> the unclaimed member ids the coordinator had in the group over its whole life. One sweep in time: the
    members joined by a life's first assignment and not removed before it are the ones in the group then; a life
    with more than ``MAX_CANDIDATES`` of them is left out (elimination would not name it, and would cost each of the
    others a pass over them)."""
    allowance = timedelta(milliseconds=ALLOWANCE_MS)
    floor = datetime.min.replace(tzinfo=timezone.utc)
    joined = sorted(members, key=lambda m: _aware(m[2][1], floor))
    active: dict[str, tuple] = {}
    leaving: list[tuple] = []                # heap of (removal, member id)
    out: dict[int, set[str]] = {}
    at = 0
    for n in sorted(range(len(lives)), key=lambda n: lives[n].first_assignment):
        life = lives[n]
        while at < len(joined) and _aware(joined[at][2][1], floor) <= life.first_assignment + allowance:
            group, cid, span = joined[at]
            active[span[0]] = joined[at]
            if span[2] is not None:
                heapq.heappush(leaving, (span[2], span[0]))
            at += 1
        while leaving and leaving[0][0] < life.first_assignment - allowance:
            active.pop(heapq.heappop(leaving)[1], None)
        if len(active) > MAX_CANDIDATES:
            continue
        cids = {identity.canonical(e["client"].rpartition("#")[0] or e["client"]) for e in life.lines
                if e.get("client") and e.get("library")}
        out[n] = {span[0] for group, cid, span in active.values()
                  if (not cids or identity.canonical(cid) in cids) and _open_group(life, group)
                  and (span[2] is None or span[2] >= life.last - allowance)}
    return out


def _aware(ts, floor):
    return floor if ts is None else ts


def _lives(events: list[dict]) -> list[_Life]:
    """The lives of every process (one log file at one host) whose lines state no member id, from its application's
    assignment and revocation lines; only lives with an assignment."""
    by_process: dict[tuple, list[dict]] = {}
    stating: set[tuple] = set()
    for e in events:
        if e.get("component") == "broker" or e.get("ts") is None or not (e.get("library") or is_application(e)):
            continue
        key = (e.get("host") or "", e.get("source") or "")
        by_process.setdefault(key, []).append(e)
        if e.get("member"):
            stating.add(key)
    lives: list[_Life] = []
    for key, rows in by_process.items():
        if key in stating:
            continue
        life, gave_back, previous = _Life(key), True, None
        for e in rows:
            if life.lost_at is not None and life.first_assignment is not None and e["event"] in _REJOINING:
                lives.append(life)
                life = _Life(key)
            if e["event"] in _ASSIGNED:
                if not gave_back and life.first_assignment is not None and not _same(previous, e):
                    lives.append(life)
                    life = _Life(key)
                    life.after = True
                gave_back = False
                previous = e
                if life.first_assignment is None:
                    life.first_assignment = e["ts"]
            elif e["event"] in _GAVE_BACK:
                gave_back = True
            elif e["event"] in _ENDS_MEMBER and life.lost_at is None and life.first_assignment is not None:
                # (a notice before the life's first assignment is of a member it never was: nothing to end)
                life.lost_at = len(life.lines)
            life.lines.append(e)
        lives.append(life)
    return [life for life in lives if life.first_assignment is not None]


def _same(previous: dict | None, e: dict) -> bool:
    """One assignment written twice: the same partitions at the same moment (kafka-python's "Updated partition
    assignment: [...]" and "Setting newly assigned partitions {...}", a library's line and its application's)."""
    return previous is not None and set(previous.get("partitions") or ()) == set(e.get("partitions") or ()) \
        and abs((e["ts"] - previous["ts"]).total_seconds()) * 1000 <= ALLOWANCE_MS


def _open_group(life: _Life, group: str) -> bool:
    """The life's lines name this group, or none, or only one made up from the processes."""
    named = {e.get("group") for e in life.lines if e.get("group") and UNNAMED not in e["group"]}
    return not named or named == {group}


def _eliminate(candidates: dict[int, set[str]]) -> dict[int, str]:
    """Life -> its one member id, narrowing each life's candidates until nothing changes."""
    left = {n: set(s) for n, s in candidates.items() if s}
    found: dict[int, str] = {}
    changed = True
    while changed:
        changed = False
        for n, s in list(left.items()):
            if len(s) == 1:
                found[n] = next(iter(s))
                del left[n]
                for other in left.values():
                    if found[n] in other:
                        other.discard(found[n])
                        changed = True
        by_set: dict[frozenset, list[int]] = {}
        for n, s in left.items():
            by_set.setdefault(frozenset(s), []).append(n)
        for s, owners in by_set.items():
            if len(owners) == len(s) > 1:
                for n, other in left.items():
                    if n not in owners and other & s:
                        other -= s
                        changed = True
        if any(not s for s in left.values()):
            left = {n: s for n, s in left.items() if s}
    return found
