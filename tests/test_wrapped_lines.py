"""Logs hard-wrapped by a terminal or a copy-paste (every line cut at 80 columns), with foreign lines
between the records: the pieces are joined again where, and only where, the wrap cut a line.

A terminal cuts every N columns whatever the text holds: a piece may start with a JSON message's
``{``, and a record may end exactly at column N, the line after it then being a foreign line (a
Kibana export's date line, a blank) that continues nothing.
"""

from __future__ import annotations

from datetime import datetime

from helpers import events_of
from rebalance_doctor.packgen.envelope import render

WIDTH = 80
CONSUMER = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
COORDINATOR = "kafka.coordinator.group.GroupCoordinator"
KIBANA = ["Jan 17, 2020 @ 15:54:24.877", "Jan 17, 2020 @ 15:54:25.102", "Jan 17, 2020 @ 15:54:26.310",
          "Jan 17, 2020 @ 15:54:27.004", "Jan 17, 2020 @ 15:54:28.951", "Jan 17, 2020 @ 15:54:29.460"]
HEX = "9c2e4b7a1d3f5e6c8b0a2d4f" * 4       # identifiers of any length up to 96 characters
DIGITS = "1234567890" * 9


def _wrap(lines: list[str]) -> tuple[list[str], list[int]]:
    """The lines cut every WIDTH columns, and the 1-based wrapped line each line starts on."""
    out, starts = [], []
    for line in lines:
        starts.append(len(out) + 1)
        out.extend([line[i:i + WIDTH] for i in range(0, len(line), WIDTH)] or [""])
    return out, starts


def _joined(layout: str, second: int, group: str, client: str, generation: int, member: str) -> str:
    msg = (f"[Consumer clientId={client}, groupId={group}] Successfully joined group with generation "
           f"Generation{{generationId={generation}, memberId='{member}', protocol='range'}}")
    return render(layout, datetime(2026, 11, 25, 22, 1, second, 345000), "INFO", CONSUMER, msg, "main")


def _preparing(layout: str, second: int, group: str, generation: int) -> str:
    msg = (f"[GroupCoordinator 1]: Preparing to rebalance group {group} in state PreparingRebalance with old "
           f"generation {generation} (__consumer_offsets-17) (reason: removing member {group}-2-77aa on "
           f"heartbeat expiration)")
    return render(layout, datetime(2026, 11, 25, 22, 1, second, 345000), "INFO", COORDINATOR, msg,
                  "executor-Rebalance")


def _fitted(make, condition) -> str:
    """The first record ``make(k)`` (k = 0, 1, ...: an identifier k characters longer) that meets
    ``condition``: a record cut where a wrap test needs it."""
    for k in range(WIDTH):
        line = make(k)
        if condition(line):
            return line
    raise AssertionError("no record fits")


def _read(tmp_path, lines: list[str]):
    plain, wrapped = tmp_path / "plain" / "app.log", tmp_path / "wrapped" / "app.log"
    pieces, starts = _wrap(lines)
    for path, content in ((plain, lines), (wrapped, pieces)):
        path.parent.mkdir()
        path.write_text("\n".join(content) + "\n")
    before, _ = events_of(plain, base_date="2026-11-25", host="h")
    after, stats = events_of(wrapped, base_date="2026-11-25", host="h")
    return before, after, stats, starts, pieces


def _facts(events: list[dict], line_of=lambda n: n) -> list[tuple]:
    return sorted((line_of(e["line"]), e["pattern"], e["group"], e["generation"], e["member"], e["client"],
                   e["level"], e["logger"], e["ts"], e["message"]) for e in events)


