"""The session's executors: the package shipped to them and their Python probed, once per session."""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .. import shipping
from ..choose import SparkUnavailable
from .errors import RECIPE
from .sessions import is_connect


# How long the first job waits for an executor before saying none came (a worker that never
# registers, a cluster without free cores): Spark itself would wait for ever.
EXECUTOR_WAIT_KEY = "spark.rebalanceDoctor.executorWait"
EXECUTOR_WAIT_DEFAULT = "120s"

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
