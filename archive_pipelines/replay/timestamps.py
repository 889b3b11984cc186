"""Wayback timestamps (`YYYYMMDDhhmmss`, UTC) and the capture times (epoch milliseconds) they
stand for.

A timestamp may be cut short (1 to 14 digits): as the start of a window (`from`, `closest`,
a replay request) the missing digits are the earliest moment it can mean (`2026` is
2026-01-01 00:00:00), as its end (`to`) the latest (`2026` is 2026-12-31 23:59:59.999). Digits
out of range are brought into it, as the Wayback Machine does (`20260231` is February's last
day; month `00` is January)."""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime

_DIGITS = re.compile(r"[0-9]{1,14}")
_EARLIEST = "0" * 14  # then brought into range: month and day 00 are 01
_LATEST = "9" * 14  # then brought into range: the month's last day, 23:59:59
MIN_YEAR = 1000  # earlier (and year 0) is no capture time: brought up to 1000


class BadTimestamp(ValueError):
    """Not 1 to 14 digits."""


def timestamp_of(ms: int) -> str:
    """The 14-digit timestamp of a capture time (milliseconds dropped)."""
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y%m%d%H%M%S")


def start_ms(timestamp: str) -> int:
    """The first millisecond `timestamp` (1-14 digits) can mean."""
    return _ms(_fields(timestamp, _EARLIEST))


def end_ms(timestamp: str) -> int:
    """The last millisecond `timestamp` (1-14 digits) can mean."""
    return _ms(_fields(timestamp, _LATEST)) + 999


def _fields(timestamp: str, fill: str) -> tuple[int, int, int, int, int, int]:
    if not _DIGITS.fullmatch(timestamp):
        raise BadTimestamp(f"a timestamp is 1 to 14 digits (YYYYMMDDhhmmss), not {timestamp[:40]!r}")
    full = timestamp + fill[len(timestamp):]
    year = max(int(full[0:4]), MIN_YEAR)
    month = min(max(int(full[4:6]), 1), 12)
    day = min(max(int(full[6:8]), 1), calendar.monthrange(year, month)[1])
    return (year, month, day, min(int(full[8:10]), 23), min(int(full[10:12]), 59),
            min(int(full[12:14]), 59))


def _ms(fields: tuple[int, int, int, int, int, int]) -> int:
    return calendar.timegm((*fields, 0, 0, 0)) * 1000
