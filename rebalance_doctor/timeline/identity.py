"""Who a line is about: one name per group member, whichever side (broker or client) logged it.

Classic member ids are ``<client.id>-<UUID>``; a Streams main consumer's client.id is
``<application.id>-<process UUID>-StreamThread-<n>-consumer`` and its thread the same without
``-consumer``. The identity of a member is its client.id without the ``-consumer`` suffix, so
the broker's member id, the consumer prefix and the stream-thread prefix name it alike.
"""

from __future__ import annotations

from functools import lru_cache

import regex

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_MEMBER_SUFFIX = regex.compile(rf"-{_UUID}$")
_CLIENT_SUFFIX = regex.compile(r"-(?:consumer|restore-consumer|producer)$")
_PROCESS = regex.compile(rf"^(?P<node>.+?-{_UUID})(?:-StreamThread-\d+.*)?$")


@lru_cache(maxsize=65536)
def client_of_member(member: str) -> str:
    """The client.id part of a classic member id (KIP-848 member ids have none: returned whole)."""
    return _MEMBER_SUFFIX.sub("", member)


@lru_cache(maxsize=65536)
def canonical(name: str) -> str:
    return _CLIENT_SUFFIX.sub("", name)


def of_event(event: dict, directory: dict[str, str]) -> str | None:
    """The identity of the member an event is about (member id first, else the writing client)."""
    member = event.get("member")
    if member:
        known = directory.get(member)
        if known:
            return known
        if event.get("component") == "broker" or not event.get("client"):
            return canonical(client_of_member(member))
    # A thread is a member's name only when it names a client (a Kafka Streams StreamThread, which logs without a
    # client prefix); "main" or "pool-1-thread-1" is any process's thread, not a member.
    client = event.get("client") or (event.get("thread") if node_of(event.get("thread") or "") else None)
    if client:
        return canonical(client)
    if member:
        return canonical(client_of_member(member))
    if event.get("library") and event.get("component") != "broker" and event.get("host"):
        # A non-Java client line naming no member, handle or thread (kafka-python's "Heartbeat poll expired,
        # leaving group"): a log file is one process's output, so the process that wrote it is the member.
        return f"{event['library']}@{event['host']}"
    return None


@lru_cache(maxsize=65536)
def node_of(identity: str) -> str | None:
    """The Streams process (client node) of a member identity, when it names one."""
    m = _PROCESS.match(identity)
    return m["node"] if m else None


_UUID_HEAD = regex.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def short(identity: str | None) -> str:
    """An identity shortened for tables and titles: each UUID cut to its first 8 characters."""
    if not identity:
        return "-"
    return _UUID_HEAD.sub(r"-\1", identity) if len(identity) > 40 else identity
