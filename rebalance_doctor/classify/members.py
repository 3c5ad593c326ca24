"""Who is in a group: one record per member identity, with what its own log and the coordinator say.

A member identity is the timeline's name for it (``timeline.who``): its client.id, with ``@host``
when several hosts use the same client.id. For each one: the host whose log is its own, the
client.id as written, every member id it had (a dynamic member gets a new one per process), its
group.instance.id, the broker's clientHost when a line states it, its configuration dump and
assignors, and its life as its own log tells it: process starts, graceful closes, the last line.
Rules and the operation classifier read this instead of re-reading lines; issue 17's rules
(static members, config lint, assignors per member) read it too.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import datetime

from ..timeline import identity
from ..timeline.model import Culprit, GroupTimeline
from ..core import assignment_maps
from ..core import eventnames as EV

# A client line that says the process is closing its consumer on purpose.
CLOSE_REASONS = ("being closed", "unsubscribed from all topics", "leaving group before closing")
_POLL_REASONS = ("poll timeout", "poll interval")   # a LeaveGroup the consumer sent because it stopped polling
SHUTDOWN_STATES = ("PENDING_SHUTDOWN", "NOT_RUNNING")
# Lines a process writes once when it (re)starts a consumer: the Java client's config dump, its version
# banner, and the application's subscribe() (the one start line of libraries that print neither: aiokafka).
_START_EVENTS = (EV.CLIENT_CONFIG, EV.CLIENT_VERSION, EV.CLIENT_SUBSCRIBED)


@dataclass(slots=True)
class Member:
    identity: str
    host: str | None = None                 # the host whose log is this member's own
    client: str | None = None               # client.id as the member writes it
    member_ids: list[str] = field(default_factory=list)
    member_id_since: dict[str, datetime] = field(default_factory=dict)   # member id -> the first line naming it
    member_id_own: dict[str, datetime] = field(default_factory=dict)     # ... the first of its own lines naming it
    instance: str | None = None             # group.instance.id
    client_host: str | None = None          # the coordinator's clientHost
    config: dict[str, str] = field(default_factory=dict)   # its ConsumerConfig/StreamsConfig dump
    config_event: dict | None = None        # the dump's line (the evidence of a configuration finding)
    config_events: list[dict] = field(default_factory=list)   # every dump it logged (each process start), in order
    starts: list[datetime] = field(default_factory=list)   # process (re)starts in its own log
    closes: list[datetime] = field(default_factory=list)   # graceful closes / shutdowns it logged
    leaves: list[datetime] = field(default_factory=list)   # LeaveGroups the coordinator logged for it (not a poll timeout)
    deaths: list[tuple] = field(default_factory=list)   # (time, replaced) of its StreamThread's deaths (Members.died)
    first_seen: datetime | None = None      # its own log's first and last line
    last_seen: datetime | None = None
    own_lines: int = 0                      # lines of its own log in the group
    own_times: list[datetime] = field(default_factory=list)   # when it wrote them (in order)
    ambiguous: bool = False                 # its client.id is also another member's

    @property
    def static(self) -> bool:
        return bool(self.instance)

    @property
    def assignors(self) -> list[str]:
        text = self.config.get("partition.assignment.strategy") or ""
        return [a.strip() for a in text.strip("[]").split(",") if a.strip()]

    def setting(self, name: str) -> int | None:
        value = self.config.get(name)
        if value is None or not value.strip().lstrip("-").isdigit():
            return None
        return int(value)

    def culprit(self) -> Culprit:
        return Culprit(host=self.host, member=self.member_ids[-1] if self.member_ids else None,
                       client=self.client, instance=self.instance, client_host=self.client_host,
                       ambiguous=self.ambiguous)

    def alive_after(self, ts: datetime | None) -> bool | None:
        """Its own log continues after ts (None when it has no log of its own here)."""
        if not self.own_lines or ts is None or self.last_seen is None:
            return None
        return self.last_seen > ts

    def last_own_before(self, ts: datetime | None) -> datetime | None:
        """Its own last line at or before ts."""
        if ts is None or not self.own_times:
            return None
        at = bisect_right(self.own_times, ts)
        return self.own_times[at - 1] if at else None

    def next_own_after(self, ts: datetime | None) -> datetime | None:
        """Its own first line after ts."""
        if ts is None or not self.own_times:
            return self.own_times[0] if self.own_times else None
        at = bisect_right(self.own_times, ts)
        return self.own_times[at] if at < len(self.own_times) else None

    def restarted_after(self, ts: datetime | None) -> bool:
        """Its own log, after ts, goes on with a new process (a start line first)."""
        nxt = self.next_own_after(ts)
        return self.started_between(ts, nxt) is not None if nxt is not None else False

    def started_between(self, start: datetime | None, end: datetime | None) -> datetime | None:
        """A process start of this member after `start` and at or before `end` (None: unbounded)."""
        for ts in self.starts:
            if (start is None or ts > start) and (end is None or ts <= end):
                return ts
        return None

    def configured_since(self, setting: str) -> datetime | None:
        """Since when it has run with its current value of `setting`: the first of its last dumps that
        all state that value (None without a dump)."""
        current = self.config.get(setting)
        since = None
        for event in reversed(self.config_events):
            if (event.get("attrs") or {}).get(setting) != current:
                break
            since = event.get("ts")
        return since

    def survived(self, ts: datetime | None) -> bool:
        """The same process went on after ts: its own log continues and no new process started in
        between (it was alive but silent: a pause, not a crash or a restart)."""
        if not self.alive_after(ts):
            return False
        last = self.last_own_before(ts)
        return not self.restarted_after(last) and not self.closed_between(last, ts)

    def closed_between(self, start: datetime | None, end: datetime | None) -> bool:
        return any((start is None or c >= start) and (end is None or c <= end) for c in self.closes)

    def process_of(self, member_id: str | None, at: datetime | None) -> tuple[datetime | None, datetime | None]:
        """The life of the process that had `member_id` (removed at `at`): from its start to the next process
        start (None: unbounded). A dynamic member gets a new member id per process: its own first line naming
        the id places it, else the coordinator's first line naming it before `at`. Named only by its removal,
        the id was the process's running at `at`, unless that process had another id: then an earlier one's
        (the logs begin after it joined)."""
        named = self.member_id_own.get(member_id or "")
        if named is None:
            since = self.member_id_since.get(member_id or "")
            named = since if since is not None and at is not None and since < at else None
        ref = named if named is not None else at
        if ref is None:
            return None, None
        began = max((ts for ts in self.starts if ts <= ref), default=None)
        ended = min((ts for ts in self.starts if ts > ref), default=None)
        while named is None and began is not None and (any(
                other != member_id and began <= since <= min(ended or at, at)
                for other, since in self.member_id_since.items()) or self._too_young(began, at)):
            began, ended = max((ts for ts in self.starts if ts < began), default=None), began
        return began, ended

    def _too_young(self, began: datetime, at: datetime | None) -> bool:
        """A process that started less than session.timeout.ms before a removal on session timeout cannot be the
        one removed: its member would have had to join and then stay silent for a whole session timeout. The id
        was an earlier process's (a Streams instance restarted: the old consumers expire after the new process
        started, before the new ones name their ids)."""
        timeout = self.setting("session.timeout.ms")
        return timeout is not None and at is not None and (at - began).total_seconds() * 1000 < timeout

@dataclass
class Members:
    """The member records of one group, by identity, and by member id."""

    by_identity: dict[str, Member] = field(default_factory=dict)
    by_member_id: dict[str, Member] = field(default_factory=dict)
    clock_checked: set[str] = field(default_factory=set)    # hosts whose clock the timeline compared (timeline.skew)

    def get(self, name: str | None) -> Member | None:
        if not name:
            return None
        return self.by_identity.get(name) or self.by_member_id.get(name)

    def shut_down(self, name: str, member_id: str | None, at: datetime | None) -> bool:
        """The process of `name` that had `member_id` logged its graceful close or shutdown (its own, or its
        Streams client's) before `at`: a departure on purpose, whatever the coordinator then logs (a Kafka
        Streams consumer sends no LeaveGroup on close, so the coordinator expires it). A close of an earlier
        or a later process of the same member says nothing about this one, nor a StreamThread's death (`died`)."""
        member = self.get(name)
        if member is None or at is None:
            return False
        began, ended = member.process_of(member_id, at)
        died = {ts for ts, _ in member.deaths}
        closes = [c for c in self.closes_of(name) if (began is None or c >= began) and (ended is None or c < ended)
                  and c not in died]
        if any(c <= at for c in closes):
            return True
        # A host whose clock could not be compared with the coordinator's (no moment both logged) may be off by
        # more than a session timeout: a process whose log ends with its close left on purpose, whatever the
        # order the two clocks give.
        return bool(closes) and member.host not in self.clock_checked and not any(
            t > closes[-1] for t in member.own_times if ended is None or t < ended)

    def died(self, timeline: GroupTimeline, deaths: list) -> None:
        """A StreamThread that died (threads.py's deaths) went through PENDING_SHUTDOWN as a thread that is closed
        does: that transition is no departure on purpose. Whether its consumer then leaves (3.0+: it unsubscribes
        on its way out) or is removed one session later (no LeaveGroup), the death is why (`death_before`); the
        partitions it gives up as lost on the way out are still how it leaves (its closes keep them)."""
        for d in deaths:
            e = d.stopping or d.dead or d.first
            member = self.get(timeline.who(e))
            if member is not None and e.get("ts") is not None:
                member.deaths.append((e["ts"], d.replaced is not None))

    def process_ran_on(self, name: str, at: datetime | None) -> bool:
        """Another StreamThread of `name`'s Streams client logged after `at`: its process was still running."""
        node = identity.node_of(name)
        if not node or at is None:
            return False
        return any(other != name and identity.node_of(other) == node and member.alive_after(at)
                   for other, member in self.by_identity.items())

    def death_before(self, name: str, at: datetime | None) -> tuple[datetime, bool] | None:
        """The death (time, replaced) of `name`'s StreamThread that a departure at `at` follows: the latest at or
        before it with no process start between (a StreamThread's name is not reused within its process)."""
        member = self.get(name)
        if member is None or at is None:
            return None
        found = max((d for d in member.deaths if d[0] <= at), default=None)
        if found is None or member.started_between(found[0], at) is not None:
            return None
        return found

    def restarts_without_close(self, name: str) -> list[datetime]:
        """When a new process of `name` started after one that had taken part in the group (its own lines)
        and logged no graceful close or shutdown: the old process died (killed, OOM, crashed) and was started
        again. A process's start lines (config dump, version) come as one burst: a start with no group line
        of the member since the previous one is the same start."""
        member = self.get(name)
        if member is None or not member.starts or not member.own_times:
            return []
        node = identity.node_of(name)
        client = self.get(node) if node and node != name else None
        if client is not None and client.starts:
            # A StreamThread lives in its Streams client's process: it starts again when the client does. A thread
            # started in a running client (REPLACE_THREAD, KafkaStreams#addStreamThread), under a new name or a dead
            # thread's, is no process restart; the thread-replacement operation is what it is.
            return self.restarts_without_close(node)
        closes = self.closes_of(name) + member.leaves      # a LeaveGroup is sent on purpose (close, unsubscribe)
        out = []
        began = member.own_times[0] if member.own_times[0] < member.starts[0] else None
        for start in sorted(member.starts):
            if began is None:
                began = start
                continue
            first = bisect_left(member.own_times, began)
            if first == len(member.own_times) or member.own_times[first] >= start:
                continue      # the same start's burst, or a process that never reached the group
            if not any(began <= c <= start for c in closes):
                out.append(start)
            began = start
        return out

    def closes_of(self, name: str) -> list[datetime]:
        """The graceful closes a member logged, and those of its Streams client (its node)."""
        own = list(self.get(name).closes) if self.get(name) else []
        node = identity.node_of(name)
        if node and node != name and self.get(node):
            own += self.get(node).closes
        return sorted(own)

    def culprit(self, name: str | None) -> Culprit | None:
        member = self.get(name)
        if member is not None:
            return member.culprit()
        return Culprit(client=name) if name else None

    def __iter__(self):
        return iter(self.by_identity.values())

    def __len__(self) -> int:
        return len(self.by_identity)


