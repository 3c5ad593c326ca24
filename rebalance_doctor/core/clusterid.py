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

_STATED = re.compile(rb"Cluster ID(?: =|:) ([A-Za-z0-9_-]{6,64})\b")


def stated(head: bytes) -> str | None:
    found = {m.group(1) for m in _STATED.finditer(head)} if b"Cluster ID" in head else set()
    return found.pop().decode("ascii") if len(found) == 1 else None
