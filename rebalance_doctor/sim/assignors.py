"""The client-side partition assignors a group leader runs (range, roundrobin, sticky, cooperative-sticky).

Simplified but faithful in what shows in the logs: which member gets which partitions, that range
and roundrobin ignore what a member owned, that sticky keeps it, and that the cooperative-sticky
assignor never hands a partition to a new owner in the same rebalance in which it takes it away
(the owner revokes it first; the followup rebalance assigns it).
"""

from __future__ import annotations

EAGER_ASSIGNORS = {"range", "roundrobin", "sticky"}
# "lag-balancing": an application's own assignor (supportedProtocols() includes COOPERATIVE) that balances the
# partitions by their consumer lag; it follows the cooperative contract (a partition changing owner is revoked
# first and assigned in the followup) but moves partitions again at every round: its rounds never converge.
COOPERATIVE_ASSIGNORS = {"cooperative-sticky", "lag-balancing"}
CLASS_NAMES = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
    "lag-balancing": "com.example.kafka.LagBalancingAssignor",
}


def protocol_of(assignors: tuple[str, ...]) -> str:
    """ConsumerCoordinator: COOPERATIVE only when every configured assignor supports it."""
    return "cooperative" if all(a in COOPERATIVE_ASSIGNORS for a in assignors) else "eager"


def partition_key(tp: str) -> tuple[str, int]:
    topic, _, n = tp.rpartition("-")
    return topic, int(n)


def all_partitions(topics: dict[str, int], subscribed: set[str]) -> list[str]:
    return [f"{t}-{i}" for t in sorted(topics) if t in subscribed for i in range(topics[t])]


def assign(name: str, topics: dict[str, int], members: list[tuple[str, set[str], list[str]]]
           ) -> tuple[dict[str, list[str]], set[str]]:
    """(member -> partitions, partitions withheld for a cooperative followup).

    members: (member id, subscribed topics, owned partitions) in the order the leader sees them.
    """
    ids = sorted(m for m, _, _ in members)
    subs = {m: s for m, s, _ in members}
    owned = {m: list(o) for m, _, o in members}
    out: dict[str, list[str]] = {m: [] for m in ids}
    withheld: set[str] = set()
    if name == "range":
        for topic in sorted(topics):
            consumers = [m for m in ids if topic in subs[m]]
            if not consumers:
                continue
            n = topics[topic]
            per, extra = divmod(n, len(consumers))
            start = 0
            for i, m in enumerate(consumers):
                count = per + (1 if i < extra else 0)
                out[m].extend(f"{topic}-{p}" for p in range(start, start + count))
                start += count
    elif name == "roundrobin":
        parts = all_partitions(topics, set().union(*subs.values()) if subs else set())
        i = 0
        for tp in parts:
            topic = partition_key(tp)[0]
            for _ in range(len(ids)):
                m = ids[i % len(ids)]
                i += 1
                if topic in subs[m]:
                    out[m].append(tp)
                    break
    elif name == "lag-balancing":
        lag_balancing(topics, ids, subs, owned, out, withheld)
    else:
        sticky(topics, ids, subs, owned, out, withheld, cooperative=name == "cooperative-sticky")
    for m in out:
        out[m].sort(key=partition_key)
    return out, withheld


def sticky(topics, ids, subs, owned, out, withheld, cooperative: bool) -> None:
    parts = all_partitions(topics, set().union(*subs.values()) if subs else set())
    if not ids:
        return
    quota_min, extra = divmod(len(parts), len(ids))
    claimed: dict[str, str] = {}
    # keep what each member owns, up to its quota (the most loaded give up first)
    order = sorted(ids, key=lambda m: -len(owned[m]))
    slots_with_extra = extra
    for m in order:
        quota = quota_min + (1 if slots_with_extra > 0 else 0)
        keep = [tp for tp in sorted(owned[m], key=partition_key) if tp in parts and tp not in claimed]
        keep = keep[:quota]
        if len(keep) > quota_min and slots_with_extra > 0:
            slots_with_extra -= 1
        for tp in keep:
            claimed[tp] = m
            out[m].append(tp)
    free = [tp for tp in parts if tp not in claimed]
    previously_owned = {tp: m for m in ids for tp in owned[m]}
    for tp in free:
        # the least loaded member takes it
        target = min(ids, key=lambda m: (len(out[m]), m))
        if cooperative and tp in previously_owned and previously_owned[tp] != target:
            withheld.add(tp)       # revoked now, assigned in the followup
            continue
        out[target].append(tp)


def lag_balancing(topics, ids, subs, owned, out, withheld) -> None:
    """At every round the member with the most lag (here: the most partitions, then the first in the leader's
    order) gives up its partition with the most lag (its first); partitions nobody owns go to the least loaded
    member. Cooperative: the partition taken away is withheld (revoked now, assigned in the followup), so every
    round revokes again and the rounds never converge."""
    parts = all_partitions(topics, set().union(*subs.values()) if subs else set())
    if not ids:
        return
    mine = {m: [tp for tp in sorted(owned[m], key=partition_key) if tp in parts] for m in ids}
    claimed: set[str] = set()
    for m in ids:
        mine[m] = [tp for tp in mine[m] if tp not in claimed]
        claimed.update(mine[m])
    busiest = max(ids, key=lambda m: len(mine[m]))
    if len(ids) > 1 and mine[busiest]:
        withheld.add(mine[busiest].pop(0))      # revoked now; the least loaded member gets it in the followup
    for m in ids:
        out[m].extend(mine[m])
    for tp in parts:
        if tp not in claimed:
            target = min(ids, key=lambda m: (len(out[m]), m))
            out[target].append(tp)
