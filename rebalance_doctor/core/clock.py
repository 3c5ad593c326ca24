"""File order decides what a written time means: one ``Clock`` per host of a file, fed its records'
times in the order the file holds them.

* The repeated hour of a DST change (autumn, 02:00-02:59 twice in Europe/Berlin): a record whose
  local time went back into that hour is in its second pass (``fold=1``), and so are the records
  after it until the time leaves the hour. The zone is asked only on the days that hold a
  change (``_Days``); on every other day a record costs two comparisons.
* The hour a DST change skips (spring): a record written there has no true time; it is read with
  the offset before the change (PEP 495's ``fold=0``) and counted, never shifted silently.
* Time-of-day-only layouts: a time that went back across midnight (23:59 -> 00:00) is the next
  day. Going back by more than half a day is read as midnight (the nearer reading), less as a jump.
* A time that went back by more than ``TOLERANCE`` otherwise (a clock stepped back, files joined
  out of order) is a backward jump: counted with the largest one and its line, and, as lnav does
  for its "out-of-time-order" lines, the records behind keep file order: their ``ts`` is held at
  the last time before the jump until the written time catches up, and ``attrs.ts_written`` keeps
  what the line wrote.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone, tzinfo

from dateutil import tz as dateutil_tz

# Threads and async appenders write lines a little out of time order (the time is taken before
# the write): going back by less than this is such jitter, sorted by time as written.
TOLERANCE = timedelta(seconds=60)
_DAY = timedelta(days=1)
_HALF_DAY = timedelta(hours=12)
_ZERO = timedelta(0)


class Clock:
    """One host's times in one file, read in file order (see the module's docstring)."""

    def __init__(self, zone: tzinfo, zone_name: str = "", base_is_last: bool = False):
        self.zone = zone
        # The base date of time-of-day-only times is that of the file's last line (its mtime), not
        # of its first: ``finish`` moves the records it dated back by the midnights crossed.
        self.base_is_last = base_is_last
        self.zone_name = zone_name or str(zone)
        # A fixed offset (UTC, +02:00) never repeats or skips an hour.
        self.days = None if isinstance(zone, timezone) else _Days(zone)
        self.last: datetime | None = None       # the last naive local time, midnights added
        self.ahead = _ZERO                      # days added to time-of-day-only times
        self.folded = False                     # in the second pass of a repeated hour
        self.high: datetime | None = None       # the latest UTC time so far, in file order
        self.behind = False                     # records after a backward jump, not caught up
        self.previous: datetime | None = None   # the UTC time the last record wrote
        self.repeated = self.repeated_line = 0
        self.skipped = self.skipped_line = 0
        self.midnights = self.midnight_line = 0
        self.jumps = self.jump_line = 0
        self.largest = _ZERO
        self.day_events: list[dict] = []        # events dated by a last-line base date (``finish``)

    def local(self, naive: datetime, time_only: bool, line: int) -> datetime:
        """The naive local time of a record, with its day advanced past midnights and its fold set."""
        last = self.last
        if time_only:
            if self.ahead:
                naive += self.ahead
            if last is not None and last - naive > _HALF_DAY:
                self.ahead += _DAY
                naive += _DAY
                self.midnights += 1
                self.midnight_line = self.midnight_line or line
        days = self.days
        if days is not None and not days.plain(naive):
            zone = self.zone
            if not dateutil_tz.datetime_exists(naive, zone):
                self.skipped += 1
                self.skipped_line = self.skipped_line or line
                self.folded = False
            elif dateutil_tz.datetime_ambiguous(naive, zone):
                if (not self.folded and last is not None and last - naive > TOLERANCE
                        and dateutil_tz.datetime_ambiguous(last, zone)):
                    self.folded = True
                if self.folded:
                    self.repeated += 1
                    self.repeated_line = self.repeated_line or line
                    self.last = naive
                    return naive.replace(fold=1)
            else:
                self.folded = False
        else:
            self.folded = False
        self.last = naive
        return naive

    def order(self, ts: datetime, line: int) -> datetime | None:
        """The time a record is ordered by: ``ts``, or after a backward jump the last time before
        it (returned; None when ``ts`` stands)."""
        high = self.high
        previous, self.previous = self.previous, ts
        if high is None:
            self.high = ts
            return None
        if not self.behind:
            if ts > high:
                self.high = ts
                return None
            if high - ts <= TOLERANCE:
                return None
            self.behind = True
            self._jump(high - ts, line)
            return high
        if ts >= high:
            self.behind = False
            self.high = ts
            return None
        if previous - ts > TOLERANCE:
            self._jump(previous - ts, line)
        return high

    def _jump(self, by: timedelta, line: int) -> None:
        self.jumps += 1
        if by > self.largest:
            self.largest, self.jump_line = by, line

    def finish(self) -> None:
        """At the end of the file: the records a last-line base date dated move back by the
        midnights the file crossed (``base_is_last``)."""
        if self.midnights:
            back = self.ahead
            for event in self.day_events:
                if event["ts"] is not None:
                    event["ts"] -= back
        self.day_events.clear()

    def notes(self, source: str) -> list[str]:
        """What the accounting says of this host's times, in words (``FileStats.problems``)."""
        out = []
        if self.repeated:
            out.append(f"{self.repeated} record(s) in the second pass of the hour a DST change repeats in "
                       f"{self.zone_name} (from line {self.repeated_line}): placed after the first pass, by file order")
        if self.skipped:
            out.append(f"{self.skipped} record(s) at local times that do not exist in {self.zone_name} (the hour a DST "
                       f"change skips, first at line {self.skipped_line}): read with the offset before the change")
        if self.midnights:
            out.append(f"the time of day went back past midnight {self.midnights} time(s) (first at line "
                       f"{self.midnight_line}): the date advanced by a day each time")
        if self.jumps:
            out.append(f"time went back {self.jumps} time(s), the most by {_span(self.largest)} at line {self.jump_line}: "
                       f"the records after it keep file order (ts held at the time before the jump; "
                       f"attrs.ts_written is the time written)")
        return out


class _Days:
    """Which days of a zone hold no change of its offset (asked once per day met)."""

    def __init__(self, zone: tzinfo):
        self.zone = zone
        self.start = self.end = datetime.min   # [start, end): the plain day last asked about
        self.known: dict[date, bool] = {}

    def plain(self, naive: datetime) -> bool:
        if self.start <= naive < self.end:
            return True
        day = naive.date()
        plain = self.known.get(day)
        if plain is None:
            start = datetime(day.year, day.month, day.day)
            try:
                end = start + _DAY
                plain = self.zone.utcoffset(start) == self.zone.utcoffset(end)
            except OverflowError:   # 9999-12-31
                plain = True
            if len(self.known) > 4096:
                self.known.clear()
            self.known[day] = plain
        if plain:
            self.start = datetime(day.year, day.month, day.day)
            self.end = self.start + _DAY if day < date.max else datetime.max
        return plain


def _span(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"
