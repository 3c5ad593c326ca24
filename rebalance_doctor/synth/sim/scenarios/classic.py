"""Classic consumer groups (JoinGroup/SyncGroup, eager and cooperative): healthy operations and faults."""

from __future__ import annotations

from . import scenario
from .base import ALL_RULES, ADVISORIES, Ctx

GROUP_NAMES = ("payments", "orders", "billing-events", "tracking", "checkout", "search-indexer", "ledger")
COMMON_NOT = ("application-shutdown", "thread-replacement-loop", "thread-died", "version-probing",
              "probing-rebalance-cadence", "connect-scheduled-delay", "connect-config-mismatch", "kip848-fencing")


def setup(ctx: Ctx, members: int | None = None, assignors: tuple[str, ...] | None = None, static: bool = False,
          label: str = "deploy", **cfg_overrides):
    """Brokers and a classic group of consumers on their own hosts (not started)."""
    ctx.brokers()
    group = ctx.rng.choice(GROUP_NAMES)
    topic = group if ctx.rng.random() < 0.6 else f"{group}-in"
    topics = {topic: ctx.p.pick("partitions")}
    cfg = ctx.consumer_config(group, (topic,), assignors, **cfg_overrides)
    apps = ctx.consumer_group(group, members or ctx.p.pick("members"), cfg, topics, label=label, static=static)
    return group, cfg, apps


def settle_window(ctx: Ctx, deployed_at: float) -> float:
    """Half of the incidents show the group's start; the others begin once it has settled."""
    if ctx.rng.random() < 0.5:
        ctx.window_start_ms = deployed_at + ctx.rng.uniform(15_000, 40_000)
    return deployed_at + 45_000


def must_not(ctx: Ctx, *allowed: str) -> None:
    keep = set(allowed) | set(ADVISORIES) | {"healthy-operation"}
    ctx.truth.must_not_fire = [r for r in ALL_RULES if r not in keep]


# -- healthy operations -----------------------------------------------------------------------------
@scenario("healthy-rolling-restart", "classic", healthy=True,
          resembles=("rebalance-storm", "membership-flapping", "failed-rebalance-loop", "cooperative-followup-loop",
                     "heartbeat-expiration"))
def healthy_rolling_restart(ctx: Ctx):
    """A rolling restart of every member, one at a time, each closing cleanly (LeaveGroup) and coming back."""
    group, cfg, apps = setup(ctx)
    t = settle_window(ctx, ctx.start_all(apps))
    for app in apps:
        ctx.restart(app, t, ctx.rng.uniform(2_000, 15_000), label="rolling-restart")
        t += ctx.rng.uniform(25_000, 70_000)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.advisories(cfg, len(apps) * 2)
    return ctx.finish(f"rolling restart of {len(apps)} members ({'/'.join(cfg.assignors)}), one at a time",
                      healthy=True, until_ms=t + 60_000, group=group)


@scenario("healthy-deploy", "classic", healthy=True, resembles=("rebalance-storm", "failed-rebalance-loop",
                                                                "membership-flapping"))
def healthy_deploy(ctx: Ctx):
    """A group deployed from zero: every member starts within seconds and the group settles."""
    group, cfg, apps = setup(ctx)
    t = ctx.start_all(apps, spacing_ms=(100, 4_000))
    ctx.expect("healthy-operation", group, severity="info")
    ctx.advisories(cfg, len(apps))
    return ctx.finish(f"deploy of {len(apps)} members from an empty group", healthy=True, until_ms=t + 120_000,
                      group=group)


@scenario("healthy-scale-out", "classic", healthy=True, resembles=("rebalance-storm", "membership-flapping",
                                                                   "cooperative-followup-loop"))
def healthy_scale_out(ctx: Ctx):
    """Scaling out: members added one at a time to a running group."""
    group, cfg, apps = setup(ctx, members=ctx.rng.randint(4, 6))
    base = ctx.rng.randint(1, 2)
    t = settle_window(ctx, ctx.start_all(apps[:base]))
    for app in apps[base:]:
        ctx.label_at(t, [app], "scale-out")
        ctx.env.call_at(t, app.start)
        t += ctx.rng.uniform(20_000, 60_000)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.advisories(cfg, len(apps))
    return ctx.finish(f"scale-out from {base} to {len(apps)} members", healthy=True, until_ms=t + 60_000, group=group)


@scenario("healthy-scale-in", "classic", healthy=True, resembles=("rebalance-storm", "membership-flapping",
                                                                  "missed-rebalance"))
