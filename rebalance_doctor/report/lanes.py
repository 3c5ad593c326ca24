"""The swimlanes of the HTML report: one lane per process, the marks on each, as data report.js draws.

A lane is a process as its own log shows it: a Kafka Streams thread (its host, its Streams client's
process id, ``StreamThread-n``), a Connect worker (host and worker client.id), a plain consumer (host
and client.id; the file too when one host writes several files for one client.id). A process of the
same name that starts again (a config dump or version banner after lines of the previous one) is a
new lane; a new member id in the same process (a rejoin after a poll timeout) is not. A Streams
client's own lines (its state, a shutdown it asks for) get a lane only when they mark something.
The coordinator has a lane per broker that logged the group.

Each line is drawn on the lane of the process that wrote it, never on the lane of a member it only
mentions (a leader's assignor names every member). A coordinator's line of a *cause* kind (a
session expiry, a fencing: marks.toml) is drawn on the lane of the member it happened to. Each
finding's culprit lane is flagged with the finding's rule, and the lines a finding names as its
evidence are flagged on their marks (report.js rings them). Lanes with nothing to draw are not made.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Callable

import regex

from ..core.toml import load_toml
from ..timeline import identity
from ..timeline.identity import short
from ..core import eventnames as EV

ASSETS = Path(__file__).with_name("assets")
BUCKETS = 3000          # time buckets across a group's window: marks in one bucket, lane and kind are one mark
SAMPLES_PER_MARK = 3    # evidence lines kept per aggregated mark
MAX_LANES = 48          # process lanes per group; the quietest beyond it share one lane
SEVERITIES = ("critical", "warning", "info")

_THREAD = regex.compile(r"^(?P<node>.+?)-(?P<thread>(?:Global)?StreamThread(?:-\d+)?)$")
_DIGITS = regex.compile(r"(\d+)")


@lru_cache(maxsize=1)
def kinds() -> dict[str, dict]:
    """The mark kinds of marks.toml, in drawing priority."""
    return load_toml(ASSETS / "marks.toml")["kinds"]


@lru_cache(maxsize=1)
def _by_event() -> tuple[dict[str, str], dict[str, list[tuple[str, list[str]]]]]:
    plain: dict[str, str] = {}
    worded: dict[str, list[tuple[str, list[str]]]] = {}
    for kind, spec in kinds().items():
        for event in spec["events"]:
            if spec.get("words"):
                worded.setdefault(event, []).append((kind, [w.lower() for w in spec["words"]]))
            else:
                plain.setdefault(event, kind)
    return plain, worded


def kind_of(event: dict) -> str | None:
    """The mark kind of an event (marks.toml): a kind with `words` first, when its reason or error says them;
    an ERROR line of no kind is an error."""
    plain, worded = _by_event()
    name = event["event"]
    for kind, words in worded.get(name, ()):
        text = f"{event.get('reason') or ''} {event.get('error') or ''}".lower()
        if any(w in text for w in words):
            return kind
    kind = plain.get(name)
    if kind is None and (event.get("level") or "").upper() in ("ERROR", "FATAL"):
        kind = "error"
    return kind


@dataclass
class Lane:
    key: tuple
    kind: str                   # coordinator | streams | client | connect | consumer | file | culprit
    host: str
    name: str = ""              # the member identity as the timeline names it (a broker: its host)
    thread: str | None = None   # StreamThread-n
    node: str | None = None     # a Streams client's process (application.id-UUID)
    process: int = 0            # the restart a lane is of (0: the first process seen)
    events: int = 0             # lines of its own
    marks: int = 0
    first: int | None = None    # its own first and last line (ms from the window's start)
    last: int | None = None
    culprit: list[str] = field(default_factory=list)    # rules whose culprit it is
    title: str = ""
    sub: str = ""

    @property
    def drawn(self) -> bool:
        """Something of it is drawn: a mark, its life line (a process lane), or a culprit's flag."""
        if self.kind in ("client", "file"):
            return self.marks > 0 or bool(self.culprit)
        if self.kind == "culprit":      # named by a finding, no line of its own, none of the coordinator's about it
            return self.marks > 0
        return self.events > 0 or self.marks > 0 or bool(self.culprit)


