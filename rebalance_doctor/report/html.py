"""The HTML report (`analyze --html FILE`): one self-contained page to mail or attach to a ticket.

The answer first; then a swimlane timeline per group (a lane per member and one for the
coordinator, each rebalance a band coloured by its verdict, joins, leaves, timeouts, fencing and
errors as marks whose evidence line shows on hover or click; zoom, group selector); then the
findings with their evidence, the per-host clock offsets, the rebalances and the accounting.

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
from ..analysis import GroupAnalysis
from ..core.toml import load_toml
from ..rules.figures import brief, refs as figures_refs
from ..rules.helpers import seconds
from ..timeline.identity import short
from .accounting import size, summary_line
from .answer import Answer, scope
from .evidence import EvidenceIndex, abbreviate_logger
from .human import caused_text
from .safe_text import visible

if TYPE_CHECKING:
    from ..api import Analysis

ASSETS = Path(__file__).with_name("assets")
BUCKETS = 3000          # time buckets across a group's window: marks in one bucket, lane and kind are one mark
SAMPLES_PER_MARK = 3    # evidence lines kept per aggregated mark
MAX_SAMPLES = 6000      # evidence lines kept for marks in the whole page
MAX_LANES = 48          # member lanes per group; the quietest beyond it share one lane
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


@lru_cache(maxsize=1)
def _mark_kinds() -> dict[str, str]:
    kinds = load_toml(ASSETS / "marks.toml")["kinds"]
    return {event: kind for kind, spec in kinds.items() for event in spec["events"]}


def render(analysis: "Analysis") -> str:
    a = analysis.answer
    index = EvidenceIndex(analysis.stats)
    samples = _Samples(index)
    groups = [_group_data(g, samples) for g in analysis.groups]
    default = a.finding.group if a.finding is not None else (groups[0]["name"] if groups else None)
    data = {"version": __version__, "default": default, "groups": groups, "evidence": samples.lines}
    body = "\n".join([
        _header(analysis),
        _answer(a, index, analysis),
        _chart_section(analysis),
        _groups_table(a),
        _findings(analysis, index),
        _clocks(analysis),
        _rebalances(analysis),
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


def _lane_key(event: dict, tl) -> tuple[str, str, str]:
    host = event.get("host") or "?"
    if event.get("component") == "broker":
        return ("coordinator", "coordinator", host)
    name = tl.who(event) or event.get("client") or event.get("thread") or "(no client id)"
    name = short(name)
    if name.endswith(f"@{host}"):
        name = name[: -len(host) - 1]
    return ("member", name, host)


def _group_data(g: GroupAnalysis, samples: _Samples) -> dict:
    tl = g.timeline
    t0 = tl.start
    span_ms = max(tl.window_ms, 1)
    bucket_ms = max(span_ms / BUCKETS, 1.0)
    kinds = _mark_kinds()
    lanes: dict[tuple, dict] = {}
    marks: dict[tuple, list] = {}

    def at(ts: datetime) -> int:
        return int((ts - t0).total_seconds() * 1000)

    keys: dict[tuple, tuple] = {}   # the lane of a (component, member, client, thread, host), once
    t0_us = int(t0.timestamp() * 1_000_000) if t0 else 0
    for event in tl.events:
        who = (event.get("component"), event.get("member"), event.get("client"), event.get("thread"), event.get("host"))
        key = keys.get(who)
        if key is None:
            key = keys[who] = _lane_key(event, tl)
        lane = lanes.get(key)
        if lane is None:
            lane = lanes[key] = {"kind": key[0], "label": key[1], "host": key[2], "marks": 0, "events": 0}
        lane["events"] += 1
        kind = kinds.get(event["event"])
        if kind is None and (event.get("level") or "").upper() in ("ERROR", "FATAL"):
            kind = "error"
        if kind is None or event.get("ts") is None:
            continue
        lane["marks"] += 1
        ms = (int(event["ts"].timestamp() * 1_000_000) - t0_us) // 1000
        slot = (key, int(ms / bucket_ms), kind)
        mark = marks.get(slot)
        if mark is None:
            marks[slot] = mark = [ms, 0, [], set()]
        mark[1] += 1
        mark[3].add(event["event"])
        if len(mark[2]) < SAMPLES_PER_MARK:
            sample = samples.of_event(event)
            if sample is not None:
                mark[2].append(sample)
    ordered, lane_ids = _lane_positions(lanes)
    lane_rows = [{"kind": lane["kind"], "label": visible(lane["label"], keep_newlines=False),
                  "host": visible(lane["host"], keep_newlines=False), "events": lane["events"]}
                 for lane in ordered]
    mark_rows = []
    for (key, _, kind), (ms, count, lines, names) in sorted(marks.items(), key=lambda kv: kv[1][0]):
        mark_rows.append([lane_ids[key], ms, kind, count, lines, sorted(names)])
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
                 "s": at(f.start) if f.start else None, "e": at(f.end) if f.end else None}
                for f in g.findings]
    return {"name": _v(tl.group), "kind": tl.kind, "protocol": tl.protocol,
            "t0": int(t0.timestamp() * 1000) if t0 else 0, "span": span_ms if t0 else 0,
            "lanes": lane_rows, "marks": mark_rows, "rebalances": rebalances, "findings": findings}


def _lane_positions(lanes: dict[tuple, dict]) -> tuple[list[dict], dict[tuple, int]]:
    """The lanes in drawing order (coordinators first, then members by host and name) and each
    key's position; beyond MAX_LANES members, the quietest share one last lane."""
    coordinators = sorted((k for k in lanes if k[0] == "coordinator"), key=lambda k: k[2])
    members = [k for k in lanes if k[0] != "coordinator"]
    rest: list[tuple] = []
    if len(members) > MAX_LANES:
        busiest = sorted(members, key=lambda k: (-lanes[k]["marks"], -lanes[k]["events"], k))
        members, rest = busiest[: MAX_LANES - 1], busiest[MAX_LANES - 1:]
    ordered = coordinators + sorted(members, key=lambda k: (k[2], k[1]))
    rows = [lanes[k] for k in ordered]
    positions = {k: i for i, k in enumerate(ordered)}
    if rest:
        rows.append({"kind": "others", "label": f"{len(rest)} other members", "host": "",
                     "marks": sum(lanes[k]["marks"] for k in rest), "events": sum(lanes[k]["events"] for k in rest)})
        positions.update({k: len(rows) - 1 for k in rest})
    return rows, positions


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


