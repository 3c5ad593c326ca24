"""Write a seeded benchmark corpus of realistic Kafka logs (python benchmarks/make_corpus.py).

The corpus mixes broker, Connect, consumer application (Spring Boot), Kafka Streams (JSON lines)
and Kubernetes-prefixed consumer logs, with rotated names, some ``.gz`` files and one big plain
file (about a third of the corpus) so that byte-range splitting is exercised. About 0.5% of the
lines are rebalance records in Kafka's own wording: the samples of the pattern packs and the
templates of ``patterns/kafka/templates.jsonl`` (the project's own inventory, from the releases' -sources jars), rendered with varying groups, members
and generations. The rest is ordinary Kafka noise: log cleaner, segment rolls, fetch sessions,
producer and network client errors, Streams processing, stack traces and config dumps.

Speed: noise is rendered once into a few one-hour block templates per file kind (timestamps use
a sentinel date-hour); each output block is a template with its date-hour replaced (one C-level
``str.replace``) and freshly rendered rebalance records put into the template's slots.
2 GiB takes a minute or two.

Same seed and size, same bytes (gzip headers carry no name or time).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import time
import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATES = REPO / "patterns" / "kafka" / "templates.jsonl"   # the inventory packgen/sources.py extracts
PACKS = REPO / "patterns" / "packs"

SENTINEL_YMD = "1999-01-01"
SENTINEL_DH = (f"{SENTINEL_YMD} 00:", f"{SENTINEL_YMD}T00:")
SLOT = "\x00"                       # marks a rebalance record's place in a block template
LINES_PER_BLOCK = 16_000
TEMPLATES_PER_KIND = 6
REBALANCE_SHARE = 0.005

# ---------------------------------------------------------------------------------------------
# Layouts: how one record is rendered. ts = (ymd, hh, "MM:SS", "mmm").


def _kafka_body(prefix: str, msg: str, suffix: str) -> str:
    """log4j puts ``(%c)`` after the message; a Throwable's stack trace follows on later lines."""
    first, nl, rest = msg.partition("\n")
    if nl and "\tat " in rest:
        return f"{prefix}{first} {suffix}\n{rest}"
    return f"{prefix}{msg} {suffix}"


def render(layout: str, ts: tuple[str, str, str, str], level: str, logger: str, msg: str,
           thread: str, context: str = "") -> str:
    ymd, hh, mmss, ms = ts
    if layout == "kafka":
        return _kafka_body(f"[{ymd} {hh}:{mmss},{ms}] {level} ", msg, f"({logger})")
    if layout == "kafka-connect":
        return _kafka_body(f"[{ymd} {hh}:{mmss},{ms}] {level} {context}", msg, f"({logger}:{len(logger) * 7 % 900 + 40})")
    if layout == "spring-boot":
        return f"{ymd} {hh}:{mmss}.{ms} {level:>5} 1 --- [{thread[-15:]:>15}] {_abbrev(logger):<40} : {msg}"
    if layout == "logstash-json":
        return json.dumps({"@timestamp": f"{ymd}T{hh}:{mmss}.{ms}Z", "@version": "1", "message": msg,
                           "logger_name": logger, "thread_name": thread, "level": level,
                           "level_value": _LEVEL_VALUE[level]}, ensure_ascii=False)
    if layout == "kubernetes-strimzi":
        text = _kafka_body(f"{ymd} {hh}:{mmss},{ms} {level} ", msg, f"({logger}) [{thread}]")
        stamp = f"{ymd}T{hh}:{mmss}.{ms}{int(ms) * 997 % 1000000:06d}Z "
        return "\n".join(stamp + line for line in text.split("\n"))
    raise KeyError(layout)


_LEVEL_VALUE = {"TRACE": 5000, "DEBUG": 10000, "INFO": 20000, "WARN": 30000, "ERROR": 40000}


def _abbrev(logger: str) -> str:
    parts = logger.split(".")
    return ".".join([p[0] for p in parts[:-2]] + parts[-2:]) if len(logger) > 39 else logger


# ---------------------------------------------------------------------------------------------
# Names that vary.

TOPICS = ["orders", "payments", "shipments", "inventory", "customers", "clicks", "audit-events",
          "orders-enriched", "invoices", "__consumer_offsets"]
GROUPS = ["orders-service", "payments-processor", "shipment-tracker", "inventory-sync",
          "fraud-detector", "analytics-loader", "billing", "notification-sender"]
STREAMS_APPS = ["order-enricher", "fraud-scorer", "session-aggregator"]
CONNECT_GROUPS = ["connect-cluster", "connect-prod"]
CONNECTORS = ["jdbc-sink-orders", "s3-sink-audit", "debezium-postgres-source", "es-sink-clicks"]
REASONS = [
    "removing member {m} on heartbeat expiration", "removing member {m} on LeaveGroup",
    "Adding new member {m} with group instance id None", "Updating metadata for member {m} during Stable",
    "Leader {m} re-joining group during Stable", "rebalance failed due to MemberIdRequiredException",
    "Adding new member {m} with group instance id None; client reason: rebalance failed due to "
    "MemberIdRequiredException",
]
CLIENT_REASONS = [
    "group is already rebalancing", "cached metadata has changed from (version7: {orders=12}) at the "
    "beginning of the rebalance to (version8: {orders=24})", "rebalance failed due to "
    "'The group is rebalancing, so a rejoin is needed.' (RebalanceInProgressException)",
    "consumer pro-actively leaving the group", "need to revoke partitions and re-join",
]
STATES = ["Stable", "PreparingRebalance", "CompletingRebalance", "Empty"]


def uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def member_id(rng: random.Random, client: str) -> str:
    return f"{client}-{uuid(rng)}"


# ---------------------------------------------------------------------------------------------
# Noise: what a log holds besides rebalances. Each maker returns (level, logger, msg, thread).

