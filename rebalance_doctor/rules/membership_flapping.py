"""The same member (or Streams client node) keeps leaving and coming back across rebalances.

Symptom
-------
The member count goes up and down between successive rebalances (n <-> n+1)::

    node0.log: [18:12:54,694] INFO stream-thread [...] 2 client nodes and 3 consumers participating in this rebalance:
    node0.log: [18:13:45,375] INFO stream-thread [...] 2 client nodes and 4 consumers participating in this rebalance:
    node0.log: [18:13:57,340] INFO stream-thread [...] 2 client nodes and 3 consumers participating in this rebalance:

and the same member appears in successive ``has left group`` / ``has failed`` / ``Adding new
member`` lines on the coordinator, or its own log shows its process starting again and again
(``ConsumerConfig values:``, ``Kafka version:``) without having closed first: no ``sending
LeaveGroup request ... due to the consumer is being closed``, no Streams ``PENDING_SHUTDOWN``.
Or the member's own log says, cycle after cycle, that the coordinator no longer knows its member
id (UNKNOWN_MEMBER_ID) and it rejoins, while no line says why it was removed (brod)::

    [08:14:05.331I||<0.912.0>] Group member (orders,coor=<0.912.0>,cb=<0.911.0>,generation=17):
    re-joining group, reason:unknown_member_id
    [08:14:05.334I||<0.912.0>] Group member (orders,coor=<0.912.0>,cb=<0.911.0>,generation=19):
    elected=true

(Java: ``Request joining group due to: encountered UNKNOWN_MEMBER_ID from HEARTBEAT response``.)
A generation it rejoins at more than one above the one it had (17, then 19) completed without it.

Why it happens
--------------
Every arrival and departure is a rebalance; Kafka Streams never converges on a task assignment
while the membership keeps changing. A member that comes and goes repeatedly is crash-looping
(restarted by its orchestrator), timing out on ``max.poll.interval.ms`` and rejoining, or losing
its session on an unstable network. A member told UNKNOWN_MEMBER_ID was removed by the coordinator:
its session timeout expired, or it did not rejoin within the rebalance timeout while another member's
join completed a generation without it (clients on the JoinGroup v0 API have no rebalance timeout:
the coordinator uses their session timeout). Its own log does not say which; the coordinator's does.
A rolling restart (every member leaves on purpose and
returns, one at a time), a two-bounce upgrade (the same, twice) and autoscaling (members leave
while the group changes and join again later) are not flapping. When a timeout explains the
departures, that finding is the cause and this one is folded into it. A crash loop (the
classification's ``restart-loop``: the member's process dies and is started again, again and
again, while the others run on) is the cause itself: this finding comes first, naming the member
and its host, and the coordinator's removals on session timeout are how it noticed each death.

Remediation
-----------
Find why the named member leaves: its own log when it left (the last lines before a restart
show a crash), the orchestrator's restart count and events. Static membership
(``group.instance.id``) with a ``session.timeout.ms`` above the restart time turns quick
restarts into no rebalance at all. A member removed again and again (UNKNOWN_MEMBER_ID): the
coordinator's log says why it removed it; check ``session.timeout.ms`` and the rebalance timeout
(``max.poll.interval.ms``; brod's ``session_timeout_seconds`` and ``rebalance_timeout_seconds``,
the session timeout alone on the JoinGroup v0 API) against how long the group's rebalances take,
and look at the other members of the group (whose joins complete the generations it misses).

Scope: every protocol. Followed (``analyze --follow``), a member's departures folded out of the window held
count as they would in ``analyze`` of the whole log (``COUNTS_FOLDED``): a member that leaves once an hour is
flapping even though no window held ever shows two of its departures.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..classify import of
from ..classify.operations import LOST
from ..timeline.identity import node_of
from ..timeline.model import Evidence, Folded, GroupTimeline
from . import contract, figures
from .finding import Finding, Note, dedupe
from .helpers import culprit_of, label_of, names
from ..core import eventnames as EV

ID = "membership-flapping"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer", "streams-group", "share")
# Followed, a member's departures folded out of the window held count (``fold`` below keeps them in
# GroupTimeline.folded); fold.py does not add its own counts to its figures.
COUNTS_FOLDED = True
_COUNTS_SHOWN = 12         # generations' member counts the summary lists
_DEPARTURE_LINES = (EV.MEMBER_LEAVE, EV.LEAVE_REQUEST, EV.MEMBER_EXPIRED, EV.MEMBER_FENCED, EV.POLL_TIMEOUT,
                    EV.STREAMS_THREAD_DIED, EV.STREAMS_THREAD_REPLACED)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [membership-flapping], typed as thresholds_schema.toml types it."""
    min_cycles: int
    min_oscillations: int


