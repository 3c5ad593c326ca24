"""Partitions far from evenly spread: idle members while others hold several, or one member holding more than twice another.

Symptom
-------
After the last rebalance, each member's own line (or the leader's ``Finished assignment for group
at generation N: {...}``) shows what it holds, and some hold nothing while others hold several::

    [2024-03-05 09:00:13,342] INFO [Consumer clientId=consumer-payments-1, groupId=payments] Updating assignment with
    	Assigned partitions:                       []
    	Current owned partitions:                  []
    	Added partitions (assigned - owned):       []
    	Revoked partitions (owned - assigned):     []
     (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)

Why it happens
--------------
A partition is consumed by one member of the group: with more members than partitions the extra
members stay idle (standbys that only cost a rebalance when they come and go). The built-in
assignors balance per topic: RangeAssignor gives the first members of the sorted member ids one
extra partition of every topic (with several topics the extras pile up on the same members), and it
sorts by member id, whose client.id prefix is numbered per process, not per group (seed 003: a new
consumer on a server moved the other groups' partitions away from it). Sticky assignors keep what
members owned, so an imbalance can persist after members come and go. The finding names the
members, what each holds, and the topic's partition count.

An advisory (``info``): it never comes first and never makes a healthy group warn.

Remediation
-----------
Run at most as many members as the topic has partitions (or add partitions); for several topics use
``partition.assignment.strategy`` RoundRobinAssignor or CooperativeStickyAssignor (balanced across
topics) instead of RangeAssignor; set explicit, stable ``client.id`` values so the member-id order
does not depend on the order consumers were created in.

Scope: classic consumer groups (eager and cooperative), from the members' own assignment lines or
the leader's. Streams tasks and KIP-848 assignments are not read yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..classify.assignment import holdings
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, label_of, names

ID = "assignment-skew"
SEVERITY = "info"
ROLE = "advisory"
PROTOCOLS = ("eager", "cooperative")


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [assignment-skew], typed as thresholds_schema.toml types it."""
    min_members: int
    min_spread: int
    max_ratio: float


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    if classification.protocol not in PROTOCOLS:
        return
    held = holdings(group, classification.members)
    if len(held.partitions) < t["min_members"]:
        return
    counts = {who: len(p) for who, p in held.partitions.items()}
    low, high = min(counts.values()), max(counts.values())
    idle = sorted(w for w, n in counts.items() if n == 0)
    busy = sorted((w for w, n in counts.items() if n >= 2), key=lambda w: -counts[w])
    label = {w: label_of(classification.members, w) for w in counts}
    # Its numbers: the partitions each named member holds (the line that gives its assignment), the members idle, the
    # members and partitions the lines show.
    shown = [w for w in dict.fromkeys(idle + busy + [max(counts, key=counts.get), min(counts, key=counts.get)])]
    figs = [figures.derived(f"partitions.{w}", counts[w], figures.COUNT, f"partitions {label[w]} holds",
                            [held.evidence.get(w)], "the partitions its assignment line lists",
                            note="no line gives its assignment") for w in shown]
    figs += [figures.derived("idle", len(idle), figures.COUNT, "members holding nothing",
                             [held.evidence.get(w) for w in idle], "members whose assignment line lists no partition"),
             figures.derived("members", len(counts), figures.COUNT, "members whose assignment the lines show",
                             [held.evidence.get(w) for w in sorted(counts)], "one assignment line each"),
             figures.derived("partitions", held.total, figures.COUNT, f"partitions assigned after generation "
                             f"{held.generation}", [held.evidence.get(w) for w in sorted(counts)],
                             "the partitions the assignment lines list")]
    f = figures.by_name(figs)
    if idle and busy:
        what = (f"{f['idle'].text()} member(s) hold nothing ({names([label[w] for w in idle])}) while "
                f"{names([f'{label[w]} holds ' + f['partitions.' + w].text() for w in busy])}")
    elif high - low >= t["min_spread"] and high > t["max_ratio"] * max(low, 1) and low > 0:
        top = max(counts, key=counts.get)
        bottom = min(counts, key=counts.get)
        what = (f"{label[top]} holds {f['partitions.' + top].text()} partitions, {label[bottom]} only "
                f"{f['partitions.' + bottom].text()}")
    elif idle and held.total:     # more members than partitions: the others hold one each, the rest wait
        what = (f"{f['idle'].text()} of {f['members'].text()} members hold nothing ({names([label[w] for w in idle])}): "
                f"the group has {f['partitions'].text()} partition(s) for {f['members'].text()} members")
    else:
        return
    evidence = [Evidence.of(held.evidence[w]) for w in (idle + busy + sorted(counts))[:6] if w in held.evidence]
    start, end = window(evidence)
    summary = (f"After generation {held.generation}: {what} ({f['partitions'].text()} partition(s) for "
               f"{f['members'].text()} member(s) "
               "whose assignment the lines show).")
    culprit_name = (busy or sorted(counts, key=lambda w: -counts[w]))[0]
    finding = Finding(ID, "info", group.group, f"assignment skew: {what}", summary, start, end, dedupe(evidence),
                      "Run at most as many members as partitions (or add partitions); with several topics prefer "
                      "RoundRobinAssignor or CooperativeStickyAssignor over RangeAssignor; give consumers explicit, "
                      "stable client.id values.", culprit=culprit_of(classification.members, culprit_name, fallback=False))
    finding.figures = figs
    finding.caused = {"culprits": []}
    yield finding