STACK_IO = (
    "java.io.IOException: Connection to {node} was disconnected before the response was read\n"
    "\tat org.apache.kafka.clients.NetworkClientUtils.sendAndReceive(NetworkClientUtils.java:99)\n"
    "\tat kafka.server.BrokerBlockingSender.sendRequest(BrokerBlockingSender.scala:113)\n"
    "\tat kafka.server.RemoteLeaderEndPoint.fetch(RemoteLeaderEndPoint.scala:79)\n"
    "\tat kafka.server.AbstractFetcherThread.processFetchRequest(AbstractFetcherThread.scala:316)\n"
    "\tat kafka.server.AbstractFetcherThread.$anonfun$maybeFetch$3(AbstractFetcherThread.scala:130)\n"
    "\tat kafka.server.AbstractFetcherThread.maybeFetch(AbstractFetcherThread.scala:129)\n"
    "\tat kafka.server.AbstractFetcherThread.doWork(AbstractFetcherThread.scala:112)\n"
    "\tat kafka.server.ReplicaFetcherThread.doWork(ReplicaFetcherThread.scala:98)\n"
    "\tat org.apache.kafka.server.util.ShutdownableThread.run(ShutdownableThread.java:130)"
)
STACK_APP = (
    "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method "
    "'public void com.example.orders.OrderListener.onOrder(org.apache.kafka.clients.consumer.ConsumerRecord)' "
    "threw exception\n"
    "\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.decorateException(KafkaMessageListenerContainer.java:2869)\n"
    "\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeOnMessage(KafkaMessageListenerContainer.java:2814)\n"
    "\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.invokeOnMessage(KafkaMessageListenerContainer.java:2778)\n"
    "\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeRecordListener(KafkaMessageListenerContainer.java:2690)\n"
    "\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.pollAndInvoke(KafkaMessageListenerContainer.java:1354)\n"
    "\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.run(KafkaMessageListenerContainer.java:1245)\n"
    "\tat java.base/java.util.concurrent.Executors$RunnableAdapter.call(Executors.java:539)\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:833)\n"
    "Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms.\n"
    "\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)\n"
    "\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:197)\n"
    "\tat com.example.orders.OrderRepository.save(OrderRepository.java:57)\n"
    "\tat com.example.orders.OrderListener.onOrder(OrderListener.java:41)\n"
    "\t... 7 common frames omitted"
)
STACK_STREAMS = (
    "org.apache.kafka.common.errors.TimeoutException: Expiring {n} record(s) for {topic}-{p}:120001 ms has "
    "passed since batch creation\n"
    "\tat org.apache.kafka.clients.producer.internals.ProducerBatch.completeExceptionally(ProducerBatch.java:225)\n"
    "\tat org.apache.kafka.clients.producer.internals.Sender.sendProducerData(Sender.java:399)\n"
    "\tat org.apache.kafka.clients.producer.internals.Sender.runOnce(Sender.java:330)\n"
    "\tat org.apache.kafka.clients.producer.internals.Sender.run(Sender.java:243)\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:840)"
)
STACK_CONNECT = (
    "org.apache.kafka.connect.errors.RetriableException: java.sql.SQLException: Connection is closed\n"
    "\tat io.confluent.connect.jdbc.sink.JdbcSinkTask.put(JdbcSinkTask.java:118)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.deliverMessages(WorkerSinkTask.java:601)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.poll(WorkerSinkTask.java:350)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.iteration(WorkerSinkTask.java:250)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.execute(WorkerSinkTask.java:219)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerTask.doRun(WorkerTask.java:204)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerTask.run(WorkerTask.java:259)\n"
    "\tat java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
    "Caused by: java.sql.SQLException: Connection is closed\n"
    "\tat org.postgresql.jdbc.PgConnection.checkClosed(PgConnection.java:917)\n"
    "\t... 12 more"
)

CONFIG_KEYS = [
    ("acks", "-1"), ("batch.size", "16384"), ("bootstrap.servers", "[kafka-0:9092, kafka-1:9092, kafka-2:9092]"),
    ("buffer.memory", "33554432"), ("client.dns.lookup", "use_all_dns_ips"), ("client.id", "{client}"),
    ("compression.type", "lz4"), ("connections.max.idle.ms", "540000"), ("delivery.timeout.ms", "120000"),
    ("enable.idempotence", "true"), ("interceptor.classes", "[]"), ("key.serializer",
    "class org.apache.kafka.common.serialization.StringSerializer"), ("linger.ms", "5"),
    ("max.block.ms", "60000"), ("max.in.flight.requests.per.connection", "5"), ("max.request.size", "1048576"),
    ("metadata.max.age.ms", "300000"), ("metric.reporters", "[]"), ("metrics.num.samples", "2"),
    ("partitioner.class", "null"), ("receive.buffer.bytes", "32768"), ("reconnect.backoff.max.ms", "1000"),
    ("request.timeout.ms", "30000"), ("retries", "2147483647"), ("retry.backoff.ms", "100"),
    ("sasl.mechanism", "GSSAPI"), ("security.protocol", "PLAINTEXT"), ("send.buffer.bytes", "131072"),
    ("ssl.endpoint.identification.algorithm", "https"), ("ssl.protocol", "TLSv1.3"),
    ("transaction.timeout.ms", "60000"), ("transactional.id", "null"),
    ("value.serializer", "class org.apache.kafka.common.serialization.ByteArraySerializer"),
]


def _config_dump(kind: str, client: str) -> str:
    lines = [f"{kind} values: "]
    lines += [f"\t{k} = {v.format(client=client)}" for k, v in CONFIG_KEYS]
    return "\n".join(lines) + "\n"


