"""The lab's non-Java consumers, one process each: a poll loop that logs as such applications do.

    python -m rebalance_doctor.lab.pyclients KIND CONFIG.properties CONTROL LOG LEVEL

KIND is confluent-kafka (librdkafka), kafka-python or aiokafka. Everything the process writes (the library's
own log lines, on stderr for librdkafka, and the application's ``logging`` lines) goes to LOG, as a
container runtime keeps a process's output. LEVEL ``debug`` turns on the library's debug contexts
(librdkafka ``debug=cgrp,consumer``; kafka-python's and aiokafka's loggers at DEBUG). The lab drives
faults from outside: signals, and "stall <ms>" in the CONTROL file, read between polls (a slow downstream
call: a blocking one for the thread-based libraries, an awaited one for aiokafka, whose heartbeat task
keeps running on the event loop meanwhile, as in an asyncio application that awaits a slow service).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time

APP_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def read_properties(path: str) -> dict[str, str]:
    out = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if "=" in line and not line.lstrip().startswith("#"):
                key, value = line.rstrip("\n").split("=", 1)
                out[key.strip()] = value.strip()
    return out


def control_command(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().strip()
        os.unlink(path)
        return text
    except OSError:
        return ""


def main(kind: str, config_path: str, control: str, log_path: str, level: str) -> int:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format=APP_FORMAT)
    log = logging.getLogger("orders.worker")
    config = read_properties(config_path)
    topic = config.pop("lab.topic", "orders")
    for key in [k for k in config if k.startswith("lab.")]:
        config.pop(key)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer = CONSUMERS[kind](config, topic, level, log)
    log.info("consumer started for topic %s", topic)
    processed, last_report = 0, time.time()
    try:
        while not stopping:
            processed += consumer.poll_batch()
            command = control_command(control)
            if command.startswith("stall "):
                ms = int(command.split()[1])
                log.info("calling the downstream service for the current batch")
                consumer.wait(ms / 1000)
                log.info("downstream service answered after %d ms", ms)
            if time.time() - last_report >= 10:
                log.info("processed %d records in the last %d s", processed, time.time() - last_report)
                processed, last_report = 0, time.time()
    finally:
        log.info("closing the consumer")
        consumer.close()
        log.info("consumer closed")
    return 0


class _confluent:
    def __init__(self, config, topic, level, log):
        from confluent_kafka import Consumer
        config = {k: v for k, v in config.items()}
        if level == "debug":
            config["debug"] = "cgrp,consumer"
        self.consumer = Consumer(config)
        self.log = log
        self.consumer.subscribe([topic], on_assign=lambda c, parts: log.info(
            "assigned: %s", [f"{p.topic}-{p.partition}" for p in parts]), on_revoke=lambda c, parts: log.info(
            "revoked: %s", [f"{p.topic}-{p.partition}" for p in parts]))

    def poll_batch(self) -> int:
        messages = self.consumer.consume(num_messages=100, timeout=0.5)
        for message in messages:
            if message.error():
                self.log.warning("consumer error: %s", message.error())
        return len(messages)

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def close(self):
        self.consumer.close()


class _kafka_python:
    def __init__(self, config, topic, level, log):
        from kafka import KafkaConsumer
        if level == "debug":
            logging.getLogger("kafka").setLevel(logging.DEBUG)
        kwargs = {_PYTHON_NAMES[k]: (int(v) if k.endswith(".ms") else v) for k, v in config.items()
                  if k in _PYTHON_NAMES}
        self.consumer = KafkaConsumer(**kwargs)
        self.consumer.subscribe([topic])

    def poll_batch(self) -> int:
        return sum(len(v) for v in self.consumer.poll(timeout_ms=500).values())

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def close(self):
        self.consumer.close()


# kafka-python's and aiokafka's constructor arguments for Kafka's config names.
_PYTHON_NAMES = {"bootstrap.servers": "bootstrap_servers", "group.id": "group_id",
                 "session.timeout.ms": "session_timeout_ms", "heartbeat.interval.ms": "heartbeat_interval_ms",
                 "max.poll.interval.ms": "max_poll_interval_ms", "auto.offset.reset": "auto_offset_reset",
                 "client.id": "client_id", "group.instance.id": "group_instance_id"}


class _aiokafka:
    """aiokafka's AIOKafkaConsumer driven by one event loop that runs while the application polls or
    awaits; its heartbeat task runs on the same loop."""

    def __init__(self, config, topic, level, log):
        import asyncio

        from aiokafka import AIOKafkaConsumer
        if level == "debug":
            logging.getLogger("aiokafka").setLevel(logging.DEBUG)
        kwargs = {_PYTHON_NAMES[k]: (int(v) if k.endswith(".ms") else v) for k, v in config.items()
                  if k in _PYTHON_NAMES}
        self.loop = asyncio.new_event_loop()
        self.sleep = asyncio.sleep

        async def start():
            consumer = AIOKafkaConsumer(**kwargs)
            consumer.subscribe([topic])
            await consumer.start()
            return consumer
        self.consumer = self.loop.run_until_complete(start())

    def poll_batch(self) -> int:
        batches = self.loop.run_until_complete(self.consumer.getmany(timeout_ms=500))
        return sum(len(v) for v in batches.values())

    def wait(self, seconds: float) -> None:
        self.loop.run_until_complete(self.sleep(seconds))

    def close(self):
        self.loop.run_until_complete(self.consumer.stop())
        self.loop.close()


CONSUMERS = {"confluent-kafka": _confluent, "kafka-python": _kafka_python, "aiokafka": _aiokafka}


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
