"""The chunk scanner: find candidate records in a big buffer without a per-line Python loop.

A candidate is a record with a line that holds a scan literal; only those lines are looked at in
Python. A hit is widened to its whole record: back to the line that starts it, forward over its
continuation lines (stack traces, member listings, config dumps). What a continuation line is
comes from ``RecordBounds``: a line that no reader's start regex matches continues the record
above it only when it has a continuation shape (indented, blank, an exception line, a spanning
template's fixed line opener); any other line starts a record of its own, so a foreign line (a
Kibana date line, a print(), CLI output, another source's line) is never glued to a record.

Two engines find the literals, with the same result:

* ``aho-corasick`` (``ahocorasick_rs``, a dependency): one pass for all the scan literals, with
  the SIMD (Teddy) prefilter of Rust's aho-corasick crate, ~1.8 GB/s per core here. A second
  automaton then finds the pattern gates in each candidate record's bytes (a few MB in all). A
  candidate that holds no gate cannot match any pattern (the matcher looks for a gate in the
  message first), so it is counted as a candidate but not parsed; for the others the gates
  found go with the record, and the matcher tests only those.
* ``find`` (the reference, pure Python): ``bytes.find`` once per scan literal over the whole
  buffer, C speed per pass but one pass per literal; no gate information.

``REBALANCE_DOCTOR_SCAN=find|aho-corasick`` forces one (tests and benchmarks compare them).
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

import regex

from .regex_cache import compiled_regexes

MAX_RECORD_LINES = 2000
MAX_RECORD_BYTES = 1 << 20
ANNOTATION = b"#expect:"  # fixture annotations: never part of a record


ENGINE_VARIABLE = "REBALANCE_DOCTOR_SCAN"
_NEWLINE = ord("\n")


# numpy (~0.1 CPU-s to import) is imported by the first chunk counted, not with this module: a run
# with nothing to read (an empty file, a usage error found late) does not pay for it.
np = None


def _numpy():
    global np
    import numpy

    np = numpy
    return numpy


def count_newlines(buf: bytes, start: int = 0, stop: int | None = None) -> int:
    """Newlines in buf[start:stop]: numpy compares and counts ~2.7x faster than bytes.count."""
    stop = len(buf) if stop is None else stop
    if stop - start < 4096:
        return buf.count(b"\n", start, stop)
    numpy = np or _numpy()
    return int(numpy.count_nonzero(numpy.frombuffer(buf, numpy.uint8, stop - start, start) == _NEWLINE))


@dataclass
class RawRecord:
    line: int      # 1-based line number of the record's first line (relative to the scan origin)
    data: bytes    # the record's lines, newline-joined, without the final newline
    start: int     # offset of the record in the buffer
    gated: bool = True  # False: the record holds no pattern gate, so it cannot match (data is b"")
    gates: set[str] | None = None  # the pattern gates the record holds, when the engine knows


class FindEngine:
    """Hit lines by ``bytes.find``, one pass per scan literal; no gate information."""

    name = "find"

    def __init__(self, keys: tuple[bytes, ...]):
        # A literal that contains another one finds nothing more: drop it, one pass less.
        self.keys = tuple(k for k in dict.fromkeys(keys)
                          if k and not any(o != k and o in k for o in keys if o))

    def hits(self, buf: bytes) -> set[int]:
        """Offsets of the lines holding a scan literal."""
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
        return hits

    def record_gates(self, records: list[bytes]) -> None:
        return None  # the matcher looks for the gates itself


class AhoCorasickEngine:
    """Hit lines by one Aho-Corasick pass over the buffer; gates by another over each record."""

    name = "aho-corasick"

    def __init__(self, keys: tuple[bytes, ...], forms: dict[bytes, str]):
        import ahocorasick_rs

        self.keys = tuple(dict.fromkeys(k for k in keys if k))
        # Leftmost-first and non-overlapping: at least one match on every line that holds a key
        # (keys hold no newline), and the packed SIMD search (overlapping search has none).
        self._keys = ahocorasick_rs.BytesAhoCorasick(
            list(self.keys), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)
        self.gate_names = tuple(forms.values())  # the pattern gate each form stands for
        # The crate's own choice for ~700 forms (a contiguous NFA: ~1.5 MB) runs as fast on a few
        # MB of records as a full DFA, which would take ~17 MB per engine.
        self._gates = ahocorasick_rs.BytesAhoCorasick(list(forms)) if forms else None

    def hits(self, buf: bytes) -> set[int]:
        """Offsets of the lines holding a scan literal."""
        rfind, find = buf.rfind, buf.find
        hits = set()
        line_end = -1
        for _key, start, _end in self._keys.find_matches_as_indexes(buf):
            if start <= line_end:  # matches come in order: one per line is enough
                continue
            hits.add(rfind(b"\n", 0, start) + 1)
            nl = find(b"\n", start)
            line_end = len(buf) if nl == -1 else nl
        return hits

    def record_gates(self, records: list[bytes]) -> list[set[str]] | None:
        """The pattern gates each record's bytes hold (None: no gates known, any record may match).

        One search over the records joined by newlines: a call per record costs more than the
        search itself. Gates hold no newline, so no match spans two records.
        """
        if self._gates is None:
            return None
        starts = []
        offset = 0
        for data in records:
            starts.append(offset)
            offset += len(data) + 1
        found: list[set[str]] = [set() for _ in records]
        names = self.gate_names
        for form, start, _end in self._gates.find_matches_as_indexes(b"\n".join(records), overlapping=True):
            found[bisect_right(starts, start) - 1].add(names[form])
        return found


def gate_forms(gates: list[str], json_layout: bool) -> dict[bytes, str] | None:
    """The byte strings a record must hold one of to match a gate, each with its gate; None when
    that cannot be told.

    In a JSON-lines file the message is a JSON string: a gate may appear escaped.
    """
    if not gates or any(not g or "\n" in g or "\r" in g for g in gates):
        return None
    forms: dict[bytes, str] = {}
    for gate in gates:
        variants = {gate}
        if json_layout:
            for ascii_only in (False, True):
                escaped = json.dumps(gate, ensure_ascii=ascii_only)[1:-1]
                variants |= {escaped, escaped.replace("/", "\\/")}
        for variant in variants:
            forms.setdefault(variant.encode("utf-8"), gate)
    return forms


def make_engine(keys: tuple[bytes, ...], forms: dict[bytes, str] | None):
    """The engine REBALANCE_DOCTOR_SCAN names, else Aho-Corasick when it imports, else find.
    ``forms`` are the gate forms (``gate_forms``), None when gates cannot be told from bytes."""
    wanted = os.environ.get(ENGINE_VARIABLE, "auto")
    if wanted not in ("auto", "find", "aho-corasick"):
        raise ValueError(f"{ENGINE_VARIABLE}={wanted!r}: use find, aho-corasick or auto")
    if wanted != "find":
        try:
            return AhoCorasickEngine(keys, forms or {})
        except ImportError:
            if wanted == "aho-corasick":
                raise ValueError(f"{ENGINE_VARIABLE}=aho-corasick but ahocorasick_rs is not installed")
    return FindEngine(keys)


@dataclass(frozen=True)
class RecordBounds:
    """Which lines start a record: a line one of the readers' start regexes matches, or a line
    without a continuation shape (``continuation`` None: every line is a record, as in JSON lines)."""

    start: "regex.Pattern[bytes]"
    continuation: "regex.Pattern[bytes] | None"
    following: "regex.Pattern[bytes]"   # a newline followed by a line that starts a record

    def is_start(self, buf: bytes, pos: int, stop: int | None = None) -> bool:
        stop = len(buf) if stop is None else stop
        if self.continuation is None or self.start.match(buf, pos, stop) is not None:
            return True
        return self.continuation.match(buf, pos, stop) is None


@lru_cache(maxsize=64)
def record_bounds(starts: tuple[bytes, ...], prefixes: tuple[bytes, ...], shapes: tuple[str, ...] | None,
                  heads: tuple[str, ...] = ()) -> RecordBounds:
    """The bounds of the records of a unit read by readers whose start regexes (container prefix
    included, each anchored with ``^``) are ``starts``; ``prefixes`` are their container prefixes,
    which continuation lines carry too; ``shapes`` the continuation shapes (regex sources; None:
    one record a line); ``heads`` the literal ends of lines after which one line of anything
    continues the record (a spanning template's listing: ``...to consumers: \n{c1=[t-0]}``)."""
    start = b"(?:" + b"|".join(_unanchored(s) for s in starts) + b")"
    if shapes is None:
        start_rx, following = _compiled(b"^" + start, b"\n")
        return RecordBounds(start_rx, None, following)
    prefix = b"(?:" + b"|".join(_unanchored(p) for p in prefixes if p) + b")?" if any(prefixes) else b""
    shape = b"(?:" + b"|".join(s.encode() for s in shapes) + b")"
    continuation = prefix + shape
    if heads:
        after_head = b"(?<=(?:" + b"|".join(regex.escape(h.encode()) for h in heads) + b")[ \t]*\r?\n)"
        continuation = b"(?:" + after_head + b"|" + continuation + b")"
    return RecordBounds(*_compiled(b"^" + start, b"^" + continuation,
                                   b"\n(?:(?=" + start + b")|(?!" + continuation + b"))"))


def _compiled(*sources: bytes) -> list["regex.Pattern[bytes]"]:
    """The sources compiled (multi-line), from the regex cache when there is one: with the packs'
    ~1,100 spanning-template line openers in them, compiling them took ~0.15 CPU-s a process."""
    cached = compiled_regexes(sources, regex.MULTILINE) or {}
    return [cached.get(source) or regex.compile(source, regex.MULTILINE) for source in sources]


def _unanchored(source: bytes) -> bytes:
    return source[1:] if source.startswith(b"^") else source


class ChunkScanner:
    def __init__(self, engine, bounds: RecordBounds, multiline: bool | None = None):
        self.engine = engine
        self.bounds = bounds
        self.multiline = bounds.continuation is not None if multiline is None else multiline
        self.counted = (0, 0)  # (offset, newlines before it) where the last scan stopped counting
        self._newline_mask: np.ndarray | None = None  # buf[:stop] == newline, of the last scan

    def is_start(self, buf: bytes, pos: int, stop: int | None = None) -> bool:
        return self.bounds.is_start(buf, pos, stop)

    def first_record_start(self, buf: bytes, pos: int = 0, before: bytes = b"") -> int:
        """Offset of the first line at or after pos that starts a record (len(buf) if none).

        ``before``: what precedes buf in the stream (the end of the line before it), which
        decides whether buf's first line continues a record."""
        while pos < len(buf):
            starts = (self.is_start(before + buf[:buf.find(b"\n", pos) + 1 or len(buf)], len(before))
                      if pos == 0 and before else self.is_start(buf, pos))
            if starts and not buf.startswith(ANNOTATION, pos):
                return pos
            nl = buf.find(b"\n", pos)
            if nl == -1:
                return len(buf)
            pos = nl + 1
        return len(buf)

    def last_record_start(self, buf: bytes, max_lines: int = MAX_RECORD_LINES) -> int:
        """A safe place to cut a chunk: the offset of buf's last line that starts a record.

        When none of the last ``max_lines`` lines starts one, the offset of buf's last line: a
        record is never longer than that many lines (``_record_end``), so every line after the
        cut is an orphan continuation line in either chunk, and a long run of lines that start
        no record (a layout that changes mid-file) is read chunk by chunk instead of carried
        whole, which re-read the carry on every chunk (quadratic) and held it all in memory.
        Returns -1 when buf's lines run out first: its first record may go on.
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
        return buf.rfind(b"\n") + 1

    def scan(self, buf: bytes, first_line: int, limit: int | None = None,
             stop: int | None = None) -> list[RawRecord]:
        """Candidate records of buf[:stop], which starts at a record start and ends at a line end.

        ``stop`` saves copying the part of a chunk that can be scanned out of the chunk.
        """
        find = buf.find
        size = len(buf) if stop is None else stop
        self.counted = (0, 0)
        self._newline_mask = None
        hits = self.engine.hits(buf)
        if not hits:
            return []
        spans: list[tuple[int, int]] = []
        covered = -1
        for line_start in sorted(hits):
            if line_start >= size:
                break
            if line_start < covered or buf.startswith(ANNOTATION, line_start):
                continue
            start = line_start
            if self.multiline:
                start = self._record_start(buf, line_start, size)
                if start < covered:
                    continue
            if limit is not None and start >= limit:
                break
            end = find(b"\n", start, size)
            end = size if end == -1 else end
            if self.multiline:
                end = self._record_end(buf, start, end, size)
            spans.append((start, end))
            covered = end + 1
        records = []
        line = first_line
        counted = 0
        # One comparison of the whole chunk; each record's line is then a count over a slice.
        numpy = np or _numpy()
        mask = numpy.frombuffer(buf, numpy.uint8, size) == _NEWLINE if spans else None
        self._newline_mask = mask
        datas = [buf[start:end] for start, end in spans]
        gates_of = self.engine.record_gates(datas)
        for i, (start, end) in enumerate(spans):
            gates = None if gates_of is None else gates_of[i]
            if gates is not None and not gates and end - start <= MAX_RECORD_BYTES:
                records.append(RawRecord(0, b"", start, gated=False))
                continue
            line += int(numpy.count_nonzero(mask[counted:start]))
            counted = start
            records.append(RawRecord(line, datas[i], start, True, gates))
        self.counted = (counted, line - first_line)
        return records

    def newlines(self, buf: bytes, stop: int, limit: int | None = None) -> tuple[int, int]:
        """Newlines in buf[:stop] and in buf[:limit] (the part of a range's last chunk before
        the range ends) after a scan, which counted the part before its last record.

        Ends the chunk: its newline mask is dropped before the next chunk is read."""
        counted, before = self.counted
        mask, self._newline_mask = self._newline_mask, None

        def upto(end: int) -> int:  # the mask covers buf[:stop], and limit < stop
            if mask is None:  # no record in the chunk: nothing was compared yet
                return before + count_newlines(buf, counted, end)
            return before + int(np.count_nonzero(mask[counted:end]))

        in_chunk = upto(stop)
        return in_chunk, (in_chunk if limit is None or limit >= stop else upto(limit))

    def _record_start(self, buf: bytes, line_start: int, size: int) -> int:
        start = line_start
        is_start = self.bounds.is_start  # once per candidate record: the wrapper's call costs as much as the match
        for _ in range(MAX_RECORD_LINES):
            if is_start(buf, start, size):
                return start
            if start == 0:
                break
            previous = buf.rfind(b"\n", 0, start - 1) + 1
            if buf.startswith(ANNOTATION, previous):
                break
            start = previous
        return line_start  # an orphan continuation line stands as its own record

    def _record_end(self, buf: bytes, start: int, end: int, size: int) -> int:
        """End of the record whose first line is [start, end): before the next record start."""
        if end >= size - 1 or end - start >= MAX_RECORD_BYTES:
            return end
        # One regex search (C) finds the next record start; the line-by-line walk below gives the
        # same answer and only runs for records that reach a size or line limit, or the buffer end.
        window = min(size, start + MAX_RECORD_BYTES + 4096)
        found = self.bounds.following.search(buf, end, window)
        following = found.start() + 1 if found else -1
        annotation = buf.find(b"\n" + ANNOTATION, end, window if following == -1 else following)
        if annotation != -1 and (following == -1 or annotation + 1 < following):
            following = annotation + 1
        if (following != -1 and following - 1 - start <= MAX_RECORD_BYTES
                and (following - start <= MAX_RECORD_LINES
                     or buf.count(b"\n", start, following - 1) < MAX_RECORD_LINES)):
            return following - 1
        return self._record_end_by_lines(buf, start, end, size)

    def _record_end_by_lines(self, buf: bytes, start: int, end: int, size: int) -> int:
        lines = 1
        while end < size - 1 and lines < MAX_RECORD_LINES and end - start < MAX_RECORD_BYTES:
            following = end + 1
            if self.is_start(buf, following, size) or buf.startswith(ANNOTATION, following):
                break
            nl = buf.find(b"\n", following, size)
            end = size if nl == -1 else nl
            lines += 1
        return end