def broker_noise(rng: random.Random, node: int) -> tuple[str, str, str, str]:
    topic = rng.choice(TOPICS[:-1])
    p = rng.randrange(24)
    off = rng.randrange(10_000, 90_000_000)
    other = rng.choice([n for n in (1, 2, 3) if n != node])
    k = rng.random()
    if k < 0.16:
        return ("INFO", "kafka.log.LocalLog", f"[LocalLog partition={topic}-{p}, dir=/var/lib/kafka/data] "
                f"Rolled new log segment at offset {off} in {rng.randrange(1, 9)} ms.", "data-plane-kafka-request-handler-3")
    if k < 0.28:
        return ("INFO", "org.apache.kafka.storage.internals.log.ProducerStateManager",
                f"[ProducerStateManager partition={topic}-{p}] Wrote producer snapshot at offset {off} with "
                f"{rng.randrange(0, 40)} producer ids in {rng.randrange(0, 6)} ms.", "data-plane-kafka-request-handler-1")
    if k < 0.38:
        return ("INFO", "kafka.log.UnifiedLog", f"[UnifiedLog partition={topic}-{p}, dir=/var/lib/kafka/data] "
                f"Deleting segment LogSegment(baseOffset={off}, size=1073741{rng.randrange(100, 999)}, "
                f"lastModifiedTime=1714{rng.randrange(100000000, 999999999)}, largestRecordTimestamp=Some(1714"
                f"{rng.randrange(100000000, 999999999)})) due to retention time 604800000ms breach based on the "
                f"largest record timestamp in the segment", "kafka-scheduler-4")
    if k < 0.45:
        return ("INFO", "kafka.log.LocalLog$", f"Deleted log /var/lib/kafka/data/{topic}-{p}/"
                f"{off:020d}.log.deleted.", "kafka-scheduler-7")
    if k < 0.53:
        return ("INFO", "state.change.logger", f"[Broker id={node}] Follower {topic}-{p} starts at leader epoch "
                f"{rng.randrange(3, 90)} from offset {off} with partition epoch {rng.randrange(10, 300)} and high "
                f"watermark {off - rng.randrange(0, 50)}. Current leader is {other}. Previous leader epoch was "
                f"{rng.randrange(2, 89)}.", "kafka-controller-event-thread")
    if k < 0.61:
        return ("INFO", "kafka.cluster.Partition", f"[Partition {topic}-{p} broker={node}] Shrinking ISR from "
                f"{node},{other},3 to {node},{other}. Leader: (highWatermark: {off}, endOffset: {off + 12}). Out of "
                f"sync replicas: (brokerId: 3, endOffset: {off - 400}, lastCaughtUpTimeMs: 1714{rng.randrange(10**8, 10**9)}).",
                "kafka-scheduler-2")
    if k < 0.67:
        return ("INFO", "kafka.authorizer.logger", f"Principal = User:svc-{rng.choice(GROUPS)} is Denied Operation = "
                f"Describe from host = 10.12.{rng.randrange(256)}.{rng.randrange(256)} on resource = Topic:LITERAL:"
                f"{topic} for request = Metadata with resourceRefCount = 1", "data-plane-kafka-request-handler-6")
    if k < 0.72:
        return ("INFO", "org.apache.kafka.clients.FetchSessionHandler", f"[ReplicaFetcher replicaId={node}, "
                f"leaderId={other}, fetcherId={rng.randrange(4)}] Node {other} sent an invalid full fetch response "
                f"with extraPartitions=({topic}-{p}), response=({topic}-{p})", f"ReplicaFetcherThread-0-{other}")
    if k < 0.76:
        return ("INFO", "kafka.server.ReplicaFetcherThread", f"[ReplicaFetcher replicaId={node}, leaderId={other}, "
                f"fetcherId=0] Error sending fetch request (sessionId={rng.randrange(10**8, 2**31)}, epoch="
                f"{rng.randrange(1, 9000)}) to node {other}:\n" + STACK_IO.format(node=other),
                f"ReplicaFetcherThread-0-{other}")
    if k < 0.80:
        return ("INFO", "kafka.coordinator.group.GroupMetadataManager", f"[GroupMetadataManager brokerId={node}] "
                f"Removed {rng.randrange(0, 30)} expired offsets in {rng.randrange(0, 4)} milliseconds.",
                "group-metadata-manager-0")
    if k < 0.84:
        return ("INFO", "org.apache.kafka.clients.NetworkClient", f"[BrokerToControllerChannelManager id={node} "
                f"name=alter-partition] Client requested connection close from node {other}",
                f"BrokerToControllerChannelManager id={node} name=alter-partition")
    if k < 0.88:
        return ("INFO", "org.apache.kafka.common.network.Selector", f"[SocketServer listenerType=BROKER, nodeId={node}] "
                f"Failed authentication with /10.12.{rng.randrange(256)}.{rng.randrange(256)} (channelId=10.12.0.{node}:"
                f"9093-10.12.{rng.randrange(256)}.{rng.randrange(256)}:{rng.randrange(30000, 60000)}-{rng.randrange(9)}) "
                f"(SSL handshake failed)", "data-plane-kafka-network-thread-1-ListenerName(SSL)-SSL-2")
    if k < 0.92:
        return ("WARN", "kafka.server.ReplicaManager", f"[ReplicaManager broker={node}] Unable to describe replica "
                f"dirs for /var/lib/kafka/data", "data-plane-kafka-request-handler-0")
    if k < 0.96:
        before = rng.randrange(10, 90)
        return ("INFO", "kafka.log.LogCleaner", "[kafka-log-cleaner-thread-0]: \n"
                f"\tLog cleaner thread 0 cleaned log __consumer_offsets-{p} (dirty section = [{off}, {off + 9000}])\n"
                f"\t{before}.1 MB of log processed in 0.{rng.randrange(1, 9)} seconds ({rng.randrange(50, 400)}.2 MB/sec).\n"
                f"\tIndexed {before}.1 MB in 0.1 seconds ({rng.randrange(100, 900)}.5 Mb/sec, 41.3% of total time)\n"
                f"\tBuffer utilization: 0.{rng.randrange(0, 9)}%\n"
                f"\tCleaned {before}.1 MB in 0.2 seconds ({rng.randrange(100, 900)}.1 Mb/sec, 58.7% of total time)\n"
                f"\tStart size: {before}.1 MB ({off % 90000} messages)\n"
                f"\tEnd size: 0.{rng.randrange(1, 9)} MB ({off % 900} messages)\n"
                f"\t99.{rng.randrange(0, 9)}% size reduction (99.0% fewer messages)\n", "kafka-log-cleaner-thread-0")
    return ("INFO", "kafka.controller.KafkaController", f"[Controller id={node}] Processing automatic preferred "
            f"replica leader election", "controller-event-thread")


