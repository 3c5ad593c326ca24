"""A lab scenario as data (scenarios.toml): the processes, the actions driven at them, what must be found."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..core.toml import DataFileError, load_toml
from .apps import App
from .errors import USAGE, LabError

HERE = Path(__file__).resolve().parent

# action -> the options it takes (seconds: how long; down: seconds between stop and start; times/every:
# a crash loop's restarts and their period; targets/gap: a rolling restart's processes and spacing; config:
# what a process (re)starts with from then on, e.g. a rolling upgrade to group.protocol=consumer)
ACTIONS = {
    "start": ("config",), "stop": (), "kill": (), "restart": ("down", "config"), "pause": ("seconds",), "stall": ("seconds",),
    "throw": (), "crash-loop": ("times", "every", "down"), "rolling-restart": ("targets", "gap", "down", "config"),
    "broker-restart": ("down",), "connector": ("name", "tasks"), "add-thread": (), "remove-thread": (),
    "enforce-rebalance": (),
}


@dataclass
class Step:
    at: float
    action: str
    target: str = ""
    options: dict = field(default_factory=dict)


@dataclass
class Expect:
    rule: str
    severity: str = "warning"
    first: bool = False
    culprit: str | None = None       # the host the fault was driven at
    group: str | None = None         # another group than the scenario's (a sink connector's consumers)
    cluster: str | None = None       # a scenario of several clusters: the alias whose group it is


@dataclass
class Scenario:
    name: str
    family: str                      # classic, kip848, migration, streams, connect, client, mirror
    summary: str
    healthy: bool
    duration: float
    apps: list[App]
    steps: list[Step]
    findings: list[Expect]
    group: str
    topic: str
    partitions: int
    brokers: int = 1
    broker_config: dict = field(default_factory=dict)
    releases: list[str] = field(default_factory=list)
    since: str = "2.4.0"             # the oldest release the scenario applies to
    may_fire: list[str] = field(default_factory=list)
    resembles: list[str] = field(default_factory=list)
    group_named: bool = True         # False: no line of the scenario's logs names the group (the truth's group is "")
    unjudged: list[str] = field(default_factory=list)   # groups whose fate Kafka decides: no claim about them
    clusters: list[str] = field(default_factory=list)   # several clusters: their aliases (each its own brokers)
    brokers_collected: bool = True   # False: the brokers' logs are not recorded (the operator has only the clients')

    def app(self, host: str) -> App:
        for app in self.apps:
            if app.host == host:
                return app
        raise LabError(f"scenario {self.name}: no process {host!r}", USAGE)


@lru_cache(maxsize=1)
def catalog() -> dict:
    try:
        return load_toml(HERE / "scenarios.toml")
    except DataFileError as error:
        raise LabError(str(error), USAGE) from None


def names() -> list[str]:
    return sorted(catalog()["scenario"])


def load(name: str) -> Scenario:
    data = catalog()
    if name not in data["scenario"]:
        raise LabError(f"unknown scenario {name!r}; `python -m rebalance_doctor.lab list` lists them", USAGE)
    raw = data["scenario"][name]
    defaults = data.get("defaults", {})
    kinds = defaults.get("kind", {})
    apps = []
    clusters = list(raw.get("clusters", []))
    for spec in raw["apps"]:
        config = {**kinds.get(spec["kind"], {}), **raw.get("config", {}).get(spec["kind"], {}), **spec.get("config", {})}
        config = {k: v for k, v in config.items() if v != ""}     # "" takes a default away
        config.setdefault("lab.topic", raw.get("topic", defaults["topic"]))
        if spec["kind"] == "streams":
            config.setdefault("application.id", raw.get("group", defaults["group"]))
        elif spec["kind"] not in ("java-producer", "connect", "mirror-maker"):
            config.setdefault("group.id", raw.get("group", defaults["group"]))
        if spec["kind"] == "mirror-maker":
            config.pop("lab.topic", None)
        cluster = spec.get("cluster", clusters[0] if clusters and spec["kind"] != "mirror-maker" else "")
        if (cluster or clusters) and cluster not in clusters and spec["kind"] != "mirror-maker":
            raise LabError(f"scenario {name}: process {spec['host']} runs against no cluster of {clusters}", USAGE)
        apps.append(App(spec["host"], spec["kind"], config, spec.get("log_level", "default"), cluster,
                        spec.get("collected", True)))
    if not any(a.kind == "java-producer" for a in apps) and raw.get("producer", True):
        apps.append(App("producer-1", "java-producer", {**kinds.get("java-producer", {}),
                                                      "lab.topic": raw.get("topic", defaults["topic"]),
                                                      "lab.rate": raw.get("rate", defaults["rate"])},
                        cluster=clusters[0] if clusters else ""))
    steps = []
    for spec in raw.get("steps", []):
        spec = dict(spec)
        action = spec.pop("action")
        if action not in ACTIONS:
            raise LabError(f"scenario {name}: unknown action {action!r}", USAGE)
        steps.append(Step(float(spec.pop("at")), action, spec.pop("target", ""), spec))
    findings = [Expect(f["rule"], f.get("severity", "warning"), f.get("first", False), f.get("culprit"),
                       f.get("group"), f.get("cluster")) for f in raw.get("findings", [])]
    for expect in findings:
        if expect.cluster is not None and expect.cluster not in clusters:
            raise LabError(f"scenario {name}: finding {expect.rule} names no cluster of {clusters}", USAGE)
    hosts = {a.host for a in apps}
    for step in steps:
        targets = step.options.get("targets", [step.target] if step.target else [])
        for target in targets:
            if target not in hosts and not target.startswith("kafka-") and target != "coordinator":
                raise LabError(f"scenario {name}: step {step.action} at {step.at} names no process {target!r}", USAGE)
    # A culprit is a process something was done to: an action, or its own configuration (a fault by configuration)
    configured = {spec["host"] for spec in raw["apps"] if spec.get("config")}
    for expect in findings:
        driven = {t for s in steps for t in s.options.get("targets", [s.target])} | configured
        if expect.culprit and expect.culprit not in driven:
            raise LabError(f"scenario {name}: culprit {expect.culprit} had nothing done to it", USAGE)
    return Scenario(name=name, family=raw["family"], summary=raw["summary"], healthy=raw.get("healthy", False),
                    duration=float(raw["duration"]), apps=apps, steps=sorted(steps, key=lambda s: s.at),
                    findings=findings, group=raw.get("group", defaults["group"]),
                    topic=raw.get("topic", defaults["topic"]),
                    partitions=raw.get("partitions", defaults["partitions"]), brokers=raw.get("brokers", 1),
                    broker_config=raw.get("broker_config", {}), brokers_collected=raw.get("brokers_collected", True),
                    releases=raw.get("releases", defaults["releases"]), since=raw.get("since", "2.4.0"),
                    may_fire=raw.get("may_fire", []), resembles=raw.get("resembles", []),
                    group_named=raw.get("group_named", True), unjudged=raw.get("unjudged", []), clusters=clusters)
