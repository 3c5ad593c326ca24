"""Broker-side causes: the coordinator moving, brokers restarting or stalling, members not following."""

from __future__ import annotations

from . import scenario
from .base import Ctx
from .classic import GROUP_NAMES, must_not, settle_window
from ..cluster import partition_for


def classic_group(ctx: Ctx, group: str, members: int | None = None):
    topic = group if ctx.rng.random() < 0.6 else f"{group}-in"
    topics = {topic: ctx.p.pick("partitions")}
    cfg = ctx.consumer_config(group, (topic,), client_id=f"consumer-{group}-1")
    apps = ctx.consumer_group(group, members or ctx.p.pick("members"), cfg, topics)
    return cfg, apps


def groups_on_one_coordinator(ctx: Ctx, count: int) -> list[str]:
    """Group names whose __consumer_offsets partitions are led by the same broker."""
    brokers = sorted(ctx.world.cluster.brokers)
    names = [f"{base}{suffix}" for suffix in ("", "-v2", "-eu", "-us", "-2", "-3", "-audit") for base in GROUP_NAMES]
    by_broker: dict[int, list[str]] = {}
    for name in names:
        by_broker.setdefault(ctx.world.cluster.leaders[partition_for(name)], []).append(name)
    broker = max(brokers, key=lambda b: len(by_broker.get(b, [])))
    return ctx.rng.sample(by_broker[broker], count)


@scenario("healthy-broker-rolling-restart", "classic", healthy=True, versions=("2.8.0", "4.4.0"),
          resembles=("coordinator-churn", "mass-expiry", "heartbeat-expiration", "rebalance-storm", "missed-rebalance"))
def healthy_broker_rolling_restart(ctx: Ctx):
    """The brokers restart one at a time (controlled shutdown): the group's coordinator moves away and,
    after a preferred leader election, back; the members rediscover it and keep their generation."""
    brokers = ctx.brokers(count=3)
    group = ctx.choose("group", GROUP_NAMES)
    cfg, apps = classic_group(ctx, group)
    t = settle_window(ctx, ctx.start_all(apps))
    ctx.label_at(t, apps, "coordinator-move")
    partition = partition_for(group)
    home = ctx.world.cluster.leaders[partition]
    order = [b.id for b in brokers]
    ctx.rng.shuffle(order)
    for broker_id in order:
        others = [b.id for b in brokers if b.id != broker_id]
        down = ctx.rng.uniform(20_000, 60_000)
        load = ctx.rng.uniform(50, 1_500)
        ctx.env.call_at(t, lambda b=broker_id, o=others, ms=load: ctx.world.stop_broker(b, o, ms))
        ctx.env.call_at(t + down, lambda b=broker_id: ctx.world.start_broker(b))
        if broker_id == home:   # the preferred leader election gives the partition back to its home broker
            back = t + down + ctx.rng.uniform(5_000, 30_000)
            ctx.env.call_at(back, lambda ms=load: ctx.world.move_coordinator(partition, home, ms))
            t = back
        t += down + ctx.rng.uniform(30_000, 90_000)
    ctx.expect("healthy-operation", group, severity="info")
    return ctx.finish(f"rolling restart of {len(brokers)} brokers; {group}'s coordinator moves and its members follow",
                      healthy=True, until_ms=t + 60_000, group=group)


@scenario("coordinator-churn", "classic", rules=("coordinator-churn",), versions=("2.8.0", "4.4.0"))
def coordinator_churn(ctx: Ctx):
    """The group's __consumer_offsets partition changes leader again and again: the coordinator moves every time."""
    ctx.brokers(count=3)
    group = ctx.choose("group", GROUP_NAMES)
    cfg, apps = classic_group(ctx, group)
    t = settle_window(ctx, ctx.start_all(apps))
    ctx.label_at(t, apps, "coordinator-move")
    partition = partition_for(group)
    moves = ctx.rng.randint(3, 5)
    for _ in range(moves):
        def move():
            current = ctx.world.cluster.leaders[partition]
            ctx.world.move_coordinator(partition, ctx.rng.choice([b for b in ctx.world.cluster.brokers if b != current]),
                                       ctx.rng.uniform(50, 2_000))
        ctx.env.call_at(t, move)
        t += ctx.rng.uniform(20_000, 90_000)
    ctx.expect("coordinator-churn", group)
    must_not(ctx, "coordinator-churn")
    return ctx.finish(f"the coordinator of {group} moves {moves} times", healthy=False, until_ms=t + 60_000,
                      group=group)


