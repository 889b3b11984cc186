"""The log `wget --no-verbose` writes, which wget also keeps in its WARC file as `wget.log`.

One line per saved file (`2023-11-14 22:13:20 URL:https://... [134/134] -> "path" [1]`),
then `FINISHED`, the wall clock time and the download total, numbers formatted as wget's
`print_decimal`, `human_readable` and `retr_rate` format them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class LoggedDownload:
    """One saved file: its URL as sent, its size, where wget saved it and when."""

    url: str
    size: int
    saved_as: str
    at: datetime


def no_verbose_log(downloads: Sequence[LoggedDownload], *, started: datetime, finished: datetime) -> bytes:
    """The whole log of a run from `started` to `finished` that saved `downloads`."""
    lines = [f'{_clock(d.at)} URL:{d.url} [{d.size}/{d.size}] -> "{d.saved_as}" [1]' for d in downloads]
    total = sum(download.size for download in downloads)
    seconds = (finished - started).total_seconds()
    busy = max(seconds * 0.8, 0.001)  # wget counts the transfer time only
    lines += [
        f"FINISHED --{_clock(finished)}--",
        f"Total wall clock time: {print_decimal(seconds)}s",
        f"Downloaded: {len(downloads)} files, {human_readable(total)} in {print_decimal(busy)}s "
        f"({retr_rate(total / busy)})",
    ]
    return ("\n".join(lines) + "\n").encode()


_SAVED = re.compile(rb'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) URL:(\S+) \[(\d+)(?:/\d+)?\] -> "(.*)" \[\d+\]$')


def parse_no_verbose_log(log: bytes) -> list[LoggedDownload]:
    """The saved files a `--no-verbose` log lists, in order (error and summary lines skipped)."""
    downloads = []
    for line in log.splitlines():
        match = _SAVED.match(line)
        if match:
            at = datetime.strptime(match[1].decode(), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
            downloads.append(LoggedDownload(match[2].decode(), int(match[3]), match[4].decode(), at))
    return downloads


def print_decimal(number: float) -> str:
    """wget's print_decimal: 12, 3.4, 0.02, 0."""
    if number >= 9.95:
        return f"{number:.0f}"
    if number >= 0.95:
        return f"{number:.1f}"
    if number >= 0.001:
        return f"{number:.1g}"
    return "0"


def human_readable(size: int) -> str:
    """wget's human_readable(n, 10, 1): 161, 1.2K, 45K, 3.1M."""
    if size < 1024:
        return str(size)
    value = float(size)
    for unit in "KMGT":
        value /= 1024
        if value < 1024 or unit == "T":
            break
    return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"


def retr_rate(per_second: float) -> str:
    """wget's retr_rate: `9.97 MB/s`."""
    value, unit = per_second, "B/s"
    for bigger in ("KB/s", "MB/s", "GB/s"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    decimals = 0 if value >= 99.95 else 1 if value >= 9.995 else 2
    return f"{value:.{decimals}f} {unit}"


def _clock(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
