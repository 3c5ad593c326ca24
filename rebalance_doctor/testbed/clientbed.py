"""Real clients, really rebalancing: record what they log as test fixtures.

    python -m rebalance_doctor.testbed --out fixtures/testbed            # every scenario
    python -m rebalance_doctor.testbed --out /tmp/bed --scenario scale-out

needs the ``clients`` extra (``pip install -e ".[clients]"``: confluent-kafka, which bundles
librdkafka, and kafka-python). librdkafka's mock cluster (``test.mock.num.brokers``) runs a real
group coordinator on 127.0.0.1 ports inside this process; each member is a process of its own
(``python -m rebalance_doctor.testbed member ...``) whose log is kept as it writes it:
librdkafka's stderr lines, or Python ``logging`` lines through confluent-kafka's ``logger``, or
kafka-python's. The scenarios drive them through real incidents (a poll loop stalling past
max.poll.interval.ms, a member killed so its session expires, a rolling restart, a scale-out,
cooperative-sticky), and ``scenario.md`` beside the logs says what was done and when. A mock
cluster writes no broker log: broker-side lines come from Kafka's templates elsewhere.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from ..core import eventnames as EV

TOPIC = "orders-events"
SCENARIO_FILE = "scenario.md"
GROUP = "orders"
PYTHON_FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
SESSION_MS = 6000            # the mock coordinator's smallest allowed session timeout
MAX_POLL_MS = 7000           # librdkafka wants max.poll.interval.ms >= session.timeout.ms


@dataclass
class Step:
    at: float          # seconds after the scenario started
    action: str        # start | stop | kill | stall
    member: str
    options: dict = field(default_factory=dict)


@dataclass
class Scenario:
    name: str
    description: str
    steps: list[Step]
    duration: float
    # What the logs must show, for the tests: events (by name) written by a member.
    expect: dict[str, list[str]] = field(default_factory=dict)
    # Whether the members' lines name the group (without debug=cgrp librdkafka's warnings do not).
    group_named: bool = True


SCENARIOS = {
    "scale-out": Scenario(
        "scale-out", "one member consumes, a second joins: one rebalance, partitions split (healthy)",
        [Step(0, "start", "member-1"), Step(6, "start", "member-2")], 16,
        {"member-1": [EV.JOIN_SUCCESS, EV.PARTITIONS_ASSIGNED], "member-2": [EV.JOIN_SUCCESS]}),
    "maxpoll": Scenario(
        "maxpoll", "member-1's poll loop stalls 10 s, past max.poll.interval.ms (7 s): it leaves the group, "
                   "member-2 takes its partitions; member-1 rejoins on its next poll()",
        [Step(0, "start", "member-1"), Step(0, "start", "member-2"), Step(8, "stall", "member-1", {"seconds": 10})], 28,
        {"member-1": [EV.POLL_TIMEOUT, EV.LEAVE_REQUEST]}),
    "session-expiry": Scenario(
        "session-expiry", "member-2 is killed (SIGKILL, no LeaveGroup): after session.timeout.ms the coordinator "
                          "removes it and member-1 rebalances",
        [Step(0, "start", "member-1"), Step(0, "start", "member-2"), Step(9, "kill", "member-2")], 24,
        {"member-1": [EV.HEARTBEAT_FAILED, EV.JOIN_SUCCESS]}),
    "rolling-restart": Scenario(
        "rolling-restart", "two members closed and restarted one after the other (healthy: clean leaves and joins)",
        [Step(0, "start", "member-1"), Step(0, "start", "member-2"), Step(8, "stop", "member-1"),
         Step(10, "start", "member-1"), Step(16, "stop", "member-2"), Step(18, "start", "member-2")], 28,
        {"member-1": [EV.LEAVE_REQUEST, EV.JOIN_SUCCESS], "member-2": [EV.LEAVE_REQUEST, EV.JOIN_SUCCESS]}),
    "cooperative-sticky": Scenario(
        "cooperative-sticky", "scale-out with partition.assignment.strategy=cooperative-sticky (incremental, healthy)",
        [Step(0, "start", "member-1", {"strategy": "cooperative-sticky"}),
         Step(6, "start", "member-2", {"strategy": "cooperative-sticky"})], 18,
        {"member-1": [EV.JOIN_SUCCESS], "member-2": [EV.JOIN_SUCCESS]}),
    "python-logging": Scenario(
        "python-logging", "scale-out with confluent-kafka-python's logger: librdkafka's lines through Python "
                          "logging ('%(asctime)s - %(name)s - %(levelname)s - %(message)s')",
        [Step(0, "start", "member-1", {"layout": "python"}), Step(6, "start", "member-2", {"layout": "python"})], 16,
        {"member-1": [EV.JOIN_SUCCESS], "member-2": [EV.JOIN_SUCCESS]}),
    "no-debug": Scenario(
        "no-debug", "maxpoll without debug=cgrp: only librdkafka's warnings (MAXPOLL) are written",
        [Step(0, "start", "member-1", {"debug": ""}), Step(0, "start", "member-2", {"debug": ""}),
         Step(8, "stall", "member-1", {"seconds": 10})], 24,
        {"member-1": [EV.POLL_TIMEOUT]}, group_named=False),
    "kafka-python": Scenario(
        "kafka-python", "a kafka-python 2.0.2 consumer (api_version pinned) and a librdkafka one in one group; the "
                        "mock coordinator rejects kafka-python's SyncGroup (INVALID_REQUEST), so it joins and fails to sync",
        [Step(0, "start", "member-1"), Step(4, "start", "member-2", {"client": "kafka-python"})], 20,
        {"member-2": [EV.JOIN_START]}),
}


# ---------------------------------------------------------------------------------------------
# a member process


def member(args: argparse.Namespace) -> int:
    """One consumer: polls until told to stop (SIGTERM: close, leaving the group) or killed; a
    stall file makes its poll loop sleep as a slow handler would."""
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    stall = Path(args.stall_file) if args.stall_file else None
    if args.client == "kafka-python":
        return _kafka_python_member(args, stop, stall)
    import confluent_kafka

    conf = {"bootstrap.servers": args.bootstrap, "group.id": GROUP, "client.id": args.name,
            "session.timeout.ms": SESSION_MS, "max.poll.interval.ms": MAX_POLL_MS,
            "heartbeat.interval.ms": 1000, "auto.offset.reset": "earliest",
            "partition.assignment.strategy": args.strategy}
    if args.debug:
        conf["debug"] = args.debug
    if args.layout == "python":
        logger = logging.getLogger("consumer")
        handler = logging.FileHandler(args.log)
        handler.setFormatter(logging.Formatter(PYTHON_FORMAT))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        conf["logger"] = logger
    consumer = confluent_kafka.Consumer(conf)
    consumer.subscribe([TOPIC])
    while not stop["now"]:
        consumer.poll(0.2)
        if stall is not None and stall.exists():
            seconds = float(stall.read_text() or "0")
            stall.unlink()
            time.sleep(seconds)
    consumer.close()
    return 0


def _kafka_python_member(args, stop, stall) -> int:
    import kafka

    logging.basicConfig(filename=args.log, level=logging.INFO, format=PYTHON_FORMAT)
    consumer = kafka.KafkaConsumer(TOPIC, bootstrap_servers=args.bootstrap, group_id=GROUP, client_id=args.name,
                                   api_version=(2, 5, 0), session_timeout_ms=SESSION_MS,
                                   max_poll_interval_ms=MAX_POLL_MS, heartbeat_interval_ms=1000,
                                   auto_offset_reset="earliest")
    while not stop["now"]:
        consumer.poll(timeout_ms=200)
        if stall is not None and stall.exists():
            seconds = float(stall.read_text() or "0")
            stall.unlink()
            time.sleep(seconds)
    consumer.close()
    return 0


# ---------------------------------------------------------------------------------------------
# a scenario


def run(scenario: Scenario, out: Path) -> dict:
    """Run one scenario against a fresh mock cluster; its logs and scenario.json go to out/<name>/."""
    import confluent_kafka

    target = out / scenario.name
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.log"):
        old.unlink()
    cluster = confluent_kafka.Producer({"test.mock.num.brokers": 1, "log_level": 0})
    brokers = cluster.list_topics(timeout=10).brokers.values()
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in brokers)
    for i in range(40):  # the topic, with records, so that members have partitions to share
        cluster.produce(TOPIC, f"record-{i}".encode(), partition=i % 4)
    cluster.flush(10)
    processes: dict[str, subprocess.Popen] = {}
    handles: list = []
    done: list[dict] = []
    started = time.monotonic()
    try:
        for step in sorted(scenario.steps, key=lambda s: s.at):
            time.sleep(max(0.0, step.at - (time.monotonic() - started)))
            log = target / f"{step.member}.log"
            stall = target / f".{step.member}.stall"
            if step.action == "start":
                options = {"debug": "cgrp", "layout": "stderr", "strategy": "range", "client": "confluent-kafka",
                           **step.options}
                command = [sys.executable, "-m", "rebalance_doctor.testbed", "member",
                           "--bootstrap", bootstrap, "--name", step.member, "--log", str(log),
                           "--stall-file", str(stall), "--debug", options["debug"], "--layout", options["layout"],
                           "--strategy", options["strategy"], "--client", options["client"]]
                stderr = open(log, "ab")
                handles.append(stderr)
                direct = options["layout"] == "stderr" and options["client"] == "confluent-kafka"
                processes[step.member] = subprocess.Popen(command, stderr=stderr if direct else subprocess.DEVNULL,
                                                          stdout=subprocess.DEVNULL, env={**os.environ})
            elif step.action == "stall":
                stall.write_text(str(step.options.get("seconds", 10)))
            elif step.action in ("stop", "kill"):
                process = processes.pop(step.member)
                process.send_signal(signal.SIGTERM if step.action == "stop" else signal.SIGKILL)
                process.wait(timeout=30)
            done.append({"at": round(time.monotonic() - started, 1), "action": step.action, "member": step.member,
                         **step.options})
        time.sleep(max(0.0, scenario.duration - (time.monotonic() - started)))
    finally:
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for handle in handles:
            handle.close()
        for stall in target.glob(".*.stall"):
            stall.unlink()
    record = {"scenario": scenario.name, "description": scenario.description, "group": GROUP, "topic": TOPIC,
              "group_named": scenario.group_named,
              "librdkafka": confluent_kafka.libversion()[0], "steps": done, "expect": scenario.expect,
              "generated_by": "python -m rebalance_doctor.testbed"}
    # Markdown, so that reading the directory as logs passes it over (a sidecar file).
    (target / SCENARIO_FILE).write_text(f"# {scenario.name}\n\n{scenario.description}\n\n```json\n"
                                        f"{json.dumps(record, indent=2)}\n```\n", encoding="utf-8")
    return record


def read_scenario(directory: Path) -> dict:
    """The record ``run`` wrote beside a scenario's logs."""
    text = (directory / SCENARIO_FILE).read_text(encoding="utf-8")
    return json.loads(text.split("```json\n", 1)[1].split("\n```", 1)[0])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "member":
        parser = argparse.ArgumentParser(prog="clientbed member")
        for name in ("--bootstrap", "--name", "--log", "--stall-file", "--debug", "--layout", "--strategy", "--client"):
            parser.add_argument(name, default="")
        return member(parser.parse_args(argv[1:]))
    parser = argparse.ArgumentParser(prog="python -m rebalance_doctor.testbed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    args = parser.parse_args(argv)
    for name in args.scenario or list(SCENARIOS):
        record = run(SCENARIOS[name], args.out)
        print(f"{name}: {len(record['steps'])} steps -> {args.out / name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
