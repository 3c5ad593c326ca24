"""Which engine reads the logs: in-process for an incident, Spark for an archive.

``auto`` stays in-process unless the input is big enough for Spark's start-up (a JVM, a
session, Python workers: 5-11 s here) to pay for itself on this machine's cores, or unless
the run has to be on Spark anyway (a ``--master`` was given, or an input is a Hadoop URL such as ``hdfs://`` or
``s3a://`` that only Spark can read). The threshold comes from benchmarks/spark_bench.py;
docs/performance.md ("Spark") has the figures it is derived from.

This module does not import pyspark: choosing must work where Spark is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from dataclasses import dataclass

ENGINES = ("local", "spark", "auto")

# Measured by benchmarks/spark_bench.py (docs/performance.md, "Spark"): what a Spark run costs
# before it reads anything, how fast the in-process engine reads (--jobs 1), and how fast Spark
# reads per core (local[2] / 2, fixed costs included).
SPARK_STARTUP_SECONDS = 6.0
LOCAL_BYTES_PER_SECOND = 290e6
SPARK_BYTES_PER_SECOND_PER_CORE = 210e6


def auto_threshold(cores: int | None = None) -> float:
    """Input size above which Spark on this machine's cores finishes before the in-process
    engine: start-up / (1/local rate - 1/Spark rate). Infinite where Spark is not faster."""
    cores = cores or os.cpu_count() or 1
    spark_rate = cores * SPARK_BYTES_PER_SECOND_PER_CORE
    if spark_rate <= LOCAL_BYTES_PER_SECOND:
        return float("inf")
    return SPARK_STARTUP_SECONDS / (1 / LOCAL_BYTES_PER_SECOND - 1 / spark_rate)


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class EngineError(ValueError):
    pass


@dataclass(frozen=True)
class Choice:
    engine: str   # "local" or "spark"
    reason: str


def is_remote(path: str) -> bool:
    """A Hadoop URL (hdfs://, s3a://, abfss://, gs://, file://...): read through Spark only."""
    return bool(_URL.match(path))


def spark_available() -> str | None:
    """None when Spark can run here, else what is missing."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'rebalance-doctor[spark]')"
    from importlib import metadata  # ~10-25 ms to import: only when a command may use Spark

    try:
        version = metadata.version("pyspark")
    except metadata.PackageNotFoundError:  # a Spark distribution's own python/ dir
        version = None
    if version and int(version.split(".")[0]) < 4:
        # DataFrame.toArrow and GroupedData.applyInArrow arrived in Spark 4.0.
        return f"the Spark engine needs pyspark 4.0 or later (found {version})"
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "no Java runtime found (Spark needs Java 17 or 21; set JAVA_HOME)"
    return None


def input_bytes(inputs: list[str], stop_after: int | None = None) -> int:
    """Bytes on disk under the local inputs; stops counting once past ``stop_after``."""
    total = 0
    for raw in inputs:
        if raw == "-" or is_remote(raw):
            continue
        if os.path.isfile(raw):
            total += _size(raw)
            continue
        # A stack, not os.walk: os.walk recurses (before Python 3.12), and a tree a thousand
        # directories deep ended the run with a RecursionError.
        stack, seen = [raw], set()
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=True):
                        key = (entry.stat().st_dev, entry.stat().st_ino)
                        if key not in seen:  # a symlink loop is walked once
                            seen.add(key)
                            stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=True):
                        total += entry.stat().st_size
                except OSError:
                    continue
                if stop_after is not None and total > stop_after:
                    return total
    return total


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def choose_engine(requested: str, inputs: list[str], master: str | None = None,
                  threshold: float | None = None) -> Choice:
    """The engine to run; raises EngineError when Spark is required but cannot run."""
    threshold = auto_threshold() if threshold is None else threshold
    if requested not in ENGINES:
        raise EngineError(f"unknown engine {requested!r}; use one of {', '.join(ENGINES)}")
    remote = [p for p in inputs if is_remote(p)]
    if requested == "local":
        if remote:
            raise EngineError(f"{remote[0]} can only be read with --engine spark (or auto)")
        if master:
            raise EngineError("--master needs --engine spark (or auto)")
        return Choice("local", "asked for")
    missing = spark_available()
    if requested == "spark":
        if missing:
            raise EngineError(f"--engine spark: {missing}")
        return Choice("spark", "asked for")
    if master or remote:
        if missing:
            raise EngineError(f"{'--master' if master else remote[0]} needs Spark: {missing}")
        return Choice("spark", f"--master {master}" if master else f"remote input {remote[0]}")
    if threshold == float("inf"):
        return Choice("local", "Spark is not faster than in-process on this machine's cores")
    size = input_bytes(inputs, stop_after=int(threshold))
    limit = f"{threshold / 2**20:,.0f} MiB"
    if size > threshold and not missing:
        return Choice("spark", f"input above {limit}")
    if size > threshold:
        return Choice("local", f"input above {limit} but {missing}")
    return Choice("local", f"input below {limit}")
