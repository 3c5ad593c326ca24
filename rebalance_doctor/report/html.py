"""The HTML report (`analyze --html FILE`): one self-contained page to mail or attach to a ticket.

The answer first; then a swimlane timeline per group (a lane per process and one per coordinator,
computed in ``lanes.py``; each rebalance a band coloured by its verdict; deaths, timeouts, fencing,
joins, leaves and errors as marks whose evidence line shows on hover or click, the culprits' lanes
flagged; a legend of what is drawn; zoom, group selector); then the findings with their evidence,
the per-host clock offsets, the rebalances and the accounting.

No network: the styles and the script (``assets/report.css``, ``assets/report.js``: plain SVG
drawn by ~400 lines of our own, no library) are inlined, and a Content-Security-Policy forbids
every request. Log text is made visible (``safe_text``) and HTML-escaped; the chart's data is
JSON inside a ``<script type="application/json">`` with ``<``, ``>`` and ``&`` escaped, which
the script only ever sets as text. Marks that would overlap are aggregated (per lane, per time
bucket, per kind, with a count and a few sample lines), so a 1 GB input gives a page of a few MB.
"""

from __future__ import annotations

import html
import json
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..result import Answer, GroupAnalysis, scope
from ..rules.figures import brief, refs as figures_refs
from ..rules.helpers import seconds
from ..timeline.identity import short
from . import detail
from .accounting import size, summary_line
from .evidence import EvidenceIndex, abbreviate_logger
from . import lanes as lanes_module
from .human import caused_text
from .safe_text import visible

if TYPE_CHECKING:
    from ..result import Analysis

ASSETS = Path(__file__).with_name("assets")
MAX_SAMPLES = 6000      # evidence lines kept for marks in the whole page
HURT_NAMED = 3          # groups named in the answer; the groups table lists them all
MESSAGE_CHARS = 2000    # characters of a hover line (the page's size is bounded by it)
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "base-uri 'none'; form-action 'none'")


def e(value: object) -> str:
    """Any text for the page: control characters made visible, then HTML-escaped."""
    return html.escape(visible(str(value)), quote=True)


def _json_for_script(data: object) -> str:
    # Inside <script type="application/json">: nothing may close the element or open a comment.
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def render(analysis: "Analysis") -> str:
    a = analysis.answer
    index = EvidenceIndex(analysis.stats)
    samples = _Samples(index)
    shown, hidden = detail.detailed(analysis, detail.HTML_DETAILED)
    groups = [_group_data(g, samples) for g in shown]
    default = a.finding.group if a.finding is not None else (groups[0]["name"] if groups else None)
    data = {"version": __version__, "default": default, "groups": groups, "evidence": samples.lines,
            "kinds": {kind: {"label": spec["label"], "shape": spec["shape"], "color": spec["color"]}
                      for kind, spec in lanes_module.kinds().items()}}
    body = "\n".join([
        _header(analysis),
        _answer(a, index, analysis),
        _chart_section(analysis, shown, hidden),
        _groups_table(a, {g.timeline.group for g in shown}),
        _findings(analysis, index, {g.timeline.group for g in shown} if hidden else None),
        _clocks(shown),
        _rebalances(analysis, shown, hidden),
        _accounting(analysis),
        f'<footer>rebalance-doctor {e(__version__)}: this page makes no network request and needs '
        f'nothing but itself.</footer>',
    ])
    title = f"rebalance-doctor: {a.headline}"
    return (_asset("report.html")
            .replace("@@CSP@@", CSP)
            .replace("@@TITLE@@", e(title))
            .replace("@@CSS@@", _asset("report.css"))
            .replace("@@BODY@@", body)
            .replace("@@DATA@@", _json_for_script(data))
            .replace("@@JS@@", _asset("report.js")))


def write(analysis: "Analysis", path: Path) -> None:
    """Write the page atomically (``writers.atomic_output``): a complete file or, on failure,
    none; only where a regular file may be written, an existing file keeping its mode."""
    from ..core.writers import atomic_output

    text = render(analysis)
    with atomic_output(path) as out:
        out.write(text)


