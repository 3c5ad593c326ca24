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
changelog grows never gets there: probe after probe, the same warmups, no lag shrinking, no task
moving. `Warmups.stalls` finds such stretches; without the decision lines (a custom assignor, the
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
    """Consecutive probing decisions in which no warmup got closer and no stateful task moved."""

    decisions: list[Decision]
    lags: dict[tuple[str, str], tuple[int, int]]    # warmup present throughout -> (first lag, last lag)
    converged_after: bool                           # a later decision needed no more probing


@dataclass
class Warmups:
    decisions: list[Decision] = field(default_factory=list)

    def stalls(self, caught_up_lag: int, min_decisions: int) -> list[Stall]:
        """Runs of at least ``min_decisions`` probing decisions, each one showing no progress over the one before:
        no warmup present in both with a smaller lag, no stateful task active on another client, and at least one
        warmup present in both (something to compare)."""
        runs: list[list[Decision]] = []
        run: list[Decision] = []
        for d in self.decisions:
            if not d.probing:
                if len(run) >= min_decisions:
                    runs.append(run)
                run = []
                continue
            if run and not _no_progress(run[-1], d, caught_up_lag):
                if len(run) >= min_decisions:
                    runs.append(run)
                run = []
            run.append(d)
        if len(run) >= min_decisions:
            runs.append(run)
        stalls = []
        for run in runs:
            first, last = run[0].warmups(caught_up_lag), run[-1].warmups(caught_up_lag)
            kept = {pair: (first[pair], last[pair]) for pair in first if pair in last}
            later = [d for d in self.decisions if d.event["ts"] > run[-1].event["ts"]]
            stalls.append(Stall(run, kept, any(not d.probing for d in later)))
        return stalls


def _no_progress(before: Decision, after: Decision, caught_up_lag: int) -> bool:
    old, new = before.warmups(caught_up_lag), after.warmups(caught_up_lag)
    common = [pair for pair in new if pair in old]
    if not common or any(new[pair] < old[pair] for pair in common):
        return False
    was, now = before.owners(), after.owners()
    return all(was[task] == now[task] for task in was.keys() & now.keys())     # no stateful task moved


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
