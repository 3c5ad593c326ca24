"""The shipped incident fixtures: fixed scenarios, seeds and pins, rendered by the simulator.

``fixtures/incidents/incidents.toml`` lists each fixture: the scenario, its seed and Kafka
release, the choices it pins (group, hosts, layouts, timeouts, the culprit, ...), and where its
story sits on the clock: ``anchor_key`` names the first line of a kind (e.g. the first poll-timeout
warning) and ``anchor`` the wall-clock time it is written at; ``first_generation`` makes the first
rebalance of the window reach that generation (a long-lived group). ``build`` runs it;
``python fixtures/incidents/generate.py`` writes them all.
"""

from __future__ import annotations

import shutil
import tomllib
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .scenarios import run


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def build(name: str, spec: dict):
    pins = dict(spec.get("pins", {}))
    pins.setdefault("broker_version", spec.get("kafka"))
    incident = run(spec["scenario"], int(spec["seed"]), spec.get("kafka"), pins)
    if "first_generation" in spec:
        first = _first_window_generation(incident)
        if first is not None and first != spec["first_generation"]:
            pins["generation"] = int(pins.get("generation", 0)) + spec["first_generation"] - first
            incident = run(spec["scenario"], int(spec["seed"]), spec.get("kafka"), pins)
    if "anchor" in spec:
        anchor = _when(spec["anchor"])
        key = spec.get("anchor_key")
        times = [r.t for log in incident.world.logs for r in log.records
                 if r.t >= incident.window_start_ms and (key is None or r.key == key)]
        reference = min(times) if key else incident.window_start_ms
        incident.world.start = anchor - timedelta(milliseconds=reference)
    return incident


def _first_window_generation(incident) -> int | None:
    for r in incident.truth.rebalances:
        return r.generation
    return None


def write_all(spec_path: Path, root: Path) -> list[str]:
    specs = tomllib.loads(spec_path.read_text(encoding="utf-8"))["incident"]
    names = []
    for name, spec in specs.items():
        directory = root / name
        if directory.exists():
            shutil.rmtree(directory)
        build(name, spec).write(directory)
        names.append(name)
    return names
