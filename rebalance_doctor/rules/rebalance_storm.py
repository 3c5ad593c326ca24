"""Rebalances that are not part of an expected operation come too often, or keep the group unstable.

Symptom
-------
The coordinator prepares one rebalance after another, each with a new old generation::

    [2024-03-05 10:00:41,002] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state PreparingRebalance with old generation 12 (__consumer_offsets-8) (reason: Removing member consumer-payments-1-6b1f... on LeaveGroup; client reason: consumer poll timeout has expired.) (kafka.coordinator.group.GroupCoordinator)
    [2024-03-05 10:01:12,420] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state PreparingRebalance with old generation 13 (__consumer_offsets-8) (reason: Adding new member consumer-payments-1-0c2e... with group instance id None; client reason: need to re-join with the given member-id: ...) (kafka.coordinator.group.GroupCoordinator)

and the members keep logging ``Request joining group due to: group is already rebalancing``.

Why it happens
--------------
A storm is a symptom: something keeps changing the membership. Each rebalance stops the
consumption of the partitions being moved (all of them with eager assignors), so a slow member
that times out and rejoins, a crash-looping instance or a flapping network turns into rebalance
after rebalance. Only rebalances that are not part of an expected operation count: a rolling
restart, a scale-out with its cooperative followups or a Streams upgrade with version probing can
be many quick rebalances and still be healthy. When a root cause explains the rebalances (its own
finding), the storm is folded into it (a member exceeding max.poll.interval.ms again and again is
the poll-timeout finding, the storm one of its symptoms); it stands alone only when their cause is
not logged, and then says so: for instance a process outside the collected logs (a batch job
started with the service's ``group.id``) joining and leaving, seen from the members' own logs as
rebalance after rebalance they only followed.

Remediation
-----------
Fix the root cause (its own finding says how). Meanwhile: static membership
(``group.instance.id`` with a ``session.timeout.ms`` longer than a restart) avoids rebalances on
restarts; the cooperative assignor (``partition.assignment.strategy=
org.apache.kafka.clients.consumer.CooperativeStickyAssignor``, the default for Streams) keeps
unaffected partitions consuming; the KIP-848 protocol (``group.protocol=consumer``, Kafka 4.0+)
makes rebalances incremental on the broker. When no cause is logged: collect the logs of every
member and the coordinator for the window.

Scope: every protocol (KIP-848 epochs count as rebalances). Followed (``analyze --follow``), the rebalances
folded out of the window held count as they would in ``analyze`` of the whole log (``COUNTS_FOLDED``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from ..classify import of, words
from ..classify.members import unlogged_assignees, unlogged_culprit
from ..timeline.model import Folded, GroupTimeline, peak_within, unstable_ms
from . import contract, figures
from .finding import Finding, Note
from .helpers import describe_unlogged, escalate, names, seconds, span, trigger_evidence, unlogged_evidence

ID = "rebalance-storm"
SEVERITY = "warning"
ROLE = "symptom"
PROTOCOLS = ("eager", "cooperative", "streams", "connect", "consumer", "streams-group", "share")
# Followed, its counts, peak, window and unstable time add the rebalances folded before the lines held
# (GroupTimeline.folded); fold.py does not add its own counts to them.
COUNTS_FOLDED = True


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [rebalance-storm], typed as thresholds_schema.toml types it."""
    window_minutes: int
    max_per_window: int
    min_rebalances: int
    max_unstable_share: float
    critical_unstable_share: float


