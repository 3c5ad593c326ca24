"""Read one work unit (a file, or a byte range of a large plain file) into events.

This is the one parsing core: the in-process engine and the Spark executors both call
``read_unit``. Memory stays bounded by the chunk size whatever the file size.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path

import regex

from . import clusterid, filechange, mirror, regex_guard, timestamps, versions
from .context import load_context_reader
from .layouts import (GENERIC, Container, Detection, Layout, LayoutSet, detect, identify_line, layout_from_pattern,
                      load_layouts)
from .linefix import FixedStream, has_colour_codes, strip_colour_codes, unwrap_lines, wrap_width
from .matcher import Matcher, Miss
from .options import ReadOptions
from .packs import PackSet, load_packs
from .parse import FileContext, RecordParser
from .plan import Plan
from .scan import MAX_RECORD_BYTES, ChunkScanner, RecordBounds, count_newlines, gate_forms, make_engine, record_bounds
from .sources import Source
from .stats import NEAR_MISS_SAMPLES, FileStats, NearMiss
from . import eventnames as EV

# 4 MiB: as fast as 8 MiB (same CPU within noise on the 2 GiB benchmark) and ~25 MB less peak
# memory per reading process (the chunk, the next read and the newline mask are each a chunk long).
# A chunk plus a carried long line (< CHUNK_BYTES + MAX_LINE_BYTES) must stay under
# process.ALLOCATOR_THRESHOLD_BYTES, or every chunk's buffers fault their pages in afresh.
CHUNK_BYTES = 4 << 20
MAX_LINE_BYTES = 8 << 20
SAMPLE_BYTES = 256 << 10
SAMPLE_LINE_BYTES = 8 << 10
RANGE_TAIL_BYTES = 64 << 10  # read past a range's end to finish its last record (more if needed)
work_bytes = 0  # bytes of the chunks scanned in this process, carried tails again (a work counter for tests)
BEFORE_BYTES = 256           # what a range reads of the line before it (listing heads are shorter)
DATE_IN_NAME = regex.compile(r"(\d{4})-(\d\d)-(\d\d)")
BINARY_SHARE = 0.01  # control characters (but tab, CR, LF, FF, ESC) in a head that make it not text
_CONTROLS = bytes(c for c in range(32) if c not in (9, 10, 12, 13, 27)) + b"\x7f"


@dataclass
class Unit:
    """A piece of work: a whole source or the byte range [start, end) of a plain file."""

    source: Source
    layout: str | None            # detected layout name (or a conversion pattern); None: not yet detected
    container: str | None
    start: int = 0
    end: int | None = None
    part: int = 0                 # index of the range within its file


@dataclass
class UnitResult:
    unit: Unit
    events: list[dict]
    stats: FileStats
    newlines: int = 0             # newlines inside [start, end): fixes line numbers of later ranges
    skipped: str | None = None    # why its source is not read as a log (no events, stats unused)
    unknown_layout: bool = False  # its layout was not recognised (read with the generic one)


@dataclass
class Toolkit:
    """Everything parsing needs, built once per process from the options."""

    packs: PackSet
    layouts: LayoutSet
    matcher: Matcher
    parser: RecordParser
    _engines: dict = field(default_factory=dict)
    _java_parser: RecordParser | None = None
    _bounds: dict = field(default_factory=dict)

    def parser_for(self, java: bool) -> RecordParser:
        """The record parser of a unit; ``java``: one read with Java layouts only, whose context
        reader does not look for the prefixes non-Java client libraries write."""
        if not java:
            return self.parser
        if self._java_parser is None:
            self._java_parser = RecordParser(self.matcher, load_context_reader(java_only=True))
        return self._java_parser

    def scan_engine(self, json_layout: bool, java: bool = False):
        """The literal engine for a layout kind (JSON lines escape the gates they hold); ``java``:
        for a unit read with Java layouts only, which looks for the Java packs' literals only."""
        key = (json_layout, java)
        if key not in self._engines:
            forms = gate_forms([v.gate for v in self.packs.variants()], json_layout)
            keys = tuple(k.encode() for k in self.packs.java_scan_keys) if java else self.matcher.scan_bytes
            self._engines[key] = make_engine(keys, forms)
        return self._engines[key]

    def bounds(self, readers: list[tuple[Layout, Container | None]]) -> RecordBounds:
        # Every unit asks again (a big file is many ranges): what the bounds depend on is the
        # readers' record starts and kinds, the rest is the toolkit's, so each answer is kept.
        key = tuple((layout.start_regex(container).pattern, layout.multiline) for layout, container in readers)
        found = self._bounds.get(key)
        if found is None:
            found = self._bounds[key] = bounds_of(readers, self.layouts, self.packs)
        return found

    def layout(self, name_or_pattern: str) -> Layout:
        return GENERIC if name_or_pattern == GENERIC.name else resolve_layout(name_or_pattern, self.layouts)

    def container(self, name: str | None) -> Container | None:
        return next((c for c in self.layouts.containers if c.name == name), None) if name else None

    def identify(self, line: bytes) -> tuple[Layout, Container | None] | None:
        """The shipped layout (and container prefix) that reads this one line best, if any."""
        return identify_line(line, self.layouts)


