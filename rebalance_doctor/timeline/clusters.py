"""Which Kafka cluster each event belongs to, and groups keyed by (cluster, group).

A bundle can hold the logs of several clusters whose groups share a group.id (prod and staging,
MirrorMaker 2's source and target). An event's cluster is, in this order: the NAME of the
``--cluster NAME=PATH`` holding its file (set while reading); else the cluster id its file states
(a client's ``Cluster ID: X`` metadata line, event ``client.cluster``; when a named file states
the same id, its NAME); else, for a file that states none (a broker log of a release that does not
print it), the one cluster its group is seen in. Directory names alone never split clusters:
``prod/`` could as well be a host. When the events name one cluster or none, nothing changes;
when they name several, every grouped event's group becomes ``CLUSTER/GROUP``, so that
``prod/orders`` and ``staging/orders`` are two timelines everywhere (report, JSON, SQL).
"""

from __future__ import annotations

ID_EVENT = "client.cluster"


def settle(rows: list[dict]) -> set[str]:
    """Fill the ``cluster`` column of ``rows`` (in place) and, when they hold several clusters, key
    their groups by cluster. Returns the clusters found."""
    stated: dict[str, str] = {}   # source -> the first cluster id it states
    named: dict[str, str] = {}    # source -> its --cluster NAME
    for e in rows:
        if e["cluster"] is not None:
            named.setdefault(e["source"], e["cluster"])
        if e["event"] == ID_EVENT:
            cluster_id = (e.get("attrs") or {}).get("cluster_id")
            if cluster_id:
                stated.setdefault(e["source"], cluster_id)
    if not stated and len(set(named.values())) < 2:
        return set(named.values())   # one cluster or none: the analysis of today, at no cost
    name_of_id = {cluster_id: named[source] for source, cluster_id in stated.items() if source in named}
    of_source = {source: name_of_id.get(cluster_id, cluster_id) for source, cluster_id in stated.items()}
    of_source.update(named)
    groups: dict[str, set[str]] = {}
    for e in rows:
        cluster = of_source.get(e["source"])
        if cluster is not None:
            e["cluster"] = cluster
            if e["group"] is not None:
                groups.setdefault(e["group"], set()).add(cluster)
    for e in rows:
        if e["cluster"] is None and e["group"] is not None and len(groups.get(e["group"], ())) == 1:
            e["cluster"] = next(iter(groups[e["group"]]))
    clusters = {c for found in groups.values() for c in found} | set(of_source.values())
    if len(clusters) > 1:
        for e in rows:
            cluster, group = e["cluster"], e["group"]
            if cluster is not None and group is not None and not group.startswith(cluster + "/"):
                e["group"] = f"{cluster}/{group}"
    return clusters


def keyed_names(asked: list[str], clusters: set[str]) -> list[str]:
    """``--group orders`` in a bundle of several clusters: every cluster's ``orders``."""
    if len(clusters) < 2:
        return asked
    return [name if "/" in name and name.split("/", 1)[0] in clusters else f"{cluster}/{name}"
            for name in asked for cluster in (sorted(clusters) if not ("/" in name and name.split("/", 1)[0] in clusters) else [None])]
