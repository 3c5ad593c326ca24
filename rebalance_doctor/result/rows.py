"""The result as rows: the columns of the rebalances and findings tables, one flat row per record, and Rows.

These two column definitions are the only ones: Parquet, Spark and Arrow schemas derive from them
(``core.schema.arrow_schema``, ``spark_ddl``), and the Spark engine's per-group batch returns these rows.
"""

from __future__ import annotations

from typing import Callable, Generic, Iterable, TypeVar

from ..core.schema import Column, arrow_schema
from ..rules.finding import Finding
from ..timeline.model import GroupTimeline, Rebalance

T = TypeVar("T")

REBALANCE_COLUMNS: tuple[Column, ...] = (
    Column("group", "string", "group id / Streams application.id / Connect group"),
    Column("cluster", "string", "the Kafka cluster the group is keyed by (prod of prod/orders: --cluster NAME, else the "
                                "cluster id the logs state); null when the logs hold one cluster or none"),
    Column("kind", "string", "consumer | streams | connect"),
    Column("protocol", "string", "the rebalance's protocol: eager | cooperative | streams | connect | consumer "
                                 "(KIP-848) | streams-group (KIP-1071) | share (KIP-932) | unknown"),
    Column("index", "int", "1-based position of the rebalance in the group's timeline"),
    Column("generation", "int", "generation (or epoch) the rebalance reached or tried to reach"),
    Column("old_generation", "int", "generation it started from (classic: the broker's old generation; KIP-848, "
                                    "streams and share groups: the epoch before its first bump)"),
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
    Column("cluster", "string", "the Kafka cluster the group is keyed by (prod of prod/orders: --cluster NAME, else the "
                                "cluster id the logs state); null when the logs hold one cluster or none"),
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


def rebalance_row(timeline: GroupTimeline, r: Rebalance) -> dict:
    trigger = r.trigger_evidence
    return {
        "group": timeline.group, "cluster": timeline.cluster, "kind": timeline.kind, "protocol": r.protocol, "index": r.index,
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


def finding_row(f: Finding, cluster: str | None = None) -> dict:
    """``cluster``: that of the finding's group (``GroupTimeline.cluster``)."""
    return {"group": f.group, "cluster": cluster, "rule": f.rule, "severity": f.severity, "title": f.title, "summary": f.summary,
            "start": f.start, "end": f.end, "evidence": [f"{e.source}:{e.line}: {e.text}" for e in f.evidence],
            "remediation": f.remediation, "cause": f.cause, "culprit": _culprit(f.culprit),
            "caused_rebalances": list(f.caused.get("rebalances", [])),
            "caused_members": list(f.caused.get("members", [])),
            "caused_partitions_revoked": f.caused.get("partitions_revoked"),
            "caused_findings": [f"{x['rule']}: {x['summary']}" for x in f.caused.get("findings", [])]}


class Rows(list, Generic[T]):
    """A list of typed records (``Finding``, ``Rebalance``) that also converts to Arrow and pandas."""

    def __init__(self, items: Iterable[T], to_row: Callable[[T], dict], columns):
        super().__init__(items)
        self._to_row = to_row
        self._columns = columns

    def to_dicts(self) -> list[dict]:
        """One flat dict per record, keyed by the table's column names."""
        return [self._to_row(item) for item in self]

    def to_arrow(self):
        """A ``pyarrow.Table`` with the documented columns (``REBALANCE_COLUMNS`` /
        ``FINDING_COLUMNS`` above), empty but typed when there are no records."""
        import pyarrow as pa

        schema = arrow_schema(self._columns)
        rows = self.to_dicts()
        return pa.Table.from_pydict({c.name: [r.get(c.name) for r in rows] for c in self._columns}, schema=schema)

    def to_pandas(self):
        """A ``pandas.DataFrame`` (needs pandas: ``pip install pandas``)."""
        return self.to_arrow().to_pandas()
