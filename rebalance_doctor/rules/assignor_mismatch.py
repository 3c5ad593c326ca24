"""Members of one group configured with assignors that do not fit together: refused, or the whole group kept eager.

Symptom
-------
A member whose ``partition.assignment.strategy`` shares no assignor with the group is refused at
every JoinGroup::

    [2024-03-05 09:00:52,064] ERROR [Consumer clientId=consumer-orders-1, groupId=orders] JoinGroup failed due to fatal error: The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list. (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)
    org.apache.kafka.common.errors.InconsistentGroupProtocolException: The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.

Or the members list ``CooperativeStickyAssignor`` first, one member lists only ``RangeAssignor``
(its ``ConsumerConfig values:`` dump: ``partition.assignment.strategy = [class
org.apache.kafka.clients.consumer.RangeAssignor]``), and the group keeps selecting the eager
protocol::

    [2024-03-05 09:01:10,220] INFO [Consumer clientId=consumer-orders-1, groupId=orders] Successfully joined group with generation Generation{generationId=14, memberId='consumer-orders-1-6f1c...', protocol='range'} (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)
    [2024-03-05 09:01:09,871] INFO [Consumer clientId=consumer-orders-1, groupId=orders] Revoke previously assigned partitions orders-0, orders-3 (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)

Why it happens
--------------
The coordinator selects the assignor of a classic group among those *every* member lists (each
member votes for the first of them in its own list). A member that lists none of the group's
assignors is refused (INCONSISTENT_GROUP_PROTOCOL): it never joins. A member that lacks
``cooperative-sticky`` while the others list it first makes the group select an eager assignor
they all share: every rebalance stops every member and revokes all their partitions (the story of
one new consumer stopping all the others). During the two-bounce upgrade from an eager assignor to
``cooperative-sticky`` the first bounce is meant to look like that, so members still running the
old list are not a finding while the rollout goes on; a member that (re)starts with the old list
after others already prefer ``cooperative-sticky`` is.

Members that differ in their timeouts (session, heartbeat, poll interval) are the config lint's
(config-heartbeat-ratio): this rule reads the assignors only.

Severity: ``warning`` when a member was refused, or when the window shows eager rebalances
revoking the partitions of members configured for cooperative-sticky after the odd member joined;
``info`` otherwise.

Remediation
-----------
Give every member the same ``partition.assignment.strategy``. To move to cooperative rebalancing,
follow the two-bounce upgrade: first every member with
``[CooperativeStickyAssignor, RangeAssignor]`` (cooperative first), then a second rolling restart
with ``[CooperativeStickyAssignor]`` only; with Kafka 4.0+ clients and brokers,
``group.protocol=consumer`` (KIP-848) removes client-side assignors altogether.

Scope: classic consumer groups (eager and cooperative). Streams and Connect choose their own
assignors; KIP-848 groups use the broker's ``group.consumer.assignors``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..classify.protocol import assignor_names, assignor_protocol
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, escalate, names
from ..core import eventnames as EV

ID = "assignor-mismatch"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("eager", "cooperative")
# A classic member refused by a consumer group whose migration the brokers forbid is answered the same
# INCONSISTENT_GROUP_PROTOCOL: the coordinator's refusal line makes it protocol-migration-refused's.
YIELDS_TO = ("protocol-migration-refused",)

# What a refused JoinGroup says (the error code, its message, the exception).
_INCONSISTENT = ("INCONSISTENT_GROUP_PROTOCOL", "InconsistentGroupProtocol",
                 "supported protocols are incompatible with those of existing members")
COOPERATIVE = "cooperative-sticky"


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """None: the rule reads protocol semantics only (thresholds.toml [assignor-mismatch] is empty)."""


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    if classification.protocol not in PROTOCOLS + ("unknown",):
        return
    lists = {}                                       # member identity -> (member, assignor names)
    for m in classification.members:
        found = assignor_names(m.assignors)
        if found:
            lists[m.identity] = (m, found)
    refused: dict[str, list[dict]] = {}
    for e in group.of(EV.JOIN_FAILED):
        text = (e.get("error") or "") + " " + (e.get("reason") or "")
        if any(w in text for w in _INCONSISTENT):
            refused.setdefault(group.who(e) or e.get("client") or "?", []).append(e)
    if refused:
        yield _refused(group, classification, lists, refused)
        return
    finding = _kept_eager(group, classification, lists, t)
    if finding is not None:
        yield finding


def _refused(group, classification, lists, refused) -> Finding:
    order = sorted(refused, key=lambda w: (-len(refused[w]), w))
    culprit = culprit_of(classification.members, order[0])
    parts, evidence, figs = [], [], []
    others = {name: found for name, (_, found) in lists.items() if name not in refused}
    for who in order:
        m = classification.members.get(who)
        label = m.culprit().label if m else who
        own = lists.get(who, (None, None))[1]
        figs.append(figures.count(f"refused.{who}", f"JoinGroups of {label} refused with INCONSISTENT_GROUP_PROTOCOL",
                                  refused[who]))
        parts.append(f"{label}" + (f" lists [{', '.join(own)}]" if own else "")
                     + f": {figs[-1].text()} JoinGroup(s) refused with INCONSISTENT_GROUP_PROTOCOL, it never joined.")
        evidence += [Evidence.of(e) for e in refused[who][:2]]
        if m and m.config_event:
            evidence.append(Evidence.of(m.config_event))
    if others:
        by_list: dict[tuple, list[str]] = {}
        for name, found in others.items():
            by_list.setdefault(tuple(found), []).append(lists[name][0].culprit().label)
        parts.append("The group's members list " + "; ".join(
            f"[{', '.join(k)}] ({names(v, 3)})" for k, v in by_list.items()) + ": no assignor in common.")
    refused_ids = {id(e) for v in refused.values() for e in v}
    rebalances = sorted({r.index for r in group.rebalances if any(id(e) in refused_ids for e in r.events)})
    start, end = window(evidence)
    label = culprit.label if culprit else order[0]
    finding = Finding(ID, "warning", group.group, f"{label} refused by the group: its assignors fit none of the members'",
                      " ".join(parts), start, end, dedupe(evidence),
                      "Give every member of the group the same partition.assignment.strategy (or at least one "
                      "assignor in common, listed by all); check how the refused member's configuration is built.",
                      culprit=culprit)
    finding.figures = figs
    finding.cause = f"{label}'s partition.assignment.strategy shares no assignor with the group"
    # The refused attempts the timeline read as rebalances are this cause's (the coordinator started none).
    finding.caused = {"rebalances": rebalances, "culprits": order}
    return finding


def _kept_eager(group, classification, lists, t) -> Finding | None:
    preferring = {n: m for n, (m, found) in lists.items() if found[0] == COOPERATIVE}
    lacking = {n: (m, found) for n, (m, found) in lists.items() if COOPERATIVE not in found}
    if not preferring or not lacking:
        return None
    selected = [e for e in group.of(EV.JOIN_SUCCESS, EV.SYNC_SUCCESS) if e.get("protocol")]
    if selected and not any(assignor_protocol(e["protocol"].strip().lower()) == "eager" for e in selected):
        return None                                  # the group did select cooperative-sticky
    # Since when the group was meant to be cooperative: a member configured with cooperative-sticky first,
    # or the coordinator selecting it. Members still on the old list that started before that are an
    # upgrade's first bounce in progress, not a mismatch.
    began = min([_since(m) for m in preferring.values() if _since(m) is not None]
                + [e["ts"] for e in selected if e.get("ts") and assignor_protocol(e["protocol"].strip().lower())
                   == "cooperative"], default=None)
    late = {n: v for n, v in lacking.items() if began is not None and _since(v[0]) is not None
            and _since(v[0]) > began}
    if not late and all(_switched(m) for m in preferring.values()):
        return None          # every member now preferring cooperative-sticky ran the old list before: an upgrade
    # Without that order (the window begins after the members started), the logs cannot tell a member
    # left behind from the next one an upgrade will restart: a remark, never a warning.
    pool = late or lacking
    order = sorted(pool, key=lambda n: _since(pool[n][0]) or group.start, reverse=True)
    odd, odd_list = pool[order[0]]
    joined = _since(odd) or group.start
    harmed = [r for r in group.rebalances if late and r.start and r.start >= joined and r.protocol == "eager"
              and any(e["event"] == EV.PARTITIONS_REVOKED and group.who(e) in preferring for e in r.events)]
    evidence = [Evidence.of(odd.config_event)] if odd.config_event else []
    evidence += [Evidence.of(e) for e in selected if e.get("ts") and e["ts"] >= joined
                 and assignor_protocol(e["protocol"].strip().lower()) == "eager"][:2]
    evidence += [Evidence.of(e) for r in harmed[:3] for e in r.events
                 if e["event"] == EV.PARTITIONS_REVOKED and group.who(e) in preferring][:3]
    chosen = sorted({e["protocol"] for e in selected if e.get("ts") and e["ts"] >= joined}) or [
        next((a for a in odd_list if assignor_protocol(a) == "eager"), odd_list[0])]
    label = odd.culprit().label
    figs = [figures.count("preferring", f"members listing {COOPERATIVE} first (each its configuration dump)",
                          [m.config_event for m in preferring.values() if m.config_event])
            if all(m.config_event for m in preferring.values()) else
            figures.derived("preferring", len(preferring), figures.COUNT, f"members listing {COOPERATIVE} first", [],
                            "members whose assignor list puts it first"),
            figures.rebalances("stop_the_world", f"rebalances since {label} joined that made them revoke everything",
                               harmed)]
    summary = (f"{figs[0].text()} member(s) list {COOPERATIVE} first ({names([m.culprit().label for m in preferring.values()], 3)})"
               f", but {label} lists only [{', '.join(odd_list)}]: the coordinator can only select an assignor every "
               f"member lists, so the group runs {', '.join(chosen)} (eager).")
    if not late:
        summary += (f" Nothing in the window shows whether {label} started before or after the others were "
                    "configured for cooperative-sticky: if a two-bounce upgrade is under way, restarting it with the "
                    "new list completes the first bounce.")
    if harmed:
        summary += (f" Since {label} joined, {figs[1].text()} rebalance(s) made the members configured for "
                    f"{COOPERATIVE} revoke all their partitions (stop-the-world).")
    start, end = window(evidence)
    finding = Finding(ID, escalate(base="info", also=bool(harmed)), group.group,
                      f"{label} keeps the group on the eager protocol: it lacks {COOPERATIVE}", summary, start, end,
                      dedupe(evidence),
                      f"Configure {label} like the others (partition.assignment.strategy with CooperativeStickyAssignor "
                      "first); to leave eager rebalancing for good, finish the two-bounce upgrade "
                      "([CooperativeStickyAssignor, RangeAssignor], then [CooperativeStickyAssignor]), or use "
                      "group.protocol=consumer with Kafka 4.0+.", culprit=odd.culprit())
    finding.figures = figs
    finding.role = "cause" if harmed else "advisory"      # no harm in the window: a remark after the answer
    finding.cause = f"{label} lacks {COOPERATIVE}: the group stays eager"
    finding.caused = {"rebalances": [r.index for r in harmed], "culprits": [odd.identity]}
    return finding


def _switched(member) -> bool:
    """Its own dumps show it running another assignor list before the one it has now (a restart of the upgrade)."""
    current = member.config.get("partition.assignment.strategy")
    return any((e.get("attrs") or {}).get("partition.assignment.strategy") not in (None, current)
               for e in member.config_events)


def _since(member):
    """Since when the member has run with the assignors it has now (its dumps)."""
    return member.configured_since("partition.assignment.strategy")
