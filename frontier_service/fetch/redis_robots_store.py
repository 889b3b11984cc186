"""RedisRobotsStore: fetched robots.txt files shared by every process of a crawl.

One string per origin (`{crawl}:robots:{origin}`), expiring a while after the entry does:
a header line (format, expiry, source, truncation, encoding) and the body, zlib-compressed
when that makes it smaller (robots.txt text shrinks 3-5x; a crawl of a million domains
keeps about a million of these). DomainMeta's robots fields hold one text body per domain
key; the fetch layer's entries are per origin (scheme matters) and carry the source and
truncation flag too, so they get keys of their own.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from frontier_service.fetch.robots_store import StoredRobots

_KEEP_AFTER_EXPIRY_S = 3600
_FORMAT = b"r1"
_COMPRESS_FROM = 128  # bytes; shorter bodies gain nothing from zlib's header


class RedisRobotsStore:
    """A RobotsStore (see frontier_service.fetch.robots_store) in Redis."""

    def __init__(self, redis: Redis, crawl_name: str) -> None:
        self.redis = redis
        self.prefix = f"{crawl_name}:robots:"

    async def get(self, origin: str) -> StoredRobots | None:
        try:
            raw = await self.redis.get(self.prefix + origin)
        except ResponseError:  # an entry of the earlier layout (a hash): fetched again
            return None
        return None if raw is None else decode(raw if isinstance(raw, bytes) else raw.encode())

    async def set(self, origin: str, entry: StoredRobots) -> None:
        await self.set_many([(origin, entry)])

    async def set_many(self, entries: Sequence[tuple[str, StoredRobots]]) -> None:
        """set for many origins in one round trip (each entry written whole)."""
        now = time.time()
        async with self.redis.pipeline(transaction=True) as pipe:
            for origin, entry in entries:
                key = self.prefix + origin
                pipe.set(key, encode(entry))
                pipe.expireat(key, int(max(entry.expires_at, now)) + _KEEP_AFTER_EXPIRY_S)
            await pipe.execute()


def encode(entry: StoredRobots) -> bytes:
    """`r1 {expires_at} {source} {truncated} {z|-}` and a newline, then the body."""
    body, coding = entry.body, b"-"
    if len(body) >= _COMPRESS_FROM:
        packed = zlib.compress(body, 6)
        if len(packed) < len(body):
            body, coding = packed, b"z"
    header = b" ".join([_FORMAT, repr(entry.expires_at).encode(), entry.source.encode(),
                        b"1" if entry.truncated else b"0", coding])
    return header + b"\n" + body


def decode(raw: bytes) -> StoredRobots | None:
    """The entry `encode` wrote, or None for a damaged one (fetched again)."""
    header, _, body = raw.partition(b"\n")
    fields = header.split(b" ")
    if len(fields) != 5 or fields[0] != _FORMAT or fields[4] not in (b"z", b"-"):
        return None
    try:
        if fields[4] == b"z":
            body = zlib.decompress(body)
        return StoredRobots(body=body, expires_at=float(fields[1]),
                            source=fields[2].decode(), truncated=fields[3] == b"1")
    except (ValueError, zlib.error, UnicodeDecodeError):
        return None
