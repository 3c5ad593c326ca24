"""The archive job: logs in, Parquet tables out, incrementally.

``run_batch`` reads the inputs on Spark and writes into one output directory:

- ``events/``      the events table (core/schema.py columns), Parquet, partitioned by the UTC
                   ``date`` of each event (``date=__HIVE_DEFAULT_PARTITION__`` for untimed
                   events) and optionally by ``host``; each run appends.
- ``rebalances/``  the rebuilt rebalances (analysis.REBALANCE_COLUMNS), Parquet.
- ``findings/``    the diagnosis (analysis.FINDING_COLUMNS), Parquet.
- ``summary.json`` what this run read, skipped and found (also printed by the command).
- ``manifest.json`` every file processed so far, with its size, mtime and the lines read.

A re-run reads only files that are new or changed since the manifest was written: a plain file
that grew is read from where the last run stopped (its line numbers continue); a compressed or
bundled file that changed is read again whole (and says so in the summary). The diagnosis needs
each group's whole history, so rebalances and findings are rebuilt from the full events table
on every run that added events: per group, distributed, with the same rule code as ``analyze``
(``analysis.analyze_group``).

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

MANIFEST = "manifest.json"
SUMMARY = "summary.json"
EVENTS_DIR, REBALANCES_DIR, FINDINGS_DIR = "events", "rebalances", "findings"
MANIFEST_VERSION = 1


class BatchError(ValueError):
    pass


@dataclass
class Manifest:
    """Files processed by earlier runs: key (absolute path or URL) -> size, mtime, lines."""

    files: dict[str, dict] = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)
    decisions: dict[str, int] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)   # read again whole: earlier events stay

    @classmethod
    def load(cls, out: "OutputDir") -> "Manifest":
        text = out.read_text(MANIFEST)
        if text is None:
            return cls()
        try:
            data = json.loads(text)
            return cls(dict(data["files"]), list(data.get("runs", [])))
        except (ValueError, KeyError, TypeError) as exc:
            raise BatchError(f"{out.child(MANIFEST)}: not a rebalance-doctor manifest ({exc}); "
                             f"use a new --out directory or remove it") from exc

    def save(self, out: "OutputDir") -> None:
        out.write_text(MANIFEST, json.dumps({"version": MANIFEST_VERSION, "files": self.files, "runs": self.runs},
                                            indent=1, sort_keys=True) + "\n")

    def select(self, key: str, size: int, mtime: float) -> tuple[int, int] | None:
        """What to read of a file (see engines.spark.Selection): None when already processed.

        Counts its decisions in ``self.decisions`` (new, appended, changed, unchanged).
        """
        seen = self.files.get(key)
        if seen is None:
            return self._decide("new", (0, 0))
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
    """The output directory: a local path, or a Hadoop URL (hdfs://, s3a://, abfss://, ...)."""

    def __init__(self, spark, location: str | Path):
        self.spark = spark
        self.location = str(location)
        self.remote = is_remote(self.location)

    def child(self, name: str) -> str:
        return f"{self.location.rstrip('/')}/{name}" if self.remote else str(Path(self.location) / name)

    def prepare(self) -> None:
        if self.remote:
            if spark_engine.hadoop_kind(self.spark, self.location) == "file":
                raise BatchError(f"--out {self.location} exists and is not a directory")
            return
        path = Path(self.location)
        if path.exists() and not path.is_dir():
            raise BatchError(f"--out {path} exists and is not a directory")
        path.mkdir(parents=True, exist_ok=True)

    def exists(self, name: str) -> bool:
        if self.remote:
            return spark_engine.hadoop_kind(self.spark, self.child(name)) is not None
        return Path(self.child(name)).exists()

    def read_text(self, name: str) -> str | None:
        if self.remote:
            return spark_engine.hadoop_read_text(self.spark, self.child(name))
        path = Path(self.child(name))
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write_text(self, name: str, text: str) -> None:
        if self.remote:
            spark_engine.hadoop_write_text(self.spark, self.child(name), text)
            return
        path = Path(self.child(name))
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)  # a crash leaves the old file, never half a new one


