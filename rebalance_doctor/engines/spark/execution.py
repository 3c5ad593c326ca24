"""The read on the executors: each unit read by the parsing core inside ``mapInArrow``."""

from __future__ import annotations

import io
import os
import socket
import sys
import time
import traceback
from dataclasses import asdict, replace
from datetime import datetime
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ...core import clusterid, handles
from ...core.options import ReadOptions
from ...core.process import tune_for_reading
from ...core.reader import DATE_IN_NAME, UNKNOWN_LAYOUT, Unit, detect_source, read_unit, toolkit, unit_layout
from ...core.sources import ZIP_MAGIC, Source, codec_of, wrap_codec
from .. import shipping
from .packing import EVENT_BATCH_ROWS, _events_batch, _output_ddl, _output_schema, _report_batch
from .plan import _bins, _glob_escaped, _Planned
from .shipment import _install, _shipment


class _BytesSource(Source):
    """A Hadoop file whose bytes came with the task (binaryFile content)."""

    def open(self):
        return wrap_codec(io.BytesIO(self.data), self.codec)


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
        named_id = clusterid.renamed(row.get("cluster"), detection.cluster_id)
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
        named_id = row.get("named_id")
    result = read_unit(unit, options)
    if named_id:      # --cluster NAME's file states this id: the id is NAME (as engines/local.py says it)
        result.stats.cluster_id, result.stats.cluster_name = named_id, source.cluster
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
