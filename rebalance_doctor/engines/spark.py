"""The Spark engine: the same parsing core as the in-process engine, run on Spark executors.

The only module that imports pyspark. Library functions take a ``SparkSession``; only the
command line and the spark-submit entry point create one (``create_session``).

How a run goes:

1. The driver plans work units. Local (and shared) paths go through the in-process engine's
   steps (``core.sources.discover``, layout detection from each file's head, large plain files
   cut into byte ranges that ``read_unit`` aligns on record boundaries), with a selection hook
   the incremental batch uses to skip or resume files. Hadoop URLs (``hdfs://``, ``s3a://``, ``abfss://``,
   ``file://`` ...) are listed with the ``binaryFile`` source without reading their content.
2. The units become a small DataFrame, one Spark partition per bin of units (bins balanced by
   bytes), and ``mapInArrow`` runs ``core.reader.read_unit`` on each unit inside the executors.
   Local units are opened by path, so file contents never travel through Arrow; Hadoop files
   are joined with their ``binaryFile`` content (read whole: codecs, multi-line records and
   exact line numbers work; Python cannot seek in a Hadoop stream, so they are not split).
3. Each unit yields its events packed (``_events_batch``: Arrow IPC in one binary value, so the
   JVM caches opaque values, not a columnar copy of every event) plus one report row (its
   FileStats, the newlines it counted, or why it was skipped). The driver collects the small
   report rows, builds the run's accounting and each unit's fix (line offset of a later byte
   range, Kafka version stated in an earlier one, the group a client handle states in another
   range: ``core.handles``), and a second ``mapInArrow`` unpacks the events with their fixes
   applied (``_unpacked``; ``collect_events`` unpacks on the driver). No step shuffles: a
   file read whole resolves its client handles on the executor.

Executors need only the dependencies in their Python. The driver adds the package it runs to
the session (``prepare``: a zip from ``engines.shipping``, ``addPyFile`` on a classic session,
``addArtifacts(pyfile=True)`` under Spark Connect), then probes the executors once per session:
their Python, their ids, what they lack, and how many tasks run at once. Every unit's report
says on which executor and with which Python it was read (``RunStats.executors``). The pattern
files (shipped packs, layouts, prefixes, --packs) travel as text in the task closure; each
Python worker writes them once to a temporary directory and points the core at it.

One code path for classic sessions and Spark Connect (``sc://``): the DataFrame API only (no
``sparkContext``, RDDs or JVM gateway); the work units reach the executors in the closure of a
``spark.range`` with one row per task. Errors of the environment (a master or Connect server
that cannot be reached, no executor, an executor's Python without a dependency) become
``SparkUnavailable`` with one line (``translated_errors``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback
import uuid
import warnings
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator
from urllib.parse import urlparse

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..core import clock, handles, versions
from ..core.batches import EventBatch
from ..core.options import ReadOptions
from ..core.paths import patterns_dir
from ..core.reader import (DATE_IN_NAME, UNKNOWN_LAYOUT, Unit, byte_ranges, detect_source, read_unit,
                           toolkit, unit_layout)
from ..core.process import tune_for_reading
from ..core.schema import NAMES, arrow_schema, event_columns, spark_ddl
from ..core.sources import NOT_LOGS, ZIP_MAGIC, Source, codec_of, discover, infer_host, wrap_codec
from ..core.stats import FileStats, NearMiss, RunStats
from . import local, shipping
from .choose import SparkUnavailable, is_remote, remote_url

UNIT_COLUMN = "_unit"
REPORT_COLUMN = "_report"
EVENTS_COLUMN = "_events"
EVENT_BATCH_ROWS = 8192


# Runtime SQL settings every session gets (Spark Connect can set only these from the client).
SQL_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",                          # partition dates are UTC days
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",  # pyarrow reads UTC instants
}
# How long the first job waits for an executor before saying none came (a worker that never
# registers, a cluster without free cores): Spark itself would wait for ever.
EXECUTOR_WAIT_KEY = "spark.rebalanceDoctor.executorWait"
EXECUTOR_WAIT_DEFAULT = "120s"
CONNECT_DEFAULT_PORT = 15002
REACH_TIMEOUT_SECONDS = 5.0


def create_session(master: str | None = None, conf: dict[str, str] | None = None,
                   app_name: str = "rebalance-doctor", remote: str | None = None) -> SparkSession:
    """A session for the command line: a classic one for ``master`` (local[*], spark://, yarn,
    k8s://), or a Spark Connect one for ``remote`` (``sc://host:port``, or ``$SPARK_REMOTE`` when
    no master is given). UTC session time, Parquet timestamps that pyarrow reads back as UTC
    instants. Raises SparkUnavailable (one line) when the master or server cannot be reached."""
    # pyspark warns about pandas versions on every Arrow job; the engine does not use pandas.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    conf = dict(conf or {})
    remote = remote or (None if master else remote_url(None))
    if remote:
        check_reachable(remote)
        with translated_errors(remote):
            spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
            for key, value in {**SQL_SETTINGS, **conf}.items():
                try:
                    spark.conf.set(key, value)
                except Exception as exc:  # a static setting: the server's, not the client's
                    if _is_connection_error(exc):
                        raise
                    raise ValueError(f"--conf {key}: cannot be set from a Spark Connect client "
                                     f"({_first_line(exc)}); set it on the server") from None
        return spark
    if master:
        check_reachable(master)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    settings = {**SQL_SETTINGS, "spark.ui.showConsoleProgress": "false"}
    if "spark.driver.extraJavaOptions" not in conf:
        # Spark's default log4j profile prints INFO/WARN start-up lines meant for operators, and
        # a failed task's Java stack trace; the command says what went wrong in one line.
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={_quiet_log4j()}"
    settings.update(conf)
    _default_python(settings)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with translated_errors(master or "local"):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _default_python(settings: dict[str, str]) -> None:
    """The Python workers run the interpreter running this command unless told otherwise.

    pyspark starts them with ``$PYSPARK_PYTHON`` or else ``python3`` from the PATH, which from
    an unactivated install (pipx, cron, CI) is another Python without the dependencies.
    ``--conf spark.pyspark.python=...`` (what spark-submit takes) is honoured too.
    """
    if settings.get("spark.pyspark.python"):
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    elif not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable


def check_reachable(url: str) -> None:
    """A quick TCP check of a ``spark://`` master (every host of an HA list) or an ``sc://``
    server: a refused or unanswered connection is one line now, not minutes of retries."""
    parsed = urlparse(url)
    if parsed.scheme not in ("spark", "sc"):
        return
    what = "Spark master" if parsed.scheme == "spark" else "Spark Connect server"
    hosts = (url.split("://", 1)[1].split("/", 1)[0].split(";", 1)[0]).split(",")
    problems = []
    for host_port in hosts:
        host, _, port = host_port.rpartition(":")
        if not host:
            host, port = port, str(CONNECT_DEFAULT_PORT if parsed.scheme == "sc" else 7077)
        host = host.strip("[]")
        try:
            with socket.create_connection((host, int(port)), timeout=REACH_TIMEOUT_SECONDS):
                return
        except ConnectionRefusedError:
            problems.append(f"{host}:{port} refused the connection")
        except socket.timeout:
            problems.append(f"{host}:{port} did not answer within {REACH_TIMEOUT_SECONDS:.0f}s")
        except (OSError, ValueError) as exc:
            problems.append(f"{host}:{port}: {getattr(exc, 'strerror', None) or exc}")
    raise SparkUnavailable(f"cannot reach the {what} at {url}: {'; '.join(problems)}")


def _quiet_log4j() -> str:
    path = Path(tempfile.gettempdir()) / "rebalance-doctor-log4j2-v2.properties"
    if not path.is_file():
        # Executor and TaskSetManager log a failed task with its Java stack trace at ERROR/WARN:
        # the command reports the failure itself (translated_errors).
        text = ("rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
                "appender.console.type = Console\nappender.console.name = console\n"
                "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n\n"
                "logger.executor.name = org.apache.spark.executor.Executor\nlogger.executor.level = off\n"
                "logger.tasks.name = org.apache.spark.scheduler.TaskSetManager\nlogger.tasks.level = off\n"
                "logger.client.name = org.apache.spark.deploy.client.StandaloneAppClient$ClientEndpoint\n"
                "logger.client.level = off\n"
                "logger.backend.name = org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend\n"
                "logger.backend.level = off\n")
        staging = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
    return str(path)


def is_connect(spark: SparkSession) -> bool:
    """Whether the session is a Spark Connect client (no SparkContext, no JVM here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def session(master: str | None = None, conf: dict[str, str] | None = None,
            remote: str | None = None) -> Iterator[SparkSession]:
    """A session for one command: an already active one (spark-submit, a notebook, tests) is used
    and left running; one started here is stopped at the end. Environment failures inside become
    SparkUnavailable."""
    active = SparkSession.getActiveSession()
    spark = active or create_session(master, conf, remote=remote)
    try:
        with translated_errors(remote or master or "the Spark session"):
            yield spark
    finally:
        if active is None:
            try:
                spark.stop()
            except Exception:  # a server that went away: nothing left to stop
                pass


# ---------------------------------------------------------------- the environment's errors

_MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]+)"')
_VERSION_MISMATCH = re.compile(r"Python in worker has different version:? \(?([\d., ]+)\)? than that in driver:? ([\d.]+)")
RECIPE = "docs/spark.md, \"Dependencies on executors\""


