"""(a) frontier_service itself: the real CrawlerService, or N of them under the supervisor,
or one machine of several (`--machine`, `--crawl-name`: bench/crawl_machines.py).

With `--processes N` (N > 1) this is `frontier-service run --processes N`: the supervisor
runs here, the crawlers in spawned children; pages and CPU are the children's, summed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import uuid
from pathlib import Path

from redis.asyncio import Redis

from bench.crawl_baselines.common import (
    MAX_BODY_BYTES,
    USER_AGENT,
    Window,
    add_common_args,
    cpu_seconds,
    seeds,
)
from frontier_service.frontier.frontier import Frontier
from frontier_service.service.crawler_parts import frontier_config
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.process import configure_logging, run_async
from frontier_service.service.service import CrawlerService
from frontier_service.service.supervisor import CrawlerSupervisor, resolve_processes


def settings_for(args: argparse.Namespace) -> CrawlerSettings:
    return CrawlerSettings(
        data_dir=Path(args.work_dir) / "data",
        redis_url=args.redis_url,
        crawl_name=args.crawl_name or f"bench-{uuid.uuid4().hex[:8]}",
        machine=args.machine or "",
        slots=args.slots,
        machine_lease_s=10.0,
        concurrency=args.concurrency,
        min_delay_s=args.delay,
        max_crawl_delay_s=args.delay,
        response_time_factor=2.0,
        max_depth=1000,
        user_agent=USER_AGENT,
        max_body_bytes=MAX_BODY_BYTES,
        allowed_domains=("*.test",),
        allowed_networks=("127.0.0.0/8",),
        host_map=(("*.test", f"127.0.0.1:{args.port}"),),
        fetch_assets=False,  # the baselines follow <a> links only
        metrics_port=-1,
        progress_seconds=10.0,
        seen_capacity=20_000_000,
        visited_expected=1_000_000,
        max_seconds=args.warmup + args.seconds + 0.5,
        event_loop=args.loop,
        drain_timeout_s=5.0,
    )


def service_cpu(service: CrawlerService | CrawlerSupervisor) -> float:
    """CPU seconds of the crawler: this process, plus its children when supervised."""
    return service.cpu_seconds() if isinstance(service, CrawlerSupervisor) else cpu_seconds()


async def redis_memory(settings: CrawlerSettings) -> dict[str, float]:
    """Bytes of Redis per seen URL (Bloom filter) and per visited URL (bucketed records)."""
    client = Redis.from_url(settings.redis_url)
    try:
        frontier = await Frontier(client, settings.data_dir, frontier_config(settings)).open()
        counters = (await frontier.stats()).counters
        seen_urls = counters.get("urls_added", 0)
        visited = await frontier.visited.count()
        seen_bytes = await frontier.seen.memory_bytes()
        visited_bytes = await frontier.visited.memory_bytes()
        frontier.close()
        async for key in client.scan_iter(match=f"{settings.crawl_name}:*", count=1000):
            await client.unlink(key)
    finally:
        await client.aclose()
    return {"seen_urls": seen_urls, "seen_bytes": seen_bytes,
            "seen_capacity": settings.seen_capacity,
            "visited_urls": visited, "visited_bytes_per_url": visited_bytes / max(visited, 1)}


async def crawl(args: argparse.Namespace, settings: CrawlerSettings) -> None:
    processes = resolve_processes(args.processes)
    service: CrawlerService | CrawlerSupervisor
    if processes == 1:
        service = CrawlerService(settings, seeds=tuple(seeds(args)))
    else:  # `frontier-service run --processes N`: children report pages and CPU
        service = CrawlerSupervisor(settings, processes, seeds=tuple(seeds(args)))
    run = asyncio.create_task(service.run())
    await service.started.wait()
    window = Window(args.warmup, args.seconds)  # the window reads the service's page counter
    await asyncio.sleep(args.warmup)
    window.pages = service.metrics.pages
    window.mark("open", cpu=service_cpu(service))
    await asyncio.sleep(args.seconds)
    window.pages = service.metrics.pages
    window.mark("close", cpu=service_cpu(service))
    service.request_stop("bench window over")
    report = await run
    window.pages, window.errors = report.pages, report.metrics.fetch_errors
    # Several machines share the crawl's keys: the bench removes them when all are done.
    memory = await redis_memory(settings) if not settings.machine else {}
    m = report.metrics
    window.result("frontier_service", processes=processes, loop=settings.event_loop,
                  urls_added=m.urls_added,
                  claims=m.claims, claim_calls=m.claim_calls, robots_disallowed=m.robots_disallowed,
                  hosts_retired=m.hosts_retired, new_blobs=m.new_blobs, **memory).emit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_common_args(parser)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--processes", default="1", help="crawler processes (N or auto)")
    parser.add_argument("--machine", default="", help="crawl as this machine of several")
    parser.add_argument("--crawl-name", default="", help="the crawl (machines share one)")
    parser.add_argument("--slots", type=int, default=0, help="with --machine: the slots")
    args = parser.parse_args()
    configure_logging()
    settings = settings_for(args)
    gc.freeze()  # as frontier_service.service.process.run_crawler does
    gc.set_threshold(20_000, 20, 20)
    run_async(crawl(args, settings), args.loop)


if __name__ == "__main__":
    main()
