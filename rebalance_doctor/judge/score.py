"""The scorer: what the tool said about incidents against their truth, for any source of incidents.

An incident is a directory of logs with its truth (``truth.Truth``, the ``expected.toml`` format):
simulated (``accuracy``), or recorded from real Kafka. ``analyze_here`` / ``analyze_with_code`` run the
analysis as a user runs it (``engines.local.read_events`` then ``diagnosis.analyze_events``; with
``--code DIR``, in a subprocess running the code tree DIR); ``score`` pairs what it said with the truth
(per-rule precision and recall with counts, the healthy false-alarm rate, the first finding and its
culprit, the per-rebalance verdicts); ``table`` prints the scores.
"""

from __future__ import annotations

import fnmatch

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..rules import RULE_IDS
from .truth import Truth

MIN_POSITIVES = 20
MIN_LOOKALIKES = 20
HEALTHY_NOTE = "healthy-operation"   # its look-alikes are the faults, not the healthy incidents
SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


# -- what the tool said about an incident -----------------------------------------------------------
@dataclass
class Said:
    """An analysis reduced to what is scored: top-level findings and rebalances (JSON-able)."""

    findings: list[dict] = field(default_factory=list)     # rule, group, severity, culprit {host, client, ...}
    rebalances: list[dict] = field(default_factory=list)   # group, generation, verdict, operation
    error: str | None = None


# The analysis, as a user runs it: read the directory, analyse the events. Kept as source so that it
# runs against another code tree (--code DIR) in a subprocess, printing one JSON object per directory.
ANALYZE_SOURCE = r'''
import json, sys
from rebalance_doctor.engines.local import read_events
try:
    from rebalance_doctor.diagnosis import analyze_events
except ImportError:     # a code tree from before analysis.py was named diagnosis.py (--code DIR)
    from rebalance_doctor.analysis import analyze_events

def said(directory):
    events, _stats = read_events([directory])
    try:    # a bundle of several clusters: groups keyed by cluster, as api.analyze does before the diagnosis
        from rebalance_doctor.timeline.clusters import settle
    except ImportError:     # a code tree from before clusters were told apart (--code DIR)
        settle = None
    if settle is not None:
        settle(events)
    analysis = analyze_events(events)
    findings = []
    for f in analysis.findings:
        culprit = getattr(f, "culprit", None)
        c = None
        if culprit is not None:
            c = {k: getattr(culprit, k, None) for k in ("host", "member", "client", "instance", "client_host")}
        findings.append({"rule": f.rule, "group": f.group, "severity": f.severity, "culprit": c,
                         "title": f.title,
                         "figures": {x.name: x.value for x in getattr(f, "figures", [])}})
    rebalances = []
    for g in analysis.groups:
        for r in g.timeline.rebalances:
            rebalances.append({"group": g.timeline.group, "generation": r.generation,
                               "verdict": getattr(r, "verdict", "unknown"),
                               "operation": getattr(r, "operation", None)})
    return {"findings": findings, "rebalances": rebalances}

if __name__ == "__main__":
    for directory in sys.argv[1:]:
        try:
            out = said(directory)
        except Exception as exc:  # one failed incident must not hide the others
            out = {"findings": [], "rebalances": [], "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out, default=str), flush=True)
'''


def analyze_here(directory: Path) -> Said:
    scope: dict = {"__name__": "rebalance_doctor_accuracy_worker"}
    exec(compile(ANALYZE_SOURCE, "<accuracy-analyze>", "exec"), scope)
    try:
        return Said(**scope["said"](str(directory)))
    except Exception as exc:  # an analysis crash is scored as "said nothing", and reported
        return Said(error=f"{type(exc).__name__}: {exc}")


