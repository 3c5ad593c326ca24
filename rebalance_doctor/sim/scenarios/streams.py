"""Kafka Streams applications (classic protocol): probing that converges or not, followups, thread deaths."""

from __future__ import annotations

from . import scenario
from .base import Ctx, OPERATIONS
from ..noise import noise_process
from ..streams import AppState, StreamsApp

APP_NAMES = ("otter-app", "inventory-aggregator", "fraud-scorer", "sessionizer", "ledger-stream")
POISON = ("org.apache.kafka.streams.errors.StreamsException: Exception caught in process. taskId=0_{task}, "
          "processor=KSTREAM-SOURCE-0000000000, topic={topic}, partition={task}, offset={offset}, "
          "stacktrace=java.lang.NullPointerException\n"
          "\tat org.apache.kafka.streams.processor.internals.StreamTask.process(StreamTask.java:750)\n"
          "\tat org.apache.kafka.streams.processor.internals.TaskExecutor.processTask(TaskExecutor.java:100)\n"
          "\tat org.apache.kafka.streams.processor.internals.StreamThread.runOnceWithoutProcessingThreads(StreamThread.java:1044)\n"
          "\tat org.apache.kafka.streams.processor.internals.StreamThread.runLoop(StreamThread.java:609)\n"
          "\tat org.apache.kafka.streams.processor.internals.StreamThread.run(StreamThread.java:579)\n"
          "Caused by: java.lang.NullPointerException: Cannot invoke \"String.length()\" because \"value\" is null\n"
          "\tat com.example.streams.Enricher.apply(Enricher.java:{line})")


def streams_setup(ctx: Ctx, instances: int | None = None, threads: int | None = None, stateful: bool = True,
                  warmup_ms: float | None = 60_000.0, probing_ms: int | None = None, handler: str = "SHUTDOWN_CLIENT",
                  label: str = "deploy", min_partitions: int = 4):
    ctx.truth.protocol = "streams"
    ctx.brokers()
    app_id = ctx.choose("group", APP_NAMES)
    topic = f"{app_id}-input"
    partitions = ctx.rng.randint(min_partitions, 12)
    state = AppState([f"0_{i}" for i in range(partitions)], stateful, warmup_ms=warmup_ms,
                     probing_interval_ms=probing_ms or ctx.rng.choice((60_000, 120_000, 600_000)))
    session = ctx.rng.choice((10_000, 45_000)) if ctx.at_least("3.0.0") else 10_000
    apps = []
    hosts = ctx.host_names(instances or ctx.rng.randint(2, 3))
    for host in hosts:
        log = ctx.client_log(host, "streams")
        app = StreamsApp(ctx.world, host, log, app_id, topic, partitions, threads or ctx.rng.randint(1, 2), state,
                         label=label, session_ms=session, heartbeat_ms=3000, max_poll_ms=300_000, handler=handler)
        apps.append(app)
        ctx.apps.append(app)
        ctx.env.process(noise_process(ctx.world, log, "client", every_ms=tuple(ctx.p.raw("noise_every_ms")),
                                      app="com.example.streams"))
    return app_id, state, apps


def streams_truth(ctx: Ctx, group: str, converging: bool = True) -> None:
    """Rebalances of a Streams group: followups are named by what the assignor scheduled."""
    ctx.rebalance_truth(group)
    for r in ctx.truth.rebalances:
        attempt = _attempt(ctx, group, r.generation)
        reason = attempt.reason if attempt else ""
        if "triggered followup rebalance scheduled for 0" in reason:
            r.operation, r.verdict = "cooperative-followup", "expected"
        elif "triggered followup rebalance scheduled for" in reason:
            r.operation, r.verdict = "probing-followup", "expected" if converging else "harmful"


def _attempt(ctx: Ctx, group: str, generation: int):
    return next((a for _c, a in ctx.attempts(group) if a.generation == generation), None)


@scenario("healthy-streams-probing", "streams", healthy=True, versions=("2.8.0", "4.4.0"),
          resembles=("probing-rebalance-cadence", "rebalance-storm", "failed-rebalance-loop", "cooperative-followup-loop"))
