"""The assignment maps Kafka prints, as the packs capture them into a field.

A leader's "Finished assignment for group at generation N: {m1=Assignment(partitions=[t-0]), ...}" (the
``assignment`` attr of assignment.computed) and a KIP-848 coordinator's "Computed a new target assignment
for epoch N ...: {m1=MemberAssignment(partitions={...}), ...}" (the ``target`` attr of
group.target_assignment) are a Java map's toString: member id = assignment. The packs capture the map;
this module reads its entries, so that the analysis reads fields, never the message.
"""

from __future__ import annotations

import regex

_MEMBER = regex.compile(r"(?:^|[{ ,])(?P<member>[^\s{},=]+)=(?:Member)?Assignment\(")
_SHARE = regex.compile(r"(?P<member>[^\s{},=]+)=Assignment\(partitions=\[(?P<partitions>[^\]]*)\]")


def members(text: str | None) -> list[str]:
    """The member ids of a printed assignment map, in order (with repeats, as printed)."""
    return [m["member"] for m in _MEMBER.finditer(text or "")]


def shares(text: str | None) -> list[tuple[str, list[str]]]:
    """(member id, partitions) of each ``member=Assignment(partitions=[...])`` entry of a leader's map."""
    return [(m["member"], [p.strip() for p in m["partitions"].split(",") if p.strip()])
            for m in _SHARE.finditer(text or "")]
