"""The robots.txt cache in Redis: entries round-trip, big bodies are stored compressed, an
entry of the earlier layout or a damaged one reads as missing (fetched again)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from redis.asyncio import Redis

from frontier_service.fetch.redis_robots_store import RedisRobotsStore, decode, encode
from frontier_service.fetch.robots_store import StoredRobots

BIG = b"".join(b"User-agent: bot%d\nDisallow: /private/%d/\nAllow: /\n\n" % (n, n)
               for n in range(200))


@pytest.mark.unit
@pytest.mark.parametrize("entry", [
    StoredRobots(b"", 1.5, "missing"),
    StoredRobots(b"User-agent: *\nDisallow: /x\n", 1e9 + 0.25, "parsed"),
    StoredRobots(BIG, 2e9, "parsed", truncated=True),
    StoredRobots(bytes(range(256)) * 3, 3.0, "garbage"),  # not text, not compressible
])
def test_entries_round_trip(entry: StoredRobots) -> None:
    assert decode(encode(entry)) == entry


@pytest.mark.unit
@pytest.mark.parametrize("raw", [b"", b"r1 1.0 parsed 0", b"r1 x parsed 0 -\n",
                                 b"r1 1.0 parsed 0 z\nnot zlib", b"r9 1.0 parsed 0 -\n"])
def test_damaged_entries_read_as_missing(raw: bytes) -> None:
    assert decode(raw) is None


def test_the_store_keeps_big_bodies_compressed(redis_url: str) -> None:
    async def main() -> None:
        redis = Redis.from_url(redis_url)
        store = RedisRobotsStore(redis, f"t-{uuid.uuid4().hex[:8]}")
        try:
            entry = StoredRobots(BIG, time.time() + 60, "parsed")
            await store.set("https://a.example", entry)
            assert await store.get("https://a.example") == entry
            key = store.prefix + "https://a.example"
            assert 0 < await redis.ttl(key) <= 60 + 3600
            assert len(await redis.get(key)) < len(BIG) / 3
            await redis.delete(key)
            await redis.hset(key, mapping={"body": b"x", "expires_at": "1", "source": "parsed"})
            assert await store.get("https://a.example") is None  # the earlier layout
            await store.set("https://a.example", entry)  # replaces it
            assert await store.get("https://a.example") == entry
            await redis.delete(key)
        finally:
            await redis.aclose()

    asyncio.run(main())