def bounds_of(readers: list[tuple[Layout, Container | None]], layouts: LayoutSet, packs: PackSet) -> RecordBounds:
    """Where the records of a unit read by these (layout, container) readers start and end: the
    readers' record starts, and the continuation shapes of the layouts and of the packs' spanning
    templates, behind any container prefix (a line of a source the sample did not show continues
    its record too)."""
    compiled = [layout.start_regex(container) for layout, container in readers]
    starts = tuple(rx.pattern for rx in compiled)
    prefixes = tuple(container.regex_source.encode() for container in layouts.containers)
    if not any(layout.multiline for layout, _ in readers):
        bounds = record_bounds(starts, prefixes, None)
    else:
        shapes = layouts.continuation_shapes + tuple(regex.escape(o) for o in packs.line_openers())
        bounds = record_bounds(starts, prefixes, shapes, packs.listing_heads())
    if any(isinstance(rx, regex_guard.GuardedStart) for rx in compiled):
        # A start regex that needs a guard needs it inside the composed ones too (a --layout
        # with 28 adjacent %X{k} took over 150 s on a 70-line file there).
        bounds = replace(bounds, start=regex_guard.GuardedStart(bounds.start),
                         following=regex_guard.GuardedStart(bounds.following))
    return bounds


_TOOLKITS: dict[tuple, Toolkit] = {}
_PACKS: dict[tuple, PackSet] = {}


def packs_of(options: ReadOptions) -> PackSet:
    """The packs of a run (loaded once per process), without the toolkit's matcher and layouts."""
    key = tuple(str(p) for p in options.packs)
    packs = _PACKS.get(key)
    if packs is None:
        packs = _PACKS[key] = load_packs([Path(p) for p in options.packs])
    return packs


def toolkit(options: ReadOptions) -> Toolkit:
    key = tuple(str(p) for p in options.packs)
    kit = _TOOLKITS.get(key)
    if kit is None:
        packs = packs_of(options)
        packs.compile_cached()
        matcher = Matcher(packs)
        kit = Toolkit(packs, load_layouts(), matcher, RecordParser(matcher, load_context_reader()))
        _TOOLKITS[key] = kit
    return kit


def sample_lines(source: Source) -> list[bytes]:
    return _lines_of(_sample(source)[0])


def _sample(source: Source) -> tuple[bytes, int, list]:
    """The head of a source's text, the bytes of its stream that took (NULs dropped, ...), and
    the damage met on the way."""
    with source.open() as stream:
        pieces, got = [], 0
        while got < SAMPLE_BYTES:
            piece = stream.read(SAMPLE_BYTES - got)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        return b"".join(pieces), stream.consumed, stream.damages()


def _lines_of(head: bytes) -> list[bytes]:
    lines = head.split(b"\n")
    if len(head) == SAMPLE_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last one is cut
    # A sample of the head: a giant first line says nothing more about the layout than its start.
    return [l[:SAMPLE_LINE_BYTES].rstrip(b"\r") for l in lines]


def detect_source(source: Source, options: ReadOptions, kit: Toolkit | None) -> tuple[Detection | None, str | None]:
    """Detect a source's layout from its head; (None, reason) when it must be skipped. ``kit``
    None: the run's toolkit, built only when the head is text (an empty file does not need it)."""
    try:
        head, taken, damages = _sample(source)
    except Exception as exc:  # an archive member or file that cannot even be opened
        return None, f"unreadable: {_describe(exc)}"
    if not head and damages:
        return None, f"{damages[-1].reason}: {damages[-1].message}; nothing before it could be decoded"
    regex_guard.begin_file(source.name)   # detecting its layout spends from the file's regex time budget
    try:
        return detect_head(head, taken, options, kit)
    finally:
        regex_guard.end_file()


