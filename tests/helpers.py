"""Small helpers for tests that read logs."""

from __future__ import annotations

from pathlib import Path

from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.local import read_events


def events_of(*paths, **options) -> tuple[list[dict], object]:
    return read_events([str(p) for p in paths], ReadOptions(**options))


def expectations(path: Path) -> dict[int, str]:
    """`#expect: pattern.id` annotations: line number of the annotated record -> pattern id."""
    expected = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if line.startswith("#expect:"):
            expected[number + 1] = line.split(":", 1)[1].strip()
    return expected