def healthy_streams_probing(ctx: Ctx):
    """A Streams scale-out whose warmup tasks catch up: a few probing rebalances, then a stable assignment."""
    app_id, state, apps = streams_setup(ctx, instances=3, warmup_ms=None)
    state.warmup_ms = state.probing_interval_ms * ctx.rng.uniform(0.5, 2.5)
    t = ctx.start_all(apps[:2], spacing_ms=(500, 3000))
    t += ctx.rng.uniform(30_000, 60_000)
    ctx.window_start_ms = t - ctx.rng.uniform(5_000, 20_000) if ctx.rng.random() < 0.5 else 0.0
    ctx.label_at(t, apps[2:], "scale-out")
    ctx.env.call_at(t, apps[2].start)
    end = t + state.warmup_ms + state.probing_interval_ms * 2 + 60_000
    ctx.expect("healthy-operation", app_id, severity="info")
    incident = ctx.finish(f"Streams scale-out to 3 instances; warmups catch up after {state.warmup_ms / 1000:.0f} s "
                          f"(probing every {state.probing_interval_ms / 1000:.0f} s)", healthy=True, until_ms=end)
    streams_truth(ctx, app_id)
    return incident


@scenario("warmup-never-converges", "streams", rules=("probing-rebalance-cadence",), versions=("2.8.0", "4.4.0"))
def warmup_never_converges(ctx: Ctx):
    """Warmup tasks never catch up (state too large for the restore rate): a probing rebalance every interval, forever.
    More tasks than the first two instances have threads (at most 2 each): else their tasks per thread are already
    as low as the newcomer can make them, the HighAvailabilityTaskAssignor moves nothing to it, no warmup, no probe
    (a draw of 4 tasks over 2 + 2 threads was a healthy scale-out that the truth called never converging)."""
    app_id, state, apps = streams_setup(ctx, instances=3, warmup_ms=None,
                                        probing_ms=ctx.rng.choice((60_000, 120_000, 300_000)), min_partitions=5)
    t = ctx.start_all(apps[:2], spacing_ms=(500, 3000)) + ctx.rng.uniform(30_000, 60_000)
    ctx.label_at(t, apps[2:], "scale-out")
    ctx.env.call_at(t, apps[2].start)
    end = t + state.probing_interval_ms * ctx.rng.randint(4, 6) + 30_000
    ctx.expect("probing-rebalance-cadence", app_id)
    incident = ctx.finish(f"warmup tasks never catch up; probing every {state.probing_interval_ms / 1000:.0f} s",
                          healthy=False, until_ms=end)
    streams_truth(ctx, app_id, converging=False)
    return incident


@scenario("streams-thread-replacement-loop", "streams", rules=("thread-replacement-loop",), versions=("3.3.1", "4.4.0"))
def thread_replacement_loop(ctx: Ctx):
    """A StreamThread dies on a poison record again and again; REPLACE_THREAD starts a new one each time."""
    app_id, state, apps = streams_setup(ctx, threads=2, stateful=False, handler="REPLACE_THREAD")
    t = ctx.start_all(apps) + ctx.rng.uniform(30_000, 60_000)
    culprit = ctx.pick_app(apps)
    ctx.label_at(t, [culprit], "crash")
    times = ctx.count("times", 3, 5)
    for i in range(times):
        def poison(at=t):
            live = [th for th in culprit.threads if th.thread_state == "RUNNING"]
            if live:
                thread = ctx.rng.choice(live)
                task = thread.active[0].split("_")[1] if thread.active else "0"
                culprit.poison[thread.number] = (ctx.env.now, POISON.format(task=task, topic=culprit.topic,
                                                                            offset=ctx.rng.randint(1000, 99999),
                                                                            line=ctx.rng.randint(20, 90)))
        ctx.env.call_at(t, poison)
        t += ctx.rng.uniform(40_000, 90_000)
    ctx.expect("thread-replacement-loop", app_id, culprit={"host": culprit.host})
    incident = ctx.finish(f"{culprit.host}: a StreamThread dies and is replaced {times} times", healthy=False,
                          until_ms=t + 30_000)
    streams_truth(ctx, app_id)
    for r in ctx.truth.rebalances:
        if r.operation in ("crash",):
            r.operation = "thread-replacement"
    return incident


@scenario("streams-thread-died", "streams", rules=("thread-died",), versions=("2.4.0", "3.9.0"))
def thread_died(ctx: Ctx):
    """A StreamThread dies (a deprecated thread handler, no replacement): the group shrinks for good."""
    app_id, state, apps = streams_setup(ctx, threads=2, stateful=False, handler="THREAD_DIES")
    t = ctx.start_all(apps) + ctx.rng.uniform(30_000, 60_000)
    culprit = ctx.pick_app(apps)
    ctx.label_at(t, [culprit], "crash")

    def poison():
        thread = ctx.rng.choice([th for th in culprit.threads if th.thread_state == "RUNNING"] or culprit.threads)
        culprit.poison[thread.number] = (ctx.env.now, POISON.format(task=0, topic=culprit.topic, offset=4711, line=42))
    ctx.env.call_at(t, poison)
    ctx.expect("thread-died", app_id, culprit={"host": culprit.host})
    incident = ctx.finish(f"{culprit.host}: a StreamThread dies and is not replaced", healthy=False,
                          until_ms=t + 180_000)
    streams_truth(ctx, app_id)
    return incident