# ---------------------------------------------------------------------------------- chart data


class _Samples:
    """Evidence lines referenced by the chart, each stored once (index into ``lines``)."""

    def __init__(self, index: EvidenceIndex):
        self.index = index
        self.lines: list[list[str]] = []
        self._ids: dict[str, int] = {}

    @property
    def full(self) -> bool:
        return len(self.lines) >= MAX_SAMPLES

    def of_event(self, event: dict) -> int | None:
        ref = f"{event.get('source')}:{event.get('line')}"
        known = self._ids.get(ref)
        if known is not None or self.full:
            return known
        first = (event.get("message") or "").split("\n", 1)[0]
        logger = event.get("logger")
        if logger and len(logger) > 30 and logger in first:
            first = first.replace(logger, abbreviate_logger(logger), 1)
        if len(first) > MESSAGE_CHARS:
            first = first[:MESSAGE_CHARS] + f"… (+{len(first) - MESSAGE_CHARS} characters)"
        self._ids[ref] = len(self.lines)
        self.lines.append([visible(ref, keep_newlines=False), visible(first, keep_newlines=False)])
        return self._ids[ref]

    def of_evidence(self, evidence) -> int | None:
        if evidence is None:
            return None
        ref = evidence.ref()
        known = self._ids.get(ref)
        if known is not None:
            return known
        self._ids[ref] = len(self.lines)
        first = evidence.text.split("\n", 1)[0]
        if len(first) > MESSAGE_CHARS:
            first = first[:MESSAGE_CHARS] + f"… (+{len(first) - MESSAGE_CHARS} characters)"
        self.lines.append([visible(ref, keep_newlines=False), visible(first, keep_newlines=False)])
        return self._ids[ref]


def _group_data(g: GroupAnalysis, samples: _Samples) -> dict:
    """One group's chart: its lanes and marks (report/lanes.py), rebalance bands, findings' windows, legend."""
    tl = g.timeline
    t0 = tl.start
    span_ms = max(tl.window_ms, 1)

    def at(ts: datetime) -> int:
        return int((ts - t0).total_seconds() * 1000)

    lanes = lanes_module.Lanes(g, samples.of_event)
    lane_rows, positions = lanes.rows()
    for row in lane_rows:
        for name in ("title", "sub", "host", "full"):
            row[name] = visible(row[name], keep_newlines=False)
    mark_rows = lanes.mark_rows(positions)
    rebalances = []
    for r in tl.rebalances:
        start = r.start or t0
        end = r.end or start
        rebalances.append({
            "i": r.index, "s": at(start), "e": at(end), "g": r.generation, "og": r.old_generation,
            "o": r.outcome, "f": _v(r.failure), "fu": r.followup, "k": r.trigger_kind, "tr": _v(r.trigger),
            "by": _v(r.culprit.label if r.culprit is not None else short(r.trigger_member) if r.trigger_member else None),
            "leader": _v(short(r.leader) if r.leader else None), "m": r.members, "n": r.nodes,
            "v": r.verdict, "op": r.operation, "p": r.protocol,
            "left": [_v(short(x)) for x in r.left], "expired": [_v(short(x)) for x in r.expired],
            "missed": [_v(short(x)) for x in r.missed], "ev": samples.of_evidence(r.trigger_evidence),
        })
    findings = [{"rule": f.rule, "sev": f.severity, "title": _v(f.title),
                 "s": at(f.start) if f.start else None, "e": at(f.end) if f.end else None,
                 "culprit": _v(f.culprit.label) if f.culprit is not None else None}
                for f in g.findings]
    return {"name": _v(tl.group), "kind": tl.kind, "protocol": tl.protocol_shown,
            "t0": int(t0.timestamp() * 1000) if t0 else 0, "span": span_ms if t0 else 0,
            "lanes": lane_rows, "marks": mark_rows, "rebalances": rebalances, "findings": findings,
            "legend": lanes.legend(lane_rows, mark_rows, rebalances, findings)}


def _v(text: str | None) -> str | None:
    return None if text is None else visible(text, keep_newlines=False)