def client_noise(rng: random.Random, group: str, client: str) -> tuple[str, str, str, str]:
    topic = rng.choice(TOPICS[:-2])
    p = rng.randrange(24)
    off = rng.randrange(10_000, 90_000_000)
    node = rng.randrange(3)
    ctx = f"[Consumer clientId={client}, groupId={group}] "
    k = rng.random()
    main = f"org.springframework.kafka.KafkaListenerEndpointContainer#0-{rng.randrange(3)}-C-1"
    if k < 0.40:
        return ("INFO", "com.example.orders.OrderListener", f"Processed order {off} (partition {p}, offset "
                f"{off + 17}) in {rng.randrange(1, 80)} ms", main)
    if k < 0.52:
        return ("INFO", "com.example.orders.api.OrderController", f"GET /api/orders/{off} -> 200 in "
                f"{rng.randrange(1, 300)} ms", f"http-nio-8080-exec-{rng.randrange(1, 10)}")
    if k < 0.58:
        return ("INFO", "org.apache.kafka.clients.NetworkClient", ctx + f"Node {node} disconnected.",
                f"kafka-coordinator-heartbeat-thread | {group}")
    if k < 0.62:
        return ("INFO", "org.apache.kafka.clients.NetworkClient", ctx + f"Cancelled in-flight FETCH request with "
                f"correlation id {rng.randrange(10**6)} due to node {node} being disconnected (elapsed time since "
                f"creation: 30012ms, elapsed time since send: 30012ms, request timeout: 30000ms)", main)
    if k < 0.67:
        return ("INFO", "org.apache.kafka.clients.FetchSessionHandler", ctx + f"Error sending fetch request "
                f"(sessionId={rng.randrange(10**8, 2**31)}, epoch={rng.randrange(1, 9000)}) to node {node}:\n"
                "org.apache.kafka.common.errors.DisconnectException: null", main)
    if k < 0.72:
        return ("WARN", "org.apache.kafka.clients.producer.internals.Sender", f"[Producer clientId=producer-{rng.randrange(1, 4)}] "
                f"Got error produce response with correlation id {rng.randrange(10**6)} on topic-partition {topic}-{p}, "
                f"retrying (2147483646 attempts left). Error: NOT_LEADER_OR_FOLLOWER", "kafka-producer-network-thread | producer-1")
    if k < 0.77:
        return ("INFO", "org.apache.kafka.clients.Metadata", ctx + f"Resetting the last seen epoch of partition "
                f"{topic}-{p} to {rng.randrange(3, 90)} since the associated topicId changed from null to "
                f"{uuid(rng)[:22]}", main)
    if k < 0.82:
        return ("INFO", "org.apache.kafka.clients.consumer.internals.SubscriptionState", ctx + f"Resetting offset "
                f"for partition {topic}-{p} to position FetchPosition{{offset={off}, offsetEpoch=Optional.empty, "
                f"currentLeader=LeaderAndEpoch{{leader=Optional[kafka-{node}:9092 (id: {node} rack: null)], epoch="
                f"{rng.randrange(3, 90)}}}}}.", main)
    if k < 0.86:
        return ("DEBUG", "com.zaxxer.hikari.pool.HikariPool", f"HikariPool-1 - Pool stats (total=10, active="
                f"{rng.randrange(11)}, idle={rng.randrange(11)}, waiting=0)", "HikariPool-1 housekeeper")
    if k < 0.89:
        return ("ERROR", "org.springframework.kafka.listener.KafkaMessageListenerContainer",
                f"Error handler threw an exception\n{STACK_APP}", main)
    if k < 0.90:
        return ("INFO", "org.apache.kafka.clients.producer.ProducerConfig",
                _config_dump("ProducerConfig", f"producer-{rng.randrange(1, 4)}"), "main")
    if k < 0.95:
        return ("INFO", "com.example.orders.OrderListener", f"Acknowledged batch of {rng.randrange(1, 500)} "
                f"records from {topic}-{p} up to offset {off}", main)
    return ("WARN", "org.apache.kafka.clients.NetworkClient", f"[AdminClient clientId=adminclient-1] Connection to "
            f"node {node} (kafka-{node}.kafka-headless/10.12.0.{node}:9092) could not be established. Broker may "
            f"not be available.", "kafka-admin-client-thread | adminclient-1")


def streams_noise(rng: random.Random, app: str, pid: str) -> tuple[str, str, str, str]:
    n = rng.randrange(1, 5)
    thread = f"{app}-{pid}-StreamThread-{n}"
    topic = rng.choice(TOPICS[:-2])
    p = rng.randrange(24)
    off = rng.randrange(10_000, 90_000_000)
    k = rng.random()
    if k < 0.30:
        return ("INFO", "com.example.streams.EnrichmentProcessor", f"Enriched order {off} with customer "
                f"{rng.randrange(10**6)} (task 0_{p})", thread)
    if k < 0.55:
        return ("INFO", "org.apache.kafka.streams.processor.internals.StreamThread", f"stream-thread [{thread}] "
                f"Processed {rng.randrange(1000, 900000)} total records, ran 0 punctuators, and committed "
                f"{rng.randrange(1, 400)} total tasks since the last update", thread)
    if k < 0.65:
        return ("INFO", "org.apache.kafka.streams.processor.internals.StoreChangelogReader", f"stream-thread "
                f"[{thread}] Finished restoring changelog {app}-store-changelog-{p} to store store with a total "
                f"number of {rng.randrange(10, 90000)} records", thread)
    if k < 0.72:
        return ("INFO", "org.apache.kafka.streams.processor.internals.StateDirectory", f"stream-thread "
                f"[{app}-{pid}-CleanupThread] Deleting obsolete state directory 0_{p} for task 0_{p} as 600000ms has "
                f"elapsed (cleanup delay is 600000ms).", f"{app}-{pid}-CleanupThread")
    if k < 0.78:
        return ("ERROR", "org.apache.kafka.streams.processor.internals.RecordCollectorImpl", f"stream-thread "
                f"[{thread}] task [0_{p}] Error encountered sending record to topic {topic}-enriched for task 0_{p} "
                f"due to:\n" + STACK_STREAMS.format(n=rng.randrange(1, 90), topic=topic, p=p), thread)
    if k < 0.86:
        return ("INFO", "org.apache.kafka.clients.NetworkClient", f"[Consumer clientId={thread}-consumer, "
                f"groupId={app}] Node {rng.randrange(3)} disconnected.", thread)
    if k < 0.93:
        return ("INFO", "org.apache.kafka.clients.Metadata", f"[Producer clientId={thread}-producer] Resetting the "
                f"last seen epoch of partition {topic}-{p} to {rng.randrange(3, 90)} since the associated topicId "
                f"changed from null to {uuid(rng)[:22]}", f"kafka-producer-network-thread | {thread}-producer")
    return ("DEBUG", "org.apache.kafka.streams.state.internals.RocksDBStore", f"Flushing store {app}-store "
            f"segment {rng.randrange(10**6)} of task 0_{p}", thread)


