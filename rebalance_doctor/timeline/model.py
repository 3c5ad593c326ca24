"""The timeline of one group: its rebalances, generation by generation, as both sides logged them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

_UNSET = object()

# Outcomes of one rebalance.
STABLE = "stable"          # completed, no followup requested
UNSTABLE = "unstable"      # completed, but the assignor asked for a followup rebalance
FAILED = "failed"          # JoinGroup/SyncGroup failed, superseded, or the same old generation prepared again
INCOMPLETE = "incomplete"  # the logs end (or go quiet) before it completed

# Why a rebalance failed, one spelling per cause (a rule counting reasons counts causes, not phrasings).
SUPERSEDED = "superseded: the group began another rebalance"
STORE_FAILED = "SyncGroup failed: the coordinator could not store the assignment"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One log record a conclusion rests on."""

    source: str
    line: int
    text: str
    ts: datetime | None = None
    host: str | None = None
    event: str | None = None

    @classmethod
    def of(cls, event: dict) -> "Evidence":
        text = (event.get("message") or "").split("\n", 1)[0]
        return cls(event.get("source") or "?", int(event.get("line") or 0), text, event.get("ts"),
                   event.get("host"), event.get("event"))

    def to_dict(self) -> dict:
        return {"source": self.source, "line": self.line, "text": self.text}

    def ref(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass(frozen=True, slots=True)
class Culprit:
    """Who caused something, as precisely as the logs name it (any field may be unknown)."""

    host: str | None = None          # the host whose logs are that member's own (timeline/identity.py)
    member: str | None = None        # the member id the coordinator knows
    client: str | None = None        # client.id
    instance: str | None = None      # group.instance.id (static membership)
    client_host: str | None = None   # the broker's clientHost (its address as the coordinator saw it)
    ambiguous: bool = False          # another member shares its client.id (and host): name its member id too

    @property
    def label(self) -> str:
        """One unambiguous name: client.id (or instance id, or member id) at its host; the member id's
        first characters when another member has the same client.id there; the instance id of a
        static member."""
        name = self.client or self.instance or self.member or self.client_host
        if name is None:
            return self.host or "?"      # known only by its host (a broker, a host whose log names no client)
        text = f"{name}@{self.host}" if self.host else name
        details = []
        if self.instance and self.instance != name:
            details.append(f"instance {self.instance}")
        if self.member and (self.ambiguous or (not self.host and not self.client)) and self.member != name:
            details.append(f"member {_member_head(self.member, self.client)}")
        if not self.host and self.client_host:
            details.append(f"from {self.client_host}")
        return text + (f" ({', '.join(details)})" if details else "")

    def to_dict(self) -> dict:
        return {"label": self.label, "host": self.host, "member": self.member, "client": self.client,
                "instance": self.instance, "client_host": self.client_host}


def _member_head(member: str, client: str | None) -> str:
    """A member id shortened to what tells it apart: the part after the client.id, 8 characters."""
    rest = member[len(client) + 1:] if client and member.startswith(client + "-") else member
    return rest[:8]


@dataclass(slots=True)
class Rebalance:
    """One attempt of the group to reach a new generation (or, KIP-848, one group epoch)."""

    group: str
    index: int
    start: datetime | None = None
    end: datetime | None = None
    generation: int | None = None        # the generation it reached (or tried to reach)
    old_generation: int | None = None    # the generation it started from (broker "old generation"; a bumped epoch N: N-1)
    # KIP-848/1071/932: the group epochs the coordinator bumped in it, in order. Several when one target-assignment
    # computation answered them (KIP-1263 batches them, Kafka 4.3+; a streams group's delayed assignment, 4.2+):
    # the round reaches the last, the epoch of that computation.
    epochs: list[int] = field(default_factory=list)
    trigger: str | None = None           # the root-cause reason, as logged
    trigger_kind: str | None = None      # see triggers.py: heartbeat-expiration, poll-timeout, ...
    trigger_member: str | None = None    # the member whose action started it, when known
    trigger_evidence: Evidence | None = None
    symptoms: int = 0                    # members that rejoined only because it was already rebalancing
    leader: str | None = None            # the member that ran the assignor
    members: int | None = None           # member / consumer count of the generation
    nodes: int | None = None             # Streams client nodes
    member_ids: list[str] = field(default_factory=list)   # member identities that joined it
    outcome: str = INCOMPLETE
    failure: str | None = None           # why it failed, as logged
    followup: str | None = None          # cooperative | probing | version_probing | endpoint
    left: list[str] = field(default_factory=list)         # members that left (LeaveGroup) around it
    expired: list[str] = field(default_factory=list)      # members removed on session timeout
    missed: list[str] = field(default_factory=list)       # members of the previous generation absent from it
    sides: set[str] = field(default_factory=set)          # broker / client: who logged it
    hosts: set[str] = field(default_factory=set)
    events: list[dict] = field(default_factory=list)      # every event attributed to it, in time order
    # The classification (why it happened), filled after the timeline is built:
    protocol: str = "unknown"            # eager | cooperative | streams | connect | consumer (KIP-848) | ...
    verdict: str = "unknown"             # expected | harmful | unknown
    operation: str | None = None         # what it was: rolling-restart, cooperative-followup, poll-timeout, ...
    culprit: Culprit | None = None       # the member (and host) whose action caused it
    cause_index: int | None = None       # the earlier rebalance this one follows from (a followup, a return)
    culprit_name: str | None = None      # the culprit's identity as the timeline names members (GroupTimeline.who)
    truncated: bool = False              # it began before the logs do: what started it is not in them

    @property
    def duration_ms(self) -> int | None:
        if self.start is None or self.end is None:
            return None
        return max(0, int((self.end - self.start).total_seconds() * 1000))

    @property
    def completed(self) -> bool:
        return self.outcome in (STABLE, UNSTABLE)

    def evidence(self, *names: str) -> list[Evidence]:
        return [Evidence.of(e) for e in self.events if not names or e["event"] in names]


@dataclass
class GroupTimeline:
    """A group (consumer group, Streams application id, Connect group) across hosts and sides."""

    group: str
    kind: str = "consumer"               # consumer | streams | connect
    protocol: str = "classic"            # classic | consumer (KIP-848)
    growing: bool = False                # its logs are still being written (analyze --follow)
    start: datetime | None = None
    end: datetime | None = None
    rebalances: list[Rebalance] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)      # every event of the group, corrected times
    sides: set[str] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    skew_ms: dict[str, int] = field(default_factory=dict)  # host -> estimated clock offset (corrected)
    skew_pairs: dict[str, int] = field(default_factory=dict)  # host -> paired events it rests on
    # Hosts whose clock was compared with the reference's (a moment both sides logged): the order of their lines
    # against the others' is known. Another host's clock may be off by any amount.
    clock_checked: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    directory: dict[str, str] = field(default_factory=dict)   # member id -> identity
    shared_names: set[str] = field(default_factory=set)        # client ids used on several hosts (or files)
    per_file: set[str] = field(default_factory=set)            # ... of which some host writes several files
    # group-less lines of its members' files, and its coordinator's failures to write to its __consumer_offsets
    # partition (builder._writes_of)
    context: list[dict] = field(default_factory=list)
    # The removals on session timeout of OTHER groups by the brokers that removed this group's members
    # (what a broker, network or host problem shared by several groups looks like; in-process analysis)
    neighbours: list[dict] = field(default_factory=list)
    # Every group's members' own lines losing their session with a coordinator they name, in time order: one list
    # shared by the timelines of the groups that have such lines (timeline.builder.session_lost)
    session_losses: list[dict] = field(default_factory=list)
    rejoins: list[dict] = field(default_factory=list)         # members let back into a stable generation
    #   without a rebalance (static members within their session timeout): member, generation, at, events
    classification: object | None = None  # classify.Classification, filled after the timeline is built
    # ``analyze --follow``: what of the group was folded into counts (Folded, below), else None
    folded: "Folded | None" = None
    # The cluster the group is keyed by (``prod`` of ``prod/orders``: timeline/clusters.py); None when the
    # analysis holds one cluster or none and groups are not keyed. The rows of every table carry it.
    cluster: str | None = None
    _who: dict = field(default_factory=dict, repr=False, compare=False)
    _kept: list = field(default_factory=list, repr=False, compare=False)
    _processes: dict | None = field(default=None, repr=False, compare=False)   # (host, source) -> member names

    def who(self, event: dict) -> str | None:
        """The identity of the member an event is about (see timeline/identity.py). Asked for every
        event by the timeline, the classification and the rules: answered once per event."""
        key = id(event)
        known = self._who.get(key, _UNSET)
        if known is not _UNSET:
            return known
        from .identity import of_event

        name = of_event(event, self.directory)
        if name is None and _application(event):
            name = self._process_name(event)
        if name in self.shared_names and event.get("component") != "broker" and event.get("host"):
            if name in self.per_file:
                name = f"{name}@{event['host']}:{event.get('source') or ''}"
            else:
                name = f"{name}@{event['host']}"
        self._who[key] = name
        self._kept.append(event)       # keeps the id valid for as long as the answer is cached
        return name

    def _process_name(self, event: dict) -> str | None:
        """The application's own line (its rebalance callback: ``revoked: [orders-5]``) is about its process's
        consumer: the one member whose client lines its log file holds (a log file is one process's output)."""
        if self._processes is None:
            # A line naming a member id may be about another member (a leader's "balance group member; id: ..."):
            # the process's lines naming none are its own, when it has such lines.
            own: dict[tuple, set[str]] = {}
            every: dict[tuple, set[str]] = {}
            for e in self.events:
                if e.get("component") in ("broker", "application") or _application(e):
                    continue
                found = self.who(e)
                if found:
                    key = (e.get("host"), e.get("source"))
                    every.setdefault(key, set()).add(found)
                    if not e.get("member"):
                        own.setdefault(key, set()).add(found)
            self._processes = {key: own.get(key) or names for key, names in every.items()}
            # A process whose log holds only the application's lines (librdkafka and sarama at their default levels
            # write none about the group) is its host's consumer (its file's, when the host has several of them);
            # not where the input holds a coordinator's log the lines could not be tied to (timeline.unnamed: the
            # coordinator's group names its members).
            alone: dict[str, set[str]] = {}
            for e in self.events:
                key = (e.get("host"), e.get("source"))
                if key not in every and _application(e) and (e.get("host") or e.get("source")) \
                        and (e.get("attrs") or {}).get("coordinator") != "elsewhere":
                    alone.setdefault(e.get("host") or "", set()).add(e.get("source") or "")
            for host, sources in alone.items():
                for source in sources:
                    self._processes[(host or None, source or None)] = {
                        (host or source) if len(sources) == 1 or not host else f"{host}:{source}"}
        names = self._processes.get((event.get("host"), event.get("source")), ())
        return next(iter(names)) if len(names) == 1 else None

    def forget_identities(self) -> None:
        """Drop the cached answers of who() (after the directory of member ids changed)."""
        self._who.clear()
        self._kept.clear()
        self._processes = None

    @property
    def protocol_shown(self) -> str:
        """The protocol the reports name for a group (its heading, the groups table, the JSON group's
        ``protocol``): the group type the classification found for the KIP-1071 streams groups and KIP-932 share
        groups, else ``protocol`` (classic | consumer, which the timeline and the rules go by)."""
        found = getattr(self.classification, "protocol", None)
        return found if found in ("streams-group", "share") else self.protocol

    @property
    def rebalance_count(self) -> int:
        """Its rebalances, those folded by a long follow (fold.py) included: what a report counts."""
        return len(self.rebalances) + (getattr(self.folded, "rebalances", 0) or 0)

    @property
    def window_ms(self) -> int:
        if self.start is None or self.end is None:
            return 0
        return int((self.end - self.start).total_seconds() * 1000)

    @property
    def unstable_ms(self) -> int:
        """Time without a stable generation: the sum of the rebalances' durations (overlaps merged)."""
        return unstable_ms(self.rebalances)

    @property
    def failed(self) -> list[Rebalance]:
        return [r for r in self.rebalances if r.outcome == "failed"]

    @property
    def leaders(self) -> list[str]:
        seen: list[str] = []
        for r in self.rebalances:
            if r.leader and r.leader not in seen:
                seen.append(r.leader)
        return seen

    def of(self, *names: str) -> list[dict]:
        return [e for e in self.events if e["event"] in names]