def detect_head(head: bytes, taken: int, options: ReadOptions, kit: Toolkit | None) -> tuple[Detection | None, str | None]:
    """Detect the layout from the head of a text (``taken``: the stream's bytes it came from);
    (None, reason) when it is not log text. The follow mode detects a growing file's layout here
    from what it has read so far."""
    if not head.strip():
        return None, ("empty file" if not taken else
                      f"no log text in its first {taken:,} bytes (NUL bytes or blank lines only)")
    if len(head) - len(head.translate(None, _CONTROLS)) > BINARY_SHARE * len(head):
        return None, "binary file (control bytes, not text), not a log"
    lines = _lines_of(head)
    colours = has_colour_codes(lines)
    if colours:
        lines = [strip_colour_codes(l) for l in lines]
    wrap = wrap_width(lines)
    if wrap:
        lines = unwrap_lines(lines, wrap)
    kit = kit or toolkit(options)
    forced = resolve_layout(options.layout, kit.layouts) if options.layout else None
    detection = detect(lines, kit.layouts, forced)
    detection.colours, detection.wrap = colours, wrap
    detection.cluster_id = clusterid.stated(head)
    detection.clients = mirror.of_head(head)
    if detection.clients is not None:
        detection.cluster_id = None   # an MM2 process's log is no one cluster's: each client is (core/mirror.py)
    return detection, None


UNKNOWN_LAYOUT = ("layout not recognised: read with the generic layout (whole line as message); "
                  "give --layout to do better")


def unit_layout(detection: Detection, options: ReadOptions, kit: Toolkit) -> str:
    """How a unit names the way it is read: a shipped layout's name, or the --layout pattern
    itself (compiled again where the unit is read), or a whole reading plan (``plan.Plan``) when
    the file mixes readers or its lines need fixing."""
    def name(layout: Layout) -> str:
        if options.layout and layout.pattern and not kit.layouts.by_name(layout.name):
            return layout.pattern
        return layout.name

    readers = tuple((name(layout), container.name if container else None) for layout, container in detection.readers)
    return Plan(readers, detection.colours, detection.wrap).encode()[0]


def byte_ranges(source: Source, split_bytes: int, start: int = 0) -> list[tuple[int, int | None]]:
    """The [start, end) ranges a source is read in (end None: to the end of the stream).

    A plain file bigger than ``split_bytes`` is cut in ranges of that fixed size, whatever the
    parallelism: a unit's events are held until it ends, so this bounds memory, and many small
    ranges keep every worker busy to the end. Anything else is one range.
    """
    if not source.splittable or source.size - start <= split_bytes:
        return [(start, None)]
    return [(cut, cut + split_bytes if cut + split_bytes < source.size else None)
            for cut in range(start, source.size, split_bytes)]


def resolve_layout(name_or_pattern: str, layouts: LayoutSet) -> Layout:
    """A shipped layout by name, or a conversion pattern compiled on the fly."""
    return layouts.by_name(name_or_pattern) or layout_from_pattern(name_or_pattern)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _base_date(source: Source, options: ReadOptions) -> tuple[date | None, bool]:
    """The date of time-of-day-only times, and whether it is that of the file's last line (its
    mtime) rather than of its first."""
    if options.base_date:
        return date.fromisoformat(options.base_date), options.base_date_is_last
    m = DATE_IN_NAME.search(source.name)
    if m:
        return date(int(m[1]), int(m[2]), int(m[3])), False
    if source.path and source.bundle is None:
        try:
            return datetime.fromtimestamp(os.path.getmtime(source.path)).date(), True
        except OSError:
            return None, False
    return None, False


class UnitReading:
    """The readers of one unit, each with its file context, and the choice of one per record."""

    def __init__(self, unit: Unit, options: ReadOptions, kit: Toolkit):
        self.kit = kit
        self.options = options
        self.plan = Plan.decode(unit.layout, unit.container)
        self.source = unit.source
        self.readers: list[tuple[Layout, Container | None]] = [
            (kit.layout(name), kit.container(container)) for name, container in self.plan.readers]
        layout, container = self.readers[0]
        self.time_only = any(l.time_only for l, _ in self.readers)
        base_is_last = _base_date(self.source, options)[1] if self.time_only else False
        self.file = FileContext(self.source.name, self.source.host, layout, container, self._zone(self.source.host),
                                self._base_date(layout), options.kafka_version,
                                version_pinned=options.kafka_version is not None,
                                host_pinned=options.host is not None,
                                zones={host: timestamps.zone(zone) for host, zone in options.host_tz.items()},
                                zone_names=dict(options.host_tz), tz_name=options.tz, base_is_last=base_is_last,
                                cluster=self.source.cluster, clients=getattr(self.source, "clients", None))
        self.contexts = [self.file] + [self._context(l, c) for l, c in self.readers[1:]]
        self.starts = [layout.start_regex(container) for layout, container in self.readers]
        self.bounds = kit.bounds(self.readers)
        self.java = all(l.java for l, _ in self.readers)   # Java's logging wrote every reader's layout
        self.parser = kit.parser_for(self.java)
        self.line_of = None   # physical line of a fixed stream's line, when lines were joined

    def _zone(self, host: str):
        return timestamps.zone(self.options.host_tz.get(host, self.options.tz))

    def _base_date(self, layout: Layout) -> date | None:
        return _base_date(self.source, self.options)[0] if layout.time_only else None

    def _context(self, layout: Layout, container: Container | None) -> FileContext:
        return replace(self.file, layout=layout, container=container, base_date=self._base_date(layout))

    def context_for(self, data: bytes) -> FileContext:
        """The file context to parse a record with: that of the first reader whose record start its
        first line matches; for a line no reader starts (a foreign line or another source's), the
        shipped layout that reads that line best, else the generic layout."""
        for context, start in zip(self.contexts, self.starts):
            if start.match(data):
                return context
        found = self.kit.identify(data[:data.find(b"\n")] if b"\n" in data else data)
        return self._context(*found) if found else self._context(GENERIC, None)


