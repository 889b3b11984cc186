"""The microbenchmark's parallel adders add every URL exactly once, across processes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from archive_pipelines.canonical_urls import canonicalize
from archive_testkit.frontier_bench.parallel_adds import ChildSpec, run_parallel
from archive_testkit.frontier_bench.url_batches import make_batches, mix_batches
from frontier_service.frontier.frontier import FrontierConfig
from tests.frontier_service.frontier.helpers import open_frontier


def test_three_processes_add_each_url_once(redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    urls, domains = 3_000, 40

    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            config = FrontierConfig(name=crawl_name, seen_capacity=100_000,
                                    visited_expected=10_000)
            specs = [ChildSpec(redis_url, tmp_path, config, index, 3, 3, urls, domains, 100,
                               "clustered", new_share=0.25) for index in range(3)]
            new, again, mix = await run_parallel(frontier.redis, specs, ("new", "again", "mix"))
            assert [c.offered for c in new.children] == [1_000, 1_000, 1_000]
            assert new.offered == urls and new.added >= urls - 5  # a few false positives
            assert again.added == 0
            assert mix.offered == urls and 750 - 5 <= mix.added <= 750
            stats = await frontier.stats()
            assert stats.counters["urls_added"] == new.added + mix.added
            assert stats.counters["urls_offered"] == 3 * urls
            expected = {canonicalize(u) for batch in make_batches(urls, domains, 100, clustered=True,
                                                    seed=len("clustered"), tag="clustered")
                        for u, _ in batch}
            queued: list[str] = []
            for domain in {u.split("/")[2] for u in expected}:
                records, _ = frontier.files.read_from(domain, 0, 10_000)
                queued += [r.url for r in records]
            fresh = {canonicalize(u) for batch in make_batches(urls, domains, 100, clustered=True,
                                                 seed=len("clustered"), tag="clustered-mix")
                     for u, _ in batch}
            assert len(queued) == len(set(queued)) == new.added + mix.added
            assert set(queued) <= expected | fresh

    asyncio.run(main())


@pytest.mark.unit
def test_mix_batches_keep_hosts_and_take_the_share_of_fresh_urls() -> None:
    old = make_batches(2_000, 50, 100, clustered=True, seed=3, tag="a")
    fresh = make_batches(2_000, 50, 100, clustered=True, seed=3, tag="b")
    mixed = mix_batches(old, fresh, 0.13)
    flat_old = {u for b in old for u, _ in b}
    taken = [u for b in mixed for u, _ in b if u not in flat_old]
    assert len(taken) == 260 and len({u for b in mixed for u, _ in b}) == 2_000
    for before, after in zip(old, mixed, strict=True):
        assert [u.split("/")[2] for u, _ in before] == [u.split("/")[2] for u, _ in after]
    assert mix_batches(old, fresh, 0.0) == old and mix_batches(old, fresh, 1.0) == fresh
