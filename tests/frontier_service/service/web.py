"""The test web the service tests crawl, and crawler settings pointed at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archive_testkit.testweb import DeadMode, RobotsKind, TestWebConfig, host_traits, hosts_where
from frontier_service.service.crawler_settings import CrawlerSettings

# Small pages and a small graph, every trait on a few hosts, traps short enough to wait out.
WEB = TestWebConfig(
    seed=5,
    hosts=24,
    pages_per_host=20,
    links_per_page=20,
    page_min_bytes=2_000,
    page_max_bytes=6_000,
    latency_ms=2.0,
    special_fraction=0.25,
    trap_fraction=0.1,
    slow_delay_s=0.5,
    huge_body_bytes=3_000_000,
    dead_fraction=0.12,
    crawl_delay_fraction=0.15,
    crawl_delay_s=0.2,
    huge_robots_bytes=700_000,
)
MIN_DELAY_S = 0.05
SEEDS = tuple(f"http://{host}/" for host in hosts_where(WEB, lambda t: True)[:6])
ALIVE = frozenset(hosts_where(WEB, lambda t: t.alive))
DEAD = frozenset(hosts_where(WEB, lambda t: t.dead is not DeadMode.ALIVE))

# Quick failures: a dead host is retired within a second, not a minute.
FAST_FETCH: dict[str, Any] = {
    "connect_timeout_s": 2.0,
    "read_timeout_s": 3.0,
    "total_timeout_s": 5.0,
    "fetch_deadline_s": 8.0,
    "retry_backoff_s": (0.05,),
}


def crawler_settings(data_dir: Path, redis_url: str, crawl_name: str, port: int,
                     **changes: Any) -> CrawlerSettings:
    base = CrawlerSettings(
        data_dir=data_dir,
        redis_url=redis_url,
        crawl_name=crawl_name,
        concurrency=32,
        min_delay_s=MIN_DELAY_S,
        max_crawl_delay_s=1.0,
        response_time_factor=2.0,
        max_depth=2,
        domain_page_budget=10_000,
        max_body_bytes=1_000_000,
        allowed_domains=("*.test",),
        allowed_networks=("127.0.0.0/8",),
        host_map=(("*.test", f"127.0.0.1:{port}"),),
        segment_pages=150,
        segment_seconds=60.0,
        metrics_port=-1,
        progress_seconds=0.0,
        lease_seconds=30.0,
        link_flush_s=0.05,
        visit_flush_s=0.1,
        claim_poll_s=0.005,
        seen_capacity=200_000,
        visited_expected=20_000,
        compact_bytes=0,  # the tests read every queued URL back from the files
        host_failure_backoff_s=(0.1, 0.2),
        robots_unreachable_retry_s=0.05,
        fetch_overrides=FAST_FETCH,
        exit_when_idle_s=0.5,
        max_seconds=45.0,
        event_loop="asyncio",
    )
    return base.with_changes(**changes)


def expected_delay(host: str) -> float:
    """The least gap the crawler must leave between two requests to `host`."""
    traits = host_traits(WEB, host)
    assert traits is not None
    if traits.robots is RobotsKind.CRAWL_DELAY:
        return max(MIN_DELAY_S, WEB.crawl_delay_s)
    return MIN_DELAY_S
