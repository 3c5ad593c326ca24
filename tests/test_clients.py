"""The client packs: generated from the client template inventories, current, and each client
fixture (every in-scope template rendered in one of the client's layouts) read as annotated."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import events_of, expectations
from rebalance_doctor.core import handles
from rebalance_doctor.packgen import clientgen

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def client_fixtures():
    return sorted(FIXTURES.glob("*/*.log"))


@pytest.mark.slow
def test_generated_client_packs_and_fixtures_are_current():
    files, _ = clientgen.build()
    root = Path(__file__).resolve().parents[1]
    stale = [rel for rel, text in files.items() if not (root / rel).is_file() or (root / rel).read_text() != text]
    assert not stale, "run python -m rebalance_doctor.packgen.clientgen"


@pytest.mark.parametrize("path", client_fixtures(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_client_fixture_layout_detected_and_every_template_read(path: Path):
    events, stats = events_of(path, base_date="2024-05-01")
    assert stats.files[0].layout == path.stem
    found = {e["line"]: e["pattern"] for e in events}
    expected = expectations(path)
    assert {n: found.get(n) for n in expected} == expected
    assert stats.files[0].near_misses == 0


@pytest.mark.slow
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


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["c1", "c2", None]), st.sampled_from([None, None, "orders", "payments"])),
                max_size=30),
       st.lists(st.integers(min_value=1, max_value=29), max_size=4))
def test_ranges_resolved_alone_then_carried_give_what_the_whole_file_gives(lines, cuts):
    # A file read in byte ranges (Spark): each range fills from its earlier lines only and states
    # its handles' edges; the driver fills the rest from the neighbouring ranges (handles.carried).
    def rows():
        return [{"source": "a.log", "client": client, "library": "librdkafka", "line": n, "group": group}
                for n, (client, group) in enumerate(lines, 1)]
    whole = rows()
    handles.resolve(whole)
    split = rows()
    bounds = [0, *sorted(set(c for c in cuts if c < len(split))), len(split)]
    ranges = [split[a:b] for a, b in zip(bounds, bounds[1:])]
    for part in ranges:
        handles.resolve(part, following=False)
    for part, groups in zip(ranges, handles.carried([handles.edges(part) for part in ranges])):
        for row in part:
            if handles.needs_group(row) and row["client"] in groups:
                handles.fill(row, groups[row["client"]])
    assert split == whole
