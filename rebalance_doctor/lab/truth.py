"""The truth of a recorded incident, written from what the lab did: never from the logs, never from the tool.

``expected.toml`` (the one truth format the simulator writes too) says which findings must be reported,
for which group, with the culprit being the host the lab drove the fault at; ``lab.toml`` says what
was run (release, processes, configs) and every action with its wall-clock time. Which generation a
removal lands in is Kafka's decision, not the script's, so the lab's truth names no per-rebalance
verdicts: it leaves out what the script cannot guarantee.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass

from pathlib import Path

from ..core.toml import load_toml
from ..judge.truth import ExpectedFinding, Truth, from_toml
from ..rules import RULE_IDS
from .releases import version_tuple
from .scenario import Scenario

PROBING_INTERVAL_MS = 600000            # Kafka Streams' probing.rebalance.interval.ms default
DEFAULT_MESSAGE_MAX_BYTES = 1048588     # Kafka's message.max.bytes: 1 MiB + a record batch's 12-byte log overhead

# The advisories a scenario's configuration may legitimately raise are named per scenario (may_fire).
ADVISORIES = ("eager-assignor", "assignment-skew", "config-heartbeat-ratio")
# Info notes that are part of a healthy operation and come after its note (a rolling upgrade's version probing).
PART_OF_HEALTHY = ("version-probing",)
PROTOCOLS = {"classic": "classic", "client": "classic", "kip848": "consumer", "migration": "consumer", "streams": "streams",
             "streams-group": "streams-group", "connect": "connect", "share": "share",
             "mirror": "classic"}


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


def groups_of(scenario: Scenario) -> dict[str, set[str]]:
    """The consumer groups the scenario's processes join (the scenario's own first), each with its processes' hosts;
    the scenario's group alone (every process) when they join one, or when no line names it."""
    group = scenario.group if scenario.group_named else ""
    joined: dict[str, set[str]] = {group: set()}
    for app in scenario.apps:
        own = app.config.get("group.id")
        if scenario.group_named and own and own != scenario.group and app.kind == "java-consumer":
            joined.setdefault(own, set()).add(app.host)
        else:
            joined[group].add(app.host)
    return joined


def truth_of(scenario: Scenario, version: str, actions: list[Action], cluster_ids: dict[str, str] | None = None,
             configs: dict[str, dict] | None = None) -> Truth:
    """``cluster_ids``: in a scenario of several clusters, each alias's cluster id (the lab formatted its storage with
    it): its groups are keyed by it (``ID/orders``), as the analysis keys the groups of clusters it has no names for.
    ``configs``: each process's configuration as the run started it (default: the scenario's)."""
    group = scenario.group if scenario.group_named else ""
    truth = Truth(scenario=scenario.name, seed=0, kafka=version, protocol=PROTOCOLS[scenario.family],
                  healthy=scenario.healthy, story=scenario.summary, may_fire=list(scenario.may_fire),
                  resembles=list(scenario.resembles), unjudged=list(scenario.unjudged))
    done_to = {a.target for a in actions}
    # "coordinator": the broker the lab found coordinating the group when it restarted it (Kafka decides which)
    coordinator = next((a.target for a in actions if a.action == "stop" and a.detail == "SIGTERM (broker)"), None)
    for expect in scenario.findings:
        if expect.culprit == "coordinator":
            expect = dataclasses.replace(expect, culprit=coordinator)
        if expect.culprit and expect.culprit not in done_to:
            # the script names a culprit the run never reached: the truth claims nothing about it
            continue
        name = expect.group or group
        if expect.cluster:
            name = f"{(cluster_ids or {})[expect.cluster]}/{name}"
        truth.findings.append(ExpectedFinding(expect.rule, name, expect.severity, expect.first,
                                              {"host": expect.culprit} if expect.culprit else None))
    members = groups_of(scenario)
    if scenario.healthy:    # every group the scenario runs was operated healthily; an advisory may come with it
        for name in members:
            if not any(f.group == name and f.rule not in ADVISORIES + PART_OF_HEALTHY for f in truth.findings):
                truth.findings.append(ExpectedFinding("healthy-operation", name, "info", True))
    if scenario.clusters and truth.findings:    # keyed by its cluster: the group whose figures are proved
        members = {truth.findings[0].group: members.get(group, set())}
    every = [{"action": a.action, "target": a.target, "detail": a.detail, "wall": a.wall} for a in actions]
    processes = {app.host for app in scenario.apps}
    for name, hosts in members.items():    # each group's figures from what was done to its processes (or brokers)
        figures_of(truth, name, [a for a in every if a["target"] in hosts or a["target"] not in processes],
                   configs or {app.host: app.config for app in scenario.apps}, scenario.broker_config,
                   scenario.partitions)
    expected = {f.rule for f in truth.findings}
    truth.must_not_fire = [r for r in RULE_IDS if r not in ("healthy-operation",) + ADVISORIES
                           and r not in expected and r not in truth.may_fire]
    return truth


