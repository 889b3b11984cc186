"""Two crawls of the same hosts at once (two crawl names, two data dirs, one Redis) share
each host's politeness through the host gates: never more requests in flight to a host than
one crawl may send, request starts at least the delay apart, whichever crawl sent them."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from archive_testkit.testweb import RequestRecord, TestWebConfig, serve_in_background
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.request_times import (
    RECORD_ROUNDING_S,
    crawler_requests,
    crawler_starts,
    most_in_any_window,
    server_arrivals,
)
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys

LATENCY_S = 0.1
DELAY_S = 0.05
# Two hosts answering every request after LATENCY_S: no traps, no dead hosts, no Crawl-delay.
SHARED_WEB = TestWebConfig(seed=23, hosts=2, pages_per_host=20, links_per_page=6,
                           cross_host_fraction=0.0, page_min_bytes=1_000, page_max_bytes=2_000,
                           latency_ms=LATENCY_S * 1000, robots_fraction=1.0,
                           crawl_delay_fraction=0.0, garbage_robots_fraction=0.0,
                           huge_robots_hosts=0, special_fraction=0.0, trap_fraction=0.0,
                           dead_fraction=0.0)
SITES = frozenset({"site0000.test", "site0001.test"})
SEEDS = tuple(f"http://{host}/" for host in sorted(SITES))
# Arrivals on the test web's clock, in the test's own (busy) process: timer granularity.
_CLOCK_SLACK_S = 0.002
# How long the dead holder's gate still holds its host in the test of leases.
HELD_FOR_S = 4.0


@dataclass(frozen=True)
class TwoCrawls:
    settings: tuple[CrawlerSettings, CrawlerSettings]
    reports: tuple[RunReport, RunReport]
    requests: list[RequestRecord]  # as the test web saw them, both crawls'


def crawl_at_once(redis_url: str, root: Path, *, per_host: int, host_gates: str) -> TwoCrawls:
    """Two crawls (names A and B, data dirs of their own) of SHARED_WEB, run together."""
    names = tuple(f"{side}-{uuid.uuid4().hex[:10]}" for side in "ab")
    with serve_in_background(SHARED_WEB) as running:
        settings = tuple(
            crawler_settings(root / name, redis_url, name, running.port, concurrency=16,
                             per_host_concurrency=per_host, min_delay_s=DELAY_S,
                             response_time_factor=0.0, max_depth=6, dagster_home=None,
                             host_gates=host_gates)
            for name in names)

        async def both() -> list[RunReport]:
            return await asyncio.gather(*(CrawlerService(s, seeds=SEEDS).run() for s in settings))

        try:
            first, second = asyncio.run(both())
            return TwoCrawls((settings[0], settings[1]), (first, second), running.log.records())
        finally:
            for name in names:
                delete_keys(redis_url, name)


@pytest.fixture(scope="module", params=[1, 3], ids=["per-host-1", "per-host-3"])
def two_crawls(request: pytest.FixtureRequest, redis_url: str,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoCrawls]:
    gates = f"gates-{uuid.uuid4().hex[:10]}"  # this module's own: no other test shares them
    try:
        yield crawl_at_once(redis_url, tmp_path_factory.mktemp("shared"),
                            per_host=request.param, host_gates=f"{gates}:")
    finally:
        delete_keys(redis_url, gates)


def test_each_crawl_fetches_every_page(two_crawls: TwoCrawls) -> None:
    assert [r.stop_reason for r in two_crawls.reports] == ["frontier exhausted"] * 2
    assert all(r.pages > 30 for r in two_crawls.reports)
    counts = Counter((r.host, r.path_qs) for r in two_crawls.requests if r.host in SITES)
    assert set(counts.values()) == {2}, counts  # once by each crawl
    assert {host for host, path in counts if path == "/robots.txt"} == SITES


def test_no_more_requests_in_flight_to_a_host_than_one_crawl_may_send(
        two_crawls: TwoCrawls) -> None:
    # Each response takes LATENCY_S: requests that arrived within less than that of each
    # other were in flight together.
    per_host = two_crawls.settings[0].per_host_concurrency
    arrivals = server_arrivals(two_crawls.requests, SITES)
    most = {host: most_in_any_window(times, LATENCY_S * 0.9) for host, times in arrivals.items()}
    assert set(most) == SITES
    assert max(most.values()) <= per_host, most
    if per_host > 1:
        assert min(most.values()) >= 2, most  # and the hosts were fetched in parallel


def test_request_starts_are_the_delay_apart_whichever_crawl_sent_them(
        two_crawls: TwoCrawls) -> None:
    # One at a time: the server's arrivals. Several: the starts both crawlers recorded (one
    # clock: they ran in this process), as test_crawl_politeness does for one crawl.
    if two_crawls.settings[0].per_host_concurrency == 1:
        times, slack = server_arrivals(two_crawls.requests, SITES), _CLOCK_SLACK_S
    else:
        merged: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
        for side, settings in zip("AB", two_crawls.settings, strict=True):
            for host, sent in crawler_requests(settings.data_dir, SITES).items():
                merged[host] += [(at, side, url) for at, url in sent]
        sent_by = {host: sorted(sent) for host, sent in merged.items()}
        times = {host: [at for at, _, _ in sent] for host, sent in sent_by.items()}
        slack = _CLOCK_SLACK_S + RECORD_ROUNDING_S
    assert set(times) == SITES
    for host, starts in times.items():
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert len(gaps) > 40, (host, len(gaps))
        closest = min(range(len(gaps)), key=gaps.__getitem__)
        # which crawl sent the two closest starts, and what (the sides tell a shared gate's
        # fault from one crawl's)
        assert gaps[closest] >= DELAY_S - slack, (
            host, gaps[closest], sent_by[host][max(0, closest - 2):closest + 4]
            if two_crawls.settings[0].per_host_concurrency > 1 else starts[closest:closest + 2])


def test_the_crawls_took_turns_on_each_host(two_crawls: TwoCrawls) -> None:
    """Both crawls ran at once (what the tests above check matters), and neither waited for
    the other to finish a host: a holder gives the host up once another crawl waits."""
    for host in SITES:
        sent = sorted((start, side) for side, settings in enumerate(two_crawls.settings)
                      for start in crawler_starts(settings.data_dir, {host}).get(host, []))
        turns = sum(a != b for (_, a), (_, b) in itertools.pairwise(sent))
        assert turns >= 3, (host, turns)


def test_a_dead_holders_gate_holds_its_host_until_its_lease_runs_out(
        redis_url: str, tmp_path: Path) -> None:
    """A crawler killed while it held a host: its gate stays until its lease's end, then
    frees without anyone cleaning up; the other host is crawled meanwhile. (The lease is
    longer than the crawler's start on a loaded machine, so "meanwhile" is observable: the
    free host's first page arrives before the held host's first.)"""
    gates, name = f"gates-{uuid.uuid4().hex[:10]}", f"c-{uuid.uuid4().hex[:10]}"
    held, free = sorted(SITES)
    web = SHARED_WEB.with_changes(pages_per_host=6, latency_ms=5.0)
    client = redis.Redis.from_url(redis_url)
    try:
        with serve_in_background(web) as running:
            settings = crawler_settings(tmp_path / "data", redis_url, name, running.port,
                                        per_host_concurrency=2, min_delay_s=DELAY_S,
                                        response_time_factor=0.0, dagster_home=None,
                                        host_gates=f"{gates}:")
            began, wall = time.monotonic(), time.time()
            client.hset(f"{gates}:{held}", mapping={"owner": "killed@gone:domain:",
                                                     "until": repr(wall + HELD_FOR_S)})
            report = asyncio.run(CrawlerService(settings, seeds=SEEDS).run())
            arrivals = server_arrivals(running.log.records(), SITES)
    finally:
        client.close()
        delete_keys(redis_url, name)
        delete_keys(redis_url, gates)
    assert report.stop_reason == "frontier exhausted"
    assert min(arrivals[held]) >= began + HELD_FOR_S - _CLOCK_SLACK_S
    assert min(arrivals[free]) < min(arrivals[held])
    assert len(arrivals[held]) > 3 and len(arrivals[free]) > 3
