"""KRaft brokers on 127.0.0.1 (combined broker and controller), each a process logging as the distribution does."""

from __future__ import annotations

import base64
import re
import socket
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ENVIRONMENT, USAGE, LabError
from .processes import Supervisor, free_port, port_in_use, wait_for
from .releases import Release

JVM_OPTIONS = ["-Xms256m", "-Xmx768m", "-XX:+UseG1GC", "-Djava.awt.headless=true"]
STARTED = re.compile(rb"Kafka Server started|\[KafkaServer id=\d+\] started")
START_SECONDS = 120


@dataclass
class Node:
    node_id: int
    host: str                    # the host name its log is recorded under
    port: int
    controller_port: int
    home: Path                   # kafka.logs.dir and the data directory

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def server_log(self) -> Path:
        return self.logs / "server.log"


@dataclass
class Cluster:
    release: Release
    supervisor: Supervisor
    workdir: Path
    size: int = 1
    overrides: dict = field(default_factory=dict)
    first_port: int | None = None
    alias: str = ""              # a scenario of several clusters: this one's name (its brokers are kafka-<alias>N)
    nodes: list[Node] = field(default_factory=list)
    cluster_id: str = ""

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def _ports(self) -> list[int]:
        if self.first_port is None:
            return [free_port() for _ in range(2 * self.size)]
        ports = list(range(self.first_port, self.first_port + 2 * self.size))
        for port in ports:
            if port_in_use(port):
                raise LabError(f"port {port} on 127.0.0.1 is in use (give another --port)", USAGE)
        return ports

    def _properties(self, node: Node, voters: str) -> str:
        replicas = min(3, self.size)
        props = {
            "process.roles": "broker,controller", "node.id": node.node_id,
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(node.home / "data"), "num.partitions": 6,
            "offsets.topic.replication.factor": replicas, "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": 1, "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": 1,
        }
        props.update(self.overrides)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def start(self) -> None:
        ports = self._ports()
        cluster_id = "-"
        while cluster_id.startswith("-"):    # kafka-storage reads a leading '-' as an option (Kafka's Uuid avoids it too)
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self.cluster_id = cluster_id
        for i in range(self.size):
            host = f"kafka-{self.alias.lower()}{i + 1}" if self.alias else f"kafka-{i + 1}"
            self.nodes.append(Node(i + 1, host, ports[2 * i], ports[2 * i + 1], self.workdir / host))
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        for node in self.nodes:
            node.logs.mkdir(parents=True, exist_ok=True)
            (node.home / "server.properties").write_text(self._properties(node, voters), encoding="utf-8")
            self._format(node, cluster_id)
        for node in self.nodes:
            self.start_node(node)
        for node in self.nodes:
            self.wait_ready(node)

    def _java(self, node: Node, main: list[str]) -> list[str]:
        return ["java", *JVM_OPTIONS, f"-Dkafka.logs.dir={node.logs}", self.release.logging_property("broker"),
                "-cp", self.release.classpath, *main]

    def _format(self, node: Node, cluster_id: str) -> None:
        argv = self._java(node, ["kafka.tools.StorageTool", "format", "-t", cluster_id,
                                 "-c", str(node.home / "server.properties")])
        run = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=str(node.home))
        if run.returncode != 0:
            raise LabError(f"formatting {node.host}'s storage failed: "
                           f"{(run.stderr or run.stdout).strip().splitlines()[-1:]}", ENVIRONMENT)

    def start_node(self, node: Node) -> None:
        self.supervisor.start(node.host, self._java(node, ["kafka.Kafka", str(node.home / "server.properties")]))

    def wait_ready(self, node: Node) -> None:
        offset = 0

        def started() -> bool:
            nonlocal offset
            proc = self.supervisor.procs[node.host]
            if not proc.alive():
                tail = proc.console.read_text(errors="replace").strip().splitlines()[-3:]
                raise LabError(f"broker {node.host} exited while starting: {' | '.join(tail)[:400]}", ENVIRONMENT)
            if not node.server_log.exists():
                return False
            data = node.server_log.read_bytes()
            if STARTED.search(data, offset):
                return _accepts(node.port)
            offset = max(0, len(data) - 200)
            return False

        wait_for(started, START_SECONDS, f"broker {node.host} starting", self.supervisor, interval_s=0.5)

    def restart_node(self, node: Node, down_s: float) -> None:
        import time
        self.supervisor.stop(node.host, graceful_s=60)
        time.sleep(down_s)
        mark = node.server_log.stat().st_size if node.server_log.exists() else 0
        self.start_node(node)

        def started_again() -> bool:
            data = node.server_log.read_bytes()
            return bool(STARTED.search(data, mark)) and _accepts(node.port)

        wait_for(started_again, START_SECONDS, f"broker {node.host} restarting", self.supervisor, interval_s=0.5)

    def node(self, host: str) -> Node:
        for node in self.nodes:
            if node.host == host:
                return node
        raise LabError(f"no broker {host} in this cluster", USAGE)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
