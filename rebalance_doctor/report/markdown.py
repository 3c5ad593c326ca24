"""The Markdown report (`analyze --format markdown`), to paste into an incident ticket or a GitHub
issue: the answer, a table of rebalances per group, the findings with their evidence in code blocks.

Log text goes through ``safe_text.visible``; outside code blocks Markdown's own characters are
escaped, and each code block's fence is longer than any run of backticks inside it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import __version__
from ..result import Answer, scope
from ..rules.figures import brief
from ..rules.helpers import seconds
from ..timeline.identity import short
from . import detail
from .accounting import summary_line
from .human import caused_text
from .safe_text import visible

if TYPE_CHECKING:
    from ..result import Analysis

# Inline text never starts a line here, so only the characters that mean something mid-line.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
REBALANCE_ROWS = 30   # per group; the rest are counted


def md(text: object) -> str:
    """Log or user text as inline Markdown: visible, one line, Markdown characters escaped."""
    return _SPECIAL.sub(r"\\\1", visible(str(text), keep_newlines=False))


def code(text: str) -> str:
    """A code block whose fence no backtick run inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def render(analysis: "Analysis", brief: bool = False) -> str:
    out: list[str] = []
    a = analysis.answer
    out.append("## rebalance-doctor: " + _headline(a))
    out.append("")
    out += _answer(a)
    if brief:
        return "\n".join(out).rstrip() + "\n"
    out.append("")
    out.append(f"Read {md(summary_line(analysis.stats))}. Thresholds: "
               + (md("shipped defaults overridden by " + " then ".join(analysis.config.sources))
                  if analysis.config.sources else "shipped defaults") + f". rebalance-doctor {__version__}.")
    if a.groups:
        out += ["", "| group | kind | protocol | rebalances | failed | harmful | unstable | findings |",
                "|---|---|---|---:|---:|---:|---:|---|"]
        rows, rest = detail.table_rows(a.groups)
        for g in rows:
            findings = ", ".join(f"{n} {s}" for s, n in g.findings.items()) or "none"
            out.append(f"| {md(g.group)} | {g.kind} | {g.protocol} | {g.rebalances} | {g.failed} | {g.harmful} | "
                       f"{seconds(g.unstable_ms)} ({g.unstable_share:.0%}) | {findings} |")
        if rest:
            out += ["", md(rest.text())]
    shown, hidden = detail.detailed(analysis, detail.TEXT_DETAILED)
    for g in shown:
        out += _group(g)
    if hidden:
        out += ["", f"{hidden:,} more group(s) not shown in full (the {len(shown)} most hurt are): their rows are in "
                    f"the groups table, their findings and rebalances in `--format json` or the HTML report."]
    if analysis.handle_findings:
        out += ["", "### Client handles whose lines name no group"]
        for f in analysis.handle_findings:
            out += _finding(f)
    return "\n".join(out).rstrip() + "\n"


def _headline(a: Answer) -> str:
    f = a.finding
    if f is not None and not a.healthy:
        return f"{f.severity} `{f.rule}` in {md(scope(f))}"
    return "no harmful rebalance" if a.groups else "no rebalance found"


def _answer(a: Answer) -> list[str]:
    f = a.finding
    if f is None or a.healthy:
        return [md(a.headline)]
    lines = [f"- **What**: {md(f.title)}"]
    if f.cause:
        lines.append(f"- **Cause**: {md(f.cause)}")
    lines.append(f"- **Culprit**: {md(a.culprit)}" + (f" (host {md(a.culprit_host)})" if a.culprit_host else "")
                 if a.culprit else "- **Culprit**: not named by the logs")
    if a.start:
        lines.append(f"- **When**: {a.start:%Y-%m-%d %H:%M:%S} .. {a.end:%Y-%m-%d %H:%M:%S} UTC")
    caused = caused_text(f)
    if caused:
        lines.append(f"- **Caused**: {md(caused)}")
    hurt = [g for g in a.groups if g.hurt]
    if hurt or f.group is not None:
        lines.append("- **Groups hurt**: " + ", ".join(
            f"{md(g.group)} ({g.rebalances} rebalances, unstable {seconds(g.unstable_ms)} = {g.unstable_share:.0%})"
            for g in hurt))
    if f.remediation:
        lines.append(f"- **Fix**: {md(f.remediation)}")
    if brief(f.figures):
        lines.append("- **Figures**: " + md(brief(f.figures)))
    if f.evidence:
        lines += ["", code(visible(f.evidence[0].ref() + "  " + f.evidence[0].text.split("\n", 1)[0]))]
    return lines


