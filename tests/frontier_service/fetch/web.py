"""The test web these tests crawl, hosts with each trait, and a fetcher pointed at it."""

from __future__ import annotations

from typing import Any

from archive_testkit.testweb import DeadMode, RobotsKind, TestWebConfig, TestWebResolver, hosts_where
from frontier_service.fetch import Fetcher, FetchSettings

# Every trait on several hosts; traps slow and big enough that only caps and timeouts end them.
WEB = TestWebConfig(
    seed=11,
    hosts=60,
    pages_per_host=50,
    special_fraction=0.5,
    trap_fraction=0.3,
    dead_fraction=0.1,
    garbage_robots_fraction=0.1,
    crawl_delay_fraction=0.3,
    huge_robots_bytes=3_000_000,
    slow_delay_s=5.0,
    huge_body_bytes=500_000_000,
)

SPECIAL = hosts_where(WEB, lambda t: t.alive and t.special)[0]
TRAPS = hosts_where(WEB, lambda t: t.alive and t.traps)[0]
PLAIN = hosts_where(WEB, lambda t: t.alive and not t.special and not t.traps)
CLOSING = hosts_where(WEB, lambda t: t.dead is DeadMode.CLOSE)[0]
UNAVAILABLE = hosts_where(WEB, lambda t: t.dead is DeadMode.UNAVAILABLE)[0]


def robots_host(kind: RobotsKind) -> str:
    """The first live host whose robots.txt is of this kind."""
    return hosts_where(WEB, lambda t: t.alive and t.robots is kind)[0]


# Quick retries and short timeouts: failures show up in well under a second.
FAST: dict[str, Any] = {
    "retry_backoff_s": (0.02,),
    "connect_timeout_s": 2.0,
    "read_timeout_s": 2.0,
    "total_timeout_s": 5.0,
    "fetch_deadline_s": 10.0,
    "max_body_bytes": 2_000_000,
}


def make_fetcher(port: int, **settings: Any) -> Fetcher:
    """A Fetcher whose *.test names reach the test web on `port`."""
    return Fetcher(FetchSettings(**{**FAST, **settings}), resolver=TestWebResolver(port))
