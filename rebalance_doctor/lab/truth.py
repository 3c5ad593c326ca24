"""The truth of a recorded incident, written from what the lab did: never from the logs, never from the tool.

``expected.toml`` (the one truth format the simulator writes too) says which findings must be reported,
for which group, with the culprit being the host the lab drove the fault at; ``lab.toml`` says what
was run (release, processes, configs) and every action with its wall-clock time. Which generation a
removal lands in is Kafka's decision, not the script's, so the lab's truth names no per-rebalance
verdicts: it leaves out what the script cannot guarantee.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ..judge.truth import ExpectedFinding, Truth
from ..rules import RULE_IDS
from .scenario import Scenario

# The advisories a scenario's configuration may legitimately raise are named per scenario (may_fire).
ADVISORIES = ("eager-assignor", "assignment-skew", "config-heartbeat-ratio")
PROTOCOLS = {"classic": "classic", "client": "classic", "kip848": "consumer", "streams": "streams",
             "streams-group": "streams-group", "connect": "connect", "share": "share"}


@dataclass
class Action:
    """One thing the lab did: when (wall clock), what, to whom."""

    at: float            # seconds since the scenario's start
    wall: float          # time.time() when it was done
    action: str
    target: str
    detail: str = ""

    def to_toml(self) -> str:
        stamp = dt.datetime.fromtimestamp(self.wall, dt.timezone.utc).isoformat(timespec="milliseconds")
        return (f'{{ at = {self.at:.3f}, time = "{stamp}", action = "{self.action}", target = "{self.target}"'
                + (f', detail = "{self.detail}"' if self.detail else "") + " }")


def truth_of(scenario: Scenario, version: str, actions: list[Action]) -> Truth:
    group = scenario.group if scenario.group_named else ""
    truth = Truth(scenario=scenario.name, seed=0, kafka=version, protocol=PROTOCOLS[scenario.family],
                  healthy=scenario.healthy, story=scenario.summary, may_fire=list(scenario.may_fire),
                  resembles=list(scenario.resembles), unjudged=list(scenario.unjudged))
    done_to = {a.target for a in actions}
    for expect in scenario.findings:
        if expect.culprit and expect.culprit not in done_to:
            # the script names a culprit the run never reached: the truth claims nothing about it
            continue
        truth.findings.append(ExpectedFinding(expect.rule, expect.group or group, expect.severity, expect.first,
                                              {"host": expect.culprit} if expect.culprit else None))
    if scenario.healthy and not any(f.group == group for f in truth.findings):
        truth.findings.append(ExpectedFinding("healthy-operation", group, "info", True))
    expected = {f.rule for f in truth.findings}
    truth.must_not_fire = [r for r in RULE_IDS if r not in ("healthy-operation",) + ADVISORIES
                           and r not in expected and r not in truth.may_fire]
    return truth


def lab_toml(scenario: Scenario, version: str, actions: list[Action], started: float, seconds: float,
             hosts: dict[str, str]) -> str:
    def q(text) -> str:
        return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'

    out = [f"scenario = {q(scenario.name)}", f"family = {q(scenario.family)}", f"kafka = {q(version)}",
           f"summary = {q(scenario.summary)}", f"brokers = {scenario.brokers}",
           f"started = {q(dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec='milliseconds'))}",
           f"seconds = {seconds:.1f}", f"group = {q(scenario.group)}", f"topic = {q(scenario.topic)}",
           f"partitions = {scenario.partitions}", "", "# what the lab did, in order (times are UTC)", "actions = ["]
    out += [f"  {a.to_toml()}," for a in actions]
    out += ["]", ""]
    if scenario.broker_config:
        out += ["[broker_config]"] + [f"{q(k)} = {q(v)}" for k, v in scenario.broker_config.items()] + [""]
    for app in scenario.apps:
        out += ["[[process]]", f"host = {q(app.host)}", f"kind = {q(app.kind)}", f"log = {q(hosts.get(app.host, ''))}",
                f"log_level = {q(app.log_level)}",
                "config = { " + ", ".join(f"{q(k)} = {q(v)}" for k, v in sorted(app.config.items())) + " }", ""]
    return "\n".join(out)
