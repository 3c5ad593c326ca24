"""Classify a logged reason into the kind of thing that started a rebalance (triggers.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import regex

from ..core.toml import load_toml

TRIGGERS_FILE = Path(__file__).with_name("triggers.toml")
_CLIENT_REASON = regex.compile(r";\s*client reason:\s*(?P<client>.*)$", regex.S)


@dataclass(frozen=True)
class TriggerKind:
    name: str
    pattern: "regex.Pattern[str]"
    symptom: bool


@dataclass(frozen=True)
class Classified:
    kind: str
    symptom: bool
    member: str | None


@lru_cache(maxsize=1)
def kinds() -> tuple[TriggerKind, ...]:
    data = load_toml(TRIGGERS_FILE)
    return tuple(TriggerKind(k["name"], regex.compile(k["regex"]), bool(k.get("symptom", False)))
                 for k in data["kind"])


@lru_cache(maxsize=1)
def _no_client_reason() -> frozenset[str]:
    return frozenset(load_toml(TRIGGERS_FILE).get("no_client_reason", ()))


def without_placeholder(reason: str | None) -> str | None:
    """``reason`` less a client reason that is only the broker's placeholder for none ("not provided"):
    the broker's own part, or None when nothing else is left."""
    if not reason:
        return reason
    if reason.strip() in _no_client_reason():
        return None
    client = _CLIENT_REASON.search(reason)
    if client and client["client"].strip() in _no_client_reason():
        return reason[:client.start()].rstrip() or None
    return reason


# A reason is classified by the timeline and again by the classification, for each rebalance it
# starts: 3 times per rebalance of a group of 10,000, through every kind's regex each time.
@lru_cache(maxsize=1 << 16)
def classify(reason: str | None) -> Classified | None:
    """The kind of a reason, or None when no kind matches (an unknown reason is still a cause).
    A client reason that is the broker's placeholder for none is no reason (triggers.toml)."""
    reason = without_placeholder(reason)
    if not reason:
        return None
    client = _CLIENT_REASON.search(reason)
    texts = ([client["client"]] if client else []) + [reason]
    member = None
    for text in texts:
        for kind in kinds():
            m = kind.pattern.search(text)
            if m:
                member = m.groupdict().get("member") or _broker_member(reason)
                return Classified(kind.name, kind.symptom, member)
    return Classified("other", False, _broker_member(reason))


_MEMBER_IN_REASON = regex.compile(r"(?i)member (?P<member>[^\s;,]+)")


def _broker_member(reason: str) -> str | None:
    m = _MEMBER_IN_REASON.search(reason)
    return m["member"] if m else None
