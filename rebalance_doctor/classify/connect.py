"""Kafka Connect's herder as the workers log it: config offsets against the assignment's, and scheduled delays.

After every rebalance a worker's DistributedHerder compares the config offset it has read with the
offset the leader put in the assignment (DistributedHerder.handleRebalanceCompleted): behind, it
reads the config topic to the end ("Current config state offset X is behind group assignment Y,
reading to end of config log", then "Finished reading to end of log and updated config snapshot,
new config log offset: Z"); still different after that, it forces another rebalance ("Current
config state offset X does not match group assignment Y. Forcing rebalance."); equal, it starts
its work ("Starting connectors and tasks using config offset Y").

Once is part of normal life: a worker that joins, or a connector created during a rebalance, makes
the followers catch up, and a worker that read *past* the assignment forces one rebalance whose
assignment carries the newer offset. A worker is stuck when reading to the end changes nothing:
it forces again with the same two offsets before it ever starts work, or its offset is -1 (it read
nothing of the config topic while the leader's assignment names records in it: the workers of one
group.id do not share one readable config topic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..timeline.model import GroupTimeline
from ..core import eventnames as EV

_BEHIND = "connect.distributed_herder.current_config_state_offset_is_behind"
_READ_TO_END = "connect.distributed_herder.finished_reading_to_end_of_log"
_STARTING = "connect.distributed_herder.starting_connectors_and_tasks_using_config"


def _offset(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@dataclass
class ConfigSync:
    """One worker's config offsets against the assignments, in its own order."""

    worker: str                                              # its timeline identity
    mismatches: list[dict] = field(default_factory=list)     # "... does not match group assignment Y. Forcing rebalance."
    behind: list[dict] = field(default_factory=list)         # "... is behind group assignment Y, reading to end"
    started: list[dict] = field(default_factory=list)        # "Starting connectors and tasks using config offset Y"
    stuck: list[dict] = field(default_factory=list)          # the mismatches that show it cannot converge

    @property
    def read_nothing(self) -> bool:
        """Its config offset stayed -1 while assignments named records of the config topic."""
        return any(_pair(e)[0] == -1 and (_pair(e)[1] or 0) >= 0 for e in self.mismatches)

    @property
    def offsets(self) -> tuple[int | None, int | None]:
        """The worker's config offset and the assignment's, at its last forced rebalance."""
        return _pair(self.mismatches[-1]) if self.mismatches else (None, None)


@dataclass
class ScheduledDelay:
    """A worker left and the leader held its connectors and tasks unassigned for the scheduled delay (the
    IncrementalCooperativeAssignor, Connect protocol compatible/sessioned): the assignments carry
    "with rebalance delay: D" (D > 0) until it expires; then the work is given out again (delay 0)."""

    worker: str | None                     # the worker that left (its timeline identity), if logged
    departure: dict | None                 # its leave or the coordinator removing it
    delays: list[dict] = field(default_factory=list)     # "Joined group at generation N ... with rebalance delay: D"
    ended: dict | None = None              # the first assignment with delay 0 afterwards: work given out again
    returned: dict | None = None           # the worker joining again before the delay expired
    came_back: dict | None = None          # its first join after the delay expired: it returned too late
    tasks: list[str] = field(default_factory=list)       # the work it had started

    @property
    def delay_ms(self) -> int:
        return max((e.get("delay_ms") or 0) for e in self.delays)

    @property
    def start(self) -> datetime | None:
        return (self.departure or self.delays[0]).get("ts")

    @property
    def away_ms(self) -> float | None:
        """How long the worker was out of the group: from its departure to its first join afterwards."""
        back = self.returned or self.came_back
        if back is None or self.start is None or back.get("ts") is None:
            return None
        return (back["ts"] - self.start).total_seconds() * 1000

    @property
    def held_ms(self) -> float | None:
        """How long the work stayed unassigned: from the departure to the assignment that gave it out."""
        if self.ended is None or self.start is None or self.ended.get("ts") is None:
            return None
        return (self.ended["ts"] - self.start).total_seconds() * 1000


@dataclass
class ConnectConfig:
    workers: dict[str, ConfigSync] = field(default_factory=dict)
    delays: list[ScheduledDelay] = field(default_factory=list)

    @property
    def stuck(self) -> list[ConfigSync]:
        """Workers that force rebalance after rebalance with a config offset that reading does not change."""
        return [w for w in self.workers.values() if w.stuck]

    def explains(self, event: dict, who: str | None) -> ScheduledDelay | None:
        """The scheduled delay a worker's departure (its leave, or the coordinator removing it) started and
        that it came back within: a bounce the incremental cooperative protocol rode out."""
        for delay in self.delays:
            if delay.returned is None:
                continue
            if delay.departure is event or (who and who == delay.worker and event.get("ts") is not None
                                            and delay.start is not None and delay.returned.get("ts") is not None
                                            and delay.start <= event["ts"] <= delay.returned["ts"]):
                return delay
        return None

    def forced_by(self, worker: str) -> list[dict]:
        sync = self.workers.get(worker)
        return sync.mismatches if sync else []


def _attrs(e: dict) -> dict:
    return e.get("attrs") or {}


