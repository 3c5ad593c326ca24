"""Kafka Streams warmup replicas as the leader's task assignor reports them, probe after probe (KIP-441, 2.6+).

At every rebalance of a Streams application the leader's HighAvailabilityTaskAssignor logs its
decision with each client's state, the lag the leader computed for every stateful task on that
client included::

    Decided on assignment: {0056a363-...=[activeTasks: ([]) standbyTasks: ([0_4, 0_6]) prevActiveTasks: ([])
    prevStandbyTasks: ([0_4, 0_6]) changelogOffsetTotalsByTask: ([0_4=7952536, 0_6=11506336]) taskLagTotals:
    ([0_0=34538583, 0_4=14817934, 0_6=10036525]) capacity: 2 assigned: 2], f255dce1-...=[...]} with followup
    probing rebalance.

A task whose state is on a client that should not run it stays active there; the client that
should run it gets a warmup replica (a standby task) and the leader schedules a probing rebalance
probing.rebalance.interval.ms later. The warmup's lag (``taskLagTotals``; -2 is a running active
task) shrinks as it restores; once within ``acceptable.recovery.lag`` the task moves and the
decision says "with no followup probing rebalance". A warmup that restores slower than its
changelog grows never gets there: probe after probe, the same warmup, its lag never shrinking, its
task never moving to it (while other clients' warmups may catch up and their tasks move).
`Warmups.stalls` finds such stretches; without the decision lines (a custom assignor, the
leader's log missing) there is nothing to judge and nothing is found.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from ..timeline.model import GroupTimeline
from ..core import eventnames as EV

_CLIENT = regex.compile(
    r"(?P<process>[^\s{},=]+)=\[activeTasks: \(\[(?P<active>[^\]]*)\]\) standbyTasks: \(\[(?P<standby>[^\]]*)\]\)"
    r".*?taskLagTotals: \(\[(?P<lags>[^\]]*)\]\)", regex.S)
_LAG = regex.compile(r"(?P<task>\d+_\d+)=(?P<lag>-?\d+)")


@dataclass
class ClientTasks:
    active: frozenset[str]
    standby: frozenset[str]
    lags: dict[str, int]                   # task -> lag on this client (-2: its running active task)


@dataclass
class Decision:
    """One "Decided on assignment" line: each client's tasks and lags, and whether a probe follows."""

    event: dict
    rebalance: int | None                  # the index of the rebalance it belongs to
    probing: bool                          # "with followup probing rebalance"
    clients: dict[str, ClientTasks]

    def owners(self) -> dict[str, str]:
        """Stateful task -> the client it is active on."""
        return {task: process for process, c in self.clients.items() for task in c.active if task in c.lags}

    def warmups(self, caught_up_lag: int) -> dict[tuple[str, str], int]:
        """(client, task) -> lag of every standby replica not yet within ``caught_up_lag``."""
        return {(process, task): c.lags[task] for process, c in self.clients.items() for task in c.standby
                if c.lags.get(task, -1) > caught_up_lag}


@dataclass
class Stall:
    """Consecutive probing decisions over which the same warmups got no closer (their tasks never moved to them)."""

    decisions: list[Decision]
    lags: dict[tuple[str, str], tuple[int, int]]    # stalled warmup (client, task) -> (first lag, last lag)
    spans: dict[tuple[str, str], tuple[Decision, Decision]]    # stalled warmup -> its first and last decision
    converged_after: bool                           # a later decision needed no more probing


@dataclass
class Warmups:
    decisions: list[Decision] = field(default_factory=list)

    def stalls(self, caught_up_lag: int, min_decisions: int) -> list[Stall]:
        """Stretches of consecutive probing decisions in which a warmup replica (a client, a task) stayed a warmup
        more than ``caught_up_lag`` behind through at least ``min_decisions`` of them, its lag never smaller than at
        the decision before. Progress is judged warmup by warmup: while one client's warmups catch up and their tasks
        move, another's can be stuck, and the probes go on for it (the lab's streams-warmup-stalled: two clients
        trade tasks at every probe while the third's warmups fall further behind). Overlapping stalled warmups make
        one stall; a decision without a followup probe ends every stretch."""
        # each decision's lagging warmups, once: (client, task) -> lag; none for a decision that ends the probing
        lagging = [d.warmups(caught_up_lag) if d.probing else {} for d in self.decisions]
        streaks: list[tuple[tuple[str, str], list[int]]] = []
        open_: dict[tuple[str, str], list[int]] = {}
        for i, now in enumerate(lagging):
            for pair, run in list(open_.items()):
                if pair not in now or now[pair] < lagging[run[-1]][pair]:
                    streaks.append((pair, open_.pop(pair)))
            for pair in now:
                open_.setdefault(pair, []).append(i)
        streaks.extend(open_.items())
        long = sorted(((pair, run) for pair, run in streaks if len(run) >= min_decisions), key=lambda s: s[1][0])
        merged: list[tuple[int, int, list[tuple[tuple[str, str], list[int]]]]] = []
        for pair, run in long:
            if merged and run[0] <= merged[-1][1]:
                start, end, members = merged[-1]
                merged[-1] = (start, max(end, run[-1]), members + [(pair, run)])
            else:
                merged.append((run[0], run[-1], [(pair, run)]))
        stalls = []
        for start, end, members in merged:
            run = self.decisions[start:end + 1]
            spans = {pair: (self.decisions[r[0]], self.decisions[r[-1]]) for pair, r in members}
            lags = {pair: (lagging[r[0]][pair], lagging[r[-1]][pair]) for pair, r in members}
            later = self.decisions[end + 1:]
            stalls.append(Stall(run, lags, spans, any(not d.probing for d in later)))
        return stalls


def parse(event: dict, rebalance: int | None) -> Decision | None:
    attrs = event.get("attrs") or {}
    text = attrs.get("assignment")
    if not text:
        return None
    clients = {}
    for m in _CLIENT.finditer(text):
        lags = {t["task"]: int(t["lag"]) for t in _LAG.finditer(m["lags"])}
        clients[m["process"]] = ClientTasks(frozenset(_tasks(m["active"])), frozenset(_tasks(m["standby"])), lags)
    if not clients:
        return None
    return Decision(event, rebalance, attrs.get("followup") != "no", clients)


def _tasks(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def read(timeline: GroupTimeline) -> Warmups:
    decisions = []
    for r in timeline.rebalances:
        for e in r.events:
            if e["event"] == EV.STREAMS_ASSIGNMENT_DECIDED:
                d = parse(e, r.index)
                if d is not None:
                    decisions.append(d)
    decisions.sort(key=lambda d: d.event["ts"])
    return Warmups(decisions)
