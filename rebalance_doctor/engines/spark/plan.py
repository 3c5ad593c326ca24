"""The driver's plan of a run: work units (files, byte ranges, Hadoop listings) dealt into bins."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from ...core import clusterid
from ...core.options import ReadOptions
from ...core.reader import UNKNOWN_LAYOUT, byte_ranges, detect_source, toolkit, unit_layout
from ...core.sources import NOT_LOGS, Source, discover, infer_host
from ...core.stats import RunStats
from ..choose import is_remote
from .cluster import Cluster, prepare
from .errors import _first_line


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
        named = clusterid.renamed(source.cluster, detection.cluster_id)
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
            _add_unit(planned, stream, source, layout, container, offset, end, part, named if part == 0 else None)
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
              end: int | None, part: int, named_id: str | None = None) -> None:
    number = len(planned.units)
    # Absolute: an executor opens it from its own working directory.
    path = os.path.abspath(source.path) if source.path else None
    planned.units.append({"unit": number, "name": source.name, "host": source.host, "path": path,
                          "size": source.size, "codec": source.codec, "bundle": source.bundle,
                          "member": source.member, "layout": layout, "container": container,
                          "start": start, "end": end, "part": part, "mtime": None, "content": source.data,
                          "cluster": source.cluster, "clients": source.clients, "named_id": named_id})
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