def _departures(group: GroupTimeline, classification) -> tuple[Counter, dict, dict, dict]:
    """Each member's departures that are not part of an expected operation: (member -> how many, member -> the
    rebalance of each, member -> the rebalances it is seen in, member -> its rejoins told UNKNOWN_MEMBER_ID)."""
    cycles: Counter = Counter()            # member -> departures (and restarts without leaving) not expected
    left: dict[str, list] = {}             # member -> the rebalance of each of those departures (its evidence)
    where: dict[str, list] = {}
    removed: dict[str, list] = {}          # member -> its rejoins told UNKNOWN_MEMBER_ID: (rebalance, line)
    by_index = {r.index: r for r in group.rebalances}
    returned: set = set()                  # members whose return came before the removal of their dead process
    departed: set = set()                  # members whose removal is counted and whose return has not come yet
    for r in group.rebalances:
        if r.verdict == "expected":
            continue
        change = classification.changes.get(r.index)
        if r.operation == "restart-loop" and r.culprit_name:
            # The classification's restart loop: one cycle per departure (a return is the same cycle). Its rebalances
            # hold the looping member's departures (or its predecessor's, whose log is not here) and returns. Under the
            # heartbeat protocols the new process often joins before the coordinator fences the dead one (its session
            # has not expired yet): that return and the removal after it are one cycle too.
            who = r.culprit_name
            cause = by_index.get(r.cause_index) if r.cause_index is not None else None
            if change and change.departures:
                if who in returned:
                    returned.discard(who)
                else:
                    cycles[who] += 1
                    left.setdefault(who, []).append(r)
                    departed.add(who)
            elif (cause is not None and cause.operation == "restart-loop" and cause.culprit_name == who) \
                    or who in departed:
                departed.discard(who)
            else:
                cycles[who] += 1
                left.setdefault(who, []).append(r)
                returned.add(who)
            where.setdefault(who, []).append(r)
            continue
        gone = {d.who for d in change.departures} if change else set()
        for d in change.departures if change else ():
            if d.kind == LOST:
                removed.setdefault(d.who, []).append((r, d.event))
        if r.operation == "crash" and r.culprit_name and not gone:
            gone = {r.culprit_name}           # it started again without leaving
        for who in sorted(gone):     # a set's order changes with the hash seed: ties in the summary would too
            where.setdefault(who, []).append(r)
            cycles[who] += 1
            left.setdefault(who, []).append(r)
    return cycles, left, where, removed


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    cycles, left, where, removed = _departures(group, classification)
    by_index = {r.index: r for r in group.rebalances}
    # Followed (analyze --follow), the departures of rebalances folded out of the window held count too (fold).
    before = group.folded if isinstance(group.folded, Folded) else Folded()
    earlier = before.departures
    cycles = Counter({m: n + earlier.get(m, 0) for m, n in cycles.items()})
    flapping = {m: n for m, n in cycles.items() if n >= t["min_cycles"]}
    # A client node's departures: the rebalances in which one of its members (its threads, or the node itself) left,
    # each once (a thread's death and its client's departure in one rebalance are one departure).
    nodes: dict[str, set] = {}
    for member in cycles:
        node = node_of(member) or member
        if member not in flapping and node not in flapping:
            nodes.setdefault(node, set()).update(r.index for r in left[member])
    flapping_nodes = {n: len(rs) + earlier.get(n, 0) for n, rs in nodes.items()
                      if len(rs) + earlier.get(n, 0) >= t["min_cycles"] and n not in flapping
                      and any(node_of(m) == n for m in cycles)}
    counts = [r.members for r in group.rebalances if r.completed and r.members is not None]
    if not flapping and not flapping_nodes:
        directions = [1 if b > a else -1 for a, b in zip(counts, counts[1:]) if b != a]
        oscillations = sum(1 for a, b in zip(directions, directions[1:]) if a != b)
        if oscillations >= t["min_oscillations"] and not cycles:
            yield Note(ID, group.group, f"not enough evidence: the member count oscillates "
                                        f"({' -> '.join(map(str, counts[:10]))}) but no line names who comes and goes")
        return
    who = sorted(flapping, key=lambda m: (-flapping[m], m)) + sorted(flapping_nodes)
    involved = ({r.index for m in flapping for r in where[m]}
                | {r.index for m, rs in where.items() if (node_of(m) or m) in flapping_nodes for r in rs})
    involved |= {r.index for r in group.rebalances if r.cause_index in involved}
    evidence = [Evidence.of(e) for i in sorted(involved) for e in by_index[i].events
                if e["event"] in _DEPARTURE_LINES and group.who(e) in set(who) | set(flapping)]
    for r, line in removed.get(who[0], ()):
        # A rejoin after UNKNOWN_MEMBER_ID, and the first line of the generation it reached.
        evidence.append(Evidence.of(line))
        arrived = next((e for e in r.events if r.generation is not None and e.get("generation") == r.generation
                        and e is not line), None)
        if arrived is not None:
            evidence.append(Evidence.of(arrived))
    # each member named as the finding names it (its culprit's label: a client.id every process shares, librdkafka's
    # 'rdkafka', is named with the host its process life runs on)
    labels = {m: label_of(classification.members, m) for m in flapping}
    figs = _figures(labels, flapping_nodes, left, t, earlier)
    f = figures.by_name(figs)
    detail = "; ".join(f"{labels[m]} left {f['departures.' + labels[m]].text()} times"
                       for m in sorted(flapping, key=lambda m: -flapping[m]))
    if flapping_nodes:
        detail += ("; " if detail else "") + "; ".join(f"members of client node {names([n])} left "
                                                     f"{f['departures.' + n].text()} times" for n in flapping_nodes)
    operations = Counter(by_index[i].operation for i in involved if by_index[i].operation)
    folded_operations: Counter = Counter()
    for m in flapping:
        folded_operations.update(before.departure_operations.get(m, {}))
    operations += folded_operations
    figs += [_with_folded(figures.rebalances(f"rebalances.{k}", f"rebalances of the departures and returns: {k}",
                                             [by_index[i] for i in sorted(involved) if by_index[i].operation == k]),
                          folded_operations.get(k, 0))
             for k, _ in operations.most_common()]
    f = figures.by_name(figs)
    counts = before.member_counts + counts     # (followed: the folded generations' first)
    count_text = f" Member count across rebalances: {' -> '.join(map(str, counts[:_COUNTS_SHOWN]))}." if counts else ""
    head = who[0]
    culprit = culprit_of(classification.members, head)
    restarts = operations.get("restart-loop", 0) + operations.get("crash", 0)
    lost = removed.get(head, [])
    lost_before = before.removals.get(head, 0)
    remedy = ("Find why the named member leaves: its own log when it left (the last lines before a restart "
              "show a crash), the orchestrator's restart count and events. Static membership "
              "(group.instance.id, session.timeout.ms above a restart) makes quick restarts free.")
    story = ""
    if (len(lost) + lost_before) * 2 > flapping.get(head, 0) and not restarts:
        unknown_id = _with_folded(figures.count("unknown_member_id", f"rejoins of {head} told UNKNOWN_MEMBER_ID",
                                                [line for _, line in lost]), lost_before)
        figs.append(unknown_id)
        story = " " + _removals(head, lost, unknown_id)
        remedy = ("Find why the coordinator removed the member each time (its log names the removal). Check "
                  "session.timeout.ms and the rebalance timeout (max.poll.interval.ms; clients on the JoinGroup v0 "
                  "API, such as brod against old brokers, have only the session timeout) against how long the "
                  "group's rebalances take, and look at the other members of the group: their joins complete the "
                  "generations this member misses.")
    finding = Finding(ID, "warning", group.group,
                      f"membership flapping: {culprit.label if culprit else names(who, 2)} keeps leaving and rejoining",
                      f"{detail}.{count_text} The departures and returns were: "
                      + ", ".join(f"{k} ({f['rebalances.' + k].text()})" for k, _ in operations.most_common()) + "."
                      + story,
                      _first(by_index[min(involved)].start, [before.departed_first.get(m) for m in flapping]),
                      by_index[max(involved)].end, dedupe(evidence), remedy, culprit=culprit)
    if restarts:
        departures = f.get(f"departures.{labels[head]}") if head in labels else None
        finding.cause = (f"{culprit.label if culprit else head} restarts again and again "
                         f"({departures.text() if departures else flapping.get(head, 0)} departures without a timeout "
                         "explaining them)")
    finding.figures = figs
    if operations.get("restart-loop"):
        finding.role = "cause"        # nothing else explains a process that keeps restarting: the loop is the answer
    finding.caused = {"rebalances": sorted(involved), "culprits": sorted(set(who) | set(flapping))}
    yield finding


