"""Run every enabled rule over every group timeline; link the findings into causal chains.

A rule is a module of this package named after its public id (dashes as underscores) with
`ID`, `SEVERITY` (its usual severity), `ROLE` (cause, symptom, advisory, expected or healthy: see
chains.py), `PROTOCOLS` (the protocols it diagnoses), optionally `YIELDS_TO` (the bordering
rules that take its place in a chain), and `check(group, thresholds)` yielding Finding or Note
(and, for a rule that can read client handles whose lines name no group,
`check_handles(processes, thresholds)` yielding Finding);
its docstring is its documentation (`rebalance-doctor rules explain ID`, docs/rules.md).
Rules read the classification (`rebalance_doctor.classify`), never their own heuristics.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .. import classify
from ..timeline.model import GroupTimeline
from . import chains
from .config import AnalysisConfig
from .finding import SEVERITIES, Finding, Note

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
    "healthy-operation",
    # issue 17: the diagnoses the seed articles teach
    "coordinator-churn",
    "static-member-timeout",
    "connect-config-mismatch",
    "thread-died",
    "connect-scheduled-delay",
    "kip848-fencing",
    "sync-group-error-loop",
    "config-heartbeat-ratio",
    "assignor-mismatch",
    "eager-assignor",
    "rebalance-stall",
    "mass-expiry",
    "assignment-skew",
    # issue 31: Kafka as it is in 2026
    "protocol-migration-refused",
    "unreleased-instance-id",
    "streams-topics-missing",
)


def rule_module(rule_id: str) -> ModuleType:
    if rule_id not in RULE_IDS:
        raise KeyError(rule_id)
    return importlib.import_module(f"{__package__}.{rule_id.replace('-', '_')}")


def rules() -> list[ModuleType]:
    return [rule_module(r) for r in RULE_IDS]


def run_handles(processes: list, config: AnalysisConfig) -> list[Finding]:
    """Findings about client handles whose lines name no group (classify/handles.py), most severe first: the
    rules that can read them have `check_handles(processes, thresholds)`."""
    findings: list[Finding] = []
    for module in rules():
        check = getattr(module, "check_handles", None)
        if check is not None and config.enabled(module.ID):
            findings += check(processes, config.of(module.ID))
    return sorted(findings, key=lambda f: -SEVERITIES.index(f.severity))


def run(group: GroupTimeline, config: AnalysisConfig) -> tuple[list[Finding], list[Note]]:
    """The group's chain heads (the answer first) and the rules' notes."""
    classification = classify.of(group)
    findings: list[Finding] = []
    notes: list[Note] = []
    if not classification.diagnosed:
        notes.append(Note("classification", group.group, f"{classification.protocol} group (KIP-1071 streams "
                          "groups, KIP-932 share groups): seen, not diagnosed"))
        return findings, notes
    modules = rules()
    for module in modules:
        if not config.enabled(module.ID):
            continue
        for item in module.check(group, config.of(module.ID)):
            (findings if isinstance(item, Finding) else notes).append(item)
    roles = {m.ID: getattr(m, "ROLE", chains.CAUSE) for m in modules}
    yields = {m.ID: tuple(getattr(m, "YIELDS_TO", ())) for m in modules}
    return chains.link(findings, roles, yields, group), notes
