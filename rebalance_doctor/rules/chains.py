"""One finding per causal chain, the cause first.

Every rule module has a ROLE: a `cause` names why rebalances happened (a member exceeding
max.poll.interval.ms, a session lost, threads dying); a `symptom` describes what the group went
through (a storm, flapping, failed attempts, missed rebalances, leader churn, followup loops); an
`advisory` is a configuration remark that never comes first; `expected` findings describe an
expected operation (version probing during an upgrade) and `healthy` is the healthy-operation note.
A finding may state its own role (`Finding.role`) when it depends on what the window shows:
an advisory whose predicted harm is in the logs is that harm's cause; a Connect worker that came
back within the scheduled delay is an advisory note, one that did not is a cause.

A cause finding takes in what it caused: its rebalances, the followups and returns that follow
from them (`Rebalance.cause_index`) and the attempts they interrupted, the members that had to
rejoin, the partitions revoked. A symptom is folded into the cause that explains its rebalances
(or its members); it stays a chain of its own only when nothing explains them, and then says what
is unexplained. Symptoms that share rebalances with no cause form one chain, headed by the most
specific. Healthy-operation stands only when no chain warns; the expected findings (version probing
during an upgrade) come after it, each its own note: they say what the healthy operation went through.
"""

from __future__ import annotations

from ..timeline.model import FAILED, GroupTimeline
from .finding import Finding, rank
from ..core import eventnames as EV

CAUSE, SYMPTOM, ADVISORY, EXPECTED, HEALTHY = "cause", "symptom", "advisory", "expected", "healthy"
# Which symptom heads a chain of symptoms only (the one that names the most about the cause first).
SYMPTOM_PRECEDENCE = ("leader-churn", "membership-flapping", "failed-rebalance-loop", "missed-rebalance",
                      "cooperative-followup-loop", "rebalance-storm")


def link(findings: list[Finding], roles: dict[str, str], yields: dict[str, tuple[str, ...]],
         group: GroupTimeline) -> list[Finding]:
    """The chain heads, the answer first; folded findings are in their head's `caused['findings']`."""
    def role(f: Finding) -> str:
        return f.role or roles.get(f.rule, CAUSE)

    causes = [f for f in findings if role(f) == CAUSE]
    symptoms = [f for f in findings if role(f) == SYMPTOM]
    expected = [f for f in findings if role(f) == EXPECTED]
    healthy = [f for f in findings if role(f) == HEALTHY]
    advisories = [f for f in findings if role(f) == ADVISORY]
    for cause in causes:
        _close(cause, group)
        if cause.cause is None:
            cause.cause = cause.title
    heads = list(causes)
    loose: list[Finding] = []
    for symptom in sorted(symptoms, key=_precedence):
        host = _explaining(symptom, causes)
        if host is not None:
            _fold(symptom, host)
        else:
            loose.append(symptom)
    for symptom in loose:
        host = next((h for h in heads if role(h) == SYMPTOM and _overlap(symptom, h)), None)
        if host is not None:
            _fold(symptom, host)
        else:
            heads.append(symptom)       # its own chain: `cause` stays None unless it names one itself
    heads = _bordering(heads, yields)
    warns = any(rank(f.severity) >= rank("warning") for f in heads)
    if healthy and not warns:
        heads.append(healthy[0])
    heads.extend(expected)
    heads.extend(_yielding(advisories, [h for h in heads if role(h) == CAUSE], yields))
    order = {CAUSE: 0, SYMPTOM: 1, HEALTHY: 2, EXPECTED: 3, ADVISORY: 4}
    heads.sort(key=lambda f: (-rank(f.severity), order.get(role(f), 0), f.start or group.start,
                              f.rule))
    return heads


def _precedence(f: Finding) -> int:
    return SYMPTOM_PRECEDENCE.index(f.rule) if f.rule in SYMPTOM_PRECEDENCE else len(SYMPTOM_PRECEDENCE)


