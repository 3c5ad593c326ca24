"""KIP-848 rounds and the target-assignment computation that answers their epoch bumps (KIP-1263 batches it,
Kafka 4.3+; a streams group's delayed assignment, 4.2+): one "Computed a new target assignment for epoch N" may
answer several "Bumped group epoch" lines, and a skipped computation logs nothing. The timeline makes such a
batch one round spanning its epochs, not an unanswered bump followed by another round."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import events_of
from rebalance_doctor.timeline import build_timelines

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "fixtures" / "lab"
TEMPLATES = ROOT / "patterns" / "kafka" / "templates.jsonl"


def _rounds(events: list[dict], group: str):
    [timeline] = [t for t in build_timelines(events) if t.group == group]
    return timeline.rebalances


def _bumps(r) -> list[int]:
    return [e["generation"] for e in r.events if e["event"] == "group.epoch_bumped" and e.get("component") == "broker"]


def _computed(r) -> list[int]:
    return [e["generation"] for e in r.events
            if e["event"] == "group.target_assignment" and e.get("component") == "broker"]


# Recorded against real 4.4.0 brokers (fixtures/lab): two members join 66 ms apart, the coordinator bumps the epoch
# to 3 and then 4 and computes once, for epoch 4. (incident, group, the batched epochs, their computation's line)
RECORDED = [
    ("kip848-healthy-rolling-restart@4.4.0", "orders", [3, 4], 3067),
    ("kip848-static-surge-unreleased@4.4.0", "orders", [3, 4], None),
    ("librdkafka-kip848-session-expired@4.4.0", "orders", [3, 4], 3067),
    ("streams-group-healthy-static-restart@4.4.0", "order-counts", [2, 3, 4], None),
    ("streams-group-session-expired@4.4.0", "order-counts", [2, 3, 4], None),
]


@pytest.mark.parametrize("incident, group, epochs, line", RECORDED, ids=[c[0] for c in RECORDED])
def test_a_recorded_batched_computation_is_one_round_spanning_its_epochs(incident, group, epochs, line):
    events, _ = events_of(LAB / incident / "kafka-1.log")
    rounds = _rounds(events, group)
    [batch] = [r for r in rounds if epochs[-1] in r.epochs]
    assert batch.epochs == epochs and _bumps(batch) == epochs
    assert _computed(batch)[:1] == [epochs[-1]] and batch.generation == epochs[-1]
    # Each bump adds one to the group epoch: the round started from the epoch before its first bump.
    assert batch.old_generation == epochs[0] - 1
    assert all(r.old_generation == r.epochs[0] - 1 for r in rounds if r.epochs)
    if line is not None:
        assert [e["line"] for e in batch.events if e["event"] == "group.target_assignment"] == [line]
    # no round is left with a bump that its own computation does not answer, but at the logs' end
    for r in rounds[:-1]:
        if r.epochs:
            assert _computed(r) and max(_computed(r)) == r.generation == r.epochs[-1], (r.index, r.epochs)


def test_the_fence_after_a_batched_computation_causes_the_next_round():
    # broker-only (librdkafka logs nothing at its default level): the member fenced at 21:55:47 is epoch 5's cause,
    # not a line of the batched 3-4 round that was computed at 21:55:15
    events, _ = events_of(LAB / "librdkafka-kip848-session-expired@4.4.0" / "kafka-1.log")
    rounds = _rounds(events, "orders")
    assert [r.epochs for r in rounds] == [[2], [3, 4], [5], [6]]
    batched, fenced = rounds[1], rounds[2]
    assert "member.expired" not in {e["event"] for e in batched.events}
    assert batched.end.strftime("%H:%M:%S.%f")[:12] == "21:55:15.258"
    assert fenced.trigger_kind == "heartbeat-expiration"


# --- a synthetic batch, written with the 4.4.0 coordinator's own templates ---------------------------------------
PREFIX = "[GroupCoordinator id=1 topic=__consumer_offsets partition=31] "


def _templates() -> dict[str, str]:
    wanted = {"bumped": "Bumped group epoch to {} with metadata hash {}.",
              "computed": "Computed a new target assignment for epoch {} with '{}' assignor in {}ms.",
              "joins": "Member {} joins the consumer group using the consumer protocol.",
              "left": "Member {} left the consumer group.",
              "skipped": "Skipping delayed target assignment: group is empty"}
    found = {}
    for line in TEMPLATES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["version"] == "4.4.0" and row["component"] == "broker" and row["level"] == "INFO":
            for key, tail in wanted.items():
                if row["template"] == "[GroupId {}] " + tail:
                    found[key] = row["template"]
    assert set(found) == set(wanted), "the 4.4.0 inventory lost a template this test writes"
    return found


def _line(ms: int, template: str, *args) -> str:
    text = template
    for arg in args:
        text = text.replace("{}", str(arg), 1)
    return (f"[2026-12-07 10:00:{ms // 1000:02d},{ms % 1000:03d}] INFO {PREFIX}{text} "
            "(org.apache.kafka.coordinator.group.GroupMetadataManager)")


def test_a_synthetic_batch_and_a_skipped_computation(tmp_path):
    t = _templates()
    g, h = "orders", -3972242808849099818
    lines = [
        _line(1000, t["joins"], g, "AAAAAAAAAAAAAAAAAAAAAA"), _line(1001, t["bumped"], g, 2, h),
        _line(1050, t["computed"], g, 2, "uniform", 40),
        # two members join before the coordinator computes: one computation, for epoch 4, answers 3 and 4
        _line(5000, t["joins"], g, "BBBBBBBBBBBBBBBBBBBBBB"), _line(5001, t["bumped"], g, 3, h),
        _line(5060, t["joins"], g, "CCCCCCCCCCCCCCCCCCCCCC"), _line(5061, t["bumped"], g, 4, h),
        _line(5300, t["computed"], g, 4, "uniform", 0),
        # every member leaves: the delayed computation is skipped, and says so; what comes later is another round
        _line(9000, t["left"], g, "AAAAAAAAAAAAAAAAAAAAAA"), _line(9001, t["bumped"], g, 5, h),
        _line(9002, t["left"], g, "BBBBBBBBBBBBBBBBBBBBBB"), _line(9003, t["bumped"], g, 6, h),
        _line(9004, t["left"], g, "CCCCCCCCCCCCCCCCCCCCCC"), _line(9005, t["bumped"], g, 7, h),
        _line(9200, t["skipped"], g),
        _line(20000, t["joins"], g, "DDDDDDDDDDDDDDDDDDDDDD"), _line(20001, t["bumped"], g, 8, h),
        _line(20040, t["computed"], g, 8, "uniform", 1),
    ]
    log = tmp_path / "kafka-1.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    events, _ = events_of(log)
    assert [e["event"] for e in events].count("group.epoch_bumped") == 7
    rounds = _rounds(events, g)
    assert [r.epochs for r in rounds] == [[2], [3, 4], [5, 6, 7], [8]]
    batched = rounds[1]
    assert batched.generation == 4 and _computed(batched) == [4]
    assert batched.trigger_kind == "new-member"
    assert sum(e["event"] == "member.join" for e in batched.events) == 2, "both joins are the batch's"
    emptied = rounds[2]
    assert _computed(emptied) == [None], "the skipped computation's line answers its epochs, with no assignment"
    assert rounds[3].start.second == 20 and _computed(rounds[3]) == [8]
