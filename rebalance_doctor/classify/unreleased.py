"""KIP-848 static members refused UNRELEASED_INSTANCE_ID: a new member joining with a held group.instance.id.

Under the consumer protocol a static member releases its ``group.instance.id`` by leaving with epoch
-2 (``close()``); until it does, or until the coordinator fences it after the broker's
``group.consumer.session.timeout.ms``, a new member joining with the same instance id is refused
("[GroupId g] Static member N with instance id I cannot join the group because the instance id is
owned by member O.") and the client's heartbeat fails UNRELEASED_INSTANCE_ID, a fatal error: the
consumer stops and the application usually exits. A process killed and restarted within the session
timeout, or a new pod started before the old one closed, does this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..timeline.model import GroupTimeline
from ..core import eventnames as EV


@dataclass
class Unreleased:
    refusals: list[dict] = field(default_factory=list)             # the coordinator's lines
    refused: dict[str, list[dict]] = field(default_factory=dict)   # member identity -> its own refused heartbeats
    instances: dict[str, str] = field(default_factory=dict)        # instance id -> the member holding it (owner)

    @property
    def found(self) -> bool:
        return bool(self.refusals or self.refused)


def read(timeline: GroupTimeline) -> Unreleased:
    found = Unreleased()
    for e in timeline.of(EV.MEMBER_JOIN_REFUSED):
        if not e.get("instance") or e.get("protocol"):
            continue
        if e.get("component") == "broker":
            found.refusals.append(e)
            if e.get("member"):
                found.instances[e["instance"]] = e["member"]
        else:
            who = timeline.who(e) or e.get("client") or e["instance"]
            found.refused.setdefault(who, []).append(e)
    return found
