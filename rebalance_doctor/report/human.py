"""The terminal report: the overview first (the answer, the groups, what was read), then a screen
per group (summary, findings with their evidence, the generation timeline).

Readable at 80 columns: everything wraps, no column is dropped. Each evidence line is printed
once; later findings refer to it. Log text is never read as rich markup (every piece of it is a
``rich.text.Text``) and goes through ``safe_text.visible`` first.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..result import Answer, GroupAnalysis, GroupState
from ..rules.finding import Finding
from ..rules.figures import brief
from ..rules.helpers import seconds
from ..timeline.identity import short
from . import detail
from .accounting import summary_line
from .evidence import EvidenceIndex, Line
from .safe_text import visible

if TYPE_CHECKING:
    from ..result import Analysis

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
_VERDICT = {"expected": "green", "harmful": "red", "unknown": "dim"}
_OUTCOME = {"stable": "green", "unstable": "yellow", "failed": "red", "incomplete": "dim"}

# What "a screen per group" holds without --details.
FINDINGS_IN_FULL = 3       # findings shown with evidence and fix; the others get one line
EVIDENCE_LINES = 3         # evidence lines per finding
TIMELINE_ROWS = 12         # rows of the generation timeline (first and last halves)
GROUPS_IN_FULL = 3         # healthy groups get a section of their own only when there are this few
OVERVIEW_GROUPS = 12       # rows of the overview's groups table (most hurt first)
HURT_NAMED = 3             # groups named in the answer's "hurt" line


def t(text: object, style: str | None = None) -> Text:
    """Text from anything that may have come from a log: made visible, never read as markup."""
    return Text(visible(str(text)), style=style or "")


class _Printed:
    """The evidence lines (and messages) already shown, so that each is printed once."""

    def __init__(self) -> None:
        self.refs: set[str] = set()
        self.messages: dict[str, str] = {}   # message -> the ref it was first shown with


def render(analysis: "Analysis", console: Console, brief: bool = False, details: bool = False,
           rows: int | None = None, html: str | None = None) -> None:
    answer = analysis.answer
    if not brief:
        console.print(_header(analysis))
    _answer(analysis, answer, console)
    if brief:
        return
    if not analysis.groups:
        _handles(analysis, console, _Printed(), details, html)
        return
    _groups_table(answer.groups, console, None if details else OVERVIEW_GROUPS, html)
    console.print(Text.assemble(("read     ", "bold"), t(summary_line(analysis.stats)),
                                (" (accounting on stderr)", "dim")))
    printed = _Printed()
    hurt = {g.group for g in answer.groups if g.hurt}
    ordered = sorted(analysis.groups, key=lambda g: (g.timeline.group not in hurt,
                                                     -g.timeline.unstable_ms, g.timeline.group))
    quiet = [g for g in ordered if g.timeline.group not in hurt]
    full = ordered if details or len(analysis.groups) <= GROUPS_IN_FULL else [g for g in ordered if g.timeline.group in hurt]
    # Many hurt groups (a whole cluster's logs): the most hurt get a screen each, the others a line.
    crowded = not details and len(full) > detail.TEXT_DETAILED
    if crowded:
        cut = {id(g) for g in detail.detailed(analysis, detail.TEXT_DETAILED)[0]}
        full = [g for g in full if id(g) in cut]
    for g in full:
        _group(g, analysis.stats, console, printed, details, rows, html)
    in_full = {id(g) for g in full}   # identities: comparing GroupAnalysis values compares whole timelines
    left = [g for g in quiet if id(g) not in in_full]
    if crowded:
        console.print()
        console.print(Text(f"{len(ordered) - len(full):,} more group(s) not shown in full "
                           f"({len(hurt) - len(full):,} of them with findings at warning or above): --details, "
                           f"{'the HTML report' if html else '--html'} or --format json.", style="dim"))
    elif left:
        console.print()
        console.print(Text(f"{len(left)} group(s) without findings at warning or above are not shown in full: "
                           f"--details or {'the HTML report' if html else '--html'}.", style="dim"))
    _handles(analysis, console, printed, details, html)


def _handles(analysis: "Analysis", console: Console, printed: "_Printed", details: bool, html: str | None) -> None:
    """The findings about client handles whose lines name no group (per process), with their evidence."""
    findings = analysis.handle_findings
    if not findings:
        return
    console.print()
    console.rule(Text("client handles whose lines name no group", style="bold"))
    index = EvidenceIndex(analysis.stats)
    for finding in findings:
        _finding(finding, console, index, printed, details, html)


def _header(analysis: "Analysis") -> Text:
    text = Text()
    text.append("rebalance-doctor", style="bold")
    sources = analysis.config.sources
    text.append(" · thresholds: ")
    if sources:
        text.append(t("shipped defaults overridden by " + " then ".join(sources), "bold yellow"))
    else:
        text.append("shipped defaults")
    overrides = _overrides(analysis)
    if overrides:
        text.append(t(" (" + ", ".join(f"{k} = {v}" for k, v in overrides.items()) + ")"))
    return text


def _overrides(analysis: "Analysis") -> dict:
    from .json import config_json

    return config_json(analysis)["overrides"]


def _answer(analysis: "Analysis", a: Answer, console: Console) -> None:
    console.print()
    head = Text()
    head.append("ANSWER   ", style="bold")
    f = a.finding
    if f is None or a.healthy:
        head.append_text(t(a.headline, "green"))
        console.print(head)
        return
    head.append(f"{f.severity.upper()} ", style=_STYLE[f.severity])
    head.append_text(t(f.rule, "bold"))
    if f.group is not None:
        head.append(" in group ")
        head.append_text(t(f.group, "bold"))
    else:
        head.append(" in client handles whose lines name no group")
    console.print(head)
    grid = _grid()
    grid.add_row("what", t(f.title))
    if f.cause:
        grid.add_row("cause", t(f.cause))
    grid.add_row("culprit", t(_culprit_text(a)) if a.culprit else Text("not named by the logs", style="dim"))
    caused = caused_text(f)
    if caused:
        grid.add_row("caused", t(caused))
    if a.start:
        grid.add_row("when", Text(_window(a.start, a.end)))
    hurt = sorted((g for g in a.groups if g.hurt), key=lambda g: (g.group != f.group, -g.unstable_ms, g.group))
    named = ", ".join(f"{g.group} ({_instability(g)})" for g in hurt[:HURT_NAMED])
    more = f"; and {len(hurt) - HURT_NAMED} more group(s) (below)" if len(hurt) > HURT_NAMED else ""
    if hurt or f.group is not None:
        grid.add_row("hurt", t(named + more))
    if f.remediation:
        grid.add_row("fix", t(f.remediation))
    if brief(f.figures):
        grid.add_row("figures", t(brief(f.figures)))
    console.print(Padding(grid, (0, 0, 0, 2)))


def _culprit_text(a: Answer) -> str:
    host = f" (host {a.culprit_host})" if a.culprit_host and a.culprit_host not in (a.culprit or "") else ""
    member = f", member {short(a.culprit_member)}" if a.culprit_member and short(a.culprit_member) not in (a.culprit or "") else ""
    return f"{a.culprit}{host}{member}"


def _instability(g: GroupState) -> str:
    return (f"{g.rebalances} rebalance(s), {g.failed} failed, unstable {seconds(g.unstable_ms)} "
            f"= {g.unstable_share:.0%} of {seconds(g.window_ms)}")


def _window(start: datetime, end: datetime | None) -> str:
    if end is None or end == start:
        return f"{start:%Y-%m-%d %H:%M:%S} UTC"
    same_day = start.date() == end.date()
    until = f"{end:%H:%M:%S}" if same_day else f"{end:%Y-%m-%d %H:%M:%S}"
    return f"{start:%Y-%m-%d %H:%M:%S} .. {until} UTC ({seconds((end - start).total_seconds() * 1000)})"


def _grid() -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


def _groups_table(states: list[GroupState], console: Console, limit: int | None, html: str | None) -> None:
    console.print()
    table = Table(box=None, header_style="bold", pad_edge=False, title=Text("groups", style="bold"),
                  title_justify="left")
    for name in ("group", "kind", "protocol", "rebalances", "failed", "harmful", "unstable", "findings"):
        table.add_column(name, overflow="fold")
    ordered = sorted(states, key=lambda s: (not s.hurt, -s.unstable_ms, s.group))
    shown = ordered if limit is None else ordered[:limit]
    if len(shown) < len(ordered):
        rest = ordered[len(shown):]
        quiet = sum(1 for g in rest if not g.hurt)
        table.caption = Text(f"{len(rest)} more group(s) ({quiet} without findings at warning or above): "
                             f"--details or {_html(html)}", style="dim")
        table.caption_justify = "left"
    for g in shown:
        findings = ", ".join(f"{n} {s}" for s, n in g.findings.items()) or "none"
        style = _STYLE.get(g.worst or "", "") if g.hurt else ""
        table.add_row(t(g.group), g.kind, g.protocol, str(g.rebalances), str(g.failed), str(g.harmful),
                      f"{seconds(g.unstable_ms)} ({g.unstable_share:.0%})", Text(findings, style=style))
    console.print(table)


def _group(g: GroupAnalysis, stats, console: Console, printed: _Printed, details: bool, rows: int | None,
           html: str | None) -> None:
    tl = g.timeline
    console.print()
    console.rule(t(f"{tl.group} ({tl.kind}, {tl.protocol_shown} protocol)", "bold"))
    share = tl.unstable_ms / tl.window_ms if tl.window_ms else 0.0
    grid = _grid()
    grid.add_row("window", Text(_window(tl.start, tl.end) if tl.start else "-"))
    grid.add_row("rebalances", Text(f"{tl.rebalance_count} ({len(tl.failed)} failed attempts)"))
    grid.add_row("unstable", Text(f"{seconds(tl.unstable_ms)} ({share:.0%} of the window)"))
    grid.add_row("leaders", t(", ".join(short(x) for x in tl.leaders) or "not logged"))
    grid.add_row("members", Text(_members(tl)))
    grid.add_row("logs", t(f"{', '.join(sorted(tl.sides))} side(s) from {len(tl.hosts)} host(s): "
                           f"{', '.join(sorted(tl.hosts))}"))
    if tl.skew_ms:
        grid.add_row("clocks", t(", ".join(f"{h} {ms:+d} ms" for h, ms in sorted(tl.skew_ms.items()))
                                 + " (corrected)"))
    console.print(grid)
    notes = list(tl.notes)
    clock_notes = [n for n in notes if n.startswith("clock of ")]
    if len(clock_notes) > 1 and not details:
        # The "clocks" line above already gives each offset: one note instead of two lines per host.
        notes = [n for n in notes if not n.startswith("clock of ")]
        notes.insert(0, f"{len(clock_notes)} hosts' clocks were off and their times corrected (the offsets "
                        "above, each from moments both sides logged: generations joined, members leaving; "
                        "--details lists them)")
    for note in notes + [f"{n.rule}: {n.text}" for n in g.notes]:
        console.print(t(f"note: {note}", "dim"))
    index = EvidenceIndex(stats)
    if not g.findings:
        console.print(Text("No findings.", style="green"))
    shown = g.findings if details else g.findings[:FINDINGS_IN_FULL]
    for finding in shown:
        _finding(finding, console, index, printed, details, html)
    rest = g.findings[len(shown):]
    if rest:
        console.print()
        console.print(Text(f"{len(rest)} more finding(s) (--details or {_html(html)}):", style="bold"))
        for finding in rest:
            line = Text("  ")
            line.append(f"{finding.severity.upper():8}", style=_STYLE[finding.severity])
            line.append_text(t(f" {finding.rule}: {finding.title}"))
            console.print(line)
    if tl.rebalances:
        _timeline(g, console, None if details and rows is None else (rows or TIMELINE_ROWS), html)


def _html(html: str | None) -> str:
    return html if html else "--html"


def _members(tl) -> str:
    counts = [r.members for r in tl.rebalances if r.members is not None]
    if not counts:
        return "not logged"
    return f"{min(counts)}..{max(counts)} per generation" if min(counts) != max(counts) else f"{counts[0]} per generation"


def _finding(f: Finding, console: Console, index: EvidenceIndex, printed: _Printed, details: bool,
             html: str | None) -> None:
    console.print()
    head = Text()
    head.append(f"{f.severity.upper():8}", style=_STYLE[f.severity])
    head.append_text(t(f" {f.rule}: ", "bold"))
    head.append_text(t(f.title))
    console.print(head)
    body = _grid()
    if f.start:
        body.add_row("when", Text(_window(f.start, f.end)))
    if f.cause:
        body.add_row("cause", t(f.cause))
    if f.culprit is not None:
        body.add_row("culprit", t(f.culprit.label))
    caused = caused_text(f)
    if caused:
        body.add_row("caused", t(caused))
    body.add_row("why", t(f.summary))
    for thrown in f.exceptions[:2]:
        body.add_row("died with", t("\n".join(f"{label}: {text} [{ref}]" for label, text, ref in thrown.parts())))
    if f.figures:
        body.add_row("figures", t("\n".join(x.line() for x in f.figures)))
    console.print(Padding(body, (0, 0, 0, 2)))
    fresh = [e for e in f.evidence if e.ref() not in printed.refs]
    seen = [e for e in f.evidence if e.ref() in printed.refs]
    shown = fresh if details else fresh[:EVIDENCE_LINES]
    if shown or seen:
        console.print(Text("  evidence:", style="bold"))
    for e in shown:
        printed.refs.add(e.ref())
        _evidence(index.line(e), console, printed, details)
    if seen:
        console.print(Padding(t("also " + ", ".join(e.ref() for e in seen) + " (shown above)", "dim"), (0, 0, 0, 4)))
    if len(fresh) > len(shown):
        console.print(Padding(Text(f"{len(fresh) - len(shown)} more evidence line(s): --details or {_html(html)}",
                                   style="dim"), (0, 0, 0, 4)))
    if f.remediation:
        console.print(Padding(Text.assemble(("fix: ", "bold"), t(f.remediation)), (0, 0, 0, 2)))


def caused_text(f: Finding) -> str:
    """What a causal chain took in: its rebalances, the members that had to rejoin, the
    partitions revoked, the symptom findings folded into it."""
    caused = f.caused or {}
    parts = []
    if caused.get("rebalances"):
        parts.append(f"{len(caused['rebalances'])} rebalance(s)")
    if caused.get("members"):
        parts.append(f"{len(caused['members'])} member(s) rejoined ({', '.join(short(m) for m in caused['members'][:4])}"
                     + (", ..." if len(caused["members"]) > 4 else "") + ")")
    if caused.get("partitions_revoked"):
        parts.append(f"{caused['partitions_revoked']} partition(s) revoked")
    folded = [x.get("rule") for x in caused.get("findings", []) if x.get("rule")]
    if folded:
        parts.append("symptoms: " + ", ".join(folded))
    return "; ".join(parts)


def _evidence(line: Line, console: Console, printed: _Printed, details: bool) -> None:
    """``ref  time LEVEL Logger: message``; a message already shown is referred to, not repeated;
    with --details the line as written."""
    ref = Text(line.ref, style="cyan")
    first = printed.messages.setdefault(line.message, line.ref)
    if details:
        body = Text(line.written)
    elif first != line.ref:
        body = Text.assemble(line.envelope + " " if line.envelope else "",
                             (f"(the same message as {first})", "dim"))
    else:
        body = Text(line.text)
    if console.width >= 100:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row(ref, body)
        console.print(Padding(grid, (0, 0, 0, 4)))
    else:
        # Narrow: the reference on its own line (paths are copied whole), the line wrapped under it.
        console.print(Padding(Group(ref, Padding(body, (0, 0, 0, 2))), (0, 0, 0, 4)))


def _timeline(g: GroupAnalysis, console: Console, limit: int | None, html: str | None) -> None:
    tl = g.timeline
    classified = any(r.verdict != "unknown" or r.operation for r in tl.rebalances)
    leaders = {r.leader for r in tl.rebalances}
    one_leader = len(leaders) == 1 and None not in leaders
    caption = f"leader {short(next(iter(leaders)))} in every generation" if one_leader else None
    table = Table(title=Text("generation timeline"), title_justify="left", header_style="bold", box=None,
                  pad_edge=False, padding=(0, 1), caption=t(caption) if caption else None, caption_justify="left")
    columns = ["#", "gen", "start (UTC)", "took", "operation" if classified else "trigger", "by"]
    if not one_leader:
        columns.append("leader")
    columns += ["members", "outcome"]
    if classified:
        columns.append("verdict")
    names = {"trigger", "operation", "by", "leader"}
    for column in columns:
        # Short values never wrap; names fold where they must (never cut, never dropped).
        table.add_column(column, overflow="fold", no_wrap=column not in names, ratio=2 if column in names else None)
    rebalances = tl.rebalances
    rows = rebalances if limit is None or len(rebalances) <= limit else rebalances[: limit // 2] + rebalances[-(limit // 2):]
    previous = None
    stacked = []  # the same rows for a terminal too narrow for the table (below)
    for r in rows:
        if previous is not None and r.index != previous + 1:
            skipped = r.index - previous - 1
            more = Text(f"{skipped} more: --details or {_html(html)}", style="dim")
            table.add_row("…", "", more, *[""] * (len(columns) - 3))
            stacked.append(Text("…  ").append_text(more))
        previous = r.index
        gen = f"{r.old_generation if r.old_generation is not None else '?'}->{r.generation}" \
            if r.generation is not None else (f"{r.old_generation}->?" if r.old_generation is not None else "?")
        outcome = r.outcome + (f" ({r.followup})" if r.followup and r.outcome == "unstable" else "")
        members = str(r.members) if r.members is not None else "-"
        if r.nodes:
            members += f" ({r.nodes} nodes)"
        by = short(r.culprit.label) if r.culprit is not None else short(r.trigger_member)
        what = (r.operation or r.trigger_kind or "unknown") if classified else (r.trigger_kind or "unknown")
        cells = [str(r.index), gen, f"{r.start:%H:%M:%S.%f}"[:-3] if r.start else "-", seconds(r.duration_ms),
                 t(what), t(by)]
        if not one_leader:
            cells.append(t(short(r.leader)))
        cells += [members, Text(outcome, style=_OUTCOME.get(r.outcome, ""))]
        if classified:
            cells.append(Text(r.verdict, style=_VERDICT.get(r.verdict, "")))
        table.add_row(*cells)
        # Stacked: the short values on the first line, the names under it, wrapped whole.
        head = Text("  ").join([Text(str(c)) if not isinstance(c, Text) else c
                                for c in cells[:5] + cells[-(2 if classified else 1):]])
        names = [("by", by)] + ([] if one_leader else [("leader", short(r.leader))]) + [("members", members)]
        under = Text(" · ").join([Text(f"{name} ", style="dim").append_text(t(value)) for name, value in names
                                  if value and value != "-"])
        stacked.append(Group(head, Padding(under, (0, 0, 0, 4))))
    console.print()
    wanted = Measurement.get(console, console.options.update_width(100_000), table).maximum
    if wanted <= console.width:
        console.print(table)
        return
    # Narrower than the table wants (80 columns with long client ids): rich would fold every name
    # column to a few characters; one block per rebalance instead, nothing dropped.
    console.print(Text("generation timeline", style="bold"))
    console.print(Text(" · ", style="dim").join([Text(c, style="dim") for c in columns
                                                 if c not in ("by", "leader", "members")]))
    for block in stacked:
        console.print(block)
    if caption:
        console.print(t(caption))
