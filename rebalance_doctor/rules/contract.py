"""The rule contract: what a rule module declares, checked by the engine when it loads the rule.

A rule is a module of this package named after its public id (dashes as underscores) whose docstring is its
documentation, with:

- ``ID``: its public id, the module's name with dashes;
- ``SEVERITY``: its usual severity (finding.SEVERITIES); ``helpers.escalate`` raises it one step;
- ``ROLE``: cause, symptom, advisory, expected or healthy (chains.py);
- ``PROTOCOLS``: the protocols it diagnoses (KNOWN_PROTOCOLS). The engine runs it on a group only when the group's
  protocol, or one of its rebalances', is among them (or the lines name no protocol at all: "unknown");
- ``Thresholds``: a frozen dataclass subclassing ``contract.Thresholds`` whose fields are exactly the keys of the
  rule's table in thresholds.toml, typed as thresholds_schema.toml types them (no fields: a rule of protocol
  semantics only). The engine builds it from the defaults and the user's overrides and hands it to
  ``check(group, t)``; ``t.key`` and ``t["key"]`` both read a value. A rule whose prose states a limit another
  rule owns (heartbeat-expiration advising heartbeat.interval.ms at 1/heartbeats_per_session of the session, which
  config-heartbeat-ratio detects with) declares that field ``borrowed(owner)``: the engine reads it from the
  owner's table (the user's override included), so the advice and the detection never state two limits;
- optionally ``YIELDS_TO`` (the bordering rules that take its place in a chain, chains.py), and
  ``check_handles(processes, t)`` for a rule that reads client handles whose lines name no group.

A module that breaks the contract is refused with a ContractError naming the module and what is wrong.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType
from typing import Callable

from .chains import ADVISORY, CAUSE, EXPECTED, HEALTHY, SYMPTOM
from .config import defaults, schema
from .finding import SEVERITIES

ROLES = (CAUSE, SYMPTOM, ADVISORY, EXPECTED, HEALTHY)
# The protocols classify/protocol.py names a group or a rebalance with ("unknown" when no line names one).
KNOWN_PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer", "streams-group", "share")
UNKNOWN = "unknown"
_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,)}


class ContractError(TypeError):
    """A rule module does not declare what the engine needs (a programming error, found when the rule loads)."""


@dataclass(frozen=True)
class Thresholds:
    """A rule's thresholds, typed; a rule subclasses it (as a frozen dataclass) with one field per key."""

    def __getitem__(self, key: str):
        # Rules written against the plain table read t["key"]; tests still hand them the table itself.
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    @classmethod
    def read(cls, table: dict, rule_id: str, tables: dict | None = None) -> "Thresholds":
        """The rule's thresholds from its table (defaults with the user's overrides; `enabled` is the engine's),
        its borrowed fields from their owners' tables in `tables` (every rule's, as configured; the shipped
        defaults when not given)."""
        own = [(k, v) for k, v in table.items() if k != "enabled"]
        tables = tables if tables is not None else defaults()
        lent = [(f.name, tables.get(owner, {}).get(f.name)) for f, owner in borrowed_fields(cls)]
        return _build(cls, tuple(sorted(own)), tuple(lent), rule_id)


_BORROWED = "rebalance_doctor.borrowed_from"


def borrowed(owner: str):
    """A Thresholds field that is another rule's threshold of the same name (its owner's table in thresholds.toml,
    the user's override included): one limit, stated by every rule that speaks of it."""
    return field(metadata={_BORROWED: owner})


def borrowed_fields(cls: type) -> list[tuple[dataclasses.Field, str]]:
    """The fields of a Thresholds class that another rule owns, with their owner."""
    return [(f, f.metadata[_BORROWED]) for f in dataclasses.fields(cls) if _BORROWED in f.metadata]


@lru_cache(maxsize=512)
def _build(cls: type, values: tuple, lent: tuple, rule_id: str) -> Thresholds:
    # once per rule and set of values: the engine asks for them for every group (100k groups at scale)
    names = {f.name for f in dataclasses.fields(cls)} - {f.name for f, _ in borrowed_fields(cls)}
    if {k for k, _ in values} != names:
        raise ContractError(f"{rule_id}: thresholds.toml [{rule_id}] has {sorted(k for k, _ in values)}, its "
                            f"Thresholds declares {sorted(names)}")
    return cls(**dict(values), **dict(lent))


@dataclass(frozen=True)
class Rule:
    """One rule as the engine runs it: what its module declares, validated."""

    id: str
    severity: str
    role: str
    protocols: tuple[str, ...]
    thresholds: type
    yields_to: tuple[str, ...]
    check: Callable
    check_handles: Callable | None
    module: ModuleType

    def applies(self, protocol: str, rebalance_protocols) -> bool:
        """Whether the engine runs it on a group of this protocol whose rebalances have these."""
        return protocol == UNKNOWN or protocol in self.protocols or any(p in self.protocols
                                                                         for p in rebalance_protocols)


