"""Classic <-> consumer protocol migration (KIP-848): the coordinator refusing a member of the other protocol.

A group changes protocol online: a member joining a classic group with ``group.protocol=consumer``
converts it into a consumer group ("[GroupId g] Converted the classic group to a consumer group."),
classic members then live in the consumer group, and the last consumer-protocol member leaving
converts it back, as the broker's ``group.consumer.migration.policy`` allows (bidirectional by
default since 4.0). Where the policy or the group forbids it the coordinator refuses the member:

- a classic member's JoinGroup to a non-empty consumer group while the policy is ``disabled``
  ("Cannot join the consumer group g with the classic protocol because the group migration is
  disabled.", 4.3.1+, backported to 4.2.2): the member is answered INCONSISTENT_GROUP_PROTOCOL;
  earlier releases let it in;
- a consumer-protocol member's heartbeat to a non-empty classic group that cannot be upgraded
  ("Cannot upgrade classic group g to consumer group because online upgrade is disabled.", or the
  group does not use the consumer embedded protocol, or is larger than group.consumer.max.size): the
  member is answered GROUP_ID_NOT_FOUND.

The coordinator's line names the group, the refused protocol and the reason, not the member: the
member is known by its own lines, the same request answered with that error. Without the
coordinator's log the members' own lines still say it, with no reason: a consumer-protocol heartbeat
answered GROUP_ID_NOT_FOUND (the group id exists as a group the member's protocol may not join), and
a classic JoinGroup answered INCONSISTENT_GROUP_PROTOCOL by a group the classification finds running
the consumer protocol (in a classic group that answer is an assignor mismatch).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..timeline.model import GroupTimeline
from ..core import eventnames as EV

CLASSIC, CONSUMER = "classic", "consumer"
# The error each refused protocol's member is answered with (its own line's `error` field: the code's name, or the
# message Kafka's Errors enum gives it, which is what the classic client prints).
_ANSWER = {CLASSIC: (EV.JOIN_FAILED, ("INCONSISTENT_GROUP_PROTOCOL", "InconsistentGroupProtocol",
                                     "supported protocols are incompatible with those of existing members")),
           CONSUMER: (EV.HEARTBEAT_FAILED, ("GROUP_ID_NOT_FOUND", "GroupIdNotFound"))}


@dataclass
class Refusal:
    protocol: str          # the refused member's protocol: classic or consumer
    reason: str            # the coordinator's words
    event: dict            # the coordinator's line


@dataclass
class Migration:
    refusals: list[Refusal] = field(default_factory=list)          # the coordinator's refusal lines
    refused: dict[str, list[dict]] = field(default_factory=dict)   # member identity -> its own refused requests
    own: set[str] = field(default_factory=set)     # protocols whose refusal only the members' own lines show
    conversions: list[dict] = field(default_factory=list)          # the coordinator converting the group

    def protocols(self) -> list[str]:
        return sorted({r.protocol for r in self.refusals} | self.own)

    @property
    def found(self) -> bool:
        return bool(self.refusals or self.refused)


def read(timeline: GroupTimeline, group_protocol: str) -> Migration:
    """``group_protocol``: the group's, as protocol.detect found it (a classic member answered
    INCONSISTENT_GROUP_PROTOCOL with no coordinator line is a migration refusal only in a consumer group)."""
    found = Migration()
    for e in timeline.events:
        # (a refusal naming an instance and no protocol is a static member's UNRELEASED_INSTANCE_ID: unreleased.py)
        if e["event"] == EV.MEMBER_JOIN_REFUSED and e.get("component") == "broker" and e.get("protocol"):
            found.refusals.append(Refusal(e.get("protocol") or "", e.get("reason") or "", e))
        elif e["event"] == EV.GROUP_CONVERTED:
            found.conversions.append(e)
    logged = {r.protocol for r in found.refusals}
    for protocol, (event, errors) in _ANSWER.items():
        if protocol not in logged and protocol == CLASSIC and group_protocol != CONSUMER:
            continue
        for e in timeline.of(event):
            if e.get("component") == "broker" or not any(w in (e.get("error") or "") for w in errors):
                continue
            who = timeline.who(e) or e.get("client") or e.get("member")
            if who:
                found.refused.setdefault(who, []).append(e)
                if protocol not in logged:
                    found.own.add(protocol)
    return found
