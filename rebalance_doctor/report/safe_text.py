"""Text that came from a log, made safe to show: control characters become visible escapes.

A log line may hold terminal escape sequences (``ESC]0;title BEL``, cursor movement, OSC 8 links),
carriage returns that overwrite what was printed, or bidirectional-override characters that make a
line read differently from what it holds. Every string read from an input goes through ``visible``
before a terminal, a Markdown document or an HTML page shows it (HTML escapes its markup on top).
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls; the Unicode line/paragraph separators and
# the bidirectional embedding, override and isolate characters.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, keep_newlines: bool = True) -> str:
    """``text`` with every unsafe character written as ``\\x1b`` / ``\\u202e``; newlines kept
    (or escaped too, for a one-line field), tabs kept."""
    out = _UNSAFE.sub(_escape, text)
    return out if keep_newlines else out.replace("\n", "\\n")
