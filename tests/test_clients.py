"""The client packs: generated from the client template inventories, current, and each client
fixture (every in-scope template rendered in one of the client's layouts) read as annotated."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import events_of, expectations
from rebalance_doctor.core import handles
from rebalance_doctor.synth import clientgen

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def client_fixtures():
    return sorted(FIXTURES.glob("*/*.log"))


def test_generated_client_packs_and_fixtures_are_current():
    files, _ = clientgen.build()
    root = Path(__file__).resolve().parents[1]
    stale = [rel for rel, text in files.items() if not (root / rel).is_file() or (root / rel).read_text() != text]
    assert not stale, "run python -m rebalance_doctor.synth.clientgen"


@pytest.mark.parametrize("path", client_fixtures(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_client_fixture_layout_detected_and_every_template_read(path: Path):
    events, stats = events_of(path, base_date="2024-05-01")
    assert stats.files[0].layout == path.stem
    found = {e["line"]: e["pattern"] for e in events}
    expected = expectations(path)
    assert {n: found.get(n) for n in expected} == expected
    assert stats.files[0].near_misses == 0


def test_every_client_template_in_scope_has_a_reader_and_every_client_pattern_a_template():
    _, decisions = clientgen.build()
    packs = {}
    for client, ds in decisions.items():
        for d in ds:
            if d.excluded is None:
                assert d.readers[0], (client, d.template.text)
            if d.pattern:
                packs.setdefault(client, set()).add(d.pattern)
    text = {c: (FIXTURES.parents[0].parent / "patterns" / "packs" / f"client-{c}.toml").read_text() for c in packs}
    for client, ids in packs.items():
        declared = {line.split('"')[1] for line in text[client].splitlines() if line.startswith("[patterns.")}
        assert declared - {i + "_ok" for i in ids} == ids


def test_a_handles_group_comes_from_its_earlier_line_else_its_later_one():
    rows = [
        {"source": "a.log", "client": "rdkafka#consumer-1", "library": "librdkafka", "line": 1, "group": None},
        {"source": "a.log", "client": "rdkafka#consumer-1", "library": "librdkafka", "line": 2, "group": "orders"},
        {"source": "a.log", "client": "rdkafka#consumer-1", "library": "librdkafka", "line": 3, "group": None},
        {"source": "a.log", "client": "rdkafka#consumer-2", "library": "librdkafka", "line": 4, "group": None},
        {"source": "b.log", "client": "rdkafka#consumer-1", "library": "librdkafka", "line": 5, "group": None},
        {"source": "a.log", "client": "rdkafka#consumer-1", "library": "librdkafka", "line": 6, "group": "payments"},
        {"source": "a.log", "client": "rdkafka#consumer-1", "library": "librdkafka", "line": 7, "group": None},
        {"source": "a.log", "client": None, "library": None, "line": 8, "group": None},
    ]
    assert handles.resolve(reversed(rows)) == 3
    assert [r["group"] for r in rows] == ["orders", "orders", "orders", None, None, "payments", "payments", None]
    assert rows[0]["attrs"] == {"group_from": "handle"}
