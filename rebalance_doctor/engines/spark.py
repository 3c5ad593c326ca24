"""The Spark engine: the same parsing core as the in-process engine, run on Spark executors.

The only module that imports pyspark. Library functions take a ``SparkSession``; only the
command line and the spark-submit entry point create one (``create_session``).

How a run goes:

1. The driver plans work units. Local (and shared) paths are planned like the in-process
   engine does (``engines.local.plan``: discovery, layout detection, large plain files cut into
   byte ranges on record boundaries). Hadoop URLs (``hdfs://``, ``s3a://``, ``abfss://``,
   ``file://`` ...) are listed with the ``binaryFile`` source without reading their content.
2. The units become a small DataFrame, one Spark partition per bin of units (bins balanced by
   bytes), and ``mapInArrow`` runs ``core.reader.read_unit`` on each unit inside the executors.
   Local units are opened by path, so file contents never travel through Arrow; Hadoop files
   are joined with their ``binaryFile`` content (read whole: codecs, multi-line records and
   exact line numbers work; Python cannot seek in a Hadoop stream, so they are not split).
3. Each unit yields its events plus one report row (its FileStats, the newlines it counted,
   or why it was skipped). The driver collects the small report rows, builds the run's
   accounting and the line offsets of later byte ranges, and applies those offsets.

Executors do not need the repository's patterns/ directory: the driver reads the pattern
files (shipped packs, layouts, prefixes, --packs) and ships their text in the task closure;
each Python worker writes them once to a temporary directory and points the core at it.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import os
import shutil
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Iterator
from urllib.parse import urlparse

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..core.options import ReadOptions
from ..core.paths import patterns_dir
from ..core.reader import _DATE_IN_NAME, Unit, detect_source, read_unit, toolkit
from ..core.schema import NAMES, arrow_schema, spark_ddl
from ..core.sources import NOT_LOGS, ZIP_MAGIC, Source, codec_of, infer_host, wrap_codec
from ..core.stats import FileStats, NearMiss, RunStats
from . import local
from .choose import is_remote

UNIT_COLUMN = "_unit"
REPORT_COLUMN = "_report"
UNITS_DDL = ("unit BIGINT, name STRING, host STRING, path STRING, size BIGINT, codec STRING, "
             "bundle STRING, member STRING, layout STRING, container STRING, start BIGINT, "
             "end BIGINT, part INT, mtime DOUBLE, content BINARY")
EVENT_BATCH_ROWS = 8192


def create_session(master: str | None = None, conf: dict[str, str] | None = None,
                   app_name: str = "rebalance-doctor") -> SparkSession:
    """A session for the command line: UTC session time (dates of partitions are UTC days),
    Arrow batches, Parquet timestamps that pyarrow reads back as UTC instants."""
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.ui.showConsoleProgress": "false",
    }
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def session(master: str | None = None, conf: dict[str, str] | None = None) -> Iterator[SparkSession]:
    """A session for one command: an already active one (spark-submit, a notebook, tests) is used
    and left running; one started here is stopped at the end."""
    active = SparkSession.getActiveSession()
    spark = active or create_session(master, conf)
    try:
        yield spark
    finally:
        if active is None:
            spark.stop()


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

@dataclass
class _Planned:
    units: list[dict]                # rows of the units DataFrame
    remote: list[dict]               # rows for Hadoop files (content joined in on the executors)
    remote_roots: list[str]
    stats: RunStats
    names: dict[int, tuple[str, int]]  # unit id -> (source name, part)


def _plan(spark: SparkSession, inputs: list[str], options: ReadOptions) -> _Planned:
    local_inputs = [p for p in inputs if not is_remote(p)]
    remote_inputs = [p for p in inputs if is_remote(p)]
    cores = max(spark.sparkContext.defaultParallelism, 1)
    # Cut big plain files so that every core has work: the same rule as --jobs N locally.
    planned = local.plan(local_inputs, replace(options, jobs=max(options.jobs, cores)))
    stats = planned.stats
    stats.inputs = list(inputs)
    stats.engine = "spark"
    stats.jobs = cores
    units, names = [], {}
    for number, unit in enumerate(planned.units):
        s = unit.source
        units.append({"unit": number, "name": s.name, "host": s.host, "path": s.path, "size": s.size,
                      "codec": s.codec, "bundle": s.bundle, "member": s.member, "layout": unit.layout,
                      "container": unit.container, "start": unit.start, "end": unit.end,
                      "part": unit.part, "mtime": None, "content": s.data})
        names[number] = (s.name, unit.part)
    remote = []
    for root in remote_inputs:
        for path, size, mtime in _list_hadoop(spark, root, stats):
            number = len(units) + len(remote)
            relative = _relative_url(path, root)
            host = options.host or infer_host(relative, Path(urlparse(root).path or "/"))
            remote.append({"unit": number, "name": relative, "host": host, "path": path, "size": size,
                           "codec": None, "bundle": None, "member": None, "layout": None,
                           "container": None, "start": 0, "end": None, "part": 0, "mtime": mtime,
                           "content": None})
            names[number] = (relative, 0)
    return _Planned(units, remote, remote_inputs, stats, names)


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


def _relative_url(path: str, root: str) -> str:
    """The display name of a Hadoop file: its path below the input root (like local inputs)."""
    file_path = PurePosixPath(urlparse(path).path)
    root_path = PurePosixPath(urlparse(root).path or "/")
    try:
        relative = file_path.relative_to(root_path).as_posix()
    except ValueError:
        return path
    return relative if relative != "." else file_path.name


def _bins(rows: list[dict], count: int) -> list[list[dict]]:
    """Units dealt into ``count`` bins, biggest first into the lightest bin (balanced by bytes)."""
    bins: list[list[dict]] = [[] for _ in range(count)]
    loads = [0] * count
    for row in sorted(rows, key=lambda r: -((r["end"] or r["size"]) - r["start"])):
        lightest = loads.index(min(loads))
        bins[lightest].append(row)
        loads[lightest] += (row["end"] or row["size"]) - row["start"] + 1
    return [b for b in bins if b]


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


_INSTALLED: dict[str, ReadOptions] = {}


def _install(shipment: dict, options: ReadOptions) -> ReadOptions:
    """Write the shipped pattern files once per worker process; options pointing at them."""
    key = hashlib.sha256(json.dumps(shipment, sort_keys=True).encode()).hexdigest()
    installed = _INSTALLED.get(key)
    if installed is not None:
        return installed
    root = Path(tempfile.mkdtemp(prefix="rebalance-doctor-patterns-"))
    atexit.register(shutil.rmtree, root, True)
    for relative, text in shipment["patterns"].items():
        target = root / "patterns" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    packs = []
    for number, files in enumerate(shipment["extra"]):
        if files is None:
            packs.append(Path(shipment["missing"][number]))
            continue
        directory = root / f"extra-{number}"
        directory.mkdir()
        for name, text in files.items():
            (directory / name).write_text(text, encoding="utf-8")
        packs.append(directory)
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
    return arrow_schema().append(pa.field(UNIT_COLUMN, pa.int64())).append(pa.field(REPORT_COLUMN, pa.string()))


def _output_ddl() -> str:
    return f"{spark_ddl()}, `{UNIT_COLUMN}` BIGINT, `{REPORT_COLUMN}` STRING"


def _to_batch(events: list[dict], unit: int, schema: pa.Schema) -> pa.RecordBatch:
    columns = {name: [e.get(name) for e in events] for name in NAMES}
    columns["attrs"] = [list(a.items()) if a else None for a in columns["attrs"]]
    columns[UNIT_COLUMN] = [unit] * len(events)
    columns[REPORT_COLUMN] = [None] * len(events)
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _report_batch(unit: int, report: dict, schema: pa.Schema) -> pa.RecordBatch:
    columns = {name: [None] for name in NAMES}
    columns[UNIT_COLUMN] = [unit]
    columns[REPORT_COLUMN] = [json.dumps(report)]
    return pa.RecordBatch.from_pydict(columns, schema=schema)


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
        if options.base_date is None and not _DATE_IN_NAME.search(row["name"]):
            # What the core takes from a local file's mtime for time-of-day-only layouts.
            options = replace(options, base_date=datetime.fromtimestamp(row["mtime"]).date().isoformat())
        kit = toolkit(options)
        detection, reason = detect_source(source, options, kit)
        if detection is None:
            return [], {"skipped": reason or "unreadable"}
        layout = detection.layout.pattern if (options.layout and detection.layout.pattern
                                              and not kit.layouts.by_name(detection.layout.name)) \
            else detection.layout.name
        container = detection.container.name if detection.container else None
        warning = None if detection.known else ("layout not recognised: read with the generic layout "
                                                "(whole line as message); give --layout to do better")
        unit = Unit(source, layout, container)
    else:
        source = Source(name=row["name"], host=row["host"], size=row["size"], path=row["path"],
                        codec=row["codec"], bundle=row["bundle"], member=row["member"], data=content)
        unit = Unit(source, row["layout"], row["container"], row["start"], row["end"], row["part"])
        warning = None
    result = read_unit(unit, options)
    report = {"stats": asdict(result.stats), "newlines": result.newlines}
    if warning:
        report["warning"] = warning
    return result.events, report


def _read_partition(batches: Iterator[pa.RecordBatch], options: ReadOptions, shipment: dict
                    ) -> Iterator[pa.RecordBatch]:
    options = _install(shipment, options)
    schema = _output_schema()
    for batch in batches:
        for row in batch.to_pylist():
            try:
                events, report = _read_row(row, options)
            except Exception as exc:  # a bug must not kill a whole archive run: it is reported
                events, report = [], {"failed": f"{type(exc).__name__}: {exc}",
                                      "trace": traceback.format_exc(limit=6)}
            for start in range(0, len(events), EVENT_BATCH_ROWS):
                yield _to_batch(events[start:start + EVENT_BATCH_ROWS], row["unit"], schema)
            yield _report_batch(row["unit"], report, schema)


def _raw_frame(spark: SparkSession, planned: _Planned, options: ReadOptions) -> DataFrame | None:
    shipment = _shipment(options)
    ddl = _output_ddl()

    def read(batches):
        return _read_partition(batches, options, shipment)

    frames = []
    if planned.units:
        count = min(len(planned.units), max(spark.sparkContext.defaultParallelism, 1) * 3)
        bins = _bins(planned.units, count)
        rdd = spark.sparkContext.parallelize(bins, len(bins)).flatMap(lambda b: b)
        units = spark.createDataFrame(rdd, UNITS_DDL)
        frames.append(units.mapInArrow(read, ddl))
    if planned.remote:
        listed = spark.createDataFrame(planned.remote, UNITS_DDL).drop("content")
        contents = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
                    .load(planned.remote_roots)
                    .select("path", "content"))
        joined = contents.join(F.broadcast(listed), "path").select(*[c.split()[0] for c in UNITS_DDL.split(", ")])
        frames.append(joined.mapInArrow(read, ddl))
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
    per_file: dict[str, FileStats] = {}
    newlines: dict[tuple[str, int], int] = {}
    for unit in sorted(by_unit):
        report = by_unit[unit]
        name, part = planned.names[unit]
        if "skipped" in report:
            stats.skip(name, report["skipped"])
            continue
        if "failed" in report:
            stats.skip(name, f"internal error while reading ({report['failed']}); please report it")
            continue
        if "warning" in report:
            stats.warn(name, report["warning"])
        data = report["stats"]
        data["near_miss_samples"] = [NearMiss(**m) for m in data["near_miss_samples"]]
        file_stats = FileStats(**data)
        newlines[(name, part)] = report["newlines"]
        if name in per_file:
            per_file[name].merge(file_stats)
        else:
            per_file[name] = file_stats
            stats.files.append(file_stats)
    offsets = {}
    for unit, (name, part) in planned.names.items():
        offsets[unit] = sum(newlines.get((name, p), 0) for p in range(part)) if part else 0
    return offsets


# ---------------------------------------------------------------- public API

@dataclass
class SparkEvents:
    """The events of a run as a DataFrame (events schema exactly) and the run's accounting.

    ``frame`` is backed by a persisted intermediate; call ``release()`` when done with it.
    """

    frame: DataFrame | None
    stats: RunStats
    _raw: DataFrame | None = None

    def release(self) -> None:
        if self._raw is not None:
            self._raw.unpersist()


def events_frame(spark: SparkSession, inputs: list[str], options: ReadOptions | None = None) -> SparkEvents:
    """Read the inputs on Spark; the events stay distributed (for Parquet output and analysis)."""
    options = options or ReadOptions()
    started = time.perf_counter()
    planned = _plan(spark, inputs, options)
    raw = _raw_frame(spark, planned, options)
    if raw is None:
        planned.stats.seconds = time.perf_counter() - started
        return SparkEvents(None, planned.stats)
    raw = raw.persist()
    reports = [(r[0], r[1]) for r in raw.where(F.col(REPORT_COLUMN).isNotNull())
               .select(UNIT_COLUMN, REPORT_COLUMN).collect()]
    offsets = _account(planned, reports)
    events = raw.where(F.col(REPORT_COLUMN).isNull())
    shifted = {u: o for u, o in offsets.items() if o}
    if shifted:
        table = spark.createDataFrame(sorted(shifted.items()), f"{UNIT_COLUMN} BIGINT, _offset BIGINT")
        events = (events.join(F.broadcast(table), UNIT_COLUMN, "left")
                  .withColumn("line", F.col("line") + F.coalesce(F.col("_offset"), F.lit(0))))
    planned.stats.seconds = time.perf_counter() - started
    return SparkEvents(events.select(*NAMES), planned.stats, raw)


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
    rows = table.to_pylist()
    reports = [(r[UNIT_COLUMN], r[REPORT_COLUMN]) for r in rows if r[REPORT_COLUMN] is not None]
    offsets = _account(planned, reports)
    events, units = [], []
    for row in rows:
        if row[REPORT_COLUMN] is not None:
            continue
        units.append(row[UNIT_COLUMN])
        offset = offsets.get(row[UNIT_COLUMN], 0)
        event = {name: row[name] for name in NAMES}
        event["line"] += offset
        if event["attrs"] is not None:
            event["attrs"] = dict(event["attrs"])
        events.append(event)
    if order == "time":
        events.sort(key=local.sort_key)
    else:  # rows of one unit arrive in file order; units arrive in any order
        events = [e for _, e in sorted(zip(units, events), key=lambda pair: pair[0])]
    planned.stats.seconds = time.perf_counter() - started
    return events, planned.stats


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


__all__ = ["SparkEvents", "collect_events", "create_session", "events_frame", "parse_conf", "session"]