def connect_noise(rng: random.Random, worker: int) -> tuple[str, str, str, str, str]:
    connector = rng.choice(CONNECTORS)
    task = rng.randrange(4)
    tid = f"{connector}-{task}"
    context = f"[{connector}|task-{task}] "
    topic = rng.choice(TOPICS[:-2])
    p = rng.randrange(24)
    off = rng.randrange(10_000, 90_000_000)
    k = rng.random()
    if k < 0.25:
        return ("INFO", "org.apache.kafka.connect.runtime.WorkerSinkTask", f"WorkerSinkTask{{id={tid}}} Committing "
                f"offsets asynchronously using sequence number {rng.randrange(10**5)}: {{{topic}-{p}=OffsetAndMetadata"
                f"{{offset={off}, leaderEpoch=null, metadata=''}}}}", f"task-thread-{tid}", context)
    if k < 0.45:
        return ("INFO", "org.apache.kafka.connect.runtime.WorkerSourceTask", f"WorkerSourceTask{{id={tid}}} "
                f"Committing offsets for {rng.randrange(1, 5000)} acknowledged messages", f"task-thread-{tid}",
                f"[{connector}|task-{task}|offsets] ")
    if k < 0.60:
        return ("INFO", "io.confluent.connect.jdbc.sink.JdbcDbWriter", f"Completed write operation for "
                f"{rng.randrange(1, 500)} records to the database", f"task-thread-{tid}", context)
    if k < 0.72:
        return ("INFO", "org.apache.kafka.connect.runtime.rest.RestServer", f"10.12.{rng.randrange(256)}."
                f"{rng.randrange(256)} - - [01/May/2024:13:45:{rng.randrange(60):02d} +0000] \"GET /connectors/"
                f"{connector}/status HTTP/1.1\" 200 {rng.randrange(100, 900)} \"-\" \"curl/8.5.0\" {rng.randrange(1, 40)}",
                f"qtp{rng.randrange(10**8)}-{rng.randrange(20, 60)}", "")
    if k < 0.78:
        return ("ERROR", "org.apache.kafka.connect.runtime.WorkerSinkTask", f"WorkerSinkTask{{id={tid}}} "
                f"RetriableException from SinkTask:\n{STACK_CONNECT}", f"task-thread-{tid}", context)
    if k < 0.86:
        return ("INFO", "org.apache.kafka.clients.NetworkClient", f"[Consumer clientId=connector-consumer-{tid}, "
                f"groupId=connect-{connector}] Node {rng.randrange(3)} disconnected.", f"task-thread-{tid}", context)
    if k < 0.87:
        return ("INFO", "org.apache.kafka.clients.producer.ProducerConfig",
                _config_dump("ProducerConfig", f"connector-producer-{tid}"), f"task-thread-{tid}", context)
    if k < 0.94:
        return ("INFO", "org.apache.kafka.connect.runtime.WorkerSourceTask", f"WorkerSourceTask{{id={tid}}} "
                f"Either no records were produced by the task since the last offset commit, or every record has "
                f"been filtered out by a transformation or dropped due to transformation or conversion errors.",
                f"task-thread-{tid}", f"[{connector}|task-{task}|offsets] ")
    return ("WARN", "org.apache.kafka.clients.NetworkClient", f"[Producer clientId=connector-producer-{tid}] "
            f"Error while fetching metadata with correlation id {rng.randrange(10**5)} : {{{topic}=LEADER_NOT_AVAILABLE}}",
            f"kafka-producer-network-thread | connector-producer-{tid}", context)


# ---------------------------------------------------------------------------------------------
# Rebalance records: pack samples and templates, rendered with varying names and numbers.

_KAFKA_LINE = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d[ T][\d:,.]+)\] (?P<level>[A-Z]+) (?P<msg>.*?) "
                         r"\((?P<logger>[A-Za-z_$][\w.$]*)(?::\d+)?\)(?P<rest>(?:\n.*)?)$", re.S)


@dataclass
class Rebalance:
    component: str
    level: str
    logger: str
    text: str                       # the message with {group} {gen} {member} {client} ... fields
    from_pack: bool = False


def _templatize(msg: str, expect: dict) -> str | None:
    """Turn a sample's concrete values into fields so that each use varies them."""
    text = msg.replace("{", "{{").replace("}", "}}")
    group = expect.get("group")
    if isinstance(group, str) and len(group) >= 3 and group in text:
        text = re.sub(r"(?<![\w-])" + re.escape(group) + r"(?![\w])", "{group}", text)
    text = re.sub(r"((?:generation|generationId=|generation=|old generation|Generation\{generationId=) ?)(\d+)",
                  r"\1{gen}", text)
    return text


def pack_rebalances() -> list[Rebalance]:
    found = []
    for path in sorted(PACKS.glob("*.toml")):
        pack = tomllib.loads(path.read_text())
        component = pack.get("component", path.stem)
        for pattern in pack.get("patterns", {}).values():
            for variant in pattern.get("variants", []):
                for sample in variant.get("samples", []):
                    line = sample if isinstance(sample, str) else sample.get("line", "")
                    expect = {} if isinstance(sample, str) else sample.get("expect", {})
                    m = _KAFKA_LINE.match(line)
                    if not m:
                        continue
                    text = _templatize(m["msg"] + m["rest"], expect)
                    if text:
                        found.append(Rebalance(component, m["level"], m["logger"], text, True))
    return found