def healthy_scale_in(ctx: Ctx):
    """Scaling in: members stopped cleanly one at a time."""
    group, cfg, apps = setup(ctx, members=ctx.rng.randint(4, 6))
    t = settle_window(ctx, ctx.start_all(apps))
    keep = ctx.rng.randint(1, 2)
    for app in apps[keep:]:
        def stop(app=app):
            app.label = "scale-in"
            yield from app.shutdown()
        ctx.env.call_at(t, lambda stop=stop: ctx.env.process(stop()))
        t += ctx.rng.uniform(20_000, 60_000)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.advisories(cfg, len(apps))
    return ctx.finish(f"scale-in from {len(apps)} to {keep} members", healthy=True, until_ms=t + 60_000, group=group)


@scenario("healthy-static-restart", "classic", healthy=True,
          resembles=("static-member-timeout", "heartbeat-expiration", "membership-flapping"))
def healthy_static_restart(ctx: Ctx):
    """Static members (group.instance.id) restarted within session.timeout.ms: no rebalance at all."""
    session = ctx.rng.choice((30_000, 45_000, 60_000))
    group, cfg, apps = setup(ctx, static=True, session_ms=session)
    t = settle_window(ctx, ctx.start_all(apps))
    for app in ctx.rng.sample(apps, ctx.rng.randint(1, len(apps))):
        # the restart (down time + start-up of ~3 s) stays well inside the session timeout
        ctx.restart(app, t, ctx.rng.uniform(1_000, session * 0.5), label="static-restart")
        t += ctx.rng.uniform(session + 5_000, session + 40_000)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.advisories(cfg, len(apps))
    return ctx.finish(f"static members restarted within session.timeout.ms={session}", healthy=True,
                      until_ms=t + 60_000, group=group)


# -- faults -------------------------------------------------------------------------------------------
@scenario("poll-timeout-storm", "classic", rules=("poll-timeout",))
def poll_timeout_storm(ctx: Ctx):
    """One member's processing outlasts max.poll.interval.ms again and again (slow downstream, big batches)."""
    group, cfg, apps = setup(ctx)
    t = settle_window(ctx, ctx.start_all(apps))
    culprit = ctx.rng.choice(apps)
    ctx.label_at(t, apps, "steady")
    ctx.label_at(t, [culprit], "poll-timeout")
    times = ctx.rng.randint(2, 5)
    for _ in range(times):
        culprit.workload.stalls.append((t, cfg.max_poll_ms * ctx.rng.uniform(1.2, 2.0)))
        t += cfg.max_poll_ms * 2 + ctx.rng.uniform(30_000, 90_000)
    finding = ctx.expect("poll-timeout", group, culprit=ctx.culprit(culprit))
    ctx.advisories(cfg, times * 2)
    must_not(ctx, "poll-timeout")
    incident = ctx.finish(f"{culprit.host}'s consumer exceeds max.poll.interval.ms={cfg.max_poll_ms} {times} times",
                          healthy=False, until_ms=t + 30_000, group=group)
    finding.evidence_records = [r for r in culprit.log.records if r.key in ("coord.poll_timeout",
                                                                             "coord.leave.poll_timeout")][:1]
    return incident


@scenario("gc-pause-session-timeout", "classic", rules=("heartbeat-expiration",))
def gc_pause_session_timeout(ctx: Ctx):
    """A member's JVM stops (a long GC pause) for longer than session.timeout.ms: the coordinator expires it."""
    group, cfg, apps = setup(ctx)
    t = settle_window(ctx, ctx.start_all(apps))
    culprit = ctx.rng.choice(apps)
    ctx.label_at(t, apps, "steady")
    times = ctx.rng.randint(1, 3)
    for _ in range(times):
        def pause(app=culprit):
            app.label = "session-timeout"
            low, high = cfg.session_ms * 1.3, min(cfg.session_ms * 2.5, cfg.max_poll_ms * 0.8)
            app.jvm.pause(ctx.rng.uniform(low, max(low, high)))
        ctx.env.call_at(t, pause)
        t += cfg.session_ms * 3 + ctx.rng.uniform(30_000, 120_000)
    ctx.expect("heartbeat-expiration", group, culprit=ctx.culprit(culprit))
    ctx.advisories(cfg, times * 2)
    must_not(ctx, "heartbeat-expiration")
    return ctx.finish(f"{culprit.host}'s JVM pauses longer than session.timeout.ms={cfg.session_ms} {times} times",
                      healthy=False, until_ms=t + 30_000, group=group)
