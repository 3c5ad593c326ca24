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
