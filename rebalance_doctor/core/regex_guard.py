"""Every regex that reads log text runs bounded, and a regex that gives up is counted.

* Pattern regexes (``matcher``) and layout record regexes (``Layout.split``) run with a
  timeout (``REGEX_TIMEOUT_S``): a record one of them gives up on is read as not matching.
* Record-start regexes run once per line of every file, where a timeout's own cost (~3 us a
  call with the ``regex`` module) would be a tenth of the reading time. ``patterns check``
  keeps the shipped layouts free of repeats that backtrack (``regex_lint``), so they run bare;
  the start regexes of a ``--layout`` of the user's that has repeats over overlapping characters
  (alone, and as part of the record bounds' composed regexes, ``scan.record_bounds``) are wrapped
  in ``GuardedStart``, which adds the timeout and tests a line on its first ``START_PREFIX_BYTES``
  only (a record start is a few fields long).
* A timeout bounds one record, not a file: 0.25 s a record over a 400k-line log is a day. So the
  time of the guarded calls that are slow (``SLOW_CALL_S`` of CPU or more: a record that makes a
  regex backtrack) is summed, per file (``FILE_BUDGET_S``) and per process of the run
  (``RUN_BUDGET_S``; each worker of ``--jobs N`` has its own). Once a budget is spent, the
  guarded regexes of the rest of the file (of the run) are not tried: the records and lines they
  would have examined are counted (``skipped()``) and read as not matching.
* The time is the thread's CPU time (``clock``), and an ordinary record (microseconds; a few
  milliseconds when a variant's regex is compiled on its first use) spends nothing: the budget
  bounds what backtracking costs, so neither a large file of well-formed records nor a machine
  loaded by other work (whose wall clock runs while this process waits) can spend it.

``timed_out()`` counts in the process; the reader turns the counts into each file's
``regex_timeouts`` and ``regex_skipped`` (the accounting, with the budget and what it gave up in
the file's problems), which make the run's exit code 3: a record that could not be examined may
have been an event.
"""

from __future__ import annotations

import time

REGEX_TIMEOUT_S = 0.25       # a pathological record must not hang a regex
START_TIMEOUT_S = 0.05       # per line, for start regexes that need a guard
START_PREFIX_BYTES = 4096    # how much of a line a record-start regex may look at
FILE_BUDGET_S = 20.0         # guarded regex time a file may take in all (80 records given up on)
RUN_BUDGET_S = 60.0          # and a process of the run, over all its files
SLOW_CALL_S = 0.010          # a call this slow (CPU) spends its time from the budgets; a faster one nothing

_count = 0
_skipped = 0
_spent_run = 0.0
_spent: dict[str, float] = {}    # by file, in this process
_file = ""
_file_spent = 0.0                # _spent[_file], kept at hand
clock = time.thread_time     # CPU time of this thread: what the regexes spent, not what the machine's load added


def timed_out() -> None:
    global _count
    _count += 1


def timeouts() -> int:
    """Regex timeouts so far in this process (the reader takes the difference per unit)."""
    return _count


def skipped() -> int:
    """Records and lines whose guarded regexes were not tried, a budget being spent."""
    return _skipped


def begin_file(name: str) -> None:
    """The file whose records the guarded regexes read from now on (its ranges share its budget)."""
    global _file, _file_spent
    _file, _file_spent = name, _spent.get(name, 0.0)


def spent() -> tuple[float, float]:
    """(seconds of guarded regex time of the current file, of this process)."""
    return _file_spent, _spent_run


def end_file() -> None:
    """No file is being read (layouts are being detected, files planned): nothing is budgeted."""
    global _file, _file_spent
    _file, _file_spent = "", 0.0


def exhausted() -> bool:
    """A budget is spent: the caller skips its regex (and calls ``skip``)."""
    return bool(_file) and (_file_spent >= FILE_BUDGET_S or _spent_run >= RUN_BUDGET_S)


def skip() -> None:
    global _skipped
    _skipped += 1


def spend(seconds: float) -> None:
    """A guarded call took ``seconds`` (``clock``): spent from the budgets when the call was slow."""
    global _file_spent, _spent_run
    if not _file or seconds < SLOW_CALL_S:
        return
    _file_spent += seconds
    _spent_run += seconds
    _spent[_file] = _file_spent


def reset() -> None:
    """A new run in this process (the API called again, a worker reused): budgets start afresh."""
    global _spent_run, _file, _file_spent
    _spent_run, _file, _file_spent = 0.0, "", 0.0
    _spent.clear()


class GuardedStart:
    """A record-start regex with a timeout on every call and its time spent from the budgets
    (for regexes ``regex_lint`` cannot clear of overlapping repeats). Same calls as a compiled
    pattern: ``match``, ``search``."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.pattern = compiled.pattern

    def match(self, buf, pos: int = 0, endpos: int | None = None):
        if exhausted():
            skip()
            return None
        end = len(buf) if endpos is None else endpos
        began = clock()
        try:
            return self.compiled.match(buf, pos, min(end, pos + START_PREFIX_BYTES), timeout=START_TIMEOUT_S)
        except TimeoutError:
            timed_out()
            return None
        finally:
            spend(clock() - began)

    def search(self, buf, pos: int = 0, endpos: int | None = None):
        if exhausted():
            skip()
            return None
        began = clock()
        try:
            return self.compiled.search(buf, pos, len(buf) if endpos is None else endpos, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            timed_out()
            return None
        finally:
            spend(clock() - began)


def guarded(compiled, source: str):
    """``compiled`` itself when its regex cannot backtrack badly, else a ``GuardedStart``."""
    from .regex_lint import overlapping_repeats

    return GuardedStart(compiled) if overlapping_repeats(source) else compiled