class Lanes:
    """The lanes of one group and what is drawn on them; ``rows()``, ``mark_rows()``, ``legend()`` for the page."""

    def __init__(self, group, sample: Callable[[dict], int | None] | None = None):
        self.g = group
        self.tl = group.timeline
        self.sample = sample or (lambda event: None)
        self.t0 = self.tl.start
        self.t0_us = int(self.t0.timestamp() * 1_000_000) if self.t0 else 0
        span_ms = max(self.tl.window_ms, 1)
        self.bucket_ms = max(span_ms / BUCKETS, 1.0)
        self.lanes: dict[tuple, Lane] = {}
        self.by_identity: dict[str, list[Lane]] = {}     # member identity -> its process lanes, in order
        self.marks: dict[tuple, list] = {}
        self._restarts: dict[str, list[datetime]] = {}
        self._evidence: dict[str, list[str]] = {}
        self._marked: dict[tuple, list[dict]] = {}
        self._writers: dict[tuple, str | None] = {}
        for f in self._judged(group.findings):
            for ev in f.evidence:
                self._evidence.setdefault(ev.ref(), []).append(f.rule)
        self._build()

    @staticmethod
    def _judged(findings) -> list:
        """The findings whose culprit and evidence the lanes show: problems (an info finding names who did an
        operation, not a culprit)."""
        return [f for f in findings if f.severity in ("critical", "warning")]

    # ------------------------------------------------------------------------------ who wrote a line

    def _ms(self, ts: datetime) -> int:
        return (int(ts.timestamp() * 1_000_000) - self.t0_us) // 1000

    def writer(self, event: dict) -> str | None:
        """The identity of the process that wrote a client line, as the timeline names members (its client.id
        or thread without the -consumer suffix; with @host when several hosts share the client.id)."""
        key = (event.get("client"), event.get("thread"), event.get("library"), event.get("host"), event.get("source"))
        known = self._writers.get(key, _UNSET)
        if known is _UNSET:
            known = self._writers[key] = self._writer(event)
        return known

    def _writer(self, event: dict) -> str | None:
        # a client.id the timeline lent a process's lines from the member id it linked them to (timeline/lives.py)
        # is not how the process names itself: its lines stay on its library's lane
        lent = (event.get("attrs") or {}).get("client_from") == "lives"
        client = (None if lent else event.get("client")) or event.get("thread")
        host = event.get("host")
        if client:
            name = identity.canonical(client)
        elif event.get("library") and host:
            name = f"{event['library']}@{host}"
        else:
            return None
        if name in self.tl.shared_names and host:
            name = f"{name}@{host}:{event.get('source') or ''}" if name in self.tl.per_file else f"{name}@{host}"
        return name

    def _restart_times(self, name: str) -> list[datetime]:
        """The starts of a new process of `name` after lines of an earlier one (classify.members' starts,
        a burst of start lines counted once)."""
        known = self._restarts.get(name)
        if known is not None:
            return known
        members = getattr(self.tl.classification, "members", None)
        member = members.get(name) if members is not None else None
        out: list[datetime] = []
        if member is not None and member.starts and member.own_times:
            previous = None
            for start in member.starts:
                lo = bisect_right(member.own_times, previous) if previous is not None else 0
                if lo < len(member.own_times) and member.own_times[lo] < start:
                    out.append(start)
                    previous = start
        self._restarts[name] = out
        return out

    def _member_lane(self, name: str, host: str, ts: datetime | None) -> Lane:
        kind, node, thread = _streams_parts(name)
        process = 0
        if kind is None:
            kind = "connect" if self._component(name) == "connect" else "consumer"
            restarts = self._restart_times(name)
            process = bisect_right(restarts, ts) if restarts and ts is not None else 0
        key = ("member", name, process)
        lane = self.lanes.get(key)
        if lane is None:
            lane = self.lanes[key] = Lane(key, kind, host, name=name, thread=thread, node=node, process=process)
            self.by_identity.setdefault(name, []).append(lane)
        return lane

    def _component(self, name: str) -> str | None:
        return self._components.get(name)

    def _lane_of(self, name: str | None, ts: datetime | None) -> Lane | None:
        """The lane of a member identity's process at ts (the latest that started before it), if it has one."""
        lanes = self.by_identity.get(name or "")
        if not lanes:
            return None
        if len(lanes) == 1 or ts is None:
            return lanes[-1]
        process = bisect_right(self._restart_times(name), ts)
        return next((lane for lane in lanes if lane.process == process), lanes[-1])

    # ------------------------------------------------------------------------------------ the lanes

    def _build(self) -> None:
        tl = self.tl
        # The component each writer logs as (a Connect worker's lines say connect), and the writers of each
        # file: a line naming no client is its file's one writer's, when the file has one.
        self._components: dict[str, str] = {}
        writers_of: dict[str, set] = {}
        written: list[tuple[dict, str | None]] = []
        for event in tl.events:
            if event.get("component") == "broker":
                written.append((event, None))
                continue
            name = self.writer(event)
            written.append((event, name))
            if name:
                self._components.setdefault(name, event.get("component") or "")
                writers_of.setdefault(event.get("source") or "", set()).add(name)
        # Every process's lanes first (a coordinator's line may name a member before the member's own first line).
        placed: list[tuple[dict, Lane | None, str | None]] = []
        for event, name in written:
            ts = event.get("ts")
            host = event.get("host") or "?"
            kind = kind_of(event)
            if event.get("component") == "broker":
                self._coordinator(host)
                placed.append((event, None, kind))
                continue
            if name is None:
                source = event.get("source") or ""
                own = writers_of.get(source, set())
                nodes = {identity.node_of(w) or w for w in own}
                if len(own) == 1:
                    name = next(iter(own))
                elif len(nodes) == 1 and identity.node_of(next(iter(nodes))):
                    name = next(iter(nodes))      # one Streams process's file: its client's line
                elif kind is None:
                    continue                      # nothing to draw of a line no process is known to have written
                else:
                    key = ("file", host, source)
                    lane = self.lanes.get(key) or self.lanes.setdefault(key, Lane(key, "file", host, name=source))
                    placed.append((event, lane, kind))
                    continue
            placed.append((event, self._member_lane(name, host, ts), kind))
        # The culprits' lanes before the coordinator's lines are placed: a culprit with no line of its own here
        # gets a lane, and the coordinator's expiry of it is drawn there.
        self._culprits()
        for event, lane, kind in placed:
            ts = event.get("ts")
            if lane is not None:
                self._own(lane, event, kind)
                continue
            lane = self._coordinator(event.get("host") or "?")
            self._own(lane, event, None)
            if kind is None or ts is None:
                continue
            if kinds()[kind].get("cause"):
                about = self._lane_of(tl.who(event), ts)
                if about is not None:       # the member's own process: drawn there, logged by the coordinator
                    self._mark(about, event, kind, via="coordinator")
                    continue
            self._mark(lane, event, kind)
        self._deaths()

    def _deaths(self) -> None:
        """Each StreamThread death the classification found (classify/threads.py), on the dead thread's lane: its
        own "thread died" line is marked already; one its Streams client logged for it (the uncaught exception
        handler replacing it) is marked there too, as the client's."""
        threads = getattr(self.tl.classification, "threads", None)
        for d in getattr(threads, "deaths", ()):
            event = d.first
            ts = event.get("ts")
            lane = self._lane_of(identity.canonical(d.thread), ts)
            if lane is None or ts is None:
                continue
            if self._marked.get((lane.key, "thread-died")) and any(
                    e is event or e.get("event") == EV.STREAMS_THREAD_DIED and e.get("ts") == ts
                    for e in self._marked[(lane.key, "thread-died")]):
                continue
            self._mark(lane, event, "thread-died", via=None if self.writer(event) == lane.name else "client")

    def _coordinator(self, host: str) -> Lane:
        key = ("coordinator", host)
        lane = self.lanes.get(key)
        if lane is None:
            lane = self.lanes[key] = Lane(key, "coordinator", host, name=host)
        return lane

    def _own(self, lane: Lane, event: dict, kind: str | None) -> None:
        lane.events += 1
        ts = event.get("ts")
        if ts is None:
            return
        ms = self._ms(ts)
        lane.first = ms if lane.first is None else min(lane.first, ms)
        lane.last = ms if lane.last is None else max(lane.last, ms)
        if kind is not None:
            self._mark(lane, event, kind)

    def _mark(self, lane: Lane, event: dict, kind: str, via: str | None = None) -> None:
        lane.marks += 1
        if kind == "thread-died":
            self._marked.setdefault((lane.key, kind), []).append(event)
        ms = self._ms(event["ts"])
        slot = (lane.key, int(ms / self.bucket_ms), kind, via)
        mark = self.marks.get(slot)
        if mark is None:
            self.marks[slot] = mark = [ms, 0, [], set(), set()]
        mark[1] += 1
        mark[3].add(event["event"])
        mark[4].update(self._evidence.get(f"{event.get('source')}:{event.get('line')}", ()))
        if len(mark[2]) < SAMPLES_PER_MARK:
            sample = self.sample(event)
            if sample is not None and sample not in mark[2]:
                mark[2].append(sample)

    def _culprits(self) -> None:
        """Flag each finding's culprit lane (a lane made for a culprit that wrote no line of its own here)."""
        for f in self._judged(self.g.findings):
            c = f.culprit
            if c is None:
                continue
            lane = self._culprit_lane(c, f.start)
            if lane is None:
                continue
            if f.rule not in lane.culprit:
                lane.culprit.append(f.rule)

    def _culprit_lane(self, c, ts: datetime | None) -> Lane | None:
        names = []
        for raw in (c.client, identity.client_of_member(c.member) if c.member else None):
            if raw:
                name = identity.canonical(raw)
                names += [f"{name}@{c.host}", name] if c.host else [name]
        if c.member:
            known = self.tl.directory.get(c.member)
            if known:
                names.insert(0, known)
        for name in names:
            lane = self._lane_of(name, ts)
            if lane is not None and (c.host is None or lane.host == c.host):
                return lane
            node = identity.node_of(name)
            if node == name:      # a Streams client named with no lane of its own: its first thread's
                threads = [l for l in self.lanes.values() if l.node == node and l.kind == "streams"]
                if threads:
                    return min(threads, key=lambda l: _natural(l.thread or ""))
        if c.host and not c.client and not c.member:
            # Known by its host only: a broker (the coordinator that was on it), or a process whose lines name no
            # client (a non-Java client's): the process lane on that host.
            lane = self.lanes.get(("coordinator", c.host))
            if lane is not None:
                return lane
            return self._busiest([l for l in self.lanes.values() if l.host == c.host
                                  and l.kind in ("consumer", "connect", "streams", "client")], ts)
        if c.host and c.client:
            # Its client.id on its host, in one of several files (the timeline names those members by file too).
            client = identity.canonical(c.client)
            lane = self._busiest([l for l in self.lanes.values() if l.kind in ("consumer", "connect")
                                  and l.host == c.host and _bare(l.name, l.host) == client], ts)
            if lane is not None:
                return lane
            # A client.id the process's own lines never print (timeline.lives inferred its member id, and the
            # client.id with it, from the coordinator's lines): the host's one process lane, when it has one.
            processes = [l for l in self.lanes.values() if l.host == c.host
                         and l.kind in ("consumer", "connect", "streams", "client")]
            if len(processes) == 1 and c.member is not None and any(
                    e.get("member") == c.member and e.get("host") == c.host
                    and (e.get("attrs") or {}).get("member_from") == "lives" for e in self.tl.events):
                return processes[0]
        if not names:
            return None
        key = ("culprit", names[-1])
        lane = self.lanes.get(key)
        if lane is None:
            lane = self.lanes[key] = Lane(key, "culprit", c.host or "?", name=names[-1])
            for name in names:
                self.by_identity.setdefault(name, [lane])
        return lane

    def _busiest(self, lanes: list[Lane], ts: datetime | None) -> Lane | None:
        """Of several lanes, the one whose own lines cover ts, else the one with the most lines."""
        if not lanes:
            return None
        at = self._ms(ts) if ts is not None else None
        alive = [l for l in lanes if at is not None and l.first is not None and l.first <= at <= (l.last or at)]
        return max(alive or lanes, key=lambda l: l.events)

    # ------------------------------------------------------------------------------- for the page

    def ordered(self) -> list[Lane]:
        """Drawn lanes: coordinators first, then the processes by host, Streams process, thread, restart."""
        drawn = [lane for lane in self.lanes.values() if lane.drawn]
        coordinators = sorted((l for l in drawn if l.kind == "coordinator"), key=lambda l: l.host)
        members = [l for l in drawn if l.kind != "coordinator"]
        node_first = {}
        for lane in members:
            if lane.node and lane.first is not None:
                node_first[lane.node] = min(node_first.get(lane.node, lane.first), lane.first)
        members.sort(key=lambda l: (l.host, node_first.get(l.node, 0) if l.node else 0, l.node or "",
                                    l.kind != "client", _natural(l.thread or short(l.name)), l.process))
        return coordinators + members

    def _labels(self, lanes: list[Lane]) -> None:
        """Title (bold) and subtitle of each lane: its host, and what tells it from the other lanes there."""
        nodes_on: dict[str, set] = {}
        processes: dict[str, int] = {}
        for lane in lanes:
            if lane.node:
                nodes_on.setdefault(lane.host, set()).add(lane.node)
            processes[lane.name] = max(processes.get(lane.name, 0), lane.process)
        for lane in lanes:
            if lane.kind == "coordinator":
                lane.title, lane.sub = "coordinator", f"broker {lane.host}"
                continue
            lane.title = lane.host
            node = f" · process {_process_id(lane.node)}" if lane.node and len(nodes_on.get(lane.host, ())) > 1 else ""
            if lane.kind == "streams":
                lane.sub = f"{lane.thread}{node}"
            elif lane.kind == "client":
                lane.sub = f"Streams client{node}"
            elif lane.kind == "file":
                lane.sub = f"{lane.name.rsplit('/', 1)[-1]}: lines naming no client"
            elif lane.kind == "culprit":
                lane.sub = f"{short(_bare(lane.name, lane.host))} (no log of its own here)"
            else:
                sub = short(_bare(lane.name, lane.host))
                lane.sub = (f"worker {sub}" if lane.kind == "connect" else sub) + (
                    f" · process {lane.process + 1}" if processes.get(lane.name, 0) else "")
        # One host writing one client.id into several files (two applications, or two incidents read together):
        # the file tells them apart.
        seen: dict[tuple, list[Lane]] = {}
        for lane in lanes:
            seen.setdefault((lane.title, lane.sub), []).append(lane)
        for same in seen.values():
            if len(same) > 1:
                files = [lane.name.rpartition(f"@{lane.host}:")[2] for lane in same]
                for n, (lane, where) in enumerate(zip(same, _distinct_tails(files)), start=1):
                    lane.sub += f" · {where}" if where else f" · #{n}"

    def rows(self) -> tuple[list[dict], dict[tuple, int]]:
        """The lanes for the page (beyond MAX_LANES processes the quietest share one) and each key's row."""
        lanes = self.ordered()
        coordinators = [l for l in lanes if l.kind == "coordinator"]
        members = [l for l in lanes if l.kind != "coordinator"]
        rest: list[Lane] = []
        if len(members) > MAX_LANES:
            keep = set(id(l) for l in sorted(members, key=lambda l: (not l.culprit, -l.marks, -l.events))[: MAX_LANES - 1])
            rest = [l for l in members if id(l) not in keep]
            members = [l for l in members if id(l) in keep]
        shown = coordinators + members
        self._labels(shown)
        hosts: dict[str, int] = {}
        out = []
        for lane in shown:
            shade = 0 if lane.kind == "coordinator" else hosts.setdefault(lane.host, len(hosts)) % 2
            out.append({"kind": lane.kind, "title": lane.title, "sub": lane.sub, "host": lane.host,
                        "full": lane.name, "events": lane.events, "marks": lane.marks, "shade": shade,
                        "life": [lane.first, lane.last] if lane.first is not None and lane.kind != "file" else None, "culprit": list(lane.culprit)})
        positions = {lane.key: i for i, lane in enumerate(shown)}
        if rest:
            lives = [l for l in rest if l.first is not None]
            out.append({"kind": "others", "title": f"{len(rest)} other processes", "sub": "the quietest, together",
                        "host": "", "full": "", "events": sum(l.events for l in rest), "marks": sum(l.marks for l in rest),
                        "shade": 0, "life": [min(l.first for l in lives), max(l.last for l in lives)] if lives else None,
                        "culprit": sorted({r for l in rest for r in l.culprit})})
            positions.update({l.key: len(out) - 1 for l in rest})
        return out, positions

    def mark_rows(self, positions: dict[tuple, int]) -> list[list]:
        """[lane row, ms, kind, count, sample ids, event names, rules whose evidence it is, via]."""
        out = []
        for (key, _, kind, via), (ms, count, lines, names, rules) in sorted(self.marks.items(), key=lambda kv: kv[1][0]):
            if key not in positions:
                continue
            out.append([positions[key], ms, kind, count, lines, sorted(names), sorted(rules), via])
        return out

    def legend(self, lane_rows: list[dict], mark_rows: list[list], rebalances: list[dict], findings: list[dict]) -> list[list]:
        """What the page draws for this group, each with what it means: [what, id, text]."""
        out: list[list] = []
        verdicts = {r["v"] for r in rebalances if r["o"] != "failed"}
        for verdict, text in (("harmful", "harmful rebalance: from its start to the last member's assignment"),
                              ("expected", "expected rebalance (a deploy, a scale-out, a followup)"),
                              ("unknown", "rebalance not classified")):
            if verdict in verdicts:
                out.append(["band", verdict, text])
        if any(r["o"] == "failed" for r in rebalances):
            out.append(["band", "failed", "failed rebalance attempt (hatched, red edge)"])
        present = {m[2] for m in mark_rows}
        for kind, spec in kinds().items():
            if kind in present:
                out.append(["mark", kind, spec["legend"]])
        if any(m[6] for m in mark_rows):
            out.append(["ring", "evidence", "ringed: a line a finding names as its evidence"])
        vias = {m[7] for m in mark_rows if m[7]}
        if vias:
            by = " or ".join({"coordinator": "the coordinator", "client": "its Streams client"}[v] for v in sorted(vias))
            out.append(["via", "coordinator", f"dot inside: logged by {by} about this member"])
        if any(row["life"] for row in lane_rows):
            out.append(["line", "life", "grey line: the lane's own log lines about the group, first to last (a process "
                                        "that stops logging, dies or is restarted ends its line)"])
        if any(row["culprit"] for row in lane_rows):
            out.append(["culprit", "culprit", "red bar and label: the culprit a finding names (its rule beside the label, or on hover where it does not fit)"])
        for severity in SEVERITIES:
            if any(f["sev"] == severity and f["s"] is not None for f in findings):
                out.append(["finding", severity, f"{severity} finding: from its first to its last evidence line"])
        out.append(["line", "shade", "lanes of one host share a shade"])
        return out