class _Translated(Exception):
    pass


@contextmanager
def translated_errors(where: str) -> Iterator[None]:
    """Turn what Spark raises when the environment is wrong into SparkUnavailable (one line);
    anything else is raised unchanged (a bug: the CLI reports it as internal)."""
    try:
        yield
    except SparkUnavailable:
        raise
    except Exception as exc:
        message = environment_problem(exc, where)
        if message is None:
            raise
        raise SparkUnavailable(message) from None


def environment_problem(exc: BaseException, where: str) -> str | None:
    """One line for an environment failure inside a Spark exception, or None."""
    text = str(exc)
    module = _MISSING_MODULE.search(text)
    if module:
        name = module.group(1)
        if name.split(".")[0] == shipping.PACKAGE:
            return (f"the executors could not import the rebalance_doctor code the driver shipped "
                    f"({name}); see {RECIPE}")
        return (f"the executors' Python lacks the module {name!r}: install the dependencies there, "
                f"or ship an environment with --archives ({RECIPE})")
    package = re.search(r"PACKAGE_NOT_INSTALLED\] (\w+)", text)
    if package:
        return (f"{package.group(1)} is not installed where the driver runs "
                f"(pip install 'rebalance-doctor[spark]')")
    mismatch = _VERSION_MISMATCH.search(text)
    if mismatch or "PYTHON_VERSION_MISMATCH" in text:
        detail = (f" ({mismatch.group(1).replace(', ', '.')} on the executors, {mismatch.group(2)} here)"
                  if mismatch else "")
        return (f"the executors run another Python version than the driver{detail}: set PYSPARK_PYTHON "
                f"to a Python of the driver's version ({RECIPE})")
    program = _CANNOT_RUN.search(text)
    if program:
        return (f"the executors cannot start Python {program.group(1)!r}: set PYSPARK_PYTHON "
                f"(or spark.pyspark.python) to the executors' Python ({RECIPE})")
    if "UnsupportedClassVersionError" in text:
        return "the Java runtime is too old for Spark 4 (it needs Java 17 or 21; set JAVA_HOME)"
    if "Java gateway process exited" in text or "JAVA_GATEWAY_EXITED" in text:
        return "Java could not start Spark (check JAVA_HOME and that Java 17 or 21 runs)"
    if "All masters are unresponsive" in text or "Master removed our application" in text:
        return f"the Spark master at {where} stopped answering or removed the application"
    if _is_connection_error(exc):
        return f"cannot reach the Spark Connect server at {where}: {_grpc_detail(text)}"
    if "SparkContext was shut down" in text or "Cannot call methods on a stopped SparkContext" in text:
        return f"the Spark application on {where} was stopped (its master or executors went away)"
    return None


def _is_connection_error(exc: BaseException) -> bool:
    text = str(exc)
    return type(exc).__name__ in ("SparkConnectGrpcException", "RetriesExceeded", "_InactiveRpcError") and (
        "UNAVAILABLE" in text or "Connection refused" in text or "failed to connect" in text.lower()
        or "Deadline Exceeded" in text or "RetriesExceeded" in type(exc).__name__)


def _grpc_detail(text: str) -> str:
    for needle in ("Connection refused", "Deadline Exceeded", "failed to connect to all addresses"):
        if needle in text:
            return needle.lower()
    return _first_line_of(text)


