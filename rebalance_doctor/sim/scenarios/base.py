"""What every scenario script uses: its random parameters, the world it builds, and the truth it states.

A scenario is a function of a ``Ctx``: it builds brokers and applications through the helpers
here, schedules what happens to them, runs the clock, and fills ``ctx.truth`` from what it did
(each rebalance's verdict and operation come from the label of the member whose action started
it, at the moment it did).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ...core.toml import load_toml
from ...packgen.inventory import version_key
from ..apps import ConsumerApp, Workload
from ..assignors import EAGER_ASSIGNORS, protocol_of
from ..catalog import release
from ..classic import Attempt
from ..consumer import ConsumerConfig
from ..noise import noise_process
from ...judge.truth import ExpectedFinding, ExpectedRebalance, Truth
from ..world import World

PARAMS = Path(__file__).resolve().parent.parent / "params.toml"

# What a member was doing (its label) -> the operation of a rebalance it started, and its verdict.
OPERATIONS: dict[str, tuple[str, str]] = {
    "deploy": ("initial-join", "expected"),         # a group forming from zero
    "rollout": ("deploy", "expected"),              # new instances replacing old ones
    "initial-join": ("initial-join", "expected"),
    "scale-out": ("scale-out", "expected"),
    "scale-in": ("scale-in", "expected"),
    "rolling-restart": ("rolling-restart", "expected"),
    "static-restart": ("static-restart", "expected"),
    "upgrade": ("rolling-restart", "expected"),
    "poll-timeout": ("poll-timeout", "harmful"),
    "session-timeout": ("session-timeout", "harmful"),
    "crash": ("crash", "harmful"),
    "fencing": ("fencing", "harmful"),
    "coordinator-move": ("coordinator-move", "harmful"),
    "restart-loop": ("restart-loop", "harmful"),
    "steady": ("unknown", "harmful"),
}
# Every rule id the truth may name (docs/rules.md, issue 17's new rules, the healthy-operation note).
ALL_RULES = (
    "rebalance-storm", "failed-rebalance-loop", "leader-churn", "probing-rebalance-cadence", "membership-flapping",
    "poll-timeout", "heartbeat-expiration", "cooperative-followup-loop", "version-probing", "application-shutdown",
    "thread-replacement-loop", "missed-rebalance", "static-member-timeout", "coordinator-churn",
    "connect-scheduled-delay", "connect-config-mismatch", "config-heartbeat-ratio", "eager-assignor",
    "assignor-mismatch", "assignment-skew", "thread-died", "rebalance-stall", "mass-expiry", "kip848-fencing",
    "sync-group-error-loop", "healthy-operation",
)
ADVISORIES = ("eager-assignor", "assignment-skew", "config-heartbeat-ratio")


@lru_cache(maxsize=1)
def _params() -> dict:
    return load_toml(PARAMS)


class Params:
    """The scenario's parameters: [defaults] with its [scenario.<name>] overrides, drawn with the world's rng."""

    def __init__(self, scenario: str, rng, pins: dict | None = None):
        data = _params()
        self.values = dict(data["defaults"])
        self.values.update(data.get("scenario", {}).get(scenario, {}))
        self.pins = pins or {}
        self.rng = rng

    def raw(self, name: str):
        return self.values[name]

    def pick(self, name: str):
        if name in self.pins:
            return self.pins[name]
        value = self.values[name]
        if isinstance(value, list):
            if len(value) == 2 and all(isinstance(v, (int, float)) for v in value) and name not in CHOICE_LISTS:
                low, high = value
                return self.rng.randint(low, high) if isinstance(low, int) else self.rng.uniform(low, high)
            return self.rng.choice(value)
        return value


# Lists of exactly two numbers that are choices, not ranges.
CHOICE_LISTS = {"group_initial_rebalance_delay_ms"}


@dataclass
class Incident:
    """A simulated incident: the world that ran and the truth of what happened in it."""

    world: World
    truth: Truth
    window_start_ms: float = 0.0
    files: dict[str, str] = field(default_factory=dict)
    uncollected: set = field(default_factory=set)    # paths of logs the operator did not collect (not written)

    def render(self) -> dict[str, str]:
        """path -> file content; fills the truth's evidence references (path:line)."""
        where: dict[int, tuple[str, int]] = {}
        files = {}
        for log in self.world.logs:
            if log.path in self.uncollected:
                continue
            kept = [r for r in log.records if r.t >= self.window_start_ms]
            if not kept:
                continue
            original, log.records = log.records, kept
            lines, positions = log.render(self.world.start)
            log.records = original
            for record in kept:
                where[id(record)] = (log.path, positions[record.seq])
            files[log.path] = "\n".join(lines) + "\n"
        for finding in self.truth.findings:
            refs = [where[id(r)] for r in finding.evidence_records if id(r) in where]
            finding.evidence = [f"{path}:{line}" for path, line in refs]
        self.files = files
        return files

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        for path, text in (self.files or self.render()).items():
            target = directory / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        (directory / "expected.toml").write_text(self.truth.to_toml(), encoding="utf-8")
        return directory


