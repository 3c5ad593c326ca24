"""Which engine reads the logs: in-process for an incident, Spark for an archive.

``auto`` stays in-process unless the input is big enough for Spark's start-up (a JVM, a
session, Python workers: 7-11 s here) to pay for itself, or unless the run has to be on Spark
anyway (a ``--master`` was given, or an input is a Hadoop URL such as ``hdfs://`` or
``s3a://`` that only Spark can read). The threshold comes from benchmarks/spark_bench.py;
docs/performance.md ("Spark") has the figures it is derived from.

This module does not import pyspark: choosing must work where Spark is not installed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
from dataclasses import dataclass

ENGINES = ("local", "spark", "auto")

# Where Spark's start-up is paid back on one machine (docs/performance.md, "Spark"): measured
# break-even start-up / (1/in-process rate - 1/Spark rate) = 10 s / (1/85 - 1/111 MB/s) ~ 3.7 GB
# on 2 cores, rounded up. Smaller inputs finish sooner in-process.
AUTO_SPARK_BYTES = 4 << 30

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
    try:
        version = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:  # a Spark distribution's own python/ dir
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
        else:
            for directory, _dirs, files in os.walk(raw):
                for name in files:
                    total += _size(os.path.join(directory, name))
                    if stop_after is not None and total > stop_after:
                        return total
    return total


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def choose_engine(requested: str, inputs: list[str], master: str | None = None,
                  threshold: int = AUTO_SPARK_BYTES) -> Choice:
    """The engine to run; raises EngineError when Spark is required but cannot run."""
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
    size = input_bytes(inputs, stop_after=threshold)
    if size > threshold and not missing:
        return Choice("spark", f"input above {threshold >> 20} MiB")
    if size > threshold:
        return Choice("local", f"input above {threshold >> 20} MiB but {missing}")
    return Choice("local", f"input below {threshold >> 20} MiB")