def _first_line_of(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


# ---------------------------------------------------------------- the session's executors

@dataclass
class Cluster:
    """What a session's executors are, found once per session by ``prepare``."""

    parallelism: int                 # tasks that run at once (the default parallelism)
    executors: list[dict]            # {"executor", "host", "python", "version"} per executor
    connect: bool


_PREPARED: dict[int, tuple[SparkSession, Cluster, set[str]]] = {}
PROBE_ROWS = 1024


def prepare(spark: SparkSession) -> Cluster:
    """Ship the package to the session (once per content) and probe its executors (once per
    session). Raises SparkUnavailable when no executor comes within the wait
    (``spark.rebalanceDoctor.executorWait``, default 120s) or when their Python lacks a
    required module."""
    known = _PREPARED.get(id(spark))
    if known is None or known[0] is not spark:
        known = (spark, None, set())
        _PREPARED[id(spark)] = known  # type: ignore[assignment]
    _, cluster, shipped = known
    archive = shipping.package_zip()
    if archive.name not in shipped:
        if is_connect(spark):
            spark.addArtifacts(str(archive), pyfile=True)
        else:
            spark.sparkContext.addPyFile(str(archive))
        shipped.add(archive.name)
    if cluster is None:
        cluster = _probe(spark)
        _PREPARED[id(spark)] = (spark, cluster, shipped)
    return cluster


def _probe(spark: SparkSession) -> Cluster:
    wait = _seconds(spark.conf.get(EXECUTOR_WAIT_KEY, EXECUTOR_WAIT_DEFAULT))
    probe = F.udf(shipping.probe_json, "string", useArrow=False).asNondeterministic()
    frame = spark.range(0, PROBE_ROWS).select(F.spark_partition_id().alias("partition"), probe().alias("probe"))
    tag = f"rebalance-doctor-probe-{uuid.uuid4().hex[:12]}"
    outcome: dict = {}

    def collect() -> None:
        spark.addTag(tag)  # thread-local: only this thread's jobs carry it
        try:
            outcome["rows"] = frame.collect()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            try:
                spark.removeTag(tag)
            except Exception:
                pass

    worker = threading.Thread(target=collect, name="rebalance-doctor-probe", daemon=True)
    worker.start()
    worker.join(wait)
    if worker.is_alive():
        try:
            spark.interruptTag(tag)
        except Exception:
            pass
        worker.join(10)
        raise SparkUnavailable(
            f"no executor ran a task within {wait:.0f}s: no worker registered with the master, or none has "
            f"the free cores and memory asked for (spark.executor.cores, spark.executor.memory); "
            f"{EXECUTOR_WAIT_KEY} sets the wait")
    if "error" in outcome:
        raise outcome["error"]
    partitions, executors = set(), {}
    for row in outcome["rows"]:
        partitions.add(row["partition"])
        found = json.loads(row["probe"])
        executors.setdefault(found["executor"], found)
    missing = sorted({name for found in executors.values() for name in found["missing"]})
    if missing:
        pythons = ", ".join(sorted({f"{e['python']} on executor {e['executor']}" for e in executors.values()
                                    if e["missing"]}))
        raise SparkUnavailable(f"the executors' Python ({pythons}) lacks {', '.join(missing)}: install the "
                               f"dependencies there, or ship an environment with --archives ({RECIPE})")
    listed = [{k: found[k] for k in ("executor", "host", "python", "version", "optional_missing")}
              for _, found in sorted(executors.items())]
    return Cluster(max(len(partitions), 1), listed, is_connect(spark))


def _seconds(text: str) -> float:
    text = str(text).strip().lower()
    for suffix, factor in (("ms", 0.001), ("s", 1), ("m", 60), ("min", 60), ("h", 3600)):
        if text.endswith(suffix) and text[:-len(suffix)].replace(".", "", 1).isdigit():
            return float(text[:-len(suffix)]) * factor
    return float(text)


def parse_conf(items: list[str] | None) -> dict[str, str]:
    """``--conf k=v`` items as a dict; raises ValueError on an item without '='."""
    conf = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--conf takes KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        conf[key.strip()] = value
    return conf


# ---------------------------------------------------------------- planning (driver)

Selection = Callable[[str, int, float], "tuple[int, int] | None"]
"""Called with a file's key (absolute path or URL), size and mtime before it is planned: None
leaves the file out, (start, lines) reads it from byte ``start``, which follows ``lines``
newlines (an archive file that grew since the last run is read from where that run stopped)."""


@dataclass
class _Planned:
    units: list[dict]                # rows of the units DataFrame
    remote: list[dict]               # rows for Hadoop files (content joined in on the executors)
    remote_roots: list[str]
    stats: RunStats
    # Streams (one per source: names can repeat across input roots) are numbered in input order.
    names: dict[int, tuple[int, str, int]]  # unit id -> (stream, source name, part)
    bases: dict[int, int] = field(default_factory=dict)     # stream -> lines before its first unit
    files: dict[str, dict] = field(default_factory=dict)    # file key -> {"size", "mtime", "streams"}
    lines: dict[int, int] = field(default_factory=dict)     # stream -> newlines up to where it was read
    read: set[int] = field(default_factory=set)             # streams that were read (not skipped)
    # unit id -> (the versions its events carry that are replaced, the one they take instead):
    # versions.for_later_range, applied as the in-process engine does (EventBatch.replace_versions)
    versions: dict[int, tuple[tuple[str | None, ...], str]] = field(default_factory=dict)
    parallelism: int = 1                                    # tasks that run at once
    # unit id -> client -> group, for the ranges of a file read in ranges (handles.carried)
    handle_groups: dict[int, dict[str | None, str]] = field(default_factory=dict)


def file_key(path: str) -> str:
    """How a run names a physical file: its absolute path, or its URL."""
    return path if is_remote(path) else os.path.abspath(path)


def _plan(spark: SparkSession, inputs: list[str], options: ReadOptions,
          select: Selection | None = None, cluster: Cluster | None = None) -> _Planned:
    """The in-process engine's planning, plus Hadoop listing and selection: each source's layout
    detected from its head (reader.detect_source), big plain files cut in byte ranges by the
    same rule as locally (reader.byte_ranges).
    """
    cluster = cluster or prepare(spark)
    cores = cluster.parallelism
    kit = toolkit(options)
    stats = RunStats(inputs=list(inputs), packs=dict(kit.packs.versions), engine="spark", jobs=cores)
    stats.executors = [dict(e, units=0) for e in cluster.executors]
    planned = _Planned([], [], [p for p in inputs if is_remote(p)], stats, {}, parallelism=cores)
    found = discover([p for p in inputs if not is_remote(p)], host=options.host,
                     clusters={p: n for p, n in options.clusters.items() if not is_remote(p)})
    for skipped in found.skipped:
        stats.skip(skipped.source, skipped.reason, skipped.kind, skipped.size)
    stat_cache: dict[str, os.stat_result] = {}
    for stream, source in enumerate(found.sources):
        start, base = 0, 0
        if source.path is not None and source.data is None:
            key = file_key(source.path)
            if key not in stat_cache:
                try:
                    stat_cache[key] = os.stat(source.path)
                except OSError as exc:
                    stats.skip(source.name, f"cannot read: {exc.strerror or exc}")
                    continue
            size, mtime = stat_cache[key].st_size, stat_cache[key].st_mtime
            if select is not None:
                decision = select(key, size, mtime)
                if decision is None:
                    continue
                start, base = decision
            planned.files.setdefault(key, {"size": size, "mtime": mtime, "streams": []})["streams"].append(stream)
        detection, reason = detect_source(source, options, kit)
        if detection is None:
            stats.skip(source.name, reason or "unreadable", size=source.size)
            continue
        layout = unit_layout(detection, options, kit)
        container = detection.container.name if detection.container else None
        if source.cluster is None:
            source.cluster = detection.cluster_id   # the cluster id it states (core/clusterid.py)
        if source.cluster is None:
            source.clients = detection.clients      # an MM2 log: each client's (core/mirror.py)
        if start and not source.splittable:
            stats.warn(source.name, "changed since the last run and not a plain file: read again whole "
                                    "(the events of the earlier read stay in the table)")
            start, base = 0, 0
        planned.bases[stream] = base
        for part, (offset, end) in enumerate(byte_ranges(source, options.split_bytes, start)):
            _add_unit(planned, stream, source, layout, container, offset, end, part)
        if not detection.known:
            stats.warn(source.name, UNKNOWN_LAYOUT)
    for root in planned.remote_roots:
        for path, size, mtime in _list_hadoop(spark, root, stats):
            start, base = 0, 0
            if select is not None:
                decision = select(path, size, mtime)
                if decision is None:
                    continue
                start, base = decision
            relative = _relative_url(path, root)
            stream = len(found.sources) + len(planned.remote)
            planned.files[path] = {"size": size, "mtime": mtime, "streams": [stream]}
            planned.bases[stream] = base
            host = options.host or infer_host(relative, Path(urlparse(root).path or "/"))
            number = len(planned.units) + len(planned.remote)
            planned.remote.append({"unit": number, "name": relative, "host": host, "path": path, "size": size,
                                   "codec": None, "bundle": None, "member": None, "layout": None,
                                   "container": None, "start": start, "end": None, "part": 0,
                                   "mtime": mtime, "content": None, "cluster": _named_cluster(path, options)})
            planned.names[number] = (stream, relative, 0)
    return planned


def _named_cluster(url: str, options: ReadOptions) -> str | None:
    """The NAME of the ``--cluster NAME=URL`` holding a Hadoop file (the longest URL wins), as
    core.sources does for local paths. Compared as (scheme, authority, path): Hadoop lists
    ``file:/x`` for ``file:///x``."""
    def parts(u: str) -> tuple[str, str, str]:
        parsed = urlparse(u)
        return parsed.scheme.lower(), parsed.netloc, parsed.path.rstrip("/")

    scheme, authority, path = parts(url)
    best = None
    for root, name in options.clusters.items():
        if is_remote(root):
            s, a, prefix = parts(root)
            if (s, a) == (scheme, authority) and (path == prefix or path.startswith(prefix + "/")) and (
                    best is None or len(prefix) > len(best[0])):
                best = (prefix, name)
    return best[1] if best else None


def _add_unit(planned: _Planned, stream: int, source: Source, layout: str, container: str | None, start: int,
              end: int | None, part: int) -> None:
    number = len(planned.units)
    # Absolute: an executor opens it from its own working directory.
    path = os.path.abspath(source.path) if source.path else None
    planned.units.append({"unit": number, "name": source.name, "host": source.host, "path": path,
                          "size": source.size, "codec": source.codec, "bundle": source.bundle,
                          "member": source.member, "layout": layout, "container": container,
                          "start": start, "end": end, "part": part, "mtime": None, "content": source.data,
                          "cluster": source.cluster, "clients": source.clients})
    planned.names[number] = (stream, source.name, part)


def _list_hadoop(spark: SparkSession, root: str, stats: RunStats) -> list[tuple[str, int, float]]:
    """(path, length, modification time) of every file under a Hadoop URL; contents are not read here."""
    try:
        rows = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(root)
                .select("path", "length", "modificationTime").collect())
    except Exception as exc:  # AnalysisException (no such path), or the filesystem's own error
        stats.skip(root, f"cannot list: {_first_line(exc)}")
        return []
    found = []
    for row in sorted(rows, key=lambda r: r["path"]):
        name = PurePosixPath(urlparse(row["path"]).path).name
        if name.startswith(".") or name.startswith("_"):
            continue
        if name.lower().endswith(NOT_LOGS):
            stats.skip(_relative_url(row["path"], root), "not a log file (by its extension)")
            continue
        found.append((row["path"], row["length"], row["modificationTime"].timestamp()))
    return found


