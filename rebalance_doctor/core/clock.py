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
  out of order) is a backward jump: counted with the largest one and its line, and said in the
  accounting; the records keep the times they wrote (so the timeline orders them by time). A file
  read in byte ranges has this decided again over the whole file (``reorder``): each range knew
  only its own records.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Callable

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
        self.times = Order()                    # backward jumps: the record's UTC time, in file order
        self.repeated = self.repeated_line = 0
        self.skipped = self.skipped_line = 0
        self.midnights = self.midnight_line = 0
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

    def finish(self) -> None:
        """At the end of the file: the records a last-line base date dated move back by the
        midnights the file crossed (``base_is_last``)."""
        if self.midnights:
            back = self.ahead
            for event in self.day_events:
                if event["ts"] is not None:
                    event["ts"] -= back
        self.day_events.clear()

    def notes(self) -> list[str]:
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
        if self.times.jumps:
            out.append(self.times.note())
        return out


JUMP_NOTE = "time went back "   # the start of a backward jump's note (``reorder`` replaces it)


class Order:
    """Backward jumps of one host's times in one file, in file order (see the module's docstring)."""

    __slots__ = ("high", "previous", "behind", "jumps", "largest", "line", "repeated")

    def __init__(self):
        self.high: datetime | None = None       # the latest UTC time written so far
        self.previous: datetime | None = None   # the UTC time the last record wrote
        self.behind = False                     # after a backward jump, not caught up yet
        self.jumps = self.line = 0
        self.largest = _ZERO
        self.repeated = 0                       # second-pass records ``reorder`` found

    def count(self, ts: datetime, line: int) -> None:
        """Count the backward jump a record that wrote ``ts`` makes, if any. The time written stands: holding the
        records behind a jump at the latest time before it would keep file order, but a file read in parts (as
        `batch` reads a grown file's new bytes) would then get other times than one whole read."""
        high = self.high
        previous, self.previous = self.previous, ts
        if high is None or ts >= high:
            self.high = ts
            self.behind = False
        elif self.behind:
            if previous - ts > TOLERANCE:   # went back again
                self._jump(previous - ts, line)
        elif high - ts > TOLERANCE:         # under it: jitter, sorted by the time written
            self.behind = True
            self._jump(high - ts, line)

    def _jump(self, by: timedelta, line: int) -> None:
        self.jumps += 1
        if by > self.largest:
            self.largest, self.line = by, line

    def note(self) -> str:
        return (f"{JUMP_NOTE}{self.jumps} time(s), the most by {_span(self.largest)} at line {self.line}: "
                f"the records keep the times written, so they are ordered by time, not by file order")


def reorder(rows: list[dict], zone_of: "Callable[[str], tzinfo] | None" = None) -> dict[str, Order]:
    """Decide the backward jumps of one file's events again, over the whole file (``rows`` in file
    order, from every byte range): each range decided from its own records only. Returns the
    jumps by host.

    ``zone_of``: each host's zone. A range that began inside the second pass of a repeated DST
    hour read its first records as the first pass, an hour early: a record that falls behind so,
    and whose second-pass reading does not, is in the second pass (counted in ``Order.repeated``)."""
    orders: dict[str, Order] = {}
    for row in rows:
        ts = row["ts"]
        if ts is None:
            continue
        order = orders.get(row["host"])
        if order is None:
            order = orders[row["host"]] = Order()
        if (zone_of is not None and not order.behind and order.high is not None
                and order.high - ts > TOLERANCE):
            second = _second_pass(ts, zone_of(row["host"]))
            if second is not None and order.high - second <= TOLERANCE:
                ts = second
                order.repeated += 1
        order.count(ts, row["line"])
        row["ts"] = ts
    return orders


def _second_pass(ts: datetime, zone: tzinfo) -> datetime | None:
    """The UTC time of the second pass of the local time ``ts`` shows, when ``ts`` is the first
    pass of an hour its zone repeats; else None."""
    if isinstance(zone, timezone):
        return None
    local = ts.astimezone(zone)
    naive = local.replace(tzinfo=None)
    if local.fold or not dateutil_tz.datetime_ambiguous(naive, zone):
        return None
    return naive.replace(fold=1, tzinfo=zone).astimezone(timezone.utc)


def out_of_order(times) -> bool:
    """Whether any of one file's events, as (host, ts in microseconds since the epoch or None) in file
    order, is more than TOLERANCE behind its host's latest time: only then can ``reorder`` change
    anything."""
    latest: dict[str, int] = {}
    tolerance = TOLERANCE // timedelta(microseconds=1)
    for host, ts in times:
        if ts is None:
            continue
        high = latest.get(host)
        if high is None or ts > high:
            latest[host] = ts
        elif high - ts > tolerance:
            return True
    return False


def account(orders: dict[str, Order], stats) -> None:
    """The jumps ``reorder`` found, in place of those each range counted (a ``FileStats``)."""
    stats.problems[:] = [p for p in stats.problems if not p.startswith(JUMP_NOTE)]
    stats.repeated_hour += sum(o.repeated for o in orders.values())
    stats.backward_jumps = sum(o.jumps for o in orders.values())
    stats.largest_jump_s, stats.largest_jump_line = 0.0, 0
    for order in orders.values():
        if order.jumps:
            stats.problems.append(order.note())
            if order.largest.total_seconds() > stats.largest_jump_s:
                stats.largest_jump_s, stats.largest_jump_line = order.largest.total_seconds(), order.line


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