def analyze_with_code(code: Path, directories: list[Path]) -> list[Said]:
    """Run the analysis of the code tree ``code`` (PYTHONPATH) on every directory, in one subprocess."""
    env = dict(os.environ, PYTHONPATH=str(code), REBALANCE_DOCTOR_CACHE="off")
    run = subprocess.run([sys.executable, "-c", ANALYZE_SOURCE, *map(str, directories)], capture_output=True,
                         text=True, env=env, cwd=str(code), timeout=3600)
    if run.returncode != 0:
        raise RuntimeError(f"analysis with {code} failed: {run.stderr.strip().splitlines()[-1:]}")
    return [Said(**json.loads(line)) for line in run.stdout.splitlines() if line.strip()]


@dataclass
class Case:
    """One incident scored: its name (a simulated scenario, a recorded directory), seed, truth and what was said."""

    scenario: str
    seed: int
    truth: Truth
    said: Said
    directory: str = ""


# -- scoring -------------------------------------------------------------------------------------------
@dataclass
class RuleScore:
    rule: str
    tp: int = 0
    fp: int = 0
    fn: int = 0
    positives: int = 0          # incidents whose truth expects the rule
    lookalikes: int = 0         # healthy incidents that resemble it (for the healthy note: the faults)
    min_positives: int = MIN_POSITIVES      # what makes the row tested: 20 each simulated, 3 each recorded
    min_lookalikes: int = MIN_LOOKALIKES
    figures: int = 0            # figures the truth states for this rule's expected findings
    figures_right: int = 0      # ... that the finding states and agree
    figures_unstated: int = 0   # ... that the finding does not state (None or absent: "not in the logs")

    @property
    def figures_rate(self) -> float | None:
        stated = self.figures - self.figures_unstated
        return self.figures_right / stated if stated else None

    @property
    def tested(self) -> bool:
        return self.positives >= self.min_positives and self.lookalikes >= self.min_lookalikes

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


@dataclass
class Scores:
    rules: dict[str, RuleScore] = field(default_factory=dict)
    incidents: int = 0
    healthy: int = 0
    healthy_alarms: int = 0
    culprit_cases: int = 0
    culprit_first: int = 0
    answer_cases: int = 0
    answer_first: int = 0
    rebalances: int = 0
    verdict_agree: int = 0
    operation_agree: int = 0
    errors: list[str] = field(default_factory=list)
    analysed_rules: set[str] | None = None     # the rule ids of the analysed tree (None: not asked)
    failures: list[str] = field(default_factory=list)   # one line per wrong incident, for tuning
    wrong_figures: list[str] = field(default_factory=list)   # one line per figure that disagrees with the truth

    @property
    def healthy_false_alarm_rate(self) -> float | None:
        return self.healthy_alarms / self.healthy if self.healthy else None

    @property
    def culprit_first_rate(self) -> float | None:
        return self.culprit_first / self.culprit_cases if self.culprit_cases else None

    @property
    def verdict_agreement(self) -> float | None:
        return self.verdict_agree / self.rebalances if self.rebalances else None

    def to_dict(self) -> dict:
        return {
            "incidents": self.incidents, "healthy": self.healthy, "healthy_alarms": self.healthy_alarms,
            "culprit_cases": self.culprit_cases, "culprit_first": self.culprit_first,
            "answer_cases": self.answer_cases, "answer_first": self.answer_first,
            "rebalances": self.rebalances, "verdict_agree": self.verdict_agree,
            "operation_agree": self.operation_agree, "errors": self.errors,
            "analysed_rules": sorted(self.analysed_rules) if self.analysed_rules is not None else None,
            "rules": {r: {"tp": s.tp, "fp": s.fp, "fn": s.fn, "positives": s.positives,
                          "lookalikes": s.lookalikes, "tested": s.tested, "precision": s.precision,
                          "recall": s.recall, "figures": s.figures, "figures_right": s.figures_right,
                          "figures_unstated": s.figures_unstated} for r, s in self.rules.items()},
            "wrong_figures": self.wrong_figures,
        }