# From a process's start to its first line (the JVM's or interpreter's start-up), at most: a measured time away
# ends at the new process's first line, a measured poll loop at the first line of its return.
STARTUP_MS = 5000


def figures_of(truth: Truth, group: str, actions: list[dict], configs: dict[str, dict],
               broker: dict | None = None, partitions: int | None = None) -> None:
    """The figures the lab's actions prove (``truth.figure``), for the expected first finding the action drives:
    - a pause (SIGSTOP to SIGCONT) behind ``heartbeat-expiration``: one removal per pause longer than
      session.timeout.ms, the timeout as configured, the longest silence (the pause, plus at most one heartbeat);
    - a stall of the poll loop behind ``poll-timeout``: one poll timeout per stall longer than max.poll.interval.ms,
      the interval as configured, the longest loop (at least the stall, at most STARTUP_MS more);
    - a stop and a start behind ``static-member-timeout``: one removal per time away longer than session.timeout.ms,
      the timeout as configured, the time away (at most STARTUP_MS more to its first line).
    - stops and starts behind ``healthy-operation``: the members restarted (said when the operation is a restart);
      StreamThreads added to running instances: the members that joined;
    - kills of the culprit behind ``membership-flapping``: one departure of the culprit's members per kill;
    - a pause behind ``kip848-fencing``: one fencing of the culprit per pause longer than the broker's
      group.consumer.session.timeout.ms, one member fenced;
    - the consumers of an eager group behind ``eager-assignor``: every one of them revoked (each rebalance stops all);
    - a stall of the culprit's poll loop behind ``rebalance-stall``: one wait per rebalance another process started
      during it, the longest as long as the stall outlasted that start, the rebalance timeout as configured;
    - range-assigned topics of ``partitions`` partitions each behind ``assignment-skew``: the members holding
      none (range gives every topic's partitions to the same first members), the partitions in all;
    - restarts of the coordinator's broker behind ``coordinator-churn``: a move away per restart, and at most one back;
    - an application's assignor that looks the load up for ``orders.assignor.lookup.ms`` behind ``leader-churn``:
      the longest assignment of a removed leader that long, and at most a second more;
    - a worker killed behind ``connect-scheduled-delay``: the delay as configured, and its work held unassigned
      at least that long and at most a session timeout more (the departure is noticed within it).
    A setting the process was not configured with (the library's default, or the broker's under KIP-848) proves
    nothing. ``actions``: dicts with action, target, detail and wall (seconds); ``configs``: host -> its config;
    ``broker``: the brokers' configuration."""
    firsts = {f.rule for f in truth.findings if f.first and f.group == group}
    if "heartbeat-expiration" in firsts:
        spans = _spans(actions, "pause", "resume")
        _figures(truth, "heartbeat-expiration", group, spans, configs, "session.timeout.ms", "removals",
                 "one removal per pause longer than session.timeout.ms", "longest_silence_ms",
                 lambda host, ms, config: (round(ms) - 1000, round(ms + int(config.get("heartbeat.interval.ms", 0)))
                                           + 1000, f"{host} paused {ms:.0f} ms (SIGSTOP to SIGCONT), "
                                                   f"heartbeat.interval.ms={config.get('heartbeat.interval.ms', 0)}"))
    if "poll-timeout" in firsts:
        spans = [(a["target"], float(a["detail"].split()[0])) for a in actions
                 if a["action"] == "stall" and a.get("detail", "").split()[:1] and a["detail"].split()[0].isdigit()]
        _figures(truth, "poll-timeout", group, spans, configs, "max.poll.interval.ms", "poll_timeouts",
                 "one poll timeout per stall longer than max.poll.interval.ms", "poll_loop_ms",
                 lambda host, ms, _: (round(ms) - 1000, round(ms) + STARTUP_MS,
                                      f"{host}'s poll loop stalled {ms:.0f} ms"))
    if "static-member-timeout" in firsts:
        spans = _spans(actions, "stop", "start")
        _figures(truth, "static-member-timeout", group, spans, configs, "session.timeout.ms", "removals",
                 "one removal per time away longer than session.timeout.ms", "time_away_ms",
                 lambda host, ms, _: (round(ms) - 1000, round(ms) + STARTUP_MS,
                                      f"{host} stopped and started again {ms:.0f} ms later"))
    if "sync-group-error-loop" in firsts and version_tuple(truth.kafka) >= (4, 3, 1):
        # 4.3.1's CoordinatorRuntime states the limit the assignment's record broke: the broker's message.max.bytes
        limit = int((broker or {}).get("message.max.bytes") or DEFAULT_MESSAGE_MAX_BYTES)
        truth.figure("sync-group-error-loop", group, "max_batch_size", limit,
                     why=f"the broker's message.max.bytes ({limit}: {'configured' if broker and broker.get('message.max.bytes') else 'the default'})")
    if "leader-churn" in firsts:
        # an application's own assignor (LabAssignor) configured to look the load up that long in every assignment
        lookups = {int(c["orders.assignor.lookup.ms"]) for c in configs.values() if c.get("orders.assignor.lookup.ms")}
        if len(lookups) == 1:
            ms = lookups.pop()
            truth.figure("leader-churn", group, "assignment_ms", low=ms, high=ms + 1000,
                         why=f"the assignor (LabAssignor) looks up the load for {ms} ms in every assignment")
    # A Connect worker the lab restarts is a member of the workers' group; the scenario's group is the connector's
    # consumers, whose members are its tasks, and which of them move is Connect's decision: nothing proved there.
    if "healthy-operation" in firsts and truth.protocol != "connect":
        # the group's members are the client processes: a broker stopped and started again is no member
        own = [a for a in actions if a["target"] in configs]
        restarted = {target for target, _ in _spans(own, "stop", "start")}
        if restarted:
            truth.figure("healthy-operation", group, "restarted", len(restarted),
                         why=f"the lab stopped and started {', '.join(sorted(restarted))}")
        added = [a for a in own if a["action"] == "add-thread"]
        if added and not restarted:
            truth.figure("healthy-operation", group, "joined", len(added),
                         why=f"the lab had {len(added)} StreamThread(s) added (KafkaStreams#addStreamThread)")
        gone = {a["target"] for a in own if a["action"] == "stop"} - restarted
        if gone:
            truth.figure("healthy-operation", group, "left", len(gone),
                         why=f"the lab stopped {', '.join(sorted(gone))} and did not start them again")
    culprits = {f.rule: (f.culprit or {}).get("host") for f in truth.findings if f.first and f.group == group}
    if culprits.get("membership-flapping"):
        host = culprits["membership-flapping"]
        kills = sum(1 for a in actions if a["action"] == "kill" and a["target"] == host)
        if kills:
            # a member's label is client@host: every member the culprit's restarts made counts
            truth.figure("membership-flapping", group, f"departures.*@{host}", kills,
                         why=f"{host} was killed {kills} time(s); each kill is one departure")
    if culprits.get("kip848-fencing"):
        host = culprits["kip848-fencing"]
        limit = int((broker or {}).get("group.consumer.session.timeout.ms") or 0)
        spans = [ms for target, ms in _spans(actions, "pause", "resume") if target == host]
        if limit and spans:
            fenced = sum(1 for ms in spans if ms > limit)
            truth.figure("kip848-fencing", group, f"fencings.*@{host}", fenced,
                         why="one fencing per pause longer than group.consumer.session.timeout.ms")
            truth.figure("kip848-fencing", group, "members", 1 if fenced else 0, why=f"only {host} was paused")
    if any(f.rule == "eager-assignor" and f.group == group for f in truth.findings):
        consumers = sorted(host for host, config in configs.items() if config.get("group.id") == group)
        if consumers:
            truth.figure("eager-assignor", group, "members", len(consumers),
                         why=f"every member of an eager group revokes at every rebalance: {', '.join(consumers)}")
    if any(f.rule == "assignment-skew" and f.group == group for f in truth.findings) and partitions:
        consumers = [c for c in configs.values() if c.get("group.id") == group]
        topics = {t for c in consumers for t in str(c.get("lab.topic", "")).split(",") if t}
        ranged = consumers and all("RangeAssignor" in str(c.get("partition.assignment.strategy", "")) for c in consumers)
        if ranged and topics:
            truth.figure("assignment-skew", group, "idle", max(0, len(consumers) - partitions),
                         why=f"range gives each of {len(topics)} topics' {partitions} partitions to the same first "
                             f"{min(partitions, len(consumers))} of {len(consumers)} members")
            truth.figure("assignment-skew", group, "partitions", len(topics) * partitions,
                         why=f"{len(topics)} topics of {partitions} partitions")
    if culprits.get("coordinator-churn"):
        host = culprits["coordinator-churn"]
        restarts = sum(1 for a in actions if a["action"] == "stop" and a["target"] == host
                       and a.get("detail") == "SIGTERM (broker)")
        if restarts:
            # each restart of the coordinator's broker moves the group away; the preferred leader election may
            # bring it back before the next (or not within the logs)
            truth.figure("coordinator-churn", group, "moves", low=restarts, high=2 * restarts,
                         why=f"{host}, the group's coordinator, was restarted {restarts} time(s)")
    if culprits.get("rebalance-stall"):
        host = culprits["rebalance-stall"]
        config = configs.get(host, {})
        stalls = [(a["wall"], float(a["detail"].split()[0])) for a in actions
                  if a["action"] == "stall" and a["target"] == host and a.get("detail", "").split()[:1]
                  and a["detail"].split()[0].isdigit()]
        # what started each rebalance the stalled member was late for: another process leaving or joining meanwhile
        waits = []
        for began, ms in stalls:
            trigger = next((a["wall"] for a in actions if a["action"] in ("stop", "kill", "start")
                            and a["target"] != host and began <= a["wall"] < began + ms / 1000), None)
            if trigger is not None:
                waits.append((began + ms / 1000 - trigger) * 1000)
        if waits:
            truth.figure("rebalance-stall", group, "stalls", len(waits),
                         why=f"each rebalance started while {host}'s poll loop stalled waits for its next poll()")
            # the stall begins when the loop reads the command (within a 500 ms poll) and ends with the next poll()
            truth.figure("rebalance-stall", group, "longest_wait_ms", low=round(max(waits)) - 1000,
                         high=round(max(waits)) + 1500,
                         why=f"{host}'s stall outlasted the rebalance's start by {max(waits):.0f} ms")
        if config.get("max.poll.interval.ms"):
            truth.figure("rebalance-stall", group, "max.poll.interval.ms", int(config["max.poll.interval.ms"]))
    if culprits.get("connect-scheduled-delay"):
        host = culprits["connect-scheduled-delay"]
        config = configs.get(host, {})
        delay = int(config.get("scheduled.rebalance.max.delay.ms") or 0)
        session = int(config.get("session.timeout.ms") or 0)
        if delay and any(a["action"] == "kill" and a["target"] == host for a in actions):
            truth.figure("connect-scheduled-delay", group, "scheduled.rebalance.max.delay.ms", delay)
            if session:
                truth.figure("connect-scheduled-delay", group, "held_ms", low=delay, high=delay + session,
                             why=f"{host} was killed; its work waits the delay, noticed within session.timeout.ms")
    if culprits.get("probing-rebalance-cadence"):
        # the restoring instance's warmups never catch up: probed every interval from its join to the end
        host = culprits["probing-rebalance-cadence"]
        joined = next((a["wall"] for a in actions if a["action"] == "start" and a["target"] == host), None)
        end = next((a["wall"] for a in actions if a["action"] == "collect"), None)
        interval = int(configs.get(host, {}).get("probing.rebalance.interval.ms") or PROBING_INTERVAL_MS)
        if joined is not None and end is not None and (end - joined) * 1000 >= 3 * interval:
            truth.figure("probing-rebalance-cadence", group, "span_ms", low=2 * interval,
                         high=round((end - joined) * 1000),
                         why=f"{host} joined {end - joined:.0f} s before the end and its warmups never caught up: "
                             f"probed every {interval} ms from its join to the end")


