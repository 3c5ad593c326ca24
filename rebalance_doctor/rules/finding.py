"""What a rule concludes: a finding (with its evidence), or a note that evidence is lacking."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..timeline.model import Culprit, Evidence

SEVERITIES = ("info", "warning", "critical")


def rank(severity: str) -> int:
    return SEVERITIES.index(severity)


@dataclass
class Finding:
    rule: str
    severity: str
    group: str | None            # None: about client handles whose lines name no group (classify/handles.py)
    title: str
    summary: str                 # the explanation, with the numbers that triggered the rule
    start: datetime | None
    end: datetime | None
    evidence: list[Evidence] = field(default_factory=list)   # root cause first, then symptoms
    remediation: str = ""
    # The causal chain (filled by the rule engine): who caused it, the cause in words (None when
    # this finding is a symptom nothing explains), and what it caused (rebalances, members,
    # partitions revoked, the symptom findings folded into it).
    culprit: Culprit | None = None
    # Why no member is the culprit when the rule knows none is (every leader in turn failing the same assignment):
    # the answer says so instead of guessing one from the rebalances' triggers.
    no_culprit: str | None = None
    cause: str | None = None
    caused: dict = field(default_factory=dict)
    # The finding's role in the causal chains when it is not its rule's usual ROLE (chains.py).
    role: str | None = None
    # The numbers it states, each measured once from named lines (figures.py): the prose is written from them
    # and every format renders them.
    figures: list = field(default_factory=list)
    # The exceptions its culprits died with (core/stacktrace.Thrown): first line, root cause, the application's frame,
    # each with its log line. Every format shows them with the cause.
    exceptions: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"rule": self.rule, "severity": self.severity, "group": self.group, "title": self.title,
                "summary": self.summary, "start": iso(self.start), "end": iso(self.end),
                "evidence": [e.to_dict() for e in self.evidence], "remediation": self.remediation,
                "cause": self.cause, "caused": self.caused_dict(),
                "culprit": self.culprit.to_dict() if self.culprit else None,
                "figures": [x.to_dict() for x in self.figures],
                "exceptions": [x.to_dict() for x in self.exceptions]}

    def caused_dict(self) -> dict:
        return {"rebalances": list(self.caused.get("rebalances", [])), "members": list(self.caused.get("members", [])),
                "partitions_revoked": self.caused.get("partitions_revoked", 0),
                "findings": [dict(x) for x in self.caused.get("findings", [])]}


@dataclass
class Note:
    """A rule could not decide: it says so instead of guessing."""

    rule: str
    group: str
    text: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "text": self.text}


def iso(ts: datetime | None) -> str | None:
    if ts is None:
        return None
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def window(evidence: list[Evidence]) -> tuple[datetime | None, datetime | None]:
    times = [e.ts for e in evidence if e.ts is not None]
    return (min(times), max(times)) if times else (None, None)


def dedupe(evidence: list[Evidence], limit: int = 12) -> list[Evidence]:
    seen, out = set(), []
    for item in evidence:
        key = (item.source, item.line)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out[:limit]
