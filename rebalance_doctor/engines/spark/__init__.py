"""The Spark engine: the same parsing core as the in-process engine, run on Spark executors.

The only package that imports pyspark. Library functions take a ``SparkSession``; only the
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

One concept per module, in the order a run uses them: ``sessions`` (create, reach, stop),
``errors`` (the environment's failures as one line), ``cluster`` (ship the package, probe the
executors), ``plan`` (work units and bins, on the driver), ``shipment`` (the pattern files, to
the executors), ``execution`` (the read, on the executors), ``packing`` (the packed events and
their fixes), ``accounting`` (the unit reports into the run's stats, on the driver), ``events``
(the public reads and the archive table) and ``diagnosis`` (the rules per group, on the
executors). This package's namespace is the public API; callers import it, not the modules.
"""

from __future__ import annotations

from ..choose import SparkUnavailable
from .cluster import Cluster, prepare
from .diagnosis import Diagnosis, diagnose_groups, empty_diagnosis
from .errors import environment_problem, translated_errors
from .events import SparkEvents, collect_events, events_frame, without_sources, write_events
from .packing import Fix, _events_batch, _output_schema, _unpacked
from .plan import Selection, _plan, file_key
from .sessions import check_reachable, create_session, is_connect, parse_conf, session
from .shipment import packs_digest
# Re-exported for callers that name the events schema through the engine (batch's schema digest).
from ...core.schema import spark_ddl

__all__ = ["Cluster", "Diagnosis", "SparkEvents", "SparkUnavailable", "check_reachable", "collect_events",
           "create_session", "diagnose_groups", "empty_diagnosis", "environment_problem", "events_frame",
           "is_connect", "packs_digest", "parse_conf", "prepare", "session", "translated_errors",
           "without_sources", "write_events"]