def culprit_matches(expected: dict, culprit: dict | None) -> bool:
    if not culprit:
        return False
    for key, want in expected.items():
        have = culprit.get(key)
        if have is None or str(have) != str(want):
            return False
    return True


def score(cases: list[Case], min_positives: int = MIN_POSITIVES, min_lookalikes: int = MIN_LOOKALIKES) -> Scores:
    """Score ``cases``; a rule's row is tested with ``min_positives`` positives and ``min_lookalikes`` look-alikes."""
    scores = Scores()

    def row(rule: str) -> RuleScore:
        if rule not in scores.rules:
            scores.rules[rule] = RuleScore(rule, min_positives=min_positives, min_lookalikes=min_lookalikes)
        return scores.rules[rule]

    for rule in RULE_IDS:   # every rule a row, an incident naming it or not (the truth names no other)
        row(rule)
    for case in cases:
        truth, said = case.truth, case.said
        scores.incidents += 1
        where = f"{case.scenario}#{case.seed}"
        if said.error:
            scores.errors.append(f"{where}: {said.error}")
        fired: dict[tuple[str, str], str] = {}
        said_findings = [f for f in said.findings if f["group"] not in truth.unjudged]
        for f in said_findings:
            key = (f["rule"], f["group"])
            if key not in fired or SEVERITY_RANK[f["severity"]] > SEVERITY_RANK[fired[key]]:
                fired[key] = f["severity"]
            row(f["rule"])
        expected = {(e.rule, e.group): e for e in truth.findings}
        for rule in {e.rule for e in truth.findings}:
            row(rule).positives += 1
        if truth.healthy:
            scores.healthy += 1
            for rule in truth.resembles:
                row(rule).lookalikes += 1
        else:   # the healthy note's look-alikes are the faults: naming one healthy is its false alarm
            row(HEALTHY_NOTE).lookalikes += 1
        if truth.healthy:
            if any(SEVERITY_RANK[f["severity"]] >= 1 for f in said_findings):
                scores.healthy_alarms += 1
                scores.failures.append(f"{where}: healthy but warned: "
                                       + ", ".join(f"{f['rule']}({f['severity']})" for f in said_findings
                                                   if SEVERITY_RANK[f["severity"]] >= 1))
        for key, e in expected.items():
            got = fired.get(key)
            if got is not None and SEVERITY_RANK[got] >= SEVERITY_RANK[e.severity]:
                row(e.rule).tp += 1
            else:
                row(e.rule).fn += 1
                scores.failures.append(f"{where}: missed {e.rule} ({e.group})"
                                       + (f", fired only at {got}" if got else ""))
        for (rule, group), severity in fired.items():
            if (rule, group) not in expected and rule not in truth.may_fire:
                row(rule).fp += 1
                scores.failures.append(f"{where}: false {rule} ({severity}) on {group}")
        for e in truth.findings:
            if not e.first:
                continue
            firsts = [f for f in said.findings if f["group"] == e.group]
            first = firsts[0] if firsts else None
            scores.answer_cases += 1
            if first is not None and first["rule"] == e.rule:
                scores.answer_first += 1
            if e.culprit:
                scores.culprit_cases += 1
                if first is not None and culprit_matches(e.culprit, first.get("culprit")):
                    scores.culprit_first += 1
        for x in truth.figures:
            s = row(x.rule)
            s.figures += 1
            finding = next((f for f in said_findings if f["rule"] == x.rule and f["group"] == x.group), None)
            value = _stated(x.name, (finding or {}).get("figures", {}))
            if value is None:
                s.figures_unstated += 1
            elif x.agrees(value):
                s.figures_right += 1
            else:
                scores.wrong_figures.append(f"{where}: {x.rule} ({x.group}) {x.name} = {value:g}, truth {x.want()}"
                                            + (f" ({x.why})" if x.why else ""))
        analysed = {(r["group"], r["generation"]): r for r in said.rebalances}
        for r in truth.rebalances:
            scores.rebalances += 1
            got = analysed.get((r.group, r.generation))
            if got is not None and got.get("verdict") == r.verdict:
                scores.verdict_agree += 1
            if got is not None and got.get("operation") == r.operation:
                scores.operation_agree += 1
    return scores


