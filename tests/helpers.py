"""Small helpers for tests that read logs."""

from __future__ import annotations

from pathlib import Path

from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.local import read_events


def events_of(*paths, **options) -> tuple[list[dict], object]:
    return read_events([str(p) for p in paths], ReadOptions(**options))


def simulated(scenario: str, seed: int, kafka: str | None, directory: Path):
    """Run a simulator scenario, write its incident into ``directory`` and analyse it: (incident, analysis)."""
    from rebalance_doctor.analysis import analyze_events
    from rebalance_doctor.sim.scenarios import run

    incident = run(scenario, seed, kafka)
    incident.write(directory)
    events, _ = events_of(directory)
    return incident, analyze_events(events)


def expectations(path: Path) -> dict[int, str]:
    """`#expect: pattern.id` annotations: line number of the annotated record -> pattern id."""
    expected = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if line.startswith("#expect:"):
            expected[number + 1] = line.split(":", 1)[1].strip()
    return expected


def hosts_from_directories() -> bool:
    """Whether the reader names hosts after directories when file names collide (worker-a/payments.log and
    worker-b/payments.log: two hosts), the record-assembly engineer's host inference (issue 18a)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        line = ("[2024-03-05 10:00:00,000] INFO [Consumer clientId=c-1, groupId=g] (Re-)joining group "
                "(org.apache.kafka.clients.consumer.internals.AbstractCoordinator)\n")
        for host in ("worker-a", "worker-b"):
            (root / host).mkdir()
            (root / host / "payments.log").write_text(line, encoding="utf-8")
        events, _ = events_of(root)
        return len({e["host"] for e in events}) == 2


def assert_stated_group_and_generation(events: list[dict], groups: list, generations: list) -> None:
    """Each event's group and generation equal what its first line states, read with the first
    of ``groups`` / ``generations`` (compiled regexes, group 1) that finds it."""
    for event in events:
        first = event["message"].split("\n")[0]
        for rx in generations:
            m = rx.search(first)
            if m:
                assert event["generation"] == int(m.group(1)), (event["line"], first[:200])
                break
        for rx in groups:
            m = rx.search(first)
            if m:
                assert event["group"] == m.group(1), (event["line"], first[:200])
                break
