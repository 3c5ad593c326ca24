"""Lines of other loggers around the rebalance lines: what a real server.log or service log also holds.

Nothing here mentions groups, generations or rebalances: these are the lines a reader must step
over (log segment rolls, fetch sessions, application progress and errors with stack traces).
"""

from __future__ import annotations

BROKER_LINES = (
    ("INFO", "kafka.log.LocalLog", "[LocalLog partition={topic}-{p}, dir=/var/lib/kafka/data] Rolled new log segment at offset {offset} in {ms} ms."),
    ("INFO", "kafka.log.UnifiedLog", "[UnifiedLog partition={topic}-{p}, dir=/var/lib/kafka/data] Incremented log start offset to {offset} due to segment deletion"),
    ("INFO", "kafka.server.ReplicaFetcherThread", "[ReplicaFetcher replicaId={broker}, leaderId={other}, fetcherId=0] Truncating partition {topic}-{p} with TruncationState(offset={offset}, completed=true) due to local high watermark {offset}"),
    ("INFO", "kafka.server.epoch.LeaderEpochFileCache", "[LeaderEpochCache {topic}-{p}] New epoch entry EpochEntry(epoch={epoch}, startOffset={offset}). Cache now contains 3 entries."),
    ("INFO", "kafka.authorizer.logger", "Principal = User:ANONYMOUS is Allowed Operation = Describe from host = 10.0.{a}.{b} on resource = Topic:LITERAL:{topic} for request = Metadata with resourceRefCount = 1"),
)

CLIENT_LINES = (
    ("INFO", "org.apache.kafka.clients.FetchSessionHandler", "{prefix}Node {broker} was unable to process the fetch request with (sessionId={session}, epoch={epoch}): FETCH_SESSION_ID_NOT_FOUND."),
    ("INFO", "org.apache.kafka.clients.NetworkClient", "{prefix}Node -{broker} disconnected."),
    ("INFO", "org.apache.kafka.clients.Metadata", "{prefix}Cluster ID: {cluster}"),
)

APP_LINES = (
    ("INFO", "{app}.HttpApi", "GET /health 200 {ms}ms"),
    ("INFO", "{app}.Processor", "Flushed {n} records to the store in {ms} ms"),
    ("DEBUG", "{app}.Processor", "Batch checksum ok ({n} records)"),
    ("WARN", "{app}.Downstream", "Slow response from pricing-service: {ms} ms"),
)

STACK = ("java.net.SocketTimeoutException: Read timed out\n"
         "\tat java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:288)\n"
         "\tat java.base/sun.nio.ch.NioSocketImpl.implRead(NioSocketImpl.java:314)\n"
         "\tat java.base/java.net.Socket$SocketInputStream.read(Socket.java:976)\n"
         "\tat {app}.Downstream.call(Downstream.java:{line})\n"
         "\tat {app}.Processor.process(Processor.java:{line2})")


def noise_process(world, log, kind: str, prefix: str = "", every_ms: tuple[float, float] = (4000, 30000),
                  app: str = "com.example.orders"):
    """A generator writing a noise line every few seconds while the process lives."""
    rng = world.rng
    env = world.env
    while True:
        yield env.timeout(rng.uniform(*every_ms))
        if not log.alive:
            continue
        values = {"topic": rng.choice(("orders", "payments", "events", "audit")), "p": rng.randint(0, 23),
                  "offset": rng.randint(10_000, 90_000_000), "ms": rng.randint(1, 900), "broker": rng.randint(1, 3),
                  "other": rng.randint(1, 3), "epoch": rng.randint(1, 40), "a": rng.randint(0, 9),
                  "b": rng.randint(2, 250), "session": rng.randint(10_000_000, 2_000_000_000), "n": rng.randint(1, 500),
                  "cluster": "Q2pZ8H1yRjyNKKqI6bJQeA", "prefix": prefix, "app": app,
                  "line": rng.randint(40, 300), "line2": rng.randint(40, 300)}
        if kind == "broker":
            level, logger, text = rng.choice(BROKER_LINES)
            log.other(level, logger, text.format(**values), thread=f"kafka-scheduler-{rng.randint(0, 9)}")
        else:
            table = CLIENT_LINES if rng.random() < 0.25 else APP_LINES
            level, logger, text = rng.choice(table)
            logger = logger.format(**values)
            if rng.random() < 0.06:
                log.other("ERROR", f"{app}.Processor", f"Failed to process record at offset {values['offset']}, will retry",
                          throwable=STACK.format(**values))
            else:
                log.other(level, logger, text.format(**values))
