"""RedisRobotsStore: fetched robots.txt files shared by every process of a crawl.

One small hash per origin (`{crawl}:robots:{origin}`), expiring a while after the entry
does. DomainMeta's robots fields hold one text body per domain key; the fetch layer's
entries are per origin (scheme matters) and carry the source and truncation flag too, so
they get keys of their own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from redis.asyncio import Redis

from frontier_service.fetch.robots_store import StoredRobots

_KEEP_AFTER_EXPIRY_S = 3600


class RedisRobotsStore:
    """A RobotsStore (see frontier_service.fetch.robots_store) in Redis."""

    def __init__(self, redis: Redis, crawl_name: str) -> None:
        self.redis = redis
        self.prefix = f"{crawl_name}:robots:"

    async def get(self, origin: str) -> StoredRobots | None:
        raw = await self.redis.hgetall(self.prefix + origin)
        if not raw:
            return None
        fields = {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}
        try:
            return StoredRobots(
                body=_bytes(fields.get("body", b"")),
                expires_at=float(fields["expires_at"]),
                source=_text(fields["source"]),
                truncated=_text(fields.get("truncated", b"0")) == "1",
            )
        except (KeyError, ValueError):
            return None  # a damaged entry is fetched again

    async def set(self, origin: str, entry: StoredRobots) -> None:
        await self.set_many([(origin, entry)])

    async def set_many(self, entries: Sequence[tuple[str, StoredRobots]]) -> None:
        """set for many origins in one round trip (each entry written whole)."""
        now = time.time()
        async with self.redis.pipeline(transaction=True) as pipe:
            for origin, entry in entries:
                key = self.prefix + origin
                pipe.hset(key, mapping={"body": entry.body, "expires_at": repr(entry.expires_at),
                                        "source": str(entry.source),
                                        "truncated": "1" if entry.truncated else "0"})
                pipe.expireat(key, int(max(entry.expires_at, now)) + _KEEP_AFTER_EXPIRY_S)
            await pipe.execute()


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
