"""Leftovers: the domains whose frontier files still hold URLs past their read offsets.

A crawl can end with nothing left to fetch and URLs still queued: hosts stopped by their
page budget, retired as unreachable or refused, or cut off by a time limit. What each such
host left behind, and why it stopped, is what the run summary and `stats` report; it is
read here from the domain hashes (one SCAN of the crawl's keys) and the files.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

from frontier_service.frontier.frontier import Frontier

_FIELDS = ("size", "read_offset", "excluded", "excluded_reason")
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")
# Counting URLs reads the files' unread parts; past this many bytes in all, the rest is
# estimated from the average line length read so far (a huge crawl cut by a time limit).
_READ_AT_MOST = 64 * 1024 * 1024
_ASSUMED_LINE_BYTES = 80


@dataclass(frozen=True, slots=True)
class Leftover:
    """A domain with unread URLs: why it stopped ("" if it was not excluded) and what is left."""

    domain: str
    excluded_reason: str
    bytes_left: int
    urls_left: int


async def leftovers(frontier: Frontier, *, read_at_most: int = _READ_AT_MOST) -> list[Leftover]:
    """Every domain whose file holds URLs past its read offset, largest first."""
    keys = frontier.state.keys
    prefix = keys.domain_prefix
    pattern = _GLOB_SPECIAL.sub(r"\\\1", prefix) + "*"
    domains: list[str] = []
    async for key in frontier.redis.scan_iter(match=pattern, count=1000):
        name = key.decode() if isinstance(key, bytes) else key
        domains.append(name[len(prefix):])
    found: list[tuple[str, str, int, int]] = []  # (domain, reason, read_offset, size)
    for start in range(0, len(domains), 1000):
        batch = domains[start:start + 1000]
        async with frontier.redis.pipeline(transaction=False) as pipe:
            for domain in batch:
                pipe.hmget(keys.domain(domain), list(_FIELDS))
            rows = await pipe.execute()
        for domain, (size, offset, excluded, reason) in zip(batch, rows, strict=True):
            size_n, offset_n = int(size or 0), int(offset or 0)
            if size_n > offset_n:
                found.append((domain, _text(reason) if _text(excluded) == "1" else "",
                              offset_n, size_n))
    paths = {domain: frontier.files.path_for(domain) for domain, *_ in found}
    counts = await asyncio.to_thread(_count_urls, [(paths[d], o, s) for d, _, o, s in found],
                                     read_at_most)
    result = [Leftover(domain, reason, size - offset, urls)
              for (domain, reason, offset, size), urls in zip(found, counts, strict=True)]
    return sorted(result, key=lambda left: (-left.urls_left, left.domain))


def _count_urls(ranges: list[tuple[Path, int, int]], read_at_most: int) -> list[int]:
    """URL lines in each file between the offsets (blank lines separate appends)."""
    counts: list[int] = []
    read = lines = 0
    for path, start, end in ranges:
        if read >= read_at_most:
            per_line = read / lines if lines else _ASSUMED_LINE_BYTES
            counts.append(max(1, round((end - start) / per_line)))
            continue
        try:
            with path.open("rb") as handle:
                handle.seek(start)
                data = handle.read(end - start)
        except FileNotFoundError:
            data = b""
        found = len(data.split())  # a URL line holds no whitespace
        read, lines = read + len(data), lines + found
        counts.append(found)
    return counts


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else value