_PREFIXES = (
    ("[Consumer clientId=<application.id>", "[Consumer clientId={thread}-consumer, groupId={app}] "),
    ("[Consumer clientId=", "[Consumer clientId={client}, groupId={group}] "),
    ("[Worker clientId=", "[Worker clientId=connect-{worker}, groupId={cgroup}] "),
    ("[GroupCoordinator id=<nodeId> topic", "[GroupCoordinator id={node} topic=__consumer_offsets partition={p}] "),
    ("[GroupCoordinator id=", "[GroupCoordinator id={node}] "),
    ("[GroupCoordinator <brokerId>]", "[GroupCoordinator {node}]: "),
    ("[GroupMetadataManager brokerId", "[GroupMetadataManager brokerId={node}] "),
    ("stream-thread [<main-consumer", "stream-thread [{thread}-consumer] "),
    ("stream-thread [", "stream-thread [{thread}] "),
    ("stream-client [", "stream-client [{app}-{pid}] "),
    ("[Heartbeat groupID=", "[Heartbeat groupID={group}] "),
)


def _param_value(name: str) -> str:
    n = name.lower()
    if "?" in n:
        return ""
    if "topic_name" in n:
        return "__consumer_offsets"
    if "partitionfor" in n:
        return "{p}"
    if "generation" in n or "epoch" in n:
        return "{gen}"
    if "member" in n or "leader" in n:
        return "{member}"
    if "instance" in n:
        return "None"
    if "group" in n and ("id" in n or n.endswith("group")):
        return "{group}"
    if "reason" in n:
        return "{reason}"
    if "state" in n:
        return "{state}"
    if "partition" in n or n in ("tp", "topicpartition"):
        return "{topic}-{p}"
    if "coordinator" in n:
        return "kafka-{node}:9092 (id: 2147483646 rack: null)"
    if "error" in n or "exception" in n or "cause" in n or n == "e" or "message" in n:
        return "The coordinator is not aware of this member."
    if "size" in n or "count" in n or "num" in n:
        return "{n}"
    if "assignment" in n or "partitions" in n:
        return "[{topic}-{p}, {topic}-{p2}]"
    return "{n}"


def template_rebalances() -> list[Rebalance]:
    if not TEMPLATES.exists():
        return []
    found = []
    for raw in TEMPLATES.read_text().splitlines():
        row = json.loads(raw)
        if row["version"] not in ("2.8.0", "3.6.0", "3.9.0") or row["level"] not in ("INFO", "WARN", "ERROR"):
            continue
        text = row["template"].replace("{", "\x01").replace("}", "\x02")
        params = row.get("params", [])
        pieces = text.split("\x01\x02")
        if len(pieces) - 1 != len(params):
            continue
        out = pieces[0]
        for param, piece in zip(params, pieces[1:]):
            out += _param_value(param) + piece
        out = out.replace("\x01", "{{").replace("\x02", "}}")
        notes = row.get("notes", "")
        prefix = ""
        if "prefix: " in notes:
            declared = notes.split("prefix: ", 1)[1]
            prefix = next((p for key, p in _PREFIXES if declared.startswith(key)), "")
        found.append(Rebalance(row["component"], row["level"], row["logger"], prefix + out))
    return found


class Story:
    """The rebalance side of one file: groups with generations that move forward."""

    def __init__(self, rng: random.Random, kind: str, pool: list[Rebalance], node: int):
        self.rng = rng
        self.kind = kind
        self.pool = pool
        self.samples = [r for r in pool if r.from_pack]
        self.node = node
        self.groups = {g: rng.randrange(1, 200) for g in rng.sample(GROUPS, 4)}
        self.app = rng.choice(STREAMS_APPS)
        self.pid = uuid(rng)

    def record(self) -> tuple[str, str, str, str]:
        rng = self.rng
        # Pack samples are the lines the tool knows; templates add Kafka's other rebalance wording.
        item = rng.choice(self.samples if self.samples and rng.random() < 0.6 else self.pool)
        group = rng.choice(list(self.groups))
        if rng.random() < 0.15:
            self.groups[group] += 1
        gen = self.groups[group]
        client = f"consumer-{group}-{rng.randrange(1, 4)}"
        thread = f"{self.app}-{self.pid}-StreamThread-{rng.randrange(1, 5)}"
        values = dict(group=group, gen=gen, client=client, member=member_id(rng, client),
                      reason=rng.choice(REASONS).format(m=member_id(rng, client)) if item.component == "broker"
                      else rng.choice(CLIENT_REASONS), state=rng.choice(STATES), topic=rng.choice(TOPICS[:-2]),
                      p=rng.randrange(24), p2=rng.randrange(24), node=self.node, n=rng.randrange(1, 12),
                      worker=rng.randrange(1, 4), cgroup=CONNECT_GROUPS[self.node % 2], app=self.app,
                      pid=self.pid, thread=thread)
        try:
            msg = item.text.format(**values)
        except (KeyError, IndexError, ValueError):
            msg = item.text
        if item.component == "streams":
            thread_name = thread
        elif item.component == "broker":
            thread_name = "group-coordinator-event-processor-0"
        else:
            thread_name = f"kafka-coordinator-heartbeat-thread | {group}"
        return item.level, item.logger, msg, thread_name


# ---------------------------------------------------------------------------------------------
# Files.

@dataclass
class FileSpec:
    path: str            # relative to the corpus root
    kind: str            # broker | client | streams | connect | k8s
    layout: str
    share: float         # share of the corpus (uncompressed bytes)
    gz: bool = False
    start: datetime = datetime(2024, 5, 1, 0)
    node: int = 1


CORPUS = [
    FileSpec("broker-1/server.log", "broker", "kafka", 0.34, start=datetime(2024, 5, 3, 0), node=1),
    FileSpec("broker-1/server.log.1", "broker", "kafka", 0.04, start=datetime(2024, 5, 2, 12), node=1),
    FileSpec("broker-1/server.log.2024-05-01-23.gz", "broker", "kafka", 0.03, True, datetime(2024, 5, 1, 23), 1),
    FileSpec("broker-2/server.log", "broker", "kafka", 0.08, start=datetime(2024, 5, 2, 0), node=2),
    FileSpec("broker-2/server.log.2024-05-01-22.gz", "broker", "kafka", 0.03, True, datetime(2024, 5, 1, 22), 2),
    FileSpec("broker-3/server.log", "broker", "kafka", 0.06, start=datetime(2024, 5, 2, 0), node=3),
    FileSpec("connect-1/connect.log", "connect", "kafka-connect", 0.08, start=datetime(2024, 5, 2, 0), node=1),
    FileSpec("connect-1/connect.log.1.gz", "connect", "kafka-connect", 0.02, True, datetime(2024, 5, 1, 20), 1),
    FileSpec("orders-service/application.log", "client", "spring-boot", 0.10, start=datetime(2024, 5, 2, 0)),
    FileSpec("orders-service/application.2024-05-01.0.log.gz", "client", "spring-boot", 0.03, True,
             datetime(2024, 5, 1, 0)),
    FileSpec("order-enricher/streams.json.log", "streams", "logstash-json", 0.09, start=datetime(2024, 5, 2, 0)),
    FileSpec("order-enricher/streams.json.log.1.gz", "streams", "logstash-json", 0.02, True, datetime(2024, 5, 1, 20)),
    FileSpec("k8s/payments-processor-7d9f8c-xk2p4.log", "k8s", "kubernetes-strimzi", 0.08,
             start=datetime(2024, 5, 2, 0)),
]