@scenario("coordinator-moved-members-lost", "classic", rules=("coordinator-churn",), versions=("2.8.0", "4.4.0"))
def coordinator_moved_members_lost(ctx: Ctx):
    """The coordinator moves, loads the group, and the members cannot reach it: all expire one session after the load."""
    ctx.brokers(count=3)
    group = ctx.choose("group", GROUP_NAMES)
    cfg, apps = classic_group(ctx, group)
    t = settle_window(ctx, ctx.start_all(apps))
    ctx.label_at(t, apps, "coordinator-move")
    partition = partition_for(group)
    current = ctx.world.cluster.leaders[partition]
    target = ctx.rng.choice([b for b in ctx.world.cluster.brokers if b != current])
    outage = cfg.session_ms * ctx.rng.uniform(1.5, 3.0)

    def move():
        host = ctx.world.cluster.brokers[target].host
        for app in apps:
            ctx.world.cluster.cut.add((app.host, host))
        ctx.world.move_coordinator(partition, target, ctx.rng.uniform(200, 3_000))

    def heal():
        host = ctx.world.cluster.brokers[target].host
        for app in apps:
            ctx.world.cluster.cut.discard((app.host, host))

    ctx.env.call_at(t, move)
    ctx.env.call_at(t + outage, heal)
    ctx.expect("coordinator-churn", group)
    must_not(ctx, "coordinator-churn", "heartbeat-expiration")
    return ctx.finish(f"{group}'s coordinator moves to broker {target}; the members cannot reach it for "
                      f"{outage / 1000:.0f} s and expire after the load", healthy=False, until_ms=t + outage + 120_000,
                      group=group)


@scenario("broker-restart-loop", "classic", rules=("coordinator-churn",), versions=("2.8.0", "4.4.0"))
def broker_restart_loop(ctx: Ctx):
    """The coordinator's broker restarts again and again (a crash-looping or flapping broker): each time its
    partitions move away and, after a preferred leader election, back. One restart with the members following
    is an operation (healthy-broker-rolling-restart shows one per broker); the moves repeating are the fault."""
    brokers = ctx.brokers(count=3)
    group = ctx.choose("group", GROUP_NAMES)
    cfg, apps = classic_group(ctx, group)
    t = settle_window(ctx, ctx.start_all(apps))
    ctx.label_at(t, apps, "coordinator-move")
    victim = ctx.world.coordinator_of(group)
    others = [b.id for b in brokers if b.id != victim.id]
    restarts = ctx.rng.randint(3, 4)
    for _ in range(restarts):
        down = ctx.rng.uniform(20_000, 90_000)
        ctx.env.call_at(t, lambda: ctx.world.stop_broker(victim.id, others, ctx.rng.uniform(100, 1_500)))
        ctx.env.call_at(t + down, lambda: ctx.world.start_broker(victim.id))
        back = t + down + ctx.rng.uniform(10_000, 40_000)
        ctx.env.call_at(back, lambda: ctx.world.move_coordinator(partition_for(group), victim.id,
                                                                  ctx.rng.uniform(100, 1500)))
        t = back + ctx.rng.uniform(20_000, 120_000)
    ctx.expect("coordinator-churn", group, culprit={"host": victim.host})
    must_not(ctx, "coordinator-churn")
    return ctx.finish(f"broker {victim.host} (the coordinator of {group}) restarts {restarts} times",
                      healthy=False, until_ms=t + 60_000, group=group)


@scenario("broker-stall-mass-expiry", "classic", rules=("mass-expiry",))
def broker_stall_mass_expiry(ctx: Ctx):
    """A broker stalls longer than the session timeout: the members of every group it coordinates expire at once."""
    ctx.brokers(count=ctx.rng.randint(2, 3))
    names = groups_on_one_coordinator(ctx, ctx.rng.randint(2, 3))
    session = ctx.rng.choice((10_000, 30_000))
    groups = []
    for group in names:
        topic = group
        cfg = ctx.consumer_config(group, (topic,), client_id=f"consumer-{group}-1", session_ms=session,
                                  max_poll_ms=300_000)
        apps = ctx.consumer_group(group, ctx.rng.randint(2, 3), cfg, {topic: ctx.p.pick("partitions")})
        groups.append((group, apps))
    t = 0.0
    for _, apps in groups:
        t = ctx.start_all(apps, at=t)
    t += 45_000
    broker = ctx.world.coordinator_of(names[0])
    ctx.label_at(t, [a for _, apps in groups for a in apps], "session-timeout")
    stall = session * ctx.rng.uniform(1.3, 2.0)
    ctx.env.call_at(t, lambda: ctx.world.cluster.pause_broker(broker, stall))
    for group, _ in groups:
        ctx.expect("mass-expiry", group, culprit={"host": broker.host})
    must_not(ctx, "mass-expiry")
    incident = ctx.finish(f"broker {broker.host} stalls {stall / 1000:.0f} s: members of {len(names)} groups expire "
                          "in the same second", healthy=False, until_ms=t + stall + 90_000)
    for group, _ in groups:
        ctx.rebalance_truth(group)
    return incident
