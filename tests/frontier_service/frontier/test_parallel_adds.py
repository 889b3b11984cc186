"""The microbenchmark's parallel adders add every URL exactly once, across processes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from frontier_service.frontier.frontier import FrontierConfig
from frontier_service.frontier.microbench import make_batches
from frontier_service.frontier.parallel_adds import ChildSpec, run_parallel
from frontier_service.frontier.urls import canonicalize
from tests.frontier_service.frontier.helpers import open_frontier


def test_two_processes_add_each_url_once(redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    urls, domains = 3_000, 40

    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            config = FrontierConfig(name=crawl_name, seen_capacity=100_000,
                                    visited_expected=10_000)
            specs = [ChildSpec(redis_url, tmp_path, config, index, 2, 3, urls, domains, 100,
                               "clustered") for index in range(2)]
            new, again = await run_parallel(frontier.redis, specs, rounds=2)
            assert [c.offered for c in new.children] == [1_500, 1_500]
            assert new.offered == urls and new.added >= urls - 5  # a few false positives
            assert again.added == 0
            stats = await frontier.stats()
            assert stats.counters["urls_added"] == new.added
            expected = {canonicalize(u) for batch in make_batches(urls, domains, 100, clustered=True,
                                                    seed=len("clustered"), tag="clustered")
                        for u, _ in batch}
            queued: list[str] = []
            for domain in {u.split("/")[2] for u in expected}:
                records, _ = frontier.files.read_from(domain, 0, 10_000)
                queued += [r.url for r in records]
            assert len(queued) == len(set(queued)) == new.added
            assert set(queued) <= expected

    asyncio.run(main())