def _glob_escaped(path: str) -> str:
    """A listed file's path as a load() argument: Hadoop treats {}[]*?\\ as glob syntax."""
    return re.sub(r"([{}\[\]*?\\])", r"\\\1", path)


def _relative_url(path: str, root: str) -> str:
    """The display name of a Hadoop file: its path below the input root (like local inputs)."""
    file_path = PurePosixPath(urlparse(path).path)
    root_path = PurePosixPath(urlparse(root).path or "/")
    try:
        relative = file_path.relative_to(root_path).as_posix()
    except ValueError:
        return path
    return relative if relative != "." else file_path.name


# A unit's work is its uncompressed bytes; a compressed file's size is taken times this (logs
# compress about 10:1: the benchmark corpus' .gz files 9.6-14x).
COMPRESSED_EXPANSION = 10


def _work_bytes(row: dict) -> int:
    size = (row["end"] or row["size"]) - row["start"] + 1
    return size if row["codec"] in (None, "plain") else size * COMPRESSED_EXPANSION


def _bins(rows: list[dict], count: int) -> list[list[dict]]:
    """Units dealt into ``count`` bins, biggest first into the lightest bin (balanced by work),
    heaviest bin first: Spark starts partitions in order, so the long ones do not end the job."""
    bins: list[list[dict]] = [[] for _ in range(count)]
    loads = [0] * count
    for row in sorted(rows, key=lambda r: -_work_bytes(r)):
        lightest = loads.index(min(loads))
        bins[lightest].append(row)
        loads[lightest] += _work_bytes(row)
    order = sorted(range(count), key=lambda i: -loads[i])
    return [bins[i] for i in order if bins[i]]