def _figures(labels: dict, flapping_nodes: dict, left: dict, t: dict, earlier: dict) -> list:
    """How many times each flapping member (``labels``: member -> its label) or Streams client node left: one per
    rebalance it left in (its evidence is each one's first line; followed, with those folded: ``earlier``), and
    the rule's threshold."""
    out = [_with_folded(figures.rebalances(f"departures.{label}", f"times {label} left", left[m]), earlier.get(m, 0))
           for m, label in labels.items()]
    for node in flapping_nodes:
        rs = list({r.index: r for m, found in left.items() if (node_of(m) or m) == node for r in found}.values())
        out.append(_with_folded(figures.rebalances(f"departures.{node}", f"times members of client node {node} left",
                                                   rs), earlier.get(node, 0)))
    out.append(figures.threshold("min_cycles", t["min_cycles"], figures.COUNT,
                                 "departures of one member that make it flapping", ID, "min_cycles"))
    return out


def _with_folded(figure, folded: int):
    """A count with the occurrences folded out of the lines held (``analyze --follow``): counted, not listed."""
    if not folded:
        return figure
    return figure.but(value=figure.value + folded, note=f"{folded} of them followed earlier: their lines are folded")


def _first(start, earlier: list):
    known = [s for s in [start, *earlier] if s is not None]
    return min(known) if known else None


