"""Every regex that reads log text runs bounded, and a regex that gives up is counted.

* Pattern regexes (``matcher``) and layout record regexes (``Layout.split``) run with a
  timeout (``REGEX_TIMEOUT_S``): a record one of them gives up on is read as not matching.
* Record-start regexes run once per line of every file, where a timeout's own cost (~3 us a
  call with the ``regex`` module) would be a tenth of the reading time. ``patterns check``
  keeps the shipped layouts free of repeats that backtrack (``regex_lint``), so they run bare;
  the start regex of a ``--layout`` of the user's that has repeats over overlapping characters
  is wrapped in ``GuardedStart``, which adds the timeout and tests a line on its first
  ``START_PREFIX_BYTES`` only (a record start is a few fields long).

``timed_out()`` counts in the process; the reader turns the count into each file's
``regex_timeouts`` (the accounting), which makes the run's exit code 3: a record that could
not be examined may have been an event.
"""

from __future__ import annotations

REGEX_TIMEOUT_S = 0.25       # a pathological record must not hang a regex
START_TIMEOUT_S = 0.05       # per line, for start regexes that need a guard
START_PREFIX_BYTES = 4096    # how much of a line a record-start regex may look at

_count = 0


def timed_out() -> None:
    global _count
    _count += 1


def timeouts() -> int:
    """Regex timeouts so far in this process (the reader takes the difference per unit)."""
    return _count


class GuardedStart:
    """A record-start regex with a timeout on every call (for regexes ``regex_lint`` cannot
    clear of overlapping repeats). Same calls as a compiled pattern: ``match``, ``search``."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.pattern = compiled.pattern

    def match(self, buf, pos: int = 0, endpos: int | None = None):
        end = len(buf) if endpos is None else endpos
        try:
            return self.compiled.match(buf, pos, min(end, pos + START_PREFIX_BYTES), timeout=START_TIMEOUT_S)
        except TimeoutError:
            timed_out()
            return None

    def search(self, buf, pos: int = 0, endpos: int | None = None):
        try:
            return self.compiled.search(buf, pos, len(buf) if endpos is None else endpos, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            timed_out()
            return None


def guarded(compiled, source: str):
    """``compiled`` itself when its regex cannot backtrack badly, else a ``GuardedStart``."""
    from .regex_lint import overlapping_repeats

    return GuardedStart(compiled) if overlapping_repeats(source) else compiled
