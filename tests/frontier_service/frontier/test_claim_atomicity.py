"""No domain is ever leased to two workers at once: asyncio workers and OS processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from itertools import chain

from redis.asyncio import Redis

from frontier_service.frontier.state import FrontierState
from tests.frontier_service.frontier.claim_workers import overlapping, run_process, run_workers
from tests.frontier_service.frontier.helpers import connect

DOMAINS = [f"d{i:02d}.example" for i in range(50)]


def seed_domains(redis_url: str, name: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            state = FrontierState(redis, name)
            await state.record_appends(time.time() - 1, [(d, 1000, 10) for d in DOMAINS])

    asyncio.run(main())


def test_checker_catches_a_non_atomic_claim(redis_url: str, crawl_name: str) -> None:
    """The seed's pattern (read the ready set, then remove) lets two workers take one domain."""
    seed_domains(redis_url, crawl_name)
    ready_key = f"{crawl_name}:domains:ready"

    async def naive_claim(redis: Redis, worker: str, n: int) -> list[str]:
        due = await redis.zrangebyscore(ready_key, "-inf", time.time(), start=0, num=n)
        await asyncio.sleep(0)  # other workers read the same due domains meanwhile
        if due:
            await redis.zrem(ready_key, *due)
        return [d.decode() if isinstance(d, bytes) else str(d) for d in due]

    async def naive_release(redis: Redis, worker: str, domains: list[str]) -> None:
        await redis.zadd(ready_key, {d: time.time() for d in domains})

    intervals = asyncio.run(run_workers(redis_url, crawl_name, [f"w{i}" for i in range(20)], 0.5,
                                        claim=naive_claim, release=naive_release))
    assert overlapping(intervals)


def test_twenty_asyncio_workers_never_share_a_domain(redis_url: str, crawl_name: str) -> None:
    seed_domains(redis_url, crawl_name)
    intervals = asyncio.run(run_workers(redis_url, crawl_name, [f"w{i}" for i in range(20)], 1.5))
    assert len(intervals) > 500
    assert len({d for d, *_ in intervals}) == len(DOMAINS)
    assert overlapping(intervals) == []


def test_four_processes_never_share_a_domain(redis_url: str, crawl_name: str) -> None:
    seed_domains(redis_url, crawl_name)
    context = multiprocessing.get_context("spawn")
    # An executor, not a Pool: its exit waits for the workers (a Pool's terminate can hang
    # its join on a worker that does not die of SIGTERM, as in one full run).
    with ProcessPoolExecutor(4, mp_context=context) as workers:
        results = list(workers.map(run_process, *zip(*[(redis_url, crawl_name, p, 5, 1.5)
                                                      for p in range(4)], strict=True),
                                   timeout=240))
    intervals = list(chain.from_iterable(results))
    assert all(results), "every process claimed domains"
    assert len(intervals) > 500
    assert overlapping(intervals) == []