# -- the table -------------------------------------------------------------------------------------------
def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _stated(name: str, said: dict):
    """The finding's figure ``name``; a name with ``*`` (the truth knows the host, not the member's client id:
    "departures.*@app-2") is the sum of the figures it matches, None when none is stated."""
    if "*" not in name:
        return said.get(name)
    values = [v for k, v in said.items() if fnmatch.fnmatchcase(k, name) and v is not None]
    return sum(values) if values else None


def _figures(s: RuleScore) -> str:
    """figures right over figures stated (rules/figures.py against the truth's), and how many it left unstated."""
    if not s.figures:
        return "-"
    stated = s.figures - s.figures_unstated
    return (f"{_pct(s.figures_rate)} ({s.figures_right}/{stated})"
            + (f", {s.figures_unstated} not stated" if s.figures_unstated else ""))


def table(scores: Scores) -> str:
    lines = ["| rule | precision | recall | TP | FP | FN | positives | healthy look-alikes | figures right | |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for rule in sorted(scores.rules):
        s = scores.rules[rule]
        if not (s.tp or s.fp or s.fn or s.positives or s.lookalikes):
            lines.append(f"| `{rule}` | - | - | 0 | 0 | 0 | 0 | 0 | - | untested (no incident) |")
            continue
        note = "" if s.tested else "untested"
        if scores.analysed_rules is not None and rule not in scores.analysed_rules:
            note = "no such rule in the analysed tree yet" + (f"; {note}" if note else "")
        precision = _pct(s.precision) if s.tested or s.fp else ("-" if s.precision is None else f"({s.precision:.2f})")
        recall = _pct(s.recall) if s.tested else ("-" if s.recall is None else f"({s.recall:.2f})")
        lines.append(f"| `{rule}` | {precision} | {recall} | {s.tp} | {s.fp} | {s.fn} | {s.positives} | "
                     f"{s.lookalikes} | {_figures(s)} | {note} |")
    rate = scores.healthy_false_alarm_rate
    lines += ["", f"- incidents: {scores.incidents} ({scores.healthy} healthy)",
              f"- healthy false-alarm rate (any warning or worse on a healthy incident): {_pct(rate)}"
              f" ({scores.healthy_alarms}/{scores.healthy})",
              f"- first finding is the expected one: {_pct(scores.answer_first / scores.answer_cases if scores.answer_cases else None)}"
              f" ({scores.answer_first}/{scores.answer_cases})",
              f"- culprit named by the first finding: {_pct(scores.culprit_first_rate)}"
              f" ({scores.culprit_first}/{scores.culprit_cases})",
              f"- per-rebalance verdict agreement: {_pct(scores.verdict_agreement)}"
              f" ({scores.verdict_agree}/{scores.rebalances}); operation agreement: "
              f"{_pct(scores.operation_agree / scores.rebalances if scores.rebalances else None)}"]
    if scores.wrong_figures:
        lines.append(f"- figures that disagree with the truth: {len(scores.wrong_figures)} (e.g. {scores.wrong_figures[0]})")
    if scores.errors:
        lines.append(f"- analysis errors: {len(scores.errors)} (e.g. {scores.errors[0]})")
    return "\n".join(lines)


def git_commit(path: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def rules_of(code: Path) -> set[str] | None:
    """The rule ids of the code tree ``code`` (a subprocess: the judge reads the list, not the rules)."""
    env = dict(os.environ, PYTHONPATH=str(code))
    run = subprocess.run([sys.executable, "-c", "from rebalance_doctor.rules import RULE_IDS; print(*RULE_IDS)"],
                         capture_output=True, text=True, env=env, timeout=120, cwd=str(code))
    return set(run.stdout.split()) if run.returncode == 0 else None
