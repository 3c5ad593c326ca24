"""The generation of an assignment callback, from the line that ends its session.

Sarama runs a consumer group one session per generation: ``Setup`` (the application's assignment callback) when the
session begins, ``Cleanup`` (its revocation callback) and ``consumergroup/session/<member id>/<generation> released``
when it ends. The application's ``assigned: [...]`` states no generation, so with whole-second times and no
coordinator's log, which rebalance an assignment completed is a guess from its second. The line that ends its
session states it: the one assignment callback a process logged since its previous session ended is of the
generation the next ``released`` line states (``attrs.generation_from = "session"``). A process with two or more
assignment callbacks between two session ends (a process killed before its session ended, then started again, or
two consumers in one process) gets none: which is whose is not known. Revocations keep no generation: each opens
the next rebalance.
"""

from __future__ import annotations

from ..core import eventnames as EV
from .unnamed import say

# Client lines that end a session and state its generation.
SESSION_ENDS = frozenset({EV.SARAMA_CONSUMER_GROUP_SESSION})


def link(events: list[dict]) -> int:
    """Give each assignment callback the generation its session's end states, in place; return how many."""
    by_process: dict[tuple, list[dict]] = {}
    for e in events:
        if e.get("component") != "broker" and (e["event"] == EV.PARTITIONS_ASSIGNED or e["event"] in SESSION_ENDS):
            by_process.setdefault((e.get("host") or "", e.get("source") or ""), []).append(e)
    filled = 0
    for rows in by_process.values():
        if not any(e["event"] in SESSION_ENDS and e.get("generation") is not None for e in rows):
            continue
        pending: list[dict] = []
        for e in sorted(rows, key=lambda e: int(e.get("line") or 0)):
            if e["event"] == EV.PARTITIONS_ASSIGNED:
                if e.get("generation") is None:
                    pending.append(e)
                continue
            if e.get("generation") is not None and len(pending) == 1:
                pending[0]["generation"] = e["generation"]
                say(pending[0], "generation_from", "session")
                filled += 1
            pending = []
    return filled
