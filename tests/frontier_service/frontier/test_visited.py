"""Visited records: exact, bucketed in listpack-encoded hashes, a few dozen bytes each."""

from __future__ import annotations

import asyncio

from frontier_service.frontier.visited import Visit, VisitedRecord, VisitedStore
from tests.frontier_service.frontier.helpers import connect


def test_round_trip_by_canonical_url(redis_url: str, crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            store = await VisitedStore(redis, f"{crawl_name}:visited",
                                       expected_records=1_000).open()
            record = VisitedRecord("http://Example.com:80/a?b=2&a=1", 200, 1_700_000_123,
                                   bytes(range(32)))
            assert await store.mark_many([record]) == 1
            assert await store.get("http://example.com/a?a=1&b=2#frag") == Visit(
                200, 1_700_000_123, bytes(range(8)))
            assert await store.get("http://example.com/other") is None
            assert await store.mark_many([VisitedRecord(record.url, 304, 1_700_000_999)]) == 0
            visit = await store.get(record.url)
            assert visit is not None and (visit.status, visit.fetched_at) == (304, 1_700_000_999)
            assert await store.count() == 1

    asyncio.run(main())


def test_memory_per_record_is_far_below_a_hash_per_url(redis_url: str, crawl_name: str) -> None:
    n = 20_000
    records = [VisitedRecord(f"https://site{i % 300}.example/page/{i}", 200, 1_700_000_000 + i,
                             i.to_bytes(8, "big")) for i in range(n)]

    async def main() -> tuple[float, float, list[str], int]:
        async with connect(redis_url) as redis:
            store = await VisitedStore(redis, f"{crawl_name}:visited", expected_records=n).open()
            for i in range(0, n, 1_000):
                assert await store.mark_many(records[i:i + 1_000]) == 1_000
            compact = await store.memory_bytes() / n
            encodings = {(await redis.object("encoding", f"{crawl_name}:visited:{b}")).decode()
                         for b in range(0, store.buckets, max(1, store.buckets // 20))}
            # the seed's layout, for comparison: one hash per visited URL
            for record in records[:500]:
                await redis.hset(f"{crawl_name}:naive:{record.url}", mapping={
                    "url": record.url, "status_code": record.status,
                    "fetched_at": record.fetched_at, "content_path": "", "error": ""})
            naive = sum([await redis.memory_usage(f"{crawl_name}:naive:{r.url}") or 0
                         for r in records[:500]]) / 500
            got = await store.get_many([r.url for r in records[::997]])
            assert got == [Visit(r.status, r.fetched_at, r.body_hash) for r in records[::997]]
            return compact, naive, sorted(encodings), store.buckets

    compact, naive, encodings, buckets = asyncio.run(main())
    assert encodings == ["listpack"]
    assert compact < 40, compact
    assert naive > 150 and compact < naive / 4, (compact, naive)
    assert buckets >= 20_000 // 256
