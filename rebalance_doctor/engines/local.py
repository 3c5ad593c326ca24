"""The in-process engine: plan work units, run the parsing core on them (in worker processes
with --jobs N), and put the pieces back together in input order."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Iterator

from ..core import clock, clusterid, handles, regex_guard, versions
from ..core.batches import EventBatch
from ..core.layouts import GENERIC
from ..core.options import ReadOptions
from ..core.reader import (UNKNOWN_LAYOUT, Unit, UnitResult, byte_ranges, detect_source, packs_of,
                           read_unit, toolkit, unit_layout)
from ..core.sources import Source, discover
from ..core.stats import FileStats, RunStats
from .workers import Workers

Progress = Callable[[int], None]  # called with the bytes of each finished unit


def _discover(inputs: list[str], options: ReadOptions):
    """The sources to read, the run's stats (with what discovery skipped) and the toolkit (None when
    nothing is to be read: its matcher and parser are ~35 ms of start-up the run would not use)."""
    found = discover(inputs, host=options.host, exclude=options.exclude, clusters=options.clusters)
    # With --jobs N the toolkit is built before the workers fork (they inherit it); in one process
    # the first file with text builds it (``_read``).
    kit = toolkit(options) if options.jobs > 1 and found.sources else None
    stats = RunStats(inputs=list(inputs), packs=dict(packs_of(options).versions), jobs=options.jobs)
    for skipped in found.skipped:
        stats.skip(skipped.source, skipped.reason, skipped.kind, skipped.size)
    return found.sources, stats, kit


def _units(sources: list[Source], options: ReadOptions) -> Iterator[Unit]:
    """The work units of the sources, in order. Their layouts are not known yet: whoever reads a
    unit detects its source's layout first (``_read``), so that with --jobs N the workers detect
    them, not the parent that shares the cores with them (11 ms a file, while both workers waited
    for their next unit or ran slower beside it)."""
    for source in sources:
        for part, (start, end) in enumerate(byte_ranges(source, options.split_bytes)):
            yield Unit(source, None, None, start, end, part)


# This process's detections in this run, per source: (layout, container, cluster id stated, MM2 clients, known)
# or (None, why it is skipped). A file read in byte ranges is detected once by each process that
# reads one of its ranges. Cleared when a run starts (its files may have changed).
_DETECTED: dict[tuple, tuple] = {}


def _read(unit: Unit, options: ReadOptions) -> UnitResult:
    """Read one unit, its source's layout detected first (``_units``); a source that cannot be read
    as a log gives a result that says why (``UnitResult.skipped``) and no events."""
    source = unit.source
    key = (source.name, source.path, source.member)
    found = _DETECTED.get(key)
    if found is None:
        detection, reason = detect_source(source, options, None)
        if detection is None:
            found = (None, reason or "unreadable")
        else:
            found = (unit_layout(detection, options, toolkit(options)),
                     detection.container.name if detection.container else None,
                     detection.cluster_id, detection.clients, detection.known)
        _DETECTED[key] = found
    if found[0] is None:
        return UnitResult(unit, [], FileStats(source=source.name, host=source.host), skipped=found[1])
    layout, container, cluster_id, clients, known = found
    named = clusterid.renamed(source.cluster, cluster_id)
    if source.cluster is None and cluster_id:
        source.cluster = cluster_id   # no --cluster for it: the cluster id it states
    if source.cluster is None:
        source.clients = clients      # an MM2 log: each client's (core/mirror.py)
    result = read_unit(replace(unit, layout=layout, container=container), options)
    result.unknown_layout = not known
    if named:                           # --cluster NAME's file states this id: the id is NAME
        result.stats.cluster_id, result.stats.cluster_name = named, source.cluster
    return result


def _work(args: tuple[Unit, ReadOptions]) -> UnitResult:
    unit, options = args
    return _batched(_read(unit, options))


def _batched(result: UnitResult) -> UnitResult:
    result.events = EventBatch(rows=result.events)  # pickled as columns on the way to the parent
    return result


def run(inputs: list[str], options: ReadOptions, progress: Progress | None = None
        ) -> tuple[Iterator[EventBatch], RunStats]:
    """Stream the events of every unit, in input order, with line numbers fixed across ranges.

    The run's stats are complete once the iterator is exhausted.
    """
    started = time.perf_counter()
    regex_guard.reset()   # this run's regex time budget (regex_guard), in this process and its workers
    sources, stats, _ = _discover(inputs, options)   # the toolkit loaded before the workers fork
    _DETECTED.clear()
    units = _units(sources, options)
    workers = None
    if options.jobs > 1 and (len(sources) > 1 or any(len(byte_ranges(s, options.split_bytes)) > 1
                                                         for s in sources)):
        # Forked before the caller sets up its writer: the workers hold the parsing core only, not
        # pyarrow (~100 MB per process once it has pulled in pandas). The first units are handed
        # out now, not on the caller's first next(): the caller goes on to import pyarrow (~0.1 s
        # holding the interpreter lock) while the workers start. The workers detect the layouts.
        workers = Workers(options.jobs, _work)
        workers.start((unit, options) for unit in units)

    def results() -> Iterator[UnitResult]:
        if workers is None:
            for unit in units:
                yield _batched(_read(unit, options))
            return
        try:
            yield from workers.results()
        finally:
            workers.close()

    def batches() -> Iterator[EventBatch]:
        # Keyed by the stream, not its display name: two inputs may both hold broker-1/server.log.
        line_offset: dict[tuple, int] = {}
        per_file: dict[tuple, FileStats] = {}
        stated_version: dict[tuple, str] = {}
        # A file's batches are held until its last range is read: a client line's group may be
        # stated by the same handle's lines in another range (core/handles.py).
        held: list[EventBatch] = []
        held_key: tuple | None = None
        skipped: set[tuple] = set()
        for result in results():
            source = result.unit.source
            key = (source.name, source.path, source.member)
            if result.skipped is not None:
                if key not in skipped:
                    skipped.add(key)
                    stats.skip(source.name, result.skipped, size=source.size)
                continue
            if key not in per_file and result.unknown_layout:
                stats.warn(source.name, UNKNOWN_LAYOUT)
            offset = line_offset.get(key, 0)
            result.events.shift_lines(offset)
            if result.stats.largest_jump_line:
                result.stats.largest_jump_line += offset
            _inherit_version(result, stated_version.get(key))
            if versions.is_stated(result.stats.kafka_version):
                stated_version[key] = result.stats.kafka_version
            line_offset[key] = offset + result.newlines
            if key in per_file:
                per_file[key].merge(result.stats)
            else:
                per_file[key] = result.stats
                stats.files.append(result.stats)
            if progress:
                unit = result.unit
                progress(unit.source.size if unit.end is None else unit.end - unit.start)
            if key != held_key:
                _with_times_ordered(held, per_file.get(held_key), options)
                yield from _with_handles_resolved(held)
                held, held_key = [], key
            held.append(result.events)
        _with_times_ordered(held, per_file.get(held_key), options)
        yield from _with_handles_resolved(held)
        stats.seconds = time.perf_counter() - started

    return batches(), stats


def _with_times_ordered(batches: list[EventBatch], stats: FileStats | None, options: ReadOptions) -> None:
    """One file's batches, with its backward jumps decided over the whole file when it was read in
    byte ranges (``clock.reorder``): each range decided them from its own records."""
    if stats is None or sum(1 for batch in batches if len(batch)) < 2:
        return
    if not clock.out_of_order(t for batch in batches for t in batch.times()):
        return
    rows = [row for batch in batches for row in batch.rows()]
    clock.account(clock.reorder(rows, options.zone_of), stats)
    for batch in batches:
        batch.rows_changed()


def _with_handles_resolved(batches: list[EventBatch]) -> list[EventBatch]:
    """One file's batches, with the groups of its client lines that state only a handle filled."""
    if any(batch.has_ungrouped_client_lines() for batch in batches):
        handles.resolve(row for batch in batches for row in batch.rows())
        for batch in batches:
            batch.rows_changed()
    return batches


def _inherit_version(result: UnitResult, stated_before: str | None) -> None:
    version, replaced = versions.for_later_range(stated_before, result.stats.kafka_version)
    result.events.replace_versions(replaced, stated_before)
    result.stats.kafka_version = version


def read_events(inputs: list[str], options: ReadOptions | None = None,
                progress: Progress | None = None) -> tuple[list[dict], RunStats]:
    """Every event of the inputs, sorted by time (untimed events last), then source and line."""
    options = options or ReadOptions()
    stream, stats = run(inputs, options, progress)
    events = [event for batch in stream for event in batch.rows()]
    events.sort(key=sort_key)
    return events, stats


def sort_key(event: dict):
    ts = event["ts"]
    return (ts is None, ts.timestamp() if ts is not None else 0.0, event["source"], event["line"])


__all__ = ["GENERIC", "read_events", "run", "sort_key"]
