"""The numbers a finding states, each measured once from the log lines that give it (a Figure).

A rule builds its figures first and writes its prose from them; the finding carries them
(``Finding.figures``, the JSON's ``figures``) and every format renders them from that data, so the
summary, the remediation and the figures table can never disagree. Four kinds:

- a count: how many of the named lines (removals, poll timeouts, forced rebalances); its evidence is them;
- a duration: the time between two named lines (a silence in a member's own log, a time away);
- a setting in force: the value a configuration dump states (its evidence is the dump's line);
- an advised value: a stated formula applied to the figures it names, never below the value in force;
  when following it would not help (the value in force already covers what was seen), it says so
  and advises nothing;
- a threshold of the rule itself (``threshold.*``): no log line gives it, its formula names the key of
  thresholds.toml (or --config) it comes from.

Counts of rebalances (``rebalances``) name each rebalance's first line (its trigger's when logged); the time
without a stable generation (``unstable``) names the first and last line of each rebalance it adds up.

A figure the logs do not give has the value None and says so ("not in the logs"): never 0.

A Figure is the rules' one measurement object: frozen, so a number measured once cannot drift between the
summary, the remediation and the JSON. A rule that needs a variant (a count with the folded lines added) makes a
new one (``Figure.but``), and renders its prose from the figures it keeps (``by_name``, ``Figure.text``).
"""

from __future__ import annotations

import math
from datetime import timedelta
from dataclasses import dataclass, field, replace

from ..timeline.model import Evidence, unstable_ms
from .helpers import seconds
from ..core import eventnames as EV

COUNT, MS, RECORDS, RATIO = "count", "ms", "records", "ratio"
MIN, OFFSET = "min", "offset"             # a rule's window in minutes; a position in a topic as a line states it
BYTES = "bytes"
UNITS = (COUNT, MS, RECORDS, RATIO, MIN, OFFSET, BYTES)    # docs/schema/analyze.json enumerates them


@dataclass(frozen=True, slots=True)
class Figure:
    """One measurement: name, value, unit and the lines that give it (file:line, ``refs``)."""

    name: str                          # stable key: "removals", "longest_silence_ms", "session.timeout.ms", ...
    value: int | float | None          # None: the evidence does not give it
    unit: str                          # one of UNITS
    label: str = ""                    # what it is, in words
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)
    formula: str = ""                  # advised values: how it follows from the other figures
    note: str = ""                     # why it is None, or why the advice would not help

    def __post_init__(self):
        # a tuple: the lines a figure names are part of its value
        object.__setattr__(self, "evidence", tuple(self.evidence))

    @property
    def known(self) -> bool:
        return self.value is not None

    @property
    def refs(self) -> tuple[str, ...]:
        """Its evidence as file:line, in order, each once."""
        return tuple(dict.fromkeys(e.ref() for e in self.evidence))

    def but(self, **changes) -> "Figure":
        """This figure with some fields changed (a count with what was folded added, a setting in another unit)."""
        return replace(self, **changes)

    def text(self) -> str:
        """The value as prose shows it: '2', '16.8s', '10000 ms', or 'not in the logs'."""
        if self.value is None:
            return "none advised" if self.name.startswith("advised.") else "not in the logs"
        if self.unit == RATIO:
            return f"{self.value:.0%}"
        if self.unit == MS:
            # a duration (..._ms, also as one member's: time_away_ms.<label>) in seconds, a setting (session.timeout.ms)
            # as configured
            return seconds(self.value) if any(p.endswith("_ms") for p in self.name.split(".")) else f"{int(self.value)} ms"
        if self.unit == BYTES:
            return f"{int(self.value)} bytes"
        return f"{int(self.value)}" if float(self.value).is_integer() else f"{self.value:.1f}"

    def to_dict(self) -> dict:
        out = {"name": self.name, "value": self.value, "unit": self.unit, "label": self.label,
               "evidence": [e.ref() for e in self.evidence]}
        if self.formula:
            out["formula"] = self.formula
        if self.note:
            out["note"] = self.note
        return out

    def line(self) -> str:
        """One line for the figures list of every format: label, value, formula or note, evidence."""
        text = f"{self.label or self.name}: {self.text()}"
        if self.formula and self.known:
            text += f" ({self.formula})"
        if self.note:
            text += f" ({self.note})"
        if self.evidence:
            text += " [" + ", ".join(refs(self.evidence)) + "]"
        return text


def brief(figures: list[Figure]) -> str:
    """The known figures in one line, for the answer (the full list, with notes and evidence, is under the finding)."""
    return "; ".join(f"{f.label or f.name}: {f.text()}" for f in figures if f.known)


def refs(evidence: list[Evidence], limit: int = 6) -> list[str]:
    out = list(dict.fromkeys(e.ref() for e in evidence))
    return out[:limit] + ([f"{len(out) - limit} more"] if len(out) > limit else [])


