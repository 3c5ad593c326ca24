"""The events of a run on Spark: as a DataFrame, collected to the driver, or appended to a Parquet table."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ...core.options import ReadOptions
from ...core.schema import arrow_schema, spark_ddl
from ...core.stats import RunStats
from .. import local
from .accounting import _account, _files, _fixes, _order_times
from .execution import _raw_frame
from .packing import EVENTS_COLUMN, REPORT_COLUMN, UNIT_COLUMN, _unpacked
from .plan import Selection, _plan


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

    # One unpacking task per core, not per bin: unpacking takes milliseconds, and a Python task's
    # fixed cost (its worker's round trip) was most of this job (docs/performance.md, issue 33).
    events = (raw.where(F.col(EVENTS_COLUMN).isNotNull()).select(UNIT_COLUMN, EVENTS_COLUMN)
              .coalesce(planned.parallelism).mapInArrow(unpack, spark_ddl()))
    planned.stats.seconds = time.perf_counter() - started
    seconds = [json.loads(text).get("seconds", 0.0) for _, text in reports]
    return SparkEvents(events, planned.stats, _files(planned), raw, seconds)


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
