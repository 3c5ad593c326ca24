"""Any year Python can print is kept or counted, never a crash (issue 34 item 3): year 1 east of UTC and
9999-12-31 west of it have no UTC datetime; the event is kept untimed and counted, the run ends normally."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINE = ("[{ts}] INFO [GroupCoordinator 1]: Stabilized group payments generation {g} (__consumer_offsets-13) with "
        "2 members (kafka.coordinator.group.GroupCoordinator)\n")


@pytest.mark.parametrize("tz,untimed", [("Europe/Berlin", 1), ("America/New_York", 1), ("UTC", 0)])
def test_years_1_and_9999_with_a_zone_are_kept_or_counted(tmp_path, tz, untimed):
    (tmp_path / "server.log").write_text(
        LINE.format(ts="0001-01-01 00:30:00,000", g=13) + LINE.format(ts="2024-03-05 10:00:03,545", g=14)
        + LINE.format(ts="9999-12-31 23:30:00,000", g=15), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", "analyze", str(tmp_path), "--tz", tz, "-q",
                          "--format", "json", "--fail-on", "never"], capture_output=True, text=True, cwd=str(REPO),
                         timeout=120)
    assert run.returncode == 0, run.stderr
    accounting = json.loads(run.stdout)["accounting"]
    assert accounting["events"] == 3
    assert accounting["files"][0]["untimed_events"] == untimed
