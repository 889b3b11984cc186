"""Redis memory of one crawl at 1/100 of the design's scenario, extrapolated to the whole.

    .venv/bin/python bench/crawl_redis_memory.py            # 1.6 M seen, 75 k visited, 10 k domains
    .venv/bin/python bench/crawl_bench.py --case redis-memory

A throwaway redis-server, filled through the crawler's own code: a Frontier sized as the
crawler would size it for the scenario (seen capacity = the seen URLs, visited buckets for
the visited records) takes `--seen` URLs over `--domains` domains with `add_canonical` (the
seen filter, the domain hashes and the ready queue), every domain is claimed and released
once (leases, host gates, the domain hash's offsets), `--visited` fetches go through the
crawler's VisitBuffer (visited records, each domain's page count and response time), and
each domain's robots.txt is cached as the crawler caches it (RedisRobotsStore, a
`--robots-bytes` body). It prints
`INFO memory` used_memory before and after, MEMORY USAGE per key family, bytes per seen URL,
per visited record and per domain, and the extrapolation to 160 M seen / 7.5 M visited /
1 M domains: the seen filter computed for its capacity at the configured error rate (a Bloom
filter's size follows its capacity, not the URLs in it), the rest linearly. Target <= 1.5 GB
(the design estimated 4.5 GB); exit 1 above it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from redis.asyncio import Redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from archive_pipelines.canonical_urls import canonical_url_and_domain  # noqa: E402
from archive_pipelines.embedded_redis import LocalRedis  # noqa: E402
from frontier_service.fetch.redis_robots_store import RedisRobotsStore  # noqa: E402
from frontier_service.fetch.robots_store import StoredRobots  # noqa: E402
from frontier_service.frontier.frontier import Frontier, FrontierConfig  # noqa: E402
from frontier_service.frontier.seen import plan_layout  # noqa: E402
from frontier_service.frontier.state import Reschedule  # noqa: E402
from frontier_service.frontier.visited import VisitedRecord  # noqa: E402
from frontier_service.pages.visit_buffer import VisitBuffer  # noqa: E402

SCALE = 100
TARGET_BYTES = 1.5e9
DESIGN_BYTES = 4.5e9
WORDS = ("account", "admin", "api", "archive", "basket", "calendar", "cart", "checkout",
         "comment", "download", "event", "feed", "filter", "login", "media", "print", "profile",
         "register", "search", "share", "sort", "tag", "tmp", "user", "wp-admin", "wp-json")


def robots_body(size: int, seed: int) -> bytes:
    """A robots.txt of `size` bytes, its lines as varied as real ones (not one line repeated,
    which zlib would squeeze to nothing)."""
    rng = random.Random(seed)
    lines = [b"User-agent: *"]
    while sum(len(line) + 1 for line in lines) < size:
        kind = rng.choice((b"Disallow", b"Disallow", b"Allow"))
        path = "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        tail = rng.choice(("/", "*", f"?{rng.choice(WORDS)}=", f"-{rng.randint(1, 9999)}/"))
        lines.append(kind + b": /" + path.encode() + tail.encode())
    return (b"\n".join(lines) + b"\n")[:size]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("redis-memory case (--case redis-memory)")
    group.add_argument("--seen", type=int, default=1_600_000, help="URLs added (seen)")
    group.add_argument("--visited", type=int, default=75_000, help="visited records")
    group.add_argument("--domains", type=int, default=10_000)
    group.add_argument("--error-rate", type=float, default=0.001, help="the seen filter's")
    group.add_argument("--robots-bytes", type=int, default=500,
                       help="robots.txt body cached per domain (varied lines)")


def domain_name(n: int) -> str:
    """Names of a realistic spread of lengths (13-30 characters)."""
    return f"{'www.' if n % 3 else ''}site{n}-{'news' * (n % 4)}.example.{('com', 'org', 'de')[n % 3]}"


def url(domain: str, i: int) -> str:
    return f"https://{domain}/section{i % 37}/article-{i}.html?page={i % 7}"


async def family_bytes(redis: Redis) -> dict[str, tuple[int, int]]:
    """(keys, MEMORY USAGE bytes) per key family (the key with its name's variable part cut)."""
    families: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    keys = [key async for key in redis.scan_iter(count=5000)]
    for start in range(0, len(keys), 2000):
        chunk = keys[start:start + 2000]
        async with redis.pipeline(transaction=False) as pipe:
            for key in chunk:
                pipe.memory_usage(key, samples=0)
            sizes = await pipe.execute()
        for key, size in zip(chunk, sizes, strict=True):
            family = family_of(key.decode(errors="replace"))
            families[family][0] += 1
            families[family][1] += int(size or 0)
    return {name: (count, size) for name, (count, size) in sorted(families.items())}


def family_of(key: str) -> str:
    parts = key.split(":")
    if parts[0] == "hostgate":
        return "hostgate:{domain}"
    if len(parts) >= 2 and parts[1] in ("domain", "robots"):
        return f"{parts[0]}:{parts[1]}:{{name}}"
    if len(parts) >= 2 and parts[-1].isdigit():
        return ":".join(parts[:-1]) + ":{n}"
    return key


async def used_memory(redis: Redis) -> int:
    return int((await redis.info("memory"))["used_memory"])


async def fill(redis: Redis, root: Path, args: argparse.Namespace) -> dict[str, int]:
    """Fill Redis through the crawler's code; used_memory after each step."""
    steps = {"empty": await used_memory(redis)}
    config = FrontierConfig(name="mem", seen_capacity=args.seen, seen_error_rate=args.error_rate,
                            visited_expected=args.visited, max_open_files=256)
    frontier = await Frontier(redis, root, config).open()
    try:
        steps["opened (empty filters)"] = await used_memory(redis)
        domains = [domain_name(n) for n in range(args.domains)]
        per_domain = -(-args.seen // args.domains)
        added = 0
        for i in range(0, per_domain, 10):  # 10 URLs per domain per batch, as links arrive
            batch = [(canonical_url_and_domain(url(d, j)), 1) for j in range(i, i + 10)
                     for d in domains]
            added += (await frontier.add_canonical(batch[:args.seen - added])).added
            if added >= args.seen:
                break
        steps["URLs added"] = await used_memory(redis)
        now = time.time()
        claimed: list[str] = []
        while len(claimed) < args.domains:
            got = await frontier.claim("bench-worker", 1000, now=now)
            if not got:
                break
            claimed += got
        await frontier.done_many("bench-worker", [
            Reschedule(d, now + 1.0, frontier.files.size(d) // 2) for d in claimed], now=now)
        steps["domains claimed and released"] = await used_memory(redis)
        # The crawler's visit buffer: visited records, and each domain's page count and
        # response time in its hash.
        visits = VisitBuffer(frontier, flush_records=5000)
        for n in range(args.visited):
            domain = domains[n % args.domains]
            visits.record(VisitedRecord(url(domain, n // args.domains), 200, int(now),
                                        bytes(range(8))), domain, ok=True, response_ms=123.4)
            if n % 5000 == 4999:
                await visits.flush()
        await visits.flush()
        steps["visited marked, fetches counted"] = await used_memory(redis)
        robots = RedisRobotsStore(redis, "mem")
        for n, d in enumerate(domains):
            await robots.set(f"https://{d}", StoredRobots(body=robots_body(args.robots_bytes, n),
                                                           expires_at=now + 86400, source="parsed"))
        steps["robots.txt cached"] = await used_memory(redis)
        steps["claimed"] = len(claimed)
        steps["seen_bytes"] = await frontier.seen.memory_bytes()
        steps["visited_bytes"] = await frontier.visited.memory_bytes()
        steps["visited_records"] = await frontier.visited.count()
        steps["added"] = added
    finally:
        frontier.close()
    return steps


def human(count: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.2f} {unit}"
    return f"{count:,.0f} bytes"


def run_case(args: argparse.Namespace, work: Path) -> bool:
    print(f"crawl Redis memory {time.strftime('%Y-%m-%d %H:%M')}: {args.seen:,} seen, "
          f"{args.visited:,} visited, {args.domains:,} domains (1/{SCALE} of the design's "
          f"scenario), seen filter at {args.error_rate:g}", flush=True)
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with LocalRedis() as server:

        async def main() -> tuple[dict[str, int], dict[str, tuple[int, int]], str]:
            redis = Redis.from_url(server.url)
            try:
                steps = await fill(redis, work, args)
                families = await family_bytes(redis)
                info = await redis.info("memory")
                version = (await redis.info("server"))["redis_version"]
                return steps, families, f"redis {version}, {info.get('mem_allocator')}"
            finally:
                await redis.aclose()

        steps, families, server_name = asyncio.run(main())
    return report(args, steps, families, server_name, seconds=time.monotonic() - started)


def report(args: argparse.Namespace, steps: dict[str, int], families: dict[str, tuple[int, int]],
           server_name: str, *, seconds: float) -> bool:
    print(f"{server_name}; filled in {seconds:.0f} s; {steps['added']:,} URLs new, "
          f"{steps['claimed']:,} domains claimed, {steps['visited_records']:,} visited records")
    print("INFO memory used_memory after each step:")
    previous = None
    for name in ("empty", "opened (empty filters)", "URLs added", "domains claimed and released",
                 "visited marked, fetches counted", "robots.txt cached"):
        change = steps[name] - previous if previous is not None else 0
        grown = (f" ({'+' if change >= 0 else '-'}{human(abs(change))})"
                 if previous is not None else "")
        print(f"  {name:<34} {human(steps[name]):>10}{grown}")
        previous = steps[name]
    print("MEMORY USAGE per key family:")
    for family, (count, size) in families.items():
        print(f"  {family:<28} {count:>7,} keys {human(size):>10}  ({size / max(count, 1):,.0f} per key)")
    seen_bytes = steps["seen_bytes"]
    visited_per = steps["visited_bytes"] / max(steps["visited_records"], 1)
    per_domain_families = [f for f in families if "{name}" in f or "{domain}" in f]
    zsets = sum(size for f, (_, size) in families.items() if f.startswith("mem:domains:"))
    domain_bytes = sum(families[f][1] for f in per_domain_families) + zsets
    per_domain = domain_bytes / args.domains
    print(f"per seen URL: {seen_bytes / args.seen:.2f} bytes (seen filter {human(seen_bytes)} "
          f"for {args.seen:,} at {args.error_rate:g})")
    print(f"per visited record: {visited_per:.1f} bytes")
    print(f"per domain: {per_domain:,.0f} bytes (domain hash, ready queue, robots.txt entry of "
          f"a {args.robots_bytes}-byte body); host gates and leases are held only while a host "
          f"is leased or waits out its delay (a gate expires at the host's next fetch time): "
          f"{families.get('hostgate:{domain}', (0, 0))[0]:,} left here")
    layout = plan_layout(args.seen * SCALE, args.error_rate)
    big_seen = layout.shards * layout.shard_bytes
    big_visited = visited_per * args.visited * SCALE
    big_domains = per_domain * args.domains * SCALE
    total = big_seen + big_visited + big_domains
    measured_total = steps["robots.txt cached"] - steps["empty"]
    print(f"x{SCALE}: {args.seen * SCALE / 1e6:,.0f} M seen, {args.visited * SCALE / 1e6:,.1f} M "
          f"visited, {args.domains * SCALE / 1e6:,.1f} M domains:")
    print(f"  seen filter   {human(big_seen):>10}  ({layout.shards} strings of "
          f"{human(layout.shard_bytes)}, {layout.hashes} hashes: sized for the capacity)")
    print(f"  visited       {human(big_visited):>10}")
    print(f"  domains       {human(big_domains):>10}")
    print(f"  total         {human(total):>10}  (measured here: {human(measured_total)} by "
          f"used_memory; design estimate {human(DESIGN_BYTES)}: {total / DESIGN_BYTES:.2f}x)")
    passed = total <= TARGET_BYTES
    print(f"{'PASS' if passed else 'FAIL'}  extrapolated Redis memory {human(total)} "
          f"(target <= {human(TARGET_BYTES)})")
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    add_arguments(parser)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="crawl-redis-memory-") as work:
        return 0 if run_case(args, Path(work)) else 1


if __name__ == "__main__":
    sys.exit(main())
