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

from pathlib import Path

from ..core.toml import load_toml
from ..judge.truth import ExpectedFinding, Truth, from_toml
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
    figures_of(truth, scenario.name, group, [{"action": a.action, "target": a.target, "detail": a.detail,
                                              "wall": a.wall} for a in actions],
               {app.host: app.config for app in scenario.apps})
    expected = {f.rule for f in truth.findings}
    truth.must_not_fire = [r for r in RULE_IDS if r not in ("healthy-operation",) + ADVISORIES
                           and r not in expected and r not in truth.may_fire]
    return truth


# Scenarios whose action is a pause of one process past its session timeout: the finding that names the loss.
PAUSE_RULES = {"session-timeout-pause": "heartbeat-expiration"}
# Scenarios whose action is a stall of one process's poll loop past max.poll.interval.ms.
STALL_RULES = {"poll-timeout": "poll-timeout", "kip848-poll-timeout": "poll-timeout",
               "librdkafka-poll-timeout": "poll-timeout", "kafka-python-poll-timeout": "poll-timeout",
               "aiokafka-poll-timeout": "poll-timeout"}
# Scenarios whose action is a static member stopped and started again past its session timeout.
AWAY_RULES = {"static-member-timeout": "static-member-timeout"}
# From a process's start to its first line (the JVM's or interpreter's start-up), at most: a measured time away
# ends at the new process's first line, a measured poll loop at the first line of its return.
STARTUP_MS = 5000


def figures_of(truth: Truth, scenario: str, group: str, actions: list[dict], configs: dict[str, dict]) -> None:
    """The figures the lab's actions prove (``truth.figure``): for a pause, the pause's length from its SIGSTOP to
    its SIGCONT, the paused process's session.timeout.ms as the lab configured it, and one removal per pause longer
    than it. ``actions``: dicts with action, target and wall (seconds); ``configs``: host -> its config."""
    if scenario in STALL_RULES:
        return _stall_figures(truth, STALL_RULES[scenario], group, actions, configs)
    if scenario in AWAY_RULES:
        return _away_figures(truth, AWAY_RULES[scenario], group, actions, configs)
    rule = PAUSE_RULES.get(scenario)
    if rule is None:
        return
    pauses, started = [], {}
    for a in actions:
        if a["action"] == "pause":
            started[a["target"]] = a["wall"]
        elif a["action"] == "resume" and a["target"] in started:
            pauses.append((a["target"], (a["wall"] - started.pop(a["target"])) * 1000))
    if not pauses:
        return
    host = pauses[0][0]
    config = configs.get(host, {})
    session, heartbeat = int(config.get("session.timeout.ms", 0)), int(config.get("heartbeat.interval.ms", 0))
    if not session:
        return
    longest = max(ms for _, ms in pauses)
    truth.figure(rule, group, "removals", sum(1 for _, ms in pauses if ms > session),
                 why="one removal per pause longer than session.timeout.ms")
    truth.figure(rule, group, "session.timeout.ms", session)
    truth.figure(rule, group, "longest_silence_ms", low=round(longest) - 1000, high=round(longest + heartbeat) + 1000,
                 why=f"{host} paused {longest:.0f} ms (SIGSTOP to SIGCONT), heartbeat.interval.ms={heartbeat}")


def _stall_figures(truth: Truth, rule: str, group: str, actions: list[dict], configs: dict[str, dict]) -> None:
    """One poll timeout per stall longer than max.poll.interval.ms; the interval as configured; the longest loop at
    least the stall (the loop also did its other work), at most STARTUP_MS more."""
    stalls = [(a["target"], float(a.get("detail", "0").split()[0])) for a in actions if a["action"] == "stall"
              and a.get("detail", "").split()[:1] and a["detail"].split()[0].isdigit()]
    if not stalls:
        return
    host = stalls[0][0]
    interval = int(configs.get(host, {}).get("max.poll.interval.ms", 0))
    if not interval:
        return
    longest = max(ms for _, ms in stalls)
    truth.figure(rule, group, "poll_timeouts", sum(1 for _, ms in stalls if ms > interval),
                 why="one poll timeout per stall longer than max.poll.interval.ms")
    truth.figure(rule, group, "max.poll.interval.ms", interval)
    truth.figure(rule, group, "poll_loop_ms", low=round(longest) - 1000, high=round(longest) + STARTUP_MS,
                 why=f"{host}'s poll loop stalled {longest:.0f} ms")


def _away_figures(truth: Truth, rule: str, group: str, actions: list[dict], configs: dict[str, dict]) -> None:
    """A static member stopped and started again: one removal when away longer than session.timeout.ms, the timeout
    as configured, the time away from its stop to its start (at most STARTUP_MS more to its first line)."""
    stopped, aways = {}, []
    for a in actions:
        if a["action"] == "stop":
            stopped[a["target"]] = a["wall"]
        elif a["action"] == "start" and a["target"] in stopped:
            aways.append((a["target"], (a["wall"] - stopped.pop(a["target"])) * 1000))
    if not aways:
        return
    host = aways[0][0]
    session = int(configs.get(host, {}).get("session.timeout.ms", 0))
    if not session:
        return
    longest = max(ms for _, ms in aways)
    truth.figure(rule, group, "removals", sum(1 for _, ms in aways if ms > session),
                 why="one removal per time away longer than session.timeout.ms")
    truth.figure(rule, group, "session.timeout.ms", session)
    truth.figure(rule, group, "time_away_ms", low=round(longest) - 1000, high=round(longest) + STARTUP_MS,
                 why=f"{host} stopped and started again {longest:.0f} ms later")


def refresh(directory: Path) -> bool:
    """Add the figures a recorded incident's lab.toml proves to its expected.toml (recorded before truths carried
    figures); True when it changed."""
    lab = load_toml(directory / "lab.toml")
    truth = from_toml(load_toml(directory / "expected.toml"))
    truth.figures = []
    actions = [{"action": a["action"], "target": a["target"], "detail": a.get("detail", ""),
                "wall": dt.datetime.fromisoformat(a["time"]).timestamp()} for a in lab.get("actions", [])]
    group = next((f.group for f in truth.findings), lab.get("group", ""))
    figures_of(truth, lab["scenario"], group, actions, {p["host"]: p.get("config", {}) for p in lab.get("process", [])})
    text = truth.to_toml()
    if text == (directory / "expected.toml").read_text(encoding="utf-8"):
        return False
    (directory / "expected.toml").write_text(text, encoding="utf-8")
    return True


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
