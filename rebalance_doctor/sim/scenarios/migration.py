"""Classic <-> consumer protocol migration (KIP-848): the refusal the lab recorded (migration-upgrade-refused).

Only what the lab's recordings show is simulated: a member started with group.protocol=consumer into a running
classic group while the brokers' group.consumer.migration.policy forbids the upgrade is refused
(GROUP_ID_NOT_FOUND, "Cannot upgrade classic group ... because online upgrade is disabled."), goes to its fatal
state and its application exits. The online conversion itself (a mixed group during a rolling upgrade) and 4.3.1's
refusal of classic members are judged on the lab's recordings only.
"""

from __future__ import annotations

from . import scenario
from .base import Ctx
from .classic import must_not, setup, settle_window
from ..kip848 import AsyncConsumer, ConsumerGroupCoordinator


@scenario("migration-upgrade-refused", "classic", rules=("protocol-migration-refused",), versions=("4.0.0", "4.4.0"),
          resembles=("assignor-mismatch",))
def migration_upgrade_refused(ctx: Ctx):
    """A member started with group.protocol=consumer into a classic group under migration.policy=disabled: refused."""
    group, cfg, apps = setup(ctx)
    topics = {topic: partitions for app in apps for topic, partitions in app.topics.items()}
    for broker in ctx.world.cluster.brokers.values():
        coordinator = ConsumerGroupCoordinator(broker, ctx.world.cluster, topics)
        coordinator.upgrade_enabled = False                  # group.consumer.migration.policy=disabled
        ctx.world.kip848 = {**getattr(ctx.world, "kip848", {}), broker.id: coordinator}
    t = settle_window(ctx, ctx.start_all(apps))
    [host] = ctx.another_host(apps)
    topic, partitions = next(iter(topics.items()))
    newcomer = AsyncConsumer(ctx.world, host, ctx.client_log(host), group, cfg.client_id, topic, partitions,
                             label="scale-out", max_poll_ms=cfg.max_poll_ms)
    ctx.advisories(cfg, 1)
    ctx.apps.append(newcomer)
    ctx.env.call_at(t, newcomer.start)
    ctx.expect("protocol-migration-refused", group, culprit={"host": host, "client": newcomer.client_id})
    must_not(ctx, "protocol-migration-refused")
    return ctx.finish(f"{host} starts with group.protocol=consumer into the classic group {group} while "
                      "group.consumer.migration.policy=disabled: refused (GROUP_ID_NOT_FOUND), it exits",
                      healthy=False, until_ms=t + 60_000, group=group)