def count(name: str, label: str, events: list[dict]) -> Figure:
    """How many of these lines (each one occurrence: the caller dedupes what is one occurrence)."""
    return Figure(name, len(events), COUNT, label, [Evidence.of(e) for e in events])


def rebalances(name: str, label: str, found: list) -> Figure:
    """How many of these rebalances; the evidence of each is its first line (its trigger's when logged)."""
    evidence = [r.trigger_evidence or (Evidence.of(r.events[0]) if r.events else None) for r in found]
    return Figure(name, len(found), COUNT, label, [e for e in evidence if e is not None])


def unstable(name: str, label: str, found: list) -> Figure:
    """The time these rebalances kept the group without a stable generation (their spans, overlaps merged)."""
    timed = [r for r in found if r.start and r.end]
    if not timed:
        return Figure(name, None, MS, label, note="no rebalance with a first and a last line")
    ends = [e for r in timed if r.events for e in ((r.events[0], r.events[-1]) if len(r.events) > 1 else r.events[:1])]
    return Figure(name, unstable_ms(timed), MS, label, [Evidence.of(e) for e in ends],
                  formula="the rebalances' spans (first to last line), overlaps merged")


def threshold(name: str, value: int | float, unit: str, label: str, rule: str, key: str) -> Figure:
    """A threshold of the rule itself: no line gives it; its formula says where it is set."""
    return Figure(f"threshold.{name}", value, unit, label, formula=f"threshold [{rule}] {key}, thresholds.toml or --config")


def derived(name: str, value: int | float | None, unit: str, label: str, evidence: list, formula: str,
            note: str = "") -> Figure:
    """A figure computed from others (a rate, a share, a span): its formula says how; None says the logs do not
    give what it is computed from."""
    ev = list({(e.source, e.line): e for e in (x if isinstance(x, Evidence) else Evidence.of(x)
                                                for x in evidence if x is not None)}.values())
    if value is None:
        return Figure(name, None, unit, label, ev, note=note or "the logs do not give what it is computed from")
    return Figure(name, value, unit, label, ev, formula=formula)


def duration(name: str, label: str, start: dict | None, end: dict | None, note: str = "") -> Figure:
    """The time from line `start` to line `end` (None when either is missing or has no time)."""
    if start is None or end is None or start.get("ts") is None or end.get("ts") is None:
        return Figure(name, None, MS, label, [Evidence.of(e) for e in (start, end) if e is not None],
                      note=note or "no line on one side of it")
    ms = round((end["ts"] - start["ts"]).total_seconds() * 1000)
    return Figure(name, ms, MS, label, [Evidence.of(start), Evidence.of(end)])


def longest(name: str, label: str, figures: list[Figure], note: str = "") -> Figure:
    """The longest of these durations (with its evidence), or a figure that says none is known."""
    known = [f for f in figures if f.known]
    if not known:
        return Figure(name, None, MS, label, note=note or "no measurement in the logs")
    best = max(known, key=lambda f: f.value)
    return Figure(name, best.value, MS, label, list(best.evidence))


def setting(member, name: str, label: str = "", note: str = "") -> Figure:
    """A setting in force as the member's configuration dump states it."""
    value = member.setting(name) if member is not None else None
    event = member.config_event if member is not None else None
    if value is None:
        return Figure(name, None, MS, label or f"{name} in force",
                      note=note or "no configuration dump of this member states it")
    return Figure(name, value, MS, label or f"{name} in force", [Evidence.of(event)] if event else [])


def stated(name: str, value: int | float | None, unit: str, label: str, event: dict | None, note: str = "") -> Figure:
    """A value one line states itself (a timeout in a client's own line, an offset)."""
    return Figure(name, value, unit, label, [Evidence.of(event)] if event is not None else [],
                  note="" if value is not None else (note or "not stated by the logs"))


def raise_above(name: str, basis: Figure, headroom: float, in_force: Figure | None, what: str) -> Figure:
    """Advice: `name` at `headroom` times `basis` (the longest `what` seen), rounded up to a whole second.
    Never below the value in force; when the value in force already covers `basis`, raising it would not help
    (the cause is elsewhere): the figure says so and advises nothing."""
    label = f"advised {name}"
    if not basis.known:
        return Figure(f"advised.{name}", None, MS, label, note=f"the logs do not measure {what}")
    formula = f"{headroom:g} x the {what} ({basis.text()}), rounded up to a whole second"
    if in_force is not None and in_force.known and in_force.value >= basis.value:
        return Figure(f"advised.{name}", None, MS, label,
                      note=f"{name}={int(in_force.value)} in force already exceeds the {what} ({basis.text()}): "
                           "raising it would not help")
    value = int(math.ceil(basis.value * headroom / 1000) * 1000)
    if in_force is not None and in_force.known and value <= in_force.value:
        value = int(in_force.value) + 1000
        formula += f", at least the value in force + 1 s"
    return Figure(f"advised.{name}", value, MS, label, list(basis.evidence), formula=formula)