def read(timeline: GroupTimeline) -> ConnectConfig:
    found = ConnectConfig()
    for e in timeline.events:
        name = e["event"]
        pattern = e.get("pattern") or ""
        if name == EV.CONNECT_CONFIG_MISMATCH:
            kind = "mismatches"
        elif pattern == _BEHIND:
            kind = "behind"
        elif pattern == _STARTING:
            kind = "started"
        else:
            continue
        who = timeline.who(e) or e.get("client") or e.get("host") or "?"
        getattr(found.workers.setdefault(who, ConfigSync(who)), kind).append(e)
    for sync in found.workers.values():
        sync.stuck = _stuck(sync)
    found.delays = _delays(timeline)
    return found


_DEPARTURES = (EV.MEMBER_LEAVE, EV.MEMBER_EXPIRED, EV.LEAVE_REQUEST, EV.SESSION_TIMEOUT)


def _delays(timeline: GroupTimeline) -> list[ScheduledDelay]:
    """The scheduled-delay episodes: from the first assignment with a delay after a worker left to the first
    assignment without one."""
    out: list[ScheduledDelay] = []
    current: ScheduledDelay | None = None
    last_departure: dict | None = None
    tasks: dict[str, list[str]] = {}
    for e in timeline.events:
        name = e["event"]
        if e.get("component") not in ("connect", "broker", None) and name not in _DEPARTURES:
            continue
        if name in _DEPARTURES and (current is None or current.returned is None):
            last_departure = e if current is None else last_departure
            continue
        if e.get("pattern") == "connect.distributed_herder.starting_task":
            for task in e.get("tasks") or []:       # the pattern reads "Starting task {}" into tasks
                tasks.setdefault(timeline.who(e) or "?", []).append(task.rstrip(".,"))
            continue
        if name != EV.JOIN_SUCCESS or e.get("component") == "broker" or e.get("delay_ms") is None:
            continue
        delay = e.get("delay_ms") or 0
        if delay > 0:
            if current is None:
                who = timeline.who(last_departure) if last_departure is not None else None
                current = ScheduledDelay(who, last_departure, tasks=list(dict.fromkeys(tasks.get(who or "", []))))
                out.append(current)
            current.delays.append(e)
            if current.worker and current.returned is None and _same_worker(timeline, e, current):
                current.returned = e
        elif current is not None:
            current.ended = e
            if current.worker and current.returned is None and _same_worker(timeline, e, current):
                current.returned = e      # it joined the generation that gave the work out again
            current, last_departure = None, None
    for delay in out:
        if delay.worker and delay.returned is None and delay.ended is not None \
                and delay.ended.get("generation") is not None:
            # Its own join of the generation that gave the work out again (or of an earlier one) is a return within
            # the delay, whichever worker logged that generation first: the workers' "Joined group at generation N"
            # lines of one generation come in any order (connect-worker-poll-timeout: connect-1's at 10:06:09.258,
            # the returning connect-2's at 10:06:09.890).
            delay.returned = next((e for e in timeline.events
                                   if e["event"] == EV.JOIN_SUCCESS and e.get("component") != "broker"
                                   and e.get("delay_ms") is not None and e.get("generation") is not None
                                   and e["generation"] <= delay.ended["generation"]
                                   and _same_worker(timeline, e, delay)), None)
        if delay.worker and delay.returned is None and delay.ended is not None:
            delay.came_back = next((e for e in timeline.events
                                    if e["event"] == EV.JOIN_SUCCESS and e.get("component") != "broker"
                                    and e.get("ts") is not None and e["ts"] > delay.ended["ts"]
                                    and _same_worker(timeline, e, delay)), None)
    return out


def _same_worker(timeline: GroupTimeline, e: dict, delay: ScheduledDelay) -> bool:
    """This join is the departed worker's own (the same worker identity, or its host), after it left."""
    left = delay.start
    if left is not None and e.get("ts") is not None and e["ts"] <= left:
        return False
    if timeline.who(e) == delay.worker:
        return True
    host = (delay.departure or {}).get("host")
    return bool(host) and (delay.departure or {}).get("component") != "broker" and e.get("host") == host


def _stuck(sync: ConfigSync) -> list[dict]:
    """The forced rebalances of each run (between two starts of work) that does not converge: one of them
    repeats two offsets the worker already forced with (reading the config topic to the end in between
    changed nothing), or has an offset of -1 against an assignment that names records."""
    out: list[dict] = []
    run: list[dict] = []
    for e in sorted(sync.mismatches + sync.started, key=_order) + [None]:
        if e is None or e["event"] != EV.CONNECT_CONFIG_MISMATCH:
            pairs = [_pair(m) for m in run]
            if any(p[0] == -1 and (p[1] or 0) >= 0 for p in pairs) or len(set(pairs)) < len(pairs):
                out += run
            run = []            # it started work: converged; a later mismatch starts afresh
            continue
        run.append(e)
    return out


def _pair(e: dict) -> tuple[int | None, int | None]:
    a = _attrs(e)
    return _offset(a.get("config_offset")), _offset(a.get("assignment_offset"))


def _order(e: dict) -> tuple:
    return (e.get("source") or "", e.get("line") or 0)
