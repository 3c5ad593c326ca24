"""Run every enabled rule over every group timeline; collect findings and notes.

A rule is a module of this package named after its public id (dashes as underscores) with
`ID`, `SEVERITY` (its usual severity) and `check(group, thresholds)` yielding Finding or Note;
its docstring is its documentation (`rebalance-doctor rules explain ID`, docs/rules.md).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..timeline.model import GroupTimeline
from .config import AnalysisConfig
from .finding import Finding, Note, rank

# The public, documented, stable rule ids, in the order they are documented.
RULE_IDS = (
    "rebalance-storm",
    "failed-rebalance-loop",
    "leader-churn",
    "probing-rebalance-cadence",
    "membership-flapping",
    "poll-timeout",
    "heartbeat-expiration",
    "cooperative-followup-loop",
    "version-probing",
    "application-shutdown",
    "thread-replacement-loop",
    "missed-rebalance",
)


def rule_module(rule_id: str) -> ModuleType:
    if rule_id not in RULE_IDS:
        raise KeyError(rule_id)
    return importlib.import_module(f"{__package__}.{rule_id.replace('-', '_')}")


def rules() -> list[ModuleType]:
    return [rule_module(r) for r in RULE_IDS]


def run(group: GroupTimeline, config: AnalysisConfig) -> tuple[list[Finding], list[Note]]:
    findings: list[Finding] = []
    notes: list[Note] = []
    for module in rules():
        if not config.enabled(module.ID):
            continue
        for item in module.check(group, config.of(module.ID)):
            (findings if isinstance(item, Finding) else notes).append(item)
    findings.sort(key=lambda f: (-rank(f.severity), f.start or group.start, f.rule))
    return findings, notes