def _spans(actions: list[dict], begin: str, end: str) -> list[tuple[str, float]]:
    """(target, milliseconds) from each ``begin`` action to the next ``end`` action on the same target."""
    begun, spans = {}, []
    for a in actions:
        if a["action"] == begin:
            begun[a["target"]] = a["wall"]
        elif a["action"] == end and a["target"] in begun:
            spans.append((a["target"], (a["wall"] - begun.pop(a["target"])) * 1000))
    return spans


def _figures(truth: Truth, rule: str, group: str, spans: list[tuple[str, float]], configs: dict[str, dict],
             setting: str, count: str, count_why: str, longest_name: str, bounds) -> None:
    """How many spans exceeded ``setting`` (as the first span's process was configured), the setting, and the
    longest span within ``bounds(host, ms, config)`` -> (low, high, why)."""
    if not spans:
        return
    host = spans[0][0]
    config = configs.get(host, {})
    limit = int(config.get(setting) or 0)
    if not limit:
        return
    longest = max(ms for _, ms in spans)
    truth.figure(rule, group, count, sum(1 for _, ms in spans if ms > limit), why=count_why)
    truth.figure(rule, group, setting, limit)
    low, high, why = bounds(host, longest, config)
    truth.figure(rule, group, longest_name, low=low, high=high, why=why)


