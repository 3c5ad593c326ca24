"""The JSON report (docs/analyze.md, docs/schema/analyze.json): the answer, groups with their
rebalances, findings, and the accounting of what was read."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from .. import __version__
from ..result import Answer, GroupAnalysis, rebalance_row
from ..rules.finding import iso
from .accounting import to_json as accounting_json
from . import jsontext

if TYPE_CHECKING:
    from ..result import Analysis

# 1: the shape of 0.1.0 plus schema_version, config, answer and accounting.
# 2: findings carry cause, caused and culprit; rebalances carry protocol, operation, verdict, culprit and
# cause (the rebalance's protocol replaces the group's). A change that removes or renames a key, or
# changes a value's meaning, bumps it; additions do not (docs/analyze.md says what each version changed).
SCHEMA_VERSION = 2


def _plain(value):
    if isinstance(value, datetime):
        return iso(value)
    return value


def group_summary(g: GroupAnalysis) -> dict:
    t = g.timeline
    return {
        "window": {"start": iso(t.start), "end": iso(t.end), "ms": t.window_ms},
        "rebalances": t.rebalance_count,
        "failed": len(t.failed),
        "harmful": sum(1 for r in t.rebalances if r.verdict == "harmful"),
        "unstable_ms": t.unstable_ms,
        "unstable_share": round(t.unstable_ms / t.window_ms, 3) if t.window_ms else 0.0,
        "leaders": t.leaders,
        "max_members": max((r.members for r in t.rebalances if r.members is not None), default=None),
    }


def answer_json(a: Answer) -> dict:
    f = a.finding
    return {
        "healthy": a.healthy,
        "headline": a.headline,
        "rule": f.rule if f else None,
        "severity": f.severity if f else None,
        "group": f.group if f else None,
        "culprit": a.culprit,
        "culprit_host": a.culprit_host,
        "start": iso(a.start),
        "end": iso(a.end),
        "groups_hurt": a.groups_hurt,
    }


def config_json(analysis: "Analysis") -> dict:
    """Where the thresholds came from, and the settings that differ from the shipped ones."""
    from ..rules.config import defaults

    shipped = defaults()
    changed = {}
    for table, values in analysis.config.thresholds.items():
        if not isinstance(values, dict):
            continue
        for key, value in values.items():
            if shipped.get(table, {}).get(key) != value:
                changed[f"{table}.{key}"] = value
    return {"sources": list(analysis.config.sources), "overrides": changed,
            "groups": list(analysis.config.groups), "since": iso(analysis.config.since),
            "until": iso(analysis.config.until)}


def document(analysis: "Analysis", lazy: bool = False) -> dict:
    """The JSON document; ``lazy``: its groups, their rebalances and the findings as iterators, each
    item made when it is written (``write``), so that the whole document is never held at once."""
    def listed(items):
        return items if lazy else list(items)

    def rebalances(t):
        return ({k: _plain(v) for k, v in rebalance_row(t, r).items() if k not in ("group", "cluster", "kind")}
                for r in t.rebalances)

    def group(g: GroupAnalysis) -> dict:
        t = g.timeline
        return {
            "group": t.group, "cluster": t.cluster, "kind": t.kind, "protocol": t.protocol_shown,
            "hosts": sorted(t.hosts), "sides": sorted(t.sides), "skew_ms": t.skew_ms,
            "summary": group_summary(g),
            "notes": t.notes + [f"{n.rule}: {n.text}" for n in g.notes],
            "rebalances": listed(rebalances(t)),
        }

    doc = {"schema_version": SCHEMA_VERSION,
           "tool": {"name": "rebalance-doctor", "version": __version__},
           "input": list(analysis.inputs),
           "config": config_json(analysis),
           "answer": answer_json(analysis.answer),
           "groups": listed(group(g) for g in analysis.groups),
           "findings": listed(f.to_dict() for f in analysis.findings),
           "accounting": accounting_json(analysis.stats)}
    redaction = getattr(analysis, "redaction", None)
    if redaction is not None:    # the names are placeholders (report/redact.py); the mapping is never in it
        doc["redaction"] = {"keyed": redaction.key is not None, "placeholders": len(redaction.mapping())}
    return doc


def write(analysis: "Analysis", stream) -> None:
    """Write the document as ``json.dumps(document(analysis), indent=2)`` would, a group and a
    rebalance at a time (report/jsontext.py)."""
    jsontext.write(document(analysis, lazy=True), stream.write)
