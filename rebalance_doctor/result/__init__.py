"""What an analysis found, as types: the Analysis, its groups, its rows and its answer.

Below both api.py (which computes an Analysis and adds its renderings) and report/ (which renders one), so that
report/ imports these types and api.py imports report/, never both ways.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..core.schema import arrow_schema, event_columns
from ..core.stats import RunStats
from ..rules.config import AnalysisConfig
from ..rules.finding import Finding, Note, rank
from ..timeline.model import GroupTimeline, Rebalance
from .answer import Answer, GroupState, answer as answer_of, scope
from .rows import FINDING_COLUMNS, REBALANCE_COLUMNS, Rows, finding_row, rebalance_row

__all__ = ["Analysis", "Answer", "FINDING_COLUMNS", "GroupAnalysis", "GroupState", "REBALANCE_COLUMNS", "Rows",
           "finding_row", "rebalance_row", "scope"]


@dataclass
class GroupAnalysis:
    timeline: GroupTimeline
    findings: list[Finding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


@dataclass
class Analysis:
    """What ``analyze`` found: per-group timelines and findings, the events, the accounting.

    Typed objects: ``groups`` (each a ``GroupAnalysis``: ``.timeline`` with its ``Rebalance``
    list, ``.findings``, ``.notes``), ``rebalances`` and ``findings`` (``Rows``: lists that
    also give ``.to_arrow()`` / ``.to_pandas()``), ``answer``. Table: ``events`` (``pyarrow.Table``).
    ``stats`` is the reading accounting (``core.stats.RunStats``). ``api.Analysis`` adds the renderings
    (JSON, Markdown, HTML) and the ``files`` table.
    """

    inputs: list[str]
    groups: list[GroupAnalysis]
    stats: RunStats
    config: AnalysisConfig
    event_rows: list[dict] = field(repr=False, default_factory=list)
    # Client-library lines naming no group (nor does any line of their handle): per library, which
    # events (name -> count), which handles, first and last time (``diagnosis.Diagnosed``).
    ungrouped_clients: dict[str, dict] = field(repr=False, default_factory=dict)
    # Findings about those client handles, per process (``Finding.group`` is None: no line names a group).
    handle_findings: list[Finding] = field(repr=False, default_factory=list)
    # ``analyze(redact=True)``: the redactor whose placeholders every string of this analysis now holds
    # (``report.redact.Redactor``: ``mapping()``, ``write_mapping(path)``); None when not redacted.
    redaction: object | None = field(repr=False, default=None)

    @cached_property
    def findings(self) -> Rows[Finding]:
        """Every finding, most severe first (then group, then time); a finding about client handles whose
        lines name no group has group None."""
        ordered = sorted([f for g in self.groups for f in g.findings] + list(self.handle_findings),
                         key=lambda f: (-rank(f.severity), f.group or "",
                                        f.start.timestamp() if f.start else float("inf")))
        clusters = {g.timeline.group: g.timeline.cluster for g in self.groups}
        return Rows(ordered, lambda f: finding_row(f, clusters.get(f.group)), FINDING_COLUMNS)

    @cached_property
    def rebalances(self) -> Rows[Rebalance]:
        """Every rebalance of every group, group by group in time order."""
        timelines = {g.timeline.group: g.timeline for g in self.groups}
        items = [r for g in self.groups for r in g.timeline.rebalances]
        return Rows(items, lambda r: rebalance_row(timelines[r.group], r), REBALANCE_COLUMNS)

    @property
    def notes(self) -> list[Note]:
        """What a rule could not decide for lack of evidence, per group."""
        return [n for g in self.groups for n in g.notes]

    @cached_property
    def events(self):
        """The events table of the analysed window (``core/schema.py`` columns), a ``pyarrow.Table``."""
        import pyarrow as pa

        return pa.Table.from_pydict(event_columns(self.event_rows), schema=arrow_schema())

    @cached_property
    def answer(self):
        """The answer first: the root-cause finding, its culprit, its window, the groups hurt
        (``result.answer.Answer``)."""
        return answer_of(self)

    def group(self, name: str) -> GroupAnalysis:
        for g in self.groups:
            if g.timeline.group == name:
                return g
        raise KeyError(name)

    def __repr__(self) -> str:
        counts = {s: sum(1 for f in self.findings if f.severity == s) for s in ("critical", "warning", "info")}
        return (f"<Analysis of {len(self.inputs)} input(s): {len(self.groups)} group(s), "
                f"{len(self.rebalances)} rebalance(s), {counts['critical']} critical, "
                f"{counts['warning']} warning, {counts['info']} info finding(s)>")
