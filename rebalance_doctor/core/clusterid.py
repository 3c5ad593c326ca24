"""The Kafka cluster id a log file states near its start, read from the head sampled for its layout.

A Java client's metadata line (``org.apache.kafka.clients.Metadata``: ``[Consumer clientId=c,
groupId=g] Cluster ID: wxevPTjYRVeW9_LxhNFNtw``, written once per client when it first connects)
and a ZooKeeper-mode broker's start (``kafka.server.KafkaServer``: ``Cluster ID = ...``). Read
from the head only, so a file costs one search of bytes already in memory, nothing per line.
A head that states two different ids (a MirrorMaker 2 process, clients of two clusters) states
none: the file belongs to no one cluster.
"""

from __future__ import annotations

import re

from . import mirror

_STATED = re.compile(rb"Cluster ID(?: =|:) ([A-Za-z0-9_-]{6,64})\b")


def found(head: bytes) -> set[str]:
    """Every cluster id the bytes state."""
    return {m.group(1).decode("ascii") for m in _STATED.finditer(head)} if b"Cluster ID" in head else set()


def stated(head: bytes) -> str | None:
    ids = found(head)
    return ids.pop() if len(ids) == 1 else None


def renamed(given: str | None, stated_id: str | None) -> str | None:
    """The id a file under ``--cluster NAME`` (``given``) states, when it is not NAME: that id is NAME's
    (timeline/clusters.named_ids names the lines other files key by it, a MirrorMaker 2 log's clients)."""
    return stated_id if given is not None and stated_id and given != stated_id else None


class Head:
    """The cluster id a growing file states in its head (``analyze --follow``): the same head as a file read at
    once (its first ``limit`` bytes), read as it arrives, each byte once."""

    def __init__(self, limit: int):
        self.limit = limit
        self.seen = 0
        self.ids: set[str] = set()
        self.clients: mirror.Clients | None = None   # a MirrorMaker 2 log's: each client's cluster
        self._tail = b""   # the end of the last piece: a statement cut in two is read whole

    def feed(self, data: bytes) -> bool:
        """Read the part of ``data`` within the head; whether the cluster it states (or, an MM2 log, the
        clusters of its clients) changed."""
        if self.seen >= self.limit or not data:
            return False
        piece = data[:self.limit - self.seen]
        self.seen += len(piece)
        before = self.cluster
        text = self._tail + piece
        self.ids |= found(text)
        self._tail = text[-160:]
        changed = False
        if self.clients is None and mirror.is_mirror(text):
            self.clients, changed = mirror.Clients(), True
        if self.clients is not None:
            changed = self.clients.read(text, self.seen - len(text)) or changed
        return changed or self.cluster != before

    @property
    def cluster(self) -> str | None:
        if self.clients is not None:
            return None   # an MM2 log is no one cluster's: each client is
        return next(iter(self.ids)) if len(self.ids) == 1 else None