def _close(cause: Finding, group: GroupTimeline) -> None:
    """What a cause caused: its rebalances, those that follow from them, the attempts they cut short."""
    caused = set(cause.caused.get("rebalances", []))
    rebalances = group.rebalances
    for r in rebalances:                       # in order: a chain's links come after its start
        if r.cause_index in caused:
            caused.add(r.index)
    for position, r in enumerate(rebalances):
        if r.outcome == FAILED and position + 1 < len(rebalances) and rebalances[position + 1].index in caused:
            caused.add(r.index)
    ordered = sorted(caused)
    cause.caused["rebalances"] = ordered
    by_index = {r.index: r for r in rebalances}
    culprits = set(cause.caused.get("culprits", []))
    rejoined: list[str] = []
    revoked = 0
    for index in ordered:
        r = by_index.get(index)
        if r is None:
            continue
        rejoined.extend(who for who in r.member_ids if who not in culprits and who not in rejoined)
        revoked += sum(len(e.get("partitions") or []) for e in r.events if e["event"] == EV.PARTITIONS_REVOKED)
    cause.caused["members"] = rejoined
    cause.caused["partitions_revoked"] = revoked
    cause.caused.setdefault("findings", [])


def _rebalances(f: Finding) -> set[int]:
    return set(f.caused.get("rebalances", []))


def _members(f: Finding) -> set[str]:
    """The members a finding is about, by their timeline identity (every rule sets caused['culprits'])."""
    return set(f.caused.get("culprits", []))


def _overlap(a: Finding, b: Finding) -> int:
    return len(_rebalances(a) & _rebalances(b)) + len(_members(a) & _members(b))


def _explaining(symptom: Finding, causes: list[Finding]) -> Finding | None:
    """The cause that explains a symptom: it covers at least as many of the symptom's rebalances as
    are left without a cause (or, for a symptom without rebalances, it names the same member)."""
    if not causes:
        return None
    own = _rebalances(symptom)
    explained = set().union(*(_rebalances(c) for c in causes))
    best = max(causes, key=lambda c: (_overlap(symptom, c), rank(c.severity)))
    if _overlap(symptom, best) == 0:
        return None
    if own:
        covered = own & explained
        if not covered or len(covered) < len(own - explained):
            return None
    return best


def _fold(symptom: Finding, host: Finding) -> None:
    host.caused.setdefault("findings", []).append({"rule": symptom.rule, "summary": symptom.title})
    for item in symptom.caused.get("findings", []):
        host.caused["findings"].append(item)
    seen = {(e.source, e.line) for e in host.evidence}
    for e in symptom.evidence:
        if (e.source, e.line) not in seen and len(host.evidence) < 16:
            host.evidence.append(e)
            seen.add((e.source, e.line))
    if rank(symptom.severity) > rank(host.severity) and host.rule != "healthy-operation":
        host.severity = symptom.severity


def _bordering(heads: list[Finding], yields: dict[str, tuple[str, ...]]) -> list[Finding]:
    """One chain never carries both rules of a bordering pair: the rule that yields is folded into
    the other when they share rebalances or members (docs/rules.md says which fires when)."""
    out = list(heads)
    for f in heads:
        for other_rule in yields.get(f.rule, ()):
            other = next((h for h in out if h.rule == other_rule and h.group == f.group), None)
            if other is not None and f in out and (_overlap(f, other) or not _rebalances(f)):
                out.remove(f)
                _fold(f, other)
    return out


def _yielding(advisories: list[Finding], causes: list[Finding], yields: dict[str, tuple[str, ...]]) -> list[Finding]:
    """An advisory is a detail of the chain it borders or whose rebalances it counts: folded into the cause
    head of the same group that its rule yields to (eager-assignor into assignor-mismatch: the one member's
    list is the answer), or that explains the rebalances it is about (the eager protocol's stop-the-world
    cost of a poll-timeout storm). It stands alone when no cause explains them (a healthy autoscaling)."""
    out = []
    for f in advisories:
        other = next((h for h in causes if h.group == f.group and (h.rule in yields.get(f.rule, ())
                                                                     or _rebalances(f) & _rebalances(h))), None)
        if other is not None:
            _fold(f, other)
        else:
            out.append(f)
    return out