class Ctx:
    """A scenario run: world, parameters, truth, and helpers to build Kafka deployments."""

    def __init__(self, scenario: str, seed: int, kafka: str | None = None, protocol: str = "classic",
                 pins: dict | None = None):
        self.scenario = scenario
        self.seed = seed
        self.pins = dict(pins or {})     # fixed choices (the shipped fixtures pin names, hosts, layouts, ...)
        self.world = World(seed)
        if "start" in self.pins:
            self.world.start = self.pins["start"]
        self.rng = self.world.rng
        self.env = self.world.env
        self.p = Params(scenario, self.rng, self.pins)
        self.kafka = release(kafka) if kafka else self.p.pick("versions")
        self.truth = Truth(scenario, seed, self.kafka, protocol, healthy=False, story="")
        self.apps: list = []
        self.path_scheme = self.p.pick("path_schemes")
        self.service = self.choose("service", ("payments", "orders", "billing", "tracking", "checkout", "search"))
        self.window_start_ms = 0.0
        self.uncollected: set[str] = set()

    def not_collected(self, *logs) -> None:
        """These processes ran and logged, but their files are not in the incident (nobody collected them)."""
        self.uncollected.update(log.path for log in logs)

    # -- choices a fixture may pin ---------------------------------------------------------------------
    def choose(self, name: str, options):
        return self.pins[name] if name in self.pins else self.rng.choice(options)

    def count(self, name: str, low: int, high: int) -> int:
        return int(self.pins[name]) if name in self.pins else self.rng.randint(low, high)

    def pick_app(self, apps, name: str = "culprit"):
        """The app a scenario singles out (the culprit): pinned by host name, else drawn."""
        if name in self.pins:
            return next(app for app in apps if app.host == self.pins[name])
        return self.rng.choice(apps)

    # -- versions ------------------------------------------------------------------------------------
    def at_least(self, version: str) -> bool:
        return version_key(self.kafka) >= version_key(version)

    def broker_version(self) -> str:
        """The brokers run the incident's release or a later one."""
        later = [v for v in self.p.raw("versions") if version_key(v) >= version_key(self.kafka)]
        return self.kafka if self.rng.random() < 0.6 else self.rng.choice(later)

    # -- deployment helpers ---------------------------------------------------------------------------
    def brokers(self, count: int | None = None, version: str | None = None, impl: str | None = None):
        count = count or self.p.pick("brokers")
        version = self.pins.get("broker_version") or version or self.broker_version()
        delay = self.p.pick("group_initial_rebalance_delay_ms")
        layout = self.p.pick("broker_layouts")
        naming = self.choose("broker_naming", ("broker-{}", "kafka-{}", "kafka{}"))
        out = []
        for i in range(1, count + 1):
            host = naming.format(i if naming != "kafka-{}" else i - 1)
            self.world.host(host, self._skew(host))
            out.append(self.world.add_broker(i, host, version, impl=impl, layout=layout, initial_delay_ms=delay))
            self.world.coordinators[i].initial_generation = int(self.pins.get("generation", 0))
        self.world.place_coordinators()
        label_attempts(self)
        for broker in out:
            self.env.process(noise_process(self.world, broker.log, "broker",
                                           every_ms=tuple(self.p.raw("noise_every_ms"))))
        return out

    def _skew(self, host: str | None = None) -> float:
        if host in self.pins.get("skews", {}):
            return float(self.pins["skews"][host])
        if self.rng.random() < self.p.raw("big_skew_share"):
            value = self.rng.uniform(*self.p.raw("big_skew_ms"))
        else:
            value = self.rng.uniform(*self.p.raw("skew_ms"))
        return round(value * self.rng.choice((1, -1)), 0)

    def client_path(self, host: str) -> str:
        if self.path_scheme == "flat":
            return f"{host}.log"
        if self.path_scheme == "dir":
            return f"{host}/{self.rng.choice(('app', 'application', 'stdout'))}.log"
        return f"{host}/{self.service}.log"

    def client_log(self, host: str, component: str = "consumer", version: str | None = None, layout: str | None = None):
        self.world.host(host, self._skew(host))
        layout = layout or self.pins.get("layouts", {}).get(host)
        levels = {}
        if self.rng.random() < self.p.raw("debug_share") and "layouts" not in self.pins:
            levels["org.apache.kafka.clients.consumer.internals"] = "DEBUG"
        return self.world.new_log(self.client_path(host), host, component, version or self.kafka,
                                  layout or self.p.pick("client_layouts"), levels=levels,
                                  thread=self.rng.choice(("main", "pool-1-thread-1",
                                                          "org.springframework.kafka.KafkaListenerEndpointContainer#0-0-C-1")))

    def consumer_config(self, group: str, topics: tuple[str, ...], assignors: tuple[str, ...] | None = None,
                        instance: str | None = None, **overrides) -> ConsumerConfig:
        session = overrides.pop("session_ms", None) or self.p.pick("session_timeout_ms")
        heartbeat = overrides.pop("heartbeat_ms", None) or max(500, session // self.p.pick("heartbeat_divisor"))
        return ConsumerConfig(group, overrides.pop("client_id", f"consumer-{group}-1"), topics,
                              assignors or (self.p.pick("assignors"),), instance=instance, session_ms=session,
                              heartbeat_ms=heartbeat, max_poll_ms=overrides.pop("max_poll_ms", None)
                              or self.p.pick("max_poll_interval_ms"), **overrides)

    def consumer_group(self, group: str, count: int, cfg: ConsumerConfig, topics: dict[str, int],
                       hosts: list[str] | None = None, label: str = "deploy", static: bool = False,
                       app_name: str | None = None) -> list[ConsumerApp]:
        hosts = hosts or self.host_names(count)
        apps = []
        for i, host in enumerate(hosts):
            member_cfg = ConsumerConfig(**{**cfg.__dict__, "instance": f"{group}-{i}" if static else cfg.instance})
            log = self.client_log(host)
            app = ConsumerApp(self.world, host, log, member_cfg, topics, Workload(), label=label,
                              app_name=app_name or f"{self.service}-service")
            apps.append(app)
            self.apps.append(app)
            self.env.process(noise_process(self.world, log, "client", every_ms=tuple(self.p.raw("noise_every_ms")),
                                           prefix=f"[Consumer clientId={member_cfg.client_id}, groupId={group}] "))
        return apps

    def host_names(self, count: int) -> list[str]:
        if "hosts" in self.pins:
            return list(self.pins["hosts"])[:count]
        style = self.rng.choice(("node{}", "{svc}-{}", "{svc}-7d9f{}", "worker-{}", "ip-10-0-1-{}"))
        first = self.rng.randint(0, 3)
        return [style.format(first + i, svc=self.service) for i in range(count)]

    def another_host(self, apps) -> list[str]:
        """One more host name for a member added to ``apps`` (host_names draws its naming style anew on
        each call: a name already in use would put two processes in one log file)."""
        taken = {app.host for app in apps}
        for _ in range(20):
            name = self.host_names(len(apps) + 1)[-1]
            if name not in taken:
                return [name]
        return [f"{sorted(taken)[0]}-new"]

    def start_all(self, apps, spacing_ms: tuple[float, float] = (200, 1500), at: float = 0.0) -> float:
        t = at
        for app in apps:
            self.env.call_at(t, app.start)
            t += self.rng.uniform(*spacing_ms)
        return t

    def restart(self, app, at: float, downtime_ms: float, label: str | None = None, crash: bool = False) -> None:
        def go():
            if label:
                app.label = label
            if crash:
                app.crash()
            else:
                yield from app.shutdown()
            yield self.env.timeout(downtime_ms)
            app.start()
        self.env.call_at(at, lambda: self.env.process(go()))

    def label_at(self, at: float, apps, label: str) -> None:
        """From time ``at``, what the apps do is ``label`` (the truth of the rebalances they start)."""
        def relabel():
            for app in apps:
                app.label = label
        self.env.call_at(at, relabel)

    def app_by_ip(self, ip: str):
        for app in self.apps:
            if self.world.host(app.host).ip == ip:
                return app
        return None

    # -- truth helpers ----------------------------------------------------------------------------------
    def culprit(self, app) -> dict[str, str]:
        out = {"host": app.host, "client": app.cfg.client_id}
        if app.cfg.instance:
            out["instance"] = app.cfg.instance
        return out

    def expect(self, rule: str, group: str, severity: str = "warning", first: bool = True,
               culprit: dict | None = None, evidence: list | None = None) -> ExpectedFinding:
        finding = ExpectedFinding(rule, group, severity, first, culprit, evidence_records=list(evidence or []))
        self.truth.findings.append(finding)
        return finding

    def advisories(self, cfg: ConsumerConfig, rebalances: int) -> None:
        """Advisories the configuration makes legitimate (scored neither way)."""
        if protocol_of(cfg.assignors) == "eager" and any(a in EAGER_ASSIGNORS for a in cfg.assignors):
            self.truth.may_fire.append("eager-assignor")
        self.truth.may_fire.append("assignment-skew") if self._skewed() else None

    def _skewed(self) -> bool:
        sizes = [len(a.consumer.owned) for a in self.apps if a.consumer is not None and a.jvm and a.jvm.alive]
        return bool(sizes) and (min(sizes) == 0 or max(sizes) > 2 * min(sizes))

    def attempts(self, group: str) -> Iterator[tuple[object, Attempt]]:
        """(coordinator, attempt) for every rebalance attempt of the group, coordinator by coordinator, in order."""
        for coordinator in self.world.coordinators.values():
            classic = coordinator.broker.groups.get(group)
            for attempt in (classic.history if classic is not None else ()):
                yield coordinator, attempt

    def rebalance_truth(self, group: str) -> None:
        """Each rebalance of the group (by the coordinator that served it) with its verdict and operation."""
        seen = set()
        for _coordinator, attempt in self.attempts(group):
            if attempt.generation is None or attempt.generation in seen or attempt.start < self.window_start_ms:
                continue
            seen.add(attempt.generation)
            operation, verdict = self.judge(attempt)
            self.truth.rebalances.append(ExpectedRebalance(group, attempt.generation, verdict, operation))
        self.truth.rebalances.sort(key=lambda r: r.generation)

    def judge(self, attempt: Attempt) -> tuple[str, str]:
        if attempt.trigger in ("metadata", "leader-rejoin") and "need to revoke partitions" in attempt.reason:
            return "cooperative-followup", "expected"
        if attempt.trigger in ("sync-error", "pending-sync"):
            return "failed-attempt", "harmful"
        label = getattr(attempt, "label", None) or "steady"
        if attempt.empty_start and label in ("deploy", "steady"):
            return "initial-join", "expected"
        return OPERATIONS.get(label, ("unknown", "harmful"))

    def finish(self, story: str, healthy: bool, until_ms: float, group: str | None = None) -> Incident:
        self.world.run(until_ms)
        self.truth.story = story
        self.truth.healthy = healthy
        if group:
            self.rebalance_truth(group)
        if healthy:
            expected = {f.rule for f in self.truth.findings}   # e.g. version-probing's info note in an upgrade
            self.truth.must_not_fire = [r for r in ALL_RULES
                                        if r not in ("healthy-operation",) + ADVISORIES and r not in expected]
        return Incident(self.world, self.truth, self.window_start_ms, uncollected=set(self.uncollected))


def label_attempts(ctx: Ctx) -> None:
    """Observe the coordinators: each rebalance remembers the label of the member that started it
    (the application whose address the member joined from), at the moment it started."""
    def observer(coordinator):
        def observe(what, group, attempt):
            if what == "prepare" and attempt is not None:
                ip = (coordinator.known_hosts.get(attempt.member) or "").lstrip("/")
                owner = ctx.app_by_ip(ip)
                attempt.label = owner.label if owner is not None else None
                attempt.host = owner.host if owner is not None else None
        return observe
    for coordinator in ctx.world.coordinators.values():
        coordinator.observers.append(observer(coordinator))
