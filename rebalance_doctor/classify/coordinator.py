"""Where a group's coordinator was: the brokers that loaded it, the members losing and finding it.

A group's coordinator is the leader of its ``__consumer_offsets`` partition. When that leadership
moves (a broker restarting, a leader election, a ZooKeeper or controller session lost), the new
leader loads the group (``Loading group metadata for X with generation N``, 3.x-4.x ``Loaded classic
group X with N members``), the old one unloads it, and each member finds out on its next request
(``Group coordinator broker-2:9092 (id: 2147483645 rack: null) is unavailable or invalid due to
cause: error response NOT_COORDINATOR ...``) and rediscovers it (``Discovered group coordinator
broker-3:9092 (id: 2147483644 ...)``; the node id is Integer.MAX_VALUE minus the broker id).

Loading a group restarts every member's session: the coordinator schedules each member's heartbeat
deadline at load time plus its session.timeout.ms (GroupCoordinator.onGroupLoaded; 3.x-4.x
GroupMetadataManager.onLoaded). A member whose heartbeats never reach the new coordinator is
therefore removed exactly one session timeout after the load: an expiry the load explains, not a
process that stopped. `read(timeline, members)` gathers this once per group, in one pass.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime

import regex

from ..timeline.model import GroupTimeline
from .members import Members
from ..core import eventnames as EV

_MAX_NODE_ID = 2147483647           # the coordinator's node id is Integer.MAX_VALUE - broker id
_NODE = regex.compile(r"^(?P<host>[^\s(]+)(?:\s*\(id:\s*(?P<id>[-+]?\d+))?")
# The consumer protocol's client (AsyncKafkaConsumer, 4.x) names it by the FindCoordinator answer it kept
# ("Coordinator(key='orders', nodeId=1, host='127.0.0.1', port=9092, ...)"): the broker's own id.
_JAVA_COORDINATOR = regex.compile(r"^Coordinator\(key='[^']*', nodeId=(?P<id>-?\d+)")
# kafka-python names the coordinator by its metadata ("BrokerMetadata(nodeId='coordinator-1', host=...)", 2.x; nodeId=1
# before) and by its connection's node id ("Discovered coordinator coordinator-1"): both name broker 1.
_PY_NODE = regex.compile(r"^(?:BrokerMetadata\(nodeId=)?'?(?:coordinator-)?(?P<id>-?\d+)'?(?:[,)]|$)")
# Errors that mean "not (or not yet) the coordinator of this group".
COORDINATOR_ERRORS = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS",
                      "Not coordinator", "not the correct coordinator", "coordinator is not available",
                      "coordinator is loading")
_ERROR_EVENTS = (EV.JOIN_FAILED, EV.SYNC_FAILED, EV.HEARTBEAT_FAILED, EV.COMMIT_FAILED)
# A broker logs a load (or unload) of one group once per partition move; several lines of one move
# (scheduling, loading, loaded) are closer together than this.
_SAME_MOVE_S = 30.0


@dataclass
class Move:
    """The group arriving at a coordinator (a broker loading it, or members finding a new one)."""

    at: datetime
    broker: str                 # broker id (or host when no id is logged)
    host: str | None            # the host of the log that shows it
    event: dict
    left: str | None = None     # the broker it left, when known


@dataclass
class Coordinator:
    loads: list[dict] = field(default_factory=list)        # broker lines: the group loaded
    unloads: list[dict] = field(default_factory=list)      # broker lines: the group unloaded
    losses: dict[str, list[dict]] = field(default_factory=dict)       # member -> "coordinator ... unavailable"
    discoveries: dict[str, list[dict]] = field(default_factory=dict)  # member -> "Discovered group coordinator"
    errors: dict[str, list[dict]] = field(default_factory=dict)       # member -> NOT_COORDINATOR & co.
    moves: list[Move] = field(default_factory=list)
    # id(expiry event) -> the load it follows by exactly the member's session timeout (or, when the
    # timeout is not logged, with every other member expiring at the same instant)
    expired_by_load: dict[int, dict] = field(default_factory=dict)
    _explained: dict[str, list[datetime]] = field(default_factory=dict)   # member id -> those expiries' times
    _last_expiry: dict[str, tuple] = field(default_factory=dict)          # identity -> (ts, its latest expiry)
    _joined: dict[str, list[datetime]] = field(default_factory=dict)      # identity -> its own successful joins
    # identity -> when it learnt it had been removed (generation reset, partitions lost, session timed out)
    _removed: dict[str, list[datetime]] = field(default_factory=dict)
    _synced: dict[str, list[datetime]] = field(default_factory=dict)      # identity -> its SyncGroups answered

    def explains(self, event: dict, who: str | None = None) -> dict | None:
        """The load that explains this removal on session timeout: the coordinator's expiry line itself, its
        "removing member X on heartbeat expiration" of the same moment, or (`who`: the member's identity)
        the member's own "session timed out" noticed once it got through again."""
        load = self.expired_by_load.get(id(event))
        if load is not None or not self._explained:
            return load
        member = event.get("member")
        for ts in self._explained.get(member or "", ()):
            if event.get("ts") is not None and abs((event["ts"] - ts).total_seconds()) < 1:
                return self.loaded_before(ts)
        if who and event.get("component") != "broker" and event["event"] == EV.SESSION_TIMEOUT:
            # The member's own timer runs from its last heartbeat response, before the load: it fires
            # between the load and one session timeout after the coordinator's removal.
            # A member whose coordinator is unknown checks its session only once it finds one again: the
            # line can come long after; it is the same loss until the member joins again.
            last = self._last_expiry.get(who)
            load = self.expired_by_load.get(id(last[1])) if last is not None else None
            if load is not None and load["ts"] <= event["ts"] and not any(
                    min(last[0], event["ts"]) <= ts <= event["ts"] for ts in self._joined.get(who, ())):
                return load
        return None

    @property
    def events(self) -> list[dict]:
        """Every line this reading rests on, in time order."""
        out = self.loads + self.unloads
        for lines in (self.losses, self.discoveries, self.errors):
            for items in lines.values():
                out += items
        return sorted(out, key=lambda e: e["ts"])

    def loaded_before(self, ts: datetime | None) -> dict | None:
        """The last load of the group at or before ts."""
        if ts is None or not self.loads:
            return None
        at = bisect_right([e["ts"] for e in self.loads], ts)
        return self.loads[at - 1] if at else None

    def _removed_after(self, member: str, ts: datetime) -> bool:
        rejoined = next((j for j in sorted(self._joined.get(member, ())) if j >= ts), None)
        return any(ts <= r and (rejoined is None or r <= rejoined) for r in self._removed.get(member, ()))

    def _awaiting_sync(self, member: str, ts: datetime) -> bool:
        """It had joined a generation and its SyncGroup was not answered yet: the coordinator parks a follower's
        SyncGroup until the leader's assignment arrives, and a leader slower than request.timeout.ms makes it
        time out (the client disconnects and rediscovers the same coordinator). The wait is the leader's story."""
        joined = [j for j in self._joined.get(member, ()) if j <= ts]
        if not joined:
            return False
        synced = [s for s in self._synced.get(member, ()) if s <= ts]
        return not synced or max(synced) < max(joined)

    def lost_without_move(self, member: str) -> list[dict]:
        """A member's coordinator losses after which it found the same coordinator again: it could not
        keep (or reach) a coordinator that had not moved. A loss after which the member learns it was
        removed before it joins again is its own silence (a pause, a stall: its requests expired while it
        was away), the member's story, not the coordinator's; so is a loss while its SyncGroup waited for the
        leader's assignment (`_awaiting_sync`)."""
        out = []
        for lost in self.losses.get(member, []):
            if self._removed_after(member, lost["ts"]) or self._awaiting_sync(member, lost["ts"]):
                continue
            before = broker_of((lost.get("attrs") or {}).get("coordinator"))
            if before is not None and self.found_after(member, lost) == before:
                out.append(lost)
        return out

    def found_after(self, member: str, lost: dict) -> str | None:
        """The broker `member` found as its coordinator next after the line `lost` (None: no discovery logged)."""
        after = next((d for d in self.discoveries.get(member, []) if d["ts"] >= lost["ts"]), None)
        return broker_of((after.get("attrs") or {}).get("coordinator")) if after is not None else None


def broker_of(text: str | None) -> str | None:
    """The broker a client names as coordinator: its id (from the node id) or its host:port."""
    if not text:
        return None
    m = _PY_NODE.match(text.strip()) or _JAVA_COORDINATOR.match(text.strip())
    if m:
        return m["id"]
    m = _NODE.match(text.strip())
    if not m:
        return None
    if m["id"] is not None:
        node = int(m["id"])
        return str(_MAX_NODE_ID - node) if node > _MAX_NODE_ID // 2 else str(node)
    return m["host"]


def read(timeline: GroupTimeline, members: Members, same_instant_ms: int = 100, tolerance_ms: int = 1000) -> Coordinator:
    found = Coordinator()
    expiries: list[dict] = []
    for e in timeline.events:
        name = e["event"]
        if name == EV.COORDINATOR_LOAD and not _unloading(e):
            found.loads.append(e)
        elif name == EV.COORDINATOR_LOAD:
            found.unloads.append(e)
        elif name == EV.COORDINATOR_UNLOAD:
            found.unloads.append(e)
        elif name in (EV.COORDINATOR_LOST, EV.COORDINATOR_DISCOVERED):
            who = timeline.who(e) or "?"
            (found.losses if name == EV.COORDINATOR_LOST else found.discoveries).setdefault(who, []).append(e)
        elif name in _ERROR_EVENTS and _coordinator_error(e):
            found.errors.setdefault(timeline.who(e) or "?", []).append(e)
        elif name == EV.MEMBER_EXPIRED and e.get("component") == "broker":
            expiries.append(e)
        elif name == EV.JOIN_SUCCESS and e.get("component") != "broker":
            found._joined.setdefault(timeline.who(e) or "?", []).append(e["ts"])
        elif name in _SYNCED_EVENTS and e.get("component") != "broker" and e.get("ts") is not None:
            found._synced.setdefault(timeline.who(e) or "?", []).append(e["ts"])
        elif name in _REMOVED_EVENTS and e.get("component") != "broker" and e.get("ts") is not None:
            found._removed.setdefault(timeline.who(e) or "?", []).append(e["ts"])
    found.moves = _moves(found)
    if found.loads and expiries:
        _expired_by_load(timeline, members, found, expiries, same_instant_ms, tolerance_ms)
    return found


# A member's own lines saying its SyncGroup was answered (clients before 2.8 log only the assignment).
_SYNCED_EVENTS = (EV.SYNC_SUCCESS, EV.ASSIGNMENT_RECEIVED, EV.PARTITIONS_ASSIGNED)
# A member's own lines saying the coordinator had already removed it.
_REMOVED_EVENTS = (EV.GENERATION_RESET, EV.PARTITIONS_LOST, EV.SESSION_TIMEOUT)


def _unloading(e: dict) -> bool:
    """2.4-4.0 "Unloading group metadata for X" is read by the load pattern with action=Unloading (the only
    coordinator.load pattern whose line says Unloading)."""
    return (e.get("attrs") or {}).get("action") == "Unloading"


def _coordinator_error(e: dict) -> bool:
    text = f"{e.get('error') or ''} {e.get('reason') or ''}"
    return any(words in text for words in COORDINATOR_ERRORS)


def _moves(found: Coordinator) -> list[Move]:
    """The broker side's loads when it is logged (one per move); else each member's coordinator changes,
    the member that saw most of them speaking for the group (every member sees every move)."""
    moves: list[Move] = []
    if found.loads:
        # One load is logged by several lines ("Loading group metadata" under [GroupCoordinator N], a
        # "Loaded member ..." per member without it): a line without the broker id is its host's broker.
        id_of_host = {e.get("host"): (e.get("attrs") or {}).get("broker") for e in found.loads + found.unloads
                      if (e.get("attrs") or {}).get("broker") and e.get("host")}
        for e in found.loads:
            broker = _broker_of_line(e, id_of_host)
            last = moves[-1] if moves else None
            if last is not None and last.broker == broker and (e["ts"] - last.at).total_seconds() < _SAME_MOVE_S:
                continue
            left_broker = _left(found.unloads, e, broker, id_of_host)
            moves.append(Move(e["ts"], broker, e.get("host"), e, left_broker if left_broker != broker else None))
        # After the first load, the broker a move left is the one the move before brought the group to: the
        # unload lines of two brokers' logs are no surer in time than that (their clocks differ).
        for before, move in zip(moves, moves[1:]):
            move.left = before.broker if before.broker != move.broker else move.left
        return moves
    best: list[Move] = []
    for member, found_lines in found.discoveries.items():
        seen: list[Move] = []
        current = None
        for e in found_lines:
            broker = broker_of((e.get("attrs") or {}).get("coordinator"))
            if broker is None:
                continue
            if current is not None and broker != current:
                seen.append(Move(e["ts"], broker, None, e, current))
            current = broker
        if len(seen) > len(best):
            best = seen
    return best


def _broker_of_line(e: dict, id_of_host: dict) -> str:
    """The broker a load or unload line is of: its logged id, else its host's id, else its host."""
    return (e.get("attrs") or {}).get("broker") or id_of_host.get(e.get("host")) or e.get("host") or "?"


def _left(unloads: list[dict], load: dict, broker: str, id_of_host: dict) -> str | None:
    """The broker that unloaded the group for this load: another broker's unload nearest to the load within
    the skew two brokers' clocks may have (it may be logged a little "after" the load), else the last before."""
    others = [u for u in unloads if _broker_of_line(u, id_of_host) != broker]
    near = [u for u in others if abs((u["ts"] - load["ts"]).total_seconds()) < _SAME_MOVE_S]
    if near:
        return _broker_of_line(min(near, key=lambda u: abs((u["ts"] - load["ts"]).total_seconds())), id_of_host)
    before = [u for u in others if u["ts"] <= load["ts"]]
    return _broker_of_line(before[-1], id_of_host) if before else None


def _expired_by_load(timeline: GroupTimeline, members: Members, found: Coordinator, expiries: list[dict],
                     same_instant_ms: int, tolerance_ms: int) -> None:
    completions = sorted(r.end for r in timeline.rebalances if r.completed and r.end is not None)
    for e in expiries:
        found._last_expiry[timeline.who(e) or "?"] = (e["ts"], e)
    load_times = [e["ts"] for e in found.loads]
    expiries.sort(key=lambda e: e["ts"])
    for position, e in enumerate(expiries):
        at = bisect_right(load_times, e["ts"])
        if not at:
            continue
        load = found.loads[at - 1]
        after = bisect_right(completions, load["ts"])
        if after < len(completions) and completions[after] < e["ts"]:
            continue        # a generation completed since the load: its members' deadlines were set anew
        after_ms = (e["ts"] - load["ts"]).total_seconds() * 1000
        member = members.get(timeline.who(e))
        session = member.setting("session.timeout.ms") if member is not None else None
        if session is not None:
            if abs(after_ms - session) <= tolerance_ms:
                _explain(found, e, load)
            continue
        # The session timeout is not logged: members whose deadlines the same load set expire together.
        neighbours = [expiries[i] for i in (position - 1, position + 1) if 0 <= i < len(expiries)]
        if any(abs((x["ts"] - e["ts"]).total_seconds() * 1000) <= same_instant_ms
               and bisect_right(load_times, x["ts"]) == at for x in neighbours):
            _explain(found, e, load)


def _explain(found: Coordinator, expiry: dict, load: dict) -> None:
    found.expired_by_load[id(expiry)] = load
    if expiry.get("member"):
        found._explained.setdefault(expiry["member"], []).append(expiry["ts"])
