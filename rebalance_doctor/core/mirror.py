"""Which Kafka cluster each client of a MirrorMaker 2 process runs against, from what its log prints.

One MM2 process holds clients of several clusters, each named by the cluster *aliases* of its
replication flow (``SOURCE->TARGET``, as the operator named them in ``mm2.properties``):

- a flow's Connect worker: ``client.id`` ``SOURCE->TARGET`` (``MirrorMakerConfig.workerConfig``), its
  group (``SOURCE-mm2`` by default, or the ``group.id`` a cluster's settings give) and its internal
  topics' clients (``<group>-SOURCE->TARGET-offsets``, ``-statuses``, ``-configs``, ``-shared-admin``:
  ``ConnectUtils.clientIdBase``) run against the TARGET: a Connect cluster lives in the cluster it
  writes to;
- the connectors' own clients (Kafka 3.5+, ``MirrorConnectorConfig.addClientId``):
  ``[PREFIX|]SOURCE->TARGET|CONNECTOR|ROLE``, the role naming the side: ``replication-consumer`` reads
  the SOURCE, ``replication-source-admin``, ``checkpoint-source-admin``, ``offset-syncs-source-producer``
  ... the SOURCE, ``...-target-...`` the TARGET.

Each client prints the id of the cluster it reached once, with its own prefix (``[Worker clientId=
us-west->us-east, groupId=mm2] Cluster ID: k3Pc...``: ``clients.Metadata``), so the aliases' cluster
ids are learned from the head of the log; an alias whose id is not printed stands for its cluster
itself. A client whose name says neither (``connector-producer-MirrorSourceConnector-0``, the same in
every flow of the process) is attributed to none.
"""

from __future__ import annotations

import re

# A client's "Cluster ID:" line: its log prefix names it (Consumer, Producer, Worker, AdminClient ...).
_STATED = re.compile(rb"\[[A-Za-z ]*clientId=([^,\]]+)[^\]]*\] Cluster ID: ([A-Za-z0-9_-]{6,64})\b")
_FLOW = re.compile(r"(?:^|\|)([^|>]+?)->([^|]+?)\|([^|]+)\|([^|]+)$")   # [PREFIX|]SRC->TGT|CONNECTOR|ROLE
_WORKER = re.compile(r"->(.+?)(?:-(?:offsets|statuses|configs|shared-admin))?$")  # SRC->TGT, <group>-SRC->TGT-offsets
_SOURCE_ROLES = frozenset({"replication-consumer"})


def stated_by_client(head: bytes) -> dict[str, str]:
    """client id -> the cluster id it printed, in the head of a log."""
    if b"Cluster ID" not in head:
        return {}
    return {m.group(1).decode("utf-8", "replace"): m.group(2).decode("ascii") for m in _STATED.finditer(head)}


def is_mirror(head: bytes) -> bool:
    """Whether the head holds MirrorMaker 2 clients (a ``clientId`` naming a ``SOURCE->TARGET`` flow)."""
    return b"->" in head and re.search(rb"clientId=[^,\]\s]*->", head) is not None


def alias_of(client: str) -> str | None:
    """The alias of the cluster an MM2 client runs against, as its client id says; None when it does not."""
    if "->" not in client:
        return None
    flow = _FLOW.search(client)
    if flow is not None:
        source, target, _, role = flow.groups()
        words = set(role.split("-"))
        if role in _SOURCE_ROLES or "source" in words:
            return source
        if "target" in words:
            return target
        return None
    if "|" in client:
        return None
    worker = _WORKER.search(client)   # the flow's worker and its internal topics' clients: the target
    return worker.group(1) if worker else None


class Clients:
    """The cluster of each client of one MM2 log: the id it printed, else that of its alias."""

    def __init__(self, stated: dict[str, str] | None = None):
        self.stated: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self._known: dict[str, str | None] = {}
        self.learn(stated or {})

    def learn(self, stated: dict[str, str]) -> bool:
        """Take more clients' printed ids (a followed log's head arrives in pieces); whether any was new."""
        new = {c: i for c, i in stated.items() if self.stated.get(c) != i}
        if not new:
            return False
        self.stated.update(new)
        for client, cluster in new.items():
            alias = alias_of(client)
            if alias is not None:
                self.aliases.setdefault(alias, cluster)
        self._known.clear()
        return True

    def of(self, client: str | None) -> str | None:
        if not client:
            return None
        known = self._known.get(client, _UNSET)
        if known is _UNSET:
            known = self.stated.get(client)
            if known is None:
                alias = alias_of(client)
                known = self.aliases.get(alias, alias) if alias is not None else None
            self._known[client] = known
        return known


_UNSET = object()


def of_head(head: bytes) -> Clients | None:
    """The attribution of an MM2 log's clients (None for any other log: its clusters are the file's)."""
    return Clients(stated_by_client(head)) if is_mirror(head) else None


__all__ = ["Clients", "alias_of", "is_mirror", "of_head", "stated_by_client"]