@scenario("streams-application-shutdown", "streams", rules=("application-shutdown",), versions=("2.8.0", "4.4.0"))
def application_shutdown(ctx: Ctx):
    """An uncaught exception with SHUTDOWN_APPLICATION: a rebalance carries the shutdown to every instance."""
    app_id, state, apps = streams_setup(ctx, threads=1, stateful=False, handler="SHUTDOWN_APPLICATION")
    t = ctx.start_all(apps) + ctx.rng.uniform(30_000, 60_000)
    culprit = ctx.pick_app(apps)
    ctx.label_at(t, [culprit], "crash")

    def poison():
        thread = culprit.threads[0]
        culprit.poison[thread.number] = (ctx.env.now, POISON.format(task=0, topic=culprit.topic, offset=99, line=7))
    ctx.env.call_at(t, poison)
    ctx.expect("application-shutdown", app_id, severity="critical", culprit={"host": culprit.host})
    incident = ctx.finish(f"{culprit.host} requests an application shutdown", healthy=False, until_ms=t + 60_000)
    streams_truth(ctx, app_id)
    return incident


@scenario("healthy-streams-upgrade", "streams", healthy=True, rules=("version-probing",), versions=("2.8.0", "3.0.0"),
          resembles=("version-probing", "rebalance-storm", "failed-rebalance-loop", "membership-flapping",
                     "heartbeat-expiration", "application-shutdown", "thread-died", "thread-replacement-loop",
                     "leader-churn"))
def healthy_streams_upgrade(ctx: Ctx):
    """A rolling upgrade of a Streams application to a release with a newer subscription version: version probing."""
    # the subscription version rises only up to 3.3 (9 in 2.8, 10 in 3.0, 11 from 3.3 through 4.4):
    # an upgrade from 3.3 or later probes nothing
    newer = {"2.8.0": ("3.0.0", "3.6.0"), "3.0.0": ("3.3.1", "3.6.0", "3.9.0")}[ctx.kafka]
    target = ctx.choose("upgrade_to", newer)
    app_id, state, apps = streams_setup(ctx, instances=ctx.count("instances", 2, 3), stateful=False)
    t = ctx.start_all(apps) + 60_000
    if ctx.choose("window", ("settled", "full")) == "settled":
        ctx.window_start_ms = t - ctx.rng.uniform(5_000, 20_000)
    for app in apps:
        def upgrade(app=app):
            app.upgrade(target)
        ctx.env.call_at(t, upgrade)
        ctx.restart(app, t + 1, ctx.rng.uniform(3_000, 12_000), label="upgrade")
        t += ctx.rng.uniform(45_000, 90_000)
    ctx.expect("healthy-operation", app_id, severity="info")
    ctx.expect("version-probing", app_id, severity="info", first=False)
    incident = ctx.finish(f"rolling upgrade of {len(apps)} Streams instances from {ctx.kafka} to {target}",
                          healthy=True, until_ms=t + 60_000)
    streams_truth(ctx, app_id)
    for r in incident.truth.rebalances:
        attempt = _attempt(ctx, app_id, r.generation)
        if attempt is not None and attempt.reason.startswith("triggered followup rebalance scheduled for 0") \
                and _version_probing_followup(ctx, attempt):
            r.operation, r.verdict = "version-probing", "expected"
    return incident


@scenario("healthy-streams-rolling-restart", "streams", healthy=True, versions=("2.8.0", "4.4.0"),
          resembles=("leader-churn", "membership-flapping", "rebalance-storm", "failed-rebalance-loop",
                     "cooperative-followup-loop", "probing-rebalance-cadence", "version-probing", "missed-rebalance",
                     "heartbeat-expiration", "application-shutdown", "thread-died", "thread-replacement-loop"))
