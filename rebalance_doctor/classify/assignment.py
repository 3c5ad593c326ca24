"""Who holds what after the group's last completed rebalance: partitions per member, as the lines say.

Two sources, both complete assignments: each member's own ``Updating assignment with / Assigned
partitions: [...]`` (2.4+; KIP-848 ``Reconciling assignment``), and the leader's ``Finished assignment
for group at generation N: {member=Assignment(partitions=[...], ...), ...}``, which names every
member's share even when its own log is missing. Only members of the last generation count, and only
when it completed (a group whose SyncGroups keep failing holds no assignment to speak of): a member
that left holds nothing. ``Adding newly assigned partitions`` is not used: under the
cooperative protocol it lists only what was added.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..timeline.model import GroupTimeline
from .members import Members
from ..core import assignment_maps
from ..core import eventnames as EV


@dataclass
class Holdings:
    """Partitions per member identity after the last completed rebalance, and the lines that say so."""

    generation: int | None = None
    partitions: dict[str, list[str]] = field(default_factory=dict)
    evidence: dict[str, dict] = field(default_factory=dict)     # member identity -> the line

    @property
    def total(self) -> int:
        return sum(len(p) for p in self.partitions.values())


def holdings(timeline: GroupTimeline, members: Members) -> Holdings:
    done = [r for r in timeline.rebalances if r.completed and r.start is not None]
    if not done or done[-1] is not timeline.rebalances[-1]:
        return Holdings()        # the group did not settle at the end (SyncGroups failing): nobody holds a share
    last = done[-1]
    out = Holdings(generation=last.generation)
    current = {who for who in (_identity(members, m) for m in last.member_ids) if who}
    leader: dict[str, list[str]] = {}            # the leader's map: exactly the last generation's members
    own: dict[str, list[str]] = {}
    for e in timeline.events:
        if e.get("ts") is None or e["ts"] < last.start:
            continue
        if e["event"] == EV.ASSIGNMENT_COMPUTED and e.get("generation") == last.generation:
            for member_id, partitions in assignment_maps.shares((e.get("attrs") or {}).get("assignment")):
                # 2.x clients do not log their own member id: then the member id names it
                who = _identity(members, member_id) or timeline.directory.get(member_id) or member_id
                leader[who] = partitions
                out.evidence[who] = e
        elif e["event"] == EV.ASSIGNMENT_RECEIVED and e.get("component") != "broker" and e.get("partitions") is not None:
            who = timeline.who(e)
            if who and (not current or who in current):
                own[who] = list(e["partitions"])
                out.evidence.setdefault(who, e)
    out.partitions = leader or own
    out.evidence = {who: e for who, e in out.evidence.items() if who in out.partitions}
    return out


def _identity(members: Members, member_id: str | None) -> str | None:
    member = members.get(member_id)
    return member.identity if member is not None else None
