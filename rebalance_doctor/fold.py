"""The bound of ``analyze --follow``: what is older than the rules' longest window is folded into counts.

After a diagnosis, each group's events older than the *horizon* (the longest ``window_minutes`` of
the thresholds, plus the timeline's ``attach_ms``) behind the newest line read are dropped from the
live state, cut at a rebalance boundary: a rebalance still open, or one that ends within
``attach_ms`` of the cut, keeps every line from its start. What is dropped is counted per group
(events, rebalances: the rebalances of the next diagnoses are numbered after them), and the
findings of that diagnosis are kept as they were reported. A later diagnosis of the same finding
(same rule, group and culprit) is shown with the counts of the folded lines added to its count
figures (``figures.COUNT``: poll timeouts, removals, the rebalances they started), never with a
lower severity than the one reported; a finding whose lines are all folded stays as it was.

So a log that grows for hours holds the events of one horizon per group, and the findings and
totals are those of ``analyze`` of the same file as long as no finding's own lines span a fold
(docs/analyze.md says what differs when they do: the figures that are not counts, such as the
longest poll loop or a storm's peak, are those of the window).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .result import GroupAnalysis
from .rules.engine import rule_module
from .rules.figures import COUNT
from .rules.finding import Finding, rank
from .timeline.model import Folded, GroupTimeline
from .core import eventnames as EV

# Lines that say how a process is configured: written when it starts, needed by the advice of findings
# hours later (max.poll.interval.ms in force): the last of each process is never folded.
KEPT_EVENTS = frozenset({EV.CLIENT_CONFIG, EV.CLIENT_VERSION, EV.CLIENT_SUBSCRIBED, EV.STREAMS_ASSIGNOR_CONFIGURATION})


def horizon(thresholds: dict) -> timedelta:
    """The longest window a rule looks back over (any ``window_minutes`` of the thresholds), plus the
    time the timeline attaches late lines to a finished rebalance."""
    minutes = max((float(v) for table in thresholds.values() if isinstance(table, dict)
                   for k, v in table.items() if k.endswith("window_minutes")), default=60.0)
    attach_ms = int(thresholds.get("timeline", {}).get("attach_ms", 10_000))
    return timedelta(minutes=minutes, milliseconds=attach_ms)


@dataclass
class Fold:
    """The folded state of a follow session: counters per group, findings kept, counts per finding."""

    horizon: timedelta
    attach: timedelta
    groups: dict[str, Folded] = field(default_factory=dict)
    kept: dict[tuple, Finding] = field(default_factory=dict)           # finding key -> as last reported
    counts: dict[tuple, dict[str, int]] = field(default_factory=dict)  # finding key -> figure -> folded count
    kinds: dict[str, tuple] = field(default_factory=dict)              # group -> (kind, protocol, cluster) last seen
    # Kept findings the last merge put back (not of the held events: their folded lines are counted already).
    _restored: set[int] = field(default_factory=set)

    storm_window: timedelta | None = None   # the window of the folded rebalances' peak (Folded.peak)

    @classmethod
    def of(cls, thresholds: dict) -> "Fold":
        attach_ms = int(thresholds.get("timeline", {}).get("attach_ms", 10_000))
        storm = thresholds.get("rebalance-storm", {}).get("window_minutes")
        return cls(horizon(thresholds), timedelta(milliseconds=attach_ms),
                   storm_window=timedelta(minutes=float(storm)) if storm is not None else None)

    def folded(self) -> dict[str, Folded]:
        """What was folded per group, for the next diagnosis: its rebalances are numbered after the folded ones,
        and the rules that count over the whole log (``COUNTS_FOLDED``) add them."""
        return {g: f.copy() for g, f in self.groups.items() if f.rebalances or f.events}

    def cut(self, timeline: GroupTimeline, newest: datetime) -> datetime:
        """Where the group's lines may be cut: the horizon behind the newest line, moved back to the start of
        any rebalance that is open or ends too close to the cut for its late lines to have come."""
        cut = newest - self.horizon
        moved = True
        while moved:
            moved = False
            for r in timeline.rebalances:
                if r.start is not None and r.start < cut and (
                        r.outcome == "incomplete" or r.end is None or r.end + self.attach >= cut):
                    cut, moved = r.start, True
        return cut

    def fold(self, events: list[dict], groups: list[GroupAnalysis], handle_findings: list[Finding],
             newest: datetime | None, key) -> list[dict]:
        """The events still held after folding what the horizon leaves behind (``groups``: the diagnosis of
        ``events`` just made, whose findings are kept)."""
        if newest is None:
            return events
        cuts: dict[str, datetime] = {}
        for g in groups:
            tl = g.timeline
            self.kinds[tl.group] = (tl.kind, tl.protocol, tl.cluster)
            cut = self.cut(tl, newest)
            if tl.start is None or tl.start >= cut:
                continue
            cuts[tl.group] = cut
            folded = self.groups.setdefault(tl.group, Folded(window=self.storm_window))
            going = [r for r in tl.rebalances if r.start is not None and r.start < cut]
            folded.add(going)
            for fold_rule in _folders():   # rules that keep their own counts of what goes (membership-flapping)
                fold_rule(tl, going, folded)
            folded.until = cut
            for f in g.findings:
                if id(f) not in self._restored:
                    self._keep(key(f), f, cut)
        global_cut = newest - self.horizon
        for f in handle_findings:
            if id(f) not in self._restored:
                self._keep(key(f), f, global_cut)
        diagnosed = {g.timeline.group for g in groups}

        def limit(e: dict):
            # A group diagnosed and not cut keeps every line; lines of no group, or of a group the
            # diagnosis leaves out (--group, --since), go at the horizon.
            group = e.get("group")
            return cuts.get(group) if group in cuts else (None if group in diagnosed else global_cut)

        # Of the configuration lines behind the cut, the last of each process (file, client) stays: a process
        # restarted again and again for hours keeps one dump, the one in force.
        latest = {}
        for e in events:
            if e["event"] in KEPT_EVENTS and e.get("ts") is not None:
                latest[(e["event"], e.get("source"), e.get("client"), e.get("group"))] = e
        held = []
        for e in events:
            ts, cut = e.get("ts"), limit(e)
            if ts is None or cut is None or ts >= cut or (
                    e["event"] in KEPT_EVENTS and latest[(e["event"], e.get("source"), e.get("client"), e.get("group"))] is e):
                held.append(e)
            elif e.get("group") in cuts:
                folded = self.groups[e["group"]]
                folded.events += 1
                if folded.first_event is None:
                    folded.first_event = e   # the one line of the group kept: where its window starts
        return held

    def rename(self, old: str, new: str) -> None:
        """The group ``old`` is ``new`` from now on (live.py: every line of it held is now ``new``'s): what was
        folded of it is added to ``new``'s, its kept findings and their folded counts become ``new``'s."""
        folded = self.groups.pop(old, None)
        if folded is not None:
            mine = self.groups.get(new)
            self.groups[new] = folded if mine is None else mine.absorb(folded)
        kind = self.kinds.pop(old, None)
        if kind is not None:
            self.kinds.setdefault(new, kind)
        for k in [k for k in self.kept if k[1] == old]:
            f = self.kept.pop(k)
            f.group = new
            moved = (k[0], new, k[2])
            if moved not in self.kept or rank(f.severity) > rank(self.kept[moved].severity):
                self.kept[moved] = f
            counts = self.counts.pop(k, {})
            mine = self.counts.setdefault(moved, {})
            for name, n in counts.items():
                mine[name] = mine.get(name, 0) + n

    def _keep(self, k: tuple, f: Finding, cut: datetime) -> None:
        self.kept[k] = f
        counts = self.counts.setdefault(k, {})
        if _counts_folded(f.rule):
            return   # its figures count the folded rebalances themselves (Folded), from the next diagnosis on
        for figure in getattr(f, "figures", None) or []:
            if figure.unit == COUNT and isinstance(figure.value, int):
                n = sum(1 for e in figure.evidence if e.ts is not None and e.ts < cut)
                if n:
                    counts[figure.name] = counts.get(figure.name, 0) + n

    def merge(self, groups: list[GroupAnalysis], handle_findings: list[Finding], key) -> tuple[list, list]:
        """The diagnosis of the held events with what was folded: counts added, kept findings back, groups
        whose lines are all folded back with their kept findings."""
        seen: set[tuple] = set()
        self._restored = {id(f) for f in self.kept.values()}
        by_group = {g.timeline.group: g for g in groups}
        for g in groups:
            for f in g.findings:
                seen.add(self._complete(key(f), f))
        for f in handle_findings:
            seen.add(self._complete(key(f), f))
        for k, f in self.kept.items():
            if k in seen:
                continue
            if f.group is None:
                handle_findings.append(f)
                continue
            g = by_group.get(f.group)
            if g is None:
                kind, protocol, cluster = self.kinds.get(f.group, ("consumer", "classic", None))
                g = by_group[f.group] = GroupAnalysis(GroupTimeline(f.group, kind=kind, protocol=protocol,
                                                                    cluster=cluster))
                groups.append(g)
            g.findings.append(f)
        for name, kind in self.kinds.items():
            if name not in by_group and name in self.groups:
                g = by_group[name] = GroupAnalysis(GroupTimeline(name, kind=kind[0], protocol=kind[1], cluster=kind[2]))
                groups.append(g)
        for g in groups:
            folded = self.groups.get(g.timeline.group)
            # As of this diagnosis: the fold that follows it counts on.
            g.timeline.folded = folded.copy() if folded is not None else None
            g.findings.sort(key=lambda f: (-rank(f.severity), f.start.timestamp() if f.start else float("inf")))
        groups.sort(key=lambda g: g.timeline.group)
        return groups, handle_findings

    def _complete(self, k: tuple, f: Finding) -> tuple:
        """A finding of the held events with its folded part: count figures plus what was folded (their text
        in the title and summary too), the severity and start as reported."""
        counts = self.counts.get(k)
        if counts:
            first = True
            completed = []
            for figure in getattr(f, "figures", None) or []:
                n = counts.get(figure.name)
                if figure.unit != COUNT or not n or not isinstance(figure.value, int):
                    completed.append(figure)
                    continue
                whole = figure.but(value=figure.value + n)     # figures are frozen: the count with the folded lines
                completed.append(whole)
                f.summary = _replace_number(f.summary, figure.text(), whole.text())
                if first:
                    f.title = _replace_number(f.title, figure.text(), whole.text())
                first = False
            f.figures = completed
        kept = self.kept.get(k)
        if kept is not None:
            if rank(kept.severity) > rank(f.severity):
                f.severity = kept.severity
            if kept.start is not None and (f.start is None or kept.start < f.start):
                f.start = kept.start
        return k


def _counts_folded(rule: str) -> bool:
    """Whether the rule's figures add what was folded (``COUNTS_FOLDED``: it reads ``GroupTimeline.folded``)."""
    known = _COUNTS_FOLDED.get(rule)
    if known is None:
        try:
            known = bool(getattr(rule_module(rule), "COUNTS_FOLDED", False))
        except ImportError:
            known = False
        known = _COUNTS_FOLDED[rule] = known
    return known


_COUNTS_FOLDED: dict[str, bool] = {}
_FOLDERS: list | None = None


def _folders() -> list:
    """The ``fold(group, rebalances, folded)`` of every rule that counts what is folded itself (``COUNTS_FOLDED``
    with more than the rebalances ``Folded.add`` counts): called with the rebalances about to be folded."""
    global _FOLDERS
    if _FOLDERS is None:
        from .rules.engine import rules

        _FOLDERS = [m.fold for m in rules() if getattr(m, "COUNTS_FOLDED", False) and callable(getattr(m, "fold", None))]
    return _FOLDERS


def _replace_number(text: str, old: str, new: str) -> str:
    """The first ``old`` standing as a number of its own (not inside a name, a time or another number)."""
    return re.sub(rf"(?<![\w.:@-]){re.escape(old)}(?![\w.:])", new, text, count=1)


__all__ = ["Fold", "Folded", "KEPT_EVENTS", "horizon"]