# --------------------------------------------------------------------------------- page parts


def _header(analysis: "Analysis") -> str:
    inputs = ", ".join(analysis.inputs)
    thresholds = ("shipped defaults overridden by " + " then ".join(analysis.config.sources)
                  if analysis.config.sources else "shipped defaults")
    return (f'<header><h1>rebalance-doctor report</h1><p class="meta">{e(inputs)} · read '
            f'{e(summary_line(analysis.stats))} · thresholds: {e(thresholds)}</p></header>')


def _answer(a: Answer, index: EvidenceIndex, analysis: "Analysis") -> str:
    f = a.finding
    if f is None or a.healthy:
        return f'<section id="answer" class="answer healthy"><h2>Answer</h2><p>{e(a.headline)}</p></section>'
    rows = [("Root cause", f'<span class="sev {e(f.severity)}">{e(f.severity)}</span> '
                           f'<code>{e(f.rule)}</code> {e(f.title)}')]
    if f.cause:
        rows.append(("Cause", e(f.cause)))
    rows.append(("Culprit", f'<strong class="culprit">{e(a.culprit)}</strong>'
                 + (f' on host <strong>{e(a.culprit_host)}</strong>' if a.culprit_host else "")
                 + (f', member <code>{e(a.culprit_member)}</code>'
                    if a.culprit_member and short(a.culprit_member) not in a.culprit else "")
                 if a.culprit else "not named by the logs"))
    if a.start:
        rows.append(("When", e(_window(a.start, a.end))))
    if caused_text(f):
        rows.append(("Caused", e(caused_text(f))))
    hurt = sorted((g for g in a.groups if g.hurt), key=lambda g: (g.group != f.group, -g.unstable_ms, g.group))
    named = ", ".join(
        f'<a href="#g-{e(g.group)}" data-group="{e(g.group)}">{e(g.group)}</a> ({g.rebalances} rebalances, '
        f'unstable {e(seconds(g.unstable_ms))} = {g.unstable_share:.0%})' for g in hurt[:HURT_NAMED])
    more = f'; and <a href="#groups">{len(hurt) - HURT_NAMED} more</a>' if len(hurt) > HURT_NAMED else ""
    if hurt or f.group is not None:
        rows.append(("Groups hurt", named + more))
    if f.remediation:
        rows.append(("Fix", e(f.remediation)))
    if brief(f.figures):
        rows.append(("Figures", e(brief(f.figures))))
    if f.evidence:
        line = index.line(f.evidence[0])
        rows.append(("First evidence", f'<code class="ref">{e(line.ref)}</code> <span class="logline">{e(line.written)}</span>'))
    table = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f'<section id="answer" class="answer {e(f.severity)}"><h2>Answer</h2><table>{table}</table></section>'


def _window(start: datetime, end: datetime | None) -> str:
    if end is None or end == start:
        return f"{start:%Y-%m-%d %H:%M:%S} UTC"
    return (f"{start:%Y-%m-%d %H:%M:%S} .. {end:%H:%M:%S} UTC "
            f"({seconds((end - start).total_seconds() * 1000)})")


def _chart_section(analysis: "Analysis", shown: list[GroupAnalysis], hidden: int) -> str:
    if not analysis.groups:
        return '<section id="timeline"><h2>Timeline</h2><p>No group in the input.</p></section>'
    options = "".join(f'<option value="{e(g.timeline.group)}">{e(g.timeline.group)} '
                      f'({g.timeline.rebalance_count} rebalances{_worst(g)})</option>'
                      for g in shown)
    more = (f'<p class="note">{len(shown)} of {len(analysis.groups):,} groups are drawn (the most hurt first); the '
            f'others are rows of the groups table, and whole in --format json.</p>' if hidden else "")
    return f'''<section id="timeline"><h2>Timeline</h2>{more}
<div class="controls"><label>group <select id="group-select">{options}</select></label>
<button type="button" id="zoom-in" title="zoom in (+)">+</button><button type="button" id="zoom-out" title="zoom out (-)">&minus;</button>
<button type="button" id="zoom-reset" title="whole window (0)">whole window</button>
<span class="hint">wheel: zoom · drag: pan · hover or click a mark or band: its evidence</span></div>
<div id="chart" class="chart" aria-label="swimlane timeline: a lane per process"></div>
<div id="legend" class="legend" aria-label="legend"></div>
<div id="tip" class="tip" role="tooltip" hidden></div>
<noscript><p>The timeline needs JavaScript; the tables below hold the same facts.</p></noscript>
</section>'''