def collect(timeline: GroupTimeline, context: list[dict] | None = None) -> Members:
    """One pass over the group's events (and the group-less lines of the same files, `context`)."""
    members = Members(clock_checked=set(timeline.clock_checked))
    # Keyed by (source, the client.id the dump states): several processes may write one file (two consumers of
    # two groups in one application log), and each start and dump is its own client's. None: not stated.
    pending_config: dict[tuple, dict] = {}   # (source, client) -> a config dump not yet owned by a member
    pending_dump: dict[tuple, dict] = {}     # (source, client) -> that dump's line
    pending_start: dict[tuple, list] = {}    # (source, client) -> process starts not yet owned by a member
    dumped: dict[str, str | None] = {}       # source -> the client.id of its last config dump (seen: it has dumps)
    versioned: set[str] = set()              # sources with a version banner
    for event in _merged(timeline.events, context or []):
        name = event["event"]
        own = event.get("component") != "broker"
        if own and name in _START_EVENTS and not event.get("member"):
            source = event.get("source") or ""
            stated = (event.get("attrs") or {}).get("client.id") if name == EV.CLIENT_CONFIG else None
            if name == EV.CLIENT_CONFIG:
                dumped[source] = identity.canonical(stated) if stated else None
            elif name == EV.CLIENT_VERSION:
                versioned.add(source)
            # A version line names no client (and may follow another group's dump, not in this timeline): a start
            # only in a file without config dumps; a subscription (which a running consumer may also renew) only
            # in a file with neither.
            key = (source, identity.canonical(stated) if stated else None if name == EV.CLIENT_CONFIG
                   else "" if name == EV.CLIENT_VERSION else "subscribed")
            pending_start.setdefault(key, []).append(event["ts"])
            if name == EV.CLIENT_CONFIG:
                pending_config[key] = event.get("attrs") or {}
                pending_dump[key] = event
                if static_instance((event.get("attrs") or {}).get("group.instance.id")) is None:
                    pending_config[key] = {k: v for k, v in pending_config[key].items()
                                           if k != "group.instance.id"}
            if not event.get("client") or event.get("group") is None:
                continue
        who = timeline.who(event) if event.get("group") else None
        if not who or not own and not event.get("member"):
            continue          # a coordinator line names a member by its member id only (its thread is the broker's)
        member = members.by_identity.get(who)
        if member is None:
            member = members.by_identity[who] = Member(who)
        member_id = event.get("member")
        # member_id_since holds exactly the ids appended here: a dict test, not a scan of the member's ids (a
        # long-running dynamic member has one id per rejoin: the scan made the analysis quadratic in rebalances).
        if member_id and member_id not in member.member_id_since and (own or _broker_line_names(event)):
            member.member_ids.append(member_id)
            member.member_id_since[member_id] = event["ts"]
            members.by_member_id.setdefault(member_id, member)
        if member_id and own and member_id not in member.member_id_own:
            member.member_id_own[member_id] = event["ts"]    # its own clock places its process best
        instance = static_instance(event.get("instance"))
        if instance:
            member.instance = member.instance or instance
        attrs = event.get("attrs") or {}
        if attrs.get("client_host"):
            member.client_host = attrs["client_host"]
        if not own:
            if member.client is None and member_id:
                member.client = identity.client_of_member(member_id)
            if name == EV.MEMBER_LEAVE and not any(words in (event.get("reason") or "") for words in _POLL_REASONS):
                member.leaves.append(event["ts"])
            continue
        member.own_lines += 1
        member.own_times.append(event["ts"])
        member.host = member.host or event.get("host")
        member.client = event.get("client") or member.client
        if member.first_seen is None:
            member.first_seen = event["ts"]
        member.last_seen = event["ts"]
        source = event.get("source") or ""
        mine = [(source, None), (source, identity.canonical(event["client"]) if event.get("client") else None)]
        for key in mine:
            if key in pending_config:
                member.config.update(pending_config.pop(key))
                member.config_event = pending_dump.pop(key, None)
                if member.config_event is not None:
                    member.config_events.append(member.config_event)
        if name == EV.CLIENT_CONFIG:
            member.config.update(attrs)
            if member.config_event is not event:
                member.config_events.append(event)
            member.config_event = event
        configured = static_instance(member.config.get("group.instance.id"))
        if configured and not member.instance:
            member.instance = configured
        for key in dict.fromkeys(mine):
            member.starts.extend(pending_start.pop(key, ()))
        versions = pending_start.pop((source, ""), ())
        if source not in dumped:
            member.starts.extend(versions)
        subscriptions = pending_start.pop((source, "subscribed"), ())
        if source not in dumped and source not in versioned:
            member.starts.extend(subscriptions)
        member.starts.sort()
        if _closing(event):
            member.closes.append(event["ts"])
        elif name == EV.STREAMS_STATE and event.get("from_state") == "CREATED":
            member.starts.append(event["ts"])      # a Streams client or thread starting
        elif attrs.get("life") == "new":
            member.starts.append(event["ts"])      # a new process's first assignment (timeline.lives)
    _mark_ambiguous(members)
    return members


