"""A Redis that lost the crawl's state loses no URL: FLUSHALL mid-crawl, redis-server killed
and restarted empty, Redis replaced by a fresh one on another port. Each time the crawl
ends with every page an undisturbed crawl fetches, and the URLs fetched twice stay within
what one checkpoint interval (plus the fetches in flight) can repeat."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis.asyncio import Redis

from archive_pipelines.embedded_redis import LocalRedis
from archive_pipelines.server_process import free_port
from archive_testkit.testweb import RequestRecord, TestWeb, TestWebConfig, serve_in_background
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.web import crawler_settings

pytestmark = pytest.mark.faults  # the fault-injection suite (issue 18): pytest -m faults

WEB = TestWebConfig(seed=21, hosts=6, pages_per_host=50, links_per_page=12,
                    cross_host_fraction=0.2, page_min_bytes=1_000, page_max_bytes=2_000,
                    latency_ms=2.0, robots_fraction=1.0, crawl_delay_fraction=0.0,
                    garbage_robots_fraction=0.0, huge_robots_hosts=0, special_fraction=0.0,
                    trap_fraction=0.0, dead_fraction=0.0)
SEEDS = tuple(f"http://site{n:04d}.test/" for n in range(WEB.hosts))
CHECKPOINT_S = 0.5

Key = tuple[str, str]


def settings(data: Path, redis_url: str, name: str, port: int) -> CrawlerSettings:
    return crawler_settings(data, redis_url, name, port, concurrency=8, min_delay_s=0.02,
                            response_time_factor=0.0, max_depth=30, exit_when_idle_s=1.0,
                            checkpoint_seconds=CHECKPOINT_S, max_seconds=90.0,
                            dagster_home=None)


def page_counts(records: list[RequestRecord]) -> Counter[Key]:
    """Requests per (host, path), robots.txt left out (a wiped Redis forgets it by design)."""
    return Counter((r.host, r.path_qs) for r in records if r.path_qs != "/robots.txt")


@dataclass
class Faulted:
    reports: list[RunReport]
    pages_at_fault: int
    counts: Counter[Key]

    @property
    def twice(self) -> int:
        return sum(n - 1 for n in self.counts.values())

    def bound(self, concurrency: int) -> float:
        """What one checkpoint interval of fetching, plus those in flight, can repeat."""
        pages = sum(r.pages for r in self.reports)
        seconds = sum(r.seconds for r in self.reports)
        return concurrency + pages / seconds * CHECKPOINT_S


async def crawl_until(service: CrawlerService, pages: int,
                      fault: Callable[[], Awaitable[None]]) -> tuple[RunReport, int]:
    """Run the crawl; once it has fetched `pages`, inject the fault; returns its report."""
    task = asyncio.create_task(service.run())
    while service.metrics.pages < pages and not task.done():
        await asyncio.sleep(0.005)
    at = service.metrics.pages
    await fault()
    return await task, at


async def flushall(url: str) -> None:
    client = Redis.from_url(url)
    try:
        await client.flushall()
    finally:
        await client.aclose()


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


@pytest.fixture(scope="module")
def reachable(web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> set[Key]:
    """What an undisturbed crawl fetches."""
    web.log.clear()
    with LocalRedis() as server:
        data = tmp_path_factory.mktemp("undisturbed") / "data"
        report = asyncio.run(CrawlerService(settings(data, server.url, "loss", web.port),
                                            seeds=SEEDS).run())
    counts = page_counts(web.log.records())
    assert report.stop_reason == "frontier exhausted" and len(counts) > 200
    assert max(counts.values()) == 1
    return set(counts)


def check(result: Faulted, reachable: set[Key], what: str,
          capsys: pytest.CaptureFixture[str]) -> None:
    assert result.pages_at_fault < len(reachable) * 0.7, "the fault came too late to matter"
    assert result.reports[-1].stop_reason == "frontier exhausted"
    missing = reachable - set(result.counts)
    assert not missing, f"{len(missing)} reachable pages never fetched, e.g. {sorted(missing)[:3]}"
    bound = result.bound(8)
    with capsys.disabled():  # reported in the test run's output, -q or not
        print(f"\n  {what}: {result.twice} URLs fetched twice of {len(reachable)} (bound "
              f"{bound:.0f}: 8 in flight + {CHECKPOINT_S} s of fetching)")
    assert result.twice <= bound


def test_flushall_mid_crawl(web: TestWeb, reachable: set[Key], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    web.log.clear()
    with LocalRedis() as server:
        service = CrawlerService(settings(tmp_path / "data", server.url, "loss", web.port),
                                 seeds=SEEDS)
        report, at = asyncio.run(crawl_until(service, len(reachable) // 3,
                                             lambda: flushall(server.url)))
    assert report.metrics.redis_rebuilds >= 1
    check(Faulted([report], at, page_counts(web.log.records())), reachable, "FLUSHALL", capsys)


def test_redis_killed_and_restarted_empty(web: TestWeb, reachable: set[Key],
                                          tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    web.log.clear()
    with LocalRedis(port=free_port()) as server:
        async def crash() -> None:
            await asyncio.to_thread(server.kill)
            await asyncio.sleep(0.5)  # the crawl goes on with the hosts it holds
            await asyncio.to_thread(server.start)  # same port, nothing persisted

        service = CrawlerService(settings(tmp_path / "data", server.url, "loss", web.port),
                                 seeds=SEEDS)
        report, at = asyncio.run(crawl_until(service, len(reachable) // 3, crash))
    assert report.metrics.redis_rebuilds >= 1
    check(Faulted([report], at, page_counts(web.log.records())), reachable,
          "kill -9 redis-server, restart empty", capsys)


def test_redis_replaced_by_a_fresh_one(web: TestWeb, reachable: set[Key], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    web.log.clear()
    data, name = tmp_path / "data", f"loss-{uuid.uuid4().hex[:6]}"
    with LocalRedis() as first, LocalRedis() as second:
        service = CrawlerService(settings(data, first.url, name, web.port), seeds=SEEDS)

        async def lose_redis() -> None:
            await asyncio.to_thread(first.kill)
            await asyncio.sleep(0.3)
            service.request_stop("the Redis host is gone")

        report, at = asyncio.run(crawl_until(service, len(reachable) // 3, lose_redis))
        assert report.stop_reason == "the Redis host is gone"
        # The operator starts the crawl again on a new Redis: rebuilt from the data dir.
        rerun = asyncio.run(CrawlerService(settings(data, second.url, name, web.port)).run())
    assert rerun.metrics.redis_rebuilds == 1  # before its first claim
    check(Faulted([report, rerun], at, page_counts(web.log.records())), reachable,
          "Redis replaced by a fresh one on another port", capsys)


def test_evicted_domain_keys_are_found_against_the_files(web: TestWeb, reachable: set[Key],
                                                         tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Half the domain hashes vanish (as maxmemory eviction would drop them): the epoch
    stays, so only the check against the files before the end can notice."""
    web.log.clear()
    with LocalRedis() as server:
        async def evict() -> None:
            client = Redis.from_url(server.url)
            try:
                keys = sorted([key async for key in client.scan_iter(match="loss:domain:*")])
                victims = keys[::2]
                await client.unlink(*victims)
                domains = [key.decode().removeprefix("loss:domain:") for key in victims]
                await client.zrem("loss:domains:ready", *domains)
                await client.zrem("loss:domains:leased", *domains)
            finally:
                await client.aclose()

        service = CrawlerService(settings(tmp_path / "data", server.url, "loss", web.port),
                                 seeds=SEEDS)
        report, at = asyncio.run(crawl_until(service, len(reachable) // 3, evict))
    assert report.metrics.frontier_repairs >= 1 and report.metrics.redis_rebuilds == 0
    check(Faulted([report], at, page_counts(web.log.records())), reachable, "evicted keys", capsys)
