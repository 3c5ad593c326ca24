"""Kafka Connect clusters: worker bounces under scheduled.rebalance.max.delay.ms, config offset mismatches, stalls."""

from __future__ import annotations

from . import scenario
from .base import Ctx
from ..connect import ClusterState, ConnectApp
from ..noise import noise_process

CONNECTORS = ("jdbc-sink", "s3-sink", "debezium-orders", "es-sink", "mirror-source", "http-sink")


def connect_setup(ctx: Ctx, workers: int | None = None, max_delay_ms: int | None = None):
    ctx.truth.protocol = "connect"
    ctx.brokers()
    group = ctx.choose("group", ("connect-cluster", "connect-prod", f"connect-{ctx.kafka}"))
    connectors = {c: ctx.rng.randint(1, 4) for c in ctx.rng.sample(CONNECTORS, ctx.rng.randint(2, 4))}
    state = ClusterState(connectors, offset=ctx.rng.randint(5, 400),
                         max_delay_ms=max_delay_ms or ctx.rng.choice((60_000, 120_000, 300_000)))
    apps = []
    for i, host in enumerate(ctx.host_names(workers or ctx.rng.randint(2, 4))):
        ctx.world.host(host, ctx._skew())
        flat = ctx.choose("path_schemes", ("dir", "dir", "flat")) == "flat"
        log = ctx.world.new_log(f"{host}.log" if flat else f"{host}/connect.log", host, "connect",
                                ctx.kafka, "kafka-connect", thread="DistributedHerder")
        app = ConnectApp(ctx.world, host, log, group, state, i + 1)
        apps.append(app)
        ctx.apps.append(app)
        ctx.env.process(noise_process(ctx.world, log, "client", every_ms=tuple(ctx.p.raw("noise_every_ms")),
                                      app="com.example.connect"))
    return group, state, apps


def holding_work(apps, picked):
    """The picked worker if it runs tasks now, else the first that does (the story needs work to hold)."""
    def busy(app) -> bool:
        return app.worker is not None and bool(app.worker.running_tasks or app.worker.running_connectors)
    return picked if busy(picked) else next((a for a in apps if busy(a)), picked)


def connect_truth(ctx: Ctx, group: str) -> None:
    """A worker rejoining on its own (the scheduled delay expired, revocations done) is an enforced rebalance."""
    for _coordinator, attempt in ctx.attempts(group):
        if attempt.trigger in ("metadata", "leader-rejoin") and attempt.generation is not None:
            for r in ctx.truth.rebalances:
                if r.generation == attempt.generation and r.operation in ("unknown", "initial-join"):
                    r.operation, r.verdict = "enforced", "expected"


@scenario("healthy-connect-bounce", "connect", healthy=True, rules=("connect-scheduled-delay",),
          resembles=("connect-scheduled-delay", "rebalance-storm", "membership-flapping", "heartbeat-expiration",
                     "connect-config-mismatch"))
def healthy_connect_bounce(ctx: Ctx):
    """A Connect worker restarts and is back within scheduled.rebalance.max.delay.ms: its tasks wait for it."""
    group, state, apps = connect_setup(ctx, workers=ctx.rng.randint(3, 4))
    t = ctx.start_all(apps) + 60_000
    picked = ctx.pick_app(apps)
    down = state.max_delay_ms * ctx.rng.uniform(0.2, 0.6)

    def bounce():
        culprit = holding_work(apps, picked)      # a worker with nothing assigned leaves no work to hold
        # back within the delay: a restart the protocol rides out, which healthy-operation names (the lab's
        # connect-healthy-worker-restart: no note of connect-scheduled-delay's when the worker is back in time)
        ctx.restart(culprit, ctx.env.now, down, label="rolling-restart")
    ctx.env.call_at(t, bounce)
    ctx.expect("healthy-operation", group, severity="info")
    incident = ctx.finish(f"a worker bounces for {down / 1000:.0f} s under scheduled.rebalance.max.delay.ms="
                          f"{state.max_delay_ms}", healthy=True, until_ms=t + state.max_delay_ms + 90_000, group=group)
    connect_truth(ctx, group)
    return incident


