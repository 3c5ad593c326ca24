"""The answer every report starts with: the root-cause finding, its culprit, its window, the groups hurt.

Computed once from an analysis and shown by each rendering (terminal, Markdown, HTML, JSON), so
they all say the same thing first.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from ..rules.finding import Finding, rank
from ..timeline.identity import short
from ..timeline.model import Culprit, GroupTimeline

HARMFUL = ("warning", "critical")


@dataclass
class GroupState:
    """How one group fared: its rebalances, its time without a stable generation, its findings."""

    group: str
    kind: str
    protocol: str
    rebalances: int
    failed: int
    harmful: int                 # rebalances the classification calls harmful (0 until it runs)
    unstable_ms: int
    window_ms: int
    findings: dict[str, int]     # severity -> count
    start: datetime | None
    end: datetime | None

    @property
    def unstable_share(self) -> float:
        return self.unstable_ms / self.window_ms if self.window_ms else 0.0

    @property
    def worst(self) -> str | None:
        for severity in ("critical", "warning", "info"):
            if self.findings.get(severity):
                return severity
        return None

    @property
    def hurt(self) -> bool:
        return self.worst in HARMFUL


@dataclass
class Answer:
    finding: Finding | None            # the root-cause finding; None when nothing is wrong
    culprit: str | None                # the culprit's label (client.id@host), when the logs name it
    culprit_host: str | None
    culprit_member: str | None
    culprit_from: str | None           # "classification" or "trigger" (the timeline's trigger lines)
    start: datetime | None
    end: datetime | None
    groups: list[GroupState] = field(default_factory=list)
    ungrouped: str | None = None       # what client lines naming no group said, when no line named one

    @property
    def healthy(self) -> bool:
        return self.finding is None or self.finding.severity not in HARMFUL

    @property
    def groups_hurt(self) -> list[str]:
        return [g.group for g in self.groups if g.hurt]

    @property
    def headline(self) -> str:
        """One sentence: what happened."""
        f = self.finding
        if f is not None and f.severity in HARMFUL:
            return f"{f.title} ({scope(f)})"
        if not self.groups:
            return "No rebalance-related lines with a group were found." + (f" {self.ungrouped}" if self.ungrouped else "")
        rebalances = sum(g.rebalances for g in self.groups)
        note = f"; {self.finding.title}" if self.finding is not None else ""
        harmful = sum(g.harmful for g in self.groups)
        if harmful:     # the classification called some harmful, below every rule's threshold: not "none found"
            return (f"No finding at warning or above: {len(self.groups)} group(s), {rebalances} rebalance(s), "
                    f"{harmful} of them harmful{note}.")
        return (f"No harmful rebalance found: {len(self.groups)} group(s), {rebalances} rebalance(s), "
                f"no finding at warning or above{note}.")


def scope(f: Finding) -> str:
    """What a finding is about: its group, or client handles whose lines name no group."""
    return f"group {f.group}" if f.group is not None else "client handles whose lines name no group"


def group_state(timeline: GroupTimeline, findings: list[Finding]) -> GroupState:
    counts = Counter(f.severity for f in findings)
    return GroupState(
        group=timeline.group, kind=timeline.kind, protocol=timeline.protocol_shown,
        rebalances=timeline.rebalance_count, failed=len(timeline.failed),
        harmful=sum(1 for r in timeline.rebalances if r.verdict == "harmful"),
        unstable_ms=timeline.unstable_ms, window_ms=timeline.window_ms,
        findings={s: counts[s] for s in ("critical", "warning", "info") if counts[s]},
        start=timeline.start, end=timeline.end)


def answer(analysis) -> Answer:
    """The answer of a result.Analysis (its groups, its findings about handles, its client lines naming no group)."""
    states = [group_state(g.timeline, g.findings) for g in analysis.groups]
    by_group = {s.group: s for s in states}
    candidates = [(f, i) for g in analysis.groups for i, f in enumerate(g.findings)]
    # Findings about client handles whose lines name no group (per process) compete with the groups' own.
    candidates += [(f, i) for i, f in enumerate(analysis.handle_findings)]
    ungrouped = _ungrouped(analysis)
    if not candidates:
        return Answer(None, None, None, None, None, None, None, states, ungrouped=ungrouped)
    # The most severe; a finding that names its cause before a symptom nothing explains; then the
    # group that spent longest without a stable generation; then the rule engine's own order.
    finding, _ = min(candidates, key=lambda fi: (-rank(fi[0].severity), fi[0].cause is None,
                                                 -(by_group[fi[0].group].unstable_ms if fi[0].group in by_group else 0),
                                                 fi[1]))
    timeline = next((g.timeline for g in analysis.groups if g.timeline.group == finding.group), None)
    culprit, host, member, origin = _culprit(finding, timeline)
    return Answer(finding, culprit, host, member, origin, finding.start, finding.end, states, ungrouped=ungrouped)


def _culprit(finding: Finding, timeline: GroupTimeline | None) -> tuple[str | None, str | None, str | None, str | None]:
    """(label, host, member, where it comes from): the classification's culprit when it has
    run; else the member whose action started the rebalances this finding's evidence shows."""
    if finding.culprit is not None:
        c: Culprit = finding.culprit
        return c.label, c.host, c.member or c.client or c.instance, "classification"
    if finding.no_culprit:
        return f"no single member: {finding.no_culprit}", None, None, "finding"
    if timeline is None:
        return None, None, None, None
    cited = {(e.source, e.line) for e in finding.evidence}
    starters: Counter = Counter()
    hosts: dict[str, str] = {}
    for r in timeline.rebalances:
        t = r.trigger_evidence
        if r.trigger_member and t is not None and (t.source, t.line) in cited:
            starters[r.trigger_member] += 1
            if t.host:
                hosts.setdefault(r.trigger_member, t.host)
    if not starters:
        return None, None, None, None
    identity, _ = starters.most_common(1)[0]
    host = hosts.get(identity)
    name = short(identity)
    label = name if "@" in name or not host else f"{name}@{host}"
    # The timeline knows the member by its identity (client.id), not by a member id: no member.
    return label, host, None, "trigger"


def _ungrouped(analysis) -> str | None:
    """Client-library lines that name no group (nor does any line of their handle): what they were, from
    which handles, when; the group coordinator's side is not known from them."""
    parts = []
    for library, seen in sorted(analysis.ungrouped_clients.items()):
        events = ", ".join(f"{name} x{n}" for name, n in sorted(seen["events"].items(), key=lambda kv: -kv[1]))
        handles = sorted(seen["handles"])
        when = ""
        if seen.get("first") is not None:
            span = (seen["last"] - seen["first"]).total_seconds()
            when = f" within {span:.1f}s from {seen['first']:%Y-%m-%d %H:%M:%S} UTC"
        whose = (f"{library} lines of {len(handles)} handle(s) ({', '.join(handles[:4])}"
                 f"{', ...' if len(handles) > 4 else ''})" if handles else f"{library} lines (naming no handle)")
        parts.append(f"{whose} name no group: {events}{when}.")
    return " ".join(parts) or None
