"""The ground truth of an incident (the contract of /work/notes/TRUTH.md) and its expected.toml.

The truth says what the scenario did, not what any rule would conclude: the findings that must be
reported (rule, group, severity, whether it is the group's first finding, the culprit, key
evidence lines), the rules that must not fire, advisories the configuration makes legitimate
(``may_fire``, not scored), and the verdict and operation of every rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("info", "warning", "critical")
VERDICTS = ("expected", "harmful")


@dataclass
class ExpectedFinding:
    rule: str
    group: str
    severity: str = "warning"
    first: bool = False
    culprit: dict[str, str] | None = None
    evidence: list[str] = field(default_factory=list)     # "path:line", filled when the files are written
    evidence_records: list = field(default_factory=list)  # the Records behind them (model side)


@dataclass
class ExpectedFigure:
    """A figure a finding must state right (rules/figures.py), as the source knows it: exactly `value`, or within
    [low, high] when the logs can only bound it (a silence measured from lines the member happened to write)."""

    rule: str
    group: str
    name: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    why: str = ""

    def agrees(self, said) -> bool:
        if said is None:
            return True          # "not in the logs" is no wrong figure (the scorer counts it apart)
        if self.value is not None:
            return abs(float(said) - float(self.value)) < 0.5
        return (self.low is None or said >= self.low) and (self.high is None or said <= self.high)

    def want(self) -> str:
        if self.value is not None:
            return f"{self.value:g}"
        return f"{'' if self.low is None else f'{self.low:g}'}..{'' if self.high is None else f'{self.high:g}'}"


@dataclass
class ExpectedRebalance:
    group: str
    generation: int
    verdict: str
    operation: str


@dataclass
class Truth:
    scenario: str
    seed: int
    kafka: str
    protocol: str
    healthy: bool
    story: str
    findings: list[ExpectedFinding] = field(default_factory=list)
    must_not_fire: list[str] = field(default_factory=list)
    may_fire: list[str] = field(default_factory=list)
    rebalances: list[ExpectedRebalance] = field(default_factory=list)
    resembles: list[str] = field(default_factory=list)    # rules a healthy scenario looks like (look-alikes)
    unjudged: list[str] = field(default_factory=list)     # groups the truth makes no claim about (Kafka decides)
    figures: list[ExpectedFigure] = field(default_factory=list)   # the facts the source produced

    def figure(self, rule: str, group: str, name: str, value=None, low=None, high=None, why: str = "") -> None:
        self.figures.append(ExpectedFigure(rule, group, name, value, low, high, why))

    def expected_rules(self) -> set[str]:
        return {f.rule for f in self.findings}

    def to_toml(self) -> str:
        out = [f"scenario = {_q(self.scenario)}", f"seed = {self.seed}", f"kafka = {_q(self.kafka)}",
               f"protocol = {_q(self.protocol)}", f"healthy = {'true' if self.healthy else 'false'}",
               f"story = {_q(self.story)}", f"must_not_fire = {_list(self.must_not_fire)}",
               f"may_fire = {_list(self.may_fire)}", f"resembles = {_list(self.resembles)}"]
        if self.unjudged:
            out.append(f"unjudged = {_list(self.unjudged)}")
        for f in self.findings:
            out += ["", "[[finding]]", f"rule = {_q(f.rule)}", f"group = {_q(f.group)}",
                    f"severity = {_q(f.severity)}", f"first = {'true' if f.first else 'false'}"]
            if f.culprit:
                out.append("culprit = { " + ", ".join(f"{k} = {_q(v)}" for k, v in f.culprit.items()) + " }")
            if f.evidence:
                out.append(f"evidence = {_list(f.evidence)}")
        for x in self.figures:
            out += ["", "[[figure]]", f"rule = {_q(x.rule)}", f"group = {_q(x.group)}", f"name = {_q(x.name)}"]
            out += [f"{k} = {_num(v)}" for k, v in (("value", x.value), ("low", x.low), ("high", x.high))
                    if v is not None]
            if x.why:
                out.append(f"why = {_q(x.why)}")
        for r in self.rebalances:
            out += ["", "[[rebalance]]", f"group = {_q(r.group)}", f"generation = {r.generation}",
                    f"verdict = {_q(r.verdict)}", f"operation = {_q(r.operation)}"]
        return "\n".join(out) + "\n"


def from_toml(data: dict) -> Truth:
    truth = Truth(data["scenario"], int(data["seed"]), data["kafka"], data["protocol"], bool(data["healthy"]),
                  data.get("story", ""), must_not_fire=list(data.get("must_not_fire", [])),
                  may_fire=list(data.get("may_fire", [])), resembles=list(data.get("resembles", [])),
                  unjudged=list(data.get("unjudged", [])))
    for f in data.get("finding", []):
        truth.findings.append(ExpectedFinding(f["rule"], f["group"], f.get("severity", "warning"),
                                              bool(f.get("first", False)), f.get("culprit"),
                                              list(f.get("evidence", []))))
    for x in data.get("figure", []):
        truth.figure(x["rule"], x["group"], x["name"], x.get("value"), x.get("low"), x.get("high"), x.get("why", ""))
    for r in data.get("rebalance", []):
        truth.rebalances.append(ExpectedRebalance(r["group"], int(r["generation"]), r["verdict"], r["operation"]))
    return truth


def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _num(value) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}"


def _list(items) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"
