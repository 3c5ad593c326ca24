"""Shared test set-up."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

# The suite runs in a non-UTC zone on purpose: a missing time-zone conversion must show.
os.environ.setdefault("TZ", "Etc/GMT+2")
time.tzset()

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REAL_LOGS = SHARED / "real-logs"
TEMPLATES = SHARED / "kafka-templates" / "templates.jsonl"


@pytest.fixture
def real_logs() -> Path:
    if not REAL_LOGS.is_dir():
        pytest.skip("../shared/real-logs is not present")
    return REAL_LOGS
