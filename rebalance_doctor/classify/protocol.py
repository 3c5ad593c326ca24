"""Which rebalance protocol a group (and each of its rebalances) uses, read from the lines.

The markers are data (protocols.toml): the assignment protocol in ``Generation{..., protocol='range'}``
and the selected assignor, ``group.protocol`` and ``partition.assignment.strategy`` of config dumps,
loggers that exist under one protocol only (AsyncKafkaConsumer, ConsumerMembershipManager, ...),
the KIP-848 coordinator's lines (epochs, target assignments), and the component (Streams,
Connect). A rebalance's own lines decide first, so a group switching from eager to cooperative
(the two-bounce upgrade) shows both; otherwise the group's protocol applies.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path

from ..core.toml import load_toml
from ..timeline.model import GroupTimeline
from ..core import eventnames as EV

PROTOCOLS_FILE = Path(__file__).with_name("protocols.toml")
# More specific protocols win over less specific ones when a group's lines name several.
_SPECIFIC = ("share", "streams-group", "consumer", "connect", "streams", "cooperative", "eager")
NOT_DIAGNOSED: tuple[str, ...] = ()
# The protocols whose members the coordinator keeps by their own heartbeats, with member and group epochs and
# a target assignment it computes (KIP-848 consumer groups, KIP-1071 streams groups, KIP-932 share groups): a
# member whose session expires is fenced, there is no JoinGroup/SyncGroup round, and the session timeout and
# heartbeat interval are the broker's group.<type>.* settings, not the client's.
HEARTBEAT_PROTOCOLS = ("consumer", "streams-group", "share")
# The broker's settings for each (the group type's prefix of group.<type>.session.timeout.ms and the like).
BROKER_PREFIX = {"consumer": "group.consumer", "streams-group": "group.streams", "share": "group.share"}
GROUP_KIND = {"consumer": "KIP-848 consumer group", "streams-group": "KIP-1071 streams group",
              "share": "KIP-932 share group"}


def heartbeat_protocol(protocol: str | None) -> bool:
    """The coordinator keeps the members by their heartbeats and fences them (see HEARTBEAT_PROTOCOLS)."""
    return protocol in HEARTBEAT_PROTOCOLS


@lru_cache(maxsize=1)
def markers() -> dict:
    return load_toml(PROTOCOLS_FILE)


def of_event(event: dict) -> str | None:
    """The protocol one line names, or None when it names none."""
    data = markers()
    logger = event.get("logger")
    if logger:
        found = data["logger"].get(logger)
        if found:
            return found
    name = event["event"]
    component = event.get("component")
    if name in (EV.JOIN_REQUESTED, EV.ASSIGNMENT_RECEIVED, EV.REBALANCE_PREPARE):
        # the member's own words (a coordinator's "client reason: ..." quotes them, KIP-800)
        text = ((event.get("reason") or "") + " " + ((event.get("attrs") or {}).get("wording") or "")).lower() \
            if component != "broker" else (event.get("reason") or "").lower()
        found = next((p for words, p in data["own_words"].items() if words in text), None)
        if found:
            return found
    if component == "broker":
        found = data["broker"]["group_type"].get((event.get("attrs") or {}).get("group_type"))
        if found:
            return found
        if name in data["broker"]["events"]:
            return "consumer"
        return None
    if name == EV.MEMBER_EPOCH_TRANSITION:
        return "consumer"
    if name == EV.CLIENT_CONFIG:
        attrs = event.get("attrs") or {}
        group_protocol = (attrs.get("group.protocol") or "").strip().lower()
        if group_protocol in data["group_protocol"]:
            return data["group_protocol"][group_protocol]
        if component in ("streams", "connect"):
            return component
        return _of_strategy(attrs.get("partition.assignment.strategy"))
    protocol = event.get("protocol")
    if protocol and name in (EV.JOIN_SUCCESS, EV.SYNC_SUCCESS, EV.ASSIGNMENT_COMPUTED):
        found = data["assignor"].get(protocol.strip().lower())
        if found:
            return found
    if component in ("streams", "connect") and name.startswith(("join.", "sync.", "streams.", "connect.")):
        return component
    return None


def _of_strategy(text: str | None) -> str | None:
    if not text:
        return None
    # Config dumps print the classes as "class org.apache.kafka.clients.consumer.RangeAssignor".
    classes = [c.strip().removeprefix("class ").strip() for c in text.strip("[]").split(",") if c.strip()]
    known = [markers()["assignor_class"].get(c) for c in classes]
    if not known or None in known:
        return None
    return "cooperative" if all(k == "cooperative" for k in known) else "eager"


def assignor_names(strategy: list[str] | str | None) -> list[str] | None:
    """The names a partition.assignment.strategy list announces in its JoinGroup, in preference order
    (``range``, ``cooperative-sticky``, ...); None when a class is a custom assignor (its name is not known)."""
    if not strategy:
        return None
    if isinstance(strategy, str):
        strategy = [c for c in strategy.strip("[]").split(",") if c.strip()]
    names = [markers()["assignor_name"].get(c.strip().removeprefix("class ").strip()) for c in strategy]
    return None if not names or None in names else names


def assignor_protocol(name: str) -> str | None:
    """eager or cooperative: the rebalance protocol of a classic assignor name."""
    return markers()["assignor"].get(name)


def most_specific(found: Counter) -> str | None:
    for protocol in _SPECIFIC:
        if found.get(protocol):
            return protocol
    return None


def detect(timeline: GroupTimeline) -> tuple[str, dict[int, str]]:
    """(the group's protocol, rebalance index -> protocol) for every rebalance of the group."""
    found: Counter = Counter()
    named: dict[int, str] = {}             # id(event) -> the protocol it names
    for event in timeline.events:
        protocol = of_event(event)
        if protocol:
            found[protocol] += 1
            named[id(event)] = protocol
    group = most_specific(found) or {"streams": "streams", "connect": "connect"}.get(timeline.kind, "unknown")
    if group in ("eager", "cooperative") and found.get("eager") and found.get("cooperative"):
        group = "cooperative" if found["cooperative"] >= found["eager"] else "eager"
    per_rebalance = {}
    for r in timeline.rebalances:
        own: Counter = Counter()
        for event in r.events:
            protocol = named.get(id(event))
            if protocol:
                own[protocol] += 1
        chosen = most_specific(own) if own else None
        if chosen in ("eager", "cooperative") and group not in ("eager", "cooperative", "unknown"):
            chosen = group     # a Streams or Connect member's consumer names its own assignor
        per_rebalance[r.index] = chosen or group
    return group, per_rebalance
