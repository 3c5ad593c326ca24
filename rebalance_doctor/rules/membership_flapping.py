"""The same members (or client nodes) keep leaving and coming back across rebalances.

Symptom
-------
The member count goes up and down between successive rebalances (n <-> n+1)::

    node0.log: [18:12:54,694] INFO stream-thread [...] 2 client nodes and 3 consumers participating in this rebalance:
    node0.log: [18:13:45,375] INFO stream-thread [...] 2 client nodes and 4 consumers participating in this rebalance:
    node0.log: [18:13:57,340] INFO stream-thread [...] 2 client nodes and 3 consumers participating in this rebalance:

and the same member id prefix appears in successive ``has left group`` / ``has failed`` /
``Adding new member`` lines on the coordinator.

Why it happens
--------------
Every arrival and departure is a rebalance; Kafka Streams never converges on a task assignment
while the membership keeps changing. A member that comes and goes repeatedly is crash-looping
(restarted by its orchestrator), timing out on ``max.poll.interval.ms`` and rejoining, or losing
its session on an unstable network. A rolling restart, where each member leaves and returns once,
is not flapping: only members seen leaving at least twice are reported.

Remediation
-----------
Find why the named member leaves (the poll-timeout, heartbeat-expiration, thread-replacement-loop
findings usually say; otherwise its own log at the time it left). Static membership
(``group.instance.id``) with a ``session.timeout.ms`` above the restart time turns quick
restarts into no rebalance at all.
"""

from __future__ import annotations

from collections import Counter

from ..timeline.identity import node_of
from ..timeline.model import GroupTimeline
from .finding import Finding, Note, dedupe
from .helpers import names

ID = "membership-flapping"
SEVERITY = "warning"
_COMINGS_AND_GOINGS = ("member.leave", "leave.request", "member.expired", "member.fenced", "join.success",
                       "member.join", "streams.participants", "rebalance.prepare")


def check(group: GroupTimeline, t: dict):
    departures: Counter = Counter()
    returns: Counter = Counter()
    gone: set[str] = set()
    for r in group.rebalances:
        for who in set(r.left + r.expired + r.missed):
            departures[who] += 1
            gone.add(who)
        for who in r.member_ids:
            if who in gone:
                returns[who] += 1
                gone.discard(who)
    flapping = {m: n for m, n in departures.items() if n >= t["min_cycles"] and returns[m] >= t["min_cycles"] - 1}
    nodes: Counter = Counter()
    for member, count in departures.items():
        node = node_of(member)
        if node:
            nodes[node] += count
    flapping_nodes = {n: c for n, c in nodes.items() if c >= t["min_cycles"]
                      and not any(node_of(m) == n for m in flapping)}
    counts = [r.members for r in group.rebalances if r.completed and r.members is not None]
    directions = [1 if b > a else -1 for a, b in zip(counts, counts[1:]) if b != a]
    oscillations = sum(1 for a, b in zip(directions, directions[1:]) if a != b)
    if not flapping and not flapping_nodes:
        if oscillations >= t["min_oscillations"] and not departures:
            yield Note(ID, group.group, f"not enough evidence: the member count oscillates "
                                        f"({' -> '.join(map(str, counts[:10]))}) but no line names who comes and goes")
        return
    who = sorted(flapping, key=lambda m: -flapping[m]) + sorted(flapping_nodes)
    involved = [r for r in group.rebalances if set(r.left + r.expired + r.missed) & set(who)
                or set(r.member_ids) & set(who) or any(node_of(m) in flapping_nodes for m in r.left + r.expired + r.missed)]
    evidence = []
    for r in involved:
        for ev, e in zip(r.evidence(), r.events):
            if e["event"] in ("member.leave", "leave.request", "member.expired", "member.fenced", "poll.timeout") \
                    or (e["event"] == "streams.participants"):
                evidence.append(ev)
    detail = "; ".join(f"{names([m])} left {departures[m]} times" for m in sorted(flapping, key=lambda m: -flapping[m]))
    if flapping_nodes:
        detail += ("; " if detail else "") + "; ".join(f"a member of node {names([n])} left {c} times"
                                                     for n, c in flapping_nodes.items())
    count_text = f" Member count across rebalances: {' -> '.join(map(str, counts[:12]))}." if counts else ""
    departed = [r for r in involved if set(r.left + r.expired + r.missed) & set(who)
                or any(node_of(m) in flapping_nodes for m in r.left + r.expired + r.missed)
                or (r.trigger_member and (r.trigger_member in who or node_of(r.trigger_member) in flapping_nodes)
                    and r.members is not None and r.members < max(counts or [0]))]
    kinds = Counter(r.trigger_kind for r in departed if r.trigger_kind)
    yield Finding(ID, "warning", group.group, f"membership flapping: {names(who, 2)} keep leaving and rejoining",
                  f"{detail}.{count_text} Departures were started by: "
                  + (", ".join(f"{k} ({n})" for k, n in kinds.most_common()) or "no logged reason") + ".",
                  involved[0].start if involved else group.start, involved[-1].end if involved else group.end,
                  dedupe(evidence), "Find why the named member leaves (see the poll-timeout, heartbeat-expiration "
                  "and thread-replacement-loop findings, or its own log when it left). Static membership "
                  "(group.instance.id, session.timeout.ms above a restart) makes quick restarts free.")
