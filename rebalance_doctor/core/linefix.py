"""Undo what terminals and exports did to a log's lines before its records are read: ANSI colour
codes (`docker compose logs` colours its service prefixes; some exports write them as the
literal text `ESC[36m`) are removed, and lines hard-wrapped at a fixed width (a terminal or an
issue tracker's 80 or 200 columns) are joined again.

Both are decided per file from its sample (``has_colour_codes``, ``wrap_width``) and applied to
the stream as it is read (``FixedStream``); a file that needs neither is read as it is, at no cost.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter

import regex

# CSI sequences (colours, erase-line) with a real ESC byte, and SGR colours written out as text.
COLOUR_CODES = regex.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|ESC\[[0-9;]*m")
MIN_WRAP_WIDTH = 40
MIN_WRAPPED_LINES = 3
MIN_WRAPPED_SHARE = 0.15


def has_colour_codes(lines: list[bytes]) -> bool:
    return any(b"\x1b[" in line or b"ESC[" in line for line in lines) and any(
        COLOUR_CODES.search(line) for line in lines)


def strip_colour_codes(line: bytes) -> bytes:
    return COLOUR_CODES.sub(b"", line)


def _signature(line: bytes) -> bytes:
    """The shape of a line's start: digits and letters by class, everything else as it is."""
    return bytes(57 if 48 <= c <= 57 else 97 if (65 <= c <= 90 or 97 <= c <= 122) else c for c in line[:6])


def columns(line: bytes) -> int:
    """How many terminal columns a line takes: a terminal or a log viewer wraps at a width in characters, and
    a UTF-8 character outside ASCII (an em dash in a 4.4 broker line) is several bytes."""
    return len(line) if line.isascii() else len(line.decode("utf-8", "replace"))


def wrap_width(lines: list[bytes]) -> int:
    """The width the sampled lines were hard-wrapped at, or 0 when they were not.

    Layout-independent signals, all required: no line is longer than N; at least 3 lines (and 15%
    of the non-blank ones) are exactly N long; those lines end on varied characters (lines that are
    N long because they are complete records of one shape end alike); and the lines after them
    mostly start unlike the lines that follow shorter lines (which, in a wrapped file, are the
    record starts)."""
    lines = [l.rstrip(b"\r") for l in lines]
    filled = [l for l in lines if l.strip()]
    if not filled:
        return 0
    width = max(columns(l) for l in filled)
    wrapped = [i for i, l in enumerate(lines) if columns(l) == width]
    if (width < MIN_WRAP_WIDTH or len(wrapped) < max(MIN_WRAPPED_LINES, MIN_WRAPPED_SHARE * len(filled))
            or (wrapped and wrapped[-1] == len(lines) - 1 and len(wrapped) == MIN_WRAPPED_LINES)):
        return 0
    endings = Counter(lines[i][-1:] for i in wrapped)
    if endings.most_common(1)[0][1] > 0.5 * len(wrapped):
        return 0
    after_wrapped = [_signature(lines[i + 1]) for i in wrapped if i + 1 < len(lines)]
    wrapped_set = set(wrapped)
    after_short = Counter(_signature(lines[i + 1]) for i in range(len(lines) - 1)
                          if i not in wrapped_set and lines[i + 1].strip())
    if not after_wrapped:
        return 0
    if not after_short:  # every line is N long but the last pieces: nothing to compare with
        return width
    usual = {sig for sig, count in after_short.items() if count >= 0.1 * sum(after_short.values())}
    unlike = sum(1 for sig in after_wrapped if sig not in usual)
    return width if unlike >= 2 / 3 * len(after_wrapped) else 0


# What a terminal's wrap is: it cuts a line every N columns whatever it holds, so a piece after an
# N-long line may start anywhere in the text (with a ``{`` inside a JSON message, a word, a digit),
# and it never leaves an empty piece. What starts a line is learned from the file itself: a line
# after a line shorter than N is certainly a line start (a record's or a foreign line's: a Kibana
# date, a blank, CLI output), and a piece shaped like the usual line starts is one too. A line that
# ends exactly at N before such a line was complete; anything else after it continues it.
SHAPE_LENGTH = 8     # symbols a shape keeps
USUAL_SHARE = 0.05   # a shape this common among the line starts seen (and seen 3 times) starts a line
USUAL_MIN = 3
_CLASSES = bytes.maketrans(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                           b"9" * 10 + b"a" * 52)


def line_shapes(text: bytes) -> list[bytes]:
    """The shape of each line of ``text``: each run of digits as ``9`` and of letters as ``a``
    (``5/1/24 9:40`` and ``12/31/2026 10:01`` alike), other bytes as they are; its first
    SHAPE_LENGTH symbols are what is compared. All lines at once (a wrapped file's every line is
    shaped): halving runs with ``replace`` is several times faster than a regex."""
    text = text.translate(_CLASSES)
    while b"aa" in text:
        text = text.replace(b"aa", b"a")
    while b"99" in text:
        text = text.replace(b"99", b"9")
    return text.split(b"\n")