def check(group: GroupTimeline, t: Thresholds):
    counted = [r for r in group.rebalances if r.verdict != "expected"]
    before = group.folded if isinstance(group.folded, Folded) else Folded()
    if not counted or len(counted) + before.counted < t["min_rebalances"]:
        return   # (followed, a storm whose rebalances are all folded stays as it was reported: fold.py)
    window = timedelta(minutes=t["window_minutes"])
    timed = [r for r in counted if r.start]
    # The busiest window may begin among the folded rebalances (their starts of one window are kept).
    starts = [s for s in before.recent if s < timed[0].start] if timed else []
    peak, first = peak_within(starts + [r.start for r in timed], window)
    busiest = timed[max(first - len(starts), 0):max(first - len(starts) + peak, 0)]
    peak = max(peak, before.peak)
    first_line = before.first_event
    window_ms = group.window_ms
    if first_line is not None and group.start is not None and first_line["ts"] < group.start:
        window_ms += int((group.start - first_line["ts"]).total_seconds() * 1000)
    unstable = unstable_ms(counted) + before.unstable_ms
    share = unstable / window_ms if window_ms > 0 else 0.0
    by_rate = peak > t["max_per_window"]
    by_share = share > t["max_unstable_share"] and window_ms >= 60_000
    if not (by_rate or by_share):
        return
    if window_ms < 60_000 and not by_rate:
        yield Note(ID, group.group, "window under a minute: too short to call a storm")
        return
    figs = _figures(group, counted, busiest, t, before, peak)
    f = figures.by_name(figs)
    operations = Counter(r.operation or "unknown" for r in counted) + Counter(before.operations)
    named = [(k, n) for k, n in operations.most_common() if k not in ("unknown", "failed-attempt")]
    unknown = operations.get("unknown", 0)
    parts = [f"{f['rebalances.' + k].text()} by {words(k)}" for k, n in named]
    outsiders: dict[str, list[str]] = {}
    if unknown:
        starters = sorted({r.trigger_member for r in counted if r.operation == "unknown" and r.trigger_member}
                          | before.starters)
        parts.append(f"{f['rebalances.unknown'].text()} with no logged cause (only 'group is already rebalancing' "
                     "symptoms" + (f"; the coordinator names {names(starters)} as rejoining first" if starters else "")
                     + ")")
        classification = of(group)
        outsiders = unlogged_assignees(group, [r for r in group.rebalances if r.start and r.start >= counted[0].start],
                                       classification.members)
    if operations.get("failed-attempt"):
        parts.append(f"{f['rebalances.failed-attempt'].text()} attempts that did not complete")
    rate = f", {f['rate_per_hour'].text()}/h" if f["rate_per_hour"].known else ""
    start, end = span(counted)
    if before.first_start is not None:
        start = before.first_start
    severity = escalate(share, t["critical_unstable_share"], also=peak > 2 * t["max_per_window"])
    culprits = Counter(before.culprits) + Counter(r.culprit_name for r in counted if r.culprit_name)
    top = culprits.most_common(1)[0][0] if culprits else None
    culprit = before.culprit_of.get(top) or next((r.culprit for r in counted if r.culprit_name == top), None)
    if culprit is None and outsiders:
        culprit = unlogged_culprit(outsiders, classification.members)
    unexplained = unknown and unknown >= f["rebalances"].value - unknown
    outsider_evidence = unlogged_evidence(counted, outsiders)
    unlogged = figures.unlogged(outsiders, outsider_evidence)
    figs += unlogged
    n, window_text, share_text = f["rebalances"].text(), f["window_ms"].text(), f["unstable_share"].text()
    finding = Finding(
        rule=ID, severity=severity, group=group.group,
        title=f"rebalance storm: {n} rebalances in {window_text}, unstable {share_text} of the time",
        summary=(f"{n} rebalances that are not part of an expected operation"
                 + (f" (and {f['rebalances_expected'].text()} that are)" if "rebalances_expected" in f else "")
                 + f" between {start:%H:%M:%S} and {end:%H:%M:%S}{rate}; peak {f['peak'].text()} within "
                   f"{f['threshold.window_minutes'].text()} min (threshold {f['threshold.max_per_window'].text()}); no stable generation "
                   f"for {f['unstable_ms'].text()} of {window_text} ({share_text}, threshold "
                   f"{f['threshold.max_unstable_share'].text()}). What started them: " + "; ".join(parts) + "."
                 + (" The leaders' assignments name member ids that no collected log names as its own: "
                    + describe_unlogged(unlogged)
                    + ": processes of this group.id whose logs are not in the input joined and left."
                    if outsiders else "")
                 + (" Their cause is not logged: the members' and the coordinator's logs of the window say why."
                    if unexplained else "")),
        start=start, end=end, evidence=trigger_evidence(counted, 6) + outsider_evidence,
        remediation=(("Their cause is not in these logs: collect the coordinator's log of the window (its "
                      "'Preparing to rebalance group ... (reason: ...)' lines say who joined or left and why) and the "
                      "logs of every process using this group.id"
                      + (f" (the {names(list(outsiders))} process(es) first)" if outsiders else "") + ". "
                      if unexplained else "Fix the root cause above; the storm ends with it. ")
                     + "Reduce the cost of each rebalance: "
                     "static membership (group.instance.id, session.timeout.ms above a restart), "
                     "partition.assignment.strategy=CooperativeStickyAssignor, or group.protocol=consumer "
                     "(KIP-848) on Kafka 4.0+."), culprit=culprit)
    finding.figures = figs
    finding.caused = {"rebalances": [r.index for r in counted], "culprits": sorted(culprits)}
    yield finding


