"""What ``analyze --follow`` shows while it follows: a live screen on a terminal, else one line per
new or changed finding (plain text, or JSON lines with ``--format json``).

The live screen is one renderable rebuilt on each tick (rich's ``Live`` redraws it in place): the
answer so far, each group's state (stable, or rebalancing since when), the findings so far, the
last rebalances (one still open is shown as open).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..result.rows import finding_row
from ..rules.finding import iso, rank
from ..rules.helpers import seconds
from ..timeline.identity import short
from .safe_text import visible

if TYPE_CHECKING:
    from ..live import Change, Live

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
_OUTCOME = {"stable": "green", "unstable": "yellow", "failed": "red", "incomplete": "bold magenta"}
LAST_REBALANCES = 8
FINDINGS_SHOWN = 10


def _same(text: str) -> str:
    return text


def line(change: "Change", text: Callable[[str], str] = _same) -> str:
    """One line for a new, updated or withdrawn finding (what an alert or a grep reads). ``text``: what each
    string goes through first (``Redactor.text`` with --redact)."""
    f = change.finding
    who = f" culprit {f.culprit.label}" if f.culprit is not None else ""
    where = f"group {f.group}" if f.group is not None else "client handles naming no group"
    if change.state == "withdrawn":
        return visible(text(f"{change.state.upper():9} {f.rule} in {where}: {f.summary}"))
    when = f" since {_at(f.start)}" if f.start else ""
    return visible(text(f"{change.state.upper():9} {f.severity} {f.rule} in {where}{who}{when}: {f.summary}"))


def json_line(change: "Change", redactor=None, cluster: str | None = None) -> str:
    """One JSON object per new, updated or withdrawn finding: the finding's row (the columns of
    ``analysis.FINDING_COLUMNS``, ``cluster`` that of its group) with ``state``; with a ``redactor`` (--redact),
    every string of it redacted."""
    row = finding_row(change.finding, cluster)
    row = {"state": change.state, **{k: iso(v) if isinstance(v, datetime) else v for k, v in row.items()}}
    if redactor is not None:
        from .redact import redact_value

        row = redact_value(row, redactor)
    return json.dumps(row)


def screen(live: "Live", notes: list[str], text: Callable[[str], str] = _same) -> Group:
    """The live screen of the session now (``text``: what each string goes through, as in ``line``)."""

    def show(value: str) -> str:
        return visible(text(value))

    analysis = live.analysis
    parts: list = []
    read = sum(f.events for f in live.stats.files)
    head = Text(f"following {len(live.follower.plan.tails)} input(s) · {read:,} events · "
                f"{seconds(live.stats.seconds * 1000)}   Ctrl-C: final report", style="dim")
    parts.append(head)
    if analysis is None:
        parts.append(Text("waiting for Kafka lines ..."))
        return Group(*parts)
    answer = analysis.answer
    f = answer.finding
    top = Text("ANSWER   ", style="bold")
    if f is None or answer.healthy:
        top.append(show(answer.headline), style="green")
    else:
        top.append(f"{f.severity.upper()} ", style=_STYLE[f.severity])
        top.append(show(f.rule), style="bold")
        top.append(show(f" in group {f.group}" if f.group else " in client handles naming no group"))
        if answer.culprit:
            top.append(show(f" · culprit {answer.culprit}"))
        top.append(Text("\n         ").append(show(f.title)))
    parts += [Text(""), top]
    for table in (_groups(analysis, show), _findings(analysis, show), _rebalances(analysis, show)):
        parts += [Text(""), table]
    if notes:
        parts += [Text(""), Text("\n".join(show(n) for n in notes[-3:]), style="dim")]
    return Group(*parts)


def _groups(analysis, show) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False, title=Text("groups", style="bold"),
                  title_justify="left")
    for name in ("group", "state", "generation", "rebalances", "findings"):
        table.add_column(name, overflow="fold")
    for g in analysis.groups:
        tl = g.timeline
        last = tl.rebalances[-1] if tl.rebalances else None
        if last is not None and last.outcome == "incomplete":
            state = Text(f"rebalancing since {_clock(last.start)}", style=_OUTCOME["incomplete"])
        elif last is not None and last.outcome == "failed":
            state = Text("last rebalance failed", style="red")
        else:
            state = Text("stable", style="green")
        generation = next((str(r.generation) for r in reversed(tl.rebalances) if r.generation is not None), "-")
        counts = {}
        for finding in g.findings:
            counts[finding.severity] = counts.get(finding.severity, 0) + 1
        worst = max(counts, key=rank) if counts else None
        table.add_row(Text(show(tl.group)), state, generation, str(tl.rebalance_count),
                      Text(", ".join(f"{n} {s}" for s, n in counts.items()) or "none", style=_STYLE.get(worst or "", "")))
    return table


def _findings(analysis, show) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False, title=Text("findings", style="bold"),
                  title_justify="left")
    for name in ("severity", "rule", "group", "culprit", "summary"):
        table.add_column(name, overflow="fold", ratio=4 if name == "summary" else None)
    for f in list(analysis.findings)[:FINDINGS_SHOWN]:
        table.add_row(Text(f.severity, style=_STYLE[f.severity]), Text(show(f.rule)), Text(show(f.group or "-")),
                      Text(show(short(f.culprit.label) if f.culprit else "-")), Text(show(f.summary)))
    if not analysis.findings:
        table.add_row("-", "none so far", "", "", "")
    return table


def _rebalances(analysis, show) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False, title=Text("last rebalances", style="bold"),
                  title_justify="left")
    for name in ("group", "gen", "start (UTC)", "took", "what", "outcome"):
        table.add_column(name, overflow="fold")
    rows = sorted(((g.timeline.group, r) for g in analysis.groups for r in g.timeline.rebalances),
                  key=lambda gr: gr[1].start.timestamp() if gr[1].start else 0.0)[-LAST_REBALANCES:]
    for group, r in rows:
        open_ = r.outcome == "incomplete"
        table.add_row(Text(show(group)), str(r.generation if r.generation is not None else "?"), _clock(r.start),
                      "open" if open_ else seconds(r.duration_ms),
                      Text(show(r.operation or r.trigger_kind or "unknown")),
                      Text("open" if open_ else r.outcome, style=_OUTCOME.get(r.outcome, "")))
    return table


def _clock(ts: datetime | None) -> str:
    return f"{ts:%H:%M:%S.%f}"[:-3] if ts else "-"


def _at(ts: datetime) -> str:
    return iso(ts) or "-"


__all__ = ["json_line", "line", "screen"]