def lower_below(name: str, value: int | None, in_force: Figure, formula: str) -> Figure:
    """Advice to lower a setting: the computed value, never at or above the value in force."""
    label = f"advised {name}"
    if value is None or not in_force.known:
        return Figure(f"advised.{name}", None, RECORDS if "records" in name else MS, label,
                      note="the logs do not give what it is computed from")
    value = max(1, min(int(value), int(in_force.value) - 1))
    return Figure(f"advised.{name}", value, RECORDS if "records" in name else MS, label, list(in_force.evidence),
                  formula=formula)


def own_lines_around(group, name: str, at, own: dict | None = None) -> tuple[dict | None, dict | None]:
    """The member's last own line before `at` and its first after it (the lines bounding its silence). When `own`
    is the member's own line (it noticed, when it woke, that its session was gone), that line ends the silence
    and the last own line before it starts it."""
    before = None
    if at is None:
        return None, None
    for e in group.events:
        if e.get("component") == "broker" or group.who(e) != name or e.get("ts") is None:
            continue
        if own is not None:
            if e is own:
                return before, own
            if e["ts"] < at:
                before = e
        elif e["ts"] <= at:
            before = e
        else:
            return before, e
    return before, None


def reports_removal(group, who: str, line: dict, removal: dict) -> bool:
    """A member's own session-timeout line reports a coordinator's removal of it when the removal fell inside the
    silence the line ends (or, when the line states how long it had no answer, within that time): the member
    noticing, when it woke, the loss the coordinator logged. One loss, counted once."""
    if line["event"] != EV.SESSION_TIMEOUT or removal is line or line.get("component") == "broker" \
            or removal.get("component") != "broker":
        return False
    at, ts = removal.get("ts"), line.get("ts")
    if at is None or ts is None:
        return False
    if line.get("delay_ms") is not None:
        return ts - timedelta(milliseconds=int(line["delay_ms"])) <= at <= ts
    before, _ = own_lines_around(group, who, ts, own=line)    # None: its log has no line before: silent since
    return (before is None or before["ts"] <= at) and at <= ts


def distinct_losses(group, pairs: list) -> list:
    """(rebalance, departure) pairs of session losses, without the member's own lines that report a removal the
    coordinator logged (reports_removal): each loss once."""
    removals = [d for _, d in pairs if d.event.get("component") == "broker"]
    kept = [(r, d) for r, d in pairs if not any(reports_removal(group, d.who, d.event, x.event)
                                                 for x in removals if x.who == d.who)]
    return one_per_membership(group, kept)


_BACK_IN = (EV.JOIN_SUCCESS, EV.SYNC_SUCCESS, EV.PARTITIONS_ASSIGNED, EV.ASSIGNMENT_RECEIVED)


def one_per_membership(group, pairs: list) -> list:
    """A member's own lines about one loss, once: several of its lines saying it is no longer in the group (sarama
    logs one per partition consumer and retry: "kafka: error while consuming orders/2: ... member is not known")
    with no line of it back in the group (joined, assigned) between them are one loss, the first line its evidence."""
    own = [(r, d) for r, d in pairs if d.event.get("component") != "broker" and d.event.get("ts") is not None]
    if len(own) < 2:
        return pairs
    back: dict[str, list] = {}
    for e in group.events:
        if e["event"] in _BACK_IN and e.get("component") != "broker":
            back.setdefault(group.who(e) or "?", []).append(e["ts"])
    last: dict[str, object] = {}
    dropped = set()
    for r, d in sorted(own, key=lambda p: p[1].event["ts"]):
        ts, previous = d.event["ts"], last.get(d.who)
        if previous is not None and not any(previous < b <= ts for b in back.get(d.who, ())):
            dropped.add(id(d))
            continue
        last[d.who] = ts
    return [(r, d) for r, d in pairs if id(d) not in dropped]


def unlogged(outsiders: dict[str, list[str]], evidence: list) -> list[Figure]:
    """Per client.id, how many member ids the leaders' assignments name that no collected log names as its own
    (classify/members.unlogged_assignees): the processes of the group whose logs are not in the input."""
    return [derived(f"unlogged_member_ids.{client}", len(ids), COUNT,
                    f"member ids of client.id {client} that no collected log names as its own", evidence,
                    "the distinct member ids the leaders' assignments name and no log claims")
            for client, ids in outsiders.items()]


def by_name(figures: list[Figure]) -> dict[str, Figure]:
    return {f.name: f for f in figures}
