"""Workers that claim and release the same domains; importable by spawned test processes."""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from frontier_service.frontier.state import FrontierState, Release, Reschedule
from tests.frontier_service.frontier.helpers import connect

# (domain, worker, held from, held until) on the system-wide monotonic clock
Interval = tuple[str, str, float, float]
Claim = Callable[[Redis, str, int], Awaitable[list[str]]]
Release_ = Callable[[Redis, str, list[str]], Awaitable[None]]


async def run_workers(redis_url: str, name: str, worker_ids: list[str], seconds: float, *,
                      claim: Claim | None = None, release: Release_ | None = None
                      ) -> list[Interval]:
    """Each worker loops: claim 1-3 domains, hold them up to 2 ms, release them as due now."""
    intervals: list[Interval] = []
    async with connect(redis_url) as redis:
        state = FrontierState(redis, name)

        async def lua_claim(_: Redis, worker: str, n: int) -> list[str]:
            return await state.claim(worker, time.time(), 30, max_domains=n)

        async def lua_release(_: Redis, worker: str, domains: list[str]) -> None:
            released = await state.reschedule_many(
                worker, [Reschedule(d, time.time(), 0) for d in domains])
            assert released == [Release.READY] * len(domains)

        do_claim, do_release = claim or lua_claim, release or lua_release
        stop = time.monotonic() + seconds

        async def worker(worker_id: str) -> None:
            rnd = random.Random(worker_id)
            while time.monotonic() < stop:
                domains = await do_claim(redis, worker_id, rnd.randint(1, 3))
                if not domains:
                    await asyncio.sleep(0.0005)
                    continue
                held_from = time.monotonic()
                await asyncio.sleep(rnd.random() * 0.002)
                held_until = time.monotonic()
                intervals.extend((d, worker_id, held_from, held_until) for d in domains)
                await do_release(redis, worker_id, domains)

        await asyncio.gather(*(worker(w) for w in worker_ids))
    return intervals


def run_process(redis_url: str, name: str, process: int, workers: int,
                seconds: float) -> list[Interval]:
    ids = [f"p{process}-w{i}" for i in range(workers)]
    return asyncio.run(run_workers(redis_url, name, ids, seconds))


def overlapping(intervals: list[Interval]) -> list[tuple[str, str, str]]:
    """(domain, worker, worker) wherever two workers held one domain at the same time."""
    by_domain: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for domain, worker, start, end in intervals:
        by_domain[domain].append((start, end, worker))
    clashes = []
    for domain, held in by_domain.items():
        held.sort()
        latest_end, latest_worker = held[0][1], held[0][2]
        for start, end, worker in held[1:]:
            if start < latest_end:
                clashes.append((domain, latest_worker, worker))
            if end > latest_end:
                latest_end, latest_worker = end, worker
    return clashes
