"""The scan engines (bytes.find, and Aho-Corasick) give the same events and accounting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rebalance_doctor.core import reader
from rebalance_doctor.core.scan import ENGINE_VARIABLE
from rebalance_doctor.core.writers import jsonable

from helpers import events_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _run(monkeypatch, engine: str, *paths, **options):
    monkeypatch.setenv(ENGINE_VARIABLE, engine)
    monkeypatch.setattr(reader, "_TOOLKITS", {})  # engines are built once per toolkit
    events, stats = events_of(*paths, **options)
    counts = [(f.source, f.lines, f.candidates, f.events, f.near_misses) for f in stats.files]
    return [json.dumps(jsonable(e), sort_keys=True) for e in events], counts


@pytest.mark.slow
@pytest.mark.parametrize("options", [{}, {"jobs": 2, "split_bytes": 4096}])
def test_aho_corasick_and_find_agree_on_fixtures(monkeypatch, options):
    found = _run(monkeypatch, "find", FIXTURES, **options)
    assert found[0], "the fixtures hold rebalance events"
    assert _run(monkeypatch, "aho-corasick", FIXTURES, **options) == found


def test_aho_corasick_and_find_agree_on_real_logs(monkeypatch, real_logs):
    found = _run(monkeypatch, "find", real_logs)
    assert found[0]
    assert _run(monkeypatch, "aho-corasick", real_logs) == found


def test_gates_are_found_per_record_and_never_across_two():
    from rebalance_doctor.core.scan import AhoCorasickEngine

    engine = AhoCorasickEngine((b"group",), {b"Preparing to rebalance": "Preparing to rebalance",
                                            b"rebalance group": "rebalance group",
                                            b"bal": "bal"})
    records = [b"Preparing to rebalance group g", b"nothing here", b"Preparing to", b"rebalance group", b""]
    # Overlapping gates are all found; the join of records 3 and 4 ("Preparing to\nrebalance")
    # must not yield the first gate.
    assert engine.record_gates(records) == [
        {"Preparing to rebalance", "rebalance group", "bal"}, set(), set(), {"rebalance group", "bal"}, set()]
    assert AhoCorasickEngine((b"group",), {}).record_gates(records) is None


def test_unknown_engine_is_a_clear_error(monkeypatch, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("[2024-05-01 13:45:12,345] INFO [GroupCoordinator 1]: Stabilized group orders generation 42 "
                   "(__consumer_offsets-17) with 2 members (kafka.coordinator.group.GroupCoordinator)\n")
    monkeypatch.setenv(ENGINE_VARIABLE, "teddy")
    monkeypatch.setattr(reader, "_TOOLKITS", {})
    with pytest.raises(ValueError, match="use find, aho-corasick or auto"):
        events_of(log)


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 70_000])
def test_count_newlines_agrees_with_bytes_count(size):
    import random

    from rebalance_doctor.core.scan import count_newlines

    rng = random.Random(size)
    buf = bytes(rng.choice(b"ab\n\r") for _ in range(size))
    for start, stop in [(0, None), (0, size), (1, size), (size // 3, size - size // 5), (size, size)]:
        end = size if stop is None else stop
        if start > end:
            continue
        assert count_newlines(buf, start, stop) == buf.count(b"\n", start, end)


def test_line_numbers_across_many_chunks(tmp_path, monkeypatch):
    """Records far into a file, after chunk cuts, carry the line number of their first line."""
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64 << 10)
    noise = "[2024-05-01 10:00:00,000] INFO Rolled new log segment at offset 7 (kafka.log.LocalLog)\n"
    hit = ("[2024-05-01 10:00:01,000] INFO [GroupCoordinator 1]: Preparing to rebalance group g{n} in state "
           "PreparingRebalance with old generation {n} (__consumer_offsets-3) (reason: x) "
           "(kafka.coordinator.group.GroupCoordinator)\n")
    lines, expected = [], []
    for n in range(40):
        lines.extend([noise] * (997 + n))
        expected.append(len(lines) + 1)
        lines.append(hit.format(n=n))
    (tmp_path / "server.log").write_text("".join(lines))
    events, stats = events_of(tmp_path / "server.log")
    assert [e["line"] for e in events] == expected
    assert stats.files[0].lines == len(lines)


@pytest.mark.parametrize("engine", ["find", "aho-corasick"])
def test_a_java_layout_unit_is_scanned_for_the_java_packs_literals_only(monkeypatch, tmp_path, engine):
    # "poll()" is a literal of the non-Java client packs only: a record of Kafka's own layout
    # (java = true in layouts.toml) that holds nothing else is no candidate; the same record
    # read with the same layout given as a conversion pattern (not marked java) is one.
    log = tmp_path / "server.log"
    log.write_text("[2024-05-02 00:00:00,001] INFO poll() returned no records (org.example.App)\n"
                   "[2024-05-02 00:00:01,001] INFO Rebalance started (org.example.App)\n")
    monkeypatch.setenv(ENGINE_VARIABLE, engine)
    monkeypatch.setattr(reader, "_TOOLKITS", {})
    _, java = events_of(log, layout="kafka")
    _, given = events_of(log, layout="[%d] %p %m (%c)%n")
    assert [f.candidates for f in java.files] == [1]
    assert [f.candidates for f in given.files] == [2]
