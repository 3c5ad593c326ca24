"""Write one long-running group's logs: N rebalances of one classic group, each a member leaving on a poll
timeout and rejoining under a new member id (what a group that runs for months does), broker and client side.

    python benchmarks/long_group.py 25000 /tmp/long-25k      # then: rebalance-doctor analyze /tmp/long-25k

The analysis of such a group must grow linearly with N (docs/performance.md, "One long-running group").
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path

COORD = "(kafka.coordinator.group.GroupCoordinator)"
CLIENT = "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def write(rebalances: int, out: Path, seed: int = 1) -> None:
    rnd = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "broker-1.log", "w") as broker, open(out / "node1.log", "w") as node:
        write_group(broker, node, "payments", rebalances, rnd, datetime(2024, 3, 5, 10, 0, 0))


def write_group(broker, node, group: str, rebalances: int, rnd: random.Random, t: datetime) -> datetime:
    """One group's ``rebalances`` into the open broker and client logs, from time ``t``; the time it ends."""
    client = f"consumer-{group}-1"
    stay = f"{client}-{'%032x' % rnd.getrandbits(128)}"
    member = f"{client}-{'%032x' % rnd.getrandbits(128)}"
    generation = 1
    for _ in range(rebalances // 2):
        # the member leaves on a poll timeout: one rebalance
        broker.write(f"[{_ts(t)}] INFO [GroupCoordinator 1]: Preparing to rebalance group {group} in state "
                     f"PreparingRebalance with old generation {generation} (__consumer_offsets-13) (reason: "
                     f"Removing member {member} on LeaveGroup; client reason: consumer poll timeout has expired.) {COORD}\n")
        node.write(f"[{_ts(t)}] WARN [Consumer clientId={client}, groupId={group}] consumer poll timeout has expired. "
                   f"This means the time between subsequent calls to poll() was longer than the configured "
                   f"max.poll.interval.ms, which typically implies that the poll loop is spending too much time "
                   f"processing messages. {CLIENT}\n")
        t += timedelta(seconds=3)
        generation += 1
        broker.write(f"[{_ts(t)}] INFO [GroupCoordinator 1]: Stabilized group {group} generation {generation} "
                     f"(__consumer_offsets-13) with 1 members {COORD}\n")
        broker.write(f"[{_ts(t)}] INFO [GroupCoordinator 1]: Assignment received from leader {stay} for group "
                     f"{group} for generation {generation}. The group has 1 members, 0 of which are static. {COORD}\n")
        t += timedelta(seconds=30)
        # it rejoins with a new member id: another rebalance
        member = f"{client}-{'%032x' % rnd.getrandbits(128)}"
        broker.write(f"[{_ts(t)}] INFO [GroupCoordinator 1]: Dynamic member with unknown member id joins group "
                     f"{group} in Stable state. Created a new member id {member} and request the member to rejoin "
                     f"with this id. {COORD}\n")
        broker.write(f"[{_ts(t)}] INFO [GroupCoordinator 1]: Preparing to rebalance group {group} in state "
                     f"PreparingRebalance with old generation {generation} (__consumer_offsets-13) (reason: Adding "
                     f"new member {member} with group instance id None; client reason: rebalance failed due to "
                     f"MemberIdRequiredException) {COORD}\n")
        t += timedelta(seconds=3)
        generation += 1
        broker.write(f"[{_ts(t)}] INFO [GroupCoordinator 1]: Stabilized group {group} generation {generation} "
                     f"(__consumer_offsets-13) with 2 members {COORD}\n")
        node.write(f"[{_ts(t)}] INFO [Consumer clientId={client}, groupId={group}] Successfully joined group with "
                   f"generation Generation{{generationId={generation}, memberId='{member}', protocol='range'}} {CLIENT}\n")
        broker.write(f"[{_ts(t)}] INFO [GroupCoordinator 1]: Assignment received from leader {stay} for group "
                     f"{group} for generation {generation}. The group has 2 members, 0 of which are static. {COORD}\n")
        t += timedelta(minutes=10)
    return t


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rebalances", type=int)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    write(args.rebalances, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
