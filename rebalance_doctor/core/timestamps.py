"""Timestamps: fast paths for the formats Kafka deployments write, python-dateutil for the rest.

Every parsed time comes back as an aware UTC datetime. Naive times are read in the zone the
caller gives (``--tz``, per-host overridable), so two hosts writing local time line up.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone, tzinfo
from functools import lru_cache

import regex

UTC = timezone.utc

_ISO = regex.compile(
    r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:[,.](?P<f>\d{1,9}))?\s*(?P<z>Z|[+-]\d\d(?::?\d\d)?)?$"
)
_TIME_ONLY = regex.compile(r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[,.](?P<f>\d{1,9}))?$")
_EPOCH = regex.compile(r"\d{10}(?:\d{3})?(?:\.\d+)?$")


class TimestampError(ValueError):
    pass


@lru_cache(maxsize=64)
def zone(name: str | None) -> tzinfo:
    """A tzinfo for an IANA name, an offset like +01:00, or UTC for None/''."""
    if not name or name.upper() in ("UTC", "Z"):
        return UTC
    from dateutil import tz as dateutil_tz   # a named zone only (start-up: dateutil's modules are ~13 ms)

    found = dateutil_tz.gettz(name)
    if found is None:
        try:
            return _offset(name)
        except (ValueError, IndexError) as exc:
            raise TimestampError(f"unknown time zone {name!r}") from exc
    return found


def _offset(text: str) -> tzinfo:
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _micros(fraction: str | None) -> int:
    if not fraction:
        return 0
    return int((fraction + "000000")[:6])


def parse(text: str, default_zone: tzinfo = UTC, base_date: date | None = None) -> datetime:
    """Parse one timestamp as written in a log line into an aware UTC datetime.

    ``base_date`` supplies the date for layouts that only write the time of day
    (``%d{HH:mm:ss,SSS}``, the Streams quickstart layout).
    """
    written, _ = read(text, base_date)
    return to_utc(written, default_zone, text)


def read(text: str, base_date: date | None = None) -> tuple[datetime, bool]:
    """The time a log line writes, not yet placed: naive (a wall time that its zone places,
    ``to_utc``) or aware (the line states its offset), and whether only the time of day was
    written (the date is then ``base_date``'s). Reading a file in order (``core.clock``) decides
    what a naive time means between these two steps."""
    text = text.strip()
    if len(text) >= 19 and text[10] in "T ":
        # The C parser reads the common ISO forms (comma or dot fraction, Z or offsets) in a
        # fraction of the regex path's time; what it refuses goes the long way below.
        try:
            return datetime.fromisoformat(text), False
        except ValueError:
            pass
    m = _ISO.match(text)
    if m:
        try:
            naive = datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]),
                             int(m["s"]), _micros(m["f"]))
            return (naive.replace(tzinfo=_offset(m["z"])) if m["z"] else naive), False
        except (ValueError, OverflowError) as exc:   # a damaged digit: day 39, month 00, +99:00
            raise TimestampError(f"unreadable timestamp {text!r}") from exc
    m = _TIME_ONLY.match(text)
    if m:
        day = base_date or date(1970, 1, 1)
        try:
            return datetime(day.year, day.month, day.day, int(m["h"]), int(m["mi"]), int(m["s"]),
                            _micros(m["f"])), True
        except ValueError as exc:
            raise TimestampError(f"unreadable timestamp {text!r}") from exc
    if _EPOCH.match(text):
        seconds = float(text) / (1000.0 if len(text.split(".")[0]) == 13 else 1.0)
        return datetime.fromtimestamp(seconds, UTC), False
    from dateutil import parser as dateutil_parser   # the formats no fast path reads

    try:
        return dateutil_parser.parse(text.replace(",", ".")), False
    except (ValueError, OverflowError) as exc:
        raise TimestampError(f"unreadable timestamp {text!r}") from exc


def to_utc(written: datetime, zone: tzinfo = UTC, text: str | None = None) -> datetime:
    """A time ``read`` gave as an aware UTC datetime: a naive one placed in ``zone`` (its ``fold``
    chooses between the two passes of a repeated hour), an aware one converted."""
    if written.tzinfo is None:
        return _to_utc(written, zone)
    if written.tzinfo is UTC:
        return written
    return _astimezone(written, text if text is not None else written.isoformat())


def _astimezone(aware: datetime, text: str) -> datetime:
    try:
        return aware.astimezone(UTC)
    except OverflowError as exc:   # year 1 east of UTC, 9999-12-31 west of it: not a UTC datetime
        raise TimestampError(f"timestamp out of range in UTC {text!r}") from exc


def _to_utc(naive: datetime, tz: tzinfo) -> datetime:
    if tz is UTC:
        return naive.replace(tzinfo=UTC)
    try:
        return naive.replace(tzinfo=tz).astimezone(UTC)
    except OverflowError as exc:   # year 1 east of UTC, 9999-12-31 west of it: not a UTC datetime
        raise TimestampError(f"timestamp out of range in UTC {naive.isoformat()!r}") from exc
