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
every flow of the process) is attributed to none: real MM2 (recorded by the lab, fixtures/lab/mm2-*)
has each flow's connectors make a client of that one name, and each prints its own flow's cluster id
(``connector-producer-MirrorHeartbeatConnector-0`` states A's id and B's a few milliseconds apart),
so a client id that states two ids states none.

Before Kafka 3.5 a flow's worker has no such name: ``MirrorMakerConfig.workerConfig`` sets no ``client.id``,
so each herder's is Connect's default, ``connect-N`` (``DistributedHerder``: a sequence from 1 per process, in
the order the herders are made), and the connectors' clients keep their defaults (``consumer-null-1``). The
lines that name no client say which is which: ``MirrorMaker.addHerder`` logs ``creating herder for
SOURCE->TARGET`` before it makes each herder (so ``connect-N`` is the N-th flow of the process's start), then
looks up the TARGET's cluster id (``ConnectUtils``: ``Kafka cluster ID: X``, no client prefix: the alias's id
when no client of it prints one). A log whose herders were made in another order at a restart than at its
first start leaves ``connect-N`` to its printed id only.
"""

from __future__ import annotations

import re

# A client's "Cluster ID:" line: its log prefix names it (Consumer, Producer, Worker, AdminClient ...). An id must
# end where its line goes on (a followed head arrives in pieces: an id cut at a piece's end is not one).
_STATED = re.compile(rb"\[[A-Za-z ]*clientId=([^,\]]+)[^\]]*\] Cluster ID: ([A-Za-z0-9_-]{6,64})(?=[^A-Za-z0-9_-])")
# Lines of no client (MirrorMaker.addHerder): the flow of each herder made, then its TARGET's cluster id looked up.
# (a JSON layout ends the message with a quote; a piece's end is no end: the next piece holds the rest)
_HERDER = re.compile(rb"creating herder for ([^\s|>\"]+)->([^\s|\"\\]+)(?=[\s\"\\])")
_LOOKED_UP = re.compile(rb"Kafka cluster ID: ([A-Za-z0-9_-]{6,64})(?=[^A-Za-z0-9_-])")
_DEFAULT_WORKER = re.compile(r"connect-(\d+)")   # a herder's client.id before 3.5 (DistributedHerder's default)
_FLOW = re.compile(r"(?:^|\|)([^|>]+?)->([^|]+?)\|([^|]+)\|([^|]+)$")   # [PREFIX|]SRC->TGT|CONNECTOR|ROLE
_WORKER = re.compile(r"->(.+?)(?:-(?:offsets|statuses|configs|shared-admin))?$")  # SRC->TGT, <group>-SRC->TGT-offsets
_SOURCE_ROLES = frozenset({"replication-consumer"})


def stated_by_client(head: bytes) -> dict[str, str | None]:
    """client id -> the cluster id it printed, in the head of a log; None for a client id that printed two (one
    name in every flow of the process: ``connector-producer-MirrorHeartbeatConnector-0``): it names no cluster."""
    if b"Cluster ID" not in head:
        return {}
    out: dict[str, str | None] = {}
    for m in _STATED.finditer(head):
        client, cluster = m.group(1).decode("utf-8", "replace"), m.group(2).decode("ascii")
        out[client] = cluster if out.get(client, cluster) == cluster else None
    return out


def is_mirror(head: bytes) -> bool:
    """Whether the head holds MirrorMaker 2 clients (a ``clientId`` naming a ``SOURCE->TARGET`` flow) or herders
    (``creating herder for SOURCE->TARGET``: before 3.5 no client is named after its flow)."""
    return b"->" in head and (re.search(rb"clientId=[^,\]\s]*->", head) is not None
                              or (b"creating herder for" in head and _HERDER.search(head) is not None))


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
    """The cluster of each client of one MM2 log: the id it printed, else that of its alias (a flow's side, as its
    name or, before 3.5, its herder's place says)."""

    def __init__(self, stated: dict[str, str] | None = None):
        self.stated: dict[str, str] = {}
        self.aliases: dict[str, str] = {}          # alias -> the id a client of it printed
        self.herders: list[tuple[str, str]] = []   # (source, target) of each herder, as the process first made them
        self.looked_up: dict[str, str] = {}        # target alias -> the id its herder looked up (no client named)
        self._run: list[tuple[str, str]] = []      # the herders of the start being read
        self._reordered = False                    # a restart made them in another order: connect-N is no one flow
        self._pending: str | None = None           # the target of the last herder made, its id not looked up yet
        self._read: set[int] = set()               # offsets of the herder and lookup lines read (pieces overlap)
        self._known: dict[str, str | None] = {}
        self.learn(stated or {})

    def learn(self, stated: dict[str, str | None]) -> bool:
        """Take more clients' printed ids (a followed log's head arrives in pieces); whether any was new. A client
        that printed another id than before (or None: two) names no cluster from then on."""
        new = {}
        for client, cluster in stated.items():
            if client in self.stated and self.stated[client] != cluster:
                cluster = None
            if client not in self.stated or self.stated[client] != cluster:
                new[client] = cluster
        if not new:
            return False
        self.stated.update(new)
        self._refresh()
        return True

    def read(self, text: bytes, at: int = 0) -> bool:
        """Learn from a part of the head (``at``: its offset in the file; a followed head arrives in overlapping
        pieces): the ids clients print, the herders made and the ids they looked up. Whether anything was new."""
        changed = self.learn(stated_by_client(text))
        if b"creating herder" not in text and b"Kafka cluster ID" not in text:
            return changed
        found = sorted([(at + m.start(), m) for m in _HERDER.finditer(text)]
                       + [(at + m.start(), m) for m in _LOOKED_UP.finditer(text)], key=lambda x: x[0])
        for offset, m in found:
            if offset in self._read:
                continue
            self._read.add(offset)
            changed = True
            if m.re is _HERDER:
                flow = (m.group(1).decode("utf-8", "replace"), m.group(2).decode("utf-8", "replace"))
                if flow in self._run:          # the process started again: its sequence starts again at 1
                    self._run = []
                self._run.append(flow)
                n = len(self._run)
                if n > len(self.herders) and self._run[:-1] == self.herders[:n - 1]:
                    self.herders.append(flow)
                elif n > len(self.herders) or self.herders[n - 1] != flow:
                    self._reordered = True
                self._pending = flow[1]
            elif self._pending is not None:
                self.looked_up.setdefault(self._pending, m.group(1).decode("ascii"))
                self._pending = None
        self._refresh()
        return changed

    def _refresh(self) -> None:
        self.aliases = {}
        for client, cluster in self.stated.items():
            alias = self._alias(client)
            if alias is not None and cluster is not None:
                self.aliases.setdefault(alias, cluster)
        self._known.clear()

    def _alias(self, client: str) -> str | None:
        alias = alias_of(client)
        if alias is None and not self._reordered:
            worker = _DEFAULT_WORKER.fullmatch(client)
            if worker is not None and 1 <= int(worker.group(1)) <= len(self.herders):
                alias = self.herders[int(worker.group(1)) - 1][1]   # a herder's worker runs against its TARGET
        return alias

    def of(self, client: str | None) -> str | None:
        if not client:
            return None
        known = self._known.get(client, _UNSET)
        if known is _UNSET:
            known = self.stated.get(client)
            if known is None and client not in self.stated:     # a client that printed two ids names none
                alias = self._alias(client)
                if alias is not None:
                    known = self.aliases.get(alias) or self.looked_up.get(alias) or alias
            self._known[client] = known
        return known


_UNSET = object()


def of_head(head: bytes) -> Clients | None:
    """The attribution of an MM2 log's clients (None for any other log: its clusters are the file's)."""
    if not is_mirror(head):
        return None
    clients = Clients()
    clients.read(head)
    return clients


__all__ = ["Clients", "alias_of", "is_mirror", "of_head", "stated_by_client"]
