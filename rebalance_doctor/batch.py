"""The archive job: logs in, Parquet tables out, incrementally.

``run_batch`` reads the inputs on Spark and writes into one output directory:

- ``events/``      the events table (core/schema.py columns), Parquet, partitioned by the UTC
                   ``date`` of each event (``date=__HIVE_DEFAULT_PARTITION__`` for untimed
                   events) and optionally by ``host``; each run appends.
- ``rebalances/``  the rebuilt rebalances (analysis.REBALANCE_COLUMNS), Parquet.
- ``findings/``    the diagnosis (analysis.FINDING_COLUMNS), Parquet.
- ``manifest/``    every file processed so far (a Parquet table: each run appends a row per
                   file it read): size, mtime, lines read, fingerprints, and what produced its
                   events (the packs' versions and content hash, the events schema's).
- ``runs/``        one row per run (Parquet): when, what it read, its summary as JSON.
- ``summary.json`` this run's summary (also printed by the command), when ``--out`` is local.

Everything is read and written through the DataFrame API, so the job runs the same on a classic
session and through Spark Connect, with ``--out`` a local path or any Hadoop URL.

A re-run reads only files that are new or changed since the manifest was written: a plain file
that grew is read from where the last run stopped (its line numbers continue); a compressed or
bundled file that changed is read again whole (and says so in the summary). Files whose events
came from other packs (another version or content) or another events schema are read again
whole, and their earlier events are replaced in the partitions they are in (dynamic partition
overwrite): the summary lists them. A new column of the events schema is added compatibly: the
earlier Parquet files lack it (null when read with ``mergeSchema``), the manifest says which
schema each file's events have, and a table with a column the new schema changes or lacks is
refused, never mixed. The diagnosis needs each group's whole history, so rebalances and
findings are rebuilt from the full events table on every run that added events: per group,
distributed, with the same rule code as ``analyze`` (``diagnosis.analyze_group``).

Library code: it takes a SparkSession and raises; the command line turns errors into exit codes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .core.options import ReadOptions
from .engines import spark as spark_engine
from .engines.choose import is_remote

LEGACY_MANIFEST = "manifest.json"  # before the manifest was a table (read once, then superseded)
SUMMARY = "summary.json"
EVENTS_DIR, REBALANCES_DIR, FINDINGS_DIR = "events", "rebalances", "findings"
MANIFEST_DIR, RUNS_DIR = "manifest", "runs"
MANIFEST_DDL = ("key STRING, size BIGINT, mtime DOUBLE, lines BIGINT, head STRING, tail STRING, "
                "processed STRING, run BIGINT, packs STRING, packs_digest STRING, `schema` STRING, "
                "sources ARRAY<STRING>")
RUNS_DDL = ("run BIGINT, at STRING, inputs ARRAY<STRING>, files BIGINT, events BIGINT, seconds DOUBLE, "
            "packs STRING, packs_digest STRING, `schema` STRING, summary STRING")


def schema_digest() -> str:
    """The events schema a table's rows have (core/schema.py's columns and types), as a short hash."""
    return hashlib.sha256(spark_engine.spark_ddl().encode()).hexdigest()[:12]


class BatchError(ValueError):
    pass


@dataclass
class Manifest:
    """Files processed by earlier runs: key (absolute path or URL) -> size, mtime, lines,
    fingerprints, and what produced its events (packs, packs_digest, schema)."""

    files: dict[str, dict] = field(default_factory=dict)
    runs: int = 0
    packs: dict[str, str] = field(default_factory=dict)   # this run's
    digest: str = ""                                      # this run's packs_digest
    schema: str = ""                                      # this run's schema_digest
    decisions: dict[str, int] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)   # read again whole: earlier events stay
    outdated: list[str] = field(default_factory=list)  # read again whole: earlier events replaced

    @classmethod
    def load(cls, out: "OutputDir") -> "Manifest":
        table = out.read_table(MANIFEST_DIR)
        if table is None:
            return cls._legacy(out)
        try:
            rows = table.select(*[c.split()[0].strip("`") for c in MANIFEST_DDL.split(", ")]).toArrow().to_pylist()
        except Exception as exc:
            raise BatchError(f"{out.child(MANIFEST_DIR)}: not a rebalance-doctor manifest ({_first_line(exc)}); "
                             f"use a new --out directory or remove it") from None
        files: dict[str, dict] = {}
        for row in sorted(rows, key=lambda r: r["run"]):
            row["packs"] = json.loads(row["packs"] or "{}")
            files[row.pop("key")] = row
        runs = out.read_table(RUNS_DIR)
        return cls(files, runs.count() if runs is not None else max((f["run"] for f in files.values()), default=0))

    @classmethod
    def _legacy(cls, out: "OutputDir") -> "Manifest":
        """A manifest.json of an earlier version (local --out only): its files, with the packs and
        schema that produced them unrecorded (taken as this run's)."""
        if out.remote:
            return cls()
        path = Path(out.child(LEGACY_MANIFEST))
        if not path.is_file():
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls({k: {**v, "packs": {}, "packs_digest": None, "schema": None} for k, v in data["files"].items()},
                       len(data.get("runs", [])))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BatchError(f"{path}: not a rebalance-doctor manifest ({exc}); "
                             f"use a new --out directory or remove it") from exc

    def select(self, key: str, size: int, mtime: float) -> tuple[int, int] | None:
        """What to read of a file (see engines.spark.Selection): None when already processed.

        Counts its decisions in ``self.decisions`` (new, appended, changed, outdated, unchanged).
        """
        seen = self.files.get(key)
        if seen is None:
            return self._decide("new", (0, 0))
        if self._outdated(seen):
            self.outdated.append(key)
            return self._decide("outdated", (0, 0))
        if seen["size"] == size and seen["mtime"] == mtime:
            return self._decide("unchanged", None)
        if size == seen["size"] and _same(seen, key, size):
            return self._decide("unchanged", None)   # touched or copied without its mtime
        if size > seen["size"] and seen.get("lines") is not None and _same(seen, key, seen["size"], tail=False):
            return self._decide("appended", (seen["size"], seen["lines"]))
        self.changed.append(key)
        return self._decide("changed", (0, 0))

    def _decide(self, kind: str, decision):
        self.decisions[kind] = self.decisions.get(kind, 0) + 1
        return decision

    def stale(self) -> list[str]:
        """Files recorded with other packs or schema that this run did not read again (gone from
        the inputs): their events stay as those packs read them."""
        return sorted(k for k, f in self.files.items() if self._outdated(f) and k not in self.outdated)

    def _outdated(self, seen: dict) -> bool:
        """Read by other packs or into another events schema than this run's (None: recorded
        before either was, by a manifest.json; taken as this run's)."""
        return bool(self.digest) and (seen.get("packs_digest") not in (None, self.digest)
                                      or seen.get("schema") not in (None, self.schema))


FINGERPRINT_BYTES = 64 << 10


def _is_url(key: str) -> bool:
    """Manifest keys of Hadoop files are URLs as Hadoop lists them (``file:/x``, ``s3a://b/x``)."""
    return bool(_URL_KEY.match(key))


_URL_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")  # two letters at least: not a drive letter


def fingerprint(key: str, size: int) -> dict | None:
    """Hashes of the first and last 64 KiB below ``size`` of a local file (None for URLs)."""
    if _is_url(key):
        return None
    try:
        with open(key, "rb") as handle:
            head = handle.read(min(size, FINGERPRINT_BYTES))
            handle.seek(max(size - FINGERPRINT_BYTES, 0))
            tail = handle.read(min(size, FINGERPRINT_BYTES))
    except OSError:
        return None
    return {"head": hashlib.sha1(head).hexdigest(), "tail": hashlib.sha1(tail).hexdigest()}


def _same(seen: dict, key: str, size: int, tail: bool = True) -> bool:
    """Whether the file's first ``size`` bytes still look like what was processed.

    Hadoop files are not fingerprinted (the driver cannot read them cheaply): one that grew is
    taken as appended to, one of the same size with a new mtime as changed.
    """
    if _is_url(key):
        return not tail
    if not seen.get("head"):
        return False
    now = fingerprint(key, size)
    if now is None or now["head"] != seen["head"]:
        return False
    return not tail or now["tail"] == seen.get("tail")


class OutputDir:
    """The output directory: a local path or a Hadoop URL (hdfs://, s3a://, abfss://, ...).

    Its tables are read and written through Spark (on a Connect server's side too); only a
    local directory is checked and gets summary.json from the driver.
    """

    def __init__(self, spark, location: str | Path):
        self.spark = spark
        self.location = str(location)
        self.remote = is_remote(self.location)

    def child(self, name: str) -> str:
        return f"{self.location.rstrip('/')}/{name}" if self.remote else str(Path(self.location) / name)

    def prepare(self) -> None:
        if self.remote:
            return
        path = Path(self.location)
        if path.exists() and not path.is_dir():
            raise BatchError(f"--out {path} exists and is not a directory")

    def read_table(self, name: str):
        """The Parquet table ``name`` (all columns, schemas merged), or None when there is none."""
        try:
            frame = self.spark.read.option("mergeSchema", "true").parquet(self.child(name))
            frame.schema  # Spark Connect resolves lazily: make a missing path fail here
            return frame
        except Exception as exc:
            text = str(exc)
            if "PATH_NOT_FOUND" in text or "Path does not exist" in text or "UNABLE_TO_INFER_SCHEMA" in text:
                return None
            raise

    def append_table(self, name: str, rows: list[dict], ddl: str) -> None:
        if rows:
            self.spark.createDataFrame(rows, ddl).coalesce(1).write.mode("append").parquet(self.child(name))

    def write_summary(self, text: str) -> None:
        if self.remote:
            return
        path = Path(self.child(SUMMARY))
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)  # a crash leaves the old file, never half a new one


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _check_schema(existing, out: OutputDir) -> list[str]:
    """The events columns this version adds to an existing table; BatchError when a column it
    has is missing here or has another type (such a table is never appended to)."""
    from .core.schema import NAMES

    written = {f.name: f.dataType.simpleString() for f in existing.schema.fields if f.name not in ("date",)}
    ours = {f.name: f.dataType.simpleString()
            for f in existing.sparkSession.createDataFrame([], spark_engine.spark_ddl()).schema.fields}
    if "host" in written and "host" not in ours:
        written.pop("host")
    clashes = [f"{name} ({kind} there, {ours.get(name, 'absent')} here)" for name, kind in written.items()
               if ours.get(name) != kind]
    if clashes:
        raise BatchError(f"{out.child(EVENTS_DIR)}: its events have columns this version writes differently: "
                         f"{', '.join(clashes)}; write to a new --out directory")
    return [name for name in NAMES if name not in written]


