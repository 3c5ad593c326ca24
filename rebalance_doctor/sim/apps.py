"""Applications that embed Kafka consumers: start-up lines, the poll loop, processing, shutdown.

The application writes what a Java service embedding a KafkaConsumer writes: its own start-up
and progress lines (its logger, never a Kafka one), the consumer's configuration dump and version
lines, then the group protocol's lines as the consumer lives them. Its processing time per batch is
the scenario's lever: ordinary batches, or a stall (a slow dependency, a poison record, a long GC)
that outlasts max.poll.interval.ms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..core.toml import load_toml
from ..packgen.inventory import version_key
from . import assignors
from .catalog import release
from .consumer import Consumer, ConsumerConfig, ConsumerError
from .process import Jvm

COMMITS = {"2.4.0": "77a89fcf8d7fa018", "2.8.0": "ebb1d6e21cc92130", "3.0.0": "8cb0a5e9d3441962",
           "3.3.1": "e23c59d00e687ff5", "3.6.0": "60e845626d8a465a", "3.9.0": "84caaa6e9da06435",
           "4.0.0": "985bc99521dd22bb", "4.1.0": "13f70256db3c994c", "4.2.0": "a18251bae0b825c6",
           "4.3.0": "a9ce3221537b8653", "4.3.1": "26b251a451ce941d", "4.3.2": "0a6c96d3b61167f1",
           "4.4.0": "1156b2752aaa28ea"}


@lru_cache(maxsize=1)
def _config_keys() -> dict:
    return load_toml(Path(__file__).with_name("configs.toml"))


def config_dump(section: str, version: str, values: dict[str, str]) -> str:
    """The body of 'ConsumerConfig values: ' (sorted key = value lines, each ending the line)."""
    rel = version_key(release(version))
    lines = []
    for key, spec in sorted(_config_keys()[section].items()):
        if not version_key(spec.get("since", "2.4.0")) <= rel <= version_key(spec.get("until", "9.9.9")):
            continue
        lines.append(f"\t{key} = {values.get(key, spec['value'])}\n")
    return "".join(lines)


@dataclass
class Workload:
    """How long the application spends on each polled batch."""

    batch_ms: tuple[float, float] = (5.0, 400.0)
    stalls: list[tuple[float, float]] = field(default_factory=list)   # (from time, duration): the next batch after
    progress_every_ms: float = 30_000.0
    logger: str = "com.example.orders.OrderProcessor"


class ConsumerApp:
    """A service JVM with one KafkaConsumer in a poll loop."""

    def __init__(self, world, host: str, log, cfg: ConsumerConfig, topics: dict[str, int],
                 workload: Workload | None = None, label: str = "steady", app_name: str = "order-service"):
        self.world = world
        self.env = world.env
        self.rng = world.rng
        self.host = host
        self.log = log
        self.cfg = cfg
        self.topics = topics
        self.workload = workload or Workload()
        self.label = label
        self.app_name = app_name
        self.jvm: Jvm | None = None
        self.consumer: Consumer | None = None
        self.starts = 0
        self.last_progress = 0.0
        self.stopping = False
        self.stopped = None

    # -- life cycle ----------------------------------------------------------------------------------
    def start(self) -> None:
        self.starts += 1
        self.jvm = Jvm(self.world, self.host, self.log, self.world.host(self.host).ip)
        self.consumer = self.make_consumer()
        self.stopping = False
        self.stopped = self.env.event()
        self.jvm.spawn(self._main(), "main")

    def make_consumer(self) -> Consumer:
        return Consumer(self.jvm, self.cfg, self.topics, self.label)

    def _main(self):
        log, c = self.log, self.consumer
        log.other("INFO", "com.example.Application", f"Starting {self.app_name} on {self.host} with PID "
                  f"{self.rng.randint(1, 4000)}")
        yield self.env.timeout(self.rng.uniform(800, 2500))
        self.startup_lines()
        yield self.env.timeout(self.rng.uniform(20, 120))
        c.say("consumer.subscribed", topics=list(self.cfg.topics))
        self.jvm.spawn(c.heartbeat_loop(), "heartbeat")
        yield from self.poll_loop()

    def startup_lines(self) -> None:
        c, cfg = self.consumer, self.cfg
        strategies = "[" + ", ".join(f"class {assignors.CLASS_NAMES[a]}" for a in cfg.assignors) + "]"
        values = {"group.id": cfg.group, "client.id": cfg.client_id,
                  "group.instance.id": cfg.instance or "null",
                  "session.timeout.ms": str(cfg.session_ms), "heartbeat.interval.ms": str(cfg.heartbeat_ms),
                  "max.poll.interval.ms": str(cfg.max_poll_ms), "max.poll.records": str(cfg.max_poll_records),
                  "enable.auto.commit": "true" if cfg.auto_commit else "false",
                  "partition.assignment.strategy": strategies,
                  "bootstrap.servers": "[" + ", ".join(f"{b.host}:{b.port}" for b in
                                                        self.world.cluster.brokers.values()) + "]",
                  "key.deserializer": "class org.apache.kafka.common.serialization.StringDeserializer"}
        self.log.say("consumer.config", body=config_dump("consumer", c.version, values))
        c.say("consumer.rebalance_protocol_banner", config="group.protocol", value="consumer")
        rel = release(c.version)
        self.log.say("consumer.kafka_version", version=c.version)
        self.log.say("consumer.kafka_commit", commit=COMMITS[rel])
        self.log.say("consumer.kafka_start", start_ms=int(self.world.start.timestamp() * 1000 + self.env.now))

    def poll_loop(self):
        c = self.consumer
        timeout = self.rng.choice((100, 250, 500, 1000))
        while not self.stopping:
            try:
                records = yield from c.poll(timeout)
            except ConsumerError as error:
                yield from self.on_poll_error(error)
                continue
            yield from self.process(records)
        yield from c.close()
        self.stopped.succeed()

    def on_poll_error(self, error: ConsumerError):
        """A Spring-style container: log the exception and keep polling after a back-off."""
        self.log.other("ERROR", "com.example.kafka.ConsumerLoop", "Error while polling for records",
                       throwable=error.failure.throwable())
        yield from self.jvm.sleep(self.rng.uniform(1000, 5000))

    def process(self, records: int):
        if not records:
            return
        now = self.env.now
        duration = self.rng.uniform(*self.workload.batch_ms)
        for i, (at, length) in enumerate(self.workload.stalls):
            if now >= at:
                duration = length
                self.workload.stalls.pop(i)
                break
        if now - self.last_progress > self.workload.progress_every_ms:
            self.last_progress = now
            self.log.other("INFO", self.workload.logger, f"Processed {records} records in "
                           f"{int(self.rng.uniform(*self.workload.batch_ms))} ms")
        yield from self.jvm.sleep(duration)

    def shutdown(self, grace_ms: float = 30_000):
        """A graceful stop (SIGTERM): the poll loop closes the consumer and the JVM exits; after the
        grace period the process is killed (SIGKILL) whatever it was doing."""
        if self.jvm is None or not self.jvm.alive:
            return
        self.log.other("INFO", "com.example.Application", f"Shutting down {self.app_name}")
        self.stopping = True
        yield self.env.any_of([self.stopped, self.env.timeout(grace_ms)])
        if self.stopped.processed:
            self.jvm.stop()
        else:
            self.jvm.crash()

    def crash(self) -> None:
        if self.jvm is not None:
            self.jvm.crash()
