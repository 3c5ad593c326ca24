"""After the reader, the analysis reads event fields, never the message text: what a classifier or a rule
needs from a line is captured by the line's pattern (issue 31, item 5)."""

from __future__ import annotations

import ast
from pathlib import Path

from rebalance_doctor.core import assignment_maps

PACKAGE = Path(assignment_maps.__file__).resolve().parents[1]
# The readers of `message` left in classify/ and rules/ (module -> how many times it names the column):
# each is a field a pack does not capture yet. The list only shrinks: a new reader fails here.
STILL_READ: dict[str, int] = {}


def test_no_new_reader_of_the_message_in_classify_or_rules():
    found = {}
    for folder in ("classify", "rules"):
        for path in sorted((PACKAGE / folder).glob("*.py")):
            count = sum(1 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                        if isinstance(node, ast.Constant) and node.value == "message")
            if count:
                found[f"{folder}/{path.name}"] = count
    assert found == STILL_READ, "read a field the pattern captures, not the message (and shrink STILL_READ)"


def test_assignment_maps_read_the_maps_the_packs_capture():
    leader = "{consumer-a-1=Assignment(partitions=[t-0, t-1]), consumer-b-1=Assignment(partitions=[])}"
    assert assignment_maps.shares(leader) == [("consumer-a-1", ["t-0", "t-1"]), ("consumer-b-1", [])]
    assert assignment_maps.members(leader) == ["consumer-a-1", "consumer-b-1"]
    target = "{gjWz=MemberAssignment(partitions={7l8r=[0, 1]}), 6nc1=MemberAssignment(partitions={})}"
    assert assignment_maps.members(target) == ["gjWz", "6nc1"]
    assert assignment_maps.members(None) == [] and assignment_maps.shares("") == []


LAB = PACKAGE.parent / "fixtures" / "lab"


def test_the_fields_those_readers_became_are_captured_from_recorded_lines():
    from helpers import events_of

    # the group type a coordinator line names (classify/protocol.py)
    events, _ = events_of(LAB / "share-crash-loop@4.4.0" / "kafka-1.log",
                          LAB / "streams-thread-replacement-loop@4.4.0" / "kafka-1.log",
                          LAB / "streams-group-thread-replacement-loop@4.4.0" / "kafka-1.log")
    for e in events:
        text = e["message"].split("\n", 1)[0]
        named = "share" if "share group" in text else "streams" if ("streams group" in text or "StreamsGroup" in text) \
            else None
        assert (e.get("attrs") or {}).get("group_type") == named, text
    assert {(e.get("attrs") or {}).get("group_type") for e in events} == {None, "share", "streams"}
    # a KafkaStreams client's own lines (classify/threads.py)
    events, _ = events_of(LAB / "streams-thread-replacement-loop@4.4.0" / "app-1.log")
    own = [e for e in events if (e.get("attrs") or {}).get("streams_client")]
    assert own and all("stream-client [" + e["attrs"]["streams_client"] + "]" in e["message"] for e in own)
    assert not any("stream-client [" in e["message"].split("\n", 1)[0] for e in events if e not in own)
    # the replication factor a failed creation asked for and the brokers registered (streams-topics-missing)
    events, _ = events_of(LAB / "streams-group-missing-internal-topics@4.4.0" / "app-1.log")
    refused = [e["attrs"] for e in events if "replication factor of" in e["message"]]
    assert len(refused) == 5
    assert {(a.get("replication_factor"), a.get("brokers_registered")) for a in refused} == {("3", "1")}