def _worst(g: GroupAnalysis) -> str:
    severities = [f.severity for f in g.findings]
    for severity in ("critical", "warning", "info"):
        if severity in severities:
            return f", {severity}"
    return ""


def _groups_table(a: Answer, drawn: "set[str] | None" = None) -> str:
    """One row per group (up to detail.TABLE_ROWS, the rest summed up in a line); a group whose
    timeline is drawn (``drawn``; None: every group) links to it."""
    if not a.groups:
        return ""
    rows = []
    shown, rest = detail.table_rows(a.groups)
    for g in shown:
        findings = ", ".join(f"{n} {s}" for s, n in g.findings.items()) or "none"
        name = (f'<a href="#g-{e(g.group)}" data-group="{e(g.group)}">{e(g.group)}</a>'
                if drawn is None or g.group in drawn else e(g.group))
        rows.append(f'<tr class="{e(g.worst or "none")}"><td>{name}</td><td>{e(g.kind)}</td><td>{e(g.protocol)}</td><td class="n">{g.rebalances}</td>'
                    f'<td class="n">{g.failed}</td><td class="n">{g.harmful}</td><td class="n">{e(seconds(g.unstable_ms))} '
                    f'({g.unstable_share:.0%})</td><td>{e(findings)}</td></tr>')
    return ('<section id="groups"><h2>Groups</h2><table class="grid"><thead><tr><th>group</th><th>kind</th>'
            '<th>protocol</th><th>rebalances</th><th>failed</th><th>harmful</th><th>unstable</th><th>findings</th>'
            '</tr></thead><tbody>' + "".join(rows) + "</tbody></table>"
            + (f'<p class="note">{e(rest.text())}</p>' if rest else "") + "</section>")