def _figures(group: GroupTimeline, counted: list, busiest: list, t: dict, before: Folded, peak: int) -> list:
    """The rebalances counted (and by what started them), the peak in one window, the time without a stable
    generation and its share of the logs' window, and the rule's thresholds they are compared with. Followed,
    with what was folded (``before``): its rebalances are counted, their lines no longer listed."""
    out = [_counted("rebalances", "rebalances not part of an expected operation", counted, before.counted)]
    expected = [r for r in group.rebalances if r.verdict == "expected"]
    if expected or before.expected:
        out.append(_counted("rebalances_expected", "rebalances part of an expected operation", expected,
                            before.expected))
    by_operation: dict[str, list] = {k: [] for k in before.operations}
    for r in counted:
        by_operation.setdefault(r.operation or "unknown", []).append(r)
    out += [_counted(f"rebalances.{k}", f"rebalances started by {words(k)}", rs, before.operations.get(k, 0))
            for k, rs in by_operation.items()]
    most = figures.rebalances("peak", f"most rebalances within {t['window_minutes']} min", busiest)
    if peak != most.value:
        most = most.but(value=peak, evidence=(), note="in a window followed earlier: its lines are folded")
    out.append(most)
    dated = [e for e in group.events if e.get("ts") is not None]
    first = before.first_event if before.first_event is not None else (dated[0] if dated else None)
    window = figures.duration("window_ms", "time the logs cover for the group", first,
                              dated[-1] if dated else None, note="no line with a time")
    lost = figures.unstable("unstable_ms", "time without a stable generation", counted)
    if before.unstable_ms and lost.known:
        lost = lost.but(value=lost.value + before.unstable_ms,
                        note="with that of the rebalances folded, whose lines are not listed")
    share = figures.derived("unstable_share", lost.value / window.value if lost.known and window.value else None,
                            figures.RATIO, "share of the window without a stable generation",
                            lost.evidence[:1] + window.evidence, "time without a stable generation / time the logs cover")
    hours = window.value / 3_600_000 if window.value else 0
    total = len(counted) + before.counted
    rate = figures.derived("rate_per_hour", round(total / hours) if hours >= 0.05 else None, figures.COUNT,
                           "rebalances per hour", [], "rebalances / hours the logs cover",
                           note="the logs cover under 3 minutes: no hourly rate")
    out += [window, lost, share, rate,
            figures.threshold("max_per_window", t["max_per_window"], figures.COUNT,
                              f"most rebalances allowed within {t['window_minutes']} min", ID, "max_per_window"),
            figures.threshold("window_minutes", t["window_minutes"], figures.MIN, "the sliding window rebalances are counted in",
                              ID, "window_minutes"),
            figures.threshold("max_unstable_share", t["max_unstable_share"], figures.RATIO,
                              "largest share of the window allowed without a stable generation", ID,
                              "max_unstable_share")]
    return out


def _counted(name: str, label: str, held: list, folded: int) -> figures.Figure:
    """A count of rebalances: those held (their first lines its evidence) and those folded (``analyze --follow``)."""
    figure = figures.rebalances(name, label, held)
    if folded:
        figure = figure.but(value=figure.value + folded, note=f"{folded} of them followed earlier: their lines are folded")
    return figure
