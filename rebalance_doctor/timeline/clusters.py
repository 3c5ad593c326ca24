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


def settle(rows: list[dict]) -> set[str]:
    """Fill the ``cluster`` column of ``rows`` where the file said none (in place) and, when they
    hold several clusters, key their groups by cluster. Returns the clusters found."""
    clusters = {e["cluster"] for e in rows} - {None}
    if len(clusters) < 2:
        return clusters   # one cluster or none: the analysis of today, untouched
    of_source: dict[str, set] = {}
    for e in rows:
        of_source.setdefault(e["source"], set()).add(e["cluster"])
    resolved = _by_directory(of_source)
    groups: dict[str, set[str]] = {}
    for e in rows:
        if e["cluster"] is None:
            e["cluster"] = resolved.get(e["source"])
        if e["cluster"] is not None and e["group"] is not None:
            groups.setdefault(e["group"], set()).add(e["cluster"])
    for e in rows:
        cluster, group = e["cluster"], e["group"]
        if group is None:
            continue
        if cluster is None:
            found = groups.get(group, ())
            if len(found) != 1:
                continue   # a group of no cluster or of several: its unattributed lines stay unkeyed
            cluster = e["cluster"] = next(iter(found))
        if not group.startswith(cluster + "/"):   # follow mode settles the same rows again
            e["group"] = f"{cluster}/{group}"
    return clusters


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
