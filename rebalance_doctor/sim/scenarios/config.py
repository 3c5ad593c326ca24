"""Issue 17's configuration, assignment and expiry stories: timeouts and assignors that only matter once
something goes wrong, skewed and even assignments, several groups at once; and the healthy groups that
look like them."""

from __future__ import annotations

from . import scenario
from .base import Ctx
from .classic import must_not, settle_window, setup


def _tight(ctx: Ctx, session: int) -> int:
    """A heartbeat.interval.ms above a third of session.timeout.ms (40% to 90% of it)."""
    return int(session * ctx.rng.uniform(0.4, 0.9))


def _fair(ctx: Ctx, session: int) -> int:
    """A heartbeat.interval.ms at most a third of session.timeout.ms (exactly a third included)."""
    return max(500, session // ctx.rng.choice((3, 3, 4, 5, 10, 15)))


@scenario("healthy-tight-heartbeat", "classic", healthy=True, rules=("config-heartbeat-ratio",),
          resembles=("config-heartbeat-ratio", "heartbeat-expiration", "rebalance-storm", "missed-rebalance"))
def healthy_tight_heartbeat(ctx: Ctx):
    """A healthy deploy and rolling restart of members whose heartbeat.interval.ms is above a third of
    session.timeout.ms: nothing went wrong (an advisory, when the config dumps are in the window)."""
    session = ctx.rng.choice((10_000, 15_000, 30_000, 45_000))
    heartbeat = _tight(ctx, session)
    # A member hears of a rebalance at its next heartbeat and must rejoin within the rebalance timeout
    # (max.poll.interval.ms): a heartbeat.interval.ms near that timeout misses rebalances (heartbeat-misses-rebalance).
    group, cfg, apps = setup(ctx, session_ms=session, heartbeat_ms=heartbeat,
                             max_poll_ms=ctx.rng.choice([v for v in ctx.p.raw("max_poll_interval_ms")
                                                         if v >= 2 * heartbeat + 10_000]))
    t = settle_window(ctx, ctx.start_all(apps))
    for app in ctx.rng.sample(apps, ctx.rng.randint(1, len(apps))):
        ctx.restart(app, t, ctx.rng.uniform(2_000, 10_000), label="rolling-restart")
        t += ctx.rng.uniform(25_000, 60_000)
    ctx.expect("healthy-operation", group, severity="info")
    # The dumps are logged when a consumer starts: the restarted members log theirs again in any window.
    ctx.expect("config-heartbeat-ratio", group, severity="info", first=False)
    ctx.advisories(cfg, len(apps) * 2)
    return ctx.finish(f"heartbeat.interval.ms={cfg.heartbeat_ms} of session.timeout.ms={session}; nothing went "
                      "wrong", healthy=True, until_ms=t + 60_000, group=group)


@scenario("heartbeat-misses-rebalance", "classic", rules=("missed-rebalance",))
def heartbeat_misses_rebalance(ctx: Ctx):
    """heartbeat.interval.ms above max.poll.interval.ms (the rebalance timeout): members hear of a rebalance too late,
    miss it, lose their partitions and rejoin, one more rebalance each."""
    # A member learns of a rebalance only from its next heartbeat's REBALANCE_IN_PROGRESS; the coordinator ends the
    # JoinGroup phase after the rebalance timeout (the largest max.poll.interval.ms) and removes the members that
    # did not rejoin. With heartbeats sparser than that timeout, a member that polls all the time misses it: no poll
    # timeout, no session expiry, its own log shows only the loss (UNKNOWN_MEMBER_ID, partitions lost).
    session = ctx.rng.choice((45_000, 60_000))
    max_poll = ctx.rng.choice((15_000, 20_000))
    heartbeat = int(min(session * 0.9, max_poll * ctx.rng.uniform(2.0, 2.6)))
    group, cfg, apps = setup(ctx, members=ctx.rng.randint(4, 5), session_ms=session, heartbeat_ms=heartbeat,
                             max_poll_ms=max_poll)
    base = 2
    t = ctx.start_all(apps[:base]) + ctx.rng.uniform(20_000, 40_000)   # the config dumps are in the window
    ctx.label_at(t, apps[:base], "steady")
    t0 = t

    def missed_yet() -> bool:
        return any(r.key == "consumer.giving_away" and r.t >= t0 for app in apps for r in app.log.records)

    def operate():
        # A routine scale-out, one member at a time, then (if no member has missed a rebalance yet: each hears of
        # one in time with odds of about max.poll.interval.ms / heartbeat.interval.ms) a restart of each in turn.
        for app in apps[base:]:
            app.label = "scale-out"
            app.start()
            yield ctx.env.timeout(ctx.rng.uniform(heartbeat * 1.5, heartbeat * 2.5))
        for app in apps:
            if missed_yet():
                return
            ctx.restart(app, ctx.env.now, ctx.rng.uniform(2_000, 10_000), label="rolling-restart")
            yield ctx.env.timeout(ctx.rng.uniform(heartbeat * 2, heartbeat * 3))
    ctx.env.call_at(t, lambda: ctx.env.process(operate()))
    t += len(apps) * heartbeat * 5
    ctx.expect("missed-rebalance", group)
    ctx.truth.may_fire.append("config-heartbeat-ratio")             # the ratio to the session is off too (info)
    ctx.advisories(cfg, len(apps) * 3)
    must_not(ctx, "missed-rebalance", "config-heartbeat-ratio")
    incident = ctx.finish(f"heartbeat.interval.ms={heartbeat} above max.poll.interval.ms={max_poll}: members miss "
                          "rebalances, lose their partitions and rejoin", healthy=False, until_ms=t, group=group)
    _returns_after_a_miss(ctx, group, incident)
    missed = [app for app in apps if any(r.key == "consumer.giving_away" for r in app.log.records)]
    finding = incident.truth.findings[0]
    if len(missed) == 1:
        finding.culprit = ctx.culprit(missed[0])
    finding.evidence_records = [r for app in missed for r in app.log.records if r.key == "consumer.giving_away"][:1]
    return incident


def _returns_after_a_miss(ctx: Ctx, group: str, incident) -> None:
    """The truth of the rebalances started by a member rejoining right after it found itself dropped (its
    'Giving away all assigned partitions as lost' line): the return after a missed rebalance (harmful)."""
    by_generation = {r.generation: r for r in incident.truth.rebalances if r.group == group}
    for coordinator, attempt in ctx.attempts(group):
        truth = by_generation.get(attempt.generation)
        app = ctx.app_by_ip((coordinator.known_hosts.get(attempt.member) or "").lstrip("/"))
        if truth is None or app is None or attempt.trigger != "new-member":
            continue
        if any(r.key == "consumer.giving_away" and attempt.start - 5_000 <= r.t <= attempt.start
               for r in app.log.records):
            truth.operation, truth.verdict = "missed-rebalance", "harmful"


@scenario("healthy-heartbeat-at-a-third", "classic", healthy=True,
          resembles=("config-heartbeat-ratio", "heartbeat-expiration", "rebalance-storm", "membership-flapping",
                     "missed-rebalance"))
def healthy_heartbeat_at_a_third(ctx: Ctx):
    """Members with heartbeat.interval.ms at most a third of session.timeout.ms (exactly a third for some)
    deployed and restarted one at a time: the settings Kafka recommends, no remark."""
    session = ctx.rng.choice((10_000, 15_000, 30_000, 45_000, 60_000))
    group, cfg, apps = setup(ctx, session_ms=session, heartbeat_ms=_fair(ctx, session))
    t = settle_window(ctx, ctx.start_all(apps))
    for app in apps:
        ctx.restart(app, t, ctx.rng.uniform(2_000, 10_000), label="rolling-restart")
        t += ctx.rng.uniform(25_000, 60_000)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.advisories(cfg, len(apps) * 2)
    return ctx.finish(f"heartbeat.interval.ms={cfg.heartbeat_ms} of session.timeout.ms={session} (at most a "
                      "third); a rolling restart", healthy=True, until_ms=t + 60_000, group=group)


@scenario("crash-with-tight-heartbeat", "classic", rules=("heartbeat-expiration", "config-heartbeat-ratio"))
def crash_with_tight_heartbeat(ctx: Ctx):
    """A member with heartbeat.interval.ms above a third of session.timeout.ms is killed and comes back
    later: the crash is the cause (no ratio saves a dead process); the ratio is only an advisory."""
    session = ctx.rng.choice((10_000, 15_000, 30_000))
    group, cfg, apps = setup(ctx, session_ms=session, heartbeat_ms=_tight(ctx, session), max_poll_ms=300_000)
    t = ctx.start_all(apps) + ctx.rng.uniform(20_000, 40_000)       # the dumps are in the window
    culprit = ctx.pick_app(apps)
    ctx.label_at(t, apps, "steady")
    ctx.restart(culprit, t, session * ctx.rng.uniform(1.5, 3.0), label="crash", crash=True)
    ctx.expect("heartbeat-expiration", group, culprit=ctx.culprit(culprit))
    ctx.expect("config-heartbeat-ratio", group, severity="info", first=False)
    ctx.truth.may_fire.append("membership-flapping")
    ctx.advisories(cfg, 2)
    must_not(ctx, "heartbeat-expiration", "config-heartbeat-ratio", "membership-flapping")
    return ctx.finish(f"{culprit.host}'s process is killed for longer than session.timeout.ms={session} "
                      f"(heartbeat.interval.ms={cfg.heartbeat_ms})", healthy=False, until_ms=t + session * 3 + 60_000,
                      group=group)


@scenario("healthy-mixed-session-timeouts", "classic", healthy=True, rules=("config-heartbeat-ratio",),
          resembles=("config-heartbeat-ratio", "rebalance-storm", "membership-flapping"))
def healthy_mixed_session_timeouts(ctx: Ctx):
    """A member added with another session.timeout.ms than the rest of the group (a forgotten override):
    healthy, but the group's members are detected at different speeds (a lint remark)."""
    session = ctx.rng.choice((10_000, 30_000, 45_000))
    group, cfg, apps = setup(ctx, session_ms=session, heartbeat_ms=_fair(ctx, session))
    t = ctx.start_all(apps) + ctx.rng.uniform(20_000, 40_000)
    other = ctx.rng.choice([s for s in (10_000, 30_000, 45_000, 60_000) if s != session])
    odd_cfg = ctx.consumer_config(group, cfg.topics, cfg.assignors, session_ms=other, heartbeat_ms=_fair(ctx, other),
                                  max_poll_ms=cfg.max_poll_ms)
    odd = ctx.consumer_group(group, 1, odd_cfg, apps[0].topics, hosts=ctx.another_host(apps))[0]
    ctx.label_at(0, [odd], "scale-out")
    ctx.env.call_at(t, odd.start)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.expect("config-heartbeat-ratio", group, severity="info", first=False)
    ctx.advisories(cfg, len(apps) + 1)
    return ctx.finish(f"{odd.host} joins with session.timeout.ms={other}, the others run {session}", healthy=True,
                      until_ms=t + 90_000, group=group)



@scenario("healthy-cooperative-scale-out", "classic", healthy=True, versions=("2.4.0", "4.4.0"),
          resembles=("assignor-mismatch", "eager-assignor", "rebalance-storm", "cooperative-followup-loop"))
def healthy_cooperative_scale_out(ctx: Ctx):
    """Members added one at a time to a group whose members all list the same assignors, cooperative-sticky
    first (with or without a fallback): every newcomer fits, no remark."""
    lists = ctx.rng.choice((("cooperative-sticky",), ("cooperative-sticky", "range")))
    group, cfg, apps = setup(ctx, members=ctx.rng.randint(3, 5), assignors=lists)
    base = ctx.rng.randint(1, 2)
    t = settle_window(ctx, ctx.start_all(apps[:base]))
    for app in apps[base:]:
        ctx.label_at(t, [app], "scale-out")
        ctx.env.call_at(t, app.start)
        t += ctx.rng.uniform(20_000, 50_000)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.advisories(cfg, len(apps))
    return ctx.finish(f"scale-out from {base} to {len(apps)} members listing [{', '.join(lists)}]", healthy=True,
                      until_ms=t + 60_000, group=group)


@scenario("healthy-upgrade-first-bounce", "classic", healthy=True, versions=("2.4.0", "4.4.0"),
          resembles=("assignor-mismatch", "rebalance-storm", "membership-flapping", "cooperative-followup-loop"))
def healthy_upgrade_first_bounce(ctx: Ctx):
    """The logs end during the first bounce of the eager -> cooperative upgrade: some members restarted with
    [cooperative-sticky, range], the others still run [range]; the group stays eager, as the upgrade intends."""
    old = ctx.rng.choice((("range",), ("roundrobin",)))
    group, cfg, apps = setup(ctx, members=ctx.rng.randint(3, 5), assignors=old)
    t = settle_window(ctx, ctx.start_all(apps))
    for app in apps[:ctx.rng.randint(1, len(apps) - 1)]:
        def reconfigure(app=app):
            app.cfg = type(app.cfg)(**{**app.cfg.__dict__, "assignors": ("cooperative-sticky",) + old})
        ctx.env.call_at(t, reconfigure)
        ctx.restart(app, t + 1, ctx.rng.uniform(2_000, 10_000), label="rolling-restart")
        t += ctx.rng.uniform(25_000, 60_000)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.truth.may_fire.append("eager-assignor")
    # members on different lists at the end of the window: the remark that they differ is legitimate (info)
    ctx.truth.may_fire.append("assignor-mismatch")
    return ctx.finish(f"first bounce of the upgrade from {old[0]} to cooperative-sticky, in progress", healthy=True,
                      until_ms=t + 30_000, group=group)


@scenario("healthy-eager-rare-rebalance", "classic", healthy=True,
          resembles=("eager-assignor", "rebalance-storm", "membership-flapping"))
def healthy_eager_rare_rebalance(ctx: Ctx):
    """A group on an eager assignor that rebalances rarely: one member restarted, a member added an hour
    later. Every rebalance stops the group, but so seldom that there is nothing to say."""
    group, cfg, apps = setup(ctx, members=ctx.rng.randint(3, 4), assignors=(ctx.rng.choice(("range", "roundrobin",
                                                                                            "sticky")),))
    t = settle_window(ctx, ctx.start_all(apps[:-1]))
    ctx.restart(ctx.rng.choice(apps[:-1]), t, ctx.rng.uniform(2_000, 10_000), label="rolling-restart")
    t += ctx.rng.uniform(3_700_000, 5_000_000)
    ctx.label_at(t, [apps[-1]], "scale-out")
    ctx.env.call_at(t, apps[-1].start)
    ctx.expect("healthy-operation", group, severity="info")
    return ctx.finish(f"{cfg.assignors[0]} group: one restart, one member added {t / 3_600_000:.1f} h later",
                      healthy=True, until_ms=t + 60_000, group=group)


@scenario("healthy-eager-rolling-restarts", "classic", healthy=True, rules=("eager-assignor",),
          resembles=("rebalance-storm", "membership-flapping", "failed-rebalance-loop"))
def healthy_eager_rolling_restarts(ctx: Ctx):
    """Two rolling restarts of a group on an eager assignor within the hour (a deploy, then a config fix):
    healthy, but each of its many rebalances stops every member (the eager-assignor advisory)."""
    group, cfg, apps = setup(ctx, members=ctx.rng.randint(3, 5), assignors=(ctx.rng.choice(("range", "roundrobin",
                                                                                            "sticky")),))
    t = settle_window(ctx, ctx.start_all(apps))
    for _ in range(2):
        for app in apps:
            ctx.restart(app, t, ctx.rng.uniform(2_000, 10_000), label="rolling-restart")
            t += ctx.rng.uniform(25_000, 60_000)
        t += ctx.rng.uniform(60_000, 600_000)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.expect("eager-assignor", group, severity="info", first=False)
    return ctx.finish(f"two rolling restarts of {len(apps)} members on {cfg.assignors[0]}", healthy=True,
                      until_ms=t + 30_000, group=group)


def _multi_topic_group(ctx: Ctx, topics: dict[str, int], members: int, assignor: str):
    ctx.brokers()
    group = ctx.choose("group", ("payments", "orders", "billing-events", "tracking", "checkout", "ledger"))
    cfg = ctx.consumer_config(group, tuple(sorted(topics)), (assignor,))
    apps = ctx.consumer_group(group, members, cfg, topics)
    return group, cfg, apps


@scenario("healthy-multi-topic-range", "classic", healthy=True,
          resembles=("assignment-skew", "rebalance-storm", "membership-flapping"))
def healthy_multi_topic_range(ctx: Ctx):
    """A group consuming two or three topics with RangeAssignor (per topic, the first members get one extra
    partition): a little uneven, never far from even; deployed, then one member restarted."""
    members = ctx.rng.randint(2, 4)
    names = ctx.rng.sample(("clicks", "views", "orders-in", "refunds", "events"), ctx.rng.randint(2, 3))
    topics = {name: ctx.rng.randint(members * 2, members * 4) for name in names}
    group, cfg, apps = _multi_topic_group(ctx, topics, members, "range")
    t = settle_window(ctx, ctx.start_all(apps))
    ctx.restart(ctx.rng.choice(apps), t, ctx.rng.uniform(2_000, 10_000), label="rolling-restart")
    ctx.expect("healthy-operation", group, severity="info")
    ctx.advisories(cfg, 3)
    return ctx.finish(f"{members} members on {len(topics)} topics ({', '.join(f'{k}:{v}' for k, v in topics.items())}) "
                      "with range", healthy=True, until_ms=t + 90_000, group=group)


@scenario("healthy-range-single-partition-topics", "classic", healthy=True, rules=("assignment-skew",),
          resembles=("rebalance-storm",))
def healthy_range_single_partition_topics(ctx: Ctx):
    """Several single-partition topics consumed by one group with RangeAssignor: range assigns each topic's
    only partition to the first member, so one member holds them all and the others idle (an advisory)."""
    members = ctx.rng.randint(2, 4)
    names = ctx.rng.sample(("audit", "alerts", "config-changes", "heartbeats", "commands"), ctx.rng.randint(3, 5))
    group, cfg, apps = _multi_topic_group(ctx, {name: 1 for name in names}, members, "range")
    t = ctx.start_all(apps)
    ctx.expect("healthy-operation", group, severity="info")
    ctx.expect("assignment-skew", group, severity="info", first=False)
    ctx.advisories(cfg, members)
    return ctx.finish(f"{len(names)} single-partition topics, {members} members, range: one member holds them all",
                      healthy=True, until_ms=t + 90_000, group=group)


@scenario("healthy-groups-restarted-together", "classic", healthy=True,
          resembles=("mass-expiry", "heartbeat-expiration", "rebalance-storm", "membership-flapping"))
def healthy_groups_restarted_together(ctx: Ctx):
    """Members of two or three groups coordinated by one broker restart at the same moment, cleanly
    (a host drained for maintenance): several groups rebalance in the same second, nobody expired."""
    from .broker import groups_on_one_coordinator

    ctx.brokers(count=ctx.rng.randint(2, 3))
    names = groups_on_one_coordinator(ctx, ctx.rng.randint(2, 3))
    groups = []
    for group in names:
        cfg = ctx.consumer_config(group, (group,), client_id=f"consumer-{group}-1")
        groups.append((group, ctx.consumer_group(group, ctx.rng.randint(2, 3), cfg, {group: ctx.p.pick("partitions")})))
        ctx.advisories(cfg, 4)
    t = 0.0
    for _, apps in groups:
        t = ctx.start_all(apps, at=t)
    t += 45_000
    for _, apps in groups:
        ctx.restart(apps[0], t + ctx.rng.uniform(0, 300), ctx.rng.uniform(3_000, 10_000), label="rolling-restart")
    for group, _ in groups:
        ctx.expect("healthy-operation", group, severity="info")
    incident = ctx.finish(f"one member of each of {len(names)} groups restarted together, cleanly", healthy=True,
                          until_ms=t + 90_000)
    for group, _ in groups:
        ctx.rebalance_truth(group)
    return incident
