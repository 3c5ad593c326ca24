"""The terminal report: per group a summary, the findings with their evidence, the timeline.

Log text is never interpreted as rich markup: every piece of it goes through rich.text.Text, and
never reaches the terminal raw: control, C1 and bidi characters are escaped (``safe_text.visible``).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis import Analysis, GroupAnalysis
from ..rules.finding import Finding, rank
from ..rules.helpers import seconds
from ..timeline.identity import short
from .safe_text import visible

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
_VERDICT = {"expected": "green", "harmful": "red", "unknown": "dim"}
_OUTCOME = {"stable": "green", "unstable": "yellow", "failed": "red", "incomplete": "dim"}


def render(analysis: Analysis, console: Console, timeline_rows: int = 40) -> None:
    if not analysis.groups:
        console.print(Text("No rebalance-related lines with a group were found in the input."))
        return
    findings = sorted(analysis.findings, key=lambda f: -rank(f.severity))
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("critical", "warning", "info")}
    console.print(Text(f"{len(analysis.groups)} group(s); findings: {counts['critical']} critical, "
                       f"{counts['warning']} warning, {counts['info']} info", style="bold"))
    for g in analysis.groups:
        _group(g, console, timeline_rows)


def _group(g: GroupAnalysis, console: Console, timeline_rows: int) -> None:
    t = g.timeline
    console.print()
    console.rule(Text(f"{visible(t.group, False)} ({t.kind}, {t.protocol} protocol)", style="bold"))
    share = t.unstable_ms / t.window_ms if t.window_ms else 0.0
    lines = [
        ("window", f"{t.start:%Y-%m-%d %H:%M:%S} .. {t.end:%H:%M:%S} UTC ({seconds(t.window_ms)})" if t.start else "-"),
        ("rebalances", f"{len(t.rebalances)} ({len(t.failed)} failed attempts)"),
        ("time unstable", f"{seconds(t.unstable_ms)} ({share:.0%} of the window)"),
        ("leaders", ", ".join(short(l) for l in t.leaders) or "not logged"),
        ("members", _members(t)),
        ("logs", f"{', '.join(sorted(t.sides))} side(s) from {len(t.hosts)} host(s): {', '.join(sorted(t.hosts))}"),
    ]
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    for name, value in lines:
        summary.add_row(name, Text(visible(value, False)))
    console.print(summary)
    for note in t.notes + [f"{n.rule}: {n.text}" for n in g.notes]:
        console.print(Text(f"note: {visible(note, False)}", style="dim"))
    if not g.findings:
        console.print(Text("No findings.", style="green"))
    for finding in g.findings:
        _finding(finding, console)
    if t.rebalances:
        _timeline(g, console, timeline_rows)


def _members(t) -> str:
    counts = [r.members for r in t.rebalances if r.members is not None]
    if not counts:
        return "not logged"
    return f"{min(counts)}..{max(counts)} per generation" if min(counts) != max(counts) else f"{counts[0]} per generation"


def _finding(f: Finding, console: Console) -> None:
    console.print()
    head = Text()
    head.append(f"{f.severity.upper():8}", style=_STYLE[f.severity])
    head.append(f" {f.rule}: ", style="bold")
    head.append(visible(f.title, False))
    console.print(head)
    if f.start:
        console.print(Text(f"  {f.start:%H:%M:%S}..{f.end:%H:%M:%S} UTC", style="dim"))
    console.print(Text(visible(f.summary)), style=None, soft_wrap=False)
    if f.evidence:
        console.print(Text("  evidence:", style="bold"))
        for e in f.evidence:
            line = Text("    ")
            line.append(f"{visible(e.source, False)}:{e.line}", style="cyan")
            line.append("  ")
            line.append(visible(e.text if len(e.text) <= 240 else e.text[:237] + "...", False))
            console.print(line)
    if f.remediation:
        console.print(Text("  fix: ", style="bold") + Text(visible(f.remediation)))


def _timeline(g: GroupAnalysis, console: Console, limit: int) -> None:
    t = g.timeline
    table = Table(title=Text("generation timeline"), title_justify="left", show_lines=False, header_style="bold")
    for column in ("#", "gen", "start (UTC)", "took", "what", "verdict", "by", "leader", "members", "outcome"):
        table.add_column(column, overflow="fold")
    rows = t.rebalances if len(t.rebalances) <= limit else t.rebalances[: limit // 2] + t.rebalances[-limit // 2:]
    previous = None
    for r in rows:
        if previous is not None and r.index != previous + 1:
            table.add_row("...", "", Text(f"{r.index - previous - 1} more"), "", "", "", "", "", "", "")
        previous = r.index
        gen = f"{r.old_generation if r.old_generation is not None else '?'}->{r.generation}" \
            if r.generation is not None else (f"{r.old_generation}->?" if r.old_generation is not None else "?")
        outcome = r.outcome + (f" ({r.followup})" if r.followup and r.outcome == "unstable" else "")
        members = str(r.members) if r.members is not None else "-"
        if r.nodes:
            members += f" ({r.nodes} nodes)"
        table.add_row(str(r.index), gen, f"{r.start:%H:%M:%S.%f}"[:-3] if r.start else "-",
                      seconds(r.duration_ms), Text(visible(r.operation or r.trigger_kind or "unknown", False)),
                      Text(r.verdict, style=_VERDICT.get(r.verdict, "")),
                      Text(visible(short(r.culprit.label) if r.culprit else short(r.trigger_member), False)),
                      Text(visible(short(r.leader), False)), members, Text(outcome, style=_OUTCOME.get(r.outcome, "")))
    console.print()
    console.print(table)