def _findings(analysis: "Analysis", index: EvidenceIndex, drawn: "set[str] | None" = None) -> str:
    """Every finding in full, or (``drawn``: the groups shown in full) those of the drawn groups and of no
    group in full and the others counted by rule in one table."""
    parts = ['<section id="findings"><h2>Findings</h2>']
    if not analysis.findings:
        parts.append("<p>No findings.</p>")
    full = [f for f in analysis.findings if drawn is None or f.group is None or f.group in drawn]
    counted: dict[tuple, list] = {}
    for f in analysis.findings:
        if drawn is not None and f.group is not None and f.group not in drawn:
            row = counted.setdefault((f.severity, f.rule, f.title), [0, set()])
            row[0] += 1
            row[1].add(f.group)
    for n, f in enumerate(full, start=1):
        lines = [index.line(ev) for ev in f.evidence]
        evidence = "".join(f'<li><code class="ref">{e(l.ref)}</code> <span class="logline">{e(l.written)}</span></li>'
                           for l in lines)
        extra = []
        if f.culprit is not None:
            extra.append(f"<p><strong>Culprit</strong>: {e(f.culprit.label)}</p>")
        if f.cause:
            extra.append(f"<p><strong>Cause</strong>: {e(f.cause)}</p>")
        if caused_text(f):
            extra.append(f"<p><strong>Caused</strong>: {e(caused_text(f))}</p>")
        for thrown in f.exceptions[:2]:
            extra.append('<div class="exception"><strong>Died with</strong><ul>' + "".join(
                f'<li>{e(label)}: <code>{e(text)}</code> <code class="ref">{e(ref)}</code></li>'
                for label, text, ref in thrown.parts()) + "</ul></div>")
        window = f'<p class="when">{e(_window(f.start, f.end))}</p>' if f.start else ""
        parts.append(
            f'<article class="finding {e(f.severity)}" id="f-{n}" data-rule="{e(f.rule)}" data-group="{e(f.group or "")}">'
            f'<h3><span class="sev {e(f.severity)}">{e(f.severity)}</span> <code>{e(f.rule)}</code> '
            f'{e(f.title)} <small>{e(scope(f))}</small></h3>{window}<p>{e(f.summary)}</p>{"".join(extra)}'
            + (f'<details open><summary>evidence ({len(lines)} lines)</summary><ul class="evidence">{evidence}</ul></details>'
               if lines else "")
            + (f'<p class="fix"><strong>Fix</strong>: {e(f.remediation)}</p>' if f.remediation else "")
            + (f'<div class="figures"><strong>Figures</strong>{_figures(f)}</div>' if f.figures else "")
            + "</article>")
    if counted:
        order = {"critical": 0, "warning": 1, "info": 2}
        parts.append(f'<h3>In the {len({g for _, groups in counted.values() for g in groups}):,} groups not shown in '
                     f'full</h3><table class="grid"><thead><tr><th>severity</th><th>rule</th><th>finding</th>'
                     f'<th>findings</th><th>groups</th></tr></thead><tbody>'
                     + "".join(f'<tr class="{e(sev)}"><td>{e(sev)}</td><td><code>{e(rule)}</code></td><td>{e(title)}</td>'
                               f'<td class="n">{count:,}</td><td class="n">{len(groups):,}</td></tr>'
                               for (sev, rule, title), (count, groups) in
                               sorted(counted.items(), key=lambda kv: (order.get(kv[0][0], 3), -kv[1][0], kv[0][1])))
                     + "</tbody></table>")
    for note in analysis.notes:
        if drawn is None or note.group is None or note.group in drawn:
            parts.append(f'<p class="note">{e(note.group)}: {e(note.rule)}: {e(note.text)}</p>')
    parts.append("</section>")
    return "".join(parts)


