"""SyncGroup failures that are errors, not the protocol at work.

A SyncGroup fails in two very different ways. REBALANCE_IN_PROGRESS ("The group began another
rebalance"), ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID mean someone else moved the group on: a
symptom. NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE are the coordinator moving (coordinator.py).
The rest is an error of the SyncGroup itself: the coordinator could not store the leader's
assignment ("Preparing to rebalance group g ... (reason: error when storing group assignment during
SyncGroup (member: m))"; the members see UNKNOWN_SERVER_ERROR, "Unknown broker error", or
MESSAGE_TOO_LARGE), and the group rebalances straight away into the same failure when the cause
stays (an assignment too large for a __consumer_offsets record).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..timeline.builder import STORE_ERROR
from ..timeline.model import GroupTimeline
from ..core import eventnames as EV

_STORE = STORE_ERROR
_NOT_ERRORS = ("REBALANCE_IN_PROGRESS", "began another rebalance", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID",
               "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "is rebalancing",
               "not the correct coordinator", "coordinator is not available", "illegal generation",
               "not aware of this member")
STORE = "the coordinator could not store the assignment"


@dataclass
class SyncFailure:
    error: str              # what failed, in one phrase (the same for every repetition of one cause)
    event: dict
    member: str | None      # the member whose SyncGroup failed (the leader, for a store error)
    generation: int | None


@dataclass
class SyncErrors:
    failures: list[SyncFailure] = field(default_factory=list)
    max_generation: int | None = None        # the highest generation the window shows

    def by_error(self) -> dict[str, list[SyncFailure]]:
        out: dict[str, list[SyncFailure]] = {}
        for f in self.failures:
            out.setdefault(f.error, []).append(f)
        return out


def read(timeline: GroupTimeline) -> SyncErrors:
    found = SyncErrors()
    generations = [r.generation for r in timeline.rebalances if r.generation is not None]
    found.max_generation = max(generations) if generations else None
    for e in timeline.events:
        name = e["event"]
        if name == EV.REBALANCE_PREPARE and e.get("component") == "broker":
            m = _STORE.search(e.get("reason") or "")
            if m:
                member = m["member"]
                error = STORE + (f" ({m['code']})" if m["code"] else "")
                found.failures.append(SyncFailure(error, e, timeline.directory.get(member or "") or member,
                                                  e.get("generation")))
        elif name == EV.SYNC_FAILED and e.get("component") != "broker":
            text = f"{e.get('error') or ''} {e.get('reason') or ''} {(e.get('attrs') or {}).get('error_text') or ''}"
            if any(words.lower() in text.lower() for words in _NOT_ERRORS):
                continue
            error = e.get("error") or e.get("reason") or "SyncGroup error"
            if error == "UNKNOWN" or "Unknown broker error" in text or "UNKNOWN_SERVER_ERROR" in text:
                error = "an unknown server error (UNKNOWN_SERVER_ERROR)"
            found.failures.append(SyncFailure(error, e, timeline.who(e), e.get("generation")))
    return found
