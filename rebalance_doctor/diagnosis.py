"""The diagnosis: events in, per-group timelines classified and the rules' findings out (pure Python).

`analyze_events` is what `rebalance-doctor analyze` runs (``api.analyze`` reads the logs, then calls it).
`analyze_group` is the per-group unit the Spark engine runs (groupBy(group).applyInPandas): it returns flat,
JSON-able rows whose columns are result.rows' REBALANCE_COLUMNS and FINDING_COLUMNS, so Parquet and Spark schemas
derive from those two definitions only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .classify import classify, handles
from .core.schema import arrow_schema, spark_ddl
from .engines.local import sort_key
from .result import GroupAnalysis
from .result.rows import FINDING_COLUMNS, REBALANCE_COLUMNS, finding_row, rebalance_row
from .rules import engine
from .rules.config import AnalysisConfig
from .rules.finding import Finding
from .timeline.builder import BuildOptions, build_group, build_timelines
from .timeline import lives, sessions, unnamed


@dataclass
class Diagnosed:
    """What the rules concluded over events: per-group timelines and findings (api.analyze wraps it in an Analysis)."""

    groups: list[GroupAnalysis] = field(default_factory=list)
    # Non-Java client lines recognised but naming no group (and no line of their handle does):
    # per library, what they were (event -> count) and which handles wrote them.
    ungrouped_clients: dict[str, dict] = field(default_factory=dict)
    # What the rules conclude from those lines, per process (Finding.group is None).
    handle_findings: list[Finding] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for g in self.groups for f in g.findings] + self.handle_findings


def _options(config: AnalysisConfig, growing: bool = False) -> BuildOptions:
    section = config.thresholds.get("timeline", {})
    return BuildOptions(skew_min_ms=int(section.get("skew_min_ms", 20)),
                        attach_ms=int(section.get("attach_ms", 10_000)), growing=growing)


def _in_window(event: dict, config: AnalysisConfig) -> bool:
    ts = event.get("ts")
    if ts is None:
        return True
    return (config.since is None or ts >= config.since) and (config.until is None or ts <= config.until)


def analyze_events(events: list[dict], config: AnalysisConfig | None = None,
                   folded: dict | None = None, growing: bool = False) -> Diagnosed:
    """Every group of the events: timeline, findings (by severity) and notes. ``folded``: per group, what came
    before these events (``analyze --follow`` folds it: fold.py, ``timeline.model.Folded``): its rebalances are
    numbered after the folded ones, and the rules that count over the whole log add them. ``growing``: the logs
    are still being written (``analyze --follow`` before its final report)."""
    config = config or AnalysisConfig()
    unnamed.link(events)        # client lines naming no group: the group the coordinator names for their client.id
    if len(config.groups) == 1:
        unnamed.assign(events, config.groups[0])   # the rest: the one group the user named
    else:
        unnamed.gather(events)  # the rest: their process's group, else the processes that share one
    lives.link(events)          # process lives whose member id no line states: the coordinator's, by elimination
    sessions.link(events)       # assignment callbacks: the generation the line ending their session states
    rows = [e for e in events if (not config.groups or e.get("group") in config.groups) and _in_window(e, config)]
    analysis = Diagnosed()
    for timeline in build_timelines(rows, _options(config, growing)):
        before = (folded or {}).get(timeline.group)
        if before is not None:
            timeline.folded = before
            for r in timeline.rebalances:
                r.index += before.rebalances
        classify(timeline, config.of("probing-rebalance-cadence"))
        findings, notes = engine.run(timeline, config)
        _release(timeline)
        analysis.groups.append(GroupAnalysis(timeline, findings, notes))
    analysis.handle_findings = engine.run_handles(handles.read(rows), config)
    for event in rows:
        if event.get("library") and not event.get("group"):
            seen = analysis.ungrouped_clients.setdefault(event["library"], {"events": {}, "handles": set(),
                                                                             "first": None, "last": None})
            seen["events"][event["event"]] = seen["events"].get(event["event"], 0) + 1
            if event.get("client"):
                seen["handles"].add(event["client"])
            if event.get("ts") is not None:
                seen["first"] = min(seen["first"] or event["ts"], event["ts"])
                seen["last"] = max(seen["last"] or event["ts"], event["ts"])
    return analysis


def _release(timeline) -> None:
    """Drop what only the classification and the rules needed, once they ran: every group is held until the
    report is written (docs/performance.md, "Memory at scale, cut"). The identities cached per event are answered
    again if a report asks (from the same directory). The classification's per-rebalance changes stay: callers
    read them after the analysis (``classify.of(timeline).changes``)."""
    timeline.forget_identities()


def analyze_group(events: list[dict], config: AnalysisConfig | None = None) -> tuple[list[dict], list[dict]]:
    """(rebalance rows, finding rows) of ONE group's events (sorted by engines.local.sort_key)."""
    config = config or AnalysisConfig()
    rows = [e for e in events if e.get("group") and _in_window(e, config)]
    if not rows:
        return [], []
    rows.sort(key=sort_key)
    timeline = build_group(rows[0]["group"], rows, _options(config))
    classify(timeline, config.of("probing-rebalance-cadence"))
    findings, _ = engine.run(timeline, config)
    return [rebalance_row(timeline, r) for r in timeline.rebalances], [finding_row(f, timeline.cluster) for f in findings]


__all__ = ["AnalysisConfig", "Diagnosed", "GroupAnalysis", "FINDING_COLUMNS", "REBALANCE_COLUMNS",
           "analyze_events", "analyze_group", "arrow_schema", "finding_row", "rebalance_row", "spark_ddl"]
