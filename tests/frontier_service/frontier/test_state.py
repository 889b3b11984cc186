"""The domain state machine against a real redis-server: leases, offsets, retirement."""

from __future__ import annotations

import asyncio
from pathlib import Path

from frontier_service.frontier.domain_meta import DomainMeta
from frontier_service.frontier.state import FrontierState, Release, Reschedule
from tests.frontier_service.frontier.helpers import connect, open_frontier

NOW = 1_800_000_000.0


def test_claim_leases_due_domains_once(redis_url: str, crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            state = FrontierState(redis, crawl_name)
            assert await state.record_appends(NOW, [("a.example", 100, 2), ("b.example", 50, 1)]) == 2
            assert await state.record_append("c.example", 10, NOW + 60)  # due later
            assert sorted(await state.claim("w1", NOW, 300, max_domains=10)) == ["a.example", "b.example"]
            assert await state.claim("w2", NOW, 300, max_domains=10) == []
            assert await state.claim("w2", NOW + 60, 300, max_domains=10) == ["c.example"]
            info = await DomainMeta(redis, crawl_name).info("a.example")
            assert (info.state, info.lease_owner, info.lease_until) == ("leased", "w1", NOW + 300)
            assert (info.size, info.read_offset, info.pending_bytes) == (100, 0, 100)
            counters = await state.counters()
            assert counters["urls_added"] == 4 and counters["claims"] == 3

    asyncio.run(main())


def test_reschedule_only_with_our_lease_and_offsets_in_bytes(redis_url: str, crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            state = FrontierState(redis, crawl_name)
            await state.record_append("a.example", 300, NOW)
            assert await state.claim("w1", NOW, 30, max_domains=1) == ["a.example"]
            assert not await state.reschedule("a.example", "intruder", NOW + 5, new_read_offset=300)
            assert await state.reschedule("a.example", "w1", NOW + 5, new_read_offset=120)
            # already released:
            assert not await state.reschedule("a.example", "w1", NOW + 5, new_read_offset=120)
            info = await DomainMeta(redis, crawl_name).info("a.example")
            assert (info.state, info.read_offset, info.next_fetch_at) == ("ready", 120, NOW + 5)
            assert await state.claim("w1", NOW + 1, 30, max_domains=1) == []  # politeness: not due yet
            assert await state.claim("w1", NOW + 5, 30, max_domains=1) == ["a.example"]
            released = await state.reschedule_many("w1", [Reschedule("a.example", NOW + 9, 300)])
            assert released == [Release.RETIRED]  # read offset reached the size in bytes
            info = await DomainMeta(redis, crawl_name).info("a.example")
            assert (info.state, info.read_offset, info.size) == ("idle", 300, 300)

    asyncio.run(main())


def test_an_expired_lease_returns_a_crashed_workers_domain(redis_url: str, crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            state = FrontierState(redis, crawl_name)
            await state.record_append("a.example", 100, NOW)
            assert await state.claim("crashed", NOW, 10, max_domains=1) == ["a.example"]
            assert await state.claim("w2", NOW + 9, 10, max_domains=1) == []
            assert await state.claim("w2", NOW + 10.5, 10, max_domains=1) == ["a.example"]
            assert not await state.reschedule("a.example", "crashed", NOW + 11, new_read_offset=100)
            assert not await state.renew("a.example", "crashed", NOW + 11, lease_seconds=10)
            assert await state.renew("a.example", "w2", NOW + 15, lease_seconds=10, read_offset=40)
            assert await state.claim("w3", NOW + 21, 10, max_domains=1) == []  # renewed until NOW + 25
            assert (await state.counters())["leases_expired"] == 1
            assert await state.read_offset("a.example") == 40

    asyncio.run(main())


def test_retire_refuses_when_urls_were_appended_after_the_read(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            await frontier.add_urls([("https://a.example/1", 0), ("https://a.example/2", 0)])
            assert await frontier.claim("w1", 1) == ["a.example"]
            batch = await frontier.next_urls("a.example", 10)
            assert len(batch.records) == 2
            await frontier.add_urls([("https://a.example/3", 1)])  # appended while we hold it
            state = frontier.state
            assert not await state.retire_if_exhausted("a.example", "w1", batch.end_offset)
            more = await frontier.next_urls("a.example", 10, offset=batch.end_offset)
            assert [r.url for r in more.records] == ["https://a.example/3"]
            assert not await state.retire_if_exhausted("a.example", "intruder", more.end_offset)
            assert await state.retire_if_exhausted("a.example", "w1", more.end_offset)
            assert await frontier.claim("w1", 1) == []

            await frontier.add_urls([("https://a.example/4", 1)])  # append to a retired domain
            assert await frontier.claim("w2", 1) == ["a.example"]
            last = await frontier.next_urls("a.example", 10)
            assert [r.url for r in last.records] == ["https://a.example/4"]
            assert await frontier.done("a.example", "w2", 0, new_offset=last.end_offset)
            stats = await frontier.stats()
            assert (stats.pending_bytes, stats.ready_domains, stats.leased_domains) == (0, 0, 0)

    asyncio.run(main())


def test_a_retired_domain_with_bytes_read_ahead_of_its_size_stays_retired(
        redis_url: str, crawl_name: str) -> None:
    """A reader can pass `size` before record_append lands; the late record must not requeue."""
    async def main() -> None:
        async with connect(redis_url) as redis:
            state = FrontierState(redis, crawl_name)
            await state.record_append("a.example", 100, NOW)
            await state.claim("w1", NOW, 30, max_domains=1)
            assert await state.reschedule("a.example", "w1", NOW, new_read_offset=200)  # read to 200: retired
            assert not await state.record_append("a.example", 200, NOW)  # nothing unread
            assert await state.record_append("a.example", 250, NOW)  # 50 unread bytes
            assert await state.claim("w1", NOW, 30, max_domains=1) == ["a.example"]

    asyncio.run(main())


def test_exclude_and_include(redis_url: str, crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            state = FrontierState(redis, crawl_name)
            meta = DomainMeta(redis, crawl_name)
            await state.record_appends(NOW, [("a.example", 10, 1), ("b.example", 10, 1)])
            await state.exclude("a.example", "abuse report")
            assert not await state.record_append("a.example", 20, NOW)
            assert await state.claim("w1", NOW, 30, max_domains=5) == ["b.example"]
            await state.exclude("b.example", "robots disallow all")
            assert await state.reschedule("b.example", "w1", NOW, new_read_offset=0)
            assert await state.claim("w1", NOW, 30, max_domains=5) == []
            info = await meta.info("b.example")
            assert info.excluded and info.excluded_reason == "robots disallow all"
            assert info.state == "idle"
            assert await state.include("a.example", NOW)
            assert await state.claim("w1", NOW, 30, max_domains=5) == ["a.example"]

    asyncio.run(main())


def test_release_and_claim_in_one_round_trip(redis_url: str, crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            state = FrontierState(redis, crawl_name)
            await state.record_appends(NOW, [(f"d{i}.example", 10, 1) for i in range(4)])
            released, held = await state.release_and_claim("w1", [], NOW, lease_seconds=30, max_domains=2)
            assert released == [] and len(held) == 2
            done = [Reschedule(held[0], NOW + 100, 0), Reschedule(held[1], NOW, 10),
                    Reschedule("d9.example", NOW, 0)]
            released, more = await state.release_and_claim("w1", done, NOW, lease_seconds=30, max_domains=5)
            assert released == [Release.READY, Release.RETIRED, Release.LEASE_LOST]
            assert len(more) == 2 and not set(more) & set(held)

    asyncio.run(main())


def test_robots_cache_and_fetch_stats(redis_url: str, crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            meta = DomainMeta(redis, crawl_name)
            await meta.set_robots("a.example", "User-agent: *\nDisallow: /x", NOW + 3600)
            cached = await meta.get_robots("a.example", NOW)
            assert cached is not None and cached.body.endswith("/x")
            assert await meta.get_robots("a.example", NOW + 3600) is None
            await meta.record_fetch("a.example", response_ms=120.5, ok=True)
            await meta.record_fetch("a.example", response_ms=80, ok=False)
            info = await meta.info("a.example")
            assert (info.pages_fetched, info.fetch_errors, info.last_response_ms) == (1, 1, 80)

    asyncio.run(main())


def test_shards_keep_their_domains_and_take_others_once_overdue(redis_url: str,
                                                                crawl_name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            shards = [FrontierState(redis, crawl_name, shard=i, shards=2, steal_after_s=5.0)
                      for i in range(2)]
            domains = [f"d{n}.example" for n in range(40)]
            await shards[0].record_appends(NOW, [(d, 10, 1) for d in domains])
            mine = await shards[0].claim("w0", NOW + 1, 300, max_domains=100)
            assert 5 < len(mine) < 35  # only its shard, although all 40 are due
            theirs = await shards[1].claim("w1", NOW + 1, 300, max_domains=100)
            assert sorted(mine + theirs) == sorted(domains)  # each domain to one of them
            for d in theirs:  # w1 finishes its domains; nobody claims them in time ...
                assert await shards[1].reschedule(d, "w1", NOW + 2, new_read_offset=0)
            assert await shards[0].claim("w0", NOW + 3, 300, max_domains=100) == []
            # ... until they have been due for steal_after_s: then anyone takes them.
            assert sorted(await shards[0].claim("w0", NOW + 7.5, 300, max_domains=100)) == sorted(theirs)

    asyncio.run(main())
