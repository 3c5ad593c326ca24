"""Which groups a report shows in full when there are many: the most hurt first, up to a number per format.

A run over a whole cluster's logs may hold tens of thousands of groups (20,000 groups made a 65 MB HTML
page). Every format keeps one row per group in its groups table (up to ``TABLE_ROWS``; the rest summed up
in one line), and gives its full detail (HTML: the swimlanes and rebalance tables; terminal and Markdown:
a section per group) to the groups that matter most: the ranking below, cut at the format's limit. The
JSON keeps every group whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..result import GroupState

_SEVERITY = {"critical": 0, "warning": 1, "info": 2, None: 3}

HTML_DETAILED = 100     # groups with swimlanes and rebalance tables in the HTML page
TEXT_DETAILED = 20      # groups with a section of their own in the terminal and Markdown reports
TABLE_ROWS = 1000       # rows of a groups table; the rest are counted in one line


def rank(state: GroupState) -> tuple:
    """Most hurt first: the worst finding, harmful and failed rebalances, time unstable, then the name."""
    return (not state.hurt, _SEVERITY.get(state.worst, 3), -state.harmful, -state.failed, -state.unstable_ms,
            state.group)


@dataclass
class Rest:
    """What the groups a table leaves out add up to, in one line."""

    groups: int
    hurt: int
    rebalances: int
    harmful: int

    def text(self) -> str:
        hurt = f", {self.hurt} with findings at warning or above" if self.hurt else ""
        return (f"{self.groups:,} more group(s){hurt}: {self.rebalances:,} rebalances, {self.harmful:,} harmful "
                f"(every group is in --format json)")


def table_rows(states: list[GroupState], limit: int | None = None) -> tuple[list[GroupState], Rest | None]:
    """The rows of a groups table, most hurt first, and what the ones left out add up to (None: none left out)."""
    limit = TABLE_ROWS if limit is None else limit
    ordered = sorted(states, key=rank)
    rest = ordered[limit:]
    if not rest:
        return ordered, None
    return ordered[:limit], Rest(len(rest), sum(1 for g in rest if g.hurt), sum(g.rebalances for g in rest),
                                 sum(g.harmful for g in rest))


def detailed(analysis, limit: int) -> tuple[list, int]:
    """The group analyses shown in full (in the analysis' order) and how many are not."""
    if len(analysis.groups) <= limit:
        return list(analysis.groups), 0
    states = {s.group: s for s in analysis.answer.groups}
    keep = {id(g) for g in sorted(analysis.groups, key=lambda g: _rank_of(g, states))[:limit]}
    return [g for g in analysis.groups if id(g) in keep], len(analysis.groups) - limit


def _rank_of(g, states: dict[str, GroupState]) -> tuple:
    state = states.get(g.timeline.group)
    return rank(state) if state is not None else (True, 3, 0, 0, -g.timeline.unstable_ms, g.timeline.group or "")
