"""Kafka Connect: a connector created while a worker joins (issue 17's healthy look-alike of connect-config-mismatch).

The leader's next assignment carries the config topic's new offset; every worker that has not read that far
logs "Current config state offset X is behind group assignment Y, reading to end of config log", reads to
the end and starts its work. Behind, then caught up: the herder's normal catch-up, never a forced loop.
"""

from __future__ import annotations

from . import scenario
from .base import Ctx
from .connect import connect_setup, connect_truth


@scenario("healthy-connect-config-update", "connect", healthy=True,
          resembles=("connect-config-mismatch", "connect-scheduled-delay", "rebalance-storm", "membership-flapping"))
def healthy_connect_config_update(ctx: Ctx):
    """A connector is created while a new worker joins: the workers behind the new config offset catch up and start."""
    group, state, apps = connect_setup(ctx, workers=ctx.rng.randint(3, 4))
    newcomer = apps[-1]
    t = ctx.start_all(apps[:-1]) + ctx.rng.uniform(40_000, 70_000)
    name = ctx.rng.choice([c for c in ("pg-source", "bq-sink", "redis-sink", "gcs-sink") if c not in state.connectors])
    tasks = ctx.rng.randint(1, 3)

    def create_connector():
        # The REST call writes the connector's config, its task configs and the commit record: the config
        # topic grows; the workers have read none of it until the next assignment asks for it.
        state.connectors[name] = tasks
        state.offset += 2 + tasks
    ctx.env.call_at(t, create_connector)
    ctx.label_at(t, [newcomer], "scale-out")
    ctx.env.call_at(t + ctx.rng.uniform(200, 2_000), newcomer.start)
    ctx.expect("healthy-operation", group, severity="info")
    incident = ctx.finish(f"connector {name} created while worker {newcomer.host} joins: the workers catch up with "
                          "the config topic and start", healthy=True, until_ms=t + 90_000, group=group)
    connect_truth(ctx, group)
    return incident