def _chart_section(analysis: "Analysis") -> str:
    if not analysis.groups:
        return '<section id="timeline"><h2>Timeline</h2><p>No group in the input.</p></section>'
    options = "".join(f'<option value="{e(g.timeline.group)}">{e(g.timeline.group)} '
                      f'({g.timeline.rebalance_count} rebalances{_worst(g)})</option>'
                      for g in analysis.groups)
    return f'''<section id="timeline"><h2>Timeline</h2>
<div class="controls"><label>group <select id="group-select">{options}</select></label>
<button type="button" id="zoom-in" title="zoom in (+)">+</button><button type="button" id="zoom-out" title="zoom out (-)">&minus;</button>
<button type="button" id="zoom-reset" title="whole window (0)">whole window</button>
<span class="hint">wheel: zoom · drag: pan · hover or click a mark or band: its evidence</span></div>
<div class="legend"><span class="band harmful"></span>harmful <span class="band expected"></span>expected
<span class="band unknown"></span>not classified <span class="band failed"></span>failed
<span class="mk join">&#9650;</span>join <span class="mk leave">&#9660;</span>leave <span class="mk timeout">&#9670;</span>timeout
<span class="mk fencing">&#9632;</span>fencing <span class="mk error">&#10006;</span>error</div>
<div id="chart" class="chart" aria-label="swimlane timeline"></div>
<div id="tip" class="tip" role="tooltip" hidden></div>
<noscript><p>The timeline needs JavaScript; the tables below hold the same facts.</p></noscript>
</section>'''


def _worst(g: GroupAnalysis) -> str:
    severities = [f.severity for f in g.findings]
    for severity in ("critical", "warning", "info"):
        if severity in severities:
            return f", {severity}"
    return ""


def _groups_table(a: Answer) -> str:
    if not a.groups:
        return ""
    rows = []
    for g in sorted(a.groups, key=lambda s: (not s.hurt, -s.unstable_ms, s.group)):
        findings = ", ".join(f"{n} {s}" for s, n in g.findings.items()) or "none"
        rows.append(f'<tr class="{e(g.worst or "none")}"><td><a href="#g-{e(g.group)}" data-group="{e(g.group)}">'
                    f'{e(g.group)}</a></td><td>{e(g.kind)}</td><td>{e(g.protocol)}</td><td class="n">{g.rebalances}</td>'
                    f'<td class="n">{g.failed}</td><td class="n">{g.harmful}</td><td class="n">{e(seconds(g.unstable_ms))} '
                    f'({g.unstable_share:.0%})</td><td>{e(findings)}</td></tr>')
    return ('<section id="groups"><h2>Groups</h2><table class="grid"><thead><tr><th>group</th><th>kind</th>'
            '<th>protocol</th><th>rebalances</th><th>failed</th><th>harmful</th><th>unstable</th><th>findings</th>'
            '</tr></thead><tbody>' + "".join(rows) + "</tbody></table></section>")


def _findings(analysis: "Analysis", index: EvidenceIndex) -> str:
    parts = ['<section id="findings"><h2>Findings</h2>']
    if not analysis.findings:
        parts.append("<p>No findings.</p>")
    for n, f in enumerate(analysis.findings, start=1):
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
    for note in analysis.notes:
        parts.append(f'<p class="note">{e(note.group)}: {e(note.rule)}: {e(note.text)}</p>')
    parts.append("</section>")
    return "".join(parts)


def _clocks(analysis: "Analysis") -> str:
    rows = []
    for g in analysis.groups:
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


def _rebalances(analysis: "Analysis") -> str:
    parts = ['<section id="rebalances"><h2>Rebalances</h2>']
    for g in analysis.groups:
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
