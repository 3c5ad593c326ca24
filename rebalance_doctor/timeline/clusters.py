"""Which Kafka cluster each event belongs to, and groups keyed by (cluster, group).

A bundle can hold the logs of several clusters whose groups share a group.id (prod and staging,
MirrorMaker 2's source and target). An event's cluster is, in this order: the NAME of the
``--cluster NAME=PATH`` holding its file; else the cluster id its file states near its start (a
client's ``Cluster ID: X`` metadata line, a ZooKeeper-mode broker's ``Cluster ID = X``:
core/clusterid.py), both set while reading; else, for a file that states none (a KRaft broker's
log, an application log at WARN), the one cluster of the files of the nearest directory above it
that has any, else the one cluster its group is seen in. Directory names alone never split
clusters (``prod/`` could as well be a host): ``--cluster`` says so. When the events name one
cluster or none, nothing changes; when they name several, every grouped event's group becomes
``CLUSTER/GROUP``, so that ``prod/orders`` and ``staging/orders`` are two timelines everywhere
(report, JSON, SQL).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass
class Keying:
    """How a bundle's groups are keyed by cluster, decided from its (source, cluster, group) triples alone, so
    that a Spark job decides it on the driver from a distinct projection and applies it on the executors."""

    clusters: set[str] = field(default_factory=set)
    of_source: dict[str, str] = field(default_factory=dict)   # each file's one cluster (else its directory's)
    of_group: dict[str, str] = field(default_factory=dict)    # groups seen in one cluster only: that cluster


def keying(triples: Iterable[tuple[str, str | None, str | None]]) -> Keying:
    """The keying of events given as their distinct (source, cluster, group)."""
    triples = list(triples)
    clusters = {c for _, c, _ in triples} - {None}
    if len(clusters) < 2:
        return Keying(clusters)
    of_source: dict[str, set] = {}
    for source, cluster, _ in triples:
        of_source.setdefault(source, set()).add(cluster)
    # A file's events all take the one cluster it states (followed, its first lines were read before its
    # head stated it: core/growing.py), else that of its directory.
    resolved = {source: next(iter(c - {None})) for source, c in of_source.items() if len(c - {None}) == 1}
    resolved.update(_by_directory(of_source))
    groups: dict[str, set[str]] = {}
    for source, cluster, group in triples:
        cluster = cluster if cluster is not None else resolved.get(source)
        if cluster is not None and group is not None:
            groups.setdefault(group, set()).add(cluster)
    return Keying(clusters, resolved, {g: next(iter(c)) for g, c in groups.items() if len(c) == 1})


def apply(rows: list[dict], keys: Keying) -> None:
    """Fill the ``cluster`` column where the file said none and key the groups (in place); nothing when the
    keying found one cluster or none."""
    if len(keys.clusters) < 2:
        return
    for e in rows:
        cluster, group = e["cluster"], e["group"]
        if cluster is None:
            cluster = e["cluster"] = keys.of_source.get(e["source"])
        if group is None:
            continue
        if cluster is None:
            cluster = keys.of_group.get(group)
            if cluster is None:
                continue   # a group of no cluster or of several: its unattributed lines stay unkeyed
            e["cluster"] = cluster
        if not group.startswith(cluster + "/"):   # follow mode settles the same rows again
            e["group"] = f"{cluster}/{group}"


def named_ids(files) -> dict[str, str]:
    """cluster id -> the NAME ``--cluster`` gives it: the id a file under ``--cluster NAME=PATH`` states (``FileStats.
    cluster_id``; an id stated under two names is neither's)."""
    names: dict[str, set[str]] = {}
    for f in files:
        if getattr(f, "cluster_id", None) and getattr(f, "cluster_name", None):
            names.setdefault(f.cluster_id, set()).add(f.cluster_name)
    return {i: next(iter(n)) for i, n in names.items() if len(n) == 1}


def settle(rows: list[dict], named: dict[str, str] | None = None) -> set[str]:
    """Fill the ``cluster`` column of ``rows`` where the file said none (in place) and, when they
    hold several clusters, key their groups by cluster. Returns the clusters found. ``named``: cluster id ->
    the NAME ``--cluster`` gives the files that state it; rows keyed by that id (a MirrorMaker 2 log's clients
    that print it, under no --cluster) are NAME's, so that one cluster is one key."""
    if named:
        for e in rows:
            old = e["cluster"]
            if old in named:
                e["cluster"] = named[old]
                if e["group"] is not None and e["group"].startswith(old + "/"):   # keyed before NAME was known
                    e["group"] = e["group"][len(old) + 1:]                        # (follow mode): keyed again
    keys = keying({(e["source"], e["cluster"], e["group"]) for e in rows})
    apply(rows, keys)
    return keys.clusters


def _by_directory(of_source: dict[str, set]) -> dict[str, str]:
    """The cluster of each file that states none: that of the nearest directory above it whose
    files state one cluster only (a KRaft broker's log beside its cluster's clients); none when the
    nearest directory with any states several."""
    known = {source: next(iter(c - {None})) for source, c in of_source.items() if len(c - {None}) == 1}
    under: dict[str, set[str]] = {}
    for source, cluster in known.items():
        for directory in _directories(source):
            under.setdefault(directory, set()).add(cluster)
    resolved = {}
    for source in of_source:
        if source in known:
            continue
        for directory in _directories(source):
            found = under.get(directory)
            if found:
                if len(found) == 1:
                    resolved[source] = next(iter(found))
                break
    return resolved


def _directories(source: str) -> list[str]:
    """The directories above a source name, nearest first, the input root ("") last."""
    parts = source.replace("!", "/").split("/")[:-1]
    return ["/".join(parts[:n]) for n in range(len(parts), -1, -1)]


def keyed_by(group: str, events: Iterable[dict]) -> str | None:
    """The cluster a group's events were keyed by (``prod`` of ``prod/orders``); None when they name one cluster
    or none and the group is not keyed (``apply`` prefixes a group only when the events hold several)."""
    found = {e.get("cluster") for e in events} - {None}
    cluster = next(iter(found)) if len(found) == 1 else None
    return cluster if cluster is not None and group.startswith(cluster + "/") else None


def keyed_names(asked: list[str], clusters: set[str]) -> list[str]:
    """``--group orders`` in a bundle of several clusters: every cluster's ``orders``."""
    if len(clusters) < 2:
        return asked
    keyed = []
    for name in asked:
        if name.split("/", 1)[0] in clusters:
            keyed.append(name)
        else:
            keyed += [f"{cluster}/{name}" for cluster in sorted(clusters)]
    return keyed
