"""The diagnosis of logs that are still being written (``analyze --follow``): poll, parse, diagnose, diff.

``Live`` reads what is there, then on every ``step`` takes what the followed inputs gained
(``core.tail``), parses it as it completes (``core.growing``, the same parsing as ``events``) and,
when new events arrived, runs the diagnosis again over every event so far (``api.diagnose``: the
same timeline, classification and rules as ``analyze``, fed all at once). The findings are then
compared with the last ones by their key (rule, group, culprit): a finding is reported once when
it appears, again only when it changed (its severity, title, summary, culprit or cause), never
repeated.

The command's follow diagnoses in the background (``background``): the diagnosis runs in a thread over the
events held when it started while ``step`` goes on reading (what is read meanwhile waits beside them for the
next diagnosis), so that a pipe's writer is never held up by a diagnosis.

Bounded: after each diagnosis, what is older than the rules' longest window behind the newest line
is folded into counts (``fold.py``), so the events held, and what a diagnosis costs, stay those of one
window per group however long the log grows; the findings already reported are kept, their counts
going on from what was folded.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from . import api
from .core import handles
from .core.growing import GrowingText
from .core.options import ReadOptions
from .core.reader import UNKNOWN_LAYOUT, byte_ranges, detect_source, read_unit, toolkit, unit_layout, Unit
from .core.stats import RunStats
from .core.tail import Follower
from .fold import Fold
from .engines.local import sort_key
from .rules.config import AnalysisConfig
from .rules.finding import Finding
from .timeline import unnamed

# A record is held back until the next one starts, or until its writer has been quiet this long
# (a logger writes a record in one go): then it is parsed as complete.
QUIET_S = 0.3
# The diagnosis runs again over the events held (one window per group: fold.py); it waits at least
# this many times its last duration after it ends, so that reading (which costs per new line) keeps
# at least half of the time in a burst; findings then come later, not the lines.
PACE = 1.0
NEW, UPDATED, WITHDRAWN = "new", "updated", "withdrawn"


@dataclass
class Change:
    """A finding that appeared (``new``), changed (``updated``), or no longer holds (``withdrawn``:
    the lines that came later explain it otherwise)."""

    state: str
    finding: Finding


def finding_key(f: Finding) -> tuple:
    """What a finding is about: its rule, its group and who caused it (the culprit's client, or
    instance, or host: a member id changes with every rejoin and would make a new finding of it)."""
    c = f.culprit
    who = (c.client or c.instance or c.host or c.member) if c is not None else None
    return (f.rule, f.group, who)


def _signature(f: Finding) -> tuple:
    return (f.severity, f.title, f.summary, f.culprit.label if f.culprit else None, f.cause)


class Live:
    """The follow session: its inputs, the events read so far, the latest diagnosis."""

    def __init__(self, inputs: list[str], options: ReadOptions, config: AnalysisConfig,
                 clock: Callable[[], float] = time.monotonic, redactor=None, background: bool = False):
        """``redactor`` (``report.redact.Redactor``, with ``--redact``): learns every identifier as it is read,
        so that what is shown while following can be redacted with placeholders that the final report keeps.
        ``background`` (the command's follow): a diagnosis runs in a thread of its own while ``step`` goes on
        reading (a pipe's writer is never held up by it); its changes come with the first step after it ends.
        Without it (the library, the tests), ``step`` diagnoses in place."""
        self.inputs = list(inputs)
        self.options = options
        self.config = config
        self.clock = clock
        self.kit = toolkit(options)
        self.stats = RunStats(inputs=list(inputs), packs=dict(self.kit.packs.versions), engine="follow")
        # Clusters as --cluster names them, else as each file's head states them (core/growing.py: known as the
        # head arrives), keyed as analyze keys them (timeline/clusters.py).
        self.follower = Follower(inputs, host=options.host, exclude=options.exclude, clusters=options.clusters)
        for skipped in self.follower.plan.skipped.skipped:
            self.stats.skip(skipped.source, skipped.reason, skipped.kind, skipped.size)
        self.texts: dict[tuple, GrowingText] = {}
        self.last_data: dict[tuple, float] = {}
        self._accounted: set[tuple] = set()           # texts in the accounting (read or skipped)
        self.events: list[dict] = []                 # the events held: what is not folded (fold.py)
        self.fold = Fold.of(config.thresholds)
        self.newest = None                           # the newest time of a line read
        self.events_read = 0
        self.redactor = redactor
        if redactor is not None:
            for tail in self.follower.plan.tails:
                self._know_host(getattr(tail, "source", None) or getattr(tail, "base", None))
            for source in self.follower.plan.once:
                self._know_host(source)
        self.notes: list[str] = []
        self.analysis: api.Analysis | None = None
        self.reported: dict[tuple, tuple] = {}       # finding key -> the signature last reported
        self._shown_in: dict[int, str] = {}          # id of a held line -> the group the last diagnosis put it in
        self.nothing_matched: api.NothingMatched | None = None
        self._dirty = False
        self.ended = False       # step(final=True) ran: the logs are taken as complete
        self.background = background
        self._job: _Job | None = None                # the diagnosis running in the background
        self._started = clock()
        self._diagnosed_at = self._started
        self.diagnosis_s = 0.0                       # how long the last diagnosis took
        self._read_once()

    @property
    def diagnosed(self) -> bool:
        """A diagnosis in the background has ended: the next ``step`` shows its changes (the command's tick
        does not wait out its sleep for it)."""
        return self._job is not None and self._job.done.is_set()

    @property
    def followable(self) -> bool:
        return self.follower.followable

    def _read_once(self) -> None:
        """Compressed files, bundles and rotated files: read whole now, not followed."""
        for source in self.follower.plan.once:
            detection, reason = detect_source(source, self.options, self.kit)
            if detection is None:
                self.stats.skip(source.name, reason or "unreadable", size=source.size)
                continue
            layout = unit_layout(detection, self.options, self.kit)
            container = detection.container.name if detection.container else None
            file_stats = None
            found: list[dict] = []
            for part, (start, end) in enumerate(byte_ranges(source, 1 << 62)):
                result = read_unit(Unit(source, layout, container, start, end, part), self.options)
                found += result.events
                if file_stats is None:
                    file_stats = result.stats
                else:
                    file_stats.merge(result.stats)
            if not detection.known:
                self.stats.warn(source.name, UNKNOWN_LAYOUT)
            handles.resolve(found)
            self._note_times(found)
            self.events += found
            if file_stats is not None:
                self.stats.files.append(file_stats)
        if self.events:
            self._dirty = True

    def step(self, final: bool = False) -> list[Change]:
        """Read what the inputs gained, and when events came, diagnose again: the changes of the findings.
        ``final``: the session ends; every record held back is parsed."""
        now = self.clock()
        self.ended = final       # the last diagnosis takes each log's end for its process's stop, as analyze does
        for piece in self.follower.poll():
            text = self.texts.get(piece.key)
            if text is None:
                text = self.texts[piece.key] = GrowingText(piece.source, self.options, self.kit)
                self._know_host(piece.source)
            if piece.data:
                self._add(text.feed(piece.data))
                self.last_data[piece.key] = now
                if text.cluster_changed:
                    self._restamp(text)
            if piece.ended:
                self._add(text.close())
        for key, text in self.texts.items():
            if final:
                self._add(text.close())
            elif now - self.last_data.get(key, now) >= QUIET_S:
                self._add(text.flush())
            self.notes += text.notes
            text.notes = []
            self._account(key, text)
        self.notes += self.follower.take_notes()
        self.stats.seconds = now - self._started
        changes = self._collect(wait=final)
        if self._job is not None:
            return changes   # still diagnosing: reading goes on, the next diagnosis waits for this one
        if not self._dirty and self.analysis is not None:
            return changes
        if not final and self.analysis is not None and now - self._diagnosed_at < PACE * self.diagnosis_s:
            return changes
        if self.background and not final:
            self._start()
            return changes
        return changes + self._diagnose()

    def _start(self) -> None:
        """Diagnose the events held so far in a thread; the events read meanwhile are held beside them."""
        self._dirty = False
        self.events.sort(key=sort_key)
        unnamed.forget(self.events)   # decided anew from every line held (a group named by a line read since)
        job = self._job = _Job(self.events, self.newest, self.fold.folded(), self.clock())
        self.events = []

        def work() -> None:
            try:
                job.analysis, job.nothing = self._analyse(job.events, job.folded)
            except BaseException as exc:   # (re-raised by the session's thread: _collect)
                job.error = exc
            finally:
                job.done.set()

        threading.Thread(target=work, name="rebalance-doctor-diagnosis", daemon=True).start()

    def _collect(self, wait: bool = False) -> list[Change]:
        """The changes of the background diagnosis once it has ended (``wait``: wait for it); else none."""
        job = self._job
        if job is None or not (job.done.is_set() or (wait and job.done.wait() is not False)):
            return []
        self._job = None
        if job.error is not None:
            raise job.error
        read_meanwhile, self.events = self.events, job.events
        changes = self._apply(job.analysis, job.nothing, job.newest, read_meanwhile)
        self.events += read_meanwhile
        self._diagnosed_at = self.clock()
        self.diagnosis_s = self._diagnosed_at - job.started
        return changes

    def _held(self) -> list[dict]:
        """Every event held, those of a diagnosis running in the background too."""
        return (self._job.events + self.events) if self._job is not None else self.events

    def _restamp(self, text: GrowingText) -> None:
        """The cluster id a followed file states came with lines read after some of its first (or a second id
        made it no one cluster's: a MirrorMaker 2 process): its events held take the cluster known now, and a
        group keyed by the cluster they had before is theirs again (timeline/clusters.py keys it anew)."""
        text.cluster_changed = False
        cluster, clients, name = text.cluster, text.clients, text.source.name
        for e in self._held():
            if e.get("source") != name:
                continue
            now = clients.of(e.get("client")) if clients is not None else cluster
            if e.get("cluster") != now:
                before, group = e.get("cluster"), e.get("group")
                if before is not None and group is not None and group.startswith(before + "/"):
                    e["group"] = group[len(before) + 1:]
                e["cluster"] = now
        self._dirty = True

    def _account(self, key: tuple, text: GrowingText) -> None:
        """A text is in the accounting once it is read as a log (its layout known) or refused (binary):
        a file read, or a file skipped with its reason, as ``analyze`` counts them."""
        if key in self._accounted:
            return
        if text.detected:
            self.stats.files.append(text.stats)
        elif text.refused is not None:
            self.stats.skip(text.source.name, text.refused, size=text.stats.unread.get("binary", 0))
        else:
            return
        self._accounted.add(key)

    def _add(self, events: list[dict]) -> None:
        if events:
            if any(handles.needs_group(e) for e in events):
                # A handle's group may be stated by its earlier lines (core/handles.py): per file and handle.
                sources = {e.get("source") for e in events}
                handles.resolve([e for e in self._held() if e.get("library") and e.get("source") in sources] + events)
            self._note_times(events)
            self.events += events
            self._dirty = True

    def _know_host(self, source) -> None:
        """A followed file's host (named by its path) is an identifier before any of its lines is read: the
        notes about the file name it."""
        if self.redactor is not None and getattr(source, "host", None) and source.host != "stdin":
            self.redactor.know(source.host, "host")

    def _note_times(self, events: list[dict]) -> None:
        self.events_read += len(events)
        if self.redactor is not None:
            for e in events:
                self.redactor.know_event(e)
        newest = max((e["ts"] for e in events if e.get("ts") is not None), default=None)
        if newest is not None and (self.newest is None or newest > self.newest):
            self.newest = newest

    def _diagnose(self) -> list[Change]:
        started = self.clock()
        changes = self._diagnosis()
        self._diagnosed_at = self.clock()
        self.diagnosis_s = self._diagnosed_at - started
        return changes

    def _diagnosis(self) -> list[Change]:
        self._dirty = False
        self.events.sort(key=sort_key)   # nearly sorted already: each tick appends in time order per file
        unnamed.forget(self.events)      # decided anew from every line held (a group named by a line read since)
        analysis, nothing = self._analyse(self.events, self.fold.folded())
        return self._apply(analysis, nothing, self.newest)

    def _analyse(self, events: list[dict], folded: dict) -> tuple:
        """The diagnosis of ``events`` (in the background, in a thread of its own): (analysis, NothingMatched)."""
        try:
            return api.diagnose(self.inputs, events, self.stats, self.config, folded, growing=not self.ended), None
        except api.NothingMatched as exc:
            # --group / --since matched nothing yet: an empty diagnosis until lines of them come (the
            # final report says so as analyze does: ``nothing_matched``).
            return api.Analysis(inputs=self.inputs, groups=[], stats=self.stats, config=self.config), exc

    def _apply(self, analysis, nothing, newest, undiagnosed: list[dict] = ()) -> list[Change]:
        """A diagnosis of ``self.events`` made: merged with what was folded, compared with the findings reported,
        and what the horizon leaves behind folded (``undiagnosed``: the events read since it started, held
        for the next one)."""
        self.nothing_matched = nothing
        self._rename({g.timeline.group for g in analysis.groups})
        analysis.groups, analysis.handle_findings = self.fold.merge(analysis.groups, list(analysis.handle_findings),
                                                                    finding_key)
        self.analysis = analysis
        changes = self._changes(list(analysis.findings))
        # What the horizon leaves behind goes now: the next diagnosis runs over one window per group.
        before = len(self.events)
        self.events = self.fold.fold(self.events, analysis.groups, analysis.handle_findings, newest, finding_key)
        if len(self.events) < before:
            held = {id(e) for e in self.events} | {id(e) for e in undiagnosed}
            for text in self.texts.values():
                text.forget(held)
        # The group each held line was reported in: the next diagnosis tells a group renamed by it (_rename).
        self._shown_in = {id(e): e["group"] for e in self.events if e.get("group")}
        return changes

    def _rename(self, groups: set[str]) -> None:
        """Groups this diagnosis (of ``self.events``) names otherwise than the last one did: every held line of a
        group reported before is now in one other group (a process's lines gathered under a name made up from the
        processes, then named by a line read later; a bare ``orders`` keyed ``prod/orders`` once a second cluster
        appears). The group is renamed, not split in two: what was folded of it and its findings reported become
        the new group's (``Fold.rename``), and each such finding is shown once as updated, under its new group."""
        moved: dict[str, set] = {}
        for e in self.events:
            was = self._shown_in.get(id(e))
            if was is not None and e.get("group") != was:
                moved.setdefault(was, set()).add(e.get("group"))
        for old, new in moved.items():
            if len(new) != 1 or None in new or old in groups:
                continue   # split, gone to no group, or still there: not a rename
            name = next(iter(new))
            self.fold.rename(old, name)
            for key in [k for k in self.reported if k[1] == old]:
                del self.reported[key]
                # (a signature no finding has: the finding is shown once more, with its new group)
                self.reported.setdefault((key[0], name, key[2]), ("renamed", old))

    def _changes(self, findings: list[Finding]) -> list[Change]:
        current = {finding_key(f): f for f in findings}
        changes: list[Change] = []
        gone = {k for k in self.reported if k not in current}
        for key, f in current.items():
            signature = _signature(f)
            before = self.reported.get(key)
            if before is None:
                # The same rule and group reported before without this culprit: the culprit became
                # known (or changed), one finding updated rather than a new one and a withdrawn one.
                twin = next((k for k in gone if k[:2] == key[:2]), None)
                if twin is not None:
                    gone.discard(twin)
                    del self.reported[twin]
                    changes.append(Change(UPDATED, f))
                else:
                    changes.append(Change(NEW, f))
            elif before != signature:
                changes.append(Change(UPDATED, f))
            self.reported[key] = signature
        for key in gone:
            del self.reported[key]
            changes.append(Change(WITHDRAWN, _withdrawn(key)))
        return changes

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def result(self) -> api.Analysis:
        """The latest diagnosis (what the final report shows)."""
        self._collect(wait=True)
        if self.analysis is None or self._dirty:
            self._diagnose()
        assert self.analysis is not None
        return self.analysis

    def close(self) -> None:
        self.follower.close()


@dataclass
class _Job:
    """A diagnosis running in the background: the events it reads (the session holds those read since beside
    them), the newest time and the folded counts as they were when it started, and what it found."""

    events: list[dict]
    newest: object
    folded: dict
    started: float
    done: threading.Event = field(default_factory=threading.Event)
    analysis: object = None
    nothing: object = None
    error: BaseException | None = None


def _withdrawn(key: tuple) -> Finding:
    rule, group, who = key
    return Finding(rule=rule, severity="info", group=group, title=f"{rule} no longer holds",
                   summary=f"the lines read since explain it otherwise" + (f" (culprit was {who})" if who else ""),
                   start=None, end=None)


__all__ = ["Change", "Live", "NEW", "QUIET_S", "UPDATED", "WITHDRAWN", "finding_key"]
