"""The diagnosis as a library: events in, timelines and findings out (pure Python).

`analyze_events` is what `rebalance-doctor analyze` runs. `analyze_group` is the per-group unit
the Spark engine runs (groupBy(group).applyInPandas): it returns flat, JSON-able rows whose
columns are REBALANCE_COLUMNS and FINDING_COLUMNS, so Parquet and Spark schemas derive from
these two definitions only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .classify import classify, handles
from .core.schema import Column, arrow_schema, spark_ddl
from .engines.local import sort_key
from .rules import engine
from .rules.config import AnalysisConfig
from .rules.finding import Finding, Note
from .timeline.builder import BuildOptions, build_group, build_timelines
from .timeline import lives, unnamed
from .timeline.model import GroupTimeline, Rebalance

REBALANCE_COLUMNS: tuple[Column, ...] = (
    Column("group", "string", "group id / Streams application.id / Connect group"),
    Column("kind", "string", "consumer | streams | connect"),
    Column("protocol", "string", "the rebalance's protocol: eager | cooperative | streams | connect | consumer "
                                 "(KIP-848) | streams-group (KIP-1071) | share (KIP-932) | unknown"),
    Column("index", "int", "1-based position of the rebalance in the group's timeline"),
    Column("generation", "int", "generation (or epoch) the rebalance reached or tried to reach"),
    Column("old_generation", "int", "generation it started from (the broker's old generation)"),
    Column("start", "timestamp", "first line of the rebalance (clock-skew corrected, UTC)"),
    Column("end", "timestamp", "last line of the rebalance (completion, failure or last line seen)"),
    Column("duration_ms", "int", "end - start in milliseconds"),
    Column("outcome", "string", "stable | unstable (followup requested) | failed | incomplete"),
    Column("failure", "string", "why it failed, as logged"),
    Column("followup", "string", "cooperative | probing | version_probing | endpoint | unspecified"),
    Column("trigger_kind", "string", "what started it: poll-timeout, heartbeat-expiration, leave, new-member, ..."),
    Column("trigger", "string", "the root-cause reason as logged"),
    Column("trigger_member", "string", "the member whose action started it"),
    Column("trigger_source", "string", "file of the trigger line"),
    Column("trigger_line", "int", "line of the trigger line"),
    Column("symptoms", "int", "members that rejoined only because the group was already rebalancing"),
    Column("leader", "string", "the member that ran the assignor"),
    Column("members", "int", "members (Streams: consumers) of the generation"),
    Column("nodes", "int", "Streams client nodes of the generation"),
    Column("member_ids", "strings", "members seen joining the generation (client logs)"),
    Column("left", "strings", "members that left through LeaveGroup"),
    Column("expired", "strings", "members removed on session timeout or fenced"),
    Column("missed", "strings", "members that missed it (partitions lost, absent from the generation)"),
    Column("hosts", "strings", "hosts whose logs show this rebalance"),
    Column("operation", "string", "what it was (docs/analyze.md, Operations): rolling-restart, scale-out, "
                                  "cooperative-followup, poll-timeout, session-timeout, crash, ..."),
    Column("verdict", "string", "expected | harmful | unknown"),
    Column("culprit", "map", "who caused it: label, host, member, client, instance, client_host"),
    Column("cause", "int", "index of the earlier rebalance this one follows from (a followup, a return)"),
)

FINDING_COLUMNS: tuple[Column, ...] = (
    Column("group", "string", "group id / Streams application.id / Connect group"),
    Column("rule", "string", "public rule id (docs/rules.md)"),
    Column("severity", "string", "critical | warning | info"),
    Column("title", "string", "one-line title"),
    Column("summary", "string", "explanation with the numbers that triggered the rule"),
    Column("start", "timestamp", "start of the time window the finding covers (UTC)"),
    Column("end", "timestamp", "end of the time window"),
    Column("evidence", "strings", "evidence lines as 'source:line: text', root cause first"),
    Column("remediation", "string", "what to change (config names)"),
    Column("cause", "string", "the root cause in words (null: a symptom nothing explains)"),
    Column("culprit", "map", "who caused it: label, host, member, client, instance, client_host"),
    Column("caused_rebalances", "ints", "indexes of the rebalances it caused"),
    Column("caused_members", "strings", "members that rejoined because of it"),
    Column("caused_partitions_revoked", "int", "partitions revoked in the rebalances it caused"),
    Column("caused_findings", "strings", "the symptom findings folded into it, as 'rule: summary'"),
)


@dataclass
class GroupAnalysis:
    timeline: GroupTimeline
    findings: list[Finding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


@dataclass
class Analysis:
    groups: list[GroupAnalysis] = field(default_factory=list)
    # Non-Java client lines recognised but naming no group (and no line of their handle does):
    # per library, what they were (event -> count) and which handles wrote them.
    ungrouped_clients: dict[str, dict] = field(default_factory=dict)
    # What the rules conclude from those lines, per process (Finding.group is None).
    handle_findings: list[Finding] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for g in self.groups for f in g.findings] + self.handle_findings


def _options(config: AnalysisConfig) -> BuildOptions:
    section = config.thresholds.get("timeline", {})
    return BuildOptions(skew_min_ms=int(section.get("skew_min_ms", 20)),
                        attach_ms=int(section.get("attach_ms", 10_000)))


def _in_window(event: dict, config: AnalysisConfig) -> bool:
    ts = event.get("ts")
    if ts is None:
        return True
    return (config.since is None or ts >= config.since) and (config.until is None or ts <= config.until)


def analyze_events(events: list[dict], config: AnalysisConfig | None = None,
                   offsets: dict[str, int] | None = None) -> Analysis:
    """Every group of the events: timeline, findings (by severity) and notes. ``offsets``: per group, how
    many rebalances came before these events (``analyze --follow`` folds them: fold.py); its rebalances are
    numbered after them."""
    config = config or AnalysisConfig()
    unnamed.link(events)        # client lines naming no group: the group the coordinator names for their client.id
    if len(config.groups) == 1:
        unnamed.assign(events, config.groups[0])   # the rest: the one group the user named
    else:
        unnamed.gather(events)  # the rest: their process's group, else the processes that share one
    lives.link(events)          # process lives whose member id no line states: the coordinator's, by elimination
    rows = [e for e in events if (not config.groups or e.get("group") in config.groups) and _in_window(e, config)]
    analysis = Analysis()
    for timeline in build_timelines(rows, _options(config)):
        for r in timeline.rebalances if offsets and offsets.get(timeline.group) else ():
            r.index += offsets[timeline.group]
        classify(timeline, config.of("probing-rebalance-cadence"))
        findings, notes = engine.run(timeline, config)
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
    return [rebalance_row(timeline, r) for r in timeline.rebalances], [finding_row(f) for f in findings]


def rebalance_row(timeline: GroupTimeline, r: Rebalance) -> dict:
    trigger = r.trigger_evidence
    return {
        "group": timeline.group, "kind": timeline.kind, "protocol": r.protocol, "index": r.index,
        "generation": r.generation, "old_generation": r.old_generation, "start": r.start, "end": r.end,
        "duration_ms": r.duration_ms, "outcome": r.outcome, "failure": r.failure, "followup": r.followup,
        "trigger_kind": r.trigger_kind, "trigger": r.trigger, "trigger_member": r.trigger_member,
        "trigger_source": trigger.source if trigger else None, "trigger_line": trigger.line if trigger else None,
        "symptoms": r.symptoms, "leader": r.leader, "members": r.members, "nodes": r.nodes,
        "member_ids": list(r.member_ids), "left": list(r.left), "expired": list(r.expired),
        "missed": list(r.missed), "hosts": sorted(r.hosts),
        "operation": r.operation, "verdict": r.verdict, "culprit": _culprit(r.culprit), "cause": r.cause_index,
    }


def _culprit(culprit) -> dict | None:
    if culprit is None:
        return None
    return {k: v for k, v in culprit.to_dict().items() if v is not None}


def finding_row(f: Finding) -> dict:
    return {"group": f.group, "rule": f.rule, "severity": f.severity, "title": f.title, "summary": f.summary,
            "start": f.start, "end": f.end, "evidence": [f"{e.source}:{e.line}: {e.text}" for e in f.evidence],
            "remediation": f.remediation, "cause": f.cause, "culprit": _culprit(f.culprit),
            "caused_rebalances": list(f.caused.get("rebalances", [])),
            "caused_members": list(f.caused.get("members", [])),
            "caused_partitions_revoked": f.caused.get("partitions_revoked"),
            "caused_findings": [f"{x['rule']}: {x['summary']}" for x in f.caused.get("findings", [])]}


__all__ = ["AnalysisConfig", "Analysis", "GroupAnalysis", "FINDING_COLUMNS", "REBALANCE_COLUMNS",
           "analyze_events", "analyze_group", "arrow_schema", "finding_row", "rebalance_row", "spark_ddl"]
