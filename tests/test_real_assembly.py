"""Record assembly on the real excerpts (../shared/real-logs, read in place, never copied): the
lines as their writers and publishers left them make the records they should."""

from __future__ import annotations

from pathlib import Path

from helpers import events_of
from rebalance_doctor.core.linefix import FixedStream, has_colour_codes, wrap_width


def _excerpt(real_logs: Path, number: str) -> Path:
    return next(real_logs.glob(f"{number}-*.log"))


def test_tab_indented_continuations_stay_with_their_record(real_logs):
    """043 (Streams 2.3, `[%d] %p [%t] %m (%c)%n`): the listener's tab-indented task lines and the
    logger on the last of them belong to the record; the application's line after it does not."""
    path = _excerpt(real_logs, "043")
    events, stats = events_of(path, base_date="2024-01-01")
    by_line = {e["line"]: e for e in events}
    revoked, assigned = by_line[7], by_line[11]
    assert (revoked["event"], revoked["delay_ms"], revoked["tasks"]) == ("partitions.revoked", 0, [])
    assert revoked["message"].count("\n") == 2
    assert (assigned["event"], assigned["delay_ms"]) == ("partitions.assigned", 29)
    assert assigned["tasks"] == [f"0_{i}" for i in range(8)] and assigned["message"].count("\n") == 4
    last = path.read_text().splitlines()[-1]
    assert not any(last in e["message"] for e in events)
    assert stats.files[0].near_misses == 0


def test_kubernetes_prefix_on_every_line(real_logs):
    """003 (kubectl --timestamps in front of Strimzi's layout)."""
    events, stats = events_of(_excerpt(real_logs, "003"), base_date="2024-01-01")
    assert (stats.files[0].layout, stats.files[0].container) == ("strimzi", "kubernetes")
    assert [(e["line"], e["event"], e["group"]) for e in events] == [
        (1, "member.expired", "agentsGroup-tpc-nca-two"), (2, "member.expired", "agentsGroup-tpc-nca-ofa"),
        (3, "member.expired", "agentsGroup-tpc-nca-ofa")]


def test_lines_wrapped_at_80_columns_are_joined(real_logs):
    """025 (librdkafka output copied from an 80-column terminal): the width is found and every
    record is one line again; the file's line count is kept."""
    path = _excerpt(real_logs, "025")
    raw = path.read_bytes()
    assert wrap_width(raw.split(b"\n")) == 80
    with path.open("rb") as handle:
        stream = FixedStream(handle, False, 80)
        fixed = b""
        while chunk := stream.read(1 << 10):
            fixed += chunk
    records = fixed.decode().splitlines()
    assert all(r.startswith("7|2016-10-10 ") for r in records) and len(records) == 9
    assert 'Group "c9bdcc42db9c4dc280357d158b8e2e48" changed join state assigned -> wait-rebalance_cb' in records[0]
    assert [stream.physical_line(n) for n in (1, 2, 9)] == [1, 3, 18]
    _, stats = events_of(path, base_date="2024-01-01")
    assert stats.files[0].lines == raw.count(b"\n") and "unwrapped at 80 columns" in stats.files[0].layout


def test_no_other_excerpt_is_taken_for_wrapped_or_coloured(real_logs):
    for path in sorted(real_logs.glob("*.log")):
        lines = path.read_bytes().split(b"\n")
        assert wrap_width(lines) == (80 if path.name.startswith("025-") else 0), path.name
        assert not has_colour_codes(lines), path.name


def test_cli_output_and_blank_lines_stand_alone(real_logs):
    """047 (ruby-kafka with kafka-consumer-groups output and blank lines in between): the CLI's
    lines are records of their own, never part of a client record; the client records that hold a
    Kafka pattern's words but no Java wording are near misses with their own line numbers."""
    path = _excerpt(real_logs, "047")
    events, stats = events_of(path, base_date="2024-01-01")
    lines = path.read_text().splitlines()
    file = stats.files[0]
    assert file.lines == len(lines)
    for miss in file.near_miss_samples:
        assert miss.text == lines[miss.line - 1]
        assert "Warning: Consumer group" not in miss.text
    assert not any("Warning: Consumer group" in e["message"] for e in events)
