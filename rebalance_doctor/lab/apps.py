"""The clients of a scenario: how each kind of process is started, where it logs, how it is told to misbehave."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ENVIRONMENT, USAGE, LabError
from .go_client import LIBRARIES as GO_LIBRARIES
from .go_client import program as go_program
from .java_build import classes
from .node_client import PROGRAM, modules, require_node
from .releases import Release

JVM_OPTIONS = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]

# kind -> (runtime, what it is); the Python kinds need their library (the `clients` extra).
KINDS = {
    "java-consumer": "a Java KafkaConsumer application (lab/java/LabClient.java)",
    "java-producer": "a Java KafkaProducer feeding the topic",
    "streams": "a Kafka Streams application with a state store (lab/java/LabStreams.java)",
    "share-consumer": "a Java KafkaShareConsumer application in a share group (KIP-932, lab/java/LabShare.java)",
    "connect": "a Connect distributed worker (ConnectDistributed)",
    "mirror-maker": "MirrorMaker 2 in dedicated mode (connect-mirror's MirrorMaker, an mm2.properties of the scenario's clusters)",
    "confluent-kafka": "a confluent-kafka (librdkafka) consumer in Python (lab/pyclients.py)",
    "kafka-python": "a kafka-python consumer (lab/pyclients.py)",
    "aiokafka": "an aiokafka (asyncio) consumer (lab/pyclients.py)",
    "kafkajs": "a KafkaJS consumer in Node.js (lab/js/labclient.js; kafkajs from npm into the lab cache)",
    "franz-go": "a franz-go (kgo) consumer in Go (lab/go/labclient.go; built with the Go module proxy into the lab cache)",
    "sarama": "an IBM/sarama ConsumerGroup consumer in Go (lab/go/sarama/labclient.go; built like franz-go's)",
    "kafka-go": "a segmentio/kafka-go Reader in a consumer group, in Go (lab/go/kafkago/labclient.go; built like franz-go's)",
}
PYTHON_MODULES = {"confluent-kafka": "confluent_kafka", "kafka-python": "kafka", "aiokafka": "aiokafka"}


@dataclass
class App:
    host: str
    kind: str
    config: dict = field(default_factory=dict)     # client configs (Kafka's names) and lab.* options
    log_level: str = "default"                      # "default" or "debug" (the client's own debug switch)
    cluster: str = ""                               # a scenario of several clusters: the alias it runs against
    collected: bool = True                          # False: runs, but its log is not among the recorded files (a
                                                    # process outside the logs the operator has)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise LabError(f"process {self.host}: unknown kind {self.kind!r} (one of {', '.join(KINDS)})", USAGE)

    def log_path(self, workdir: Path) -> Path:
        name = "connect.log" if self.kind in ("connect", "mirror-maker") else "app.log"
        return workdir / "apps" / self.host / name

    def control_path(self, workdir: Path) -> Path:
        return workdir / "control" / self.host

    def argv(self, release: Release, workdir: Path, bootstrap: str) -> list[str]:
        log = self.log_path(workdir)
        log.parent.mkdir(parents=True, exist_ok=True)
        self.control_path(workdir).parent.mkdir(parents=True, exist_ok=True)
        props = workdir / "config" / f"{self.host}.properties"
        props.parent.mkdir(parents=True, exist_ok=True)
        # MirrorMaker's mm2.properties names each cluster's bootstrap itself (<alias>.bootstrap.servers)
        config = {**({} if self.kind == "mirror-maker" else {"bootstrap.servers": bootstrap}), **self.config}
        if self.kind == "streams":
            config.setdefault("state.dir", str(workdir / "state" / self.host))
        props.write_text("".join(f"{k}={v}\n" for k, v in config.items()), encoding="utf-8")
        if self.kind in PYTHON_MODULES:
            try:
                __import__(PYTHON_MODULES[self.kind])
            except ImportError:
                raise LabError(f"process {self.host} needs the Python library {self.kind} "
                               "(pip install -e \".[clients]\")", ENVIRONMENT)
            return [sys.executable, "-m", "rebalance_doctor.lab.pyclients", self.kind, str(props),
                    str(self.control_path(workdir)), str(log), self.log_level]
        if self.kind == "kafkajs":
            node = require_node()
            return [node, str(PROGRAM), str(modules("kafkajs")), str(props), str(self.control_path(workdir)),
                    str(log), self.log_level]
        if self.kind in GO_LIBRARIES:
            return [str(go_program(self.kind)), str(props), str(self.control_path(workdir)), str(log), self.log_level]
        if self.kind == "mirror-maker":
            # as connect-mirror-maker.sh runs it: Connect's log configuration, connect.log in kafka.logs.dir
            return ["java", *JVM_OPTIONS[:-2], "-Xmx384m", f"-Dkafka.logs.dir={log.parent}",
                    release.logging_property("connect"), "-cp", release.mirror_classpath,
                    "org.apache.kafka.connect.mirror.MirrorMaker", str(props)]
        cp = f"{classes(release)}:{release.classpath}"
        if self.kind == "connect":
            return ["java", *JVM_OPTIONS[:-2], "-Xmx384m", f"-Dkafka.logs.dir={log.parent}",
                    release.logging_property("connect"), "-cp", cp,
                    "org.apache.kafka.connect.cli.ConnectDistributed", str(props)]
        java = ["java", *JVM_OPTIONS, f"-Dlab.log.file={log}", release.logging_property("client"), "-cp", cp]
        if self.kind == "java-consumer":
            return [*java, "LabClient", "consumer", str(props), str(self.control_path(workdir))]
        if self.kind == "java-producer":
            return [*java, "LabClient", "producer", str(props), str(self.config.get("lab.topic", "orders")),
                    str(self.config.get("lab.rate", 20))]
        if self.kind == "share-consumer":
            return [*java, "LabShare", str(props), str(self.control_path(workdir))]
        return [*java, "LabStreams", str(props), str(self.control_path(workdir))]
