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
    for r in data.get("rebalance", []):
        truth.rebalances.append(ExpectedRebalance(r["group"], int(r["generation"]), r["verdict"], r["operation"]))
    return truth


def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _list(items) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"