def read_unit(unit: Unit, options: ReadOptions) -> UnitResult:
    """Scan a unit and parse its candidate records. Never raises on bad input: problems are counted."""
    kit = toolkit(options)
    source = unit.source
    reading = UnitReading(unit, options, kit)
    plan = reading.plan
    layout, container = reading.readers[0]
    stats = FileStats(source=source.name, host=source.host, codec=source.codec,
                      layout=plan.describe([(l.name, c.name if c else None) for l, c in reading.readers]),
                      container=container.name if container else None, size=source.size)
    # A file whose lines are fixed is read whole by its first range (byte offsets of the file are
    # not those of the fixed text); so is a time-of-day-only file (a range could not know how
    # many midnights the lines before it crossed: core.clock). The other ranges read nothing.
    whole = plan.fixes or reading.time_only
    if whole and unit.part > 0:
        return UnitResult(unit, [], stats, 0)
    if whole:
        unit = replace(unit, end=None)
    scanner = ChunkScanner(kit.scan_engine(any(l.is_json for l, _ in reading.readers), reading.java),
                           reading.bounds)
    events: list[dict] = []
    newlines = 0
    timeouts, skipped = regex_guard.timeouts(), regex_guard.skipped()
    regex_guard.begin_file(source.name)
    try:
        raw = source.open()
    except Exception as exc:  # cannot be opened at all (gone since planning, a broken member)
        stats.count_lost("unreadable", 0)
        stats.problems.append(f"cannot be read: {_describe(exc)}")
    else:
        with raw:
            stream = raw
            replaced = _changed(unit, raw, opening=True)
            if replaced is not None:
                # Another file than the one found (rotated in the meantime): not read, its
                # offsets are not the planned file's; every planned byte of the piece is lost.
                _count_change(replaced, stats)
                stream = None
            elif plan.fixes:
                known = [start for (layout, _), start in zip(reading.readers, reading.starts) if layout is not GENERIC]
                stream = FixedStream(raw, plan.colours, plan.wrap, _any_start(known))
                reading.line_of = stream.physical_line
            try:
                if stream is not None:
                    newlines = RangeScan(stream, unit, scanner, reading, stats, events).run()
                    change = _changed(unit, raw)
                    if change is not None:
                        _count_change(change, stats)
            except MemoryError:
                # A unit's events are held until it ends: millions of them (a bomb of event
                # records) can exhaust memory. The run goes on without this file's events.
                held = len(events)
                events.clear()
                stats.events = 0
                stats.count_lost("unreadable", 0)
                stats.problems.append(f"ran out of memory holding {held:,} events of this file: they are left "
                                      f"out (split the file, or read it with --engine spark)")
            finally:
                if isinstance(stream, FixedStream):  # count the file's bytes and lines, not the fixed text's
                    stats.bytes = stream.raw_bytes
                    stats.lines += stream.joined
                    newlines += stream.joined
        _account(raw, stats)
    _account_time(reading.file, stats)
    stats.regex_timeouts = regex_guard.timeouts() - timeouts
    stats.regex_skipped = regex_guard.skipped() - skipped
    file_s, _ = regex_guard.spent()
    regex_guard.end_file()
    if stats.regex_timeouts:
        stats.problems.append(f"{stats.regex_timeouts} record(s) or line(s) a regex gave up on after "
                              f"{regex_guard.REGEX_TIMEOUT_S} s (read as not matching)")
    if stats.regex_skipped:
        which = (f"this file's {regex_guard.FILE_BUDGET_S:g} s" if file_s >= regex_guard.FILE_BUDGET_S
                 else f"the run's {regex_guard.RUN_BUDGET_S:g} s (per process)")
        stats.problems.append(f"regex time budget spent ({which}; this file took {file_s:.1f} s): "
                              f"{stats.regex_skipped} regex call(s) on the records and lines after it not made "
                              f"(read as not matching)")
    file = reading.file
    if file.kafka_version is None and events:
        # No `Kafka version:` line and no --kafka-version: what the wording of the lines says.
        file.kafka_version = versions.from_wording(kit.packs, events)
        for event in events:
            event["kafka_version"] = file.kafka_version
    stats.kafka_version = file.kafka_version
    return UnitResult(unit, events, stats, newlines)