@scenario("connect-worker-lost", "connect", rules=("connect-scheduled-delay",))
def connect_worker_lost(ctx: Ctx):
    """A Connect worker dies and does not come back: its tasks stay unassigned for the whole scheduled delay."""
    group, state, apps = connect_setup(ctx, workers=ctx.rng.randint(3, 4))
    t = ctx.start_all(apps) + 60_000
    picked = ctx.pick_app(apps)
    ctx.label_at(t, apps, "steady")

    def lose():
        culprit = holding_work(apps, picked)      # a worker with nothing assigned leaves no work to hold
        culprit.label = "crash"
        culprit.crash()
        ctx.expect("connect-scheduled-delay", group, culprit={"host": culprit.host})
    ctx.env.call_at(t, lose)
    ctx.truth.may_fire.append("heartbeat-expiration")
    incident = ctx.finish(f"a worker is lost; its tasks wait {state.max_delay_ms / 1000:.0f} s unassigned",
                          healthy=False, until_ms=t + state.max_delay_ms + 90_000, group=group)
    connect_truth(ctx, group)
    return incident


@scenario("connect-config-mismatch", "connect", rules=("connect-config-mismatch",))
def connect_config_mismatch(ctx: Ctx):
    """One worker cannot read the config topic (offset -1): it forces a rebalance after every assignment."""
    group, state, apps = connect_setup(ctx, workers=ctx.count("members", 2, 3))
    culprit = ctx.pick_app(apps)
    culprit.config_readable = False
    # it joins once the others formed the group (the lab's connect-config-topic-mismatch: connect-1 leads, connect-3
    # forces): a leader that cannot read the config topic fails the assignment itself, which is not simulated
    t = ctx.start_all([app for app in apps if app is not culprit])
    t += ctx.rng.uniform(10_000, 30_000)
    ctx.env.call_at(t, culprit.start)
    ctx.label_at(0, [culprit], "steady")
    ctx.expect("connect-config-mismatch", group, culprit={"host": culprit.host})
    incident = ctx.finish(f"worker {culprit.host} reads nothing of the config topic and forces rebalances",
                          healthy=False, until_ms=t + ctx.rng.uniform(90_000, 180_000), group=group)
    connect_truth(ctx, group)      # the leader rejoining after it revoked work for the newcomer: enforced, expected
    joins = {a.generation for _c, a in ctx.attempts(group) if a.trigger == "new-member"}
    for r in incident.truth.rebalances:
        if r.operation in ("initial-join", "enforced"):
            continue
        if r.generation in joins:
            # a worker joining after the group formed (the culprit, started last): a scale-out, not yet its forcing
            r.operation, r.verdict = "scale-out", "expected"
        else:
            r.operation, r.verdict = "config-mismatch", "harmful"
    return incident


@scenario("connect-worker-poll-timeout", "connect", rules=("poll-timeout",), versions=("3.0.0", "4.4.0"))
def connect_worker_poll_timeout(ctx: Ctx):
    """A worker's herder thread is stuck (starting a connector) longer than rebalance.timeout.ms: it leaves the group."""
    group, state, apps = connect_setup(ctx, workers=ctx.rng.randint(2, 3))
    t = ctx.start_all(apps) + 60_000
    culprit = ctx.pick_app(apps)
    ctx.label_at(t, apps, "steady")
    ctx.label_at(t, [culprit], "poll-timeout")
    times = ctx.count("times", 1, 3)
    for _ in range(times):
        culprit.stall.append((t, culprit.rebalance_ms * ctx.rng.uniform(1.3, 1.8),
                              f"starting connector {ctx.rng.choice(list(state.connectors))}"))
        t += culprit.rebalance_ms * 2 + ctx.rng.uniform(60_000, 120_000)
    ctx.expect("poll-timeout", group, culprit={"host": culprit.host})
    ctx.truth.may_fire.append("connect-scheduled-delay")
    incident = ctx.finish(f"worker {culprit.host}'s herder is stuck longer than rebalance.timeout.ms {times} times",
                          healthy=False, until_ms=t + 30_000, group=group)
    connect_truth(ctx, group)
    return incident
