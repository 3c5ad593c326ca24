"""Thresholds validated like the CLI's options (issue 34 item 4): every key typed and bounded by
rules/thresholds_schema.toml; a bad value is exit 2 and one line naming file, key and value."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_doctor.rules import config

REPO = Path(__file__).resolve().parent.parent
INCIDENT = REPO / "fixtures" / "incidents" / "poll-timeout-storm"


def test_every_shipped_threshold_has_a_type_and_bounds_it_meets():
    schema = config.schema()
    for table, values in config.defaults().items():
        if table == "version":
            continue
        assert set(values) <= set(schema[table]) | {"enabled"}, table
        for key, value in values.items():
            config.check(table, key, value, "thresholds.toml")      # the defaults pass their own schema


BAD = [
    ('critical_count = "three"', "poll-timeout", "critical_count = 'three'"),
    ("window_minutes = -10", "rebalance-storm", "window_minutes = -10"),
    ("critical_count = 9223372036854775808", "poll-timeout", "critical_count = 9223372036854775808"),
    ("max_unstable_share = nan", "rebalance-storm", "max_unstable_share = nan"),
    ("max_unstable_share = 1.5", "rebalance-storm", "max_unstable_share = 1.5"),
    ("critical_count = true", "poll-timeout", "critical_count = True"),
    ('enabled = "no"', "poll-timeout", "enabled = 'no'"),
]


@pytest.mark.parametrize("line,table,shown", BAD, ids=[b[0] for b in BAD])
def test_a_bad_threshold_is_exit_2_naming_file_key_and_value(tmp_path, line, table, shown):
    path = tmp_path / "thresholds.toml"
    path.write_text(f"[{table}]\n{line}\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", "analyze", str(INCIDENT), "-q",
                          "--config", str(path)], capture_output=True, text=True, cwd=str(REPO), timeout=120)
    assert run.returncode == 2, run.stderr
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and str(path) in lines[0] and f"[{table}] {shown}" in lines[0], run.stderr
    assert "Traceback" not in run.stderr and not run.stdout


def test_good_values_still_apply(tmp_path):
    path = tmp_path / "thresholds.toml"
    path.write_text("[poll-timeout]\nenabled = false\n[rebalance-storm]\nmax_unstable_share = 0.5\n", encoding="utf-8")
    loaded = config.load(path, cwd=tmp_path)
    assert not loaded.enabled("poll-timeout")
    assert math.isclose(loaded.of("rebalance-storm")["max_unstable_share"], 0.5)
