"""Per-host concurrency: up to N requests in flight to a host, never more, each URL once;
a robots.txt Crawl-delay makes it one request at a time, its delay apart."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_testkit.testweb import (
    RequestRecord,
    RobotsKind,
    TestWebConfig,
    host_traits,
    serve_in_background,
)
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.request_times import most_in_any_window
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys

LATENCY_S = 0.1
# Two hosts that answer every request after LATENCY_S, no traps, no dead hosts.
SLOW_WEB = TestWebConfig(seed=11, hosts=2, pages_per_host=60, links_per_page=12,
                         cross_host_fraction=0.0, page_min_bytes=1_000, page_max_bytes=2_000,
                         latency_ms=LATENCY_S * 1000, robots_fraction=1.0,
                         crawl_delay_fraction=0.0, garbage_robots_fraction=0.0,
                         huge_robots_hosts=0, special_fraction=0.0, trap_fraction=0.0,
                         dead_fraction=0.0)
CRAWL_DELAY_S = 0.15
SITES = frozenset({"site0000.test", "site0001.test"})
DELAYED_WEB = SLOW_WEB.with_changes(latency_ms=5.0, pages_per_host=12,
                                    crawl_delay_fraction=1.0, crawl_delay_s=CRAWL_DELAY_S)


def crawl(web: TestWebConfig, redis_url: str, data_dir: Path, per_host: int
          ) -> Iterator[tuple[RunReport, list[RequestRecord]]]:
    name = f"phc-{uuid.uuid4().hex[:10]}"
    with serve_in_background(web) as running:
        settings = crawler_settings(
            data_dir, redis_url, name, running.port, concurrency=16,
            per_host_concurrency=per_host, min_delay_s=0.0, response_time_factor=0.0,
            max_depth=6, dagster_home=None)
        seeds = tuple(f"http://site{n:04d}.test/" for n in range(web.hosts))
        try:
            report = asyncio.run(CrawlerService(settings, seeds=seeds).run())
            yield report, running.log.records()
        finally:
            delete_keys(redis_url, name)


@pytest.fixture(scope="module")
def four_per_host(redis_url: str, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[tuple[RunReport, list[RequestRecord]]]:
    yield from crawl(SLOW_WEB, redis_url, tmp_path_factory.mktemp("phc") / "data", 4)


def test_every_page_is_fetched_exactly_once(four_per_host: tuple[RunReport, list[RequestRecord]]
                                            ) -> None:
    report, requests = four_per_host
    assert report.stop_reason == "frontier exhausted"
    counts = Counter((r.host, r.path_qs) for r in requests)
    assert report.pages > 60 and max(counts.values()) == 1
    assert {host for host, path in counts if path == "/robots.txt"} >= SITES


def test_at_most_four_requests_are_in_flight_to_a_host(
        four_per_host: tuple[RunReport, list[RequestRecord]]) -> None:
    # Each response takes LATENCY_S: requests that arrived within less than that of each
    # other were in flight together.
    _, requests = four_per_host
    by_host: dict[str, list[float]] = defaultdict(list)
    for record in requests:
        if record.host in SITES:
            by_host[record.host].append(record.time)
    most = {host: most_in_any_window(times, LATENCY_S * 0.9) for host, times in by_host.items()}
    assert max(most.values()) <= 4, most
    assert min(most.values()) >= 3, most  # and the hosts were actually fetched in parallel


def test_one_at_a_time_is_the_default(redis_url: str, tmp_path_factory: pytest.TempPathFactory
                                      ) -> None:
    web = SLOW_WEB.with_changes(pages_per_host=15)
    for report, requests in crawl(web, redis_url, tmp_path_factory.mktemp("one") / "data", 1):
        assert report.pages > 15
        by_host: dict[str, list[float]] = defaultdict(list)
        for record in requests:
            if record.host in SITES:
                by_host[record.host].append(record.time)
        for times in by_host.values():
            assert most_in_any_window(times, LATENCY_S * 0.9) == 1


def test_a_crawl_delay_means_one_request_at_a_time(
        redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    delayed = {host for host in SITES
               if (traits := host_traits(DELAYED_WEB, host)) is not None
               and traits.robots is RobotsKind.CRAWL_DELAY}
    assert delayed  # the test web gives this host a Crawl-delay
    for report, requests in crawl(DELAYED_WEB, redis_url,
                                  tmp_path_factory.mktemp("delay") / "data", 8):
        assert report.pages > 12
        counts = Counter((r.host, r.path_qs) for r in requests)
        assert max(counts.values()) == 1
        by_host: dict[str, list[float]] = defaultdict(list)
        for record in requests:
            by_host[record.host].append(record.time)
        for host in delayed:
            gaps = [b - a for a, b in itertools.pairwise(sorted(by_host[host]))]
            assert len(gaps) > 5 and min(gaps) >= CRAWL_DELAY_S - 0.002, (host, min(gaps))
