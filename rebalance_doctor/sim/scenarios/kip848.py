"""KIP-848 consumer groups (group.protocol=consumer, brokers 3.9/4.x): reconciliation that converges, fencing."""

from __future__ import annotations

from . import scenario
from .base import Ctx, OPERATIONS
from ..kip848 import AsyncConsumer, ConsumerGroupCoordinator
from ..noise import noise_process
from ...judge.truth import ExpectedRebalance
from ...packgen.inventory import version_key

GROUPS = ("tracking", "shipments", "notifications", "pricing")


def kip848_setup(ctx: Ctx, members: int | None = None, label: str = "deploy", static: bool = False):
    ctx.truth.protocol = "consumer"
    brokers = ctx.brokers(version=ctx.kafka if version_key(ctx.kafka) >= (4, 0, 0) else ctx.kafka, impl="java")
    group = ctx.choose("group", GROUPS)
    topic = group
    partitions = ctx.rng.randint(4, 12)
    ctx.world.kip848 = {b.id: ConsumerGroupCoordinator(b, ctx.world.cluster, {topic: partitions}) for b in brokers}
    apps = []
    for i, host in enumerate(ctx.host_names(members or ctx.rng.randint(2, 4))):
        log = ctx.client_log(host)
        app = AsyncConsumer(ctx.world, host, log, group, f"consumer-{group}-1", topic, partitions, label=label,
                            max_poll_ms=ctx.rng.choice((60_000, 300_000)), instance=f"{group}-{i}" if static else None)
        apps.append(app)
        ctx.apps.append(app)
        ctx.env.process(noise_process(ctx.world, log, "client", every_ms=tuple(ctx.p.raw("noise_every_ms")),
                                      prefix=f"[Consumer clientId={app.client_id}, groupId={group}] "))
    labels = {}

    def observe(what, group_state, info):
        epoch, trigger, member_id = info
        member_host = None
        for coordinator in ctx.world.kip848.values():
            g = coordinator.groups.get(group_state.id)
            if g and member_id in g.members:
                member_host = g.members[member_id].client_host
        owner = ctx.app_by_ip((member_host or labels.get(member_id, "")).lstrip("/"))
        if member_host:
            labels[member_id] = member_host
        group_state.labels = getattr(group_state, "labels", {})
        group_state.labels[epoch] = (trigger, owner.label if owner else None, owner.host if owner else None)

    for coordinator in ctx.world.kip848.values():
        coordinator.observers.append(observe)
    return group, apps


def kip848_truth(ctx: Ctx, group: str) -> None:
    for coordinator in ctx.world.kip848.values():
        state = coordinator.groups.get(group)
        if state is None:
            continue
        for epoch, trigger, _member, at in state.history:
            if at < ctx.window_start_ms:
                continue
            _, label, _host = getattr(state, "labels", {}).get(epoch, (trigger, None, None))
            if trigger in ("session-expired", "rebalance-timeout"):
                operation, verdict = "fencing", "harmful"
            elif label in (None, "deploy", "steady") and epoch == 1:
                operation, verdict = "initial-join", "expected"
            else:
                operation, verdict = OPERATIONS.get(label or "steady", ("unknown", "harmful"))
            ctx.truth.rebalances.append(ExpectedRebalance(group, epoch, verdict, operation))


@scenario("healthy-kip848-rolling-restart", "consumer", healthy=True, versions=("4.0.0", "4.4.0"),
          resembles=("kip848-fencing", "rebalance-storm", "membership-flapping"))
def healthy_kip848_rolling_restart(ctx: Ctx):
    """A rolling restart of a KIP-848 consumer group: each epoch reconciles and every member reaches STABLE."""
    group, apps = kip848_setup(ctx)
    t = ctx.start_all(apps) + 45_000
    if ctx.rng.random() < 0.5:
        ctx.window_start_ms = t - ctx.rng.uniform(5_000, 20_000)
    for app in apps:
        ctx.restart(app, t, ctx.rng.uniform(2_000, 10_000), label="rolling-restart")
        t += ctx.rng.uniform(30_000, 60_000)
    ctx.expect("healthy-operation", group, severity="info")
    incident = ctx.finish(f"rolling restart of {len(apps)} consumer-protocol members", healthy=True,
                          until_ms=t + 60_000)
    kip848_truth(ctx, group)
    return incident


@scenario("healthy-kip848-scale-out", "consumer", healthy=True, versions=("4.0.0", "4.4.0"),
          resembles=("kip848-fencing", "rebalance-storm"))
def healthy_kip848_scale_out(ctx: Ctx):
    """Members added one at a time to a KIP-848 group: partitions move by revocation then assignment, no stop."""
    group, apps = kip848_setup(ctx, members=ctx.rng.randint(3, 5))
    t = ctx.start_all(apps[:1]) + 30_000
    for app in apps[1:]:
        ctx.label_at(t, [app], "scale-out")
        ctx.env.call_at(t, app.start)
        t += ctx.rng.uniform(20_000, 50_000)
    ctx.expect("healthy-operation", group, severity="info")
    incident = ctx.finish(f"KIP-848 scale-out to {len(apps)} members", healthy=True, until_ms=t + 60_000)
    kip848_truth(ctx, group)
    return incident


@scenario("kip848-session-fencing", "consumer", rules=("kip848-fencing",), versions=("4.0.0", "4.4.0"))
def kip848_session_fencing(ctx: Ctx):
    """A consumer-protocol member stops heartbeating (a long pause) past the broker's session timeout: fenced, rejoins."""
    group, apps = kip848_setup(ctx)
    t = ctx.start_all(apps) + 45_000
    culprit = ctx.pick_app(apps)
    ctx.label_at(t, apps, "steady")
    times = ctx.count("times", 1, 3)
    for _ in range(times):
        def pause(app=culprit):
            app.label = "fencing"
            app.jvm.pause(ctx.rng.uniform(48_000, 58_000))
        ctx.env.call_at(t, pause)
        t += ctx.rng.uniform(120_000, 200_000)
    ctx.expect("kip848-fencing", group, culprit={"host": culprit.host, "client": culprit.client_id})
    incident = ctx.finish(f"{culprit.host} pauses past the 45 s session {times} times and is fenced", healthy=False,
                          until_ms=t)
    kip848_truth(ctx, group)
    return incident


@scenario("kip848-unreleased-instance-id", "consumer", rules=("unreleased-instance-id",), versions=("4.0.0", "4.4.0"))
def kip848_unreleased_instance_id(ctx: Ctx):
    """A static consumer-protocol member crashes and is restarted within the session: refused UNRELEASED_INSTANCE_ID."""
    group, apps = kip848_setup(ctx, static=True)
    t = ctx.start_all(apps) + 45_000
    culprit = ctx.pick_app(apps)
    ctx.label_at(t, apps, "steady")
    # the supervisor restarts the killed process well within the broker's session timeout (SESSION_MS, 45 s)
    ctx.restart(culprit, t, ctx.rng.uniform(2_000, 20_000), label="crash", crash=True)
    ctx.expect("unreleased-instance-id", group, culprit={"host": culprit.host, "client": culprit.client_id,
                                                         "instance": culprit.instance})
    ctx.truth.may_fire += ["kip848-fencing", "static-member-timeout"]
    incident = ctx.finish(f"static member {culprit.host} ({culprit.instance}) killed and restarted before its old "
                          "member was fenced: refused UNRELEASED_INSTANCE_ID, it exits", healthy=False, until_ms=t + 90_000)
    kip848_truth(ctx, group)
    return incident


OPERATIONS.setdefault("fencing", ("fencing", "harmful"))
