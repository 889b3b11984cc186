"""Frontier microbenchmark: add throughput with dedup, claim throughput, Redis bytes per URL.

    python -m frontier_service.frontier.microbench --redis-url redis://127.0.0.1:6379/0

Uses a throwaway key prefix and temp dir, and deletes both afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from redis.asyncio import Redis

from frontier_service.frontier.frontier import Frontier, FrontierConfig
from frontier_service.frontier.state import Reschedule
from frontier_service.frontier.visited import VisitedRecord


def make_batches(urls: int, domains: int, batch: int, *, clustered: bool,
                 seed: int = 7, tag: str = "") -> list[list[tuple[str, int]]]:
    """Unique URLs in batches; clustered batches look like the links of a few pages."""
    rnd = random.Random(seed)
    batches: list[list[tuple[str, int]]] = []
    serial = 0
    while serial < urls:
        hosts = [rnd.randrange(domains) for _ in range(20)]
        links: list[tuple[str, int]] = []
        for _ in range(min(batch, urls - serial)):
            host = rnd.choice(hosts) if clustered and rnd.random() < 0.8 else rnd.randrange(domains)
            query = f"?ref=r{serial % 7}&id={serial}" if serial % 3 == 0 else ""
            links.append((f"https://www.site{host}.example/s{serial % 50}/{tag}page-{serial}{query}",
                          1 + serial % 4))
            serial += 1
        batches.append(links)
    return batches


async def bench_adds(frontier: Frontier, batches: list[list[tuple[str, int]]],
                     concurrency: int) -> float:
    """URLs offered per second with `concurrency` concurrent add_urls callers."""
    feed: Iterator[list[tuple[str, int]]] = iter(batches)

    async def adder() -> None:
        for links in feed:
            await frontier.add_urls(links)

    started = time.perf_counter()
    await asyncio.gather(*(adder() for _ in range(concurrency)))
    return sum(len(b) for b in batches) / (time.perf_counter() - started)


async def bench_claims(frontier: Frontier, workers: int, seconds: float, per_call: int) -> float:
    """Domain claim+reschedule cycles per second (URLs are not consumed).

    One domain per call: claim, then reschedule (two round trips). More: one
    release_and_claim round trip releases the last batch and leases the next.
    """
    cycles = 0
    stop = time.perf_counter() + seconds

    async def worker(index: int) -> None:
        nonlocal cycles
        name = f"bench-{index}"
        held: list[str] = []
        while time.perf_counter() < stop:
            if per_call == 1:
                held = await frontier.claim(name, 1)
                if held:
                    await frontier.done(held[0], name, time.time(), 0)
            else:
                now = time.time()
                _, held = await frontier.release_and_claim(
                    name, [Reschedule(d, now, 0) for d in held], per_call)
            cycles += len(held)
            if not held:
                await asyncio.sleep(0.001)
        if held and per_call > 1:
            await frontier.done_many(name, [Reschedule(d, time.time(), 0) for d in held])

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(workers)))
    return cycles / (time.perf_counter() - started)


async def run(args: argparse.Namespace) -> None:
    redis = Redis.from_url(args.redis_url)
    name = f"microbench-{uuid.uuid4().hex[:8]}"
    try:
        with tempfile.TemporaryDirectory(prefix="frontier-bench-") as tmp:
            config = FrontierConfig(name=name, seen_capacity=args.capacity,
                                    visited_expected=args.visited)
            frontier = await Frontier(redis, Path(tmp), config).open()
            print(f"seen filter: {frontier.seen.backend} backend, {frontier.seen.layout}")
            started = time.perf_counter()
            await frontier.add_urls([(f"https://www.site{d}.example/", 0)
                                     for d in range(args.domains)])
            took = time.perf_counter() - started
            print(f"warm-up: {args.domains:,} domains' frontier files created in {took:.2f} s "
                  f"({took / args.domains * 1e3:.2f} ms per domain, mostly file creation)")
            for label, clustered in (("clustered", True), ("uniform", False)):
                batches = make_batches(args.urls, args.domains, args.batch, clustered=clustered,
                                       seed=len(label), tag=label)
                per_batch = sum(len({u.split('/')[2] for u, _ in b}) for b in batches)
                rate = await bench_adds(frontier, batches, args.adders)
                print(f"add_urls, new URLs, {label} ({per_batch / len(batches):.0f} domains per "
                      f"batch of {args.batch}): {rate:,.0f} URLs/s")
                if clustered:
                    rate = await bench_adds(frontier, batches, args.adders)
                    print(f"add_urls, all duplicates, {label}: {rate:,.0f} URLs/s")
            stats = await frontier.stats()
            print(f"frontier: {stats.counters.get('urls_added', 0):,} URLs, "
                  f"{stats.pending_bytes:,} bytes pending, {stats.ready_domains} ready domains")
            for per_call in (1, 8, 32):
                rate = await bench_claims(frontier, args.workers, args.seconds, per_call)
                print(f"claim+reschedule, {args.workers} workers, {per_call} domain(s) per call: "
                      f"{rate:,.0f} domains/s")
            seen_bytes = await frontier.seen.memory_bytes()
            print(f"seen filter memory: {seen_bytes:,} bytes = {seen_bytes / args.capacity:.2f} "
                  f"bytes per URL at capacity {args.capacity:,}")
            records = [VisitedRecord(f"https://v{i % 500}.example/p/{i}", 200,
                                     1_700_000_000 + i, bytes(8)) for i in range(args.visited)]
            for i in range(0, len(records), 1000):
                await frontier.mark_visited(records[i:i + 1000])
            visited_bytes = await frontier.visited.memory_bytes()
            print(f"visited memory: {visited_bytes / args.visited:.1f} bytes per visited URL "
                  f"({args.visited:,} records, {frontier.visited.buckets:,} buckets)")
            frontier.close()
    finally:
        async for key in redis.scan_iter(match=f"{name}:*", count=1000):
            await redis.unlink(key)
        await redis.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--urls", type=int, default=500_000)
    parser.add_argument("--domains", type=int, default=2_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--adders", type=int, default=4, help="concurrent add_urls callers")
    parser.add_argument("--workers", type=int, default=8, help="concurrent claiming workers")
    parser.add_argument("--seconds", type=float, default=3.0, help="claim benchmark length")
    parser.add_argument("--capacity", type=int, default=2_000_000, help="seen filter capacity")
    parser.add_argument("--visited", type=int, default=100_000, help="visited records to write")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop if installed")
    args = parser.parse_args(argv)
    if args.uvloop:
        import uvloop

        uvloop.run(run(args))
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
