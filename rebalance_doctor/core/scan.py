"""The chunk scanner: find candidate records in a big buffer without a per-line Python loop.

``bytes.find`` runs once per scan literal over the whole buffer (C speed); only lines that hold
a literal are looked at in Python. A hit is widened to its whole record: back to the line that
starts it, forward over its continuation lines (stack traces, member listings, config dumps).
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

MAX_RECORD_LINES = 2000
MAX_RECORD_BYTES = 1 << 20
ANNOTATION = b"#expect:"  # fixture annotations: never part of a record


@dataclass
class RawRecord:
    line: int      # 1-based line number of the record's first line (relative to the scan origin)
    data: bytes    # the record's lines, newline-joined, without the final newline
    start: int     # offset of the record in the buffer


class ChunkScanner:
    def __init__(self, keys: tuple[bytes, ...], start_rx: "regex.Pattern[bytes]", multiline: bool):
        self.keys = keys
        self.start_rx = start_rx
        self.multiline = multiline

    def is_start(self, buf: bytes, pos: int) -> bool:
        return self.start_rx.match(buf, pos) is not None

    def first_record_start(self, buf: bytes, pos: int = 0) -> int:
        """Offset of the first line at or after pos that starts a record (len(buf) if none)."""
        while pos < len(buf):
            if self.is_start(buf, pos) and not buf.startswith(ANNOTATION, pos):
                return pos
            nl = buf.find(b"\n", pos)
            if nl == -1:
                return len(buf)
            pos = nl + 1
        return len(buf)

    def last_record_start(self, buf: bytes, max_lines: int = MAX_RECORD_LINES) -> int:
        """Offset of the last line of buf that starts a record (a safe place to cut a chunk).

        Returns -1 when no line of the last ``max_lines`` starts a record.
        """
        end = len(buf)
        for _ in range(max_lines):
            nl = buf.rfind(b"\n", 0, end)
            if nl == -1:
                return -1
            pos = nl + 1
            if pos < len(buf) and (not self.multiline or self.is_start(buf, pos)):
                return pos
            end = nl
        return -1

    def scan(self, buf: bytes, first_line: int, limit: int | None = None) -> list[RawRecord]:
        """Candidate records of buf, which starts at a record start and ends at a line end."""
        find = buf.find
        rfind = buf.rfind
        hits: set[int] = set()
        for key in self.keys:
            pos = find(key)
            while pos != -1:
                hits.add(rfind(b"\n", 0, pos) + 1)
                eol = find(b"\n", pos)
                if eol == -1:
                    break
                pos = find(key, eol)
        if not hits:
            return []
        size = len(buf)
        spans: list[tuple[int, int]] = []
        covered = -1
        for line_start in sorted(hits):
            if line_start < covered or buf.startswith(ANNOTATION, line_start):
                continue
            start = line_start
            if self.multiline:
                start = self._record_start(buf, line_start)
                if start < covered:
                    continue
            if limit is not None and start >= limit:
                break
            end = find(b"\n", start)
            end = size if end == -1 else end
            if self.multiline:
                end = self._record_end(buf, start, end)
            spans.append((start, end))
            covered = end + 1
        records = []
        line = first_line
        counted = 0
        for start, end in spans:
            line += buf.count(b"\n", counted, start)
            counted = start
            records.append(RawRecord(line, buf[start:end], start))
        return records

    def _record_start(self, buf: bytes, line_start: int) -> int:
        start = line_start
        for _ in range(MAX_RECORD_LINES):
            if self.is_start(buf, start):
                return start
            if start == 0:
                break
            previous = buf.rfind(b"\n", 0, start - 1) + 1
            if buf.startswith(ANNOTATION, previous):
                break
            start = previous
        return line_start  # an orphan continuation line stands as its own record

    def _record_end(self, buf: bytes, start: int, end: int) -> int:
        size = len(buf)
        lines = 1
        while end < size - 1 and lines < MAX_RECORD_LINES and end - start < MAX_RECORD_BYTES:
            following = end + 1
            if self.is_start(buf, following) or buf.startswith(ANNOTATION, following):
                break
            nl = buf.find(b"\n", following)
            end = size if nl == -1 else nl
            lines += 1
        return end
