"""Why each rebalance happened: protocol, operation, verdict and culprit (between timeline and rules).

`classify(timeline)` fills `Rebalance.protocol`, `.operation`, `.verdict`, `.culprit` and
`.cause_index` of every rebalance of a group timeline, and returns the group's `Classification`:
its protocol, its members (host, client, member ids, instance, config, assignors, life) and what
each rebalance changed. Every rule reads this instead of its own heuristics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..timeline.model import GroupTimeline, Rebalance
from . import members as members_module
from . import operations, protocol
from .members import Member, Members
from .operations import Change, verdict_of, vocabulary, words
from .protocol import NOT_DIAGNOSED


@dataclass
class Classification:
    protocol: str                                   # the group's protocol (see protocol.py)
    members: Members
    changes: dict[int, Change] = field(default_factory=dict)   # rebalance index -> what it changed
    # The coordinator's moves as the lines show them: the broker loading/unloading the group, members
    # losing or finding the coordinator (for issue 17's coordinator-churn and the rules' wording).
    coordinator: list[dict] = field(default_factory=list)

    def coordinator_loaded_before(self, ts) -> dict | None:
        """The last time the coordinator loaded the group before ts (a move), if any."""
        last = None
        for e in self.coordinator:
            if e["event"] == "coordinator.load" and "Unloading" not in (e.get("message") or "")[:200] \
                    and e.get("ts") is not None and ts is not None and e["ts"] <= ts:
                last = e
        return last

    @property
    def diagnosed(self) -> bool:
        """KIP-1071 streams groups and KIP-932 share groups are recognised, not diagnosed."""
        return self.protocol not in NOT_DIAGNOSED

    def expected(self, rebalances: list[Rebalance]) -> list[Rebalance]:
        return [r for r in rebalances if r.verdict == "expected"]

    def harmful(self, rebalances: list[Rebalance]) -> list[Rebalance]:
        return [r for r in rebalances if r.verdict == "harmful"]


def classify(timeline: GroupTimeline) -> Classification:
    members = members_module.collect(timeline, timeline.context)
    group_protocol, per_rebalance = protocol.detect(timeline)
    for r in timeline.rebalances:
        r.protocol = per_rebalance.get(r.index, group_protocol)
    result = Classification(group_protocol, members)
    result.coordinator = [e for e in timeline.events
                          if e["event"] in ("coordinator.load", "coordinator.lost", "coordinator.discovered")]
    if result.diagnosed:
        result.changes = operations.classify_rebalances(timeline, members)
    else:
        for r in timeline.rebalances:
            r.operation, r.verdict = "unknown", "unknown"
    timeline.classification = result
    return result


def of(timeline: GroupTimeline) -> Classification:
    """The timeline's classification (computed on first use)."""
    found = timeline.classification
    return found if isinstance(found, Classification) else classify(timeline)


__all__ = ["Change", "Classification", "Member", "Members", "NOT_DIAGNOSED", "classify", "of", "verdict_of",
           "vocabulary", "words"]
