"""Many concurrent adders and claimers: every URL added comes out of the frontier exactly once."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from pathlib import Path

from tests.frontier_service.frontier.helpers import open_frontier


def test_every_url_comes_out_exactly_once(redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    urls = [f"https://d{i % 97}.example/p/{i}" for i in range(10_000)]

    async def main() -> list[str]:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            adders_done = asyncio.Event()
            got: list[str] = []

            async def adder(k: int) -> None:
                mine = urls[k::8]
                for i in range(0, len(mine), 25):
                    result = await frontier.add_urls([(u, 1) for u in mine[i:i + 25]])
                    assert result.added == len(mine[i:i + 25])
                    await asyncio.sleep(random.random() * 0.002)

            async def claimer(k: int) -> None:
                worker, rnd = f"c{k}", random.Random(k)
                while True:
                    domains = await frontier.claim(worker, 2)
                    if not domains:
                        if adders_done.is_set():
                            stats = await frontier.stats()
                            if stats.ready_domains == 0 and stats.leased_domains == 0:
                                return
                        await asyncio.sleep(0.002)
                        continue
                    for domain in domains:
                        batch = await frontier.next_urls(domain, rnd.randint(1, 15))
                        got.extend(r.url for r in batch.records)
                        if rnd.random() < 0.3 and await frontier.state.retire_if_exhausted(
                                domain, worker, batch.end_offset):
                            continue
                        assert await frontier.done(domain, worker, time.time(), new_offset=batch.end_offset)

            claimers = [asyncio.create_task(claimer(k)) for k in range(8)]
            await asyncio.gather(*(adder(k) for k in range(8)))
            adders_done.set()
            await asyncio.wait_for(asyncio.gather(*claimers), 60)
            stats = await frontier.stats()
            assert stats.pending_bytes == 0
            assert stats.counters["urls_added"] == len(urls)
            return got

    got = asyncio.run(main())
    counts = Counter(got)
    assert len(got) == len(urls)
    assert set(counts) == set(urls)
    assert max(counts.values()) == 1
