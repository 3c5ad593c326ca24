"""Time that is true (issue 34 item 3): file order decides what a written time means (core/clock.py).

The repeated hour of an autumn DST change is placed by file order, the hour a spring change skips is
counted, a time-of-day-only layout advances at midnight, and a file whose time goes back keeps file order
with the jump counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.local import read_events

REPO = Path(__file__).resolve().parent.parent
UTC = timezone.utc
PREPARE = ("[{ts}] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state PreparingRebalance with "
           "old generation {old} (__consumer_offsets-13) (reason: Adding new member consumer-payments-1-aaaa with group "
           "instance id None; client reason: not provided) (kafka.coordinator.group.GroupCoordinator)\n")
STABLE = ("[{ts}] INFO [GroupCoordinator 1]: Stabilized group payments generation {gen} (__consumer_offsets-13) with "
          "2 members (kafka.coordinator.group.GroupCoordinator)\n")
# The Streams quickstart layout writes the time of day only (%d{HH:mm:ss,SSS}).
QUICKSTART = ("{ts} INFO  kafka.coordinator.group.GroupCoordinator                      - [GroupCoordinator 1]: "
              "Stabilized group orders generation {gen} (__consumer_offsets-17) with 2 members\n")


def _rebalances(local_times: list[str]) -> str:
    """A broker log: one rebalance (prepare, then stable 3 s later) at each local time, generations 2, 3, ..."""
    out = []
    for gen, written in enumerate(local_times, start=2):
        at = datetime.fromisoformat(written)
        out.append(PREPARE.format(ts=at.strftime("%Y-%m-%d %H:%M:%S,000"), old=gen - 1))
        out.append(STABLE.format(ts=(at + timedelta(seconds=3)).strftime("%Y-%m-%d %H:%M:%S,000"), gen=gen))
    return "".join(out)


def _analyze(path: Path, *args: str) -> dict:
    run = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", "analyze", str(path), "-q", "--format", "json",
                          "--fail-on", "never", *args], capture_output=True, text=True, cwd=str(REPO), timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_autumn_dst_repeated_hour_is_placed_by_file_order(tmp_path):
    # Every 5 minutes from 01:20 CEST (23:20 UTC) to 02:45 CET (01:45 UTC): 02:00-02:55 is written twice,
    # first in summer time, then, after the clocks went back at 03:00 CEST, in winter time.
    times = []
    at = datetime(2024, 10, 26, 23, 20, tzinfo=UTC)
    while at <= datetime(2024, 10, 27, 1, 45, tzinfo=UTC):
        local = at + (timedelta(hours=2) if at < datetime(2024, 10, 27, 1, 0, tzinfo=UTC) else timedelta(hours=1))
        times.append(local.replace(tzinfo=None).isoformat())
        at += timedelta(minutes=5)
    assert times.count("2024-10-27T02:30:00") == 2
    (tmp_path / "server.log").write_text(_rebalances(times), encoding="utf-8")
    report = _analyze(tmp_path, "--tz", "Europe/Berlin")
    generations = [r["generation"] for r in report["groups"][0]["rebalances"]]
    assert generations == sorted(generations) == list(range(2, 2 + len(times)))   # not 7, 19, 8, 20, ...
    start = datetime.fromisoformat(report["answer"]["start"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(report["answer"]["end"].replace("Z", "+00:00"))
    assert (end - start) // timedelta(minutes=1) == 145                           # not 85
    accounting = report["accounting"]
    assert accounting["time"]["repeated_hour"] == 20      # 02:00-02:45 of the second pass, prepare and stable
    assert accounting["files"][0]["repeated_hour"] == 20
    assert "repeats in Europe/Berlin" in " ".join(accounting["files"][0]["problems"])
    assert accounting["time"]["backward_jumps"] == 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_range_that_begins_in_the_repeated_hour_reads_it_as_a_whole_read_does(tmp_path, jobs):
    times = [f"2024-10-27T0{h}:{m:02d}:00" for h in (1, 2) for m in range(0, 60, 5)]     # summer time
    times += [f"2024-10-27T0{h}:{m:02d}:00" for h in (2, 3) for m in range(0, 60, 5)]    # winter time
    text = _rebalances(times)
    (tmp_path / "server.log").write_text(text, encoding="utf-8")
    # A range begins at 02:30 of the second pass: it cannot know that the time went back before it.
    cut = text.index("[2024-10-27 02:30:00", text.index("[2024-10-27 02:05:00", text.index("[2024-10-27 02:55")))
    whole, whole_stats = read_events([str(tmp_path)], ReadOptions(tz="Europe/Berlin"))
    split, split_stats = read_events([str(tmp_path)], ReadOptions(tz="Europe/Berlin", split_bytes=cut, jobs=jobs))
    assert len(split_stats.files) == 1
    assert [e["generation"] for e in whole if "Stabilized" in e["message"]] == list(range(2, 2 + len(times)))
    assert [(e["line"], e["ts"], e["attrs"]) for e in split] == [(e["line"], e["ts"], e["attrs"]) for e in whole]
    assert whole_stats.files[0].repeated_hour == split_stats.files[0].repeated_hour == 24
    assert split_stats.files[0].backward_jumps == whole_stats.files[0].backward_jumps == 0


def test_spring_dst_gap_is_counted_not_silently_shifted(tmp_path):
    # 02:30 does not exist in Berlin on 2024-03-31 (01:59:59 CET is followed by 03:00:00 CEST).
    (tmp_path / "server.log").write_text(
        _rebalances(["2024-03-31T01:50:00", "2024-03-31T02:30:00", "2024-03-31T03:40:00"]), encoding="utf-8")
    events, stats = read_events([str(tmp_path)], ReadOptions(tz="Europe/Berlin"))
    assert stats.files[0].nonexistent_times == 2                       # prepare and stable at 02:30/02:30:03
    assert stats.time_notes()["nonexistent_times"] == 2
    assert "do not exist in Europe/Berlin" in " ".join(stats.files[0].problems)
    # Read with the offset before the change (+01:00, PEP 495's fold=0), in file order with the others.
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert events[2]["ts"] == datetime(2024, 3, 31, 1, 30, tzinfo=UTC)
    assert stats.files[0].backward_jumps == 0


def test_time_of_day_only_layout_advances_the_date_at_midnight(tmp_path):
    lines = [QUICKSTART.format(ts=ts, gen=gen) for gen, ts in
             enumerate(["23:58:00,000", "23:59:58,000", "00:00:03,000", "00:10:00,000"], start=41)]
    (tmp_path / "app.log").write_text("".join(lines), encoding="utf-8")
    # split_bytes: the file is cut in ranges, yet read whole (a range cannot know the midnights before it).
    events, stats = read_events([str(tmp_path)], ReadOptions(base_date="2024-03-05", split_bytes=200))
    assert [e["generation"] for e in events] == [41, 42, 43, 44]
    assert [e["ts"] for e in events] == [datetime(2024, 3, 5, 23, 58, tzinfo=UTC),
                                         datetime(2024, 3, 5, 23, 59, 58, tzinfo=UTC),
                                         datetime(2024, 3, 6, 0, 0, 3, tzinfo=UTC),   # not 2024-03-05, 24 h early
                                         datetime(2024, 3, 6, 0, 10, tzinfo=UTC)]
    assert stats.files[0].midnights == 1 and stats.time_notes()["midnights"] == 1
    assert stats.files[0].backward_jumps == 0


def test_a_base_date_from_the_mtime_is_the_date_of_the_last_line(tmp_path):
    lines = [QUICKSTART.format(ts=ts, gen=gen) for gen, ts in enumerate(["23:59:58,000", "00:00:03,000"], start=42)]
    path = tmp_path / "app.log"
    path.write_text("".join(lines), encoding="utf-8")
    written = datetime(2024, 3, 6, 0, 5).timestamp()
    os.utime(path, (written, written))
    events, stats = read_events([str(tmp_path)], ReadOptions())
    assert [(e["generation"], e["ts"].date().isoformat()) for e in events] == [(42, "2024-03-05"), (43, "2024-03-06")]


def test_a_backward_jump_is_noted_and_the_times_written_kept(tmp_path):
    # The host's clock went back 5 hours after the second rebalance; a 20 s step back is jitter.
    times = ["2024-03-05T10:00:00", "2024-03-05T10:05:00", "2024-03-05T05:05:00", "2024-03-05T05:10:00",
             "2024-03-05T10:07:00"]
    text = _rebalances(times).replace("[2024-03-05 10:07:03,000]", "[2024-03-05 10:06:43,000]")
    (tmp_path / "server.log").write_text(text, encoding="utf-8")
    events, stats = read_events([str(tmp_path)], ReadOptions())
    f = stats.files[0]
    assert f.backward_jumps == 1
    assert f.largest_jump_s == timedelta(hours=5, seconds=3).total_seconds()   # 10:05:03 -> 05:05:00
    assert f.largest_jump_line == 5
    largest = stats.time_notes()["largest_jump"]
    assert largest == {"seconds": 18003.0, "source": "server.log", "line": 5}
    # The times written stand (a file read in parts, as batch reads a grown file, gives the same times):
    # the records are ordered by time, and the accounting says that the file's time went back.
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert not any((e["attrs"] or {}).get("ts_written") for e in events)
    assert events[0]["line"] == 5 and events[0]["ts"] == datetime(2024, 3, 5, 5, 5, tzinfo=UTC)
    assert "time went back 1 time(s), the most by 5.0 h at line 5" in " ".join(f.problems)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_backward_jump_across_byte_ranges_is_decided_over_the_whole_file(tmp_path, jobs):
    # Three copies of the same hour, one after the other: the time goes back twice, at the copies'
    # starts, which are where the ranges begin; a split read must say what a whole read says.
    hour = _rebalances([f"2024-03-05T10:{m:02d}:00" for m in range(0, 60, 5)])
    (tmp_path / "server.log").write_text(hour * 3, encoding="utf-8")
    whole, whole_stats = read_events([str(tmp_path)], ReadOptions())
    split, split_stats = read_events([str(tmp_path)], ReadOptions(split_bytes=len(hour.encode()), jobs=jobs))
    assert [(e["line"], e["ts"], e["attrs"]) for e in split] == [(e["line"], e["ts"], e["attrs"]) for e in whole]
    for stats in (whole_stats, split_stats):
        f = stats.files[0]
        assert (f.backward_jumps, f.largest_jump_s, f.largest_jump_line) == (2, 3303.0, 25)   # 10:55:03 -> 10:00
        assert sum(p.startswith("time went back 2 time(s)") for p in f.problems) == 1


def test_a_backward_jump_is_in_the_json_accounting(tmp_path):
    (tmp_path / "server.log").write_text(
        _rebalances(["2024-03-05T10:00:00", "2024-03-05T10:05:00", "2024-03-05T05:05:00"]), encoding="utf-8")
    report = _analyze(tmp_path)
    time = report["accounting"]["time"]
    assert time["backward_jumps"] == 1
    assert time["largest_jump"] == {"seconds": 18003.0, "source": "server.log", "line": 5}


def test_the_spark_engine_decides_backward_jumps_across_ranges_as_the_local_one(spark, tmp_path):
    from rebalance_doctor.engines import spark as spark_engine

    hour = _rebalances([f"2024-03-05T10:{m:02d}:00" for m in range(0, 60, 5)])
    (tmp_path / "server.log").write_text(hour * 3, encoding="utf-8")
    options = ReadOptions(split_bytes=len(hour.encode()))
    assert len(spark_engine._plan(spark, [str(tmp_path)], options).units) == 3
    whole, _ = read_events([str(tmp_path)], ReadOptions())
    split, stats = spark_engine.collect_events(spark, [str(tmp_path)], options)
    assert [(e["line"], e["ts"], e["attrs"]) for e in split] == [(e["line"], e["ts"], e["attrs"]) for e in whole]
    f = stats.files[0]
    assert (f.backward_jumps, f.largest_jump_s, f.largest_jump_line) == (2, 3303.0, 25)


def test_every_report_says_what_file_order_decided(tmp_path):
    (tmp_path / "server.log").write_text(
        _rebalances(["2024-03-05T10:00:00", "2024-03-05T10:05:00", "2024-03-05T05:05:00"]), encoding="utf-8")
    said = "times: 1 backward jump(s) (largest 5.0 h, server.log:5)"
    for form in ("human", "markdown"):
        run = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", "analyze", str(tmp_path), "--format", form,
                              "--fail-on", "never"], capture_output=True, text=True, cwd=str(REPO), timeout=120,
                             env={**os.environ, "COLUMNS": "300"})
        assert run.returncode == 0, run.stderr
        assert said in run.stdout, form                 # the report's summary line
        assert said in run.stderr.splitlines()[0], form  # the accounting's first line
        assert "time went back 1 time(s), the most by 5.0 h at line 5" in " ".join(run.stderr.split())   # its notes