# ---------------------------------------------------------------- shipping the packs

def _shipment(options: ReadOptions) -> dict:
    """The text of every pattern file the core will load, keyed by relative path."""
    root = patterns_dir()
    shipped = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
               for p in sorted(root.rglob("*.toml"))}
    extra = []
    for given in options.packs:
        given = Path(given)
        if given.is_dir():
            extra.append({p.name: p.read_text(encoding="utf-8") for p in sorted(given.glob("*.toml"))})
        elif given.is_file():
            extra.append({given.name: given.read_text(encoding="utf-8")})
        else:
            extra.append(None)  # the executor reports it exactly like the local engine
    return {"patterns": shipped, "extra": extra, "missing": [str(p) for p in options.packs]}


def packs_digest(options: ReadOptions) -> str:
    """A hash of every pattern file a run reads with (shipped packs, layouts, prefixes, --packs):
    what produced a table's events, beyond the packs' declared versions."""
    return hashlib.sha256(json.dumps(_shipment(options), sort_keys=True).encode()).hexdigest()[:16]


_INSTALLED: dict[str, ReadOptions] = {}


def _install(shipment: dict, options: ReadOptions) -> ReadOptions:
    """Write the shipped pattern files once per machine; options pointing at them.

    The directory is named by the content's hash, so every Python worker of a node (they exit
    without running atexit hooks) shares one copy per pack set instead of leaving one each.
    """
    key = hashlib.sha256(json.dumps(shipment, sort_keys=True).encode()).hexdigest()
    installed = _INSTALLED.get(key)
    if installed is not None:
        return installed
    root = Path(tempfile.gettempdir()) / f"rebalance-doctor-patterns-{key[:20]}"
    if not (root / "complete").is_file():
        staging = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
        for relative, text in shipment["patterns"].items():
            target = staging / "patterns" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        for number, files in enumerate(shipment["extra"]):
            if files is not None:
                directory = staging / f"extra-{number}"
                directory.mkdir()
                for name, text in files.items():
                    (directory / name).write_text(text, encoding="utf-8")
        (staging / "complete").write_text(key, encoding="utf-8")
        try:
            os.rename(staging, root)  # atomic: a concurrent worker's copy wins, ours is dropped
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    packs = [Path(shipment["missing"][number]) if files is None else root / f"extra-{number}"
             for number, files in enumerate(shipment["extra"])]
    os.environ["REBALANCE_DOCTOR_PATTERNS"] = str(root / "patterns")
    installed = replace(options, packs=packs)
    _INSTALLED[key] = installed
    return installed


# ---------------------------------------------------------------- reading (executors)

class _BytesSource(Source):
    """A Hadoop file whose bytes came with the task (binaryFile content)."""

    def open(self):
        return wrap_codec(io.BytesIO(self.data), self.codec)


def _output_schema() -> pa.Schema:
    return pa.schema([(UNIT_COLUMN, pa.int64()), (REPORT_COLUMN, pa.string()), (EVENTS_COLUMN, pa.binary())])


def _output_ddl() -> str:
    return f"`{UNIT_COLUMN}` BIGINT, `{REPORT_COLUMN}` STRING, `{EVENTS_COLUMN}` BINARY"


def _events_batch(events: list[dict], unit: int, schema: pa.Schema) -> pa.RecordBatch:
    """One row holding the events as an Arrow IPC stream (LZ4): the JVM caches a few opaque
    values per unit instead of building (and compressing) a columnar cache of every event,
    which was most of its executor threads' CPU in a run; ``_unpacked`` opens them where they
    are used."""
    batch = pa.RecordBatch.from_pydict(event_columns(events), schema=arrow_schema())
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_batch(batch)
    packed = sink.getvalue().to_pybytes()
    return pa.RecordBatch.from_pydict({UNIT_COLUMN: [unit], REPORT_COLUMN: [None], EVENTS_COLUMN: [packed]},
                                      schema=schema)