_NO_INSTANCE = ("", "null", "None", "Optional.empty", "Optional[]")


def static_instance(value: str | None) -> str | None:
    """The group.instance.id a line states, unwrapped (Optional[x], Some(x)); None for a dynamic member."""
    if value is None:
        return None
    value = value.strip()
    if value in _NO_INSTANCE:
        return None
    for head in ("Optional[", "Some("):
        if value.startswith(head):
            return value[len(head):-1] or None
    return value


def _merged(events: list[dict], context: list[dict]) -> list[dict]:
    if not context:
        return events
    return sorted(events + context, key=lambda e: (e["ts"], e.get("source") or "", e.get("line") or 0))


def _broker_line_names(event: dict) -> bool:
    """A broker line whose member column is the member it is about (not a leader or a replaced id)."""
    return event["event"] in (EV.MEMBER_JOIN, EV.MEMBER_LEAVE, EV.MEMBER_EXPIRED, EV.MEMBER_FENCED, EV.REBALANCE_PREPARE,
                              EV.MEMBER_ASSIGNMENT, EV.MEMBER_EPOCH_TRANSITION, EV.MEMBER_STATIC_REPLACED)


def _closing(event: dict) -> bool:
    name = event["event"]
    if name == EV.LEAVE_REQUEST:
        reason = event.get("reason") or ""
        return any(words in reason for words in CLOSE_REASONS)
    if name == EV.STREAMS_STATE:
        return (event.get("state") or "") in SHUTDOWN_STATES
    if name == EV.PARTITIONS_REVOKED or name == EV.LEAVE_REQUEST:
        return False
    return (event.get("attrs") or {}).get("closing") == "true"  # "... leaving group before closing consumer"