def test_wrapped_ecs_json_records_with_kibana_lines(tmp_path):
    """ECS JSON copied from an 80-column terminal out of a Kibana export: one record is cut right
    before the ``{`` of ``Generation{...}`` (the piece starts like a JSON record), another ends
    exactly at column 80 with the next record's Kibana date line after it."""
    brace_first = _fitted(
        lambda k: _joined("ecs-json", 2, "orders", "consumer-orders-" + DIGITS[:k + 1], 42,
                          "consumer-orders-1-6b1f"),
        lambda line: line.index("{generationId") % WIDTH == 0)
    ends_at_width = _fitted(
        lambda k: _joined("ecs-json", 4, "payments", "consumer-payments-3", 7,
                          "consumer-payments-3-" + HEX[:k + 4]),
        lambda line: len(line) % WIDTH == 0)
    records = [_preparing("ecs-json", 1, "orders", 41), brace_first, _preparing("ecs-json", 3, "payments", 6),
               ends_at_width, _preparing("ecs-json", 5, "audit", 12), _preparing("ecs-json", 6, "audit", 13)]
    lines = [line for kibana, record in zip(KIBANA, records) for line in (kibana, record)]
    before, after, stats, starts, pieces = _read(tmp_path, lines)

    assert any(piece.startswith("{generationId=42") for piece in pieces)
    assert len(pieces[starts[lines.index(ends_at_width) + 1] - 2]) == WIDTH   # its last piece is 80 long
    assert stats.files[0].layout.startswith("ecs-json") and "unwrapped at 80 columns" in stats.files[0].layout
    assert [(e["line"], e["pattern"], e["group"], e["generation"], e["member"], e["client"]) for e in after] == [
        (starts[1], "broker.rebalance.prepare", "orders", 41, "orders-2-77aa", None),
        (starts[3], "consumer.join.success", "orders", 42, "consumer-orders-1-6b1f", brace_first.split("clientId=")[1].split(",")[0]),
        (starts[5], "broker.rebalance.prepare", "payments", 6, "payments-2-77aa", None),
        (starts[7], "consumer.join.success", "payments", 7, ends_at_width.split("memberId='")[1].split("'")[0],
         "consumer-payments-3"),
        (starts[9], "broker.rebalance.prepare", "audit", 12, "audit-2-77aa", None),
        (starts[11], "broker.rebalance.prepare", "audit", 13, "audit-2-77aa", None)]
    assert _facts(after) == _facts(before, lambda n: starts[n - 1])
    assert all("Jan 17" not in e["message"] for e in after)
    assert stats.files[0].lines == len(pieces)


def test_wrapped_us_date_ampm_records_ending_at_the_width(tmp_path):
    """us-date-ampm (``11/25/26 10:01:02.345 PM``) from an 80-column terminal: a record ending
    exactly at column 80 before a Kibana date line, another before a blank line, and one exactly
    160 long right before the next record (the record after it stays a record)."""
    ends_before_kibana = _fitted(
        lambda k: _joined("us-date-ampm", 2, "orders", "consumer-orders-1", 42,
                          "consumer-orders-1-" + HEX[:k + 4]),
        lambda line: len(line) % WIDTH == 0)
    ends_before_blank = _fitted(
        lambda k: _preparing("us-date-ampm", 4, "payments-" + HEX[:k + 1], 6),
        lambda line: len(line) % WIDTH == 0)
    two_full_pieces = _fitted(
        lambda k: render("us-date-ampm", datetime(2026, 11, 25, 22, 1, 6, 345000), "INFO", COORDINATOR,
                         f"[GroupCoordinator 1]: Stabilized group audit-{HEX[:k + 1]} generation 13 "
                         f"(__consumer_offsets-9)", "main"),
        lambda line: len(line) == 2 * WIDTH)
    lines = [KIBANA[0], _preparing("us-date-ampm", 1, "orders", 41), KIBANA[1], ends_before_kibana,
             KIBANA[2], ends_before_blank, "", KIBANA[3], _preparing("us-date-ampm", 5, "audit", 12),
             two_full_pieces, _preparing("us-date-ampm", 7, "audit", 13), KIBANA[4],
             _preparing("us-date-ampm", 8, "billing", 2), KIBANA[5]]
    before, after, stats, starts, pieces = _read(tmp_path, lines)

    assert "unwrapped at 80 columns" in stats.files[0].layout
    payments = ends_before_blank.split("rebalance group ")[1].split(" ")[0]
    stabilized_group = two_full_pieces.split("Stabilized group ")[1].split(" ")[0]
    assert [(e["line"], e["event"], e["group"], e["generation"], e["member"]) for e in after] == [
        (starts[1], "rebalance.prepare", "orders", 41, "orders-2-77aa"),
        (starts[3], "join.success", "orders", 42, ends_before_kibana.split("memberId='")[1].split("'")[0]),
        (starts[5], "rebalance.prepare", payments, 6, f"{payments}-2-77aa"),
        (starts[8], "rebalance.prepare", "audit", 12, "audit-2-77aa"),
        (starts[9], "rebalance.stabilized", stabilized_group, 13, None),
        (starts[10], "rebalance.prepare", "audit", 13, "audit-2-77aa"),
        (starts[12], "rebalance.prepare", "billing", 2, "billing-2-77aa")]
    assert _facts(after) == _facts(before, lambda n: starts[n - 1])
    assert all("Jan 17" not in e["message"] for e in after)
    assert stats.files[0].lines == len(pieces)
