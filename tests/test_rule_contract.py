"""The rule contract (rules/contract.py): every rule declares it, the engine refuses a module that breaks it, runs a
rule only on the groups of its protocols, and hands it its thresholds typed, with the user's overrides."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from rebalance_doctor import api
from rebalance_doctor.rules import contract, engine
from rebalance_doctor.rules.config import defaults

REPO = Path(__file__).resolve().parent.parent


def test_every_rule_follows_the_contract():
    rules = engine.contracts()
    assert [r.id for r in rules] == list(engine.RULE_IDS)
    for rule in rules:
        lent = {f.name: owner for f, owner in contract.borrowed_fields(rule.thresholds)}
        fields = {f.name for f in dataclasses.fields(rule.thresholds)} - set(lent)
        assert fields == set(defaults().get(rule.id, {})) - {"enabled"}, rule.id
        assert all(key in defaults()[owner] for key, owner in lent.items()), rule.id


def test_a_borrowed_threshold_is_read_from_its_owners_table():
    """heartbeat-expiration and missed-rebalance advise heartbeat.interval.ms at the share of session.timeout.ms that
    config-heartbeat-ratio detects with: one key, in its owner's table, read with the user's override."""
    from rebalance_doctor.rules.config import AnalysisConfig

    config = AnalysisConfig()
    for rule_id in ("heartbeat-expiration", "missed-rebalance"):
        assert engine.thresholds(rule_id, config).heartbeats_per_session == 3
    config.thresholds["config-heartbeat-ratio"]["heartbeats_per_session"] = 5
    for rule_id in ("heartbeat-expiration", "missed-rebalance"):
        assert engine.thresholds(rule_id, config)["heartbeats_per_session"] == 5
    with pytest.raises(contract.ContractError, match="has no heartbeats_per_session"):
        @dataclass(frozen=True)
        class _Nowhere(contract.Thresholds):
            min_members: int
            heartbeats_per_session: int = contract.borrowed("missed-rebalance")
        contract.load(_like("missed-rebalance", Thresholds=_Nowhere), engine.RULE_IDS)


def _like(rule_id: str, **changes) -> ModuleType:
    """A copy of a real rule module with some declarations changed (None: removed)."""
    real = engine.rule_module(rule_id)
    fake = ModuleType(real.__name__, real.__doc__)
    fake.__dict__.update({k: v for k, v in vars(real).items() if not k.startswith("__")})
    for name, value in changes.items():
        if value is None:
            delattr(fake, name)
        else:
            setattr(fake, name, value)
    return fake


@dataclass(frozen=True)
class _Missing(contract.Thresholds):
    critical_count: int                       # poll-timeout's advice_headroom is not declared


@dataclass(frozen=True)
class _Mistyped(contract.Thresholds):
    critical_count: float                     # the schema says int
    advice_headroom: float


class _Plain(contract.Thresholds):            # not a dataclass of its own
    pass


@pytest.mark.parametrize("changes, words", [
    ({"ROLE": "culprit"}, "ROLE 'culprit'"),
    ({"SEVERITY": "fatal"}, "SEVERITY 'fatal'"),
    ({"PROTOCOLS": ("eager", "kip-848")}, "PROTOCOLS"),
    ({"PROTOCOLS": ()}, "PROTOCOLS"),
    ({"ID": "poll-timeouts"}, "not its module name"),
    ({"YIELDS_TO": ("no-such-rule",)}, "YIELDS_TO"),
    ({"Thresholds": None}, "declares no Thresholds (rules/contract.py); add:\n\n@dataclass(frozen=True)\nclass Thresholds(contract.Thresholds):\n    \"\"\"thresholds.toml [poll-timeout], typed as thresholds_schema.toml types it.\"\"\"\n    critical_count: int\n    advice_headroom: float\n"),
    ({"Thresholds": _Missing}, "thresholds.toml [poll-timeout] has"),
    ({"Thresholds": _Mistyped}, "Thresholds.critical_count is float"),
    ({"Thresholds": _Plain}, "frozen dataclass"),
    ({"check": None}, "declares no check"),
])
def test_a_module_that_breaks_the_contract_is_refused(changes, words):
    with pytest.raises(contract.ContractError, match=None) as caught:
        contract.load(_like("poll-timeout", **changes), engine.RULE_IDS)
    assert words in str(caught.value)


def test_thresholds_are_typed_and_carry_the_users_overrides():
    rule = engine.rule_contract("poll-timeout")
    t = rule.thresholds.read({**defaults()["poll-timeout"], "advice_headroom": 2.5, "enabled": True}, rule.id)
    assert t.advice_headroom == t["advice_headroom"] == 2.5 and t.critical_count == 3
    with pytest.raises(contract.ContractError):
        rule.thresholds.read({"critical_count": 3}, rule.id)


def _rules_of(directory: str) -> set[str]:
    analysis = api.analyze([str(REPO / "fixtures" / "incidents" / directory)])
    return {f.rule for f in analysis.findings} | {x["rule"] for f in analysis.findings
                                                    for x in f.caused.get("findings", [])}


def test_the_engine_runs_a_rule_only_on_the_groups_of_its_protocols(monkeypatch):
    """poll-timeout-storm is a classic consumer group: poll-timeout diagnoses it; the same rule scoped to Connect
    workers only is not run on it."""
    assert "poll-timeout" in _rules_of("poll-timeout-storm")
    rules = tuple(dataclasses.replace(r, protocols=("connect",)) if r.id == "poll-timeout" else r
                  for r in engine.contracts())
    monkeypatch.setattr(engine, "contracts", lambda: rules)
    assert "poll-timeout" not in _rules_of("poll-timeout-storm")


def test_a_rules_findings_are_of_its_protocols_on_every_shipped_incident():
    from rebalance_doctor.classify import of

    for directory in sorted(p for p in (REPO / "fixtures" / "incidents").iterdir() if p.is_dir()):
        for group in api.analyze([str(directory)]).groups:
            seen = {of(group.timeline).protocol} | {r.protocol for r in group.timeline.rebalances}
            for f in group.findings:
                for rule in [f.rule] + [x["rule"] for x in f.caused.get("findings", [])]:
                    scope = engine.rule_contract(rule).protocols
                    assert "unknown" in seen or seen & set(scope), (directory.name, rule, seen)
