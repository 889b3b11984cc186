"""The Frontier facade end to end: add, claim, read, release, stats."""

from __future__ import annotations

import asyncio
from pathlib import Path

from frontier_service.frontier.state import Release, Reschedule
from frontier_service.frontier.visited import VisitedRecord
from tests.frontier_service.frontier.helpers import open_frontier


def test_add_urls_counts_new_duplicate_and_invalid(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            result = await frontier.add_urls([
                ("http://A.example/x", 0),
                ("http://a.example:80/x#top", 0),  # same canonical URL
                ("https://b.example/q?b=2&a=1", 1),
                ("https://b.example/q?a=1&b=2", 1),  # same again
                ("mailto:someone@a.example", 1),
                ("ftp://a.example/file", 1),
                ("https://c.example/" + "x" * 9_000, 1),
            ])
            assert (result.added, result.duplicate, result.invalid) == (2, 2, 3)
            again = await frontier.add_urls([("http://a.example/x", 5)])
            assert (again.added, again.duplicate) == (0, 1)
            stats = await frontier.stats()
            assert (stats.ready_domains, stats.due_domains, stats.leased_domains) == (2, 2, 0)
            assert stats.counters["urls_added"] == 2
            assert stats.counters["urls_offered"] == 4  # `again` waits: no round trip for it
            await frontier.flush_offered()
            assert (await frontier.stats()).counters["urls_offered"] == 5
            assert stats.pending_bytes == sum(frontier.files.size(d)
                                              for d in ("a.example", "b.example"))

    asyncio.run(main())


def test_relative_links_resolve_against_the_page(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> list[str]:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            result = await frontier.add_urls(
                [("../b/c.html", 2), ("/root", 2), ("//cdn.example/lib.js", 2), ("?page=2", 2),
                 ("javascript:void(0)", 2), ("#only-a-fragment", 2)],
                discovered_from="https://site.example/a/index.html")
            assert (result.added, result.invalid) == (5, 1)
            urls = []
            for domain in await frontier.claim("w", 10):
                urls += [r.url for r in (await frontier.next_urls(domain, 10)).records]
            return sorted(urls)

    assert asyncio.run(main()) == [
        "https://cdn.example/lib.js", "https://site.example/a/index.html",
        "https://site.example/a/index.html?page=2", "https://site.example/b/c.html",
        "https://site.example/root"]


def test_claim_read_release_cycle_with_politeness(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name, lease_seconds=30) as frontier:
            await frontier.add_urls([(f"https://a.example/p{i}", 1) for i in range(5)]
                                    + [("https://a.example/x|y", 1)])
            now = 2_000_000_000.0
            assert await frontier.claim("w1", 3, now=now) == ["a.example"]
            first = await frontier.next_urls("a.example", 4)
            assert [r.url for r in first.records][:2] == ["https://a.example/p0",
                                                          "https://a.example/p1"]
            assert first.start_offset == 0 and first.end_offset > 0
            assert await frontier.done("a.example", "w1", now + 10, new_offset=first.end_offset)
            assert await frontier.claim("w2", 1, now=now + 5) == []
            _, held = await frontier.release_and_claim("w2", [], 1, now=now + 10)
            assert held == ["a.example"]
            rest = await frontier.next_urls("a.example", 10)
            assert rest.start_offset == first.end_offset
            assert [r.url for r in rest.records] == ["https://a.example/p4",
                                                     "https://a.example/x%7Cy"]
            assert await frontier.done_many("w2", [
                Reschedule("a.example", now + 20, rest.end_offset)]) == [Release.RETIRED]
            stats = await frontier.stats(now=now + 20)
            assert (stats.pending_bytes, stats.ready_domains, stats.leased_domains) == (0, 0, 0)

    asyncio.run(main())


def test_mark_visited_through_the_facade(redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            assert await frontier.mark_visited([VisitedRecord("https://a.example/", 404, 7)]) == 1
            visit = await frontier.visited.get("https://A.example:443/")
            assert visit is not None and visit.status == 404

    asyncio.run(main())