class LineStarts:
    """The shapes of a file's known line starts, and whether a line after an N-long one starts a
    line (else it is the rest of the line before it). ``start``: the record starts of the file's
    layouts; a line it matches starts a line when its shape is among the known line starts (a
    weak start such as a JSON layout's ``{`` does not make a piece ``{81aef237-...`` a record)."""

    def __init__(self, start: "regex.Pattern[bytes] | None" = None):
        self._start = start
        self._seen: Counter[bytes] = Counter()
        self._total = 0

    def learn(self, shapes: list[bytes], full: list[bool], after_short: bool) -> None:
        """Learn the shapes of the lines that follow a line shorter than the width (``shapes`` and
        ``full``, whether each is as long as the width, of consecutive lines; ``after_short``:
        whether the first of them follows a shorter line)."""
        learned = [shape[:SHAPE_LENGTH] for shape, after in zip(shapes, [not after_short] + full[:-1]) if not after]
        self._seen.update(learned)
        self._total += len(learned)

    def starts_line(self, line: bytes, shape: bytes) -> bool:
        if not line or line == b"\r":
            return True  # a wrap never leaves an empty piece
        seen = self._seen.get(shape[:SHAPE_LENGTH], 0)
        if seen >= max(USUAL_MIN, USUAL_SHARE * self._total):
            return True
        return self._start is not None and (seen > 0 or not self._total) and self._start.match(line) is not None


def unwrap_lines(lines: list[bytes], width: int, start: "regex.Pattern[bytes] | None" = None) -> list[bytes]:
    """The sample's lines joined again (for layout detection)."""
    starts = LineStarts(start)
    shapes = line_shapes(b"\n".join(lines))
    full = [columns(line.rstrip(b"\r")) == width for line in lines]
    starts.learn(shapes, full, True)
    out: list[bytes] = []
    for i, line in enumerate(lines):
        if i and full[i - 1] and not starts.starts_line(line, shapes[i]):
            out[-1] += line
        else:
            out.append(line)
    return out


class FixedStream:
    """A read-only stream over ``raw`` that yields its bytes with colour codes removed and wrapped
    lines joined. ``raw_bytes`` counts what was read from ``raw``; ``physical_line`` turns a line
    number of the fixed text into the line number in the file."""

    def __init__(self, raw, colours: bool, width: int, start: "regex.Pattern[bytes] | None" = None):
        self._raw = raw
        self._colours = colours
        self._width = width
        self._starts = LineStarts(start)
        self._after_short = True   # the next line given to _fix follows a line shorter than the width
        self._pending = b""
        self._lines_out = 0        # newlines given out so far
        self._joined: list[int] = []  # for each newline removed, the fixed line it was in (1-based)
        self.raw_bytes = 0

    def read(self, size: int = -1) -> bytes:
        while True:
            chunk = self._raw.read(size if size and size > 0 else 1 << 20)
            self.raw_bytes += len(chunk)
            data = self._pending + chunk
            if not chunk:
                self._pending = b""
                return self._fix(data, None)
            last = data.rfind(b"\n")
            # With wrapping, the last complete line waits for the line after it (is it joined?).
            keep = (data.rfind(b"\n", 0, last) + 1 if last > 0 else 0) if self._width else last + 1
            if keep <= 0:
                self._pending = data
                continue
            self._pending = data[keep:]
            out = self._fix(data[:keep], data[keep:last + 1] if self._width else None)
            if out:
                return out

    def _fix(self, data: bytes, following: bytes | None) -> bytes:
        """``data`` (whole lines, or the end of the stream) fixed; ``following``: the complete line
        after it (None at the end of the stream)."""
        if self._colours:
            data = COLOUR_CODES.sub(b"", data)
        if not self._width or not data:
            self._lines_out += data.count(b"\n")
            return data
        if following is not None and self._colours:
            following = COLOUR_CODES.sub(b"", following)
        lines = data.split(b"\n")
        ends_with_newline = data.endswith(b"\n")
        if ends_with_newline:
            lines.pop()
        shapes = line_shapes(data)
        full = [columns(line.rstrip(b"\r")) == self._width for line in lines]
        self._starts.learn(shapes, full, self._after_short)
        self._after_short = not full[-1]
        out = bytearray()
        for i, line in enumerate(lines):
            out += line
            is_last = i == len(lines) - 1
            if is_last and not ends_with_newline:
                break  # the end of the stream, without a newline
            if full[i] and not is_last:
                joined = not self._starts.starts_line(lines[i + 1], shapes[i + 1])
            elif full[i] and following is not None:
                joined = not self._starts.starts_line(following, line_shapes(following)[0])
            else:
                joined = False
            if joined:
                if line.endswith(b"\r"):
                    del out[-1]
                self._joined.append(self._lines_out + 1)
            else:
                out += b"\n"
                self._lines_out += 1
        return bytes(out)

    def physical_line(self, line: int) -> int:
        """The file's line number of the fixed text's line ``line`` (1-based)."""
        return line + bisect_left(self._joined, line)

    @property
    def joined(self) -> int:
        """How many newlines were removed (wrapped lines joined)."""
        return len(self._joined)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