def fold(group: GroupTimeline, rebalances: list, folded: Folded) -> None:
    """Followed (``analyze --follow``, fold.py): count the departures of ``rebalances``, about to be folded out of
    the lines held, into ``folded``, so that a member leaving and rejoining across more than the window held is
    still flapping, with the figures ``analyze`` of the whole log states."""
    going = {r.index for r in rebalances}
    if not going:
        return
    for r in rebalances:
        if len(folded.member_counts) < _COUNTS_SHOWN and r.completed and r.members is not None:
            folded.member_counts.append(r.members)
    _, left, _, removed = _departures(group, of(group))
    by_node: dict[str, set] = {}
    for member, found in left.items():
        mine = [r for r in found if r.index in going]
        if not mine:
            continue
        folded.departures[member] = folded.departures.get(member, 0) + len(mine)
        starts = [r.start for r in mine if r.start is not None]
        if starts and member not in folded.departed_first:
            folded.departed_first[member] = min(starts)
        operations = folded.departure_operations.setdefault(member, {})
        for r in mine:
            if r.operation:
                operations[r.operation] = operations.get(r.operation, 0) + 1
        node = node_of(member)
        if node:
            by_node.setdefault(node, set()).update(r.index for r in mine)
    for node, indexes in by_node.items():
        folded.departures[node] = folded.departures.get(node, 0) + len(indexes)
    for member, lines in removed.items():
        n = sum(1 for r, _ in lines if r.index in going)
        if n:
            folded.removals[member] = folded.removals.get(member, 0) + n


def _removals(who: str, lost: list, unknown_id) -> str:
    """What a member's rejoins told UNKNOWN_MEMBER_ID show: removed each time, and the generations that completed
    without it (a rejoin at a generation more than one above the one it had)."""
    skipped = []
    for r, line in lost:
        had = line.get("generation")
        if had is not None and r.generation is not None and r.generation > had + 1:
            skipped.append(f"{had} -> {r.generation}")
    text = (f"Each time, {names([who])}'s own log says the coordinator no longer knew its member id "
            f"(UNKNOWN_MEMBER_ID, {unknown_id.text()} time(s)): the coordinator had removed it, and no line here says why "
            "(its session timeout, or the rebalance timeout while another member's join completed a generation "
            "without it).")
    if skipped:
        text += (f" Its generation jumped {', '.join(skipped)}: generation(s) in between completed without it.")
    return text
