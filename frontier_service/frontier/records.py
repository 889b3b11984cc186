"""One frontier line: `url|depth|priority|added_ts\\n`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from archive_pipelines.canonical_urls import decode_line_field, encode_line_field


@dataclass(frozen=True, slots=True)
class FrontierRecord:
    """A URL waiting in a domain's frontier file."""

    url: str
    depth: int
    priority: float = 1.0
    added_at: int = 0


def format_line(url: str, depth: int, priority: float, added_at: int) -> str:
    """The line for one URL; the URL field is percent-encoded so it cannot break the line."""
    return f"{encode_line_field(url)}|{depth}|{priority:g}|{added_at}\n"


def format_records(records: Iterable[FrontierRecord]) -> bytes:
    """Lines for many records, ready for one write."""
    return "".join(
        [format_line(r.url, r.depth, r.priority, r.added_at) for r in records]
    ).encode()


def parse_line(line: bytes) -> FrontierRecord | None:
    """The record on a line (without its newline), or None if the line is blank or corrupt."""
    parts = line.rsplit(b"|", 3)
    if len(parts) != 4:
        return None
    try:
        url = decode_line_field(parts[0].decode())
        return FrontierRecord(url, int(parts[1]), float(parts[2]), int(parts[3]))
    except ValueError:  # UnicodeDecodeError is a ValueError too
        return None