POOL_COMPONENTS = {"broker": ("broker",), "client": ("consumer",), "k8s": ("consumer",),
                   "streams": ("streams", "consumer"), "connect": ("connect",)}


def _noise(kind: str, rng: random.Random, spec: FileSpec, story: Story):
    if kind == "broker":
        return broker_noise(rng, spec.node) + ("",)
    if kind == "connect":
        return connect_noise(rng, spec.node)
    if kind == "streams":
        return streams_noise(rng, story.app, story.pid) + ("",)
    group = rng.choice(list(story.groups))
    return client_noise(rng, group, f"consumer-{group}-{rng.randrange(1, 4)}") + ("",)


def block_template(rng: random.Random, spec: FileSpec, story: Story) -> tuple[list[str], list[tuple[str, str]]]:
    """One hour of noise with slots for rebalance records: (text pieces, slot times)."""
    times = sorted(rng.random() * 3600 for _ in range(LINES_PER_BLOCK))
    parts: list[str] = []
    slots: list[tuple[str, str]] = []
    lines: list[str] = []
    debt = rng.random()  # rebalance records owed: REBALANCE_SHARE per physical line written
    for t in times:
        mmss = f"{int(t) // 60:02d}:{int(t) % 60:02d}"
        ms = f"{int(t * 1000) % 1000:03d}"
        if debt >= 1:
            debt -= 1
            parts.append("".join(lines))
            lines = []
            slots.append((mmss, ms))
            continue
        level, logger, msg, thread, context = _noise(spec.kind, rng, spec, story)
        text = render(spec.layout, (SENTINEL_YMD, "00", mmss, ms), level, logger, msg, thread, context)
        debt += (text.count("\n") + 1) * REBALANCE_SHARE * (0.5 + rng.random())
        lines.append(text + "\n")
    parts.append("".join(lines))
    return parts, slots


def startup(spec: FileSpec, story: Story, ts) -> str:
    """What a process logs when it starts: version lines and a config dump."""
    logger = "org.apache.kafka.common.utils.AppInfoParser"
    config = ("KafkaConfig", "kafka.server.KafkaConfig") if spec.kind == "broker" else \
        ("ProducerConfig", "org.apache.kafka.clients.producer.ProducerConfig")
    out = [render(spec.layout, ts, "INFO", logger, "Kafka version: 3.6.1", "main"),
           render(spec.layout, ts, "INFO", logger, "Kafka commitId: 5e3c2b738d253ff5", "main"),
           render(spec.layout, ts, "INFO", config[1], _config_dump(config[0], "producer-1"), "main")]
    return "\n".join(out) + "\n"


def write_file(root: Path, spec: FileSpec, target: int, rng: random.Random, pool: list[Rebalance]) -> dict:
    story = Story(rng, spec.kind, pool, spec.node)
    templates = [block_template(rng, spec, story) for _ in range(TEMPLATES_PER_KIND)]
    path = root / spec.path
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = gzip.GzipFile(path, "wb", compresslevel=6, mtime=0) if spec.gz else open(path, "wb")
    # GzipFile writes the file's name into the header: keep it out so runs are byte-identical.
    if spec.gz:
        handle.name = ""
    written = 0
    lines = 0
    hour = spec.start
    first = True
    with handle:
        while written < target:
            ymd, hh = f"{hour:%Y-%m-%d}", f"{hour:%H}"
            out: list[str] = []
            if first:
                out.append(startup(spec, story, (ymd, hh, "00:00", "001")))
                first = False
            parts, slots = rng.choice(templates)
            for piece, (mmss, ms) in zip(parts, slots):
                out.append(piece)
                level, logger, msg, thread = story.record()
                out.append(render(spec.layout, (ymd, hh, mmss, ms), level, logger, msg, thread,
                                  "") + "\n")
            out.append(parts[-1])
            text = "".join(out)
            text = text.replace(SENTINEL_DH[0], f"{ymd} {hh}:").replace(SENTINEL_DH[1], f"{ymd}T{hh}:")
            data = text.encode()
            if written + len(data) > target:
                data = data[:data.rfind(b"\n", 0, max(1, target - written)) + 1] or data[:data.find(b"\n") + 1]
            handle.write(data)
            written += len(data)
            lines += data.count(b"\n")
            hour += timedelta(hours=1)
    return {"path": spec.path, "layout": spec.layout, "kind": spec.kind, "gz": spec.gz,
            "bytes": written, "lines": lines, "on_disk": path.stat().st_size}


# ---------------------------------------------------------------------------------------------
# The non-Java clients' part (--clients): a librdkafka consumer's debug log and a kafka-python
# service's log. Rebalance records are the client fixtures' lines (every template of the client
# inventories, rendered by rebalance_doctor.packgen.clientgen), with their times moved forward;
# the noise is what such processes write around them (fetches, offsets, connections, app lines).

CLIENT_FIXTURES = REPO / "fixtures" / "clients"
CLIENT_CORPUS = [("payments-worker/librdkafka.log", "librdkafka/librdkafka.log", 0.5),
                 ("scoring-service/app.log", "kafka-python/python-logging.log", 0.5)]