def _report_batch(unit: int, report: dict, schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({UNIT_COLUMN: [unit], REPORT_COLUMN: [json.dumps(report)],
                                       EVENTS_COLUMN: [None]}, schema=schema)


Fix = tuple[int, "tuple[str | None, ...]", "str | None", "dict[str | None, str]"]
"""What the accounting changes in a unit's events: (line offset, the Kafka versions they carry
that are replaced, the one they take (see versions.for_later_range), and the group each handle's
ungrouped client lines take from the file's other ranges (see handles.carried))."""


def _unpacked(packed, fix: Fix | None) -> pa.RecordBatch:
    """A unit's packed events with their line offset and Kafka version applied."""
    import pyarrow.compute as pc

    batch = pa.ipc.open_stream(packed).read_next_batch()
    if fix is None:
        return batch
    offset, replaced, version, groups = fix
    if groups:
        batch = _with_handle_groups(batch, groups)
    if offset:
        batch = batch.set_column(batch.schema.get_field_index("line"), "line", pc.add(batch.column("line"), offset))
    if replaced:
        carried = batch.column("kafka_version")
        # skip_nulls=False: a None among the replaced versions matches the events carrying none.
        taking = pc.is_in(carried, value_set=pa.array(replaced, pa.string()), skip_nulls=False)
        index = batch.schema.get_field_index("kafka_version")
        batch = batch.set_column(index, "kafka_version",
                                 pc.if_else(taking, pa.scalar(version, pa.string()), carried))
    return batch


def _with_handle_groups(batch: pa.RecordBatch, groups: dict[str | None, str]) -> pa.RecordBatch:
    """Fill the ungrouped client lines of a range of a file read in ranges (rare: a client log
    bigger than the split size), row by row as the in-process engine does."""
    rows = batch.to_pylist()
    filled = 0
    for row in rows:
        if handles.needs_group(row) and row["client"] in groups:
            handles.fill(row, groups[row["client"]])
            filled += 1
    return pa.RecordBatch.from_pylist(rows, schema=batch.schema) if filled else batch


def _fixes(planned: _Planned, offsets: dict[int, int]) -> dict[int, Fix]:
    return {unit: (offsets.get(unit, 0), *planned.versions.get(unit, ((), None)), planned.handle_groups.get(unit))
            for unit in set(planned.versions) | set(planned.handle_groups) | {u for u, o in offsets.items() if o}}


def _read_row(row: dict, options: ReadOptions) -> tuple[list[dict], dict]:
    """Read one unit row; (events, report). Never raises: failures become the report."""
    content = row["content"]
    if row["layout"] is None:  # a Hadoop file: detect here, where its bytes are
        if content[:4] == ZIP_MAGIC or row["name"].lower().endswith((".tar", ".tgz", ".tar.gz", ".tar.bz2",
                                                                      ".tar.xz", ".tar.zst")):
            return [], {"skipped": "bundles (.zip/.tar) are read from local paths only; "
                                   "unpack it on the cluster storage"}
        source = _BytesSource(name=row["name"], host=row["host"], size=row["size"], path=row["path"],
                              codec=codec_of(content[:8]), data=content)
        if options.base_date is None and not DATE_IN_NAME.search(row["name"]):
            # What the core takes from a local file's mtime for time-of-day-only layouts.
            options = replace(options, base_date=datetime.fromtimestamp(row["mtime"]).date().isoformat(),
                              base_date_is_last=True)
        kit = toolkit(options)
        detection, reason = detect_source(source, options, kit)
        if detection is None:
            return [], {"skipped": reason or "unreadable"}
        layout = unit_layout(detection, options, kit)
        container = detection.container.name if detection.container else None
        source.cluster = row.get("cluster") or detection.cluster_id   # --cluster first, as locally
        if source.cluster is None:
            source.clients = detection.clients
        warning = None if detection.known else UNKNOWN_LAYOUT
        start = row["start"] if source.codec == "plain" else 0
        if row["start"] and not start:
            warning = ("changed since the last run and compressed: read again whole "
                       "(the events of the earlier read stay in the table)")
        unit = Unit(source, layout, container, start)
    else:
        source = Source(name=row["name"], host=row["host"], size=row["size"], path=row["path"],
                        codec=row["codec"], bundle=row["bundle"], member=row["member"], data=content,
                        cluster=row.get("cluster"), clients=row.get("clients"))
        unit = Unit(source, row["layout"], row["container"], row["start"], row["end"], row["part"])
        warning = None
    result = read_unit(unit, options)
    report = {"stats": asdict(result.stats), "newlines": result.newlines, "start": unit.start}
    if warning:
        report["warning"] = warning
    events = result.events
    if unit.part == 0 and unit.end is None:  # the whole file (from where this run reads it)
        handles.resolve(events)
    else:
        handles.resolve(events, following=False)
        if any(e.get("library") for e in events):
            report["handles"] = handles.edges(events)  # the driver fills the rest (handles.carried)
    return events, report


_WHERE: dict = {}


def _where() -> dict:
    """The executor and Python this worker process reads on (for the accounting)."""
    if not _WHERE:
        _WHERE.update(executor=shipping.executor_id(), host=socket.gethostname(), python=sys.executable)
    return _WHERE


def _read_partition(rows: Iterator[dict], options: ReadOptions, shipment: dict) -> Iterator[pa.RecordBatch]:
    tune_for_reading()  # once per Python worker, as the CLI does for the in-process engine
    options = _install(shipment, options)
    schema = _output_schema()
    where = _where()
    for row in rows:
        started = time.perf_counter()
        try:
            events, report = _read_row(row, options)
        except Exception as exc:  # a bug must not kill a whole archive run: it is reported
            events, report = [], {"failed": f"{type(exc).__name__}: {exc}",
                                  "trace": traceback.format_exc(limit=6)}
        report["seconds"] = round(time.perf_counter() - started, 4)  # benchmarks read it
        report["worker"] = os.getpid()
        report["where"] = where
        for start in range(0, len(events), EVENT_BATCH_ROWS):
            yield _events_batch(events[start:start + EVENT_BATCH_ROWS], row["unit"], schema)
        yield _report_batch(row["unit"], report, schema)


def _raw_frame(spark: SparkSession, planned: _Planned, options: ReadOptions) -> DataFrame | None:
    """The read, as a DataFrame of packed events and report rows (``_output_ddl``).

    Local units travel in the closure of a ``spark.range`` with one row per task (the DataFrame
    API only: the same plan runs on a classic session and through Spark Connect); task ``i``
    reads bin ``i``. Hadoop files come from ``binaryFile`` with their content, and their unit
    rows (looked up by path) in the closure.
    """
    shipment = _shipment(options)
    ddl = _output_ddl()
    frames = []
    if planned.units:
        bins = _bins(planned.units, min(len(planned.units), planned.parallelism * 3))

        def read_bins(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            rows = (row for batch in batches for index in batch.column(0).to_pylist() for row in bins[index])
            return _read_partition(rows, options, shipment)

        frames.append(spark.range(0, len(bins), 1, len(bins)).mapInArrow(read_bins, ddl))
    if planned.remote:
        listed = {row["path"]: row for row in planned.remote}
        contents = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
                    .load([_glob_escaped(r["path"]) for r in planned.remote])
                    .select("path", "content"))

        def read_remote(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            rows = ({**listed[path], "content": content} for batch in batches
                    for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist())
                    if path in listed)
            return _read_partition(rows, options, shipment)

        frames.append(contents.mapInArrow(read_remote, ddl))
    if not frames:
        return None
    raw = frames[0]
    for frame in frames[1:]:
        raw = raw.unionByName(frame)
    return raw


# ---------------------------------------------------------------- the accounting (driver)

def _account(planned: _Planned, reports: list[tuple[int, str]]) -> dict[int, int]:
    """Fill the run stats from the unit reports; return each unit's line offset."""
    stats = planned.stats
    by_unit = {unit: json.loads(text) for unit, text in reports}
    per_file: dict[int, FileStats] = {}
    newlines: dict[tuple[int, int], int] = {}
    handle_edges: dict[int, dict[int, list]] = defaultdict(dict)  # stream -> part -> handles.edges
    stated: dict[int, str] = {}
    executors = {e["executor"]: e for e in stats.executors}
    for unit in sorted(by_unit):
        report = by_unit[unit]
        where = report.get("where")
        if where:
            entry = executors.setdefault(where["executor"], {**where, "units": 0})
            entry["units"] = entry.get("units", 0) + 1
        stream, name, part = planned.names[unit]
        if "skipped" in report:
            stats.skip(name, report["skipped"])
            continue
        if "failed" in report:
            stats.skip(name, f"internal error while reading ({report['failed']}); please report it")
            continue
        if "warning" in report:
            stats.warn(name, report["warning"])
        if part == 0 and report["start"] == 0:
            planned.bases[stream] = 0  # read again whole (a compressed file that changed)
        data = report["stats"]
        data["near_miss_samples"] = [NearMiss(**m) for m in data["near_miss_samples"]]
        file_stats = FileStats(**data)
        own = file_stats.kafka_version
        version, replaced = versions.for_later_range(stated.get(stream), own)
        if replaced:
            planned.versions[unit] = (replaced, stated[stream])
            file_stats.kafka_version = version
        if versions.is_stated(version):
            stated[stream] = version  # type: ignore[assignment]
        if file_stats.largest_jump_line:   # counted from the range's start: from the file's
            file_stats.largest_jump_line += planned.bases.get(stream, 0) + sum(
                newlines.get((stream, p), 0) for p in range(part))
        newlines[(stream, part)] = report["newlines"]
        if "handles" in report:
            handle_edges[stream][part] = report["handles"]
        planned.read.add(stream)
        if stream in per_file:
            per_file[stream].merge(file_stats)
        else:
            per_file[stream] = file_stats
            stats.files.append(file_stats)
    stats.executors = [e for _, e in sorted(executors.items()) if e.get("units")]
    _carry_handle_groups(planned, handle_edges)
    offsets = {}
    for unit, (stream, _, part) in planned.names.items():
        offsets[unit] = planned.bases.get(stream, 0) + sum(newlines.get((stream, p), 0) for p in range(part))
    for (stream, _), count in newlines.items():
        planned.lines[stream] = planned.lines.get(stream, planned.bases.get(stream, 0)) + count
    return offsets


def _carry_handle_groups(planned: _Planned, handle_edges: dict[int, dict[int, list]]) -> None:
    """For each file read in ranges, the group its ranges' ungrouped client lines take from the
    neighbouring ranges (the in-process engine resolves a file's ranges together)."""
    if not handle_edges:
        return
    units = {(stream, part): unit for unit, (stream, _, part) in planned.names.items()}
    for stream, by_part in handle_edges.items():
        parts = sorted(part for s, part in units if s == stream)
        fills = handles.carried([[tuple(edge) for edge in by_part.get(part, [])] for part in parts])
        for part, groups in zip(parts, fills):
            if groups:
                planned.handle_groups[units[(stream, part)]] = groups


# ---------------------------------------------------------------- public API

@dataclass
class SparkEvents:
    """The events of a run as a DataFrame (events schema exactly) and the run's accounting.

    ``frame`` is backed by a persisted intermediate; call ``release()`` when done with it.
    """

    frame: DataFrame | None
    stats: RunStats
    files: dict[str, dict] = field(default_factory=dict)  # file key -> {"size", "mtime", "lines"}
    _raw: DataFrame | None = None
    unit_seconds: list[float] = field(default_factory=list)  # each unit's reading time (benchmarks)

    def release(self) -> None:
        if self._raw is not None:
            self._raw.unpersist()


def events_frame(spark: SparkSession, inputs: list[str], options: ReadOptions | None = None,
                 select: Selection | None = None) -> SparkEvents:
    """Read the inputs on Spark; the events stay distributed (for Parquet output and analysis).

    ``select`` picks the files to read (and where to resume them): see ``Selection``.
    """
    options = options or ReadOptions()
    started = time.perf_counter()
    planned = _plan(spark, inputs, options, select)
    raw = _raw_frame(spark, planned, options)
    if raw is None:
        planned.stats.seconds = time.perf_counter() - started
        return SparkEvents(None, planned.stats, _files(planned))
    raw = raw.persist()
    reports = [(r[0], r[1]) for r in raw.where(F.col(REPORT_COLUMN).isNotNull())
               .select(UNIT_COLUMN, REPORT_COLUMN).collect()]
    fixes = _fixes(planned, _account(planned, reports))

    def unpack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for unit, packed in zip(batch.column(UNIT_COLUMN).to_pylist(), batch.column(EVENTS_COLUMN)):
                yield _unpacked(packed.as_buffer(), fixes.get(unit))

    events = (raw.where(F.col(EVENTS_COLUMN).isNotNull()).select(UNIT_COLUMN, EVENTS_COLUMN)
              .mapInArrow(unpack, spark_ddl()))
    planned.stats.seconds = time.perf_counter() - started
    seconds = [json.loads(text).get("seconds", 0.0) for _, text in reports]
    return SparkEvents(events, planned.stats, _files(planned), raw, seconds)


def _files(planned: _Planned) -> dict[str, dict]:
    """Per physical file read: size and mtime when planned, newlines read (one-stream files),
    and the names its events carry as ``source``."""
    names = {stream: name for stream, name, _ in planned.names.values()}
    files = {}
    for key, info in planned.files.items():
        if not any(stream in planned.read for stream in info["streams"]):
            continue  # skipped (empty, binary, unreadable): tried again next run
        lines = planned.lines.get(info["streams"][0]) if len(info["streams"]) == 1 else None
        files[key] = {"size": info["size"], "mtime": info["mtime"], "lines": lines,
                      "sources": sorted({names[s] for s in info["streams"] if s in names})}
    return files


def without_sources(frame: DataFrame, sources: list[str]) -> DataFrame:
    """The rows of an events table whose ``source`` is none of ``sources``."""
    return frame.where(~F.col("source").isin(sources)) if sources else frame


def collect_events(spark: SparkSession, inputs: list[str], options: ReadOptions | None = None,
                   order: str = "time") -> tuple[list[dict], RunStats]:
    """Read the inputs on Spark and bring the events back, for the events and analyze commands.

    order="time": the same list as ``engines.local.read_events``; order="input": the order in
    which ``engines.local.run`` streams them (file by file, line by line).
    """
    options = options or ReadOptions()
    started = time.perf_counter()
    planned = _plan(spark, inputs, options)
    raw = _raw_frame(spark, planned, options)
    if raw is None:
        planned.stats.seconds = time.perf_counter() - started
        return [], planned.stats
    table = raw.toArrow()
    units = table[UNIT_COLUMN].to_pylist()
    reports = [(u, r) for u, r in zip(units, table[REPORT_COLUMN].to_pylist()) if r is not None]
    fixes = _fixes(planned, _account(planned, reports))
    # A unit's packed batches arrive in file order, units in any order: input order first, then
    # (a stable sort) time, so that ties fall exactly as in the in-process engine.
    packs = sorted(((u, p) for u, p in zip(units, table[EVENTS_COLUMN]) if p.is_valid), key=lambda pair: pair[0])
    batches = [_unpacked(packed.as_buffer(), fixes.get(unit)) for unit, packed in packs]
    events = pa.Table.from_batches(batches, schema=arrow_schema()).to_pylist()
    for event in events:
        if event["attrs"] is not None:
            event["attrs"] = dict(event["attrs"])
    _order_times(planned, [(unit, batch.num_rows) for (unit, _), batch in zip(packs, batches)], events,
                 options.zone_of)
    if order == "time":
        events.sort(key=local.sort_key)
    planned.stats.seconds = time.perf_counter() - started
    return events, planned.stats



# ---------------------------------------------------------------- archive tables (batch)

def _order_times(planned: _Planned, sizes: list[tuple[int, int]], events: list[dict], zone_of) -> None:
    """The backward jumps of a file read in byte ranges, decided over the whole file as the
    in-process engine does (``clock.reorder``): each range decided them from its own records.
    ``sizes``: (unit, events) of each batch, in input order, as ``events`` holds them."""
    spans: dict[int, list[tuple[int, int]]] = {}
    at = 0
    for unit, count in sizes:
        spans.setdefault(planned.names[unit][0], []).append((at, at + count))
        at += count
    for stream, pieces in spans.items():
        if sum(1 for start, end in pieces if end > start) < 2:
            continue
        rows = [row for start, end in pieces for row in events[start:end]]
        if not clock.out_of_order(EventBatch(rows=rows).times()):
            continue
        name = planned.names[next(u for u, _ in sizes if planned.names[u][0] == stream)][1]
        stats = next((f for f in planned.stats.files if f.source == name), None)
        orders = clock.reorder(rows, zone_of)
        if stats is not None:
            clock.account(orders, stats)


def write_events(frame: DataFrame, target: str, by_host: bool = False,
                 replacing: DataFrame | None = None) -> int:
    """Append the events to a Parquet table partitioned by UTC ``date`` (and ``host``); the row
    count of ``frame``.

    ``replacing``: the rows of the existing table to keep when some of its files were read
    again (new packs): the partitions written are replaced by those rows plus ``frame``
    (dynamic partition overwrite), instead of appended to. The session must write
    TIMESTAMP_MICROS (``create_session`` sets it) for other readers to see UTC instants.
    """
    spark = frame.sparkSession
    session_zone = spark.conf.get("spark.sql.session.timeZone")
    # to_date() works in the session's zone; shifting by it first gives the UTC calendar day.
    dated = frame.withColumn("date", F.to_date(F.to_utc_timestamp(F.col("ts"), session_zone))).persist()
    partitions = ["date", "host"] if by_host else ["date"]
    try:
        count = dated.count()
        if replacing is not None:
            previous = spark.conf.get("spark.sql.sources.partitionOverwriteMode")
            spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
            try:
                (replacing.unionByName(dated, allowMissingColumns=True)
                 .write.mode("overwrite").partitionBy(*partitions).parquet(target))
            finally:
                spark.conf.set("spark.sql.sources.partitionOverwriteMode", previous)
        elif count:
            dated.write.mode("append").partitionBy(*partitions).parquet(target)
    finally:
        dated.unpersist()
    return count


@dataclass
class Diagnosis:
    """Per-group rebalances and findings as DataFrames (analysis.REBALANCE_COLUMNS / FINDING_COLUMNS)."""

    rebalances: DataFrame
    findings: DataFrame
    _raw: DataFrame | None = None

    def release(self) -> None:
        if self._raw is not None:
            self._raw.unpersist()


def diagnose_groups(events: DataFrame, config=None) -> Diagnosis:
    """Run the diagnosis of every group on the executors (``groupBy(group).applyInArrow``)
    with the rule code of ``analyze``: ``diagnosis.analyze_group`` on each group's events."""
    from .. import diagnosis
    from ..timeline import clusters

    config = config or diagnosis.AnalysisConfig()
    rebalance_type = pa.struct(list(diagnosis.arrow_schema(diagnosis.REBALANCE_COLUMNS)))
    finding_type = pa.struct(list(diagnosis.arrow_schema(diagnosis.FINDING_COLUMNS)))
    schema = pa.schema([("_kind", pa.string()), ("rebalance", rebalance_type), ("finding", finding_type)])
    ddl = (f"_kind STRING, rebalance STRUCT<{diagnosis.spark_ddl(diagnosis.REBALANCE_COLUMNS)}>, "
           f"finding STRUCT<{diagnosis.spark_ddl(diagnosis.FINDING_COLUMNS)}>")

    # Groups keyed by cluster (timeline/clusters.py), decided on the driver from what each file states.
    keys = (clusters.keying(tuple(r) for r in events.select("source", "cluster", "group").distinct().collect())
            if "cluster" in events.columns else clusters.Keying())   # (a table written before the column)

    def diagnose(table: pa.Table) -> pa.Table:
        rows = table.select(list(NAMES)).to_pylist()
        for row in rows:
            if row["attrs"] is not None:
                row["attrs"] = dict(row["attrs"])
        clusters.apply(rows, keys)
        by_group: dict[str, list[dict]] = {}
        for row in rows:   # one group.id, one group per cluster
            by_group.setdefault(row["group"], []).append(row)
        out = []
        for group_rows in by_group.values():
            rebalances, findings = diagnosis.analyze_group(group_rows, config)
            out += ([{"_kind": "rebalance", "rebalance": r, "finding": None} for r in rebalances]
                    + [{"_kind": "finding", "rebalance": None, "finding": f} for f in findings])
        return pa.Table.from_pylist(out, schema=schema)

    grouped = events.where(F.col("group").isNotNull()).groupBy("group")
    raw = grouped.applyInArrow(diagnose, ddl).persist()
    return Diagnosis(raw.where(F.col("_kind") == "rebalance").select("rebalance.*"),
                     raw.where(F.col("_kind") == "finding").select("finding.*"), raw)


def empty_diagnosis(spark: SparkSession) -> Diagnosis:
    from .. import diagnosis

    return Diagnosis(spark.createDataFrame([], diagnosis.spark_ddl(diagnosis.REBALANCE_COLUMNS)),
                     spark.createDataFrame([], diagnosis.spark_ddl(diagnosis.FINDING_COLUMNS)))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


__all__ = ["Cluster", "Diagnosis", "SparkEvents", "SparkUnavailable", "check_reachable", "collect_events",
           "create_session", "diagnose_groups", "empty_diagnosis", "environment_problem", "events_frame",
           "is_connect", "packs_digest", "parse_conf", "prepare", "session", "translated_errors",
           "without_sources", "write_events"]