def _account_time(file: FileContext, stats: FileStats) -> None:
    """What the file's clocks decided (DST hours, midnights, backward jumps), counted and said."""
    for clock in file.clocks.values():
        clock.finish()
        stats.repeated_hour += clock.repeated
        stats.nonexistent_times += clock.skipped
        stats.midnights += clock.midnights
        times = clock.times
        stats.backward_jumps += times.jumps
        if times.jumps and times.largest.total_seconds() > stats.largest_jump_s:
            stats.largest_jump_s, stats.largest_jump_line = times.largest.total_seconds(), times.line
        stats.problems.extend(clock.notes())


def _changed(unit: Unit, stream, opening: bool = False) -> filechange.Change | None:
    """How the file of a unit changed while it was read (``filechange``): checked when it is
    opened (``opening``: only whether it is the file found) and at the end of its read."""
    planned, file = unit.source.planned, stream.file
    if planned is None or file is None:
        return None
    try:
        held = filechange.Identity.of(os.fstat(file.fileno()))
        reached = file.tell()
    except (OSError, ValueError):
        return None
    if opening:
        if (held.dev, held.ino) == (planned.dev, planned.ino):
            return None
        reached = unit.start
    return filechange.check(planned, unit.source.path, held, reached, unit.start, unit.end, unit.part == 0)


def _count_change(change: filechange.Change, stats: FileStats) -> None:
    if change.reason != filechange.REMOVED:
        stats.count_lost(change.reason, change.lost)
    stats.problems.append(change.message)


def _account(stream, stats: FileStats) -> None:
    """What the stream could not give as text, and why (``decode``)."""
    if not stream.length_preserving:
        stats.bytes = stream.consumed  # one unit: the bytes of the decoded stream, dropped ones too
    for reason, count in stream.unread().items():
        stats.count_unread(reason, count)
    for damage in stream.damages():
        stats.count_lost(damage.reason, damage.lost)
        where = f" (stream ended after {stats.bytes:,} bytes; the lines before are kept)" if damage.ended else ""
        stats.problems.append(damage.message + where)


def _ended_in_damage(stream) -> bool:
    ended = getattr(stream, "ended_in_damage", None) or getattr(getattr(stream, "_raw", None), "ended_in_damage", None)
    return bool(ended and ended())


def _any_start(starts: list["regex.Pattern[bytes]"]) -> "regex.Pattern[bytes] | None":
    if not starts:
        return None
    return regex.compile(b"|".join(b"(?:" + s.pattern + b")" for s in starts), regex.MULTILINE)


