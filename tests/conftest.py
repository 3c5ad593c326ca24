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


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for every Spark test (start-up costs seconds; share it)."""
    from rebalance_doctor.engines.choose import spark_available

    missing = spark_available()
    if missing:
        pytest.skip(f"Spark cannot run here: {missing}")
    from rebalance_doctor.engines.spark import create_session

    session = create_session("local[2]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
                             app_name="rebalance-doctor-tests")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _cache_notes_of_this_test(monkeypatch):
    """What the cache had to say (``cache.notes``, printed with the accounting) is per process;
    a test that damages an entry must not leave its note in the reports of the tests after it."""
    from rebalance_doctor.core import cache

    monkeypatch.setattr(cache, "notes", [])


# ---------------------------------------------------------------- tiers
#
# The tiers (markers registered in pyproject.toml): spark, install, browser, lab, slow. A file that
# is one tier says so with a module-level ``pytestmark``; here, the rest: a test that asks for the
# Spark session is a ``spark`` test wherever it is, and the live lab's files (tests/test_lab*.py)
# are ``lab`` tests. The fast tier, in a few minutes:
#
#     pytest -q -m "not spark and not install and not browser and not lab and not slow"
SPARK_FIXTURE = "spark"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
        if item.path.name.startswith("test_lab"):
            item.add_marker(pytest.mark.lab)