_UNSET = object()


@lru_cache(maxsize=65536)
def _streams_parts(name: str) -> tuple[str | None, str | None, str | None]:
    """(streams | client | None, its Streams process, its thread) of a member identity."""
    node = identity.node_of(name)
    if not node:
        return None, None, None
    m = _THREAD.match(name)
    if m and name != node:
        return "streams", m["node"], m["thread"]
    return ("client", name, None) if node == name else (None, None, None)


def _distinct_tails(paths: list[str]) -> list[str]:
    """The shortest trailing parts of the paths that tell them apart ('' for all when none does)."""
    parts = [p.split("/") for p in paths]
    for k in range(1, max((len(p) for p in parts), default=0) + 1):
        tails = ["/".join(p[-k:]) for p in parts]
        if len(set(tails)) == len(tails):
            return tails
    return [""] * len(paths)


def _natural(text: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(text))


def _process_id(node: str | None) -> str:
    """A Streams process id (application.id-UUID) as its UUID's first 8 characters."""
    if not node:
        return ""
    m = regex.search(r"([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", node)
    return m[1] if m else node


def _bare(name: str, host: str) -> str:
    """An identity without the @host (and :file) the timeline adds when hosts share a client.id."""
    at = name.find(f"@{host}")
    return name[:at] if at > 0 else name
