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


# ---------------------------------------------------------------- tiers and pytest-xdist
#
# The tiers (markers registered in pyproject.toml): spark, install, browser, lab, slow. A file that
# is one tier says so with a module-level ``pytestmark``; here, the rest: a test that asks for the
# Spark session is a ``spark`` test wherever it is, and the live lab's files (tests/test_lab*.py)
# are ``lab`` tests. The fast tier, in a few minutes:
#
#     pytest -q -n 2 -m "not spark and not install and not browser and not lab and not slow"
#
# Under pytest-xdist (``-n 2``; ``--dist loadgroup`` is in pyproject's addopts) each worker is a
# process with its own session and module fixtures. So a test file runs on one worker (its module
# fixtures, such as the accuracy gate's scores, computed once), the tests that use the local
# Spark session all run on one worker (one JVM, not one per worker), and so do the live lab's
# tests (its Kafka processes start once per session).
SPARK_FIXTURE = "spark"
# Heavy tiers first: the scheduler hands out groups in collection order (--no-loadscope-reorder),
# so that the two workers start on the long groups and end on short files, rather than one worker
# running the last long group while the other idles.
HEAVY_FIRST = ("install", "lab", "spark", "slow", "browser")


def _xdist_group(item: pytest.Item) -> str:
    given = item.get_closest_marker("xdist_group")
    if given:
        return str(given.args[0] if given.args else given.kwargs.get("name", "default"))
    if SPARK_FIXTURE in getattr(item, "fixturenames", ()):
        return "spark-session"
    if item.get_closest_marker("lab"):
        return "lab"
    return item.nodeid.split("::", 1)[0]  # the test file


def _weight(item: pytest.Item) -> int:
    return next((rank for rank, tier in enumerate(HEAVY_FIRST) if item.get_closest_marker(tier)), len(HEAVY_FIRST))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the xdist_group marks into scopes
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
        if item.path.name.startswith("test_lab"):
            item.add_marker(pytest.mark.lab)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a serial run keeps the files' order
    group = {item.nodeid: _xdist_group(item) for item in items}
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group[item.nodeid]))
    weight: dict[str, int] = {}
    for item in items:  # a group weighs what its heaviest test does; groups keep their first-seen order
        weight[group[item.nodeid]] = min(weight.get(group[item.nodeid], len(HEAVY_FIRST)), _weight(item))
    seen = {name: rank for rank, name in enumerate(weight)}
    items.sort(key=lambda item: (weight[group[item.nodeid]], seen[group[item.nodeid]]))  # the same on every worker