def _clocks(groups: list[GroupAnalysis]) -> str:
    rows = []
    for g in groups:
        tl = g.timeline
        for host in sorted(tl.hosts):
            offset = tl.skew_ms.get(host)
            rows.append(f"<tr><td>{e(tl.group)}</td><td>{e(host)}</td><td class='n'>"
                        + (f"{offset:+d} ms" if offset is not None else "within 1 s, not corrected")
                        + "</td><td class='n'>" + (str(tl.skew_pairs.get(host, "")) if offset is not None else "")
                        + "</td></tr>")
    if not rows:
        return ""
    return ('<section id="clocks"><h2>Clock offsets per host</h2><p>Estimated from moments both sides log for the '
            'same generation; hosts off by at least [timeline] skew_min_ms were corrected before the timeline was '
            'built.</p><table class="grid"><thead><tr><th>group</th><th>host</th><th>offset</th><th>generations '
            'paired</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table></section>")


def _rebalances(analysis: "Analysis", shown: list[GroupAnalysis], hidden: int) -> str:
    parts = ['<section id="rebalances"><h2>Rebalances</h2>']
    if hidden:
        parts.append(f'<p class="note">The rebalances of {len(shown)} of {len(analysis.groups):,} groups (the most '
                     f'hurt first); the {hidden:,} others are counted in the groups table, listed in --format json.</p>')
    for g in shown:
        tl = g.timeline
        rows = []
        for r in tl.rebalances:
            gen = f"{r.old_generation if r.old_generation is not None else '?'}&rarr;{r.generation if r.generation is not None else '?'}"
            by = r.culprit.label if r.culprit is not None else short(r.trigger_member)
            rows.append(
                f'<tr class="rb v-{e(r.verdict)} o-{e(r.outcome)}" data-group="{e(tl.group)}" data-index="{r.index}">'
                f'<td class="n">{r.index}</td><td>{gen}</td><td>{e(f"{r.start:%H:%M:%S.%f}"[:-3] if r.start else "-")}</td>'
                f'<td class="n">{e(seconds(r.duration_ms))}</td><td>{e(r.operation or r.trigger_kind or "unknown")}</td>'
                f'<td>{e(by)}</td><td>{e(short(r.leader))}</td><td class="n">{r.members if r.members is not None else "-"}</td>'
                f'<td>{e(r.outcome)}</td><td>{e(r.verdict)}</td></tr>')
        parts.append(
            f'<details id="g-{e(tl.group)}" class="group-rebalances"{" open" if len(analysis.groups) == 1 else ""}>'
            f'<summary>{e(tl.group)}: {tl.rebalance_count} rebalances ({e(tl.kind)}, {e(tl.protocol_shown)} protocol; '
            f'hosts {e(", ".join(sorted(tl.hosts)))})</summary>'
            + "".join(f'<p class="note">{e(n)}</p>' for n in tl.notes)
            + '<table class="grid"><thead><tr><th>#</th><th>gen</th><th>start (UTC)</th><th>took</th><th>what</th>'
              '<th>by</th><th>leader</th><th>members</th><th>outcome</th><th>verdict</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></details>")
    parts.append("</section>")
    return "".join(parts)


def _accounting(analysis: "Analysis") -> str:
    s = analysis.stats
    rows = []
    for f in s.files:
        layout = (f.layout or "-") + (f" in {f.container}" if f.container else "")
        notes = "; ".join(f.problems)
        if f.non_utf8_records:
            notes = (notes + "; " if notes else "") + f"{f.non_utf8_records} records with non-UTF-8 bytes"
        rows.append(f"<tr><td>{e(f.source)}</td><td>{e(f.host)}</td><td>{e(layout)}</td><td>{e(f.kafka_version or '-')}</td>"
                    f"<td class='n'>{e(size(f.bytes))}</td><td class='n'>{f.lines:,}</td><td class='n'>{f.events:,}</td>"
                    f"<td class='n'>{f.near_misses:,}</td><td>{e(notes)}</td></tr>")
    skipped = "".join(f"<li><code>{e(item.get('source'))}</code>: {e(item.get('reason'))}</li>" for item in s.skipped)
    warnings = "".join(f"<li><code>{e(item.get('source'))}</code>: {e(item.get('message'))}</li>" for item in s.warnings)
    return ('<section id="accounting"><h2>What was read</h2>'
            f"<p>{e(summary_line(s))}; engine {e(s.engine)}, {s.jobs} job(s), {s.seconds:.2f}s.</p>"
            + ('<table class="grid"><thead><tr><th>file</th><th>host</th><th>layout</th><th>kafka</th><th>bytes</th>'
               '<th>lines</th><th>events</th><th>near misses</th><th>notes</th></tr></thead><tbody>'
               + "".join(rows) + "</tbody></table>" if rows else "")
            + (f"<h3>Skipped</h3><ul>{skipped}</ul>" if skipped else "")
            + (f"<h3>Warnings</h3><ul>{warnings}</ul>" if warnings else "")
            + "</section>")


def summary_fragment(analysis: "Analysis") -> str:
    """The answer and the groups table, styled inline, for Jupyter (``Analysis._repr_html_``)."""
    index = EvidenceIndex(analysis.stats)
    return ('<div class="rebalance-doctor"><style>' + _asset("summary.css") + "</style>"
            + _answer(analysis.answer, index, analysis) + _groups_table(analysis.answer)
            + f'<p class="meta">{e(summary_line(analysis.stats))}. <code>.write_html(path)</code> writes the whole '
              f'report with the timeline.</p></div>')


def _figures(f) -> str:
    """The finding's figures (rules/figures.py) as a list: what, value, formula or note, evidence lines."""
    return '<ul class="figures">' + "".join(
        f'<li data-figure="{e(x.name)}">{e(x.label or x.name)}: <strong>{e(x.text())}</strong>'
        + (f" ({e(x.formula)})" if x.formula and x.known else "") + (f" ({e(x.note)})" if x.note else "")
        + "".join(f' <code class="ref">{e(r)}</code>' for r in figures_refs(x.evidence)) + "</li>"
        for x in f.figures) + "</ul>"
