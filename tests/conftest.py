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
TEMPLATES = REPO / "patterns" / "kafka" / "templates.jsonl"     # the inventory packgen/sources.py extracts


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
# is one tier says so with a module-level ``pytestmark`` (tests/test_lab_live.py: lab and slow); here,
# the rest: a test that asks for the Spark session is a ``spark`` test wherever it is. The fast
# tier, in a few minutes:
#
#     pytest -q -n 2 -m "not spark and not install and not browser and not lab and not slow"
#
# Under pytest-xdist (``-n 2``; ``--dist loadfile`` is in pyproject's addopts) each worker is a
# process with its own session and module fixtures. A test file runs on one worker (its module
# fixtures, such as the accuracy gate's scores and the live lab's resolved release, are computed
# once), and ``xdist_scope`` below puts the files that use the local Spark session together (one
# JVM, not one per worker; a session fixture shared by several files goes there too). Not with
# xdist_group marks and --dist loadgroup: on pytest 9.2 (xdist 3.8) loadgroup ignores them
# (pytest-dev/pytest-xdist#1386) and spread the accuracy gate's tests, computing it twice.
SPARK_FIXTURE = "spark"
SPARK_SESSION_FILES = ("tests/test_batch.py", "tests/test_clusters.py", "tests/test_mixed_streams.py", "tests/test_query.py",
                       "tests/test_range_accounting.py", "tests/test_spark.py", "tests/test_time_truth.py")
# Heavy tiers first: the scheduler hands out scopes in collection order (--no-loadscope-reorder),
# so that the two workers start on the long ones and end on short files, rather than one worker
# running the last long scope while the other idles.
HEAVY_FIRST = ("install", "lab", "spark", "slow", "browser")


def xdist_scope(nodeid: str) -> str:
    """The unit pytest-xdist gives one worker: a test file, or the files of the local Spark session."""
    path = nodeid.split("::", 1)[0]
    if path in SPARK_SESSION_FILES:
        return "spark-session"
    return path


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """--dist loadfile, with xdist_scope's units (only then: another --dist is left as it is)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Scopes(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return Scopes(config, log)


def _weight(item: pytest.Item) -> int:
    return next((rank for rank, tier in enumerate(HEAVY_FIRST) if item.get_closest_marker(tier)), len(HEAVY_FIRST))


@pytest.hookimpl(tryfirst=True)  # before the mark plugin deselects by -m
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
            if xdist_scope(item.nodeid) != "spark-session":
                item.warn(pytest.PytestWarning(f"{item.path.name} uses the Spark session: add it to conftest's "
                                               "SPARK_SESSION_FILES, or under -n 2 it starts a second one"))
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a serial run keeps the files' order
    weight: dict[str, int] = {}
    for item in items:  # a scope weighs what its heaviest test does; scopes keep their first-seen order
        scope = xdist_scope(item.nodeid)
        weight[scope] = min(weight.get(scope, len(HEAVY_FIRST)), _weight(item))
    seen = {scope: rank for rank, scope in enumerate(weight)}
    items.sort(key=lambda item: (weight[xdist_scope(item.nodeid)], seen[xdist_scope(item.nodeid)]))  # same on every worker
