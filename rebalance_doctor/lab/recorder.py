"""Play a scenario against real Kafka and record what every process logged, byte for byte, with its truth."""

from __future__ import annotations

import gzip
import heapq
import json
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from .apps import App
from .cluster import Cluster
from .errors import INTERNAL, USAGE, LabError
from .java_build import classes
from .processes import Supervisor, free_port, wait_for
from .releases import Release, resolve, version_tuple
from .scenario import Scenario, Step, load
from .truth import Action, lab_toml, truth_of

SETUP_SECONDS = 240          # brokers formatted and started, topic created, before the scenario's clock starts
COMPRESS_ABOVE = 8 << 20      # bytes of one log stored as written; a bigger one is stored .log.gz


class Recording:
    def __init__(self, scenario: Scenario, version: str, first_port: int | None = None, log=print):
        self.scenario = scenario
        self.version = version
        self.release = resolve(version)
        self.releases = {version: self.release}     # the releases processes run (lab.kafka: one not yet upgraded)
        self.first_port = first_port
        self.log = log
        self.actions: list[Action] = []
        self.t0 = 0.0

    # -- the processes -------------------------------------------------------------------------------
    def start_app(self, app: App) -> None:
        if app.kind == "connect":
            self.connect_ports.setdefault(app.host, free_port())
            # a worker's own configuration wins (a worker config copied from another Connect cluster)
            app.config.update({
                "group.id": self.scenario.group, "config.storage.topic": "connect-configs",
                "offset.storage.topic": "connect-offsets", "status.storage.topic": "connect-status",
                "config.storage.replication.factor": 1, "offset.storage.replication.factor": 1,
                "status.storage.replication.factor": 1,
                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "offset.flush.interval.ms": 5000, **app.config,
                "listeners": f"http://127.0.0.1:{self.connect_ports[app.host]}"})
            app.config.pop("lab.topic", None)
        if app.kind == "mirror-maker":
            app.config.update(self.mirror_config())
        cluster = self.clusters.get(app.cluster, self.cluster)
        self.sup.start(app.host, app.argv(self.release_of(app.config.get("lab.kafka")), self.workdir, cluster.bootstrap))

    def release_of(self, version: str | None) -> Release:
        """The Kafka release a process runs: the recording's, or its own ``lab.kafka`` (an instance of a rolling
        upgrade not yet upgraded), resolved and its lab programs compiled before the scenario's clock starts."""
        version = str(version or self.version)
        if version not in self.releases:
            self.releases[version] = resolve(version)
            classes(self.releases[version])
        return self.releases[version]

    def mirror_config(self) -> dict:
        """What mm2.properties says of the clusters themselves (the flows are the scenario's): each alias and its
        bootstrap, and the replication factor its one broker allows for every topic MM2 creates."""
        config: dict = {"clusters": ", ".join(self.clusters)}
        for alias, cluster in self.clusters.items():
            config[f"{alias}.bootstrap.servers"] = cluster.bootstrap
        for topic in ("replication.factor", "checkpoints.topic.replication.factor",
                      "heartbeats.topic.replication.factor", "offset-syncs.topic.replication.factor",
                      "offset.storage.replication.factor", "status.storage.replication.factor",
                      "config.storage.replication.factor"):
            config.setdefault(topic, min(3, self.scenario.brokers))
        return config

    def act(self, action: str, target: str, detail: str = "") -> None:
        self.actions.append(Action(time.monotonic() - self.t0, time.time(), action, target, detail))
        self.log(f"  {time.monotonic() - self.t0:6.1f}s {action} {target} {detail}".rstrip())

    def control(self, host: str, command: str) -> None:
        path = self.scenario.app(host).control_path(self.workdir)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(command + "\n", encoding="utf-8")
        tmp.rename(path)

    # -- the plan: each step becomes timed primitive actions -----------------------------------------
    def expand(self, step: Step) -> list[tuple[float, str, str, dict]]:
        o, at, target = step.options, step.at, step.target
        if step.action == "pause":
            return [(at, "pause", target, {}), (at + float(o["seconds"]), "resume", target, {})]
        again = {"config": o["config"]} if "config" in o else {}
        if step.action == "restart":
            return [(at, "stop", target, {}), (at + float(o.get("down", 5)), "start", target, again)]
        if step.action == "crash-loop":
            out = []
            for i in range(int(o.get("times", 3))):
                t = at + i * float(o.get("every", 20))
                out += [(t, "kill", target, {}), (t + float(o.get("down", 5)), "start", target, {})]
            return out
        if step.action == "rolling-restart":
            out = []
            for i, host in enumerate(o["targets"]):
                t = at + i * float(o.get("gap", 20))
                out += [(t, "stop", host, {}), (t + float(o.get("down", 5)), "start", host, again)]
            return out
        if step.action == "stall":
            return [(at, "stall", target, {"ms": int(float(o["seconds"]) * 1000)})]
        return [(at, step.action, target, o)]

    def perform(self, action: str, target: str, options: dict) -> None:
        if action in ("stop", "kill", "pause") and target in self.connect_ports:
            self.wait_working(target)
        if action == "start":
            app = self.scenario.app(target)
            changes = options.get("config", {})
            # "" takes a setting away, as in the scenario's configs (the consumer protocol refuses session.timeout.ms)
            app.config = {k: v for k, v in {**app.config, **changes}.items() if v != ""}
            self.start_app(app)
            self.act("start", target, ", ".join(f"{k}={v}" if v != "" else f"no {k}" for k, v in changes.items()))
        elif action == "stop":
            self.act("stop", target, "SIGTERM")
            status = self.sup.stop(target)
            self.act("stopped", target, f"exit status {status}")
        elif action == "kill":
            self.act("kill", target, "SIGKILL")
            self.sup.kill(target)
        elif action == "pause":
            self.sup.signal(target, signal.SIGSTOP)
            self.act("pause", target, "SIGSTOP")
        elif action == "resume":
            self.sup.signal(target, signal.SIGCONT)
            self.act("resume", target, "SIGCONT")
        elif action == "stall":
            self.control(target, f"stall {options['ms']}")
            self.act("stall", target, f"{options['ms']} ms in the poll loop")
        elif action == "throw":
            self.control(target, "throw")
            self.act("throw", target, "an exception in processing")
        elif action in ("add-thread", "remove-thread"):
            self.control(target, action)
            self.act(action, target, "KafkaStreams#addStreamThread" if action == "add-thread"
                     else "KafkaStreams#removeStreamThread")
        elif action == "enforce-rebalance":
            self.control(target, "rebalance")
            self.act(action, target, "KafkaConsumer#enforceRebalance")
        elif action == "broker-restart":
            if target == "coordinator":     # the broker coordinating the scenario's group now (Kafka decides which)
                target = self.coordinator_host()
            self.act("stop", target, "SIGTERM (broker)")
            cluster = next(c for c in self.clusters.values() if any(n.host == target for n in c.nodes))
            cluster.restart_node(cluster.node(target), float(options.get("down", 5)))
            self.act("started", target, "broker")
        elif action == "connector":
            self.create_connector(target, options)
        else:
            raise LabError(f"no action {action!r}", USAGE)

    def coordinator_host(self) -> str:
        """The host of the broker that coordinates the scenario's group, as the Admin API describes the group."""
        props = self.workdir / "config" / "admin-.properties"
        cp = f"{classes(self.release)}:{self.release.classpath}"
        run = subprocess.run(["java", "-Xmx128m", "-cp", cp, "LabClient", "coordinator", str(props),
                              self.scenario.group], capture_output=True, text=True, timeout=60)
        node = (run.stdout or "").strip().splitlines()[-1:] if run.returncode == 0 else []
        if not node or not node[0].isdigit():
            raise LabError(f"finding the coordinator of {self.scenario.group} failed: "
                           f"{(run.stderr or run.stdout).strip().splitlines()[-1:]}", INTERNAL)
        return self.cluster.nodes[int(node[0]) - 1].host

    def wait_working(self, worker: str) -> None:
        """A fault is driven at a Connect worker only once it runs work (its REST API lists a task of a connector
        on it, or answers at all while no connector exists): a worker still starting (a JVM start-up takes 15-45 s
        on a loaded machine) has nothing to lose, and the truth would name a culprit the logs cannot show."""
        base = f"http://127.0.0.1:{self.connect_ports[worker]}"

        def get(path: str):
            try:
                with urllib.request.urlopen(base + path, timeout=5) as answer:
                    return json.loads(answer.read() or b"null") if answer.status == 200 else None
            except (OSError, ValueError):
                return None

        seen = {"detail": "its REST API lists a running task on it"}

        def working() -> bool:
            connectors = get("/connectors")
            if not connectors:
                seen["detail"] = "its REST API answers; no connector exists yet"
                return connectors is not None          # the REST API answers and there is no work to run
            me = f"127.0.0.1:{self.connect_ports[worker]}"
            return any(task.get("worker_id") == me and task.get("state") == "RUNNING"
                       for name in connectors for task in (get(f"/connectors/{name}/status") or {}).get("tasks", []))

        if not working():
            wait_for(working, 120, f"{worker} running work before the fault", self.sup, interval_s=1)
        self.act("working", worker, seen["detail"])

    def create_connector(self, worker: str, options: dict) -> None:
        name, tasks = options.get("name", "orders-sink"), int(options.get("tasks", 3))
        config = {"connector.class": "LabSinkConnector",
                  "tasks.max": str(tasks), "topics": self.scenario.topic,
                  "file": str(self.workdir / f"{name}.out")}
        url = f"http://127.0.0.1:{self.connect_ports[worker]}/connectors/{name}/config"

        def put() -> bool:
            request = urllib.request.Request(url, data=json.dumps(config).encode(), method="PUT",
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    return answer.status in (200, 201)
            except OSError:
                return False

        wait_for(put, 90, f"connector {name} created on {worker}", self.sup, interval_s=2)
        self.act("connector", worker, f"{name} with {tasks} tasks")

    # -- the run ----------------------------------------------------------------------------------------
    def run(self, out: Path) -> Path:
        scenario = self.scenario
        if version_tuple(self.version) < version_tuple(scenario.since):
            raise LabError(f"scenario {scenario.name} needs Kafka {scenario.since} or later", USAGE)
        classes(self.release)
        for version in {app.config.get("lab.kafka") for app in scenario.apps} | {
                s.options.get("config", {}).get("lab.kafka") for s in scenario.steps}:
            self.release_of(version)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"rd-lab-{scenario.name}-"))
        self.sup = Supervisor(self.workdir, SETUP_SECONDS + scenario.duration + 180)
        self.connect_ports: dict[str, int] = {}
        configs = {app.host: dict(app.config) for app in scenario.apps}    # as first started (lab.toml)
        try:
            # one cluster, or one per alias of a scenario of several (each its own brokers and cluster id)
            self.clusters = {}
            for i, alias in enumerate(scenario.clusters or [""]):
                first = None if self.first_port is None else self.first_port + 2 * scenario.brokers * i
                self.clusters[alias] = Cluster(self.release, self.sup, self.workdir, scenario.brokers,
                                               dict(scenario.broker_config), first, alias)
            self.cluster = next(iter(self.clusters.values()))
            for alias, cluster in self.clusters.items():
                self.log(f"{scenario.name}@{self.version}: starting {scenario.brokers} broker(s)"
                         + (f" of cluster {alias}" if alias else ""))
                cluster.start()
                self.create_topic(cluster)
            started = time.time()
            self.t0 = time.monotonic()
            later = {s.target for s in scenario.steps if s.action == "start"}
            for app in scenario.apps:
                if app.host not in later:
                    self.start_app(app)
                    self.act("start", app.host)
            plan = [(at, i, action, target, options)
                    for i, (at, action, target, options) in enumerate(x for s in scenario.steps for x in self.expand(s))]
            heapq.heapify(plan)
            while plan:
                at, _, action, target, options = heapq.heappop(plan)
                self.sleep_until(at)
                self.perform(action, target, options)
            self.sleep_until(scenario.duration)
            self.sup.freeze_all()
            self.act("collect", "all", "every process frozen (SIGSTOP) and its log copied")
            hosts = self.collect(out)
            seconds = time.monotonic() - self.t0
        finally:
            self.sup.stop_all()
            shutil.rmtree(self.workdir, ignore_errors=True)
        ids = {alias: c.cluster_id for alias, c in self.clusters.items() if alias}
        truth = truth_of(scenario, self.version, self.actions, ids)
        (out / "expected.toml").write_text(truth.to_toml(), encoding="utf-8")
        (out / "lab.toml").write_text(lab_toml(scenario, self.version, self.actions, started, seconds, hosts,
                                               configs, ids,
                                               self.release.mirror_version
                                               if any(a.kind == "mirror-maker" for a in scenario.apps) else None),
                                      encoding="utf-8")
        return out

    def sleep_until(self, at: float) -> None:
        while True:
            self.sup.check_deadline()
            left = self.t0 + at - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.5))

    def create_topic(self, cluster: Cluster) -> None:
        props = self.workdir / "config" / f"admin-{cluster.alias}.properties"
        props.parent.mkdir(parents=True, exist_ok=True)
        props.write_text(f"bootstrap.servers={cluster.bootstrap}\n", encoding="utf-8")
        cp = f"{classes(self.release)}:{self.release.classpath}"
        run = subprocess.run(["java", "-Xmx128m", "-cp", cp, "LabClient", "create-topic", str(props),
                              self.scenario.topic, str(self.scenario.partitions)],
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            raise LabError(f"creating topic {self.scenario.topic} failed: "
                           f"{(run.stderr or run.stdout).strip().splitlines()[-1:]}", INTERNAL)

    def collect(self, out: Path) -> dict[str, str]:
        """Copy every log as written, up to its last complete line, named by its host (gzip-compressed, ``.log.gz``,
        when over COMPRESS_ABOVE bytes); in a scenario of several
        clusters, each cluster's brokers and clients in a directory named by its alias (as a bundle of several
        clusters is laid out), MirrorMaker, which runs against several, beside them."""
        if out.exists():
            for old in [out, *(out / alias for alias in self.clusters if alias)]:
                for path in (old.iterdir() if old.is_dir() else []):
                    if path.is_file() and (path.suffix == ".log" or ".log." in path.name or path.name.endswith(".toml")):
                        path.unlink()
        out.mkdir(parents=True, exist_ok=True)
        sources: list[tuple[str, str, Path]] = []
        for alias, cluster in self.clusters.items():
            for node in cluster.nodes if self.scenario.brokers_collected else ():
                sources += [(alias, node.host, p) for p in sorted(node.logs.glob("server.log*"))]
        for app in self.scenario.apps:
            if not app.collected:
                continue
            live = app.log_path(self.workdir)
            sources += [(app.cluster, app.host, p) for p in sorted(live.parent.glob(live.name + "*"))]
        hosts: dict[str, str] = {}
        for alias, host, path in sources:
            data = path.read_bytes()
            data = data[: data.rfind(b"\n") + 1]
            suffix = path.name.split(".log", 1)[1]          # "" for the live file, ".2026-12-06-04" rolled
            name = f"{alias}/{host}.log{suffix}" if alias else f"{host}.log{suffix}"
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            if len(data) > COMPRESS_ABOVE:
                # as logrotate's compress leaves a big log (a Connect worker rejoining a thousand times a second
                # writes 3 MB a second); mtime 0: the same bytes give the same file
                name += ".gz"
                (out / name).write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
            else:
                (out / name).write_bytes(data)
            if not suffix:
                hosts[host] = name
        return hosts


def record(name: str, version: str, out: Path, first_port: int | None = None, log=print) -> Path:
    return Recording(load(name), version, first_port, log).run(out)