def load(module: ModuleType, known_ids: tuple[str, ...]) -> Rule:
    """The module's rule, or a ContractError saying what it lacks."""
    name = module.__name__.rsplit(".", 1)[-1]

    def need(attr: str):
        if not hasattr(module, attr):
            raise ContractError(f"rule module {name} declares no {attr} (rules/contract.py)")
        return getattr(module, attr)

    rule_id = need("ID")
    if rule_id != name.replace("_", "-") or rule_id not in known_ids:
        raise ContractError(f"rule module {name}: ID {rule_id!r} is not its module name with dashes, or not in "
                            "engine.RULE_IDS")
    severity, role = need("SEVERITY"), need("ROLE")
    if severity not in SEVERITIES:
        raise ContractError(f"{rule_id}: SEVERITY {severity!r} is not one of {', '.join(SEVERITIES)}")
    if role not in ROLES:
        raise ContractError(f"{rule_id}: ROLE {role!r} is not one of {', '.join(ROLES)}")
    protocols = need("PROTOCOLS")
    if not isinstance(protocols, tuple) or not protocols or set(protocols) - set(KNOWN_PROTOCOLS):
        raise ContractError(f"{rule_id}: PROTOCOLS {protocols!r} must be a non-empty tuple of "
                            f"{', '.join(KNOWN_PROTOCOLS)}")
    yields = getattr(module, "YIELDS_TO", ())
    if set(yields) - set(known_ids) or rule_id in yields:
        raise ContractError(f"{rule_id}: YIELDS_TO {yields!r} names an unknown rule or itself")
    if not hasattr(module, "Thresholds"):
        raise ContractError(f"rule module {name} declares no Thresholds (rules/contract.py); add:\n\n"
                            + suggested_thresholds(rule_id))
    thresholds = module.Thresholds
    # its own @dataclass(frozen=True): a bare subclass would inherit the base's empty field list
    if not (isinstance(thresholds, type) and issubclass(thresholds, Thresholds)
            and "__dataclass_params__" in vars(thresholds) and thresholds.__dataclass_params__.frozen):
        raise ContractError(f"{rule_id}: Thresholds must be a frozen dataclass subclassing contract.Thresholds")
    _typed(rule_id, thresholds)
    check = need("check")
    if not callable(check) or not (module.__doc__ or "").strip():
        raise ContractError(f"{rule_id}: needs a docstring (its documentation) and check(group, t)")
    return Rule(rule_id, severity, role, tuple(protocols), thresholds, tuple(yields), check,
                getattr(module, "check_handles", None), module)


def _typed(rule_id: str, thresholds: type) -> None:
    """Its own fields are the keys of thresholds.toml's table, a borrowed one a key of its owner's table; each typed
    as thresholds_schema.toml types it there."""
    table = {k: v for k, v in defaults().get(rule_id, {}).items() if k != "enabled"}
    owners = {f.name: owner for f, owner in borrowed_fields(thresholds)}
    fields = {f.name: f.type if isinstance(f.type, str) else f.type.__name__ for f in dataclasses.fields(thresholds)}
    if set(fields) - set(owners) != set(table):
        raise ContractError(f"{rule_id}: Thresholds declares {sorted(set(fields) - set(owners))}, thresholds.toml "
                            f"[{rule_id}] has {sorted(table)}")
    for key, kind in fields.items():
        owner = owners.get(key, rule_id)
        if key not in defaults().get(owner, {}) or (key in owners and owner == rule_id):
            raise ContractError(f"{rule_id}: Thresholds.{key} is borrowed from [{owner}], which has no {key}")
        value = defaults()[owner][key]
        spec = schema().get(owner, {}).get(key)
        if spec is None or spec["type"] != kind:
            raise ContractError(f"{rule_id}: Thresholds.{key} is {kind}, thresholds_schema.toml [{owner}] says "
                                f"{spec['type'] if spec else 'nothing'}")
        if not isinstance(value, _TYPES[kind]) or isinstance(value, bool) != (kind == "bool"):
            raise ContractError(f"{rule_id}: thresholds.toml [{owner}] {key} = {value!r} is not {kind}")


def suggested_thresholds(rule_id: str) -> str:
    """The Thresholds class a rule module needs for its thresholds.toml table (what a ContractError suggests)."""
    table = [k for k in defaults().get(rule_id, {}) if k != "enabled"]
    specs = schema().get(rule_id, {})
    fields = "".join(f"    {k}: {specs.get(k, {}).get('type', '?')}\n" for k in table)
    return ("@dataclass(frozen=True)\nclass Thresholds(contract.Thresholds):\n"
            f'    """thresholds.toml [{rule_id}], typed as thresholds_schema.toml types it."""\n' + fields)