def _application(event: dict) -> bool:
    """An application's own line naming no member (timeline.unnamed.is_application)."""
    from .unnamed import is_application

    return is_application(event)


def unstable_ms(rebalances) -> int:
    """Milliseconds covered by the rebalances' spans, overlaps merged (time without a stable generation)."""
    spans = sorted((r.start, r.end) for r in rebalances if r.start and r.end)
    total, current = 0, None
    for start, end in spans:
        if current and start <= current[1]:
            current = (current[0], max(current[1], end))
            continue
        if current:
            total += int((current[1] - current[0]).total_seconds() * 1000)
        current = (start, end)
    if current:
        total += int((current[1] - current[0]).total_seconds() * 1000)
    return total


def peak_within(starts: list[datetime], window: timedelta) -> tuple[int, int]:
    """The most of these times (sorted) within one ``window`` and the index of the first of them."""
    peak, first, left = 0, 0, 0
    for right, start in enumerate(starts):
        while start - starts[left] > window:
            left += 1
        if right - left + 1 > peak:
            peak, first = right - left + 1, left
    return peak, first


@dataclass
class Folded:
    """What ``analyze --follow`` folded out of a group's held lines (fold.py): counted, not held.

    ``events`` and ``rebalances`` count them; the rest sums up the folded rebalances for the rules that count
    over the whole log (rebalance-storm: ``COUNTS_FOLDED``), so that their figures are those ``analyze`` of the
    same log states. Its size does not grow with the log: counters, one line, and the starts of one window."""

    events: int = 0
    rebalances: int = 0
    until: datetime | None = None       # the last cut: lines before it are folded
    first_event: dict | None = field(default=None, repr=False)   # the group's first line with a time
    counted: int = 0                    # rebalances not part of an expected operation
    expected: int = 0                   # ... and those that are
    operations: dict[str, int] = field(default_factory=dict)   # operation (or "unknown") -> counted rebalances
    culprits: dict[str, int] = field(default_factory=dict)     # culprit's identity -> counted rebalances
    culprit_of: dict[str, "Culprit"] = field(default_factory=dict)
    starters: set[str] = field(default_factory=set)            # who rejoined first in those of no logged cause
    unstable_ms: int = 0                # time without a stable generation in the counted ones
    first_start: datetime | None = None  # of the first counted rebalance
    peak: int = 0                       # most counted rebalances within one ``window``
    window: timedelta | None = None     # the window of ``peak`` (rebalance-storm's window_minutes)
    recent: list[datetime] = field(default_factory=list)       # counted starts within ``window`` of the last
    # Members' departures folded (membership-flapping, ``COUNTS_FOLDED``: its ``fold`` fills them): member (or Streams
    # client node) -> departures, the start of its first one, the operations of those rebalances, and its rejoins
    # told UNKNOWN_MEMBER_ID. One entry per member that left, not per line: flapping spanning the window is still found.
    departures: dict[str, int] = field(default_factory=dict)
    departed_first: dict[str, datetime] = field(default_factory=dict)
    departure_operations: dict[str, dict[str, int]] = field(default_factory=dict)
    removals: dict[str, int] = field(default_factory=dict)
    member_counts: list[int] = field(default_factory=list)   # the first folded generations' sizes (twelve at most)

    def add(self, rebalances: list["Rebalance"]) -> None:
        """Count rebalances that are being folded (all of them before the cut, so after those folded before)."""
        counted = [r for r in rebalances if r.verdict != "expected"]
        self.rebalances += len(rebalances)
        self.expected += len(rebalances) - len(counted)
        self.counted += len(counted)
        for r in counted:
            operation = r.operation or "unknown"
            self.operations[operation] = self.operations.get(operation, 0) + 1
            if r.culprit_name:
                self.culprits[r.culprit_name] = self.culprits.get(r.culprit_name, 0) + 1
                if r.culprit is not None:
                    self.culprit_of.setdefault(r.culprit_name, r.culprit)
            if operation == "unknown" and r.trigger_member:
                self.starters.add(r.trigger_member)
        self.unstable_ms += unstable_ms(counted)
        starts = sorted(r.start for r in counted if r.start)
        if starts and self.first_start is None:
            self.first_start = starts[0]
        if self.window is not None and starts:
            starts = self.recent + starts
            self.peak = max(self.peak, peak_within(starts, self.window)[0])
            self.recent = [s for s in starts if starts[-1] - s <= self.window]

    def absorb(self, other: "Folded") -> "Folded":
        """This group's folded counts with those of ``other`` (a group found to be this one: live.py's rename)."""
        self.events += other.events
        self.rebalances += other.rebalances
        self.until = max((t for t in (self.until, other.until) if t is not None), default=None)
        if other.first_event is not None and (self.first_event is None or (other.first_event.get("ts") and (
                self.first_event.get("ts") is None or other.first_event["ts"] < self.first_event["ts"]))):
            self.first_event = other.first_event
        self.counted += other.counted
        self.expected += other.expected
        for mine, theirs in ((self.operations, other.operations), (self.culprits, other.culprits),
                             (self.departures, other.departures), (self.removals, other.removals)):
            for k, n in theirs.items():
                mine[k] = mine.get(k, 0) + n
        for k, c in other.culprit_of.items():
            self.culprit_of.setdefault(k, c)
        self.starters |= other.starters
        self.unstable_ms += other.unstable_ms
        self.first_start = min((t for t in (self.first_start, other.first_start) if t is not None), default=None)
        self.peak = max(self.peak, other.peak)
        self.recent = sorted(self.recent + other.recent)
        for k, t in other.departed_first.items():
            self.departed_first[k] = min(t, self.departed_first.get(k, t))
        for k, ops in other.departure_operations.items():
            mine = self.departure_operations.setdefault(k, {})
            for op, n in ops.items():
                mine[op] = mine.get(op, 0) + n
        self.member_counts = (other.member_counts + self.member_counts)[:12]
        return self

    def copy(self) -> "Folded":
        """As of now: the folds that follow count on in the original."""
        return replace(self, operations=dict(self.operations), culprits=dict(self.culprits),
                       culprit_of=dict(self.culprit_of), starters=set(self.starters), recent=list(self.recent),
                       departures=dict(self.departures), departed_first=dict(self.departed_first),
                       departure_operations={k: dict(v) for k, v in self.departure_operations.items()},
                       removals=dict(self.removals), member_counts=list(self.member_counts))