def healthy_streams_rolling_restart(ctx: Ctx):
    """A rolling restart of a Streams application at the same release: each instance closes cleanly and comes back."""
    app_id, state, apps = streams_setup(ctx, instances=ctx.count("instances", 2, 3), warmup_ms=None)
    state.warmup_ms = state.probing_interval_ms * ctx.rng.uniform(0.2, 1.5)
    t = ctx.start_all(apps) + 60_000
    if ctx.choose("window", ("settled", "full")) == "settled":
        ctx.window_start_ms = t - ctx.rng.uniform(5_000, 20_000)
    for app in apps:
        ctx.restart(app, t, ctx.rng.uniform(3_000, 12_000), label="rolling-restart")
        t += state.warmup_ms + state.probing_interval_ms + ctx.rng.uniform(30_000, 60_000)
    ctx.expect("healthy-operation", app_id, severity="info")
    incident = ctx.finish(f"rolling restart of {len(apps)} Streams instances at {ctx.kafka}; warmups catch up "
                          f"after {state.warmup_ms / 1000:.0f} s", healthy=True, until_ms=t + 60_000)
    streams_truth(ctx, app_id)
    return incident


@scenario("healthy-streams-scale-in", "streams", healthy=True, versions=("2.4.0", "4.4.0"),
          resembles=("application-shutdown", "thread-died", "membership-flapping", "rebalance-storm",
                     "missed-rebalance", "leader-churn", "heartbeat-expiration"))
def healthy_streams_scale_in(ctx: Ctx):
    """Scaling a Streams application in: instances closed cleanly (KafkaStreams#close) one at a time; a
    Streams member sends no LeaveGroup, so the coordinator expires each one a session timeout later."""
    app_id, state, apps = streams_setup(ctx, instances=ctx.count("instances", 3, 4), stateful=False)
    t = ctx.start_all(apps) + 60_000
    if ctx.choose("window", ("settled", "full")) == "settled":
        ctx.window_start_ms = t - ctx.rng.uniform(5_000, 20_000)
    keep = ctx.rng.randint(1, 2)
    for app in apps[keep:]:
        def stop(app=app):
            app.label = "scale-in"
            yield from app.shutdown()
        ctx.env.call_at(t, lambda stop=stop: ctx.env.process(stop()))
        t += ctx.rng.uniform(30_000, 60_000)
    ctx.expect("healthy-operation", app_id, severity="info")
    incident = ctx.finish(f"Streams scale-in from {len(apps)} to {keep} instances", healthy=True, until_ms=t + 60_000)
    streams_truth(ctx, app_id)
    return incident


def _version_probing_followup(ctx: Ctx, attempt) -> bool:
    """The followup was requested because of version probing (the member logged it just before)."""
    for log in ctx.world.logs:
        for record in log.records:
            if record.key == "streams.schedule_version_probing" and attempt.start - 120_000 <= record.t <= attempt.start:
                return True
    return False


OPERATIONS.setdefault("thread-replacement", ("thread-replacement", "harmful"))


# From 3.0: the leader names itself at INFO ("... participating in this rebalance"); 2.8 logs it at DEBUG, so its INFO
# logs show poll timeouts of one member after another and not who led.
@scenario("streams-leader-assignment-stuck", "streams", rules=("leader-churn",), versions=("3.0.0", "4.4.0"))
def streams_leader_assignment_stuck(ctx: Ctx):
    """Whichever member leads blocks in the assignment (preparing internal topics the cluster cannot create in time)
    longer than max.poll.interval.ms: its heartbeats wait for the assignor (the consumer's coordinator lock), so the
    coordinator removes it on session expiry; the next member leads and blocks too."""
    app_id, state, apps = streams_setup(ctx, instances=3, threads=1, stateful=False)
    t = ctx.start_all(apps[:-1]) + ctx.rng.uniform(30_000, 60_000)
    ctx.label_at(t, apps[:-1], "steady")
    max_poll = 300_000

    def stall(app) -> float:
        app.label = "session-timeout"       # the rebalances its removal and its return start
        return max_poll * ctx.rng.uniform(1.05, 1.6)

    def stuck():
        for app in apps:
            app.assign_stall = lambda app=app: stall(app)
    ctx.env.call_at(t - 1, stuck)
    # an instance joining starts the first rebalance whose leader never finishes its assignment
    ctx.label_at(0, apps[-1:], "scale-out")
    ctx.env.call_at(t, apps[-1].start)
    ctx.expect("leader-churn", app_id)
    incident = ctx.finish(f"every Streams leader blocks in its assignment longer than max.poll.interval.ms={max_poll}: "
                          "each is removed on session expiry (its heartbeats wait for the assignor) and the next member leads", healthy=False,
                          until_ms=t + max_poll * ctx.rng.uniform(3.6, 4.8))
    streams_truth(ctx, app_id)
    return incident