def _mark_ambiguous(members: Members) -> None:
    """Members whose client.id (and host) another member shares: their member id must be printed."""
    seen: dict[tuple, list[Member]] = {}
    for member in members:
        seen.setdefault((member.client, member.host), []).append(member)
    for same in seen.values():
        if len(same) > 1 and same[0].client:
            for member in same:
                member.ambiguous = True


def unlogged_assignees(timeline: GroupTimeline, rebalances, members: Members) -> dict[str, list[str]]:
    """client.id -> member ids that a leader assigned partitions to in these rebalances (its `Finished assignment
    for group at generation N: {...}` line) and that no collected log belongs to: processes of the group whose
    files are not in the input (another deployment, a job run with the same group.id). A process of a client.id
    that logged processes use too (the default consumer-<group>-1) is told apart by its member id when every
    logged process of that client.id names its own; when one does not (a 2.4 client's 'Successfully joined group
    with generation 5'), an id of that client.id may be its, and is not counted."""
    out: dict[str, list[str]] = {}
    logged_ids = {member_id for m in members if m.own_lines for member_id in m.member_id_own}
    named: dict[str, bool] = {}          # client.id -> every logged process of it names its member ids
    for m in members:
        if m.own_lines and m.client:
            key = identity.canonical(m.client)
            named[key] = named.get(key, True) and bool(m.member_id_own)
    for r in rebalances:
        for e in r.events:
            if e["event"] != EV.ASSIGNMENT_COMPUTED or e.get("component") == "broker":
                continue
            for member_id in assignment_maps.members((e.get("attrs") or {}).get("assignment")):
                client = identity.client_of_member(member_id)
                if member_id in logged_ids or named.get(identity.canonical(client)) is False:
                    continue        # a logged process, or maybe one (it does not print its member id)
                ids = out.setdefault(client, [])
                if member_id not in ids:
                    ids.append(member_id)
    return out


def unlogged_culprit(outsiders: dict[str, list[str]], members: Members) -> Culprit | None:
    """The culprit unlogged_assignees points to: its one client.id, unless collected processes use that client.id
    too (then a name would point at them)."""
    if len(outsiders) != 1:
        return None
    [client] = outsiders
    logged = {identity.canonical(m.client) for m in members if m.own_lines and m.client}
    return None if identity.canonical(client) in logged else Culprit(client=client)