class RangeScan:
    """The scan of one unit's stream, chunk by chunk: ``run`` returns the newlines inside [start, end).

    A range owns the bytes [start, end) (to the end of the stream when end is None) and counts
    exactly those, as read or as unread with their reason, so that the ranges of a file add up
    to the file whatever the split size: what it reads past its end to finish its last record,
    and the line before its start, are its neighbours' to count. Whether a line is too long to
    keep depends on its length alone (more than MAX_LINE_BYTES before its newline), never on
    where chunks or ranges are cut, so every range holding a piece of such a line counts its
    own piece as oversized.

    Each step of a chunk is a method (``read_chunk``, ``skip_line``, ``first_chunk``,
    ``find_stop``, ``parse``, ``skip_oversized_tail``), so that a profile times them apart; the
    state they share is the scan's attributes.
    """

    def __init__(self, stream, unit: Unit, scanner: ChunkScanner, reading: UnitReading,
                 stats: FileStats, events: list[dict]) -> None:
        self.stream, self.scanner, self.reading, self.stats, self.events = stream, scanner, reading, stats, events
        self.start, self.end = start, end = unit.start, unit.end
        # A plain file is read again from where the last chunk was cut: cheaper than gluing the
        # unscanned tail in front of the next chunk, which copies the whole chunk once more.
        self.rereadable = (unit.source.splittable and reading.line_of is None
                           and getattr(stream, "length_preserving", False))
        count_nuls_in = getattr(stream, "count_nuls_in", None)
        if count_nuls_in is not None and (start or end is not None):
            count_nuls_in(start, end)  # a binary region is counted by the range that owns its bytes
        at_line_start = True
        # The end of the line before the range's first line: whether that line continues a record
        # can depend on it (a line after "...to consumers:" is that template's listing).
        before = b""
        if start:
            stream.seek(max(0, start - BEFORE_BYTES))
            before = stream.read(start - max(0, start - BEFORE_BYTES))
            at_line_start = before.endswith(b"\n")
        self.before = before
        self.position = start        # absolute offset of the first byte of the chunk
        self.carry = b""             # the unscanned tail of the last chunk (starts at `position`)
        self.line_base = 1           # line of carry's first line, counted from `start`
        self.range_newlines = 0
        self.first = True
        # Skipping to the end of a line: one the previous range began, or one too long to keep.
        # Its newline is counted by the range it lies in; a last line without one only if too long.
        self.skipping_line = not at_line_start
        self.line_length = 0 if at_line_start else _length_before(stream, start, before)  # of the skipped line, so far
        self.too_long = self.line_length > MAX_LINE_BYTES
        self.pending = 0             # bytes of the skipped line this range owns, until its length is known
        self.carry_open: int | None = None  # the length of the carry's last line, when known
        self.work_bytes = 0          # bytes of the chunks scanned, carried tails again

    def owned(self, offset: int, count: int) -> int:
        """How many of the ``count`` bytes from ``offset`` on are this range's."""
        end = self.end
        return count if end is None else max(0, min(count, end - offset))

    def run(self) -> int:
        """Scan the unit to its end; the number of newlines inside [start, end)."""
        global work_bytes
        try:
            while True:
                buf, carried, open_line, eof = self.read_chunk()
                if self.skipping_line:  # carry is empty: buf is new data only
                    step, buf = self.skip_line(buf, eof)
                    if step is _STOP:
                        break
                    if step is _NEXT:
                        continue
                if self.first:
                    step, buf = self.first_chunk(buf, eof)
                    if step is _NEXT:
                        continue
                if self.end is not None and self.position >= self.end:
                    break
                step, stop, oversized_tail = self.find_stop(buf, eof, carried, open_line)
                if step is _STOP:
                    break
                if step is _NEXT:
                    continue
                self.parse(buf, stop)
                buf = b""
                if oversized_tail:
                    self.skip_oversized_tail(eof)
                if eof or (self.end is not None and self.position >= self.end):
                    break
        finally:
            work_bytes += self.work_bytes
        return self.range_newlines

    def read_chunk(self) -> tuple[bytes, int, int, bool]:
        """The next chunk, the carry in front of it: (chunk, carried bytes, length of the carry's
        last line when it may grow too long, else 0, whether the stream ended)."""
        carry, end, position = self.carry, self.end, self.position
        wanted = CHUNK_BYTES
        if end is not None:
            # Near the end of a range, read only up to it plus a little: the next range reads the
            # rest. A record still unfinished then is completed by the reads that follow.
            wanted = min(CHUNK_BYTES, max(end - position - len(carry), 0) + RANGE_TAIL_BYTES)
        carried = len(carry)
        # The carry's last line, when the chunk may make it longer than a line may be (rare: a
        # record carried over megabytes). Every other line of a chunk is in the carry, which was
        # checked so, or wholly in the fresh bytes, which are fewer than MAX_LINE_BYTES.
        open_line = 0
        if carried + wanted > MAX_LINE_BYTES:
            open_line = self.carry_open if self.carry_open is not None else carried - carry.rfind(b"\n") - 1
        self.carry_open = None
        if carry and self.rereadable:
            self.stream.seek(position)
            buf = self.stream.read(carried + wanted)
            fresh = len(buf) - carried
        else:
            data = self.stream.read(wanted)
            fresh = len(data)
            buf = carry + data if carry else data
            data = b""  # buf holds it now: keep one copy of the chunk alive, not two
        self.stats.bytes += self.owned(position + carried, fresh)
        self.work_bytes += len(buf)
        return buf, carried, open_line, fresh == 0

    def skip_line(self, buf: bytes, eof: bool) -> tuple[object, bytes]:
        """Skip on to the end of the line being skipped; (step, what of the chunk follows it)."""
        stats = self.stats
        nl = buf.find(b"\n")
        self.line_length += len(buf) if nl == -1 else nl
        if not self.too_long and self.line_length > MAX_LINE_BYTES:
            self.too_long = True
            stats.count_unread("oversized", self.pending)
        if nl == -1 and not eof:
            if self.too_long:
                stats.count_unread("oversized", self.owned(self.position, len(buf)))
            else:
                self.pending += self.owned(self.position, len(buf))
            self.position += len(buf)
            if self.end is not None and self.position >= self.end and self.too_long:
                return _STOP, b""  # the line ends in a later range, which counts its newline
            return _NEXT, b""  # (a line of unknown length is read on to its end, or until it is too long)
        cut = len(buf) if nl == -1 else nl + 1
        if self.too_long:
            stats.count_unread("oversized", self.owned(self.position, cut))
        self.pending = 0
        if nl != -1 and self.end is not None and self.position + nl >= self.end:
            return _STOP, b""
        if nl != -1 or self.too_long:
            self.line_base += 1
            self.range_newlines += 1
            stats.lines += 1
        self.before = (self.before + buf[max(0, cut - BEFORE_BYTES):cut])[-BEFORE_BYTES:]
        self.skipping_line = self.too_long = False
        self.line_length = 0
        self.position += cut
        return _GO, buf[cut:]

    def first_chunk(self, buf: bytes, eof: bool) -> tuple[object, bytes]:
        """Skip the lines of the first chunk that continue a record of the previous range (they
        belong to that range); (step, the chunk from the range's first record start)."""
        self.first = False
        start, end, position = self.start, self.end, self.position
        skip = 0
        if start and buf:
            skip = self.scanner.first_record_start(buf, before=self.before)
        skipped = count_newlines(buf, 0, skip)
        # With no record start in the chunk, the skip runs past the range's end: only the
        # newlines before the end are this range's (the next range counts the others).
        in_range = skipped if end is None or position + skip <= end else count_newlines(buf, 0, end - position)
        self.line_base += skipped
        self.range_newlines += in_range
        self.stats.lines += in_range
        open_tail = 0
        if skip == len(buf) and buf and not eof and not buf.endswith(b"\n"):
            open_tail = len(buf) - buf.rfind(b"\n") - 1
        self.position = position = position + skip
        if open_tail:
            # The skip ends in a line that goes on past the chunk: skipped to its end like a
            # line the previous range began (its length decides whether it was too long).
            self.skipping_line, self.line_length, self.pending = True, open_tail, self.owned(position - open_tail,
                                                                                            open_tail)
            return _NEXT, b""
        return _GO, buf[skip:]

    def find_stop(self, buf: bytes, eof: bool, carried: int, open_line: int) -> tuple[object, int, bool]:
        """Where the whole records of the chunk end; (step, that offset, whether the line there
        is too long to keep)."""
        stats = self.stats
        oversized_tail = False
        if eof:
            stop = len(buf)
            if buf and not buf.endswith(b"\n"):
                last_line = buf.rfind(b"\n") + 1
                if _ended_in_damage(self.stream):
                    # The stream broke off inside this line: a piece of a line is not text (it
                    # would join the record before it), it is counted.
                    stop = last_line
                    stats.count_unread("truncated", len(buf) - stop)
                elif len(buf) - last_line > MAX_LINE_BYTES:
                    stop, oversized_tail = last_line, True
        elif open_line and (nl := buf.find(b"\n", carried)) != -1 and open_line + nl - carried > MAX_LINE_BYTES:
            # The carry's last line ended in this chunk, longer than a line may be.
            stop, oversized_tail = carried - open_line, True
        else:
            cut = self.scanner.last_record_start(buf)
            if cut <= 0:
                last_newline = buf.rfind(b"\n")
                if len(buf) - last_newline - 1 <= MAX_LINE_BYTES:
                    self.carry, self.carry_open = buf, len(buf) - last_newline - 1
                    return _NEXT, 0, False
                if last_newline == -1:
                    stats.problems.append(f"line {self.line_base}: longer than {MAX_LINE_BYTES >> 20} MiB, skipped")
                    stats.count_unread("oversized", self.owned(self.position, len(buf)))
                    self.skipping_line = self.too_long = True
                    self.position += len(buf)
                    self.carry = b""
                    if self.end is not None and self.position >= self.end:
                        return _STOP, 0, False
                    return _NEXT, 0, False
                # The chunk ends in a line too long to keep, after a record start: the lines
                # before it are complete (carrying it on would copy it again with every chunk).
                stop = last_newline + 1
                oversized_tail = True
            else:
                stop = cut
        return _GO, stop, oversized_tail

    def parse(self, buf: bytes, stop: int) -> None:
        """Parse the records of buf[:stop] into events; what follows is carried to the next chunk."""
        end, position = self.end, self.position
        limit = None if end is None else end - position
        parse_chunk(buf, self.line_base, limit, stop, self.scanner, self.reading, self.stats, self.events)
        # The chunk may run past the range's end: only the newlines before it are the range's.
        newlines, in_range = self.scanner.newlines(buf, stop, limit)
        self.range_newlines += in_range
        self.stats.lines += in_range
        self.line_base += newlines
        self.position = position + stop
        self.carry = buf[stop:]

    def skip_oversized_tail(self, eof: bool) -> None:
        """The line at the carry's start is too long: skipped, to its newline if the chunk holds
        it, else on in the chunks that follow."""
        stats, carry, position, end = self.stats, self.carry, self.position, self.end
        stats.problems.append(f"line {self.line_base}: longer than {MAX_LINE_BYTES >> 20} MiB, skipped")
        nl = carry.find(b"\n")
        length = len(carry) if nl == -1 else nl + 1
        stats.count_unread("oversized", self.owned(position, length))
        if nl == -1 and not eof:
            self.skipping_line = self.too_long = True
        elif end is None or position + length - 1 < end:  # its newline (or the stream's end) is this range's
            self.line_base += 1
            self.range_newlines += 1
            stats.lines += 1
        self.position = position + length
        self.carry = carry[length:]


