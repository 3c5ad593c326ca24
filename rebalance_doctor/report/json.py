"""The JSON report (docs/analyze.md): groups with their rebalances, findings, notes."""

from __future__ import annotations

from datetime import datetime

from .. import __version__
from ..analysis import Analysis, GroupAnalysis, rebalance_row
from ..rules.finding import iso, rank


# 2: findings carry cause, caused and culprit; rebalances carry protocol, operation, verdict, culprit and
# cause (docs/analyze.md says what changed).
SCHEMA_VERSION = 2


def _plain(value):
    if isinstance(value, datetime):
        return iso(value)
    return value


def group_summary(g: GroupAnalysis) -> dict:
    t = g.timeline
    return {
        "window": {"start": iso(t.start), "end": iso(t.end), "ms": t.window_ms},
        "rebalances": len(t.rebalances),
        "failed": len(t.failed),
        "unstable_ms": t.unstable_ms,
        "unstable_share": round(t.unstable_ms / t.window_ms, 3) if t.window_ms else 0.0,
        "leaders": t.leaders,
        "max_members": max((r.members for r in t.rebalances if r.members is not None), default=None),
    }


def document(analysis: Analysis, inputs: list[str]) -> dict:
    groups = []
    for g in analysis.groups:
        t = g.timeline
        groups.append({
            "group": t.group, "kind": t.kind, "protocol": t.protocol,
            "hosts": sorted(t.hosts), "sides": sorted(t.sides), "skew_ms": t.skew_ms,
            "summary": group_summary(g),
            "notes": t.notes + [f"{n.rule}: {n.text}" for n in g.notes],
            "rebalances": [{k: _plain(v) for k, v in rebalance_row(t, r).items()
                            if k not in ("group", "kind")} for r in t.rebalances],
        })
    findings = sorted(analysis.findings, key=lambda f: (-rank(f.severity), f.group, f.start or datetime.max))
    return {"schema_version": SCHEMA_VERSION, "tool": {"name": "rebalance-doctor", "version": __version__},
            "input": list(inputs),
            "groups": groups, "findings": [f.to_dict() for f in findings]}