def run_batch(spark, inputs: list[str], out_dir: str | Path, options: ReadOptions | None = None,
              config=None, by_host: bool = False, progress=None) -> dict:
    """Read what is new under the inputs, append its events, rebuild the diagnosis; the summary.

    ``progress``: called with a short line at each step (the command prints them on stderr).
    """
    from .rules.config import AnalysisConfig

    options = options or ReadOptions()
    config = config or AnalysisConfig()
    say = progress or (lambda message: None)
    spark_engine.prepare(spark)  # no executor or a missing dependency: fail before any output
    out = OutputDir(spark, out_dir)
    out.prepare()
    manifest = Manifest.load(out)
    manifest.digest, manifest.schema = spark_engine.packs_digest(options), schema_digest()
    started = time.perf_counter()
    say(f"planning: {len(manifest.files):,} files known from {manifest.runs} earlier runs")
    result = spark_engine.events_frame(spark, inputs, options, select=manifest.select)
    stats = result.stats
    manifest.packs = dict(stats.packs)
    written, added_columns = 0, []
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    # pyarrow and every other Parquet reader read TIMESTAMP_MICROS as UTC instants (INT96 is legacy).
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    try:
        existing = out.read_table(EVENTS_DIR)
        if existing is not None:
            added_columns = _check_schema(existing, out)
        if result.frame is not None:
            say(f"reading {stats.files_read:,} files on Spark and writing their events")
            replacing = None
            if existing is not None and manifest.outdated:
                sources = sorted({name for key in manifest.outdated for name in manifest.files[key].get("sources") or []})
                replacing = spark_engine.without_sources(existing, sources)
            written = spark_engine.write_events(result.frame, out.child(EVENTS_DIR), by_host, replacing=replacing)
        result.release()
        if written or manifest.outdated or out.read_table(REBALANCES_DIR) is None:
            say("diagnosing every group from the whole events table")
            diagnosis = _diagnose(spark, out, config)
        else:
            diagnosis = _read_diagnosis(spark, out)
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", previous)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    run_number = manifest.runs + 1
    rows = []
    for key, info in result.files.items():
        entry = {**info, **(fingerprint(key, info["size"]) or {"head": None, "tail": None}), "processed": now,
                 "run": run_number, "packs": json.dumps(manifest.packs, sort_keys=True),
                 "packs_digest": manifest.digest, "schema": manifest.schema}
        rows.append({"key": key, **entry})
        manifest.files[key] = {**entry, "packs": manifest.packs}
    out.append_table(MANIFEST_DIR, rows, MANIFEST_DDL)
    run = {"at": now, "inputs": list(inputs), "files": len(result.files), "events": written,
           "seconds": round(time.perf_counter() - started, 3)}
    stale = manifest.stale()
    summary = {
        "out": out.location, "run": run,
        "read": {k: v for k, v in stats.to_dict().items() if k not in ("files", "inputs")},
        "files_read": [f.source for f in stats.files],
        "files": dict(sorted(manifest.decisions.items())),
        "changed": manifest.changed,
        "outdated": manifest.outdated,
        "stale": stale,
        "columns_added": added_columns,
        "packs": manifest.packs, "packs_digest": manifest.digest, "schema": manifest.schema,
        "table": diagnosis,
    }
    text = json.dumps(summary, indent=2, default=str) + "\n"
    out.append_table(RUNS_DIR, [{"run": run_number, **run, "packs": json.dumps(manifest.packs, sort_keys=True),
                                 "packs_digest": manifest.digest, "schema": manifest.schema, "summary": text}],
                     RUNS_DDL)
    out.write_summary(text)
    summary["stats"] = stats
    return summary