# What a step of RangeScan tells its loop: go on with this chunk, read the next one, or stop.
_GO, _NEXT, _STOP = "go", "next", "stop"


def parse_chunk(buf: bytes, line_base: int, limit: int | None, stop: int, scanner: ChunkScanner,
                reading: UnitReading, stats: FileStats, events: list[dict]) -> None:
    """Parse the candidate records of buf[:stop] (whole records: it starts at a record start and
    ``stop`` is one) into ``events``; ``line_base`` is the line of buf's first line. The one step
    from bytes to events, for a file read at once and for the pieces of a file that grows."""
    for record in scanner.scan(buf, line_base, limit, stop):
        if record.gated:
            _parse_record(record.data, record.line, reading, stats, events, record.gates)
        else:
            stats.candidates += 1  # holds no gate: the parser would find nothing


def _length_before(stream, start: int, before: bytes) -> int:
    """The bytes of the line ``start`` falls in that lie before ``start`` (MAX_LINE_BYTES + 1
    when there are more): read back from the file when ``before`` does not reach its start.
    Leaves the stream at ``start``."""
    newline = before.rfind(b"\n")
    if newline != -1 or len(before) >= start:
        return len(before) - newline - 1
    length = len(before)
    while length <= MAX_LINE_BYTES and length < start:
        piece = min(RANGE_TAIL_BYTES, start - length)
        stream.seek(start - length - piece)
        data = stream.read(piece)
        newline = data.rfind(b"\n")
        if newline != -1:
            length += len(data) - newline - 1
            break
        length += len(data)
        if len(data) < piece:
            break  # (the file shrank)
    stream.seek(start)
    return min(length, MAX_LINE_BYTES + 1)


