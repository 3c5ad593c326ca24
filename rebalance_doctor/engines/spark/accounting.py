"""The run's accounting on the driver: unit reports into RunStats, and each unit's fix (line offset, version, handle groups)."""

from __future__ import annotations

import json
from collections import defaultdict

from ...core import clock, handles, versions
from ...core.batches import EventBatch
from ...core.stats import FileStats, NearMiss
from .packing import Fix
from .plan import _Planned


def _fixes(planned: _Planned, offsets: dict[int, int]) -> dict[int, Fix]:
    return {unit: (offsets.get(unit, 0), *planned.versions.get(unit, ((), None)), planned.handle_groups.get(unit))
            for unit in set(planned.versions) | set(planned.handle_groups) | {u for u, o in offsets.items() if o}}


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
