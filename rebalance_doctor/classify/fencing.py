"""KIP-848 consumer groups (group.protocol=consumer): the members the coordinator fenced, and why.

Under the consumer protocol the broker owns the session and the rebalance: a member whose
heartbeats stop for the broker's group.consumer.session.timeout.ms is fenced ("[GroupId g] Member
m fenced from the group because the member session expired"); one that does not revoke or
acknowledge its assignment within its rebalance timeout (the client's max.poll.interval.ms) is
fenced too ("... because it failed to revoke partitions within 300000ms" / "... to transition
from epoch 5 within ..."). The member learns it at its next heartbeat: UNKNOWN_MEMBER_ID ("... is
unknown"), FENCED_MEMBER_EPOCH ("... because epoch N is fenced"), loses its partitions and joins
again with epoch 0. A member leaving on purpose (epoch -1) is not fenced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..timeline.model import GroupTimeline
from .protocol import heartbeat_protocol
from ..core import eventnames as EV

SESSION, REBALANCE_TIMEOUT, STALE_EPOCH, UNKNOWN = "session", "rebalance-timeout", "stale-epoch", "unknown-member"
_CLIENT_FENCED = ("is fenced", "FENCED_MEMBER_EPOCH", "fenced member epoch")
_CLIENT_UNKNOWN = ("is unknown", "UNKNOWN_MEMBER_ID", "not aware of this member")


@dataclass
class Fence:
    member: str            # the member's timeline identity
    kind: str              # SESSION, REBALANCE_TIMEOUT, STALE_EPOCH, UNKNOWN
    event: dict            # the coordinator's fencing line, else the member's own


@dataclass
class Fencing:
    fences: list[Fence] = field(default_factory=list)

    def by_member(self) -> dict[str, list[Fence]]:
        out: dict[str, list[Fence]] = {}
        for f in self.fences:
            out.setdefault(f.member, []).append(f)
        return out


def read(timeline: GroupTimeline, protocol: str) -> Fencing:
    """The group's fencings: one per fencing the coordinator logged; where its log is missing, one per member
    heartbeat answered as fenced or unknown (the member's own view of the same fencing)."""
    found = Fencing()
    if not heartbeat_protocol(protocol):
        return found
    broker: list[Fence] = []
    client: list[Fence] = []
    for e in timeline.events:
        name = e["event"]
        who = timeline.who(e) or e.get("member") or "?"
        if e.get("component") == "broker":
            if name == EV.MEMBER_EXPIRED:
                broker.append(Fence(who, SESSION, e))
            elif name == EV.MEMBER_FENCED:
                broker.append(Fence(who, REBALANCE_TIMEOUT if "within" in (e.get("reason") or "") else STALE_EPOCH, e))
        elif name == EV.HEARTBEAT_FAILED:
            text = f"{e.get('error') or ''} {(e.get('attrs') or {}).get('member_error') or ''}"
            if any(words in text for words in _CLIENT_FENCED):
                client.append(Fence(who, STALE_EPOCH, e))
            elif any(words in text for words in _CLIENT_UNKNOWN):
                client.append(Fence(who, UNKNOWN, e))
    fenced_members = {f.member for f in broker}
    found.fences = broker + [f for f in client if f.member not in fenced_members]
    found.fences.sort(key=lambda f: (f.event.get("ts") is None, f.event.get("ts") or 0))
    return found