def _parse_record(data: bytes, line: int, reading: UnitReading, stats: FileStats,
                  events: list[dict], gates: set[str] | None = None) -> None:
    stats.candidates += 1
    if reading.line_of is not None:
        line = reading.line_of(line)
    if b"\x00" in data:  # a NUL region, moved to the end of its line by the stream (decode)
        data = data.translate(None, b"\x00")
    if len(data) > MAX_RECORD_BYTES:
        stats.problems.append(f"line {line}: record longer than {MAX_RECORD_BYTES >> 20} MiB, cut")
        data = data[:MAX_RECORD_BYTES]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        stats.non_utf8_records += 1
    if "\r" in text:
        text = text.replace("\r\n", "\n").rstrip("\r")
    # Most records are the first reader's: it splits them, and only the others are matched
    # against each reader's record start (and, if none starts them, every shipped layout).
    found = reading.parser.parse(text, line, reading.file, gates, lambda: reading.context_for(data))
    if found is None:
        return
    file = reading.file
    if isinstance(found, Miss):
        stats.near_misses += 1
        if len(stats.near_miss_samples) < NEAR_MISS_SAMPLES:
            stats.near_miss_samples.append(NearMiss(file.source, line, found.closest, text[:2000]))
        return
    if (found["event"] == EV.CLIENT_VERSION and not file.version_pinned and found["attrs"]
            and found["attrs"].get("version")):
        file.kafka_version = found["attrs"]["version"]
    found["kafka_version"] = file.kafka_version
    if found["ts"] is None:
        stats.untimed_events += 1
    stats.events += 1
    events.append(found)
