"""Run every enabled rule over every group timeline; link the findings into causal chains.

A rule is a module of this package named after its public id that follows the rule contract (contract.py: `ID`,
`SEVERITY`, `ROLE`, `PROTOCOLS`, a typed `Thresholds` dataclass, `check(group, t)` yielding Finding or Note, and
optionally `YIELDS_TO` and `check_handles(processes, t)`); the engine validates it when it loads, runs it only on
the groups of its protocols, and hands it its thresholds (the defaults with the user's overrides) typed.
Its docstring is its documentation (`rebalance-doctor rules explain ID`, docs/rules.md).
Rules read the classification (`rebalance_doctor.classify`), never their own heuristics.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from types import ModuleType

from .. import classify
from ..timeline.model import GroupTimeline
from . import chains, contract
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
    return [r.module for r in contracts()]


@lru_cache(maxsize=1)
def contracts() -> tuple[contract.Rule, ...]:
    """Every rule, its module validated against the rule contract (a ContractError names what one lacks)."""
    return tuple(contract.load(rule_module(r), RULE_IDS) for r in RULE_IDS)


def rule_contract(rule_id: str) -> contract.Rule:
    return contracts()[RULE_IDS.index(rule_id)]


def thresholds(rule: contract.Rule | str, config: AnalysisConfig) -> contract.Thresholds:
    """The rule's thresholds as configured (defaults with the user's overrides), its borrowed ones from their owners'
    tables: what the engine hands `check`."""
    rule = rule_contract(rule) if isinstance(rule, str) else rule
    return rule.thresholds.read(config.of(rule.id), rule.id, config.thresholds)


def run_handles(processes: list, config: AnalysisConfig) -> list[Finding]:
    """Findings about client handles whose lines name no group (classify/handles.py), most severe first: the
    rules that can read them have `check_handles(processes, thresholds)`."""
    findings: list[Finding] = []
    for rule in contracts():
        if rule.check_handles is not None and config.enabled(rule.id):
            findings += rule.check_handles(processes, thresholds(rule, config))
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
    rebalance_protocols = {r.protocol for r in group.rebalances}
    ran = [rule for rule in contracts() if config.enabled(rule.id)
           and rule.applies(classification.protocol, rebalance_protocols)]
    for rule in ran:
        for item in rule.check(group, thresholds(rule, config)):
            (findings if isinstance(item, Finding) else notes).append(item)
    roles = {r.id: r.role for r in contracts()}
    yields = {r.id: r.yields_to for r in contracts()}
    return chains.link(findings, roles, yields, group), notes