def retruth(directory: Path) -> bool:
    """Write a recorded incident's expected.toml again from its lab.toml (what the lab did) and its scenario as
    scenarios.toml now states it (what must be found, what it resembles); True when it changed. What Kafka
    did is not re-decided: the actions, times and configs are the recording's."""
    from .scenario import load

    lab = load_toml(directory / "lab.toml")
    scenario = load(lab["scenario"])
    actions = [Action(float(a["at"]), dt.datetime.fromisoformat(a["time"]).timestamp(), a["action"], a["target"],
                      a.get("detail", "")) for a in lab.get("actions", [])]
    configs = {p["host"]: p.get("config", {}) for p in lab.get("process", [])}
    text = truth_of(scenario, lab["kafka"], actions, dict(lab.get("clusters", {})) or None, configs).to_toml()
    if text == (directory / "expected.toml").read_text(encoding="utf-8"):
        return False
    (directory / "expected.toml").write_text(text, encoding="utf-8")
    return True


def lab_toml(scenario: Scenario, version: str, actions: list[Action], started: float, seconds: float,
             hosts: dict[str, str], configs: dict[str, dict] | None = None, cluster_ids: dict[str, str] | None = None,
             mirror: str | None = None) -> str:
    """``configs``: each process's configuration as first started (a step may start it again with another);
    ``cluster_ids``: each alias's cluster id (several clusters); ``mirror``: the release MirrorMaker 2 ran."""
    def q(text) -> str:
        return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'

    out = [f"scenario = {q(scenario.name)}", f"family = {q(scenario.family)}", f"kafka = {q(version)}",
           f"summary = {q(scenario.summary)}", f"brokers = {scenario.brokers}",
           f"started = {q(dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec='milliseconds'))}",
           f"seconds = {seconds:.1f}", f"group = {q(scenario.group)}", f"topic = {q(scenario.topic)}",
           f"partitions = {scenario.partitions}"]
    if not scenario.brokers_collected:
        out.append("brokers_collected = false   # the brokers ran; their logs are not among the recorded files")
    if mirror:
        out.append(f"mirror_maker = {q(mirror)}")
    out += ["", "# what the lab did, in order (times are UTC)", "actions = ["]
    out += [f"  {a.to_toml()}," for a in actions]
    out += ["]", ""]
    if scenario.broker_config:
        out += ["[broker_config]"] + [f"{q(k)} = {q(v)}" for k, v in scenario.broker_config.items()] + [""]
    if cluster_ids:
        out += ["# each cluster's alias (its directory) and the cluster id its storage was formatted with", "[clusters]"]
        out += [f"{q(alias)} = {q(cid)}" for alias, cid in cluster_ids.items()] + [""]
    for app in scenario.apps:
        out += ["[[process]]", f"host = {q(app.host)}", f"kind = {q(app.kind)}",
                *([f"cluster = {q(app.cluster)}"] if app.cluster else []), f"log = {q(hosts.get(app.host, ''))}",
                f"log_level = {q(app.log_level)}",
                *([] if app.collected else ["collected = false   # it ran; its log is not among the recorded files"]),
                "config = { " + ", ".join(f"{q(k)} = {q(v)}" for k, v in sorted((configs or {}).get(app.host, app.config).items()))
                + " }", ""]
    return "\n".join(out)
