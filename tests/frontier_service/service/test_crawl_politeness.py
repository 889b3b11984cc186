"""One full crawl of the test web: exactly-once, robots, per-host delays."""

from __future__ import annotations

import itertools
from collections import Counter

from archive_testkit.testweb import host_traits
from frontier_service.service.stop_report import NOTHING_LEFT_TO_FETCH
from tests.frontier_service.service.request_times import (
    RECORD_ROUNDING_S,
    crawler_starts,
    server_arrivals,
)
from tests.frontier_service.service.web import ALIVE, DEAD, WEB, expected_delay
from tests.helpers.crawls import Crawl

# time.monotonic() on both sides of loopback: allow for timer granularity only.
_CLOCK_SLACK_S = 0.002


def test_the_crawl_ran_to_the_end(crawl: Crawl) -> None:
    stop = crawl.report.stop
    assert stop.run_reason == NOTHING_LEFT_TO_FETCH
    # URLs are left queued only on the dead hosts, retired as unreachable (and it says so).
    assert set(stop.hosts_json()) <= {"host unreachable"}
    assert all(host in DEAD for group in stop.stopped_hosts for host in group.examples)
    assert crawl.report.stop_reason == (stop.summary if stop.urls_left else "frontier exhausted")
    assert crawl.report.pages > 300
    hosts = {r.host for r in crawl.requests}
    assert len(hosts & ALIVE) > 10 and hosts & DEAD


def test_no_url_is_fetched_twice(crawl: Crawl) -> None:
    # Dead hosts are retried by design (and aiohttp resends a GET on a dropped connection).
    counts = Counter((r.host, r.path_qs) for r in crawl.requests if r.host in ALIVE)
    twice = {key: n for key, n in counts.items() if n > 1}
    assert not twice


def test_robots_txt_is_fetched_once_per_host(crawl: Crawl) -> None:
    robots = Counter(r.host for r in crawl.requests if r.path_qs == "/robots.txt" and r.host in ALIVE)
    assert robots and set(robots.values()) == {1}


def test_disallowed_urls_are_never_fetched(crawl: Crawl) -> None:
    private = [r for r in crawl.requests if r.path_qs.startswith("/private/")]
    for record in private:
        traits = host_traits(WEB, record.host)
        assert traits is not None and not traits.disallows_private, record
    assert crawl.report.metrics.robots_disallowed > 0


def test_each_host_waits_its_delay_between_requests(crawl: Crawl) -> None:
    # One request at a time: each waits a delay after the last response, so the gaps hold
    # as the server saw them. Several: starts a delay apart as the crawler sent them.
    if crawl.settings.per_host_concurrency == 1:
        times, slack = server_arrivals(crawl.requests, ALIVE), _CLOCK_SLACK_S
    else:
        times = crawler_starts(crawl.settings.data_dir, ALIVE)
        slack = _CLOCK_SLACK_S + RECORD_ROUNDING_S
    checked = 0
    for host, starts in times.items():
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        if gaps:
            checked += 1
            assert min(gaps) >= expected_delay(host) - slack, (host, min(gaps))
    assert checked > 10


def test_dead_hosts_are_retired_quickly(crawl: Crawl) -> None:
    per_host = Counter(r.host for r in crawl.requests if r.host in DEAD)
    assert per_host and max(per_host.values()) <= 12
    assert crawl.report.metrics.hosts_retired >= len(per_host)
