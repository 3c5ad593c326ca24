"""`rebalance-doctor events`: output formats, accounting, near misses, help and version."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from helpers import run_cli
from rebalance_doctor import __version__
from rebalance_doctor.core.schema import COLUMNS, arrow_schema

LAYOUTS = Path(__file__).resolve().parents[1] / "fixtures" / "layouts"
LAYOUT_ROWS = 6 * len(list(LAYOUTS.glob("*.log")))  # each layout fixture tells the same six-event story


def test_jsonl_to_stdout_holds_only_events(tmp_path):
    result = run_cli("events", str(LAYOUTS / "kafka.log"), "-q")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 6
    assert rows[0]["event"] == "rebalance.prepare" and rows[0]["group"] == "orders"
    assert rows[0]["ts"] == "2024-05-01T13:45:12.345000Z"
    assert list(rows[0]) == [c.name for c in COLUMNS]
    assert "6 events" in result.stderr


def test_parquet_reads_back_with_the_documented_schema(tmp_path):
    out = tmp_path / "events.parquet"
    result = run_cli("events", str(LAYOUTS), "-o", str(out), "-q")
    assert result.returncode == 0, result.stderr
    table = pq.read_table(out)
    assert table.schema.equals(arrow_schema(), check_metadata=False)
    assert table.num_rows == LAYOUT_ROWS
    first = table.slice(0, 1).to_pylist()[0]
    assert first["ts"].tzinfo is not None


def test_parquet_writing_does_not_pull_in_pandas_and_pandas_still_works_after(tmp_path):
    """pyarrow would import pandas (0.25 s, ~50 MB) on its first array when it is installed."""
    out = tmp_path / "events.parquet"
    script = f"""
import sys
from rebalance_doctor.core.writers import write_events
from helpers import events_of
events, _ = events_of({str(LAYOUTS)!r})
write_events({str(out)!r}, events)
print("pandas imported while writing:", "pandas" in sys.modules)
import importlib.util
if importlib.util.find_spec("pandas"):
    import pyarrow.parquet as pq
    frame = pq.read_table({str(out)!r}).to_pandas()
    print("rows through pandas:", len(frame))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=Path(__file__).parent, env={**os.environ, "PYTHONPATH": str(LAYOUTS.parents[1])})
    assert result.returncode == 0, result.stderr
    assert "pandas imported while writing: False" in result.stdout
    assert pq.read_table(out).num_rows == LAYOUT_ROWS
    if "rows through pandas" in result.stdout:
        assert f"rows through pandas: {LAYOUT_ROWS}" in result.stdout


def test_csv_has_a_header_and_one_row_per_event(tmp_path):
    out = tmp_path / "events.csv"
    assert run_cli("events", str(LAYOUTS / "kafka.log"), "-o", str(out), "-q").returncode == 0
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 and rows[0]["generation"] == "41"


def test_stats_file_accounts_for_every_file_and_skip(tmp_path):
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "server.log").write_bytes((LAYOUTS / "kafka.log").read_bytes())
    (tmp_path / "core").write_bytes(b"\x00\x01\x02binary")
    stats_file = tmp_path / "stats.json"
    result = run_cli("events", str(tmp_path), "-o", str(tmp_path / "e.jsonl"), "--stats", str(stats_file))
    assert result.returncode == 0, result.stderr
    stats = json.loads(stats_file.read_text())
    assert stats["files_read"] == 1 and stats["events"] == 6 and stats["lines"] == 21
    assert stats["files"][0]["layout"] == "kafka" and stats["files"][0]["host"] == "broker-1"
    assert [s["source"] for s in stats["skipped"]] == ["core"]
    assert "binary" in stats["skipped"][0]["reason"]
    assert "broker-1/server.log" in result.stderr and "core" in result.stderr


def test_unmatched_lists_near_misses(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("[2024-05-01 13:45:12,345] INFO [GroupCoordinator 1]: Preparing to rebalance group orders "
                   "in a brand new wording (kafka.coordinator.group.GroupCoordinator)\n")
    near = tmp_path / "near.jsonl"
    result = run_cli("events", str(log), "--unmatched", str(near), "-q")
    assert result.returncode == 0
    misses = [json.loads(line) for line in near.read_text().splitlines()]
    assert len(misses) == 1 and misses[0]["line"] == 1
    assert "brand new wording" in misses[0]["text"]
    assert "1 near misses" in result.stderr


def test_help_and_version():
    result = run_cli("-h")
    assert result.returncode == 0 and "events" in result.stdout
    result = run_cli("--version")
    assert result.returncode == 0 and __version__ in result.stdout
    result = run_cli("events", "--help")
    assert "--unmatched" in result.stdout and "--layout" in result.stdout


def test_unknown_output_format_is_a_usage_error(tmp_path):
    result = run_cli("events", str(LAYOUTS / "kafka.log"), "-o", str(tmp_path / "events.xlsx"))
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_the_console_script_leaves_fast_with_everything_said():
    # main() ends with os._exit (no interpreter teardown): buffered output, exit handlers and
    # the exit status must survive it as they would sys.exit.
    def leave(code):
        script = ("import atexit, sys\n"
                  "from rebalance_doctor.cli.app import _leave\n"
                  "atexit.register(lambda: sys.stderr.write('handler ran\\n'))\n"
                  "sys.stdout.write('buffered, never flushed')\n"
                  f"_leave({code!r})\n")
        buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=buffered)

    for code, status in ((None, 0), (3, 3), ("error: a message", 1)):
        result = leave(code)
        assert result.returncode == status
        assert result.stdout == "buffered, never flushed"
        assert result.stderr.endswith("handler ran\n")
    assert leave("error: a message").stderr.startswith("error: a message\n")
