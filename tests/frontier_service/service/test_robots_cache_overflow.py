"""A crawl of more hosts than the parsed robots.txt cache holds still fetches every page.

Rules dropped from the cache between a host's robots.txt and its page are loaded again
from the store; the page must then be fetched, not put off for another turn (the soak
crawl of 50,000 hosts against the 4,096-entry cache never fetched a page).
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections import Counter
from pathlib import Path

import pytest

from archive_testkit.testweb import TestWebConfig, hosts_where, serve_in_background
from frontier_service.fetch.robots import RobotsCache
from frontier_service.service import crawler_parts
from frontier_service.service.service import CrawlerService
from frontier_service.service.stop_report import NOTHING_LEFT_TO_FETCH
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys

# Every host alive with a plain robots.txt, one page each (home pages only).
_WEB = TestWebConfig(seed=11, hosts=12, pages_per_host=1, latency_ms=2.0, robots_fraction=1.0,
                     garbage_robots_fraction=0.0, huge_robots_hosts=0, special_fraction=0.0,
                     trap_fraction=0.0, dead_fraction=0.0)


def test_pages_are_fetched_when_the_parsed_robots_cache_overflows(
        redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One parsed rule set per process: every other host's robots.txt drops the last one's.
    monkeypatch.setattr(crawler_parts, "RobotsCache", functools.partial(RobotsCache, parsed_entries=1))
    hosts = hosts_where(_WEB, lambda t: True)
    name = f"svc-{uuid.uuid4().hex[:10]}"
    with serve_in_background(_WEB) as web:
        settings = crawler_settings(tmp_path / "data", redis_url, name, web.port, max_depth=0,
                                    concurrency=8, max_seconds=20.0)
        try:
            report = asyncio.run(CrawlerService(settings, seeds=[f"http://{h}/" for h in hosts]).run())
        finally:
            delete_keys(redis_url, name)
        requests = Counter((r.host, r.path_qs) for r in web.log.records())
    assert report.stop.run_reason == NOTHING_LEFT_TO_FETCH
    assert {host for host, path in requests if path == "/"} == set(hosts)
    # Once each: the rules dropped from the cache came back from the store, not the host.
    assert {(host, path): n for (host, path), n in requests.items() if n > 1} == {}
    assert report.pages >= len(hosts)
    assert report.metrics.robots_fetches == len(hosts)  # requests, not loads from the store