_RDK_NOISE = ["%7|{t}|FETCH|payments-worker#consumer-1| [thrd:10.0.0.{b}:9092/{b}]: 10.0.0.{b}:9092/{b}: Fetch topic payments [{p}] at offset {o} (leader epoch 3, current leader epoch 3, v2)",
              "%7|{t}|FETCHDEC|payments-worker#consumer-1| [thrd:10.0.0.{b}:9092/{b}]: Topic payments [{p}]: fetch decide: updating to version 2 (was 1) at offset {o} (was {o})",
              "%7|{t}|OFFSET|payments-worker#consumer-1| [thrd:main]: Topic payments [{p}]: stored offset {o}, committed offset {o}: setting stored offset {o} for commit",
              "%7|{t}|SEND|payments-worker#consumer-1| [thrd:10.0.0.{b}:9092/{b}]: 10.0.0.{b}:9092/{b}: Sent FetchRequest (v11, 94 bytes @ 0, CorrId {o})",
              "%7|{t}|RECV|payments-worker#consumer-1| [thrd:10.0.0.{b}:9092/{b}]: 10.0.0.{b}:9092/{b}: Received FetchResponse (v11, 1024 bytes, CorrId {o}, rtt 2.13ms)",
              "%7|{t}|CONSUME|payments-worker#consumer-1| [thrd:10.0.0.{b}:9092/{b}]: 10.0.0.{b}:9092/{b}: Enqueue 12 message(s) (1024 bytes, 12 ops) on payments [{p}] fetch queue (qlen 0, v2, last_offset {o}, 0 ctrl msgs, 0 aborted msgsets, uncompressed)"]
_PY_NOISE = ["{t} - scoring.handler - INFO - scored request {o} in 12 ms",
             "{t} - kafka.conn - DEBUG - <BrokerConnection node_id={b} host=10.0.0.{b}:9092 <connected> [IPv4 ('10.0.0.{b}', 9092)]> Request {o}: FetchRequest_v4(replica_id=-1, max_wait_time=500, min_bytes=1)",
             "{t} - kafka.consumer.fetcher - DEBUG - Adding fetched record for partition TopicPartition(topic='scores', partition={p}) with offset {o} to buffered record list",
             "{t} - urllib3.connectionpool - DEBUG - http://model:8080 \"POST /score HTTP/1.1\" 200 512"]


def _client_records(fixture: Path) -> list[str]:
    lines = fixture.read_text(encoding="utf-8").splitlines()
    return [l for l in lines if l and not l.startswith("#")]


def write_client_file(root: Path, rel: str, fixture: str, target: int, rng: random.Random) -> dict:
    records = _client_records(CLIENT_FIXTURES / fixture)
    python = fixture.endswith("python-logging.log")
    noise = _PY_NOISE if python else _RDK_NOISE
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    clock = datetime(2024, 5, 2, 0).timestamp()
    written = lines = 0
    debt = 0.0
    with open(path, "wb") as handle:
        while written < target:
            out = []
            for _ in range(2000):
                clock += rng.random() * 0.05
                stamp = (datetime.utcfromtimestamp(clock).strftime("%Y-%m-%d %H:%M:%S,") + f"{int(clock * 1000) % 1000:03d}"
                         if python else f"{clock:.3f}")
                if debt >= 1:
                    debt -= 1
                    record = rng.choice(records)
                    record = (re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", stamp, record) if python
                              else re.sub(r"\|\d{10}\.\d{3}\|", f"|{stamp}|", record, count=1))
                    out.append(record)
                    continue
                out.append(rng.choice(noise).format(t=stamp, b=rng.randrange(1, 4), p=rng.randrange(12),
                                                    o=rng.randrange(10 ** 6)))
                debt += REBALANCE_SHARE * (0.5 + rng.random())
            data = ("\n".join(out) + "\n").encode()
            if written + len(data) > target:
                data = data[:data.rfind(b"\n", 0, max(1, target - written)) + 1]
            handle.write(data)
            written += len(data)
            lines += data.count(b"\n")
            if not data:
                break
    return {"path": rel, "layout": "python-logging" if python else "librdkafka", "kind": "client-library",
            "gz": False, "bytes": written, "lines": lines, "on_disk": path.stat().st_size}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGkmg]?)(?:i?[Bb])?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 2G, 200M)")
    return int(float(m[1]) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m[2].upper()])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("2G"), help="uncompressed size (default 2G)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/rd-corpus"), help="corpus directory (default /tmp/rd-corpus)")
    ap.add_argument("--seed", type=int, default=20240501)
    ap.add_argument("--clients", type=parse_size, default=0,
                    help="also write a non-Java clients part of this size (librdkafka and kafka-python logs), "
                         "e.g. --clients 200M; not part of the round's baseline corpus")
    args = ap.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"error: {args.out} exists and is not empty; remove it or give another --out", file=sys.stderr)
        return 2
    started = time.perf_counter()
    pool_all = pack_rebalances() + template_rebalances()
    files = []
    total_share = sum(s.share for s in CORPUS)
    for index, spec in enumerate(CORPUS):
        rng = random.Random(f"{args.seed}:{index}")
        pool = [r for r in pool_all if r.component in POOL_COMPONENTS[spec.kind]]
        target = int(args.size * spec.share / total_share)
        files.append(write_file(args.out, spec, target, rng, pool))
        print(f"  {spec.path:55} {files[-1]['bytes'] / 1e6:9.1f} MB", file=sys.stderr)
    for index, (rel, fixture, share) in enumerate(CLIENT_CORPUS if args.clients else []):
        rng = random.Random(f"{args.seed}:clients:{index}")
        files.append(write_client_file(args.out, rel, fixture, int(args.clients * share), rng))
        print(f"  {rel:55} {files[-1]['bytes'] / 1e6:9.1f} MB", file=sys.stderr)
    manifest = {"seed": args.seed, "size": args.size, "bytes": sum(f["bytes"] for f in files),
                "lines": sum(f["lines"] for f in files),
                "on_disk": sum(f["on_disk"] for f in files), "files": files,
                "seconds": round(time.perf_counter() - started, 1)}
    # Beside the corpus, not in it: the tool reads every file of the directory.
    Path(str(args.out) + ".manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {manifest['bytes'] / 1e6:.0f} MB ({manifest['on_disk'] / 1e6:.0f} MB on disk) in "
          f"{len(files)} files to {args.out} in {manifest['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