def _finding(f) -> list[str]:
    out = ["", f"#### {f.severity.upper()} `{f.rule}`: {md(f.title)}", ""]
    if f.start:
        out.append(f"{f.start:%H:%M:%S} .. {f.end:%H:%M:%S} UTC. " + md(f.summary))
    else:
        out.append(md(f.summary))
    if f.culprit is not None:
        out += ["", f"Culprit: {md(f.culprit.label)}"]
    if f.cause:
        out += ["", f"Cause: {md(f.cause)}"]
    if caused_text(f):
        out += ["", f"Caused: {md(caused_text(f))}"]
    for thrown in f.exceptions[:2]:
        out += ["", "Died with:", ""] + [f"- {label}: {md(text)} (`{ref}`)" for label, text, ref in thrown.parts()]
    if f.evidence:
        out += ["", code("\n".join(visible(f"{e.ref()}  {e.text.split(chr(10), 1)[0]}", keep_newlines=False)
                                   for e in f.evidence))]
    if f.remediation:
        out += ["", f"**Fix**: {md(f.remediation)}"]
    if f.figures:
        out += ["", "Figures:", ""] + [f"- {md(x.line())}" for x in f.figures]
    return out


def _group(g) -> list[str]:
    tl = g.timeline
    out = ["", f"### {md(tl.group)} ({tl.kind}, {tl.protocol_shown} protocol)", ""]
    share = tl.unstable_ms / tl.window_ms if tl.window_ms else 0.0
    window = f"{tl.start:%Y-%m-%d %H:%M:%S} .. {tl.end:%H:%M:%S} UTC" if tl.start else "-"
    out.append(f"{window}; {tl.rebalance_count} rebalances ({len(tl.failed)} failed); unstable "
               f"{seconds(tl.unstable_ms)} ({share:.0%}); hosts {md(', '.join(sorted(tl.hosts)))}.")
    if tl.skew_ms:
        out.append("Clock offsets corrected: " + ", ".join(f"{md(h)} {ms:+d} ms" for h, ms in sorted(tl.skew_ms.items())) + ".")
    for note in tl.notes + [f"{n.rule}: {n.text}" for n in g.notes]:
        out.append(f"> {md(note)}")
    for f in g.findings:
        out += _finding(f)
    if tl.rebalances:
        classified = any(r.verdict != "unknown" or r.operation for r in tl.rebalances)
        out += ["", "| # | gen | start (UTC) | took | " + ("operation | verdict" if classified else "trigger")
                + " | by | leader | members | outcome |",
                "|---:|---|---|---:|" + ("---|---|" if classified else "---|") + "---|---|---:|---|"]
        rows = tl.rebalances[:REBALANCE_ROWS]
        for r in rows:
            gen = f"{r.old_generation if r.old_generation is not None else '?'}->{r.generation if r.generation is not None else '?'}"
            by = r.culprit.label if r.culprit is not None else short(r.trigger_member)
            what = (f"{md(r.operation or r.trigger_kind or 'unknown')} | {r.verdict}" if classified
                    else md(r.trigger_kind or "unknown"))
            start = f"{r.start:%H:%M:%S.%f}"[:-3] if r.start else "-"
            out.append(f"| {r.index} | {gen} | {start} | {seconds(r.duration_ms)} | {what} | {md(by)} | "
                       f"{md(short(r.leader))} | {r.members if r.members is not None else '-'} | {r.outcome} |")
        if len(tl.rebalances) > len(rows):
            out.append(f"\n{len(tl.rebalances) - len(rows)} more rebalances: see the HTML report (`--html FILE`) "
                       f"or `--format json`.")
    return out