def _diagnose(spark, out: OutputDir, config) -> dict:
    """Rebalances and findings of every group, rebuilt from the whole events table."""
    events = out.read_table(EVENTS_DIR)
    diagnosis = (spark_engine.diagnose_groups(events, config) if events is not None
                 else spark_engine.empty_diagnosis(spark))
    try:
        diagnosis.rebalances.write.mode("overwrite").parquet(out.child(REBALANCES_DIR))
        diagnosis.findings.write.mode("overwrite").parquet(out.child(FINDINGS_DIR))
    finally:
        diagnosis.release()
    return _read_diagnosis(spark, out)


def _read_diagnosis(spark, out: OutputDir) -> dict:
    """What the tables hold now (the whole archive, not only this run)."""
    events = out.read_table(EVENTS_DIR)
    rebalances = out.read_table(REBALANCES_DIR)
    findings = out.read_table(FINDINGS_DIR)
    severity = {r["severity"]: r["count"] for r in findings.groupBy("severity").count().collect()}
    order = {"critical": 0, "warning": 1, "info": 2}
    # Through Arrow: timestamps stay UTC instants (Row objects would turn them into local time).
    keyed = "cluster" in findings.columns   # (tables written before the column: none)
    top = sorted(findings.select("group", *(["cluster"] if keyed else []), "rule", "severity", "title", "start")
                 .toArrow().to_pylist(),
                 key=lambda r: (order.get(r["severity"], 3), str(r["start"]), r["group"] or ""))[:20]
    return {
        "events": events.count() if events is not None else 0,
        "groups": events.where("`group` IS NOT NULL").select("group").distinct().count() if events is not None else 0,
        # The clusters the groups are keyed by (--cluster's NAMEs, else the ids the logs state): none when one or none.
        "clusters": sorted(r["cluster"] for r in rebalances.select("cluster").union(findings.select("cluster"))
                           .where("cluster IS NOT NULL").distinct().collect())
        if keyed and "cluster" in rebalances.columns else [],
        "rebalances": rebalances.count(),
        "findings": findings.count(),
        "by_severity": dict(sorted(severity.items(), key=lambda kv: order.get(kv[0], 3))),
        "top": [{"group": r["group"], "cluster": r.get("cluster"), "rule": r["rule"], "severity": r["severity"], "title": r["title"],
                 "start": r["start"].isoformat() if r["start"] else None} for r in top],
    }


__all__ = ["BatchError", "Manifest", "OutputDir", "run_batch"]
