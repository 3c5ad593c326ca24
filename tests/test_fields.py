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
