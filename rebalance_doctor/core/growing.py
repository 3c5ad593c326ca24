"""A log text that is still being written, parsed piece by piece as it grows (the follow mode).

The bytes go through the same steps as a file read at once (``reader``): the layout detected
from the head, then ``reader.parse_chunk`` over whole records. What differs is where a piece is
cut: a record is parsed only once the line that starts the next record has arrived, so that a
multi-line record (a stack trace, a member listing) written across two pieces stays whole. The
last record is held back until then, or until the writer has been quiet for a moment
(``flush``): a logger writes a record in one go, so after a pause the record is complete.
"""

from __future__ import annotations

from . import clusterid, versions
from .options import ReadOptions
from .reader import (MAX_LINE_BYTES, SAMPLE_BYTES, UNKNOWN_LAYOUT, Toolkit, Unit, UnitReading, detect_head,
                     parse_chunk, unit_layout)
from .scan import ChunkScanner
from .sources import Source
from .stats import FileStats
from . import eventnames as EV

# Lines to see before the layout is decided on (unless the writer pauses first): detection picks
# the layout that reads most of a sample, and one line is a thin sample.
DETECT_LINES = 20


class GrowingText:
    """One text stream (a file, or standard input) parsed as it grows.

    ``feed`` takes the bytes that were appended and returns the events of the records now known
    to be complete; ``flush`` (the writer paused, or the stream ended) parses what is held back.
    The file's accounting (``stats``) grows with it, as one read of the file would count it.
    """

    def __init__(self, source: Source, options: ReadOptions, kit: Toolkit):
        self.source = source
        self.options = options
        self.kit = kit
        self.stats = FileStats(source=source.name, host=source.host, codec=source.codec, size=source.size)
        self.refused: str | None = None    # why the stream is not read (binary, not text)
        self.notes: list[str] = []         # one-line notes for the operator, taken by the caller
        self._pending = b""               # bytes not parsed yet: the head before detection, then the last record
        self._reading: UnitReading | None = None
        self._scanner: ChunkScanner | None = None
        self._line = 1                    # line of the first pending byte
        self._events_seen: list[dict] = []  # while no version is stated: what the wording allows
        self._possible: set[str] | None = None   # ... the releases it allows so far (versions.narrow)
        self._closing = False
        self._added_newline = False
        self._stated = False              # the file stated its version (or it is pinned)
        # The cluster: --cluster's NAME for the file, else the id its head states (core/clusterid.py), known as
        # the head arrives; ``cluster_changed`` tells the session to stamp the events it already holds.
        self._named = source.cluster
        self._head = clusterid.Head(SAMPLE_BYTES)
        self.cluster_changed = False

    @property
    def detected(self) -> bool:
        return self._reading is not None

    @property
    def cluster(self) -> str | None:
        """The file's cluster as known so far: --cluster's NAME, else the one id its head states."""
        return self._named if self._named is not None else self._head.cluster

    @property
    def clients(self):
        """A MirrorMaker 2 log's attribution of its clients (core/mirror.py), as known so far; else None."""
        return self._head.clients if self._named is None else None

    def feed(self, data: bytes) -> list[dict]:
        """The events of the records that ``data`` completes."""
        if self.refused is not None:
            self.stats.count_unread("binary", len(data))
            return []
        self._pending += data
        if self._named is None and self._head.feed(data):
            self.cluster_changed = True
            if self._reading is not None:
                for context in self._reading.contexts:   # the events parsed from now on
                    context.cluster, context.clients = self.cluster, self.clients
        elif self._named is not None and self._head.feed(data) and self._head.cluster:
            # --cluster NAME's file states this id: the id is NAME (an MM2 log's clients that print it: timeline/clusters)
            self.stats.cluster_id, self.stats.cluster_name = self._head.cluster, self._named
        if self._reading is None and not self._detect(final=False):
            return []
        if self._scanner is None:   # refused while detecting
            return []
        cut = self._scanner.last_record_start(self._pending)
        return self._parse(max(cut, 0))

    def flush(self) -> list[dict]:
        """The events of every complete line held back (the writer paused or the stream ended);
        a last line without its newline is still held."""
        if self.refused is not None or not self._pending:
            return []
        if self._reading is None and not self._detect(final=True):
            return []
        if self._scanner is None:
            return []
        return self._parse(self._pending.rfind(b"\n") + 1)

    def close(self) -> list[dict]:
        """The stream ended for good: everything held is parsed, a last line without newline too."""
        self._closing = True
        if self._pending and not self._pending.endswith(b"\n") and self.refused is None:
            self._pending += b"\n"   # a last line without its newline: a line all the same (not a byte more)
            self._added_newline = True
        return self.flush()

    def _detect(self, final: bool) -> bool:
        head = self._pending
        lines = head.count(b"\n")
        if not lines:
            return False
        if not final and lines < DETECT_LINES and len(head) < SAMPLE_BYTES:
            return False
        detection, reason = detect_head(head[:SAMPLE_BYTES], len(head), self.options, self.kit)
        if detection is None:
            if reason and reason.startswith("binary"):
                self.refused = reason
                self.notes.append(f"{self.source.name}: {reason}: not read")
                self.stats.count_unread("binary", len(self._pending))
                self.stats.problems.append(reason)
                self._pending = b""
                return False
            return False   # blank lines so far: wait for text
        if not detection.known and not self._closing and lines < DETECT_LINES and len(head) < SAMPLE_BYTES:
            # A few lines no layout reads (a stack trace's tail at the head of a file, a banner):
            # decided for good once more lines have come, or the stream ends.
            return False
        if detection.colours or detection.wrap:
            # The line fixes (colour codes, wrapped lines) read a whole stream (linefix.FixedStream);
            # a growing one is read as it is.
            detection.colours, detection.wrap = False, None
            self.stats.problems.append("colour codes or wrapped lines are not fixed while following")
        layout = unit_layout(detection, self.options, self.kit)
        container = detection.container.name if detection.container else None
        unit = Unit(self.source, layout, container)
        reading = UnitReading(unit, self.options, self.kit)
        for context in reading.contexts:
            context.cluster, context.clients = self.cluster, self.clients
        self._scanner = ChunkScanner(self.kit.scan_engine(any(l.is_json for l, _ in reading.readers), reading.java),
                                     reading.bounds)
        self._reading = reading
        self.stats.layout = reading.plan.describe([(l.name, c.name if c else None) for l, c in reading.readers])
        self.stats.container = container
        if not detection.known:
            self.notes.append(f"{self.source.name}: {UNKNOWN_LAYOUT}")
        return True

    def _parse(self, stop: int) -> list[dict]:
        buf = self._pending
        if stop <= 0:
            if len(buf) > MAX_LINE_BYTES and b"\n" not in buf:
                # A line that never ends would be held for ever: counted and dropped, like a
                # line too long to keep in a file read at once.
                self.stats.count_unread("oversized", len(buf))
                self.stats.problems.append(f"line {self._line}: longer than {MAX_LINE_BYTES >> 20} MiB, skipped")
                self.stats.bytes += len(buf)
                self._pending = b""
            return []
        events: list[dict] = []
        assert self._reading is not None and self._scanner is not None
        parse_chunk(buf, self._line, None, stop, self._scanner, self._reading, self.stats, events)
        newlines, _ = self._scanner.newlines(buf, stop)
        self._line += newlines
        self.stats.lines += newlines
        self.stats.bytes += stop - (1 if self._added_newline and stop == len(buf) else 0)
        self._pending = buf[stop:]
        self._versions(events)
        return events

    def _versions(self, events: list[dict]) -> None:
        """A file that states no version (no `Kafka version:` line, no --kafka-version) takes what
        the wording of its lines allows, as a file read at once does; it narrows as lines come."""
        if not events:
            return
        file = self._reading.file if self._reading else None
        if file is None:
            return
        if not self._stated and (file.version_pinned or any(
                e["event"] == EV.CLIENT_VERSION and (e.get("attrs") or {}).get("version") for e in events)):
            self._stated, self._events_seen = True, []
        if not self._stated:
            # Held while the file states no version, so that a narrower version reaches them too; the follow
            # session drops those it folded (``forget``), and the narrowing goes on from where it was.
            self._events_seen.extend(events)
            self._possible = versions.narrow(self.kit.packs, events, self._possible)
            version = versions.as_range(self._possible)
            if version is not None:
                file.kafka_version = version
                for event in self._events_seen:
                    event["kafka_version"] = version
        self.stats.kafka_version = file.kafka_version

    def forget(self, held: set[int]) -> None:
        """Keep only the events (by id) the session still holds: the others were folded (fold.py)."""
        if self._events_seen:
            self._events_seen = [e for e in self._events_seen if id(e) in held]


__all__ = ["DETECT_LINES", "GrowingText"]