def run_batch(spark, inputs: list[str], out_dir: str | Path, options: ReadOptions | None = None,
              config=None, by_host: bool = False) -> dict:
    """Read what is new under the inputs, append its events, rebuild the diagnosis; the summary."""
    from .analysis import AnalysisConfig

    options = options or ReadOptions()
    config = config or AnalysisConfig()
    out = OutputDir(spark, out_dir)
    out.prepare()
    manifest = Manifest.load(out)
    started = time.perf_counter()
    result = spark_engine.events_frame(spark, inputs, options, select=manifest.select)
    stats = result.stats
    written = 0
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    # pyarrow and every other Parquet reader read TIMESTAMP_MICROS as UTC instants (INT96 is legacy).
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    try:
        if result.frame is not None:
            written = spark_engine.write_events(result.frame, out.child(EVENTS_DIR), by_host)
        result.release()
        diagnosis = _diagnose(spark, out, config) if (written or not out.exists(REBALANCES_DIR)) \
            else _read_diagnosis(spark, out)
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", previous)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for key, info in result.files.items():
        manifest.files[key] = {**info, **(fingerprint(key, info["size"]) or {}), "processed": now}
    run = {"at": now, "inputs": list(inputs), "files": len(result.files), "events": written,
           "seconds": round(time.perf_counter() - started, 3)}
    manifest.runs.append(run)
    manifest.save(out)
    summary = {
        "out": out.location, "run": run,
        "read": {k: v for k, v in stats.to_dict().items() if k not in ("files", "inputs")},
        "files_read": [f.source for f in stats.files],
        "files": dict(sorted(manifest.decisions.items())),
        "changed": manifest.changed,
        "table": diagnosis,
    }
    out.write_text(SUMMARY, json.dumps(summary, indent=2, default=str) + "\n")
    summary["stats"] = stats
    return summary


def _diagnose(spark, out: OutputDir, config) -> dict:
    """Rebalances and findings of every group, rebuilt from the whole events table."""
    diagnosis = (spark_engine.diagnose_groups(spark.read.parquet(out.child(EVENTS_DIR)), config)
                 if out.exists(EVENTS_DIR) else spark_engine.empty_diagnosis(spark))
    try:
        diagnosis.rebalances.write.mode("overwrite").parquet(out.child(REBALANCES_DIR))
        diagnosis.findings.write.mode("overwrite").parquet(out.child(FINDINGS_DIR))
    finally:
        diagnosis.release()
    return _read_diagnosis(spark, out)


def _read_diagnosis(spark, out: OutputDir) -> dict:
    """What the tables hold now (the whole archive, not only this run)."""
    events = spark.read.parquet(out.child(EVENTS_DIR)) if out.exists(EVENTS_DIR) else None
    rebalances = spark.read.parquet(out.child(REBALANCES_DIR))
    findings = spark.read.parquet(out.child(FINDINGS_DIR))
    severity = {r["severity"]: r["count"] for r in findings.groupBy("severity").count().collect()}
    order = {"critical": 0, "warning": 1, "info": 2}
    # Through Arrow: timestamps stay UTC instants (Row objects would turn them into local time).
    top = sorted(findings.select("group", "rule", "severity", "title", "start").toArrow().to_pylist(),
                 key=lambda r: (order.get(r["severity"], 3), str(r["start"]), r["group"] or ""))[:20]
    return {
        "events": events.count() if events is not None else 0,
        "groups": events.where("`group` IS NOT NULL").select("group").distinct().count() if events is not None else 0,
        "rebalances": rebalances.count(),
        "findings": findings.count(),
        "by_severity": dict(sorted(severity.items(), key=lambda kv: order.get(kv[0], 3))),
        "top": [{"group": r["group"], "rule": r["rule"], "severity": r["severity"], "title": r["title"],
                 "start": r["start"].isoformat() if r["start"] else None} for r in top],
    }


__all__ = ["BatchError", "Manifest", "OutputDir", "run_batch"]
