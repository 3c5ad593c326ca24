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
    """A usage error: an engine that cannot take these inputs or options."""


class SparkUnavailable(RuntimeError):
    """The environment cannot run the Spark engine (no pyspark, JDK, Connect client, pyarrow;
    a master or Connect server that cannot be reached; executors without a dependency). The
    message is one line that says what to install or check."""


@dataclass(frozen=True)
class Choice:
    engine: str   # "local" or "spark"
    reason: str


def remote_url(given: str | None) -> str | None:
    """The Spark Connect URL of a run: ``--remote``, else ``$SPARK_REMOTE`` (pyspark's own
    variable, which makes every session a Connect session)."""
    return given or os.environ.get("SPARK_REMOTE") or None


def is_remote(path: str) -> bool:
    """A Hadoop URL (hdfs://, s3a://, abfss://, gs://, file://...): read through Spark only."""
    return bool(_URL.match(path))


def spark_available(remote: bool = False) -> str | None:
    """None when Spark can run here, else what is missing (one line).

    ``remote``: a Spark Connect session (``--remote sc://...``), which needs the Connect client's
    modules but no local Java.
    """
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'rebalance-doctor[spark]')"
    for module in ("pyarrow", "pandas"):  # pyspark's Arrow functions import pandas on the driver
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'rebalance-doctor[spark]')"
    from importlib import metadata  # ~10-25 ms to import: only when a command may use Spark

    try:
        version = metadata.version("pyspark")
    except metadata.PackageNotFoundError:  # a Spark distribution's own python/ dir
        version = None
    if version and int(version.split(".")[0]) < 4:
        # DataFrame.toArrow and GroupedData.applyInArrow arrived in Spark 4.0.
        return f"the Spark engine needs pyspark 4.0 or later (found {version})"
    if remote:
        for module in CONNECT_MODULES:
            if importlib.util.find_spec(module) is None:
                return (f"the Spark Connect client needs {module.split('.')[0]} "
                        f"(pip install 'rebalance-doctor[spark]')")
        return None
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        return f"no Java runtime found (Spark needs Java {JAVA_SUPPORTED}; install one or set JAVA_HOME)"
    major = java_major(java)
    if major is not None and major < JAVA_MINIMUM:
        return f"Java {major} at {java} is too old for Spark 4 (it needs Java {JAVA_SUPPORTED}; set JAVA_HOME)"
    return None


# The Spark Connect client's own dependencies (pyspark's `connect` extra).
CONNECT_MODULES = ("grpc", "grpc_status", "google.protobuf", "zstandard")
JAVA_MINIMUM = 17
JAVA_SUPPORTED = "17 or 21"


def java_major(java: str) -> int | None:
    """The major version of a Java runtime from its ``release`` file (no JVM started: this runs
    in every command that may use Spark); None when it does not say."""
    home = os.path.dirname(os.path.dirname(os.path.realpath(java)))
    try:
        with open(os.path.join(home, "release"), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', text, re.MULTILINE)
    return int(found.group(1)) if found else None


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
                  threshold: float | None = None, remote: str | None = None) -> Choice:
    """The engine to run; raises EngineError on a usage error and SparkUnavailable when Spark is
    required but cannot run here."""
    threshold = auto_threshold() if threshold is None else threshold
    if requested not in ENGINES:
        raise EngineError(f"unknown engine {requested!r}; use one of {', '.join(ENGINES)}")
    hadoop = [p for p in inputs if is_remote(p)]
    remote_session = remote_url(remote)
    if requested == "local":
        if hadoop:
            raise EngineError(f"{hadoop[0]} can only be read with --engine spark (or auto)")
        if master or remote:
            raise EngineError(f"{'--master' if master else '--remote'} needs --engine spark (or auto)")
        return Choice("local", "asked for")
    if master and remote_session:
        raise EngineError("--master and --remote exclude each other (a Spark Connect server has its own master)")
    missing = spark_available(remote=bool(remote_session))
    if requested == "spark":
        if missing:
            raise SparkUnavailable(f"--engine spark: {missing}")
        return Choice("spark", "asked for")
    # $SPARK_REMOTE says how to reach Spark, not that a small incident should wait for it.
    if master or remote or hadoop:
        if missing:
            what = "--master" if master else "--remote" if remote else hadoop[0]
            raise SparkUnavailable(f"{what} needs Spark: {missing}")
        reason = (f"--master {master}" if master else f"--remote {remote}" if remote
                  else f"remote input {hadoop[0]}")
        return Choice("spark", reason)
    if threshold == float("inf"):
        return Choice("local", "Spark is not faster than in-process on this machine's cores")
    size = input_bytes(inputs, stop_after=int(threshold))
    limit = f"{threshold / 2**20:,.0f} MiB"
    if size > threshold and not missing:
        return Choice("spark", f"input above {limit}")
    if size > threshold:
        return Choice("local", f"input above {limit} but {missing}")
    return Choice("local", f"input below {limit}")
