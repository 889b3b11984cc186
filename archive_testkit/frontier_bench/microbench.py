"""Frontier microbenchmark: add throughput with dedup, claim throughput, Redis bytes per URL.

    python -m archive_testkit.frontier_bench.microbench --redis-url redis://127.0.0.1:6379/0

Adds run all new, then all duplicates, then (with --new-share) in the crawl mix: batches
of which a measured share is new, the rest already seen (bench/crawl_bench.py measures
the share in its frontier crawl and passes it on).

Uses a throwaway key prefix and temp dir, and deletes both afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from redis.asyncio import Redis

from archive_testkit.frontier_bench.parallel_adds import ChildSpec, redis_cpu_seconds, run_parallel
from archive_testkit.frontier_bench.url_batches import make_batches, mix_batches
from frontier_service.frontier.bloom_sizing import sizing
from frontier_service.frontier.frontier import Frontier, FrontierConfig
from frontier_service.frontier.seen import plan_layout
from frontier_service.frontier.state import Reschedule
from frontier_service.frontier.visited import VisitedRecord


@dataclass(frozen=True, slots=True)
class Rate:
    """Items per wall second, and CPU microseconds per item in this process and in Redis."""

    per_second: float
    client_us: float
    redis_us: float

    def __str__(self) -> str:
        return (f"{self.per_second:,.0f}/s (CPU per item: client {self.client_us:.1f} us, "
                f"redis {self.redis_us:.1f} us)")


async def measured(redis: Redis, items: Callable[[], Awaitable[int]]) -> Rate:
    """Run items(); rate it by wall clock, with client and Redis CPU time per item."""
    redis_before, cpu_before = await redis_cpu_seconds(redis), time.process_time()
    started = time.perf_counter()
    count = await items()
    wall = time.perf_counter() - started
    client = time.process_time() - cpu_before
    server = await redis_cpu_seconds(redis) - redis_before
    return Rate(count / wall, client / count * 1e6, server / count * 1e6)


async def bench_adds(frontier: Frontier, batches: list[list[tuple[str, int]]],
                     concurrency: int) -> Rate:
    """URLs offered per second with `concurrency` concurrent add_urls callers."""
    feed: Iterator[list[tuple[str, int]]] = iter(batches)

    async def adder() -> None:
        for links in feed:
            await frontier.add_urls(links)

    async def run_all() -> int:
        await asyncio.gather(*(adder() for _ in range(concurrency)))
        return sum(len(b) for b in batches)

    return await measured(frontier.redis, run_all)


async def bench_claims(frontier: Frontier, workers: int, seconds: float, per_call: int) -> Rate:
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
                    await frontier.done(held[0], name, time.time(), new_offset=0)
            else:
                now = time.time()
                _, held = await frontier.release_and_claim(
                    name, [Reschedule(d, now, 0) for d in held], per_call)
            cycles += len(held)
            if not held:
                await asyncio.sleep(0.001)
        if held and per_call > 1:
            await frontier.done_many(name, [Reschedule(d, time.time(), 0) for d in held])

    async def run_all() -> int:
        await asyncio.gather(*(worker(i) for i in range(workers)))
        return cycles

    return await measured(frontier.redis, run_all)


async def report_adds(frontier: Frontier, args: argparse.Namespace, root: Path) -> None:
    started = time.perf_counter()
    await frontier.add_urls([(f"https://www.site{d}.example/", 0) for d in range(args.domains)])
    took = time.perf_counter() - started
    print(f"warm-up: {args.domains:,} domains' frontier files created in {took:.2f} s "
          f"({took / args.domains * 1e3:.2f} ms per domain, mostly file creation)")
    for label, clustered in (("clustered", True), ("uniform", False)):
        batches = make_batches(args.urls, args.domains, args.batch, clustered=clustered,
                               seed=len(label), tag=label)
        per_batch = sum(len({u.split("/")[2] for u, _ in b}) for b in batches) / len(batches)
        if clustered and args.processes > 1:
            del batches
            await report_parallel_adds(frontier, args, root, label, per_batch)
            continue
        mixed = None
        if clustered and args.new_share is not None:
            mixed = mix_batches(batches, make_batches(
                args.urls, args.domains, args.batch, clustered=True, seed=len(label),
                tag=f"{label}-mix"), args.new_share)
        gc.collect()
        gc.freeze()  # keep the collector off the half million test URLs
        rate = await bench_adds(frontier, batches, args.adders)
        print(f"add_urls, new URLs, {label} ({per_batch:.0f} domains per batch of "
              f"{args.batch}): {rate}")
        if clustered:
            rate = await bench_adds(frontier, batches, args.adders)
            print(f"add_urls, all duplicates, {label}: {rate}")
        if mixed is not None:
            rate = await bench_adds(frontier, mixed, args.adders)
            print(f"add_urls, {crawl_mix_title(args)}: {rate}")
        del batches, mixed
        gc.unfreeze()
        gc.collect()
    stats = await frontier.stats()
    print(f"frontier: {stats.counters.get('urls_added', 0):,} URLs, "
          f"{stats.pending_bytes:,} bytes pending, {stats.ready_domains} ready domains")


async def report_parallel_adds(frontier: Frontier, args: argparse.Namespace, root: Path,
                               label: str, per_batch: float) -> None:
    """The clustered adds from args.processes processes, each with args.adders callers."""
    specs = [ChildSpec(args.redis_url, root, frontier.config, index, args.processes,
                       args.adders, args.urls, args.domains, args.batch, label, args.new_share)
             for index in range(args.processes)]
    mixing = args.new_share is not None
    results = await run_parallel(frontier.redis, specs,
                                 ("new", "again", "mix") if mixing else ("new", "again"))
    new, duplicates = results[0], results[1]
    titled = [(f"new URLs, {label} ({per_batch:.0f} domains per batch of "
               f"{args.batch}, {args.processes} processes)", new),
              (f"all duplicates, {label}", duplicates)]
    if mixing:
        titled.append((f"{crawl_mix_title(args)}, {args.processes} processes", results[2]))
    for title, result in titled:
        rate = Rate(result.offered / result.wall, result.client_cpu / result.offered * 1e6,
                    result.redis_cpu / result.offered * 1e6)
        print(f"add_urls, {title}: {rate}")
        for index, child in enumerate(result.children):
            print(f"  {child.describe(index)}")
    print(f"  added: {new.added:,} of {new.offered:,} new URLs, then {duplicates.added:,} "
          f"of the {duplicates.offered:,} again"
          + (f", then {results[2].added:,} of {results[2].offered:,} mixed" if mixing else ""))


def crawl_mix_title(args: argparse.Namespace) -> str:
    return f"crawl mix ({args.new_share:.0%} new, {args.new_share_source})"


async def report_claims(frontier: Frontier, args: argparse.Namespace) -> None:
    for per_call in (1, 8, 32):
        rate = await bench_claims(frontier, args.workers, args.seconds, per_call)
        print(f"claim+reschedule, {args.workers} workers, {per_call} domain(s) per call: {rate}")


async def report_memory(frontier: Frontier, args: argparse.Namespace) -> None:
    seen_bytes = await frontier.seen.memory_bytes()
    print(f"seen filter memory: {seen_bytes:,} bytes = {seen_bytes / args.capacity:.2f} "
          f"bytes per URL at capacity {args.capacity:,}")
    bits, _ = sizing(160_000_000, 0.001)
    big = plan_layout(160_000_000, 0.001)
    total = big.shards * big.shard_bytes
    print(f"160M URLs at 0.1%: sizing formula {bits / 8e6:.0f} MB; blocked layout "
          f"{total / 1e6:.0f} MB in {big.shards} shards ({total / 160e6:.2f} bytes per URL)")
    records = [VisitedRecord(f"https://v{i % 500}.example/p/{i}", 200, 1_700_000_000 + i,
                             bytes(8)) for i in range(args.visited)]
    for i in range(0, len(records), 1000):
        await frontier.mark_visited(records[i:i + 1000])
    visited_bytes = await frontier.visited.memory_bytes()
    print(f"visited memory: {visited_bytes / args.visited:.1f} bytes per visited URL "
          f"({args.visited:,} records, {frontier.visited.buckets:,} buckets)")


async def run(args: argparse.Namespace) -> None:
    redis = Redis.from_url(args.redis_url)
    name = f"microbench-{uuid.uuid4().hex[:8]}"
    try:
        with tempfile.TemporaryDirectory(prefix="frontier-bench-") as tmp:
            config = FrontierConfig(name=name, seen_capacity=args.capacity,
                                    visited_expected=args.visited)
            frontier = await Frontier(redis, Path(tmp), config).open()
            print(f"seen filter: {frontier.seen.backend} backend, {frontier.seen.layout}")
            if args.new_share is not None:
                print(f"crawl mix: {args.new_share:.2%} of the URLs offered to the frontier "
                      f"are new ({args.new_share_source}"
                      + (f": {args.new_share_detail}" if args.new_share_detail else "") + ")")
            try:
                await report_adds(frontier, args, Path(tmp))
                await report_claims(frontier, args)
                await report_memory(frontier, args)
            finally:
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
    parser.add_argument("--processes", type=int, default=1,
                        help="processes adding the clustered URLs (as `run --processes`)")
    parser.add_argument("--workers", type=int, default=8, help="concurrent claiming workers")
    parser.add_argument("--seconds", type=float, default=3.0, help="claim benchmark length")
    parser.add_argument("--capacity", type=int, default=2_000_000, help="seen filter capacity")
    parser.add_argument("--visited", type=int, default=100_000, help="visited records to write")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop if installed")
    parser.add_argument("--new-share", type=float, default=None,
                        help="also add batches of which this share is new (the crawl mix: "
                             "measure it, e.g. bench/crawl_bench.py passes its crawl's share)")
    parser.add_argument("--new-share-source", default="given on the command line",
                        help="where --new-share was measured (printed with it)")
    parser.add_argument("--new-share-detail", default="",
                        help="the measurement behind --new-share (printed with it)")
    args = parser.parse_args(argv)
    if args.uvloop:
        import uvloop

        uvloop.run(run(args))
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
