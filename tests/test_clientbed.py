"""The real-client test bed: what real librdkafka and kafka-python consumers logged while really
rebalancing against librdkafka's mock group coordinator (fixtures/testbed/, recorded by
rebalance_doctor/testbed/clientbed.py), read by the client packs; and a short scenario recorded
afresh when the `clients` extra is installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import events_of
from rebalance_doctor.testbed.clientbed import read_scenario, run, SCENARIOS

BED = Path(__file__).resolve().parents[1] / "fixtures" / "testbed"


def scenarios():
    return sorted(p for p in BED.iterdir() if (p / "scenario.md").is_file()) if BED.is_dir() else []


def _check(directory: Path) -> None:
    record = read_scenario(directory)
    logs = sorted(directory.glob("*.log"))
    assert logs, directory
    events, stats = events_of(*logs)
    assert sum(f.events for f in stats.files) == len(events) > 0
    assert all(f.layout != "generic" for f in stats.files)
    by_member: dict[str, set[str]] = {}
    for event in events:
        by_member.setdefault(Path(event["source"]).stem, set()).add(event["event"])
        wanted = record["group"] if record.get("group_named", True) else None
        assert event["group"] == wanted, (event["source"], event["line"], event["message"][:200])
        assert event["component"] == "consumer" and event["library"] in ("librdkafka", "kafka-python")
    for member, wanted in record["expect"].items():
        assert set(wanted) <= by_member.get(member, set()), (member, sorted(by_member.get(member, ())))


@pytest.mark.parametrize("directory", scenarios(), ids=lambda p: p.name)
def test_recorded_scenario_is_read(directory: Path):
    _check(directory)


@pytest.mark.slow
def test_a_short_scenario_recorded_now_is_read(tmp_path):
    pytest.importorskip("confluent_kafka", reason="the clients extra is not installed")
    run(SCENARIOS["scale-out"], tmp_path)
    _check(tmp_path / "scale-out")
